//! Integration tests for `agent-hooks`, one module per area, with real things: settings files in
//! temp directories, a real host serving a real status API over loopback and a real Unix
//! socket, real processes standing in for the agent.

mod codex;
mod host;
mod page;
mod settings;
