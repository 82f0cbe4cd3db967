//! Handing things to the user's desktop: a one-time attach URL to the browser, a folder (the
//! logs) to the file manager. The launcher runs detached (its own process group, no stdio) and a
//! thread reaps it, so an app that does this all day leaves no zombie behind; neither ever logs
//! the URL, which carries a one-time code.
//!
//! A launcher that starts and then fails (`xdg-open` with nothing to open a URL with) is an
//! error like one that cannot start: the opening waits up to [`LAUNCHER_VERDICT`] for its exit
//! status, so the window, the tray and `attach` tell the user instead of dropping it. Which
//! launcher would run is [`launcher`], what `doctor` checks.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

use attach_proxy::AttachUrl;
use tokio::sync::oneshot;

use crate::CoreError;

/// How long an opening waits for its launcher's exit status. `xdg-open` and `gio open` hand the
/// target over and exit within a few hundred milliseconds, and one with nothing to hand it to
/// exits at once; a launcher still running after this is a browser started in the foreground,
/// which has taken the URL. So a failure is told, and a success costs no more than its launcher.
pub const LAUNCHER_VERDICT: Duration = Duration::from_secs(2);

/// The variable that names the browser program to use instead of the desktop's launcher.
pub const BROWSER_VARIABLE: &str = "SUPERCODE_BROWSER";

/// What is being opened: which launcher takes it depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opening {
    /// An attach URL, in the browser: `SUPERCODE_BROWSER`, else the desktop's launcher.
    Browser,
    /// A folder, in the file manager: the desktop's launcher.
    Folder,
}

/// The launcher an opening would start now, found as the spawn will find it.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The program as named (`xdg-open`, or `SUPERCODE_BROWSER`'s value).
    pub program: String,
    /// Where it is.
    pub path: PathBuf,
    /// Whether `SUPERCODE_BROWSER` chose it.
    pub from_variable: bool,
}

/// Why no launcher would start, for people: what was looked for.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct NoLauncher(String);

/// Opens a one-time attach URL in the user's browser, from the backend. `SUPERCODE_BROWSER`, when
/// set, names the program to use instead of the desktop default (tests use it). Waits for the
/// launcher's verdict (at most [`LAUNCHER_VERDICT`]). A browser that fails is named in the error
/// (the one `SUPERCODE_BROWSER` names, or the desktop's default), so the user knows which
/// setting to fix.
pub async fn open_in_browser(url: &AttachUrl) -> Result<(), CoreError> {
    let program = browser_program().map_err(|source| CoreError::Io {
        what: "could not open the browser".into(),
        source,
    })?;
    let what = match &program {
        Some(program) => format!(
            "could not open the browser SUPERCODE_BROWSER names, {}",
            crate::text::quoted(program)
        ),
        None => {
            "could not open the desktop's default browser (set SUPERCODE_BROWSER to choose one)"
                .to_owned()
        }
    };
    let opened = match launch(url.as_str(), program.as_deref()) {
        Ok(launched) => launched.verdict().await,
        Err(e) => Err(e),
    };
    opened.map_err(|source| CoreError::Io { what, source })
}

/// Opens a folder in the file manager, creating it first if it is missing (the logs folder
/// before anything was logged). Waits for the launcher's verdict (at most [`LAUNCHER_VERDICT`]).
pub async fn open_path(path: &Path) -> Result<(), CoreError> {
    let opened = match std::fs::create_dir_all(path).and_then(|()| launch(path, None)) {
        Ok(launched) => launched.verdict().await,
        Err(e) => Err(e),
    };
    opened.map_err(|source| CoreError::Io {
        what: format!("could not open {}", path.display()),
        source,
    })
}

/// `SUPERCODE_BROWSER`, when set and not empty.
fn browser_program() -> io::Result<Option<String>> {
    match std::env::var_os(BROWSER_VARIABLE).filter(|v| !v.is_empty()) {
        Some(program) => program.into_string().map(Some).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "SUPERCODE_BROWSER is not valid UTF-8",
            )
        }),
        None => Ok(None),
    }
}

/// The launchers [`launch`] tries for `target`, in order: `program`, or the desktop's (`xdg-open`,
/// `gio open`, … in the `open` crate's order).
fn candidates(target: &OsStr, program: Option<&str>) -> Vec<Command> {
    match program {
        Some(program) => vec![open::with_command(target, program)],
        None => open::commands(target),
    }
}

