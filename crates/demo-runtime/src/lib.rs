//! demo-runtime: a real, bearer-authenticated runtime HTTP server.
//!
//! It behaves like the agent runtimes Supercode Tray controls: it listens on loopback and every
//! route requires `Authorization: Bearer <token>`. It exists for demos (the CLI's `demo-runtime`
//! subcommand wraps [`serve`]), for the attach-proxy tests, and for the attach benchmark.
//!
//! # Layout
//! - [`serve`] binds the listener and spawns the accept loop; it returns a [`DemoServer`] handle
//!   whose `Drop` (or [`DemoServer::shutdown`]) stops the server and closes its connections.
//! - [`auth`]: the bearer check every route goes through (constant-time, never echoes input);
//!   public so that every runtime this project serves (`agent-hooks`) uses the same check.
//! - `routes`: the HTML page, JSON API, SSE stream, WebSocket echo and streaming blob/echo routes.
//! - `page`: the self-contained HTML page (inline CSS/JS, relative URLs only, so it works behind
//!   the attach proxy). It shows the live status and offers its actions as buttons.
//! - [`feed`]: the status document of the runtime status API (docs/runtime-api.md), its revision
//!   and the changes pushed to streams; public, with the API's answers (`status_api`), so that
//!   every runtime this project serves (`agent-hooks`) serves the API with the same code.
//! - `status`: which phase of its scenario the demo is in, shown on its feed; `status_api`: the
//!   API's routes and answers.
//! - `scenario`: what the status does over time and on each action ([`Scenario`]).
#![deny(missing_docs)]

pub mod auth;
pub mod feed;
mod page;
mod routes;
mod scenario;
mod status;
mod status_api;

use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use live_runtime::{BearerToken, Sensitive};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use feed::STATUS_API_VERSION;
pub use routes::{MAX_BLOB_BYTES, TICK_INTERVAL};
pub use scenario::{
    Scenario, UnknownScenario, BLANK_LINES_WRITE_BYTES, FLOOD_CHANGES_PER_SECOND,
    HUGE_DETAIL_BYTES, PHASE_DELAY,
};
pub use status::is_valid_action_id;
pub use status_api::{
    answer_action, error_response, json_response, status_card_response, status_response,
    status_stream_response, ActionCall, ActionSink, ACTIONS_PATH, KEEP_ALIVE_INTERVAL,
    MAX_ACTION_BODY, STATUS_CARD_PATH, STATUS_PATH, STATUS_STREAM_PATH,
};

/// How long a stopping server lets in-flight responses finish before it drops their connections.
///
/// Streams that never end on their own (SSE, WebSocket) stop as soon as shutdown starts, so this
/// only bounds slow finite transfers such as a big `/api/blob`; two seconds keeps "stop the
/// runtime" feeling immediate to a person and to tests that kill the upstream on purpose.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What to serve and where.
pub struct DemoConfig {
    /// Runtime name shown on the page and in `/api/info`.
    pub name: String,
    /// The bearer token every request must present.
    pub token: BearerToken,
    /// Where to listen; [`DemoConfig::new`] uses `127.0.0.1:0` (an ephemeral loopback port).
    pub bind: SocketAddr,
    /// What the status API shows; [`DemoConfig::new`] uses [`Scenario::Steady`].
    pub scenario: Scenario,
    /// How often a quiet status stream sends a keep-alive comment; [`DemoConfig::new`] uses
    /// [`KEEP_ALIVE_INTERVAL`], tests shorten it to see keep-alives without waiting.
    pub keep_alive: Duration,
    /// How long each step of a scenario that moves on by itself lasts (`approval`, `error`);
    /// [`DemoConfig::new`] uses [`PHASE_DELAY`], tests lengthen it to look at every step.
    pub phase_delay: Duration,
    /// Told of every call of the status API's action route, once answered; [`DemoConfig::new`]
    /// tells nobody.
    pub on_action: Option<ActionSink>,
}

impl DemoConfig {
    /// A config listening on `127.0.0.1:0`, the default for a local runtime.
    pub fn new(name: impl Into<String>, token: BearerToken) -> Self {
        Self {
            name: name.into(),
            token,
            bind: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)),
            scenario: Scenario::Steady,
            keep_alive: KEEP_ALIVE_INTERVAL,
            phase_delay: PHASE_DELAY,
            on_action: None,
        }
    }
}

