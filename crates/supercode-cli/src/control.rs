//! `list` answered by the running tray app.
//!
//! The app already holds the live inventory (its watcher keeps it current, agent states
//! included), so a `list` asks it over a Unix socket instead of reading every receipt, every
//! `/proc/<pid>/stat` and every runtime's state endpoint again: at 10,000 receipts that is the
//! difference between the floor of reading them (~300 ms here) and a few milliseconds. What it
//! prints is what the tray shows. Without the app, or when anything about the answer is not
//! certain, the command reads the files itself as before ([`ask_app`] returns `None`).
//!
//! Who may ask: only the app's own user. The socket sits in a directory of the state directory
//! that is the user's own and closed to everyone else (checked on both sides, not followed if it
//! is a symlink), and each side asks the kernel who the other is (`SO_PEERCRED`): the app
//! answers no other user, and the command trusts no other user's answer. The answer is the
//! `list` output itself, which holds no secret.
//!
//! What is asked: the command sends its version and the receipt directory, `$CANON_HOME` and
//! secret store it would read; the app answers only if all of them are its own (an app left
//! running across an upgrade, or started over other directories, is not asked to speak for these).
//! Before it answers, the app's watcher takes in every change cued before the question
//! ([`Supercode::caught_up`]), so a runtime registered just before `list` is in the answer.

use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use live_runtime::receipt::PrivateDir;
use serde::{Deserialize, Serialize};
use supercode_core::view::Snapshot;
use supercode_core::{Locations, Supercode};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::output;

/// The directory in the state directory that holds the socket.
const DIR_NAME: &str = "control";
/// The socket's name in it.
const SOCKET_NAME: &str = "socket";

/// The longest question the app reads.
const MAX_QUESTION: u64 = 16 * 1024;
/// The longest answer the command reads (a list of 10,000 runtimes is ~6 MB of JSON).
const MAX_ANSWER: u64 = 256 * 1024 * 1024;

/// How long the app waits for a question once a connection is accepted.
const QUESTION_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the app waits for its watcher to take in what was cued before the question.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(3);
/// How long either side waits on the other once connected: past it the command reads the files.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// The first line of an answer the command may print.
const ANSWERED: &str = "ok";
/// The first word of an answer that says why the app did not answer.
const REFUSED: &str = "refused";

/// What the command asks, as one line of JSON.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Question {
    /// The asking binary's version: the app answers only its own version's command.
    version: String,
    /// What to print: the `list --json` document or the table.
    json: bool,
    /// The directories and store the command would read, as `list` prints them.
    receipt_dir: String,
    canon_home: String,
    secret_store: String,
}

impl Question {
    fn for_list(locations: &Locations, json: bool) -> Self {
        Self {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            json,
            receipt_dir: locations.receipts.path().display().to_string(),
            canon_home: locations.canon.root().display().to_string(),
            secret_store: locations.receipts.secret_store().describe(),
        }
    }
}

/// The socket's path for these locations.
pub fn socket_path(locations: &Locations) -> PathBuf {
    locations.state_dir.join(DIR_NAME).join(SOCKET_NAME)
}

/// Why the socket's directory may not be used: anything but a private directory of the user's
/// own, by the receipt directory's rule (not followed if it is a symlink).
fn unusable_dir(dir: &Path) -> Option<String> {
    let shown = dir.display();
    match live_runtime::receipt::inspect_private_dir(dir) {
        Ok(PrivateDir::Private { .. }) => None,
        Ok(PrivateDir::Missing) => Some(format!("{shown} does not exist")),
        Ok(PrivateDir::TooOpen { mode }) => {
            Some(format!("{shown} is open to other users (mode {mode:o})"))
        }
        Ok(PrivateDir::Refused(refused)) => Some(format!("{shown}: {}", refused.problem())),
        Err(e) => Some(format!("{shown}: {e}")),
    }
}

