//! The per-session host: a small detached process that makes one agent session a live runtime.
//!
//! The first hook of a session starts it ([`crate::hook`]). It binds the session's socket (so
//! a second host for the same session finds it taken and leaves), serves the status API on
//! loopback with a fresh bearer token, and registers a receipt whose source is the session,
//! whose workspace is its working directory and whose process is the agent's process
//! ([`live_runtime::register_live_runtime_for_process`]). Hooks then hand it their events over
//! the socket. It ends when the agent's process exits (a pidfd: no polling) or the session
//! ends, removing its receipt and token; killed, its receipt names a dead process and the next
//! read removes it, as for any runtime.
//!
//! It never sees the agent's environment (the hook starts it with a cleared environment and
//! only the variables that locate the user's directories and keychain), so the agent's API key
//! cannot reach anything it writes.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use live_runtime::{
    BearerToken, LiveRuntimeMetadata, LiveRuntimeSource, ProcessIdentity, ReceiptDir,
};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::board::{AgentState, Board};
use crate::channel::{self, Reply, Request, MAX_LINE};
use crate::event::{EventKind, HookEvent};

/// How long a request whose agent waits for the hook waits for the tray to watch the session
/// before it goes on without: a running tray subscribes to a new session within tens of
/// milliseconds of its receipt (`docs/BENCHMARKS.md`, the watcher), and a session's first
/// request can come sooner than that.
const WATCH_GRACE: Duration = Duration::from_secs(2);

/// How long the host waits for a connected hook's event line. Hooks write it at once; this only
/// bounds a peer that connects and says nothing.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// How often a working session of an agent that runs no hook for a failed turn (Codex) has the
/// end of its transcript read: a failed turn shows as `error` within a second, at the cost of
/// one small read a second while the session works (none while it waits).
const TURN_FAILURE_POLL: Duration = Duration::from_secs(1);
/// How much of the transcript's end that read takes: a turn's end is its last lines.
const TURN_FAILURE_TAIL_BYTES: u64 = 64 * 1024;

/// What a host serves.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// The agent.
    pub agent: Agent,
    /// The session id (already checked).
    pub session_id: String,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The agent's process.
    pub process: ProcessIdentity,
    /// Where the sockets are.
    pub socket_dir: PathBuf,
    /// Where the receipt goes (and the secret store its token goes into).
    pub receipts: ReceiptDir,
    /// How often a quiet status stream sends a keep-alive.
    pub keep_alive: Duration,
}

/// Why a host could not start.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The socket directory or socket could not be used.
    #[error("the session socket: {0}")]
    Socket(std::io::Error),
    /// Another host already serves this session.
    #[error("another host serves this session")]
    AlreadyServed,
    /// The status endpoint could not listen.
    #[error("the status endpoint: {0}")]
    Listen(std::io::Error),
    /// The receipt could not be registered.
    #[error(transparent)]
    Register(#[from] live_runtime::LiveRuntimeReceiptError),
}

/// Runs the host until the agent's process exits or the session ends.
pub async fn run(config: HostConfig) -> Result<(), HostError> {
    channel::ensure_dir(&config.socket_dir).map_err(HostError::Socket)?;
    let path = channel::socket_path(&config.socket_dir, config.agent.name(), &config.session_id);
    let listener = bind(&path).await?;
    let stop = CancellationToken::new();
    let board = Board::new(config.agent);
    let token = BearerToken::new(random_token());
    let address = crate::server::serve(
        Arc::clone(&board),
        config.agent,
        token.expose(),
        config.keep_alive,
        stop.clone(),
    )
    .await
    .map_err(HostError::Listen)?;
    let registration = {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            let dir = config.receipts.clone();
            let name = config
                .cwd
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| config.cwd.display().to_string());
            live_runtime::register_live_runtime_for_process(
                &dir,
                &format!("{}-{}", config.agent.name(), config.session_id),
                LiveRuntimeSource {
                    session_id: config.session_id.clone(),
                    workspace: config.cwd.clone(),
                },
                address,
                token,
                LiveRuntimeMetadata {
                    runtime_kind: config.agent.name().to_owned(),
                    display_name: Some(format!("{} · {name}", config.agent.title())),
                    cwd: Some(config.cwd.clone()),
                    workspace_roots: vec![config.cwd.clone()],
                    ..LiveRuntimeMetadata::default()
                },
                config.process,
            )
        })
        .await
        .expect("registration does not panic")
    };
    let registration = match registration {
        Ok(registration) => registration,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            return Err(e.into());
        }
    };
    let ended = Arc::new(Notify::new());
    let agent_exited = exit_of(config.process.pid);
    tokio::pin!(agent_exited);
    let turn_failure = config.agent.turn_failure();
    let mut failure_poll = tokio::time::interval(TURN_FAILURE_POLL);
    failure_poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let serve = {
        let (board, ended) = (Arc::clone(&board), Arc::clone(&ended));
        let session = config.session_id.clone();
        move |stream, _open| {
            let (board, ended, session) = (Arc::clone(&board), Arc::clone(&ended), session.clone());
            Some(async move { serve_hook(stream, &board, &session, &ended).await })
        }
    };
    let hooks = tokio::spawn(accept_loop::run(
        "session host",
        listener,
        stop.clone(),
        Duration::ZERO,
        serve,
    ));
    loop {
        tokio::select! {
            _ = &mut agent_exited => break,
            _ = ended.notified() => break,
            _ = failure_poll.tick(), if turn_failure.is_some() => {
                if let Some(failed) = turn_failure {
                    note_failed_turn(&board, &config, failed).await;
                }
            }
        }
    }
    stop.cancel();
    // The session is over: its socket closes, and a hook still connected reads the end of the
    // connection, which it takes as no decision, as when the host is gone.
    let _ = hooks.await;
    let _ = std::fs::remove_file(&path);
    let _ = tokio::task::spawn_blocking(move || registration.unregister()).await;
    Ok(())
}

