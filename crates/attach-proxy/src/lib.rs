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
//! - `access`: one-time attach codes and browser sessions (only SHA-256 digests are stored).
//! - `forward`: the per-request path: the checks, header rewriting, streaming forwarding over a
//!   keep-alive runtime connection paired with each browser connection, and WebSocket
//!   pass-through on a dedicated runtime connection.
//! - `pages`: the short HTML pages the proxy itself answers with when it refuses a request.
//! - `body`: the one body type the proxy sends either way (streamed, static page or empty).
//! - `health`: [`check_health`], a one-off authenticated probe of a runtime.
//!
//! See `docs/attach.md` for the flow and the security properties.
#![deny(missing_docs)]

mod access;
mod body;
mod forward;
mod health;
mod pages;

use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use hyper::header::HeaderValue;
use hyper_util::rt::{TokioIo, TokioTimer};
use live_runtime::{BearerToken, Sensitive};
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use health::check_health;

/// How long a minted attach code stays redeemable.
///
/// The code travels through the OS "open URL" machinery and a browser that may be cold-starting,
/// which can take several seconds on a loaded machine; 30 s covers that, while a code that leaks
/// afterwards (shell history, a process listing, a crash report) is already useless.
pub const ATTACH_CODE_TTL: Duration = Duration::from_secs(30);

/// Upper bound for [`check_health`].
///
/// A healthy runtime answers `GET /` on loopback in milliseconds; 3 s tolerates one that is busy
/// (a model call hogging its event loop) while keeping a click on "attach" from hanging.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(3);

/// Upper bound for opening a TCP connection to the runtime.
///
/// Loopback connects succeed or are refused at once; the bound only matters when the runtime's
/// accept backlog is full, and 5 s is long enough to ride out a burst without hanging a tab.
pub const UPSTREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a browser connection may take to send a request's headers.
///
/// Browsers send headers in one go; 30 s only stops a stuck or malicious local client from
/// holding a connection (and its task) open forever.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a stopping proxy lets in-flight responses finish before dropping their connections.
///
/// The proxy is stopped when its runtime goes away, so nothing useful is still flowing; 1 s lets a
/// response that is almost done complete without making shutdown feel slow. SSE streams and
/// WebSocket tunnels are closed at once.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Pause after a failed `accept` (for example out of file descriptors) before trying again, so
/// the accept loop does not spin on a persistent error. 100 ms is invisible to a person.
pub const ACCEPT_ERROR_BACKOFF: Duration = Duration::from_millis(100);

/// Period of the timer that is always pending on a proxy's runtime (see `accept_loop`).
///
/// hyper arms a fresh [`HEADER_READ_TIMEOUT`] timer each time a connection starts waiting for
/// its next request. When no other timer is pending, which is the case while a request is with
/// the runtime, tokio's time driver takes that new timer for the earliest deadline and wakes its
/// own thread to re-arm its wait: an eventfd write per request, and often an extra `epoll_wait`
/// return, on top of the six syscalls (two reads, two writes, two waits) that move it. A timer
/// that is always pending and always due sooner than any new header timer spares that wake-up.
/// 10 s is well under the 30 s header timeout and costs one wake-up every 10 s per proxy.
const TIMER_ANCHOR_PERIOD: Duration = Duration::from_secs(10);

