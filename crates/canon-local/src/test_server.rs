//! A fake Canon registration API following the contract of [`crate::client`], for tests and
//! demos (also the `canon-test-server` binary). Listens on `127.0.0.1:<ephemeral>`.
//!
//! Behaviour is scripted with [`TestServerConfig`]: how many `pending` and `approving` answers
//! precede the verdict, rejection, initial 5xx errors, a delay on every status answer, and the
//! API key it issues. Registration is idempotent by `localRegistrationId`; status and ack require
//! the poll token (401 without). A request to any other path is answered 404 and recorded, with
//! whether it carried a poll token. `GET /__test/state` returns what happened, for assertions.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// Scripted behaviour of the fake server (applies to every registration).
#[derive(Debug, Clone)]
pub struct TestServerConfig {
    /// `pending` answers before the next phase.
    pub pending_polls: u32,
    /// `approving` answers after the pending ones.
    pub approving_polls: u32,
    /// The verdict is `rejected` instead of `approved`.
    pub reject: bool,
    /// The first N status polls (over all registrations) answer 503.
    pub status_errors: u32,
    /// The first N registrations answer 503.
    pub register_errors: u32,
    /// Every status answer is delayed by this much.
    pub delay: Duration,
    /// The API key issued on approval (tests pass a canary).
    pub api_key: String,
    /// The agent id issued on approval.
    pub agent_id: String,
    /// `approved` is answered without `apiKey`.
    pub withhold_key: bool,
    /// `pollIntervalMs` sent with every status answer.
    pub poll_interval_ms: Option<u64>,
    /// `Retry-After` (seconds) sent with every status answer.
    pub retry_after_secs: Option<u64>,
    /// The `requestId` issued to the first registration instead of `req-1` (a hostile server).
    pub request_id: Option<String>,
}

impl Default for TestServerConfig {
    fn default() -> Self {
        Self {
            pending_polls: 0,
            approving_polls: 0,
            reject: false,
            status_errors: 0,
            register_errors: 0,
            delay: Duration::ZERO,
            api_key: "canon-test-api-key".into(),
            agent_id: "agent-test-1".into(),
            withhold_key: false,
            poll_interval_ms: None,
            retry_after_secs: None,
            request_id: None,
        }
    }
}

/// One registration the server has seen (poll token omitted).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationRecord {
    /// Issued request id.
    pub request_id: String,
    /// The client's idempotency key.
    pub local_registration_id: String,
    /// `name` sent.
    pub name: String,
    /// `description` sent.
    pub description: String,
    /// `clientType` sent.
    pub client_type: Option<String>,
    /// Successful status answers so far.
    pub polls: u32,
    /// Whether the approval was acknowledged.
    pub acked: bool,
}

/// What the server has seen (`GET /__test/state`).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct TestServerState {
    /// `POST /agents/register` calls, retries and errors included.
    pub register_calls: u32,
    /// Distinct registrations.
    pub registrations: Vec<RegistrationRecord>,
    /// Status polls, errors included.
    pub polls: u32,
    /// Status or ack calls rejected for a missing/wrong poll token.
    pub unauthorized: u32,
    /// Acknowledged request ids, in order.
    pub acks: Vec<String>,
    /// Requests to any path the API does not have: `METHOD /path?query`, and whether each
    /// carried a poll token.
    pub stray_requests: Vec<(String, bool)>,
}

struct Inner {
    config: TestServerConfig,
    state: TestServerState,
    tokens: Vec<String>, // parallel to state.registrations
    register_errors_left: u32,
    status_errors_left: u32,
}

type Shared = Arc<Mutex<Inner>>;

/// A running fake Canon. Dropping it stops the server.
pub struct TestServer {
    addr: SocketAddr,
    shared: Shared,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("addr", &self.addr)
            .finish()
    }
}