/// While the session works, whether its transcript says the turn failed; if so, the session is
/// `error` with the agent's reason, as a failure hook would make it.
async fn note_failed_turn(board: &Board, config: &HostConfig, failed: fn(&str) -> Option<String>) {
    if board.content().state != AgentState::Working {
        return;
    }
    let Some(path) = board.transcript() else {
        return;
    };
    let reason = tokio::task::spawn_blocking(move || {
        let (tail, _) = crate::transcript::read_tail(&path, TURN_FAILURE_TAIL_BYTES)?;
        failed(&String::from_utf8_lossy(&tail))
    })
    .await
    .ok()
    .flatten();
    if let Some(reason) = reason {
        board.apply(&HookEvent {
            session_id: config.session_id.clone(),
            cwd: config.cwd.clone(),
            subagent: None,
            transcript: None,
            spawned: None,
            kind: EventKind::Failed { reason },
        });
    }
}

/// Binds the session's socket; a socket nobody answers on (a host that was killed) is replaced,
/// one that answers means another host serves the session.
async fn bind(path: &std::path::Path) -> Result<UnixListener, HostError> {
    match UnixListener::bind(path) {
        Ok(listener) => Ok(listener),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            if UnixStream::connect(path).await.is_ok() {
                return Err(HostError::AlreadyServed);
            }
            std::fs::remove_file(path).map_err(HostError::Socket)?;
            UnixListener::bind(path).map_err(HostError::Socket)
        }
        Err(e) => Err(HostError::Socket(e)),
    }
}

/// One hook's connection: its event, and for a waiting permission request the user's answer.
async fn serve_hook(stream: UnixStream, board: &Board, session: &str, ended: &Notify) {
    if !channel::peer_is_own(&stream) {
        return;
    }
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read.take(MAX_LINE));
    let mut line = String::new();
    match tokio::time::timeout(REQUEST_TIMEOUT, reader.read_line(&mut line)).await {
        Ok(Ok(n)) if n > 0 && line.ends_with('\n') => {}
        _ => return,
    }
    let Ok(request) = serde_json::from_str::<Request>(&line) else {
        return;
    };
    let event: HookEvent = request.event;
    if event.session_id != session {
        return;
    }
    let mut reply = Reply::default();
    // A request whose agent waits for this hook is held for the tray only while the tray
    // watches the session: nobody else would answer it, and the agent would wait for the hook's
    // timeout. Otherwise it goes on as if the hook had not waited.
    let mut watchers = board.watchers();
    let held = request.wait
        && (!request.while_watched
            || tokio::time::timeout(WATCH_GRACE, watchers.wait_for(|count| *count > 0))
                .await
                .is_ok());
    match (&event.kind, held) {
        (EventKind::PermissionRequest { .. }, true) => {
            let Some(mut waiting) = board.request_approval(&event) else {
                return;
            };
            let mut probe = [0u8; 1];
            tokio::select! {
                decision = &mut waiting.decision => reply.decision = decision.ok(),
                // The hook wrote its one line; anything more, or its end, means it is gone:
                // Claude Code stopped it because the user answered in the terminal.
                _ = reader.read(&mut probe) => {
                    board.hook_gone(waiting.seq);
                    return;
                }
                // The tray stopped watching (it quit): the agent asks as without the hook.
                _ = watchers.wait_for(|count| *count == 0), if request.while_watched => {
                    board.unhold(waiting.seq, request.in_terminal);
                }
            }
        }
        (EventKind::PermissionRequest { .. }, false) if request.in_terminal => {
            board.request_in_terminal(&event);
        }
        (EventKind::SessionEnd, _) => {
            board.apply(&event);
            ended.notify_one();
        }
        _ => board.apply(&event),
    }
    let mut text = serde_json::to_string(&reply).expect("a reply serializes");
    text.push('\n');
    let _ = write.write_all(text.as_bytes()).await;
}

/// Resolves when process `pid` exits (a pidfd becomes readable); at once if it is gone.
async fn exit_of(pid: u32) {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    use tokio::io::unix::AsyncFd;
    let Some(handle) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return;
    };
    match pidfd_open(handle, PidfdFlags::NONBLOCK) {
        Ok(fd) => {
            // The AsyncFd owns the OwnedFd, so it stays open exactly as long as it is watched.
            #[allow(deprecated)]
            let Ok(fd) = AsyncFd::new(fd) else {
                return poll_exit(pid).await;
            };
            let _ = fd.readable().await;
        }
        Err(rustix::io::Errno::SRCH) => {}
        Err(_) => poll_exit(pid).await,
    }
}

/// Without pidfds (old kernels, some sandboxes): look once a second.
async fn poll_exit(pid: u32) {
    /// Once a second: a session that ended shows as ended within a second, at the cost of one
    /// `/proc` read a second per session.
    const EXIT_POLL_INTERVAL: Duration = Duration::from_secs(1);
    while live_runtime::pid_exists(pid) {
        tokio::time::sleep(EXIT_POLL_INTERVAL).await;
    }
}

fn random_token() -> String {
    format!(
        "{:032x}{:032x}",
        rand::random::<u128>(),
        rand::random::<u128>()
    )
}