/// The launcher that `opening` would start now: the first of its candidates that `PATH` (or its
/// path) finds as an executable file, as the spawn looks for it. Starts nothing.
pub fn launcher(opening: Opening) -> Result<Launcher, NoLauncher> {
    let program = match opening {
        Opening::Browser => browser_program().map_err(|e| NoLauncher(e.to_string()))?,
        Opening::Folder => None,
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let search_path = std::env::var_os("PATH");
    let mut tried: Vec<OsString> = Vec::new();
    for command in candidates(OsStr::new("."), program.as_deref()) {
        let name = command.get_program().to_os_string();
        let found = name.to_str().and_then(|name| {
            crate::revive::resolve_program(name, &cwd, search_path.as_deref()).ok()
        });
        if let Some(path) = found {
            return Ok(Launcher {
                program: name.to_string_lossy().into_owned(),
                path,
                from_variable: program.is_some(),
            });
        }
        tried.push(name);
    }
    let tried: Vec<_> = tried.iter().map(|t| t.to_string_lossy()).collect();
    Err(NoLauncher(match program {
        Some(_) => format!(
            "SUPERCODE_BROWSER names {}, which is neither an executable file nor a program on PATH",
            tried.join(", ")
        ),
        None => format!(
            "none of the desktop launchers is installed (looked for {} on PATH)",
            tried.join(", ")
        ),
    }))
}

/// Hands `target` to `program`, or to the first desktop launcher installed (`xdg-open`, `gio
/// open`, … in the `open` crate's order), and returns once it has started: what it does then is
/// [`Launched::verdict`]. A launcher that starts and then fails is not followed by the next one
/// (as with `open::that_detached`).
///
/// One `posix_spawn`, where `open`'s detached spawn forks twice and waits for the grandchild's
/// exec: each of those is a wait for the scheduler, which makes the hand-off an order of
/// magnitude slower, and far more on a loaded machine, on the path of every attach.
pub fn launch(target: impl AsRef<OsStr>, program: Option<&str>) -> io::Result<Launched> {
    let mut missing = io::Error::new(
        io::ErrorKind::NotFound,
        "no desktop launcher (xdg-open, gio, …) is installed",
    );
    for command in candidates(target.as_ref(), program) {
        match spawn_detached(command) {
            Ok(launched) => return Ok(launched),
            Err(error) if error.kind() == io::ErrorKind::NotFound => missing = error,
            Err(error) => return Err(error),
        }
    }
    Err(missing)
}

/// A launcher that was started; its reaper reports how it exits.
#[derive(Debug)]
pub struct Launched {
    program: String,
    exit: Option<oneshot::Receiver<io::Result<ExitStatus>>>,
}

impl Launched {
    /// How the launcher did: an error when it exited unsuccessfully within [`LAUNCHER_VERDICT`];
    /// `Ok` when it succeeded or is still running (it has the target), or when nothing can wait
    /// for it (no reaper thread).
    pub async fn verdict(self) -> io::Result<()> {
        let Some(exit) = self.exit else {
            return Ok(());
        };
        match tokio::time::timeout(LAUNCHER_VERDICT, exit).await {
            Ok(Ok(Ok(status))) if !status.success() => Err(io::Error::other(format!(
                "{} could not open it ({status})",
                self.program
            ))),
            Ok(Ok(Err(error))) => Err(error),
            Ok(_) | Err(_) => Ok(()),
        }
    }
}

/// Starts `command` with no stdio in a process group of its own (a Ctrl-C in the terminal that
/// ran `supercode-tray attach` does not reach the browser it started), and reaps it from a
/// thread when it exits, sending its status to [`Launched::verdict`]. Should no thread start,
/// the child still runs; it is reaped when this process exits.
fn spawn_detached(mut command: Command) -> io::Result<Launched> {
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    let (tx, rx) = oneshot::channel();
    let reaper = std::thread::Builder::new()
        .name("launcher-reaper".into())
        .spawn(move || {
            // Nobody listens once the verdict was given: a late exit is only reaped.
            let _ = tx.send(child.wait());
        });
    Ok(Launched {
        program,
        exit: reaper.is_ok().then_some(rx),
    })
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
        drop(launch("http://127.0.0.1:9/x", Some(script.to_str().unwrap())).unwrap());
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

    /// A launcher that starts and then fails is an error, not dropped (issue 31 item 7); one that
    /// succeeds, or keeps running past the verdict's wait (a browser in the foreground), is not.
    #[tokio::test]
    async fn a_launcher_that_exits_unsuccessfully_is_an_error() {
        let error = launch("http://127.0.0.1:9/", Some("false"))
            .unwrap()
            .verdict()
            .await
            .unwrap_err();
        assert!(
            error.to_string().starts_with("false could not open it"),
            "{error}"
        );
        launch("http://127.0.0.1:9/", Some("true"))
            .unwrap()
            .verdict()
            .await
            .unwrap();
    }

    #[test]
    fn a_missing_launcher_is_an_error_that_says_so() {
        let error = launch("http://127.0.0.1:9/", Some("/nonexistent/browser")).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }
}
