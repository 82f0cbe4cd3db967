//! `supercode-tray` with no subcommand: start the tray app.
//!
//! The tray app is its own binary, [`APP_BINARY`], installed beside `supercode-tray` (both in
//! `/usr/bin` from the `.deb`, both in `target/<profile>/` from cargo). It links GTK and
//! WebKitGTK, whose ~170 shared libraries cost ~40 ms and ~40 MB to load; glibc cannot load them
//! lazily, so the subcommands live in a binary that links none of them, and this one hands over
//! to the app only when the app is what was asked for.
//!
//! On Unix the hand-over is an `exec`: the same process (pid, parent, process group, open
//! standard streams) continues as the app, with the same arguments (`argv[0]` included) and the
//! same environment. So whatever started `supercode-tray` (a desktop entry, a login item,
//! tauri-driver, a shell) is still talking to the app's process, and the app's single-instance
//! guard sees a second launch exactly as before. Elsewhere the app runs as a child and its exit
//! status is passed on.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use crate::CliError;

/// The tray app's binary, looked up beside the running `supercode-tray`.
pub const APP_BINARY: &str = "supercode-tray-app";

/// Where the tray app's binary is: beside this executable (symbolic links resolved, as the
/// kernel resolves `/proc/self/exe`).
pub fn app_binary() -> std::io::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    Ok(exe.with_file_name(format!("{APP_BINARY}{}", std::env::consts::EXE_SUFFIX)))
}

/// Replaces this process with the tray app, given the same arguments and environment; returns
/// only when that fails (exit 1, with the path that could not be run).
pub fn exec_app() -> ExitCode {
    let path = match app_binary() {
        Ok(path) => path,
        Err(source) => {
            return CliError::Io {
                what: "could not find this program's own path to start the tray app",
                source,
            }
            .report()
        }
    };
    let mut args = std::env::args_os();
    let arg0 = args.next();
    let mut command = Command::new(&path);
    command.args(args);
    hand_over(command, arg0, path)
}

#[cfg(unix)]
fn hand_over(mut command: Command, arg0: Option<std::ffi::OsString>, path: PathBuf) -> ExitCode {
    use std::os::unix::process::CommandExt as _;
    if let Some(arg0) = arg0 {
        command.arg0(arg0);
    }
    let source = command.exec();
    CliError::StartApp { path, source }.report()
}

#[cfg(not(unix))]
fn hand_over(mut command: Command, _arg0: Option<std::ffi::OsString>, path: PathBuf) -> ExitCode {
    match command.status() {
        Ok(status) => match status.code().and_then(|code| u8::try_from(code).ok()) {
            Some(code) => ExitCode::from(code),
            None => ExitCode::FAILURE,
        },
        Err(source) => CliError::StartApp { path, source }.report(),
    }
}
