//! What is Codex's own: its hooks file, the hook entries we add, how its hook input becomes a
//! [`HookEvent`], whether the user has trusted our entries, whether its approvals wait for the
//! tray, how the hook finds the Codex process, and the decision JSON. Everything else (the
//! settings merge, the host, the channel, the state) is shared with Claude Code.
//!
//! Facts this relies on (Codex CLI 0.169.0, see `docs/codex.md`):
//! - hooks live in `$CODEX_HOME/hooks.json` (default `~/.codex`) in the same shape as Claude
//!   Code's settings (`{"hooks": {"Event": [{"hooks": [{"type": "command", ...}]}]}}`), and their
//!   input has the same fields (`session_id`, `cwd`, `hook_event_name`, `tool_name`, `tool_input`,
//!   `last_assistant_message` on `Stop`) plus `turn_id`;
//! - a hook runs only once the user has trusted it in Codex ("Hooks need review" on its next
//!   start), which Codex records in its `config.toml` as `[hooks.state."<hooks.json>:<event>:<group>:<handler>"]`
//!   with `trusted_hash`, a SHA-256 of the entry's normalized form ([`trusted_hash`]). We never
//!   write those records: we only read them, to say whether our entries will run;
//! - Codex runs a hook through `$SHELL -lc`, which execs our program (its parent is Codex), and
//!   does not wait for one marked `"async": true` (a detached task; it runs, and is stopped if
//!   the session ends first);
//! - Codex runs `PermissionRequest` *before* its own prompt and shows the entry's
//!   `statusMessage` until the hook returns; `updatedPermissions` makes Codex fail closed, so
//!   there is no "always allow" for Codex;
//! - `SessionEnd` comes when Codex unloads the session: at once when `codex --no-daemon` quits,
//!   and from the shared app server once no terminal shows the session and it is idle
//!   (after `thread_unload_delay_secs`: about a minute with 0.169.0's defaults);
//! - `transcript_path` names the session's rollout (JSON lines, [`rollout_messages`]); a failed
//!   turn runs no hook at all (no `Stop`, no failure event), only the rollout records it
//!   ([`turn_failure`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::choice::Choice;
use crate::claude_code::{self, Decision, PERMISSION_HOOK_TIMEOUT_SECS};
use crate::event::{first_line, EventKind, HookEvent, TITLE_CAP};
use crate::settings::{AgentHooks, HookEntry, HooksError};
use crate::transcript::{message, Message, Role};

/// The agent's name on our command line and in receipts' `runtimeKind`.
pub const AGENT: &str = "codex";

/// What Codex shows in place of "Running hook" while our `PermissionRequest` hook runs: it
/// returns at once unless the user chose to answer Codex approvals from the tray, and then the
/// terminal says why it waits.
pub const PERMISSION_STATUS: &str = "Waiting for your answer in Supercode Tray";

/// Our hook entries in Codex's `hooks.json`.
pub const HOOKS: AgentHooks = AgentHooks {
    agent: AGENT,
    display_name: "Codex",
    entries: &[
        HookEntry::quick("SessionStart"),
        HookEntry::quick("UserPromptSubmit"),
        // A tool's start and end only report: Codex need not wait for them, on every tool call
        // (the host puts them back in order, see `board`).
        HookEntry::background("PreToolUse"),
        HookEntry {
            event: "PermissionRequest",
            timeout_secs: PERMISSION_HOOK_TIMEOUT_SECS,
            status_message: Some(PERMISSION_STATUS),
            background: false,
        },
        HookEntry::background("PostToolUse"),
        HookEntry::quick("Stop"),
        HookEntry {
            event: "SessionEnd",
            timeout_secs: SESSION_END_TIMEOUT_SECS,
            status_message: None,
            background: false,
        },
    ],
};

/// The `SessionEnd` entry's timeout. Codex 0.169 runs a `SessionEnd` hook for at most three
/// seconds and hashes the entry with that timeout when the user trusts it (an entry saying 10
/// was recorded as 3), so an entry saying more would show as needing review forever. Ours
/// hands the event to the host in milliseconds.
const SESSION_END_TIMEOUT_SECS: u64 = 3;