impl std::fmt::Debug for DemoConfig {
    // The bind address of a runtime is as secret as its token, so neither is printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoConfig")
            .field("name", &self.name)
            .field("token", &self.token)
            .field("bind", &"<redacted>")
            .field("scenario", &self.scenario)
            .field("keep_alive", &self.keep_alive)
            .field("phase_delay", &self.phase_delay)
            .field("on_action", &self.on_action.is_some())
            .finish()
    }
}

/// Why the demo runtime could not start.
#[derive(thiserror::Error, Debug)]
pub enum DemoError {
    /// The listener could not be bound (port taken, address not local, no permission).
    #[error(
        "could not listen for the demo runtime ({source}); free the port or bind to 127.0.0.1:0"
    )]
    Bind {
        /// The OS error.
        source: std::io::Error,
    },
    /// The bound listener did not report its address.
    #[error("the demo runtime's listener has no local address ({source}); try starting it again")]
    LocalAddr {
        /// The OS error.
        source: std::io::Error,
    },
}

/// A running demo runtime. Dropping it stops the server; [`DemoServer::shutdown`] also waits.
pub struct DemoServer {
    local_addr: SocketAddr,
    board: std::sync::Arc<status::StatusBoard>,
    stop: CancellationToken,
    task: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DemoServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoServer")
            .field("local_addr", &"<redacted>")
            .field("stopped", &self.stop.is_cancelled())
            .finish()
    }
}

impl DemoServer {
    /// The address the runtime listens on. Treat it as a secret: it is what the token protects.
    pub fn local_addr(&self) -> Sensitive<SocketAddr> {
        Sensitive::new(self.local_addr)
    }

    /// Gives the scenario its cue: a step that waits for one (`switch`) or for its delay moves
    /// on, and the revision of the document that shows it is returned; `None` when the current
    /// step waits for neither (nothing changes then).
    pub fn cue(&self) -> Option<u64> {
        self.board.cue()
    }

    /// Stops accepting, ends SSE and WebSocket streams, closes connections, and waits until the
    /// accept loop and every connection task have finished (at most about [`SHUTDOWN_GRACE`]).
    pub async fn shutdown(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Binds `config.bind` and serves the demo runtime on it until the returned handle is shut down
/// or dropped. Must be called inside a tokio runtime.
pub async fn serve(config: DemoConfig) -> Result<DemoServer, DemoError> {
    let listener = TcpListener::bind(config.bind)
        .await
        .map_err(|source| DemoError::Bind { source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| DemoError::LocalAddr { source })?;
    let stop = CancellationToken::new();
    let board = status::StatusBoard::new(config.scenario, config.phase_delay, stop.clone());
    let router = routes::router(
        &config.name,
        &config.token,
        stop.clone(),
        status_api::routes(board.clone(), config.keep_alive, config.on_action.clone()),
        config.scenario.serves_status_api(),
    );
    board.start();
    let task = tokio::spawn(accept_connections(listener, router, stop.clone()));
    tracing::info!(name = %config.name, scenario = %config.scenario, "demo runtime listening");
    Ok(DemoServer {
        local_addr,
        board,
        stop,
        task: Some(task),
    })
}

async fn accept_connections(listener: TcpListener, router: axum::Router, stop: CancellationToken) {
    let connection_stop = stop.clone();
    accept_loop::run(
        "demo runtime",
        listener,
        stop,
        SHUTDOWN_GRACE * 2,
        |stream, _open| {
            let _ = stream.set_nodelay(true);
            let service = TowerToHyperService::new(router.clone());
            let stop = connection_stop.clone();
            Some(async move {
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .with_upgrades();
                tokio::pin!(conn);
                tokio::select! {
                    _ = conn.as_mut() => {}
                    _ = stop.cancelled() => {
                        conn.as_mut().graceful_shutdown();
                        let _ = tokio::time::timeout(SHUTDOWN_GRACE, conn).await;
                    }
                }
            })
        },
    )
    .await;
}
