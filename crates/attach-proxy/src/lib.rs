//! attach-proxy: the loopback reverse proxy behind "attach".
//!
//! Attaching opens a runtime's web UI in the user's own browser, authenticated, while the
//! runtime's bearer token never leaves this process. One [`AttachProxy`] runs per runtime on an
//! ephemeral `127.0.0.1` port. The tray mints a one-time [`AttachUrl`] and hands it to the
//! browser; redeeming it swaps the code for an `HttpOnly; SameSite=Strict` session cookie, and
//! from then on every request from that browser is checked (cookie, `Host`, `Origin`) and
//! forwarded to the runtime with `Authorization: Bearer <token>` added on the way.
//!
//! # Layout
//! - `lib.rs` (here): [`AttachProxy`] (starting, minting attach URLs, stopping) and the accept
//!   loop, which closes every connection that is not the user's own, or over the cap, before
//!   reading a byte.
//! - `options`: the proxy's limits, each a named constant, and [`AttachOptions`].
//! - `error`: [`AttachError`].
//! - `authorization`: the `Authorization` header, the one form in which the token leaves.
//! - `access`: one-time attach codes and browser sessions (only SHA-256 digests are stored).
//! - `forward`: the per-request path: the checks, header rewriting, streaming forwarding with
//!   hyper's HTTP/1.1 client over a keep-alive runtime connection paired with each browser
//!   connection (a deadline for the response head, framing checks), and WebSocket pass-through
//!   on a dedicated runtime connection, opened by [`runtime_link::RuntimeConnector`], the one way
//!   to connect to a runtime and make sure the kernel says its end is the user's own socket.
//! - `rewrite`: keeps the runtime's token and address out of response headers (redirects to
//!   the runtime's address point at the proxy instead).
//! - `pages`: the short HTML pages the proxy itself answers with when it refuses a request.
//! - `body`: the one body type the proxy sends either way (a runtime's, streamed through hyper,
//!   a static page or empty).
//! - `health`: [`check_health`], a one-off authenticated probe of a runtime, after
//!   [`runtime_link::verify_listener`], the check that the runtime's port is still the runtime's.
//!
//! See `docs/attach.md` for the flow and the security properties.
#![deny(missing_docs)]

mod access;
mod authorization;
mod body;
mod error;
mod forward;
mod health;
mod options;
#[cfg(feature = "test-support")]
pub mod other_user;
mod pages;
mod rewrite;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use live_runtime::{BearerToken, Sensitive};
use runtime_link::owner::Peer;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

pub use error::AttachError;
pub use health::check_health;
pub use options::{
    AttachOptions, ATTACH_CODE_TTL, HEADER_READ_TIMEOUT, HEALTH_TIMEOUT, MAX_CONNECTIONS,
    RESPONSE_HEAD_TIMEOUT, SESSION_IDLE_TIMEOUT, SHUTDOWN_GRACE,
};

use authorization::bearer_header;

/// A one-time URL that logs a browser into an [`AttachProxy`]:
/// `http://127.0.0.1:PORT/__attach/<code>`.
///
/// `Display` and [`AttachUrl::as_str`] give the full URL (it is meant for the browser); `Debug`
/// redacts the code so the URL cannot end up in logs by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct AttachUrl {
    url: String,
    code_at: usize,
}

impl AttachUrl {
    /// The full URL, code included. Hand it to the browser, nowhere else.
    pub fn as_str(&self) -> &str {
        &self.url
    }
}

impl fmt::Display for AttachUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.url)
    }
}

impl fmt::Debug for AttachUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AttachUrl({}<redacted>)", &self.url[..self.code_at])
    }
}

/// The attach proxy for one runtime. Dropping it stops it; [`AttachProxy::shutdown`] also waits.
pub struct AttachProxy {
    origin: String,
    shared: Arc<forward::Shared>,
    stop: CancellationToken,
    /// Resolves when the proxy's thread has stopped serving and torn its runtime down.
    stopped: Option<oneshot::Receiver<()>>,
    finished: Arc<AtomicBool>,
    refused: Arc<AtomicU64>,
}