/// Codex's home: `$CODEX_HOME`, else `~/.codex`.
pub fn codex_home() -> Result<PathBuf, HooksError> {
    if let Some(dir) = std::env::var_os("CODEX_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(HooksError::NoHome)?;
    Ok(PathBuf::from(home).join(".codex"))
}

/// Codex's user hooks file, `<codex home>/hooks.json`.
pub fn settings_path() -> Result<PathBuf, HooksError> {
    codex_home().map(|home| home.join("hooks.json"))
}

/// The hook input as a [`HookEvent`]: Codex's input has Claude Code's shape, so Claude Code's
/// reading is used, minus what Codex cannot take back (permission suggestions).
pub fn parse(input: &Value) -> Option<HookEvent> {
    let mut event = claude_code::parse(input)?;
    if let EventKind::PermissionRequest {
        suggestions,
        always_label,
        ..
    } = &mut event.kind
    {
        *suggestions = None;
        *always_label = None;
    }
    Some(event)
}

/// The JSON a `PermissionRequest` hook prints for `decision`. Codex fails closed on
/// `updatedPermissions`, so an "always" (never offered for Codex) is sent as a plain allow.
pub fn decision_output(decision: &Decision) -> Value {
    let decision = match decision {
        Decision::Allow | Decision::AllowAlways { .. } => {
            serde_json::json!({ "behavior": "allow" })
        }
        Decision::Deny => serde_json::json!({
            "behavior": "deny",
            "message": "Denied from Supercode Tray",
        }),
    };
    serde_json::json!({
        "hookSpecificOutput": { "hookEventName": "PermissionRequest", "decision": decision }
    })
}

/// The Codex process a hook runs for: the nearest ancestor of `start` (the hook's parent) within
/// a few generations whose program is `codex` (the native binary the npm package's launcher
/// runs). Codex sets no variable naming its pid, so the process tree is the only witness.
pub fn codex_process(start: u32) -> Option<u32> {
    let mut pid = start;
    // Codex runs the hook through a shell: the hook's parent is the shell (or Codex itself when
    // the shell execs it). A few generations leave room for wrappers.
    for _ in 0..4 {
        if pid <= 1 {
            return None;
        }
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
        if comm.trim_end() == "codex" {
            return Some(pid);
        }
        pid = live_runtime::process::parent_of(pid)?;
    }
    None
}

/// The user's choice to answer Codex's approvals from the tray: a file in our config directory
/// (`$XDG_CONFIG_HOME/supercode-tray/codex-approvals-from-tray`, else under `~/.config`) whose
/// presence means yes. The hook reads it for each `PermissionRequest`, so turning it on or off
/// needs no change to the hooks (which would make Codex ask to review them again).
pub const APPROVALS_FROM_TRAY: Choice = Choice {
    file: "codex-approvals-from-tray",
    text: "Codex approvals wait for an answer from Supercode Tray while this file exists.\n",
};

/// True when the user chose to answer Codex approvals from the tray: the setting's file is a
/// regular file of the user's own (a link or another user's file does not count).
pub fn approvals_from_tray() -> bool {
    APPROVALS_FROM_TRAY.is_on()
}

/// Turns the setting on or off.
pub fn set_approvals_from_tray(on: bool) -> std::io::Result<PathBuf> {
    APPROVALS_FROM_TRAY.set(on)
}

/// The messages of one line of a Codex rollout: what its terminal shows of the conversation.
/// Codex 0.169 writes each finished item as `{"type": "event_msg", "payload": {"type":
/// "item_completed", "item": {...}}}`: the user's `UserMessage` and the agent's `AgentMessage`
/// (their `content` a list of `{"text": ...}`), a `CommandExecution` (its `command`, the shell's
/// argument list); and a turn's end as `task_complete`, with `error.message` when it failed.
/// The rollout's other lines (the model's raw items, instructions, context, token counts) are
/// not the conversation.
pub fn rollout_messages(line: &str) -> Vec<Message> {
    let Ok(entry) = serde_json::from_str::<Value>(line) else {
        return Vec::new();
    };
    if entry.get("type").and_then(Value::as_str) != Some("event_msg") {
        return Vec::new();
    }
    let Some(payload) = entry.get("payload") else {
        return Vec::new();
    };
    let texts = |item: &Value| -> String {
        item.get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let said = match payload.get("type").and_then(Value::as_str) {
        Some("item_completed") => {
            let Some(item) = payload.get("item") else {
                return Vec::new();
            };
            match item.get("type").and_then(Value::as_str) {
                Some("UserMessage") => message(Role::User, &texts(item)),
                Some("AgentMessage") => message(Role::Assistant, &texts(item)),
                Some("CommandExecution") => {
                    // `["/bin/bash", "-lc", "<the command>"]`: the last argument is what ran.
                    let command = item
                        .get("command")
                        .and_then(Value::as_array)
                        .and_then(|c| c.last())
                        .and_then(Value::as_str);
                    message(
                        Role::Tool,
                        &format!("Bash: {}", command.unwrap_or("a command")),
                    )
                }
                _ => None,
            }
        }
        Some("task_complete") => payload
            .pointer("/error/message")
            .and_then(Value::as_str)
            .and_then(|why| message(Role::Assistant, &format!("The turn failed: {why}"))),
        _ => None,
    };
    said.into_iter().collect()
}

/// Why the session's latest turn failed, from the end of its rollout `tail`: the last turn
/// boundary there (`task_started` or `task_complete`) is a `task_complete` with `error.message`.
/// Codex 0.169 runs no hook when a turn fails (the model API's error, a broken stream), so this
/// is the only witness; `None` while a turn runs or after one that ended well.
pub fn turn_failure(tail: &str) -> Option<String> {
    tail.lines()
        .rev()
        .filter(|line| line.contains("\"task_"))
        .find_map(|line| {
            let entry: Value = serde_json::from_str(line).ok()?;
            if entry.get("type").and_then(Value::as_str) != Some("event_msg") {
                return None;
            }
            match entry.pointer("/payload/type").and_then(Value::as_str)? {
                "task_started" => Some(None),
                "task_complete" => Some(
                    entry
                        .pointer("/payload/error/message")
                        .and_then(Value::as_str)
                        .map(|why| {
                            first_line(&crate::transcript::plain(why), TITLE_CAP)
                                .unwrap_or_else(|| "The turn failed".to_owned())
                        }),
                ),
                _ => None,
            }
        })
        .flatten()
}

/// Codex's key for an event in its trust records (`pre_tool_use`).
pub fn event_key(event: &str) -> String {
    let mut key = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                key.push('_');
            }
            key.push(c.to_ascii_lowercase());
        } else {
            key.push(c);
        }
    }
    key
}

