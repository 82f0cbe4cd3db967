//! `supercode-tray-app`: the tray app, which `supercode-tray` execs when given no subcommand.

// Keep Windows release builds from opening a console window next to the tray.
#![cfg_attr(not(debug_assertions), windows_subsystem = "windows")]

fn main() -> std::process::ExitCode {
    supercode_tray::run()
}
