//! A hook event, agent-neutral: what the session's host needs from one hook's input, already
//! checked, capped and reduced to the few fields it uses. Each agent's module turns its own
//! hook JSON into a [`HookEvent`]; everything after that is shared.
//!
//! The hook input is untrusted (the agent passes on what the model and the user wrote): the
//! session id must be a plain token (it names a socket, so it can never escape a directory),
//! the working directory an absolute path, and every text is capped here by characters. Control
//! and bidirectional characters are removed again by every client of the status API
//! (`supercode_core::agents::document::clean`), which is the one place text is made safe to show.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The longest session id accepted (agents use UUIDs, 36 characters).
pub const MAX_SESSION_ID: usize = 128;
/// The longest title kept (a tool's description, the start of a message).
pub const TITLE_CAP: usize = 200;
/// The longest detail kept (a command, a file path).
pub const DETAIL_CAP: usize = 2000;
/// The longest path kept (a working directory, a transcript).
pub const MAX_PATH: usize = 4096;

/// One hook event of one session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookEvent {
    /// The agent's session id (checked by [`valid_session_id`]).
    pub session_id: String,
    /// The session's working directory (absolute).
    pub cwd: PathBuf,
    /// The subagent the event comes from (its id, capped), or `None` for the session's own
    /// (main) agent. A pending request is settled only by events of the agent that asked.
    pub subagent: Option<String>,
    /// The session's transcript (absolute, from the hook input; read only as
    /// [`crate::transcript`] allows), when the agent names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<PathBuf>,
    /// When the agent started its hook ([`Spawned::forked_by`]), if known. The agent does not wait
    /// for the hooks of a tool's start and end (Claude Code and Codex run them in the
    /// background), so those can reach the host after later events; this says which came first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned: Option<Spawned>,
    /// What happened.
    pub kind: EventKind,
}

/// When the agent started a hook, as the kernel recorded it: the process the agent forks for the
/// hook (the shell it runs the hook through, or the hook program itself where that shell execs
/// it, as Codex's `$SHELL -lc` does) is forked at the event, in the order of the events,
/// whenever the hook program itself gets to run (on a loaded machine, a hook started in the
/// background may run only after hooks started later: its own clock would misplace it). Ordered
/// by its start time (clock ticks since boot), then by its pid, which the kernel hands out in
/// increasing order, so two hooks started within one tick are ordered too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Spawned {
    /// The forked process's start, in clock ticks since boot.
    pub ticks: u64,
    /// The forked process's pid.
    pub pid: u32,
}

impl Spawned {
    /// The calling hook's: that of its ancestor (itself included) whose parent is the agent's
    /// process `agent`, within a few generations, or `None` when that cannot be read.
    pub fn forked_by(agent: u32) -> Option<Self> {
        let mut pid = std::process::id();
        for _ in 0..4 {
            let parent = live_runtime::process::parent_of(pid)?;
            if parent == agent {
                return Self::of(pid);
            }
            pid = parent;
        }
        None
    }

    /// Process `pid`'s, while it runs.
    pub fn of(pid: u32) -> Option<Self> {
        let identity = live_runtime::ProcessIdentity::of(pid)?;
        Some(Self {
            ticks: identity.start_time,
            pid: identity.pid,
        })
    }
}

