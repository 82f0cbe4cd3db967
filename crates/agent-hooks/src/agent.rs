//! The agents we connect, and the few things that differ between them, in one place: the hook
//! and the CLI ask an [`Agent`] and never name an agent's module themselves.

use serde_json::Value;

use crate::channel::Request;
use crate::claude_code::{self, Decision};
use crate::codex;
use crate::event::{EventKind, HookEvent};
use crate::settings::{AgentHooks, HooksError};

/// An agent whose sessions become runtimes through its hooks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex CLI.
    Codex,
}

impl Agent {
    /// Every agent we connect, in the order we show them.
    pub const ALL: [Agent; 2] = [Agent::ClaudeCode, Agent::Codex];

    /// Its name for people ("Claude Code").
    pub fn title(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
        }
    }

    /// Its name on our command line and in receipts' `runtimeKind`.
    pub fn name(self) -> &'static str {
        self.hooks().agent
    }

    /// The agent whose [`Agent::name`] is `name`.
    pub fn named(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|agent| agent.name() == name)
    }

    /// Its hook entries.
    pub fn hooks(self) -> &'static AgentHooks {
        match self {
            Agent::ClaudeCode => &claude_code::HOOKS,
            Agent::Codex => &codex::HOOKS,
        }
    }

    /// The file our hook entries go in.
    pub fn settings_path(self) -> Result<std::path::PathBuf, HooksError> {
        match self {
            Agent::ClaudeCode => claude_code::settings_path(),
            Agent::Codex => codex::settings_path(),
        }
    }

    /// Whether the agent will run our entries in `settings`: `None` for an agent that runs
    /// every installed hook (Claude Code); Codex runs only the entries the user trusted in it.
    pub fn trust(self, settings: &std::path::Path) -> Option<codex::Trust> {
        match self {
            Agent::ClaudeCode => None,
            Agent::Codex => {
                let config = codex::codex_home()
                    .map(|home| home.join("config.toml"))
                    .unwrap_or_default();
                Some(codex::trust(settings, &config))
            }
        }
    }

    /// One hook input as an event.
    pub fn parse(self, input: &Value) -> Option<HookEvent> {
        match self {
            Agent::ClaudeCode => claude_code::parse(input),
            Agent::Codex => codex::parse(input),
        }
    }

    /// What the hook hands the session's host for `event`: for a permission request, whether it
    /// waits for the tray's decision and who asks the user otherwise (see [`Request`]).
    ///
    /// One fact decides it: whether the agent's own prompt is open while the hook runs. It is
    /// only for an attended Claude Code session's own agent, whose dialog and hook run together
    /// (whichever answers first wins), so its hook always waits for the tray. Everywhere else
    /// the agent asks, or decides, only once the hook is done: Claude Code's unattended sessions
    /// (`claude -p`, no decision means denied) and background subagents (their dialog opens
    /// after the hook, in the terminal, and such a request stands until the subagent moves on),
    /// and Codex (its prompt follows the hook). There the hook waits only when the user chose to
    /// answer from the tray, and the host holds it only while the tray watches.
    pub fn request(self, event: HookEvent) -> Request {
        if !matches!(event.kind, EventKind::PermissionRequest { .. }) {
            return Request {
                event,
                wait: false,
                in_terminal: false,
                while_watched: false,
            };
        }
        let (prompt_open, in_terminal) = match self {
            Agent::ClaudeCode => {
                let attended = claude_code::attended_now();
                let own = event.subagent.is_none();
                (attended && own, attended && !own)
            }
            Agent::Codex => (false, false),
        };
        let wait = prompt_open
            || match self {
                Agent::ClaudeCode => claude_code::UNATTENDED_FROM_TRAY.is_on(),
                Agent::Codex => codex::approvals_from_tray(),
            };
        Request {
            event,
            wait,
            in_terminal,
            while_watched: wait && !prompt_open,
        }
    }

    /// True when the agent runs the hook of this kind of event in the background (our entry for
    /// it is `async`: a tool's start and end), so that it may arrive after later events, even
    /// after the session's end.
    pub fn runs_in_background(self, kind: &EventKind) -> bool {
        let events: &[&str] = match kind {
            EventKind::ToolStart { .. } => &["PreToolUse"],
            EventKind::ToolDone { .. } => &["PostToolUse", "PostToolUseFailure"],
            _ => &[],
        };
        self.hooks()
            .entries
            .iter()
            .any(|entry| entry.background && events.contains(&entry.event))
    }

    /// The agent's process, from the hook's parent `parent`.
    pub fn process(self, parent: u32) -> Option<u32> {
        match self {
            Agent::ClaudeCode => claude_code::claude_process(
                std::env::var(claude_code::PID_VAR).ok().as_deref(),
                parent,
            ),
            Agent::Codex => codex::codex_process(parent),
        }
    }

    /// How one line of its sessions' transcripts reads as messages (only the format differs:
    /// [`crate::transcript::conversation`] reads, caps and makes plain for every agent).
    pub fn transcript_messages(self) -> crate::transcript::LineMessages {
        match self {
            Agent::ClaudeCode => crate::transcript::entry_messages,
            Agent::Codex => codex::rollout_messages,
        }
    }

    /// For an agent that runs no hook when a turn fails (Codex), how to tell from the end of its
    /// transcript that the latest turn failed, and why; `None` for one whose hooks say so
    /// (Claude Code's `StopFailure`).
    pub fn turn_failure(self) -> Option<fn(&str) -> Option<String>> {
        match self {
            Agent::ClaudeCode => None,
            Agent::Codex => Some(codex::turn_failure),
        }
    }

    /// The JSON the hook prints for the user's decision.
    pub fn decision_output(self, decision: &Decision) -> Value {
        match self {
            Agent::ClaudeCode => claude_code::decision_output(decision),
            Agent::Codex => codex::decision_output(decision),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tools_start_and_end_run_in_the_background() {
        let start = EventKind::ToolStart {
            tool: "Bash".into(),
            title: "Running Bash".into(),
            detail: None,
        };
        let done = EventKind::ToolDone {
            tool: "Bash".into(),
            detail: None,
        };
        assert!(Agent::ClaudeCode.runs_in_background(&start));
        assert!(Agent::ClaudeCode.runs_in_background(&done));
        assert!(!Agent::ClaudeCode.runs_in_background(&EventKind::Prompt));
        assert!(Agent::Codex.runs_in_background(&start));
        assert!(Agent::Codex.runs_in_background(&done));
        assert!(!Agent::Codex.runs_in_background(&EventKind::Prompt));
    }
}
