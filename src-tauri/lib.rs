//! Supercode Tray: the command line and the Tauri shell over `supercode-core`.
//!
//! # Layout
//! - [`cli`]: `clap` definitions and the display-free subcommands (`list`, `attach`, `doctor`...).
//! - [`app`]: the tray app: tray icon and menu, the on-demand window, notifications, event forwarding.
//! - [`commands`]: the IPC commands, one-to-five-line adapters over the core, grouped by domain.
//! - [`logging`]: the rolling log file and `RUST_LOG`.

pub mod app;
pub mod cli;
pub mod commands;
pub mod logging;

use std::process::ExitCode;

/// Parses the command line and runs a subcommand, or the tray app when there is none.
pub fn run() -> ExitCode {
    use clap::Parser;
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version are not errors: clap prints them and exits 0.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => return cli::CliError::Usage(e).report(),
    };
    match cli.command {
        None => app::run(),
        Some(command) => cli::run(command),
    }
}