/// True when the kernel says the other end of `stream` is a process of this user.
fn peer_is_own(stream: &UnixStream) -> bool {
    stream
        .peer_cred()
        .is_ok_and(|cred| cred.uid() == rustix::process::geteuid().as_raw())
}

/// Asks the running app for `list`'s output over these locations. `None` when no app answers
/// (none runs, it is another version, it reads other directories, it is another user's, or it
/// did not answer in time); the reason is logged.
pub async fn ask_app(locations: &Locations, json: bool) -> Option<String> {
    let path = socket_path(locations);
    let dir = path.parent()?;
    if let Some(why) = unusable_dir(dir) {
        tracing::debug!("not asking the tray app: {why}");
        return None;
    }
    let question = Question::for_list(locations, json);
    match tokio::time::timeout(ANSWER_TIMEOUT, ask(&path, &question)).await {
        Ok(Ok(Some(text))) => {
            tracing::info!("list answered by the running tray app");
            Some(text)
        }
        Ok(Ok(None)) => None,
        Ok(Err(e)) => {
            // No socket, or nothing listening on it: the app is not running.
            tracing::debug!("no tray app to ask: {e}");
            None
        }
        Err(_) => {
            tracing::warn!(
                "the tray app did not answer within {ANSWER_TIMEOUT:?}; reading the files"
            );
            None
        }
    }
}

async fn ask(path: &Path, question: &Question) -> io::Result<Option<String>> {
    let mut stream = UnixStream::connect(path).await?;
    if !peer_is_own(&stream) {
        tracing::warn!(
            "the tray app's socket {} is another user's; not asking it",
            path.display()
        );
        return Ok(None);
    }
    let mut line = serde_json::to_string(question).map_err(io::Error::other)?;
    line.push('\n');
    stream.write_all(line.as_bytes()).await?;
    let mut answer = Vec::new();
    (&mut stream)
        .take(MAX_ANSWER + 1)
        .read_to_end(&mut answer)
        .await?;
    if answer.len() as u64 > MAX_ANSWER {
        tracing::warn!("the tray app's answer is over {MAX_ANSWER} bytes; reading the files");
        return Ok(None);
    }
    let answer = String::from_utf8(answer).map_err(io::Error::other)?;
    let (status, text) = answer.split_once('\n').unwrap_or((&answer, ""));
    if status == ANSWERED {
        return Ok(Some(text.to_owned()));
    }
    tracing::info!("the tray app did not answer list: {status}");
    Ok(None)
}

/// The app's side: answers `list` over `core`'s locations until the future is dropped (the
/// app's shutdown cancels it). Logs and returns at once if the socket cannot be set up safely.
pub async fn serve(core: &Supercode) {
    let path = socket_path(core.locations());
    let (listener, _socket) = match listen(&path) {
        Ok(listening) => listening,
        Err(e) => {
            tracing::warn!(
                "`list` will read the files itself: no control socket at {}: {e}",
                path.display()
            );
            return;
        }
    };
    tracing::info!("answering `list` at {}", path.display());
    let mut last = None;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("control socket accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if !peer_is_own(&stream) {
            tracing::warn!("refused a control connection from another user");
            continue;
        }
        // One at a time: `list` is asked rarely, and every wait is bounded.
        if tokio::time::timeout(ANSWER_TIMEOUT, answer(core, stream, &mut last))
            .await
            .is_err()
        {
            tracing::warn!("a control connection took over {ANSWER_TIMEOUT:?}; dropped");
        }
    }
}

/// Makes the socket's directory (the user's alone), replaces a socket left by an app that
/// stopped, and listens.
fn listen(path: &Path) -> io::Result<(UnixListener, Socket)> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("no directory"))?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    if let Some(why) = unusable_dir(dir) {
        return Err(io::Error::other(why));
    }
    // Only a socket is replaced: another file there is left alone, and listening fails.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket()) {
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    let inode = std::fs::symlink_metadata(path)?.ino();
    Ok((
        listener,
        Socket {
            path: path.to_owned(),
            inode,
        },
    ))
}

