//! Coding agents' sessions as Supercode runtimes, fed by the agents' own hooks.
//!
//! A session of an agent (Claude Code or Codex, each with only its own module) becomes a
//! live runtime like any other: a receipt whose source is the session, whose workspace is its
//! working directory and whose process is the agent's process, and an authenticated loopback
//! endpoint serving the runtime status API v1. The tray, `list`, `events`, `act` and `attach`
//! reach it through the paths every runtime uses.
//!
//! How: the agent runs our hook command for each event ([`hook`]); the first hook of a session
//! starts a small detached host ([`host`]) that registers the runtime and serves its status
//! ([`server`], [`board`]); later hooks hand it their events over a user-private socket
//! ([`channel`]). A permission request's hook waits there for the user's answer from the tray.
//!
//! # Layout
//! - [`settings`]: installing, recognising and removing our hook entries in an agent's settings
//!   file (the rules the CLI and the window render).
//! - [`event`]: the agent-neutral [`event::HookEvent`], checked and capped.
//! - [`claude_code`]: everything that is Claude Code's own (its settings path, its entries, its
//!   hook input and decision output, how to find its process, attended or not).
//! - [`codex`]: everything that is Codex's own (its hooks file, its trust records, its decision
//!   output, how to find its process, the "answer Codex approvals from the tray" setting).
//! - [`agent`]: the one switch between the agents, for the hook and the CLI.
//! - [`choice`]: the user's on/off choices of what the hooks wait for (files in our config
//!   directory).
//! - [`board`]: the session's status from its events, and its pending permission request.
//! - [`server`]: the status API on loopback, and the session's page that `attach` opens.
//! - [`transcript`]: the conversation so far, read safely from the session's transcript.
//! - [`channel`]: the socket between hooks and the host.
//! - [`hook`], [`host`]: the two processes.
#![deny(missing_docs)]

pub mod agent;
pub mod board;
pub mod channel;
pub mod choice;
pub mod claude_code;
pub mod codex;
pub mod event;
pub mod hook;
pub mod host;
pub mod server;
pub mod settings;
pub mod transcript;