impl TestServer {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime.
    pub async fn start(config: TestServerConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let shared: Shared = Arc::new(Mutex::new(Inner {
            register_errors_left: config.register_errors,
            status_errors_left: config.status_errors,
            config,
            state: TestServerState::default(),
            tokens: Vec::new(),
        }));
        let app = Router::new()
            .route("/agents/register", post(register))
            .route("/agents/status/{id}", get(status))
            .route("/agents/status/{id}/ack", post(ack))
            .route("/__test/state", get(state))
            .fallback(stray)
            .with_state(shared.clone());
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(tx),
            task: Some(task),
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A snapshot of what the server has seen.
    pub fn state(&self) -> TestServerState {
        lock(&self.shared).state.clone()
    }

    /// Stops the server and waits for it.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Inner> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

async fn register(State(shared): State<Shared>, body: Option<Json<Value>>) -> Response {
    let mut inner = lock(&shared);
    inner.state.register_calls += 1;
    if inner.register_errors_left > 0 {
        inner.register_errors_left -= 1;
        return error(StatusCode::SERVICE_UNAVAILABLE, "temporarily unavailable");
    }
    let Some(Json(body)) = body else {
        return error(StatusCode::BAD_REQUEST, "JSON body required");
    };
    let field = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    let (Some(name), Some(local_id)) = (field("name"), field("localRegistrationId")) else {
        return error(
            StatusCode::BAD_REQUEST,
            "name and localRegistrationId are required",
        );
    };
    if let Some(i) = inner
        .state
        .registrations
        .iter()
        .position(|r| r.local_registration_id == local_id)
    {
        let request_id = inner.state.registrations[i].request_id.clone();
        let token = inner.tokens[i].clone();
        return Json(json!({ "requestId": request_id, "pollToken": token })).into_response();
    }
    let request_id = match &inner.config.request_id {
        Some(id) if inner.state.registrations.is_empty() => id.clone(),
        _ => format!("req-{}", inner.state.registrations.len() + 1),
    };
    let token = format!("poll-{}", uuid::Uuid::new_v4());
    inner.state.registrations.push(RegistrationRecord {
        request_id: request_id.clone(),
        local_registration_id: local_id,
        name,
        description: field("description").unwrap_or_default(),
        client_type: field("clientType"),
        polls: 0,
        acked: false,
    });
    inner.tokens.push(token.clone());
    Json(json!({ "requestId": request_id, "pollToken": token })).into_response()
}

/// Index of the registration if the poll token matches; otherwise the error response.
fn authorize(inner: &mut Inner, id: &str, headers: &HeaderMap) -> Result<usize, StatusCode> {
    let Some(i) = inner
        .state
        .registrations
        .iter()
        .position(|r| r.request_id == id)
    else {
        return Err(StatusCode::NOT_FOUND);
    };
    let presented = headers
        .get(crate::client::POLL_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok());
    if presented != Some(inner.tokens[i].as_str()) {
        inner.state.unauthorized += 1;
        return Err(StatusCode::UNAUTHORIZED);
    }
    Ok(i)
}

async fn status(
    State(shared): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    let delay = lock(&shared).config.delay;
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    let mut inner = lock(&shared);
    inner.state.polls += 1;
    let i = match authorize(&mut inner, &id, &headers) {
        Ok(i) => i,
        Err(code) => return error(code, "unknown request or missing poll token"),
    };
    if inner.status_errors_left > 0 {
        inner.status_errors_left -= 1;
        return error(StatusCode::SERVICE_UNAVAILABLE, "temporarily unavailable");
    }
    inner.state.registrations[i].polls += 1;
    let polls = inner.state.registrations[i].polls;
    let config = inner.config.clone();
    let record = inner.state.registrations[i].clone();
    let mut body = serde_json::Map::new();
    let phase = if polls <= config.pending_polls {
        "pending"
    } else if polls <= config.pending_polls + config.approving_polls {
        "approving"
    } else if config.reject {
        "rejected"
    } else {
        "approved"
    };
    body.insert("status".into(), json!(phase));
    body.insert("agentName".into(), json!(record.name));
    if phase == "approved" {
        body.insert("agentId".into(), json!(config.agent_id));
        if !config.withhold_key && !record.acked {
            body.insert("apiKey".into(), json!(config.api_key));
        }
    }
    if let Some(ms) = config.poll_interval_ms {
        body.insert("pollIntervalMs".into(), json!(ms));
    }
    let mut response = Json(Value::Object(body)).into_response();
    if let Some(secs) = config.retry_after_secs {
        if let Ok(v) = secs.to_string().parse() {
            response.headers_mut().insert("retry-after", v);
        }
    }
    response
}

async fn ack(State(shared): State<Shared>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let mut inner = lock(&shared);
    let i = match authorize(&mut inner, &id, &headers) {
        Ok(i) => i,
        Err(code) => return error(code, "unknown request or missing poll token"),
    };
    let json_body = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json_body {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type: application/json required",
        );
    }
    inner.state.registrations[i].acked = true;
    inner.state.acks.push(id);
    Json(json!({ "ok": true })).into_response()
}

async fn stray(
    State(shared): State<Shared>,
    method: axum::http::Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let with_token = headers.contains_key(crate::client::POLL_TOKEN_HEADER);
    lock(&shared)
        .state
        .stray_requests
        .push((format!("{method} {uri}"), with_token));
    error(StatusCode::NOT_FOUND, "no such API")
}

async fn state(State(shared): State<Shared>) -> Json<TestServerState> {
    Json(lock(&shared).state.clone())
}