/// Everything that can go wrong starting a proxy or probing a runtime.
#[derive(thiserror::Error, Debug)]
pub enum AttachError {
    /// No loopback port could be bound for the proxy.
    #[error("could not open a loopback port for the attach proxy ({source}); close unused applications and attach again")]
    Bind {
        /// The OS error.
        source: std::io::Error,
    },
    /// The proxy's thread or its async runtime could not be created.
    #[error("could not start the attach proxy's thread ({source}); the system may be out of resources, close unused applications and attach again")]
    Thread {
        /// The OS error.
        source: std::io::Error,
    },
    /// The token cannot be sent in an HTTP header.
    #[error("the runtime's bearer token contains characters that cannot go in an HTTP header; restart the runtime so it registers a new token")]
    InvalidToken,
    /// The runtime could not be reached on its loopback address.
    #[error("the runtime is not answering on its loopback address ({source}); check that it is still running, or revive it from the tray")]
    UpstreamUnreachable {
        /// What failed (connect or HTTP exchange). Never contains the address.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The runtime refused the token it was registered with.
    #[error("the runtime refused its registered token (HTTP {status}); restart the runtime so it writes a fresh receipt")]
    UpstreamRejectedToken {
        /// 401 or 403.
        status: u16,
    },
    /// The runtime answered, but with a server error.
    #[error("the runtime answered HTTP {status}; check its logs and restart it")]
    UpstreamUnhealthy {
        /// The 5xx status.
        status: u16,
    },
    /// The runtime did not answer within [`HEALTH_TIMEOUT`].
    #[error("the runtime did not answer within {HEALTH_TIMEOUT:?}; it may be hung, restart it")]
    HealthTimeout,
}

/// Knobs for [`AttachProxy::start_with_options`]. `Default` is what the app uses.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// How long a minted code stays redeemable; [`ATTACH_CODE_TTL`] by default.
    pub code_ttl: Duration,
}

impl Default for AttachOptions {
    fn default() -> Self {
        Self {
            code_ttl: ATTACH_CODE_TTL,
        }
    }
}

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
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(bind)?;
        listener.set_nonblocking(true).map_err(bind)?;
        let port = listener.local_addr().map_err(bind)?.port();
        let stop = CancellationToken::new();
        let shared = Arc::new(forward::Shared::new(
            *upstream.expose(),
            authorization,
            port,
            options.code_ttl,
            stop.clone(),
        ));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|source| AttachError::Thread { source })?;
        let (stopped_tx, stopped) = oneshot::channel();
        let finished = Arc::new(AtomicBool::new(false));
        let (thread_shared, thread_stop, thread_finished) =
            (shared.clone(), stop.clone(), finished.clone());
        std::thread::Builder::new()
            .name(format!("attach-proxy-{port}"))
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(listener) {
                        Ok(listener) => accept_loop(listener, thread_shared, thread_stop).await,
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
        })
    }

    /// The proxy's own origin, `http://127.0.0.1:PORT` (not a secret).
    pub fn origin(&self) -> String {
        self.origin.clone()
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

fn bearer_header(token: &BearerToken) -> Result<HeaderValue, AttachError> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose()))
        .map_err(|_| AttachError::InvalidToken)?;
    value.set_sensitive(true);
    Ok(value)
}

async fn accept_loop(listener: TcpListener, shared: Arc<forward::Shared>, stop: CancellationToken) {
    // Connection tasks live in this set so that stopping the proxy really closes them.
    let mut connections = JoinSet::new();
    let mut timer_anchor = tokio::time::interval(TIMER_ANCHOR_PERIOD);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = timer_anchor.tick() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve_connection(stream, shared.clone(), stop.clone()));
                }
                Err(error) => {
                    tracing::warn!(%error, "attach proxy could not accept a connection");
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(ACCEPT_ERROR_BACKOFF) => {}
                    }
                }
            },
            // Reap finished connections so the set does not grow with every browser connection.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let drained = tokio::time::timeout(SHUTDOWN_GRACE * 2, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
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
    let browser = async {
        tokio::select! {
            _ = conn.as_mut() => {}
            _ = stop.cancelled() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn.as_mut()).await;
            }
        }
    };
    tokio::pin!(browser);
    // This one task drives the browser connection and the runtime connection paired with it;
    // the runtime side ends when the browser side does.
    let mut upstream: Option<forward::UpstreamConnection> = None;
    loop {
        tokio::select! {
            _ = &mut browser => break,
            opened = link.next_opened() => upstream = Some(opened),
            _ = async { upstream.as_mut().expect("guarded").await }, if upstream.is_some() => {
                upstream = None;
            }
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

    #[test]
    fn tokens_that_cannot_be_headers_are_refused() {
        let bad = Sensitive::new("line\nbreak".to_owned());
        assert!(matches!(
            bearer_header(&bad),
            Err(AttachError::InvalidToken)
        ));
        let good = bearer_header(&Sensitive::new("abc".to_owned())).unwrap();
        assert!(good.is_sensitive());
    }
}
