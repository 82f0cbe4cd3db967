//! Supercode Tray's app: the Tauri shell over `supercode-core`.
//!
//! The command line (every display-free subcommand, and logging) is `supercode-cli`, which knows
//! nothing of Tauri. This package builds two binaries from it: `supercode-tray`, which uses only
//! `supercode-cli` and so links no display library, and `supercode-tray-app` (this library),
//! which it execs to start the tray. Its third, `supercode-tray-hook`, is the agents' hook and
//! uses only `agent-hooks`.
//!
//! # Layout
//! - [`app`]: the tray app: tray icon and menu, the on-demand window, notifications, event forwarding.
//! - [`commands`]: the IPC commands, one-to-five-line adapters over the core, grouped by domain.

pub mod app;
pub mod commands;

use std::process::ExitCode;

/// Parses the command line and runs a subcommand, or the tray app when there is none.
pub fn run() -> ExitCode {
    supercode_cli::run(app::run)
}
