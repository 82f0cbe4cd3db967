//! The status API client: `GET /supercode/v1/status`, the status stream (its bytes parsed by
//! [`super::sse`]) and `POST /supercode/v1/actions/{id}`, to a runtime's receipt address
//! (`docs/runtime-api.md`).
//!
//! Runtimes are reached only through `runtime_link`: the token is written into a request only
//! after [`runtime_link::verify_listener`] said the socket at the address is this user's and
//! held by the receipt's process, and [`RuntimeConnector`] that the connection's other end is
//! this user's socket (a port taken over in between gets nothing). No error here carries the
//! token or the address: hyper and the OS name neither.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, StatusCode};
use live_runtime::{BearerToken, Sensitive};
use runtime_link::{ConnectError, ListenerError, RuntimeConnector};
use tokio::time::Instant;

use super::document::{self, Document, DocumentError, MAX_DOCUMENT_BYTES, MESSAGE_CAP};
use super::sse::{Parsed, SseParser, StreamError};

/// Path of the status document.
pub const STATUS_PATH: &str = "/supercode/v1/status";
/// Path of the status stream.
pub const STREAM_PATH: &str = "/supercode/v1/status/stream";
/// Path prefix of action calls.
pub const ACTIONS_PATH: &str = "/supercode/v1/actions";

/// Stream bytes parsed in one go before the reader yields to the other tasks of its thread (the
/// watcher's, which runs the inventory and every subscription). 16 KiB of the costliest input,
/// blank lines, parse in about a tenth of a millisecond, so a flooding runtime delays the
/// others by that much per turn; a line is never split, so one turn reads at most one line
/// (64 KiB) beyond it.
pub const READ_SLICE_BYTES: usize = 16 * 1024;

/// Largest action answer read. The documented answers are a few dozen bytes; a refusal's
/// message is capped at 500 characters (up to 2,000 bytes) before it is shown.
const MAX_ACTION_ANSWER_BYTES: usize = 8 * 1024;

/// Where and how to reach one runtime. Both values are secret and stay in their redacting types.
pub struct Target {
    /// The receipt's loopback address.
    pub address: Sensitive<SocketAddr>,
    /// The receipt's bearer token.
    pub token: BearerToken,
    /// The process that must hold the listener (the receipt's, or its server's): only a listener it
    /// holds gets the token.
    pub pid: u32,
}

impl From<live_runtime::ResolvedLiveRuntime> for Target {
    fn from(resolved: live_runtime::ResolvedLiveRuntime) -> Self {
        Self {
            address: resolved.address,
            token: resolved.token,
            pid: resolved.record.listener_pid(),
        }
    }
}