impl fmt::Debug for AttachProxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttachProxy")
            .field("origin", &self.origin)
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl AttachProxy {
    /// Starts a proxy for the runtime at `upstream` on an ephemeral `127.0.0.1` port, with
    /// [`AttachOptions::default`].
    ///
    /// The proxy runs on its own thread with a single-threaded tokio runtime: a request and its
    /// forwarded twin never hop between threads, and nothing else the app runs can stall it.
    pub async fn start(
        upstream: Sensitive<SocketAddr>,
        token: BearerToken,
    ) -> Result<AttachProxy, AttachError> {
        Self::start_with_options(upstream, token, AttachOptions::default()).await
    }

    /// Like [`AttachProxy::start`], with explicit options (tests shorten the code TTL).
    pub async fn start_with_options(
        upstream: Sensitive<SocketAddr>,
        token: BearerToken,
        options: AttachOptions,
    ) -> Result<AttachProxy, AttachError> {
        let authorization = bearer_header(&token)?;
        let bind = |source| AttachError::Bind { source };
        let listener =
            std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, options.port)).map_err(bind)?;
        listener.set_nonblocking(true).map_err(bind)?;
        let port = listener.local_addr().map_err(bind)?.port();
        let stop = CancellationToken::new();
        let shared = Arc::new(forward::Shared::new(
            *upstream.expose(),
            authorization,
            port,
            &options,
            stop.clone(),
        ));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| AttachError::Thread { source })?;
        let (stopped_tx, stopped) = oneshot::channel();
        let finished = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicU64::new(0));
        let (thread_shared, thread_stop, thread_finished) =
            (shared.clone(), stop.clone(), finished.clone());
        let gate = Gate::new(refused.clone(), options.max_connections);
        std::thread::Builder::new()
            .name(format!("attach-proxy-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => {
                            accept_connections(listener, thread_shared, gate, thread_stop).await
                        }
                        Err(error) => tracing::warn!(%error, "attach proxy listener failed"),
                    }
                });
                // Dropping the runtime cancels whatever is left (WebSocket tunnels included).
                drop(runtime);
                thread_finished.store(true, Ordering::Release);
                let _ = stopped_tx.send(());
            })
            .map_err(|source| AttachError::Thread { source })?;
        Ok(AttachProxy {
            origin: format!("http://127.0.0.1:{port}"),
            shared,
            stop,
            stopped: Some(stopped),
            finished,
            refused,
        })
    }

    /// How many connections this proxy has closed unread: from another OS user, ones whose
    /// owner could not be told, and ones over the connection cap ([`MAX_CONNECTIONS`]).
    pub fn refused_connections(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// The proxy's own origin, `http://127.0.0.1:PORT` (not a secret).
    pub fn origin(&self) -> String {
        self.origin.clone()
    }

    /// Checks the runtime this proxy serves as [`check_health`] does (its listener, then an
    /// authenticated `GET /`), with the token the proxy already holds: attaching again to a
    /// running proxy needs no keychain read. The future owns what it needs, so the proxy may be
    /// stopped (or locked away) while it runs.
    pub fn check_runtime(
        &self,
        pid: Option<u32>,
    ) -> impl std::future::Future<Output = Result<(), AttachError>> + Send + 'static {
        let (upstream, authorization) = self.shared.upstream();
        health::check_health_with(upstream, authorization, pid)
    }

    /// Mints a single-use code valid for the configured TTL and returns the URL that redeems it.
    pub fn mint_code(&self) -> AttachUrl {
        let code = self.shared.codes.mint(self.shared.code_ttl);
        let code_at = self.origin.len() + forward::ATTACH_PATH_PREFIX.len();
        AttachUrl {
            url: format!("{}{}{code}", self.origin, forward::ATTACH_PATH_PREFIX),
            code_at,
        }
    }

    /// Stops accepting, closes browser connections (open streams and WebSocket tunnels at once,
    /// other in-flight responses after at most [`SHUTDOWN_GRACE`]) and waits for all of it.
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(stopped) = self.stopped.take() {
            let _ = stopped.await;
        }
    }

    /// True once the proxy has been told to stop (or its thread has ended).
    pub fn is_closed(&self) -> bool {
        self.stop.is_cancelled() || self.finished.load(Ordering::Acquire)
    }
}

impl Drop for AttachProxy {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Least time between two log lines about refused connections. Another user can connect in a
/// loop; each refusal is counted, but the log gets one line (with the count) per interval.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// Decides, before a byte is read, whether an accepted connection is served.
struct Gate {
    refused: Arc<AtomicU64>,
    max_connections: usize,
    /// Refusals since the last log line, and when that line was written.
    unlogged: u64,
    logged_at: Option<Instant>,
}

/// Why a connection was closed unread.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    OtherUser(u32),
    OwnerUnknown,
    OverCapacity,
}

