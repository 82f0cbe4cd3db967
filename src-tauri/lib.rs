//! Supercode Tray: the Tauri shell and CLI over the Tauri-free core crates.

/// Entry point shared by the binary.
pub fn run() -> std::process::ExitCode {
    std::process::ExitCode::SUCCESS
}