/// The hash Codex records when the user trusts a hook entry with no matcher: SHA-256 over the
/// compact JSON of the entry's normalized form, keys sorted (`event_name`, then the group's
/// `hooks` with the handler's `async`, `command`, `statusMessage`, `timeout`, `type`).
pub fn trusted_hash(event: &str, handler: &Value) -> String {
    let mut hook = Map::new();
    hook.insert(
        "async".into(),
        handler.get("async").cloned().unwrap_or(Value::Bool(false)),
    );
    hook.insert(
        "command".into(),
        handler.get("command").cloned().unwrap_or(Value::Null),
    );
    if let Some(message) = handler.get("statusMessage").filter(|m| !m.is_null()) {
        hook.insert("statusMessage".into(), message.clone());
    }
    let timeout = handler
        .get("timeout")
        .or_else(|| handler.get("timeout_sec"))
        .and_then(Value::as_u64)
        .unwrap_or(600)
        .max(1);
    hook.insert("timeout".into(), Value::from(timeout));
    hook.insert("type".into(), Value::String("command".into()));
    let mut identity = Map::new();
    identity.insert("event_name".into(), Value::String(event_key(event)));
    identity.insert("hooks".into(), Value::Array(vec![Value::Object(hook)]));
    let canonical = Value::Object(identity).to_string();
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    )
}

