//! Handing things to the user's desktop: a one-time attach URL to the browser, a folder (the
//! logs) to the file manager. The launcher runs detached (its own process group, no stdio) and a
//! thread reaps it, so an app that does this all day leaves no zombie behind; neither ever logs
//! the URL, which carries a one-time code.

use std::ffi::OsStr;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use attach_proxy::AttachUrl;

use crate::CoreError;

/// Opens a one-time attach URL in the user's browser, from the backend. `SUPERCODE_BROWSER`, when
/// set, names the program to use instead of the desktop default (tests use it).
/// A browser that fails is named in the error (the one `SUPERCODE_BROWSER` names, or the
/// desktop's default), so the user knows which setting to fix.
pub fn open_in_browser(url: &AttachUrl) -> Result<(), CoreError> {
    match std::env::var_os("SUPERCODE_BROWSER").filter(|v| !v.is_empty()) {
        Some(program) => {
            let what = format!(
                "could not open the browser SUPERCODE_BROWSER names, {}",
                crate::text::quoted(&program.to_string_lossy())
            );
            match program.into_string() {
                Ok(program) => launch(url.as_str(), Some(&program)),
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "it is not valid UTF-8",
                )),
            }
            .map_err(|source| CoreError::Io { what, source })
        }
        None => launch(url.as_str(), None).map_err(|source| CoreError::Io {
            what:
                "could not open the desktop's default browser (set SUPERCODE_BROWSER to choose one)"
                    .into(),
            source,
        }),
    }
}

/// Opens a folder in the file manager, creating it first if it is missing (the logs folder
/// before anything was logged).
pub fn open_path(path: &Path) -> Result<(), CoreError> {
    std::fs::create_dir_all(path)
        .and_then(|()| launch(path, None))
        .map_err(|source| CoreError::Io {
            what: format!("could not open {}", path.display()),
            source,
        })
}

/// Hands `target` to `program`, or to the first desktop launcher installed (`xdg-open`, `gio
/// open`, … in the `open` crate's order), and returns once it has started: it is not waited
/// for, and a launcher that starts and then fails is not followed by the next one (as with
/// `open::that_detached`).
///
/// One `posix_spawn`, where `open`'s detached spawn forks twice and waits for the grandchild's
/// exec: each of those is a wait for the scheduler, which makes the hand-off an order of
/// magnitude slower, and far more on a loaded machine, on the path of every attach.
pub fn launch(target: impl AsRef<OsStr>, program: Option<&str>) -> io::Result<()> {
    let commands = match program {
        Some(program) => vec![open::with_command(&target, program)],
        None => open::commands(&target),
    };
    let mut missing = io::Error::new(
        io::ErrorKind::NotFound,
        "no desktop launcher (xdg-open, gio, …) is installed",
    );
    for command in commands {
        match spawn_detached(command) {
            Ok(()) => return Ok(()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => missing = error,
            Err(error) => return Err(error),
        }
    }
    Err(missing)
}

/// Starts `command` with no stdio in a process group of its own (a Ctrl-C in the terminal that
/// ran `supercode-tray attach` does not reach the browser it started), and reaps it from a
/// thread when it exits. Should no thread start, the child still runs; it is reaped when this
/// process exits.
fn spawn_detached(mut command: Command) -> io::Result<()> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let _ = std::thread::Builder::new()
        .name("launcher-reaper".into())
        .spawn(move || child.wait());
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use live_runtime::test_support::wait_until;

    use super::*;

    /// The launcher gets the target as its one argument, runs in its own process group, and is
    /// reaped: no zombie is left once it has exited.
    #[test]
    fn a_launcher_runs_detached_with_the_target_and_is_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let script = dir.path().join("launcher");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\necho \"$1 $$ $(ps -o pgid= -p $$)\" > {}.tmp && mv {0}.tmp {0}\n",
                out.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        launch("http://127.0.0.1:9/x", Some(script.to_str().unwrap())).unwrap();
        let written = wait_until("the launcher to run", Duration::from_secs(10), || {
            std::fs::read_to_string(&out).ok()
        });
        let [target, pid, pgid] = written.split_whitespace().collect::<Vec<_>>()[..] else {
            panic!("unexpected output {written:?}");
        };
        assert_eq!(target, "http://127.0.0.1:9/x");
        assert_eq!(pid, pgid, "the launcher leads a process group of its own");
        let pid: u32 = pid.parse().unwrap();
        // A zombie keeps its /proc entry until it is reaped.
        wait_until(
            "the exited launcher to be reaped",
            Duration::from_secs(10),
            || (!Path::new(&format!("/proc/{pid}")).exists()).then_some(()),
        );
    }

    #[test]
    fn a_missing_launcher_is_an_error_that_says_so() {
        let error = launch("http://127.0.0.1:9/", Some("/nonexistent/browser")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