/// Why one attempt (a `GET`, or opening and reading the stream) failed. None of these carries
/// the address or the token.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    /// The socket at the address is not this user's runtime's, or cannot be checked.
    #[error(transparent)]
    Listener(#[from] ListenerError),
    /// No checked connection could be opened (refused, timed out, or its other end is not a
    /// socket of this user, so the token was not sent).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// The HTTP exchange failed.
    #[error("the HTTP exchange with the runtime failed ({0})")]
    Http(#[from] hyper::Error),
    /// No response headers in time.
    #[error("the runtime sent no response headers within {0:?}")]
    HeadersTimeout(Duration),
    /// A status other than 200 and 404 (401 included: it refuses its own token).
    #[error("the runtime answered HTTP {0}")]
    Status(u16),
    /// No first document in time after the headers.
    #[error("the runtime sent no status document within {0:?} of its headers")]
    FirstDocumentTimeout(Duration),
    /// The one-shot read's deadline passed before the runtime answered.
    #[error("the runtime did not answer within {0:?}")]
    NoAnswer(Duration),
    /// An open stream went silent for too long.
    #[error("the status stream sent nothing for {0:?}")]
    Silent(Duration),
    /// The stream broke the SSE reader's caps, or sent an invalid `status` document.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// An invalid document.
    #[error(transparent)]
    Invalid(#[from] DocumentError),
    /// The stream ended.
    #[error("the status stream ended")]
    Ended,
    /// The receipt or its token could not be read (the receipt says why, never the token).
    #[error(transparent)]
    Receipt(#[from] live_runtime::LiveRuntimeReceiptError),
    /// Reading the receipt was interrupted, or it names no valid endpoint.
    #[error("the runtime's receipt could not be read")]
    Unresolved,
}

/// Timeouts of one attempt.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// Connect and response headers.
    pub headers: Duration,
    /// First document after the headers.
    pub first_document: Duration,
    /// Longest silence of an open stream.
    pub silence: Duration,
}

/// What `GET /supercode/v1/status` (or opening the stream) found.
#[derive(Debug)]
pub enum Fetched<T> {
    /// `404`: the runtime does not serve the API.
    NotServed,
    /// `200`.
    Served(T),
}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// A connection to the runtime whose both ends were checked; the token may be sent on it. It
/// closes when the sender and the response (or the stream) are dropped.
async fn connect(target: &Target) -> Result<Sender, AttemptError> {
    runtime_link::verify_listener(&target.address, Some(target.pid))?;
    let connection = RuntimeConnector::new()
        .open(*target.address.expose())
        .await?;
    Ok(connection.sender)
}

fn request(
    target: &Target,
    method: Method,
    path: &str,
    body: Option<Bytes>,
) -> Request<Full<Bytes>> {
    let mut authorization = HeaderValue::try_from(format!("Bearer {}", target.token.expose()))
        .unwrap_or_else(|_| HeaderValue::from_static("Bearer invalid"));
    authorization.set_sensitive(true);
    // The address goes to the runtime itself only, as `attach_proxy::check_health` sends it.
    let host = HeaderValue::try_from(target.address.expose().to_string())
        .expect("an address is a valid header value");
    let mut builder = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, host)
        .header(header::AUTHORIZATION, authorization);
    if body.is_some() {
        builder = builder.header(header::CONTENT_TYPE, "application/json");
    }
    builder
        .body(Full::new(body.unwrap_or_default()))
        .expect("a request with valid headers builds")
}

/// Sends one request on a checked connection, bounded by `headers` for connect and headers.
async fn send(
    target: &Target,
    method: Method,
    path: &str,
    body: Option<Bytes>,
    headers: Duration,
) -> Result<hyper::Response<Incoming>, AttemptError> {
    let exchange = async {
        let mut sender = connect(target).await?;
        Ok::<_, AttemptError>(
            sender
                .send_request(request(target, method, path, body))
                .await?,
        )
    };
    tokio::time::timeout(headers, exchange)
        .await
        .map_err(|_| AttemptError::HeadersTimeout(headers))?
}

/// `GET /supercode/v1/status`: the current document, or `NotServed`.
pub async fn get_status(
    target: &Target,
    timeouts: Timeouts,
) -> Result<Fetched<Document>, AttemptError> {
    let response = send(target, Method::GET, STATUS_PATH, None, timeouts.headers).await?;
    match response.status() {
        StatusCode::OK => {}
        StatusCode::NOT_FOUND => return Ok(Fetched::NotServed),
        other => return Err(AttemptError::Status(other.as_u16())),
    }
    let body = tokio::time::timeout(
        timeouts.first_document,
        read_capped(response.into_body(), MAX_DOCUMENT_BYTES),
    )
    .await
    .map_err(|_| AttemptError::FirstDocumentTimeout(timeouts.first_document))??
    .ok_or(DocumentError::TooLarge)?;
    Ok(Fetched::Served(document::parse(&body)?))
}

/// Reads a body of at most `cap` bytes; `None` when it is longer.
async fn read_capped(mut body: Incoming, cap: usize) -> Result<Option<Vec<u8>>, AttemptError> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            if out.len() + data.len() > cap {
                return Ok(None);
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Some(out))
}

/// Opens `GET /supercode/v1/status/stream`.
pub async fn open_stream(
    target: &Target,
    timeouts: Timeouts,
) -> Result<Fetched<StatusStream>, AttemptError> {
    let response = send(target, Method::GET, STREAM_PATH, None, timeouts.headers).await?;
    match response.status() {
        StatusCode::OK => {}
        StatusCode::NOT_FOUND => return Ok(Fetched::NotServed),
        other => return Err(AttemptError::Status(other.as_u16())),
    }
    Ok(Fetched::Served(StatusStream {
        body: response.into_body(),
        parser: SseParser::default(),
        last_byte: Instant::now(),
        timeouts,
        slice: READ_SLICE_BYTES,
    }))
}

/// An open status stream, read one document at a time. Cancel-safe: a read dropped midway
/// (the caller's `select!` picked another branch) loses nothing already received.
pub struct StatusStream {
    body: Incoming,
    parser: SseParser,
    last_byte: Instant,
    timeouts: Timeouts,
    /// What is left of this turn's [`READ_SLICE_BYTES`].
    slice: usize,
}

impl StatusStream {
    /// When the stream counts as dead if nothing arrives before.
    pub fn silent_at(&self) -> Instant {
        self.last_byte + self.timeouts.silence
    }