impl Gate {
    fn new(refused: Arc<AtomicU64>, max_connections: usize) -> Self {
        Self {
            refused,
            max_connections,
            unlogged: 0,
            logged_at: None,
        }
    }

    /// `Ok` when the kernel says the other end of `stream` is a socket of the proxy's own user
    /// and the proxy has room for it. One socket-table query: a refusal costs that and a close.
    fn admit(
        &mut self,
        shared: &forward::Shared,
        stream: &tokio::net::TcpStream,
        open: usize,
    ) -> Result<(), Refusal> {
        if open >= self.max_connections {
            return Err(Refusal::OverCapacity);
        }
        match shared.connector.peer_of(stream) {
            Peer::Own => Ok(()),
            Peer::Other { uid } => Err(Refusal::OtherUser(uid)),
            Peer::Gone | Peer::Unknown(_) => Err(Refusal::OwnerUnknown),
        }
    }

    /// Counts a refusal and logs it, at most once per [`REFUSAL_LOG_INTERVAL`].
    fn refused(&mut self, refusal: Refusal) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        self.unlogged += 1;
        let now = Instant::now();
        if self
            .logged_at
            .is_some_and(|at| now.duration_since(at) < REFUSAL_LOG_INTERVAL)
        {
            return;
        }
        let count = std::mem::take(&mut self.unlogged);
        self.logged_at = Some(now);
        match refusal {
            Refusal::OtherUser(uid) => tracing::warn!(
                uid,
                count,
                "attach proxy closed a connection from another OS user without reading it"
            ),
            Refusal::OwnerUnknown => tracing::warn!(
                count,
                "attach proxy closed a connection whose owner the kernel could not tell"
            ),
            Refusal::OverCapacity => tracing::warn!(
                count,
                limit = self.max_connections,
                "attach proxy closed a connection over its connection limit"
            ),
        }
    }
}

async fn accept_connections(
    listener: TcpListener,
    shared: Arc<forward::Shared>,
    mut gate: Gate,
    stop: CancellationToken,
) {
    let connection_stop = stop.clone();
    accept_loop::run(
        "attach proxy",
        listener,
        stop,
        SHUTDOWN_GRACE * 2,
        |stream, open| {
            match gate.admit(&shared, &stream, open) {
                Ok(()) => {
                    let _ = stream.set_nodelay(true);
                    Some(serve_connection(
                        stream,
                        shared.clone(),
                        connection_stop.clone(),
                    ))
                }
                // Dropped unread: the peer sees the connection close.
                Err(refusal) => {
                    gate.refused(refusal);
                    None
                }
            }
        },
    )
    .await;
}

async fn serve_connection(
    stream: tokio::net::TcpStream,
    shared: Arc<forward::Shared>,
    stop: CancellationToken,
) {
    // This browser connection's own keep-alive connection to the runtime (see `UpstreamLink`).
    let link = Arc::new(forward::UpstreamLink::default());
    let service_link = link.clone();
    let service = hyper::service::service_fn(move |request| {
        let shared = shared.clone();
        let link = service_link.clone();
        async move { Ok::<_, std::convert::Infallible>(forward::handle(&shared, &link, request).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        biased;
        _ = conn.as_mut() => {}
        _ = stop.cancelled() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn.as_mut()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attach_url_debug_redacts_the_code() {
        let url = AttachUrl {
            url: "http://127.0.0.1:4000/__attach/abcdef0123".into(),
            code_at: "http://127.0.0.1:4000/__attach/".len(),
        };
        assert_eq!(url.to_string(), "http://127.0.0.1:4000/__attach/abcdef0123");
        let debug = format!("{url:?}");
        assert!(!debug.contains("abcdef0123"), "{debug}");
        assert!(debug.contains("http://127.0.0.1:4000/__attach/"));
    }

    #[test]
    fn handles_can_be_shared_across_tasks() {
        // The app keeps proxies in an `Arc` inside shared state and mints codes from any task.
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<AttachProxy>();
        assert_send_sync::<AttachUrl>();
        assert_send_sync::<AttachError>();
    }
}
