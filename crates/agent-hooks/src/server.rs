//! The session's runtime endpoint: the status API v1 (`docs/runtime-api.md`) on loopback behind
//! the bearer check every runtime of this project uses (`demo_runtime::auth`), with the same
//! action-body rules (`demo_runtime::parse_action_body`). The tray, `list`, `events`, `act` and
//! `attach` reach a session through it exactly as they reach any runtime.
//!
//! At `/` it serves the page `attach` opens (through the attach proxy, which adds the token):
//! the session's status with Approve/Deny for a pending request (the same action endpoint, with
//! the revision shown), and the conversation so far from `/api/conversation`
//! ([`crate::transcript`]). The page is static; what it shows from the session is set as text.
//! Its Content-Security-Policy allows only its own script and style and same-origin requests,
//! no inline code, no framing, no forms and no other resource.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use demo_runtime::auth::{require_bearer, ExpectedToken};
use demo_runtime::{ACTIONS_PATH, STATUS_PATH, STATUS_STREAM_PATH};
use futures_util::{stream, StreamExt};
use tokio::net::TcpListener;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::agent::Agent;
use crate::board::{Board, Refusal};

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
        Err(_) => error(
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

fn json_response(status: StatusCode, json: impl Into<String>) -> Response {
    (
        status,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        json.into(),
    )
        .into_response()
}

async fn status(State(api): State<Arc<Api>>) -> Response {
    json_response(StatusCode::OK, api.board.current().json.as_ref())
}

async fn status_stream(State(api): State<Arc<Api>>) -> Response {
    let (first, changes, guard) = api.board.watch();
    let later = stream::unfold((changes, guard), |(mut changes, guard)| async move {
        loop {
            match changes.recv().await {
                Ok(published) => return Some((published, (changes, guard))),
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    let documents = stream::once(async move { first })
        .chain(later)
        .map(|published| {
            Ok::<_, Infallible>(
                Event::default()
                    .event("status")
                    .id(published.revision.to_string())
                    .data(published.json.as_ref()),
            )
        })
        .take_until(api.stop.clone().cancelled_owned());
    Sse::new(documents)
        .keep_alive(KeepAlive::new().interval(api.keep_alive).text("keep-alive"))
        .into_response()
}

async fn run_action(State(api): State<Arc<Api>>, Path(id): Path<String>, body: Bytes) -> Response {
    if !demo_runtime::is_valid_action_id(&id) {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid-action-id",
            "action ids match ^[a-z0-9][a-z0-9._-]{0,63}$",
        );
    }
    let seen = match demo_runtime::parse_action_body(&body) {
        Ok(seen) => seen,
        Err(message) => return error(StatusCode::BAD_REQUEST, "bad-request", message),
    };
    match api.board.act(&id, seen) {
        Ok(revision) => json_response(
            StatusCode::ACCEPTED,
            serde_json::json!({ "action": id, "revision": revision }).to_string(),
        ),
        Err(Refusal::NotOffered) => error(
            StatusCode::CONFLICT,
            "not-offered",
            &format!("the action {id:?} is not offered now"),
        ),
        Err(Refusal::AnsweredInTerminal) => error(
            StatusCode::CONFLICT,
            "not-offered",
            "already answered in the terminal",
        ),
        Err(Refusal::StaleRevision) => error(
            StatusCode::CONFLICT,
            "stale-revision",
            "the status changed since that revision; act on the current document",
        ),
    }
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    json_response(
        status,
        serde_json::json!({ "error": { "code": code, "message": message } }).to_string(),
    )
}