/// The socket file the app listens on, removed when it stops listening unless another app has
/// replaced it since.
struct Socket {
    path: PathBuf,
    inode: u64,
}

impl Drop for Socket {
    fn drop(&mut self) {
        if std::fs::symlink_metadata(&self.path).is_ok_and(|m| m.ino() == self.inode) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The last answer rendered, kept for the next question: a script that polls `list` at 10,000
/// runtimes then costs a pointer comparison and a copy, not a render of 10 MB of JSON each time,
/// and the JSON answer after a change renders only the runtimes that changed.
enum Rendered {
    Json(output::JsonList),
    Table {
        snapshot: Arc<Snapshot>,
        text: Arc<String>,
    },
}

impl Rendered {
    /// This answer, if it was rendered for `snapshot` in the form `json` asks for.
    fn for_snapshot(&self, json: bool, snapshot: &Arc<Snapshot>) -> Option<Arc<String>> {
        // The watcher publishes a new copy only when the inventory changed: the same copy is the
        // same inventory, with no comparison of thousands of runtimes.
        let same =
            |rendered: &Arc<Snapshot>| Arc::ptr_eq(rendered, snapshot) || **rendered == **snapshot;
        match self {
            Rendered::Json(list) if json && same(list.snapshot()) => Some(list.text.clone()),
            Rendered::Table { snapshot, text } if !json && same(snapshot) => Some(text.clone()),
            _ => None,
        }
    }
}

async fn answer(core: &Supercode, stream: UnixStream, last: &mut Option<Rendered>) {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    let mut reader = BufReader::new(read.take(MAX_QUESTION));
    let read = tokio::time::timeout(QUESTION_TIMEOUT, reader.read_line(&mut line)).await;
    let reply = match read {
        Ok(Ok(_)) => match serde_json::from_str::<Question>(line.trim_end()) {
            Ok(question) => reply_to(core, &question, last).await,
            Err(e) => Err(format!("not a question: {e}")),
        },
        Ok(Err(e)) => Err(format!("unreadable question: {e}")),
        Err(_) => Err(format!("no question within {QUESTION_TIMEOUT:?}")),
    };
    let written = match reply {
        Ok(text) => {
            let status = format!("{ANSWERED}\n");
            match write.write_all(status.as_bytes()).await {
                Ok(()) => write.write_all(text.as_bytes()).await,
                Err(e) => Err(e),
            }
        }
        Err(why) => {
            write
                .write_all(format!("{REFUSED} {why}\n").as_bytes())
                .await
        }
    };
    if let Err(e) = written {
        tracing::debug!("the command left before its answer: {e}");
    }
    let _ = write.shutdown().await;
}

/// `list`'s output for `question`, or why the app does not answer it.
async fn reply_to(
    core: &Supercode,
    question: &Question,
    last: &mut Option<Rendered>,
) -> Result<Arc<String>, String> {
    let ours = Question::for_list(core.locations(), question.json);
    if *question != ours {
        return Err(if question.version != ours.version {
            format!(
                "the command is version {}, the app {}",
                question.version, ours.version
            )
        } else {
            "the command reads other directories or another secret store".to_owned()
        });
    }
    let Some(snapshot) = core.caught_up(CATCH_UP_TIMEOUT).await else {
        return Err("the inventory is not being watched".to_owned());
    };
    if let Some(text) = last
        .as_ref()
        .and_then(|l| l.for_snapshot(question.json, &snapshot))
    {
        return Ok(text);
    }
    let previous = last.take();
    let rendered = if question.json {
        let previous = match &previous {
            Some(Rendered::Json(list)) => Some(list),
            _ => None,
        };
        Rendered::Json(output::JsonList::render(snapshot, previous))
    } else {
        Rendered::Table {
            text: Arc::new(output::render_list(&snapshot, false)),
            snapshot,
        }
    };
    let text = match &rendered {
        Rendered::Json(list) => list.text.clone(),
        Rendered::Table { text, .. } => text.clone(),
    };
    *last = Some(rendered);
    Ok(text)
}