/// Whether Codex will run our entries.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trust {
    /// Our entries the user has trusted, as they are now.
    pub trusted: Vec<String>,
    /// Our entries with no trust record, or one for an older form of the entry: Codex shows
    /// "Hooks need review" for them on its next start and does not run them meanwhile.
    pub needs_review: Vec<String>,
    /// A problem reading Codex's `config.toml`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The largest `config.toml` read.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;

/// Which of our entries in `hooks_path` Codex has trusted, from `config_path`'s `[hooks.state]`.
pub fn trust(hooks_path: &Path, config_path: &Path) -> Trust {
    let mut trust = Trust {
        trusted: Vec::new(),
        needs_review: Vec::new(),
        problem: None,
    };
    let read = |path: &Path| -> Result<Option<String>, String> {
        let rules = live_runtime::owned_file::FileRules {
            singular: "Codex file",
            plural: "Codex files",
            max_bytes: MAX_CONFIG_BYTES,
            mode: live_runtime::owned_file::ModeRule::WarnWhenReadable,
        };
        match live_runtime::owned_file::read_owned_file(path, &rules) {
            Ok(Some(file)) => String::from_utf8(file.bytes)
                .map(Some)
                .map_err(|_| format!("{} is not UTF-8 text", path.display())),
            Ok(None) => Ok(None),
            Err(e) => Err(e.reason),
        }
    };
    let hooks: Value = match read(hooks_path) {
        Ok(Some(text)) => serde_json::from_str(&text).unwrap_or(Value::Null),
        Ok(None) => return trust,
        Err(e) => {
            trust.problem = Some(e);
            return trust;
        }
    };
    let states: toml::Table = match read(config_path) {
        Ok(Some(text)) => match text.parse::<toml::Table>() {
            Ok(table) => table,
            Err(_) => {
                trust.problem = Some(format!("{} is not valid TOML", config_path.display()));
                toml::Table::new()
            }
        },
        Ok(None) => toml::Table::new(),
        Err(e) => {
            trust.problem = Some(e);
            toml::Table::new()
        }
    };
    let records = states
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let Some(events) = hooks.get("hooks").and_then(Value::as_object) else {
        return trust;
    };
    let source = hooks_path.display();
    for (event, groups) in events {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            if group.get("matcher").is_some_and(|m| !m.is_null()) {
                continue;
            }
            for (h, handler) in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let ours = handler
                    .get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| HOOKS.is_ours(c));
                if !ours {
                    continue;
                }
                let key = format!("{source}:{}:{g}:{h}", event_key(event));
                let recorded = records
                    .and_then(|r| r.get(&key))
                    .and_then(|s| s.get("trusted_hash"))
                    .and_then(toml::Value::as_str);
                if recorded == Some(trusted_hash(event, handler).as_str()) {
                    trust.trusted.push(event.clone());
                } else {
                    trust.needs_review.push(event.clone());
                }
            }
        }
    }
    trust
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_keys_are_codexs_snake_case() {
        assert_eq!(event_key("PreToolUse"), "pre_tool_use");
        assert_eq!(event_key("Stop"), "stop");
        assert_eq!(event_key("UserPromptSubmit"), "user_prompt_submit");
    }

    #[test]
    fn the_trusted_hash_covers_the_normalized_entry() {
        let handler = json!({"type": "command", "command": "echo hi", "timeout": 10});
        let canonical = r#"{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"echo hi","timeout":10,"type":"command"}]}"#;
        assert_eq!(
            trusted_hash("PreToolUse", &handler),
            format!(
                "sha256:{}",
                hex::encode(Sha256::digest(canonical.as_bytes()))
            )
        );
        let other = json!({"type": "command", "command": "echo ho", "timeout": 10});
        assert_ne!(
            trusted_hash("PreToolUse", &handler),
            trusted_hash("PreToolUse", &other)
        );
    }

    #[test]
    fn the_trusted_hash_is_the_one_codex_0_169_records() {
        // Recorded by the real Codex 0.169.0 in config.toml's [hooks.state] when the user chose
        // "Trust all and continue" for these exact entries.
        let command = "/work/targets/codex/debug/supercode-tray hook codex";
        assert_eq!(
            trusted_hash(
                "PreToolUse",
                &json!({"type": "command", "command": command, "timeout": 10})
            ),
            "sha256:5fec2e9e6676349ba2b041a8fcc131e47b29a22b21142874914cce2177571ab6"
        );
        assert_eq!(
            trusted_hash(
                "PermissionRequest",
                &json!({"type": "command", "command": command, "timeout": 86400,
                    "statusMessage": "Waiting for your answer in Supercode Tray"})
            ),
            "sha256:79e156e19da25027862834f3270db155cf3ff4e0360fc1bab57324e33f5f68d4"
        );
        assert_eq!(
            trusted_hash(
                "Stop",
                &json!({"type": "command", "command": command, "timeout": 10})
            ),
            "sha256:1892e5cd2405efcffa8d5b345de361d7e1d6ad9af62d046f1e2d9e97257254fe"
        );
        // The user's own entry beside ours.
        assert_eq!(
            trusted_hash(
                "Stop",
                &json!({"type": "command", "command": "true", "timeout": 5})
            ),
            "sha256:99551a51b888f6dc725f1199663b7b1e1ef9bb9b9cab0612d84e5e9218aca6f5"
        );
    }

    #[test]
    fn trust_reads_codexs_records_for_our_entries_only() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = dir.path().join("hooks.json");
        let config = dir.path().join("config.toml");
        let ours = "/opt/x/supercode-tray-hook codex";
        std::fs::write(
            &hooks,
            json!({"hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]},
                         {"hooks": [{"type": "command", "command": ours, "timeout": 10}]}],
                "PreToolUse": [{"hooks": [{"type": "command", "command": ours, "timeout": 10}]}]
            }})
            .to_string(),
        )
        .unwrap();
        let stop = trusted_hash("Stop", &json!({"command": ours, "timeout": 10}));
        std::fs::write(
            &config,
            format!(
                "model = \"m\"\n[hooks.state.\"{path}:stop:1:0\"]\ntrusted_hash = \"{stop}\"\n\
                 [hooks.state.\"{path}:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:old\"\n",
                path = hooks.display()
            ),
        )
        .unwrap();
        let trust = trust(&hooks, &config);
        assert_eq!(trust.trusted, ["Stop"]);
        assert_eq!(
            trust.needs_review,
            ["PreToolUse"],
            "a changed entry needs review again"
        );
        assert_eq!(trust.problem, None);
    }

    #[test]
    fn a_failed_turn_is_read_from_the_rollouts_last_turn_boundary() {
        let line = |payload: Value| json!({"type": "event_msg", "payload": payload}).to_string();
        let started = line(json!({"type": "task_started", "turn_id": "b"}));
        let failed = line(json!({"type": "task_complete", "turn_id": "a",
            "error": {"message": "We\u{2019}re experiencing high demand\u{1b}[31m\nmore"}}));
        let ok = line(json!({"type": "task_complete", "turn_id": "a", "last_agent_message": "hi"}));
        let count = line(json!({"type": "token_count"}));
        assert_eq!(
            turn_failure(&[started.clone(), failed.clone(), count].join("\n")).as_deref(),
            Some("We\u{2019}re experiencing high demand")
        );
        assert_eq!(
            turn_failure(&[failed.clone(), started].join("\n")),
            None,
            "a new turn runs"
        );
        assert_eq!(turn_failure(&[failed, ok].join("\n")), None);
        assert_eq!(turn_failure("{\"task_ broken"), None);
    }

    #[test]
    fn a_permission_request_offers_no_always_for_codex() {
        let event = parse(&json!({
            "session_id": "019a-b", "turn_id": "t", "cwd": "/w",
            "hook_event_name": "PermissionRequest", "tool_name": "Bash",
            "tool_input": {"command": "touch x", "description": "why"},
            "permission_suggestions": [{"type": "addRules"}]
        }))
        .unwrap();
        let EventKind::PermissionRequest {
            detail,
            suggestions,
            always_label,
            ..
        } = event.kind
        else {
            panic!("{:?}", event.kind);
        };
        assert_eq!(detail.as_deref(), Some("touch x"));
        assert_eq!((suggestions, always_label), (None, None));
        let out = decision_output(&Decision::Allow);
        assert_eq!(
            out,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
    }
}
