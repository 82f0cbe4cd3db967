//! What is Claude Code's own: its settings file, the hook entries we add, how its hook input
//! becomes a [`HookEvent`], how it tells an attended (interactive) session from a script, how
//! the hook finds the Claude Code process, and the decision JSON a `PermissionRequest` hook
//! prints. Everything else (the host, the channel, the state) is agent-neutral.
//!
//! Facts this relies on, checked with the real CLI (2.1.328, see `docs/claude-code.md`):
//! - every hook gets `session_id`, `cwd`, `hook_event_name` (and `transcript_path`) on stdin;
//!   tool events add `tool_name` and `tool_input`, `PermissionRequest` adds
//!   `permission_suggestions`, `Stop` adds `last_assistant_message`, and the events of a
//!   subagent (its tools, its permission requests) add its `agent_id`;
//! - a subagent (the `Agent` tool) runs in the background: the main agent's turn goes on and
//!   may end while it works (its `Stop` lists it in `background_tasks` with `"type":
//!   "subagent"`, `"status": "running"`); the subagent's end is `SubagentStop` (never `Stop`), and
//!   its report comes back to the main agent as a new turn (`UserPromptSubmit` with a
//!   `<task-notification>`);
//! - hooks run as `sh -c <command>` children of the Claude Code process, whose pid is in
//!   `CLAUDE_PID`; `CLAUDE_CODE_SESSION_ATTENDED` is `1` in an interactive session and `0` under
//!   `claude -p`;
//! - a `PermissionRequest` hook runs while the terminal's dialog is open and whichever answers
//!   first wins; when the user answers yes in the terminal the hook is left running (and the
//!   tool's `PostToolUse` follows), when they answer no or press Esc the hook gets SIGTERM.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::choice::Choice;
use crate::event::{
    cap, first_line, valid_session_id, EventKind, HookEvent, DETAIL_CAP, MAX_PATH, MAX_SESSION_ID,
    TITLE_CAP,
};
use crate::settings::{AgentHooks, HookEntry, HooksError};

/// The agent's name on our command line and in receipts' `runtimeKind`.
pub const AGENT: &str = "claude-code";

/// How long Claude Code lets the `PermissionRequest` hook wait for the user's answer in the tray.
/// The terminal's dialog stays open meanwhile and answering there ends the wait at once, so this
/// is only the longest a forgotten prompt keeps its tray actions: a day.
pub(crate) const PERMISSION_HOOK_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// Our hook entries in Claude Code's settings.
pub const HOOKS: AgentHooks = AgentHooks {
    agent: AGENT,
    display_name: "Claude Code",
    entries: &[
        HookEntry::quick("SessionStart"),
        HookEntry::quick("UserPromptSubmit"),
        // A tool's start and end only report: Claude Code need not wait for them, on every
        // tool call (the host puts them back in order, see `board`).
        HookEntry::background("PreToolUse"),
        HookEntry::background("PostToolUse"),
        HookEntry::background("PostToolUseFailure"),
        HookEntry {
            event: "PermissionRequest",
            timeout_secs: PERMISSION_HOOK_TIMEOUT_SECS,
            status_message: None,
            background: false,
        },
        HookEntry::quick("Notification"),
        HookEntry::quick("Stop"),
        HookEntry::quick("StopFailure"),
        HookEntry::quick("SessionEnd"),
    ],
};

/// Claude Code's user settings file: `$CLAUDE_CONFIG_DIR/settings.json`, else
/// `~/.claude/settings.json`.
pub fn settings_path() -> Result<PathBuf, HooksError> {
    if let Some(dir) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir).join("settings.json"));
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .ok_or(HooksError::NoHome)?;
    Ok(PathBuf::from(home).join(".claude").join("settings.json"))
}

/// True when the session is interactive (someone at its terminal can answer its dialog); false
/// under `claude -p` and in sessions other tools run, where no decision means Claude Code denies
/// at once, so our hook must not hold their `PermissionRequest`.
pub fn attended(env_value: Option<&str>) -> bool {
    env_value == Some("1")
}

/// [`attended`] for the calling hook's session, from its environment.
pub fn attended_now() -> bool {
    attended(std::env::var(ATTENDED_VAR).ok().as_deref())
}

