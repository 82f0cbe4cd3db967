//! The status API's routes (docs/runtime-api.md), behind the same bearer check as every route:
//! `GET /supercode/v1/status`, `GET /supercode/v1/status/stream`, `POST /supercode/v1/actions/{id}`.
//!
//! The answers themselves ([`status_response`], [`status_stream_response`], [`answer_action`])
//! are public, so that every runtime serving the API (`agent-hooks`) answers with this code;
//! what stays here is the demo's own: its scenarios that misbehave on the stream (`stall`,
//! `blank-lines`) and telling [`ActionSink`] of each call.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::{stream, Stream, StreamExt};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

use crate::feed::{ObserverGuard, Published, Refusal, StatusFeed, Watch};
use crate::scenario::{Scenario, BLANK_LINES_WRITE_BYTES};
use crate::status::{is_valid_action_id, StatusBoard};

/// Path of the status document.
pub const STATUS_PATH: &str = "/supercode/v1/status";
/// Path of the status stream.
pub const STATUS_STREAM_PATH: &str = "/supercode/v1/status/stream";
/// Path prefix of action calls: `POST {ACTIONS_PATH}/{id}`.
pub const ACTIONS_PATH: &str = "/supercode/v1/actions";
/// Path of the status card's script: the status API's side of a runtime's page, served by every
/// runtime of this project for its own page ([`status_card_response`]).
pub const STATUS_CARD_PATH: &str = "/supercode/status-card.js";

/// How often an otherwise quiet status stream sends a `:keep-alive` comment.
///
/// Fifteen seconds is what the API documents: frequent enough that a client which hears nothing
/// for three intervals (45 s) can call the stream dead, rare enough to cost nothing when idle.
pub const KEEP_ALIVE_INTERVAL: Duration = Duration::from_secs(15);

/// Largest action request body read; `{"revision": N}` needs a few dozen bytes.
pub const MAX_ACTION_BODY: usize = 4 * 1024;

/// One call of `POST /supercode/v1/actions/{id}` and how the runtime answered it: what reached
/// the runtime, for whoever watches that (`supercode-tray demo-runtime` prints each as a line,
/// which is how the end-to-end tests see that a refused click was never sent).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ActionCall {
    /// The action asked for; `None` when its id breaks the charset (it is not repeated).
    pub action: Option<String>,
    /// The `revision` the caller sent, if it sent a well-formed one.
    pub revision: Option<u64>,
    /// `accepted`, or the refusal's code: `invalid-action-id`, `bad-request`, `not-offered`,
    /// `stale-revision`.
    pub outcome: &'static str,
}

/// Told of every action call once the runtime has answered it ([`crate::DemoConfig::on_action`]).
pub type ActionSink = Arc<dyn Fn(&ActionCall) + Send + Sync>;

struct ApiState {
    board: Arc<StatusBoard>,
    keep_alive: Duration,
    on_action: Option<ActionSink>,
}

/// The status routes, or none at all when the scenario does not serve the API (so its paths
/// fall through to the router's 404 like any unknown path).
pub(crate) fn routes(
    board: Arc<StatusBoard>,
    keep_alive: Duration,
    on_action: Option<ActionSink>,
) -> Router {
    if !board.scenario().serves_status_api() {
        return Router::new();
    }
    let state = Arc::new(ApiState {
        board,
        keep_alive,
        on_action,
    });
    Router::new()
        .route(STATUS_PATH, get(status))
        .route(STATUS_STREAM_PATH, get(status_stream))
        .route(&format!("{ACTIONS_PATH}/{{id}}"), post(run_action))
        .route(STATUS_CARD_PATH, get(|| async { status_card_response() }))
        .with_state(state)
}

/// A JSON answer that no cache keeps.
pub fn json_response(status: StatusCode, json: impl Into<String>) -> Response {
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

/// The API's error answer: `{"error": {"code", "message"}}`.
pub fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    json_response(
        status,
        serde_json::json!({ "error": { "code": code, "message": message } }).to_string(),
    )
}

/// `GET STATUS_CARD_PATH`: the script of a page's status card (`status_card.js`), which follows
/// the status stream and offers its actions as buttons.
pub fn status_card_response() -> Response {
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/javascript; charset=utf-8"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        include_str!("status_card.js"),
    )
        .into_response()
}

/// `GET /supercode/v1/status`: the current document.
pub fn status_response(feed: &StatusFeed) -> Response {
    json_response(StatusCode::OK, feed.current().json.as_ref())
}

