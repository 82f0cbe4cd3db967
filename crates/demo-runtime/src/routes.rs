//! The runtime's routes. All of them, the status API's included, sit behind
//! [`crate::auth::require_bearer`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bytes::Bytes;
use futures_util::{stream, Stream, StreamExt};
use live_runtime::BearerToken;
use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

use crate::auth::{require_bearer, ExpectedToken};
use crate::page;

/// Interval between `/api/events` ticks.
///
/// One second is slow enough to be cheap and fast enough that a person (or a browser test) sees
/// the counter move right away; the first tick is sent immediately, not after one interval.
pub const TICK_INTERVAL: Duration = Duration::from_secs(1);

/// Largest body `/api/blob` will stream (1 GiB): plenty for throughput benchmarks, and a cap so
/// a typo in a query string cannot tie the runtime up for hours.
pub const MAX_BLOB_BYTES: u64 = 1 << 30;

/// Size of the chunks `/api/blob` writes; 64 KiB matches typical socket buffer sizes.
const BLOB_CHUNK: usize = 64 * 1024;
static BLOB_FILL: [u8; BLOB_CHUNK] = [b'x'; BLOB_CHUNK];

struct RuntimeState {
    name: String,
    serves_status_api: bool,
    started_at: String,
    started: Instant,
    stop: CancellationToken,
}

pub(crate) fn router(
    name: &str,
    token: &BearerToken,
    stop: CancellationToken,
    status_api: Router,
    serves_status_api: bool,
) -> Router {
    let state = Arc::new(RuntimeState {
        name: name.to_owned(),
        serves_status_api,
        started_at: now_rfc3339(),
        started: Instant::now(),
        stop,
    });
    let expected = Arc::new(ExpectedToken::new(token.expose()));
    Router::new()
        .route("/", get(index))
        .route("/api/info", get(info))
        .route("/api/health", get(health))
        .route("/api/events", get(events))
        .route("/api/ws", get(websocket))
        .route("/api/blob", get(blob))
        .route("/api/echo", post(echo))
        .route("/api/headers", get(header_names))
        .with_state(state)
        .merge(status_api)
        .layer(axum::middleware::from_fn_with_state(
            expected,
            require_bearer,
        ))
}

fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| String::from("unknown"))
}

async fn index(State(state): State<Arc<RuntimeState>>) -> Response {
    (
        [(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))],
        Html(page::render(&state.name, state.serves_status_api)),
    )
        .into_response()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Info<'a> {
    name: &'a str,
    pid: u32,
    started_at: &'a str,
    uptime_seconds: u64,
}

async fn info(State(state): State<Arc<RuntimeState>>) -> Response {
    Json(Info {
        name: &state.name,
        pid: std::process::id(),
        started_at: &state.started_at,
        uptime_seconds: state.started.elapsed().as_secs(),
    })
    .into_response()
}

async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "ok": true }))
}

async fn events(
    State(state): State<Arc<RuntimeState>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let mut interval = tokio::time::interval(TICK_INTERVAL);
    // A stalled reader should see the current tick, not a burst of stale ones.
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let ticks = stream::unfold((interval, 0u64), |(mut interval, tick)| async move {
        // The first `tick()` completes immediately, so tick 0 goes out without waiting.
        interval.tick().await;
        let data = serde_json::json!({ "tick": tick, "at": now_rfc3339() }).to_string();
        Some((Ok(Event::default().data(data)), (interval, tick + 1)))
    });
    Sse::new(ticks.take_until(state.stop.clone().cancelled_owned()))
}

async fn websocket(State(state): State<Arc<RuntimeState>>, upgrade: WebSocketUpgrade) -> Response {
    let stop = state.stop.clone();
    upgrade.on_upgrade(move |socket| echo_socket(socket, stop))
}

async fn echo_socket(mut socket: WebSocket, stop: CancellationToken) {
    loop {
        let message = tokio::select! {
            _ = stop.cancelled() => break,
            message = socket.recv() => message,
        };
        let reply = match message {
            Some(Ok(message @ (Message::Text(_) | Message::Binary(_)))) => message,
            Some(Ok(Message::Close(_))) | Some(Err(_)) | None => break,
            // Pings are answered by the WebSocket layer itself.
            Some(Ok(_)) => continue,
        };
        if socket.send(reply).await.is_err() {
            break;
        }
    }
    let _ = socket.send(Message::Close(None)).await;
}

#[derive(Deserialize)]
struct BlobQuery {
    bytes: u64,
}

async fn blob(Query(query): Query<BlobQuery>) -> Response {
    if query.bytes > MAX_BLOB_BYTES {
        return (
            StatusCode::BAD_REQUEST,
            format!("bytes must be at most {MAX_BLOB_BYTES}\n"),
        )
            .into_response();
    }
    let chunks = stream::unfold(query.bytes, |remaining| async move {
        if remaining == 0 {
            return None;
        }
        let len = remaining.min(BLOB_CHUNK as u64) as usize;
        let chunk = Bytes::from_static(&BLOB_FILL[..len]);
        Some((Ok::<_, Infallible>(chunk), remaining - len as u64))
    });
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            ),
            (header::CONTENT_LENGTH, HeaderValue::from(query.bytes)),
        ],
        Body::from_stream(chunks),
    )
        .into_response()
}

async fn echo(request: Request) -> Response {
    let content_type = request.headers().get(header::CONTENT_TYPE).cloned();
    // The body goes back out as it arrives: nothing is buffered beyond one chunk.
    let mut response = Response::new(request.into_body());
    if let Some(content_type) = content_type {
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, content_type);
    }
    response
}

/// What `/api/headers` reports: header and cookie NAMES only, never values.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReceivedHeaders {
    /// Lower-case header names in arrival order, repeated names included.
    names: Vec<String>,
    /// Names of the cookies in the `Cookie` header(s).
    cookie_names: Vec<String>,
    /// Reaching this route means the auth layer saw exactly one matching `Authorization`.
    authorization_matched: bool,
}

async fn header_names(headers: HeaderMap) -> Json<ReceivedHeaders> {
    let names = headers
        .iter()
        .map(|(name, _)| name.as_str().to_owned())
        .collect();
    let cookie_names = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.split_once('=').map(|(name, _)| name.trim().to_owned()))
        .collect();
    Json(ReceivedHeaders {
        names,
        cookie_names,
        authorization_matched: true,
    })
}