/// The user's choice to answer from the tray too the permission requests no terminal asks while
/// our hook waits: unattended sessions' (`claude -p`, sessions other tools run) and background
/// subagents' (Claude Code shows a subagent's dialog only once every `PermissionRequest` hook is
/// done). Their hook then waits for the tray's answer as an interactive session's does. Off by
/// default: a script would wait for a human, where without a decision Claude Code denies at
/// once and the script goes on; and a subagent's dialog would wait for the tray, where without
/// it the terminal asks at once.
pub const UNATTENDED_FROM_TRAY: Choice = Choice {
    file: "claude-code-unattended-from-tray",
    text: "Permission requests of unattended Claude Code sessions (claude -p) and of background subagents wait for an answer from Supercode Tray while this file exists.\n",
};

/// The environment variable [`attended`] reads.
pub const ATTENDED_VAR: &str = "CLAUDE_CODE_SESSION_ATTENDED";
/// The environment variable naming the Claude Code process.
pub const PID_VAR: &str = "CLAUDE_PID";

/// The hook input as a [`HookEvent`], or `None` when it is not a usable event of a session (no
/// valid session id or absolute `cwd`, not an object). Fields are capped; unknown events are
/// [`EventKind::Other`].
pub fn parse(input: &Value) -> Option<HookEvent> {
    let object = input.as_object()?;
    let text = |key: &str| object.get(key).and_then(Value::as_str);
    let session_id = text("session_id").filter(|id| valid_session_id(id))?;
    let cwd = text("cwd").filter(|c| c.len() <= MAX_PATH && c.starts_with('/'))?;
    let subagent = object
        .get("agent_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map(|id| cap(id, MAX_SESSION_ID));
    let tool = || cap(text("tool_name").unwrap_or("a tool"), TITLE_CAP);
    let input = object.get("tool_input");
    let kind = match text("hook_event_name")? {
        "SessionStart" => EventKind::SessionStart,
        "UserPromptSubmit" => EventKind::Prompt,
        "PreToolUse" => {
            let tool = tool();
            let title = input
                .and_then(|i| i.get("description"))
                .and_then(Value::as_str)
                .and_then(|d| first_line(d, TITLE_CAP))
                .unwrap_or_else(|| format!("Running {tool}"));
            EventKind::ToolStart {
                detail: tool_detail(input),
                title,
                tool,
            }
        }
        "PostToolUse" | "PostToolUseFailure" => EventKind::ToolDone {
            detail: tool_detail(input),
            tool: tool(),
        },
        "PermissionRequest" => {
            let suggestions = object
                .get("permission_suggestions")
                .filter(|s| s.as_array().is_some_and(|a| !a.is_empty()))
                .cloned();
            EventKind::PermissionRequest {
                always_label: suggestions.as_ref().map(always_label),
                suggestions,
                detail: tool_detail(input),
                tool: tool(),
            }
        }
        "Notification" => match text("notification_type") {
            Some("idle_prompt") => EventKind::NeedsInput { title: None },
            Some(kind) if kind.starts_with("elicitation") => EventKind::NeedsInput {
                title: text("message").and_then(|m| first_line(m, TITLE_CAP)),
            },
            _ => EventKind::Other,
        },
        "Stop" => match delegated(object.get("background_tasks")) {
            Some(title) => EventKind::Delegated { title },
            None => EventKind::NeedsInput {
                title: text("last_assistant_message")
                    .and_then(|m| first_line(m, TITLE_CAP))
                    .or_else(|| {
                        text("transcript_path").and_then(|p| last_assistant_text(Path::new(p)))
                    }),
            },
        },
        "StopFailure" => EventKind::Failed {
            reason: ["error", "reason", "message"]
                .iter()
                .find_map(|key| object.get(*key))
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .and_then(|r| first_line(&r, TITLE_CAP))
                .unwrap_or_else(|| "The turn failed".to_owned()),
        },
        "SessionEnd" => EventKind::SessionEnd,
        _ => EventKind::Other,
    };
    Some(HookEvent {
        session_id: session_id.to_owned(),
        cwd: PathBuf::from(cwd),
        subagent,
        transcript: text("transcript_path")
            .filter(|p| p.len() <= MAX_PATH && p.starts_with('/'))
            .map(PathBuf::from),
        spawned: None,
        kind,
    })
}

/// What the subagents still running in the background do, from a `Stop`'s `background_tasks`,
/// or `None` when none runs. Only subagents count: they report back to the main agent when they
/// end, so the session goes on by itself. A background shell (a dev server) may never end and
/// does not come back, so with only those the session waits for the user.
fn delegated(tasks: Option<&Value>) -> Option<String> {
    let running: Vec<&Value> = tasks?
        .as_array()?
        .iter()
        .filter(|t| t.get("type").and_then(Value::as_str) == Some("subagent"))
        .filter(|t| t.get("status").and_then(Value::as_str) == Some("running"))
        .collect();
    match running.as_slice() {
        [] => None,
        [one] => Some(
            one.get("description")
                .and_then(Value::as_str)
                .and_then(|d| first_line(d, TITLE_CAP))
                .map_or_else(
                    || "1 subagent at work".to_owned(),
                    |d| cap(&format!("Subagent: {d}"), TITLE_CAP),
                ),
        ),
        many => Some(format!("{} subagents at work", many.len())),
    }
}

/// The largest part of a transcript read, from its end: the last assistant message is near it.
const TRANSCRIPT_TAIL_BYTES: u64 = 256 * 1024;

/// The first line of the last assistant text in the session's transcript (JSON lines), for a
/// `Stop` whose input has no `last_assistant_message` (older Claude Code). The path comes from
/// the hook input, so it is untrusted: it must be absolute and name a regular file of the
/// user's own, opened without following a link or blocking; only its last 256 KiB are read.
pub fn last_assistant_text(path: &Path) -> Option<String> {
    let (tail, _) = crate::transcript::read_tail(path, TRANSCRIPT_TAIL_BYTES)?;
    let text = String::from_utf8_lossy(&tail);
    text.lines().rev().find_map(|line| {
        let entry: Value = serde_json::from_str(line).ok()?;
        if entry.get("type").and_then(Value::as_str) != Some("assistant") {
            return None;
        }
        let content = entry.pointer("/message/content")?;
        let text = match content {
            Value::String(text) => text.clone(),
            Value::Array(blocks) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => return None,
        };
        first_line(&text, TITLE_CAP)
    })
}

/// What a tool works on, for the detail: Bash's command, a file's path, a URL, a pattern.
fn tool_detail(input: Option<&Value>) -> Option<String> {
    let input = input?.as_object()?;
    [
        "command",
        "file_path",
        "notebook_path",
        "url",
        "pattern",
        "path",
        "query",
    ]
    .iter()
    .find_map(|key| input.get(*key).and_then(Value::as_str))
    .filter(|text| !text.is_empty())
    .map(|text| cap(text, DETAIL_CAP))
}

/// "Always allow …" saying everything the suggestions do, since all of them are sent back: where
/// it lasts (`session`, or the settings it is saved in), then each mode (`accept edits`), rule
/// (`Bash(touch:*)`) and directory (`access to /w`), broadest first because clients cap labels
/// (64 characters). 2.1.328 suggests, for a command writing outside the project, a directory
/// *and* the accept-edits mode: a label naming only the directory would hide the mode change.
fn always_label(suggestions: &Value) -> String {
    let (mut modes, mut rules, mut dirs) = (Vec::new(), Vec::new(), Vec::new());
    let mut lasts: Vec<&str> = Vec::new();
    for suggestion in suggestions.as_array().into_iter().flatten() {
        let field = |key: &str| suggestion.get(key).and_then(Value::as_str);
        let list = |key: &str| {
            suggestion
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        match field("type") {
            Some("setMode") => modes.push(match field("mode") {
                Some("acceptEdits") => "accept edits".to_owned(),
                Some(mode) => format!("{mode} mode"),
                None => "a mode".to_owned(),
            }),
            Some("addRules" | "replaceRules") => {
                for rule in list("rules") {
                    let tool = rule.get("toolName").and_then(Value::as_str).unwrap_or("it");
                    rules.push(match rule.get("ruleContent").and_then(Value::as_str) {
                        Some(content) => format!("{tool}({content})"),
                        None => tool.to_owned(),
                    });
                }
            }
            Some("addDirectories") => {
                for dir in list("directories") {
                    if let Some(dir) = dir.as_str() {
                        dirs.push(format!("access to {dir}"));
                    }
                }
            }
            Some(other) => rules.push(other.to_owned()),
            None => continue,
        }
        let lasts_for = match field("destination") {
            Some("session") | None => "session",
            Some("localSettings") => "this project, local",
            Some("projectSettings") => "this project",
            Some("userSettings") => "everywhere",
            Some(_) => "Claude Code's settings",
        };
        if !lasts.contains(&lasts_for) {
            lasts.push(lasts_for);
        }
    }
    let parts: Vec<String> = modes.into_iter().chain(rules).chain(dirs).collect();
    let text = if parts.is_empty() {
        "Always allow".to_owned()
    } else {
        format!("Always allow ({}): {}", lasts.join(", "), parts.join(" + "))
    };
    cap(&text, TITLE_CAP)
}

/// A decision the user made for a `PermissionRequest`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", tag = "behavior")]
pub enum Decision {
    /// Allow this once.
    Allow,
    /// Allow, and apply Claude Code's suggested permission updates.
    AllowAlways {
        /// The suggestions, exactly as Claude Code sent them.
        updated_permissions: Value,
    },
    /// Deny.
    Deny,
}

/// The JSON a `PermissionRequest` hook prints for `decision`.
pub fn decision_output(decision: &Decision) -> Value {
    let decision = match decision {
        Decision::Allow => serde_json::json!({ "behavior": "allow" }),
        Decision::AllowAlways {
            updated_permissions,
        } => serde_json::json!({ "behavior": "allow", "updatedPermissions": updated_permissions }),
        Decision::Deny => serde_json::json!({
            "behavior": "deny",
            "message": "Denied from Supercode Tray",
        }),
    };
    serde_json::json!({
        "hookSpecificOutput": { "hookEventName": "PermissionRequest", "decision": decision }
    })
}

/// The Claude Code process a hook runs for: the pid in [`PID_VAR`], accepted only if it is an
/// ancestor of `start` (the hook's parent) within a few generations, so an environment
/// variable alone can never tie a runtime to an unrelated process.
pub fn claude_process(env_pid: Option<&str>, start: u32) -> Option<u32> {
    let wanted: u32 = env_pid?.trim().parse().ok()?;
    let mut pid = start;
    // Claude Code runs the hook through `sh -c`: the hook's parent is the shell (or, when the
    // shell execs it, Claude Code itself). A few generations leave room for wrappers.
    for _ in 0..4 {
        if pid == wanted {
            return Some(pid);
        }
        pid = live_runtime::process::parent_of(pid)?;
        if pid <= 1 {
            return None;
        }
    }
    None
}

/// True when `path` is where the user's Claude Code settings are (for `doctor`'s wording).
pub fn is_default_settings(path: &Path) -> bool {
    settings_path().is_ok_and(|p| p == path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn permission_request_keeps_the_command_and_the_suggestions() {
        let event = parse(&json!({
            "session_id": "s-1", "cwd": "/w", "hook_event_name": "PermissionRequest",
            "tool_name": "Bash", "tool_input": {"command": "touch x", "description": "Touch"},
            "permission_suggestions": [{"type": "addDirectories", "directories": ["/w"], "destination": "session"}]
        }))
        .unwrap();
        let EventKind::PermissionRequest {
            tool,
            detail,
            always_label,
            suggestions,
        } = event.kind
        else {
            panic!("{event:?}")
        };
        assert_eq!(tool, "Bash");
        assert_eq!(detail.as_deref(), Some("touch x"));
        assert_eq!(
            always_label.as_deref(),
            Some("Always allow (session): access to /w")
        );
        assert!(suggestions.is_some());
    }

    // Issue 32: all the suggestions go back, so the label names all of them (2.1.328 suggests a
    // directory and the accept-edits mode for a command writing outside the project).
    #[test]
    fn the_always_label_says_everything_the_suggestions_do() {
        let label = |suggestions: Value| always_label(&suggestions);
        assert_eq!(
            label(json!([
                {"type": "addDirectories", "directories": ["/tmp/m"], "destination": "session"},
                {"type": "setMode", "mode": "acceptEdits", "destination": "session"}
            ])),
            "Always allow (session): accept edits + access to /tmp/m"
        );
        assert_eq!(
            label(
                json!([{"type": "addRules", "behavior": "allow", "destination": "localSettings",
                "rules": [{"toolName": "Bash", "ruleContent": "npm test:*"}, {"toolName": "Read"}]}])
            ),
            "Always allow (this project, local): Bash(npm test:*) + Read"
        );
        assert_eq!(label(json!([])), "Always allow");
    }

    #[test]
    fn hostile_session_ids_and_relative_cwds_are_not_events() {
        for input in [
            json!({"session_id": "../../x", "cwd": "/w", "hook_event_name": "Stop"}),
            json!({"session_id": "s", "cwd": "w", "hook_event_name": "Stop"}),
            json!({"cwd": "/w", "hook_event_name": "Stop"}),
            json!(["not", "an", "object"]),
        ] {
            assert!(parse(&input).is_none(), "{input}");
        }
    }

    #[test]
    fn stop_titles_with_the_first_line_of_the_last_message() {
        let event = parse(&json!({
            "session_id": "s", "cwd": "/w", "hook_event_name": "Stop",
            "last_assistant_message": "\nAll done.\nMore text"
        }))
        .unwrap();
        assert_eq!(
            event.kind,
            EventKind::NeedsInput {
                title: Some("All done.".into())
            }
        );
    }

    #[test]
    fn decisions_print_claude_codes_permission_request_output() {
        let allow = decision_output(&Decision::Allow);
        assert_eq!(
            allow,
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
        );
        let always = decision_output(&Decision::AllowAlways {
            updated_permissions: json!([{"type": "setMode", "mode": "acceptEdits", "destination": "session"}]),
        });
        assert_eq!(
            always["hookSpecificOutput"]["decision"]["updatedPermissions"][0]["mode"],
            "acceptEdits"
        );
        assert_eq!(
            decision_output(&Decision::Deny)["hookSpecificOutput"]["decision"]["behavior"],
            "deny"
        );
    }

    #[test]
    fn without_last_assistant_message_the_title_comes_from_the_transcripts_last_text() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("s.jsonl");
        let lines = [
            json!({"type": "user", "message": {"content": "hi"}}),
            json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "Old answer"}]}}),
            json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}, {"type": "text", "text": "\nNew answer.\nMore"}]}}),
            json!({"type": "system", "content": "x"}),
        ];
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&transcript, text.join("\n") + "\n").unwrap();
        let event = parse(&json!({
            "session_id": "s", "cwd": "/w", "hook_event_name": "Stop",
            "transcript_path": transcript
        }))
        .unwrap();
        assert_eq!(
            event.kind,
            EventKind::NeedsInput {
                title: Some("New answer.".into())
            }
        );
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&transcript, &link).unwrap();
        assert_eq!(last_assistant_text(&link), None, "a link is not followed");
        assert_eq!(last_assistant_text(Path::new("relative.jsonl")), None);
    }

    // As 2.1.328 sends them (issue 32): a subagent's events carry its id; the main agent's
    // `Stop` lists the subagents still running in the background.
    #[test]
    fn subagents_events_name_them_and_a_stop_while_they_run_is_not_the_end() {
        let request = parse(&json!({
            "session_id": "s", "cwd": "/w", "hook_event_name": "PermissionRequest",
            "agent_id": "a3391a16c2db666c6", "agent_type": "general-purpose",
            "tool_name": "Bash", "tool_input": {"command": "touch x"}
        }))
        .unwrap();
        assert_eq!(request.subagent.as_deref(), Some("a3391a16c2db666c6"));
        let stop = |tasks: Value| {
            parse(&json!({
                "session_id": "s", "cwd": "/w", "hook_event_name": "Stop",
                "last_assistant_message": "Started it.", "background_tasks": tasks
            }))
            .unwrap()
        };
        let running = json!({"id": "a1", "type": "subagent", "status": "running",
            "description": "Make marker-s1", "agent_type": "general-purpose"});
        let event = stop(json!([running]));
        assert_eq!(event.subagent, None);
        assert_eq!(
            event.kind,
            EventKind::Delegated {
                title: "Subagent: Make marker-s1".into()
            }
        );
        assert_eq!(
            stop(json!([running, running])).kind,
            EventKind::Delegated {
                title: "2 subagents at work".into()
            }
        );
        // A background shell (a dev server) does not report back; a finished subagent is done.
        let shell = json!({"id": "b1", "type": "shell", "status": "running"});
        let done = json!({"id": "a1", "type": "subagent", "status": "completed"});
        assert_eq!(
            stop(json!([shell, done])).kind,
            EventKind::NeedsInput {
                title: Some("Started it.".into())
            }
        );
    }

    #[test]
    fn only_an_attended_session_waits_for_the_tray() {
        assert!(attended(Some("1")));
        assert!(!attended(Some("0")));
        assert!(!attended(None));
    }

    #[test]
    fn the_claude_process_must_be_an_ancestor() {
        let me = std::process::id();
        let parent = live_runtime::process::parent_of(me).unwrap();
        assert_eq!(claude_process(Some(&parent.to_string()), me), Some(parent));
        assert_eq!(claude_process(Some("1"), me), None);
        assert_eq!(claude_process(Some("not a pid"), me), None);
        assert_eq!(claude_process(None, me), None);
    }
}
