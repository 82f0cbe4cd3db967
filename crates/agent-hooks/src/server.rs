//! The session's runtime endpoint: the status API v1 (`docs/runtime-api.md`) on loopback behind
//! the bearer check every runtime of this project uses (`demo_runtime::auth`), answered by the
//! same code as every runtime's (`demo_runtime::status_response`, `status_stream_response`,
//! `answer_action`). The tray, `list`, `events`, `act` and
//! `attach` reach a session through it exactly as they reach any runtime.
//!
//! At `/` it serves the page `attach` opens (through the attach proxy, which adds the token):
//! the session's status with Approve/Deny for a pending request (the status card every runtime's
//! page has, `demo_runtime::status_card_response`: the same action endpoint, with the revision
//! shown), and the conversation so far from `/api/conversation`
//! ([`crate::transcript`]). The page is static; what it shows from the session is set as text.
//! Its Content-Security-Policy allows only its own script and style and same-origin requests,
//! no inline code, no framing, no forms and no other resource.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use demo_runtime::auth::{require_bearer, ExpectedToken};
use demo_runtime::{
    error_response, json_response, ACTIONS_PATH, STATUS_CARD_PATH, STATUS_PATH, STATUS_STREAM_PATH,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::board::Board;

/// The status API on `127.0.0.1:0` for `board`, a session of `agent`, until `stop` is
/// cancelled. Returns the address.
pub async fn serve(
    board: Arc<Board>,
    agent: Agent,
    token: &str,
    keep_alive: Duration,
    stop: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let address = listener.local_addr()?;
    let state = Arc::new(Api {
        board,
        agent,
        keep_alive,
        stop: stop.clone(),
    });
    let router = Router::new()
        .route("/", get(page))
        .route("/session.js", get(page_script))
        .route("/session.css", get(page_style))
        .route(
            STATUS_CARD_PATH,
            get(|| async { demo_runtime::status_card_response() }),
        )
        .route(CONVERSATION_PATH, get(conversation))
        .route(STATUS_PATH, get(status))
        .route(STATUS_STREAM_PATH, get(status_stream))
        .route(&format!("{ACTIONS_PATH}/{{id}}"), post(run_action))
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(ExpectedToken::new(token)),
            require_bearer,
        ));
    tokio::spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
    });
    Ok(address)
}

/// Where the page reads the conversation.
pub const CONVERSATION_PATH: &str = "/api/conversation";

/// The page's policy: its own script, style and requests only; nothing inline, framed or posted
/// by a form, so text from the transcript could not run even if it reached the markup.
pub const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn static_file(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(PAGE_CSP),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
            (
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ),
        ],
        body,
    )
        .into_response()
}

async fn page() -> Response {
    static_file(
        "text/html; charset=utf-8",
        include_str!("page/session.html"),
    )
}

async fn page_script() -> Response {
    static_file(
        "text/javascript; charset=utf-8",
        include_str!("page/session.js"),
    )
}

async fn page_style() -> Response {
    static_file("text/css; charset=utf-8", include_str!("page/session.css"))
}

async fn conversation(State(api): State<Arc<Api>>) -> Response {
    let path = api.board.transcript();
    let messages = api.agent.transcript_messages();
    let read = tokio::task::spawn_blocking(move || {
        crate::transcript::conversation(path.as_deref(), messages)
    });
    match read.await {
        Ok(conversation) => json_response(
            StatusCode::OK,
            serde_json::to_string(&conversation).expect("a conversation serializes"),
        ),
        Err(_) => error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unavailable",
            "the transcript could not be read",
        ),
    }
}

struct Api {
    board: Arc<Board>,
    agent: Agent,
    keep_alive: Duration,
    stop: CancellationToken,
}

async fn status(State(api): State<Arc<Api>>) -> Response {
    demo_runtime::status_response(api.board.feed())
}

async fn status_stream(State(api): State<Arc<Api>>) -> Response {
    demo_runtime::status_stream_response(
        api.board.feed().watch(),
        api.keep_alive,
        api.stop.clone().cancelled_owned(),
    )
}

async fn run_action(State(api): State<Arc<Api>>, Path(id): Path<String>, body: Bytes) -> Response {
    demo_runtime::answer_action(id, &body, |id, seen| api.board.act(id, seen)).1
}