    /// The next `status` document. `first` bounds the wait for the first one (5 s after the
    /// headers); later ones only by the silence timeout. A comment or an ignored event is a
    /// byte that resets the silence timer, not a document. Every [`READ_SLICE_BYTES`] parsed,
    /// it yields to the other tasks of its thread before going on.
    pub async fn next_document(
        &mut self,
        first: Option<Instant>,
    ) -> Result<Document, AttemptError> {
        loop {
            match self.parser.next_document(&mut self.slice)? {
                Parsed::Document(document) => return Ok(*document),
                Parsed::SliceUsed => {
                    self.slice = READ_SLICE_BYTES;
                    tokio::task::yield_now().await;
                    continue;
                }
                Parsed::NeedMore => {}
            }
            let silent_at = self.silent_at();
            let deadline = first.map_or(silent_at, |first| first.min(silent_at));
            let frame = match tokio::time::timeout_at(deadline, self.body.frame()).await {
                Ok(frame) => frame,
                Err(_) if first.is_some_and(|f| f <= silent_at) => {
                    return Err(AttemptError::FirstDocumentTimeout(
                        self.timeouts.first_document,
                    ))
                }
                Err(_) => return Err(AttemptError::Silent(self.timeouts.silence)),
            };
            let Some(frame) = frame else {
                return Err(AttemptError::Ended);
            };
            if let Ok(data) = frame?.into_data() {
                if !data.is_empty() {
                    self.last_byte = Instant::now();
                    self.parser.push(&data);
                }
            }
        }
    }
}

/// What the runtime answered to an action call.
#[derive(Debug, PartialEq, Eq)]
pub enum ActAnswer {
    /// `202`: it took the action.
    Accepted,
    /// `409` (`not-offered`, `stale-revision`) or `400`: refused, with its code and message
    /// (sanitized, capped at 500 characters).
    Refused {
        /// The HTTP status.
        status: u16,
        /// The refusal's `code`, when it sent a valid one.
        code: Option<String>,
        /// The refusal's `message`, sanitized.
        message: Option<String>,
    },
}

/// Why an action call failed before the runtime answered it (or with an answer the API does
/// not define).
#[derive(Debug, thiserror::Error)]
pub enum ActError {
    /// Reaching the runtime failed (nothing was sent, or the exchange broke).
    #[error(transparent)]
    Attempt(#[from] AttemptError),
    /// No answer in time: it may or may not have run the action (actions are not retried).
    #[error("the runtime did not answer within {0:?}; it may still run the action, so check its state before trying again")]
    Timeout(Duration),
}

/// `POST /supercode/v1/actions/{id}` with `{"revision": R}`, the whole exchange bounded by
/// `timeout`. `id` must already be valid (it goes into the path as it is).
pub async fn post_action(
    target: &Target,
    id: &str,
    revision: u64,
    timeout: Duration,
) -> Result<ActAnswer, ActError> {
    debug_assert!(document::is_valid_action_id(id));
    let path = format!("{ACTIONS_PATH}/{id}");
    let body = Bytes::from(serde_json::json!({ "revision": revision }).to_string());
    let exchange = async {
        let response = send(target, Method::POST, &path, Some(body), timeout).await?;
        let status = response.status();
        let answer = read_capped(response.into_body(), MAX_ACTION_ANSWER_BYTES).await?;
        Ok::<_, AttemptError>((status, answer))
    };
    let (status, answer) = match tokio::time::timeout(timeout, exchange).await {
        Err(_) | Ok(Err(AttemptError::HeadersTimeout(_))) => {
            return Err(ActError::Timeout(timeout))
        }
        Ok(result) => result?,
    };
    match status {
        StatusCode::ACCEPTED => Ok(ActAnswer::Accepted),
        StatusCode::CONFLICT | StatusCode::BAD_REQUEST => {
            let (code, message) = answer.as_deref().map(refusal).unwrap_or_default();
            Ok(ActAnswer::Refused {
                status: status.as_u16(),
                code,
                message,
            })
        }
        other => Err(AttemptError::Status(other.as_u16()).into()),
    }
}

/// The `code` and `message` of a refusal body, both untrusted: the code is kept only when it
/// looks like one, the message is sanitized and capped.
fn refusal(body: &[u8]) -> (Option<String>, Option<String>) {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return (None, None);
    };
    let error = &value["error"];
    let code = error["code"]
        .as_str()
        .filter(|c| document::is_valid_action_id(c))
        .map(str::to_owned);
    let message = error["message"]
        .as_str()
        .map(|m| document::clean(m, false, MESSAGE_CAP))
        .filter(|m| !m.is_empty());
    (code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_a_valid_code_and_a_sanitized_capped_message() {
        let body = serde_json::json!({
            "error": { "code": "not-offered", "message": format!("<b>no</b>\u{1b}[2J{}", "x".repeat(900)) }
        });
        let (code, message) = refusal(body.to_string().as_bytes());
        assert_eq!(code.as_deref(), Some("not-offered"));
        let message = message.unwrap();
        assert!(message.starts_with("<b>no</b>[2J"));
        assert_eq!(message.chars().count(), MESSAGE_CAP);
        let (code, message) = refusal(br#"{"error":{"code":"Bad Code!","message":5}}"#);
        assert_eq!((code, message), (None, None));
        assert_eq!(refusal(b"not json"), (None, None));
    }
}