/// `GET /supercode/v1/status/stream`: the watched documents as `status` events, each with its
/// revision as id, and a `:keep-alive` comment after every `keep_alive` of silence, until `stop`.
pub fn status_stream_response(
    watch: Watch,
    keep_alive: Duration,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Response {
    let Watch {
        first,
        changes,
        guard,
    } = watch;
    let documents = stream::once(async move { first })
        .chain(later_documents(changes, guard))
        .map(|published| {
            Ok::<_, Infallible>(
                Event::default()
                    .event("status")
                    .id(published.revision.to_string())
                    .data(published.json.as_ref()),
            )
        })
        .take_until(stop);
    Sse::new(documents)
        .keep_alive(KeepAlive::new().interval(keep_alive).text("keep-alive"))
        .into_response()
}

async fn status(State(api): State<Arc<ApiState>>) -> Response {
    status_response(api.board.feed())
}

async fn status_stream(State(api): State<Arc<ApiState>>) -> Response {
    let stop = api.board.stop_token().clone().cancelled_owned();
    if api.board.scenario() == Scenario::Stall {
        // Headers, then silence until the runtime stops: no document, no keep-alive.
        let silence = stream::pending::<Result<Event, Infallible>>().take_until(stop);
        return Sse::new(silence).into_response();
    }
    let watch = api.board.feed().watch();
    if api.board.scenario() == Scenario::BlankLines {
        return blank_lines(watch.first, watch.guard, stop);
    }
    status_stream_response(watch, api.keep_alive, stop)
}

/// The `blank-lines` stream: its first document as an event, then blank lines until the runtime
/// stops or the reader goes away (the write fails). Valid SSE: each blank line ends an event
/// that has no data, which a client ignores.
fn blank_lines(
    first: Published,
    guard: ObserverGuard,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Response {
    let event = format!(
        "event: status\nid: {}\ndata: {}\n\n",
        first.revision, first.json
    );
    let blank = Bytes::from(vec![b'\n'; BLANK_LINES_WRITE_BYTES]);
    let lines = stream::once(async move { Bytes::from(event) })
        .chain(stream::repeat(blank).map(move |bytes| {
            // The stream counts as an observer while it is open.
            let _ = &guard;
            bytes
        }))
        .map(Ok::<_, Infallible>)
        .take_until(stop);
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        axum::body::Body::from_stream(lines),
    )
        .into_response()
}

/// Every document published after the first, in order; a reader that fell behind skips the
/// documents it missed (each is whole, so skipping loses only intermediate states).
fn later_documents(
    changes: broadcast::Receiver<Published>,
    guard: ObserverGuard,
) -> impl Stream<Item = Published> {
    stream::unfold((changes, guard), |(mut changes, guard)| async move {
        loop {
            match changes.recv().await {
                Ok(published) => return Some((published, (changes, guard))),
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    })
}

async fn run_action(
    State(api): State<Arc<ApiState>>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let (call, response) = answer_action(id, &body, |id, seen| api.board.act(id, seen));
    if let Some(on_action) = &api.on_action {
        on_action(&call);
    }
    response
}

/// `POST /supercode/v1/actions/{id}`: checks the id and the body, then runs the action with
/// `act` (given the id and the caller's `revision`, returning the revision that offered it) and
/// answers `202`, or refuses; says what was asked and answered beside the response.
pub fn answer_action(
    id: String,
    body: &[u8],
    act: impl FnOnce(&str, Option<u64>) -> Result<u64, Refusal>,
) -> (ActionCall, Response) {
    let mut call = ActionCall {
        action: None,
        revision: None,
        outcome: "invalid-action-id",
    };
    if !is_valid_action_id(&id) {
        let response = error_response(
            StatusCode::BAD_REQUEST,
            call.outcome,
            "action ids match ^[a-z0-9][a-z0-9._-]{0,63}$",
        );
        return (call, response);
    }
    call.action = Some(id.clone());
    let seen = match parse_action_body(body) {
        Ok(seen) => seen,
        Err(message) => {
            call.outcome = "bad-request";
            let response = error_response(StatusCode::BAD_REQUEST, call.outcome, message);
            return (call, response);
        }
    };
    call.revision = seen;
    let (outcome, message) = match act(&id, seen) {
        Ok(revision) => {
            call.outcome = "accepted";
            let response = json_response(
                StatusCode::ACCEPTED,
                serde_json::json!({ "action": id, "revision": revision }).to_string(),
            );
            return (call, response);
        }
        Err(Refusal::NotOffered) => (
            "not-offered",
            format!("the action {id:?} is not offered now"),
        ),
        Err(Refusal::AnsweredInTerminal) => {
            ("not-offered", "already answered in the terminal".to_owned())
        }
        Err(Refusal::StaleRevision) => (
            "stale-revision",
            "the status changed since that revision; act on the current document".to_owned(),
        ),
    };
    call.outcome = outcome;
    (
        call,
        error_response(StatusCode::CONFLICT, outcome, &message),
    )
}

/// The caller's `revision`, if it sent one. An empty body is a call without one.
fn parse_action_body(body: &[u8]) -> Result<Option<u64>, &'static str> {
    if body.len() > MAX_ACTION_BODY {
        return Err("the request body must be at most 4 KiB");
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    const SHAPE: &str = "the request body must be empty or a JSON object like {\"revision\": 12}";
    // A map first: serde would otherwise also accept `[12]` as the struct's fields in order.
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(body).map_err(|_| SHAPE)?;
    match object.get("revision") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(revision) => revision.as_u64().map(Some).ok_or(SHAPE),
    }
}