/// What a hook event says happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EventKind {
    /// The session started (or resumed, or was cleared).
    SessionStart,
    /// The user sent a prompt.
    Prompt,
    /// A tool is about to run.
    ToolStart {
        /// The tool's name (`Bash`).
        tool: String,
        /// What it does, for the title (the tool's description, or its name).
        title: String,
        /// The command, file or address, capped.
        detail: Option<String>,
    },
    /// A tool finished (successfully or not).
    ToolDone {
        /// The tool's name.
        tool: String,
        /// The command, file or address, capped (as its start and its permission request say).
        detail: Option<String>,
    },
    /// The agent asks the user to allow a tool.
    PermissionRequest {
        /// The tool's name.
        tool: String,
        /// The command, file or address, capped.
        detail: Option<String>,
        /// The agent's suggested permission updates for "always allow", passed back as they came.
        suggestions: Option<serde_json::Value>,
        /// A short label for the "always allow" choice, when there are suggestions.
        always_label: Option<String>,
    },
    /// The turn ended, but subagents it started still work in the background: the session
    /// goes on by itself when they report back, so it does not wait for the user yet.
    Delegated {
        /// What the subagents do ("Subagent: Fix the tests", "2 subagents at work").
        title: String,
    },
    /// The agent waits for the user (a turn ended, or it asks a question).
    NeedsInput {
        /// The start of the agent's last message, or what it asks.
        title: Option<String>,
    },
    /// The turn ended with an error.
    Failed {
        /// Why, as the agent says.
        reason: String,
    },
    /// The session ended.
    SessionEnd,
    /// Anything else: no change of state.
    Other,
}

/// True when `id` is a session id we accept: 1 to [`MAX_SESSION_ID`] ASCII letters, digits,
/// `-` and `_`. Anything else (a path, a dot, a slash, a control character) is refused.
pub fn valid_session_id(id: &str) -> bool {
    (1..=MAX_SESSION_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// `text` capped at `cap` characters, with `…` when cut.
pub fn cap(text: &str, cap: usize) -> String {
    match text.char_indices().nth(cap) {
        None => text.to_owned(),
        Some(_) => {
            let keep = text
                .char_indices()
                .nth(cap.saturating_sub(1))
                .map_or(text.len(), |(at, _)| at);
            format!("{}…", &text[..keep])
        }
    }
}

/// The first non-empty line of `text`, capped: what a title shows of a message.
pub fn first_line(text: &str, cap_chars: usize) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(|line| cap(line, cap_chars))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_cannot_name_a_path() {
        assert!(valid_session_id("722f8acc-f9f4-4954-afff-c5fa417fd6d8"));
        for bad in [
            "",
            "..",
            "../x",
            "a/b",
            "a b",
            "a\nb",
            "é",
            &"a".repeat(129),
        ] {
            assert!(!valid_session_id(bad), "{bad:?}");
        }
    }

    // The premise of the order of a session's events: a hook's shell started after another's
    // has the greater `Spawned`, however late either gets to run; and the hook finds the process
    // the agent forked for it, whether the shell stays (Claude Code's `sh -c`) or execs the hook
    // (Codex's `$SHELL -lc`).
    #[test]
    fn shells_started_one_after_another_are_spawned_in_that_order() {
        let mut shells: Vec<std::process::Child> = (0..20)
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "sleep 1"])
                    .spawn()
                    .unwrap()
            })
            .collect();
        let order: Vec<Spawned> = shells
            .iter()
            .map(|shell| Spawned::of(shell.id()).unwrap())
            .collect();
        for shell in &mut shells {
            shell.kill().unwrap();
            shell.wait().unwrap();
        }
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");

        let parent = std::os::unix::process::parent_id();
        assert_eq!(
            Spawned::forked_by(parent),
            Spawned::of(std::process::id()),
            "exec'd: the hook itself"
        );
        assert!(Spawned::forked_by(parent).is_some());
        let grandparent = live_runtime::process::parent_of(parent).unwrap();
        assert_eq!(
            Spawned::forked_by(grandparent),
            Spawned::of(parent),
            "through a shell: the shell"
        );
        assert_eq!(Spawned::forked_by(u32::MAX), None, "not an ancestor");
    }

    #[test]
    fn capping_counts_characters_and_marks_the_cut() {
        assert_eq!(cap("héllo", 10), "héllo");
        assert_eq!(cap("héllo", 3), "hé…");
        assert_eq!(
            first_line("\n  first  \nsecond", 100).as_deref(),
            Some("first")
        );
    }
}
