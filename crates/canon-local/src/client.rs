//! The registration half of the package's `CanonClient`: submit a registration, poll its
//! status with the poll token, acknowledge the approval.
//!
//! Secrets (poll token, API key) travel only in headers and response bodies; they are wrapped in
//! [`Sensitive`] as soon as they are parsed and never reach an error message.
//!
//! Canon is spoken to over TLS only: a base URL must be `https`, except plain `http` to this
//! machine (`localhost`, `127.0.0.0/8`, `::1`), which is what tests and a local Canon use
//! ([`check_base_url`]). No redirect is followed: a 3xx answer is an error
//! ([`ClientError::Redirected`]), so the poll token header is only ever sent to the API it was
//! meant for. For the same reason a `requestId` goes into a URL path only when it is one plain
//! path segment ([`is_valid_request_id`]): `../../steal?x=` would send the token to another
//! path of the same host (issue 29). It is checked where Canon hands it out and again where it
//! is used, since the pending file it is kept in is any local program's to write.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, LOCATION, RETRY_AFTER};
use serde_json::{json, Map, Value};

use live_runtime::Sensitive;

/// Canon's public API. The package's `DEFAULT_BASE_URL` is not visible in the 0.13 diff, so this
/// value is our assumption; it is overridden by a profile's `baseUrl`, by `CANON_BASE_URL`, or
/// by [`crate::approval::ApprovalOptions::base_url`].
pub const DEFAULT_BASE_URL: &str = "https://api.canonmsg.com";

/// Environment variable naming another Canon API (staging, self-hosted, tests).
pub const BASE_URL_ENV: &str = "CANON_BASE_URL";

/// Header carrying the poll token.
pub const POLL_TOKEN_HEADER: &str = "x-canon-poll-token";

/// Per-request timeout: generous, because the tray polls in the background and a slow Canon
/// answer is better than a spurious retry; the approval deadline bounds the whole exchange.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(30);

/// Longest `requestId` used: Canon's ids are short; a longer one is not an id.
pub const REQUEST_ID_MAX: usize = 128;

/// Whether `request_id` can go into a URL path as one segment, as is: 1 to [`REQUEST_ID_MAX`]
/// ASCII letters, digits, `-` and `_`. No `/`, `.`, `%`, `?` or `#`, so it can neither climb
/// out of `/agents/status/` nor end the path.
pub fn is_valid_request_id(request_id: &str) -> bool {
    (1..=REQUEST_ID_MAX).contains(&request_id.len())
        && request_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Longest server body excerpt kept in an error: enough to show Canon's message, short enough
/// for a notification.
const ERROR_BODY_LIMIT: usize = 300;

/// The base URL to use: the profile's `baseUrl`, else `CANON_BASE_URL`, else
/// [`DEFAULT_BASE_URL`]. Empty strings count as unset (the package uses `||`). A trailing `/`
/// is removed so paths join cleanly.
pub fn resolve_base_url(profile_base_url: Option<&str>) -> String {
    let env = std::env::var(BASE_URL_ENV).ok();
    let chosen = profile_base_url
        .filter(|u| !u.is_empty())
        .or(env.as_deref().filter(|u| !u.is_empty()))
        .unwrap_or(DEFAULT_BASE_URL);
    chosen.trim_end_matches('/').to_owned()
}

/// Whether `base_url` may be talked to: `https`, or plain `http` to a loopback host (`localhost`,
/// `127.0.0.0/8`, `::1`). Also refuses a URL with a user name or password in it, which would end
/// up in error messages. Returns the reason when it may not.
pub fn check_base_url(base_url: &str) -> Result<(), ClientError> {
    let insecure = |shown: &str, reason: &str| ClientError::InsecureBaseUrl {
        base_url: shown.chars().take(BASE_URL_SHOWN_LIMIT).collect(),
        reason: reason.to_owned(),
    };
    let url = reqwest::Url::parse(base_url)
        .map_err(|e| insecure(base_url, &format!("it is not a URL ({e})")))?;
    if !url.username().is_empty() || url.password().is_some() {
        // Shown without the credentials, which may be a secret.
        let mut shown = url.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        return Err(insecure(
            shown.as_str(),
            "it carries a user name or password",
        ));
    }
    let insecure = |reason: &str| insecure(base_url, reason);
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback_host(&url) => Ok(()),
        "http" => Err(insecure(
            "it is plain http to another machine, which would send poll tokens and receive API keys in clear text",
        )),
        _ => Err(insecure("only https URLs are used")),
    }
}

/// Whether `base_url` is `https` (so it may be recorded in `agents.json` for the package to keep
/// using); loopback `http` is allowed for the exchange but never recorded.
pub fn is_tls(base_url: &str) -> bool {
    reqwest::Url::parse(base_url).is_ok_and(|u| u.scheme() == "https")
}

fn is_loopback_host(url: &reqwest::Url) -> bool {
    // The URL parser has already normalised the host: IPv4 in dotted form ("127.1" is
    // "127.0.0.1"), IPv6 in brackets, domains in lower case.
    let Some(host) = url.host_str() else {
        return false;
    };
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Longest part of a base URL or redirect target an error shows: a URL is not secret, but an
/// error should stay one readable line.
const BASE_URL_SHOWN_LIMIT: usize = 200;

/// A Canon API call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The base URL is not one poll tokens and API keys may travel to (see [`check_base_url`]).
    #[error("the Canon base URL {base_url} is refused: {reason}; Supercode Tray talks to Canon over https only (plain http only to this machine: localhost, 127.0.0.0/8, ::1); fix CANON_BASE_URL or the profile's baseUrl in agents.json")]
    InsecureBaseUrl {
        /// The refused URL (not secret; cut to a readable length).
        base_url: String,
        /// Why it is refused.
        reason: String,
    },
    /// Canon answered with a redirect, which is never followed: the poll token would go along.
    #[error("Canon answered HTTP {status}, a redirect to {location}; Supercode Tray follows no redirects, so a poll token is only sent to the API that issued it; set CANON_BASE_URL to the API's own address")]
    Redirected {
        /// HTTP status (3xx).
        status: u16,
        /// Where it pointed (the `Location` header, cut to a readable length), or "(nowhere)".
        location: String,
    },
    /// Canon answered with a non-2xx status (`CanonApiError`). `body` is an excerpt of Canon's
    /// answer with any known secret removed.
    #[error("Canon answered HTTP {status}: {body}")]
    Status {
        /// HTTP status.
        status: u16,
        /// Excerpt of the response body, secrets redacted.
        body: String,
    },
    /// Canon could not be reached (DNS, connection, timeout).
    #[error("cannot reach Canon at {base_url}: {reason}; check the network or the Canon base URL")]
    Transport {
        /// Which API.
        base_url: String,
        /// What failed.
        reason: String,
    },
    /// A `requestId` (from Canon, or from the pending file) that is not one plain path segment;
    /// nothing is sent with it.
    #[error("the registration's requestId {request_id:?} is refused: a requestId is 1 to {REQUEST_ID_MAX} letters, digits, - and _, so that it stays one part of the URL and the poll token goes only to its status; reject the registration and submit it again")]
    InvalidRequestId {
        /// The refused id, cut to a readable length.
        request_id: String,
    },
    /// Canon answered 2xx with something that is not the documented JSON.
    #[error("Canon sent an unexpected response ({0}); the Canon API may have changed, update Supercode Tray")]
    InvalidResponse(String),
}

impl ClientError {
    /// Worth retrying later: transport failures, 5xx, 408 and 429.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Transport { .. } => true,
            ClientError::Status { status, .. } => {
                *status >= 500 || *status == 408 || *status == 429
            }
            ClientError::InvalidResponse(_)
            | ClientError::InvalidRequestId { .. }
            | ClientError::InsecureBaseUrl { .. }
            | ClientError::Redirected { .. } => false,
        }
    }
}

/// The body of `POST /agents/register` that the tray sends.
#[derive(Debug, Clone)]
pub struct RegistrationRequest {
    /// `name`.
    pub name: String,
    /// `description`.
    pub description: String,
    /// `clientType`.
    pub client_type: Option<String>,
    /// `localRegistrationId`: the server returns the same request for the same id.
    pub local_registration_id: String,
}

/// `{requestId, pollToken?}`.
#[derive(Debug, Clone)]
pub struct SubmittedRegistration {
    /// `requestId`.
    pub request_id: String,
    /// `pollToken`.
    pub poll_token: Option<Sensitive<String>>,
}

/// `RegistrationStatus.status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistrationPhase {
    /// Waiting for the owner.
    Pending,
    /// The owner approved; Canon is creating the agent.
    Approving,
    /// Approved (the API key is in the same response, once).
    Approved,
    /// Rejected by the owner.
    Rejected,
    /// A value this version does not know; treated like `pending`.
    Other(String),
}

/// `GET /agents/status/{requestId}`.
#[derive(Debug, Clone)]
pub struct RegistrationStatus {
    /// `status`.
    pub phase: RegistrationPhase,
    /// `agentName`.
    pub agent_name: Option<String>,
    /// `agentId`.
    pub agent_id: Option<String>,
    /// `apiKey` (only with `approved`).
    pub api_key: Option<Sensitive<String>>,
    /// The server's requested poll interval: `Retry-After` (seconds), else `pollIntervalMs`,
    /// else `retryAfterMs`.
    pub retry_after: Option<Duration>,
}

/// A registration client bound to one Canon API.
#[derive(Debug, Clone)]
pub struct CanonClient {
    http: reqwest::Client,
    base_url: String,
}

impl CanonClient {
    /// A client for `base_url` (see [`resolve_base_url`]); refused unless [`check_base_url`]
    /// accepts it. The client follows no redirects.
    pub fn new(base_url: impl Into<String>) -> Result<Self, ClientError> {
        let base_url: String = base_url.into();
        check_base_url(&base_url)?;
        let http = reqwest::Client::builder()
            .timeout(HTTP_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::Transport {
                base_url: base_url.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
        })
    }

    /// The API this client talks to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn transport(&self, e: &reqwest::Error) -> ClientError {
        ClientError::Transport {
            base_url: self.base_url.clone(),
            reason: describe_reqwest(e),
        }
    }

    /// `CanonClient.register`: `POST {base}/agents/register`.
    pub async fn register(
        &self,
        request: &RegistrationRequest,
    ) -> Result<SubmittedRegistration, ClientError> {
        let mut body = Map::new();
        body.insert("name".into(), json!(request.name));
        body.insert("description".into(), json!(request.description));
        if let Some(ct) = &request.client_type {
            body.insert("clientType".into(), json!(ct));
        }
        body.insert(
            "localRegistrationId".into(),
            json!(request.local_registration_id),
        );
        let response = self
            .http
            .post(format!("{}/agents/register", self.base_url))
            .json(&Value::Object(body))
            .send()
            .await
            .map_err(|e| self.transport(&e))?;
        let (_, value) = read_json_response(response, None).await?;
        let request_id = value
            .get("requestId")
            .and_then(Value::as_str)
            .ok_or_else(|| ClientError::InvalidResponse("register: no requestId".into()))?
            .to_owned();
        let request_id = checked_request_id(&request_id)?.to_owned();
        let poll_token = value
            .get("pollToken")
            .and_then(Value::as_str)
            .map(|t| Sensitive::new(t.to_owned()));
        Ok(SubmittedRegistration {
            request_id,
            poll_token,
        })
    }

    /// `CanonClient.checkStatus`: `GET {base}/agents/status/{requestId}` with the poll token.
    pub async fn check_status(
        &self,
        request_id: &str,
        poll_token: Option<&Sensitive<String>>,
    ) -> Result<RegistrationStatus, ClientError> {
        let request_id = checked_request_id(request_id)?;
        let mut request = self
            .http
            .get(format!("{}/agents/status/{request_id}", self.base_url));
        if let Some(token) = poll_token {
            request = request.headers(token_header(token)?);
        }
        let response = request.send().await.map_err(|e| self.transport(&e))?;
        let (headers, mut value) = read_json_response(response, poll_token).await?;
        let phase = match value.get("status").and_then(Value::as_str) {
            Some("pending") => RegistrationPhase::Pending,
            Some("approving") => RegistrationPhase::Approving,
            Some("approved") => RegistrationPhase::Approved,
            Some("rejected") => RegistrationPhase::Rejected,
            Some(other) => RegistrationPhase::Other(other.to_owned()),
            None => {
                return Err(ClientError::InvalidResponse(
                    "status: no status field".into(),
                ))
            }
        };
        let api_key = match value.as_object_mut().and_then(|o| o.shift_remove("apiKey")) {
            Some(Value::String(k)) if !k.is_empty() => Some(Sensitive::new(k)),
            _ => None,
        };
        let header_retry = headers
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64);
        let field_ms = |name: &str| {
            value
                .get(name)
                .and_then(Value::as_f64)
                .filter(|ms| ms.is_finite() && *ms >= 0.0)
                .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        };
        let retry_after = header_retry
            .or_else(|| field_ms("pollIntervalMs"))
            .or_else(|| field_ms("retryAfterMs"));
        Ok(RegistrationStatus {
            phase,
            agent_name: value
                .get("agentName")
                .and_then(Value::as_str)
                .map(str::to_owned),
            agent_id: value
                .get("agentId")
                .and_then(Value::as_str)
                .map(str::to_owned),
            api_key,
            retry_after,
        })
    }

    /// `CanonClient.ackRegistrationStatus`: `POST {base}/agents/status/{requestId}/ack`, telling
    /// Canon the key was stored so it can forget it.
    pub async fn ack_registration_status(
        &self,
        request_id: &str,
        poll_token: Option<&Sensitive<String>>,
    ) -> Result<(), ClientError> {
        let request_id = checked_request_id(request_id)?;
        let mut headers = match poll_token {
            Some(token) => token_header(token)?,
            None => HeaderMap::new(),
        };
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let response = self
            .http
            .post(format!("{}/agents/status/{request_id}/ack", self.base_url))
            .headers(headers)
            .send()
            .await
            .map_err(|e| self.transport(&e))?;
        refuse_redirect(&response)?;
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Err(ClientError::Status {
                status: status.as_u16(),
                body: excerpt(&text, poll_token),
            });
        }
        Ok(())
    }
}

/// `request_id`, when [`is_valid_request_id`]; the refusal otherwise.
fn checked_request_id(request_id: &str) -> Result<&str, ClientError> {
    if is_valid_request_id(request_id) {
        Ok(request_id)
    } else {
        Err(ClientError::InvalidRequestId {
            request_id: request_id.chars().take(BASE_URL_SHOWN_LIMIT).collect(),
        })
    }
}

fn token_header(token: &Sensitive<String>) -> Result<HeaderMap, ClientError> {
    let mut value = HeaderValue::from_str(token.expose()).map_err(|_| {
        ClientError::InvalidResponse(
            "the poll token contains characters not allowed in a header".into(),
        )
    })?;
    value.set_sensitive(true);
    let mut headers = HeaderMap::new();
    headers.insert(POLL_TOKEN_HEADER, value);
    Ok(headers)
}

/// A 3xx answer is an error: the client never follows it (see the module docs).
fn refuse_redirect(response: &reqwest::Response) -> Result<(), ClientError> {
    let status = response.status();
    if !status.is_redirection() {
        return Ok(());
    }
    let location = response
        .headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .map_or_else(
            || "(nowhere)".to_owned(),
            |l| l.chars().take(BASE_URL_SHOWN_LIMIT).collect(),
        );
    Err(ClientError::Redirected {
        status: status.as_u16(),
        location,
    })
}

async fn read_json_response(
    response: reqwest::Response,
    poll_token: Option<&Sensitive<String>>,
) -> Result<(HeaderMap, Value), ClientError> {
    refuse_redirect(&response)?;
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.map_err(|e| ClientError::Transport {
        base_url: String::new(),
        reason: describe_reqwest(&e),
    })?;
    if !status.is_success() {
        return Err(ClientError::Status {
            status: status.as_u16(),
            body: excerpt(&String::from_utf8_lossy(&bytes), poll_token),
        });
    }
    // serde_json's messages name positions, never the content, so no secret leaks here.
    let value = serde_json::from_slice(&bytes)
        .map_err(|e| ClientError::InvalidResponse(format!("not JSON: {e}")))?;
    Ok((headers, value))
}

/// A short, secret-free excerpt of an error body. A body that looks like it carries an API key
/// or a poll token is not shown at all.
fn excerpt(text: &str, poll_token: Option<&Sensitive<String>>) -> String {
    let mut text = text.trim().to_owned();
    if let Some(token) = poll_token.filter(|t| !t.expose().is_empty()) {
        text = text.replace(token.expose().as_str(), "<redacted>");
    }
    let lower = text.to_ascii_lowercase();
    if ["apikey", "api_key", "polltoken", "poll_token"]
        .iter()
        .any(|k| lower.contains(k))
    {
        return "<response body withheld: it mentions a secret>".into();
    }
    if text.chars().count() > ERROR_BODY_LIMIT {
        text = text.chars().take(ERROR_BODY_LIMIT).collect::<String>() + "…";
    }
    if text.is_empty() {
        "(empty body)".into()
    } else {
        text
    }
}

fn describe_reqwest(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else if e.is_decode() || e.is_body() {
        "response body failed"
    } else {
        "request failed"
    };
    // The URL holds only the base and the request id (never a secret), but keep messages short.
    let mut source = std::error::Error::source(e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    if detail.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {detail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_excerpts_redact_the_poll_token_and_withhold_key_bodies() {
        let token = Sensitive::new("poll-canary-123".to_owned());
        let body = excerpt("bad token poll-canary-123 given", Some(&token));
        assert_eq!(body, "bad token <redacted> given");
        let body = excerpt(r#"{"apiKey":"sk-canary"}"#, None);
        assert!(!body.contains("sk-canary"), "{body}");
        let long = "x".repeat(1000);
        assert!(excerpt(&long, None).chars().count() <= ERROR_BODY_LIMIT + 1);
        assert_eq!(excerpt("  ", None), "(empty body)");
    }

    // Issue 13: Canon over TLS only; plain http only to this machine.
    #[test]
    fn base_urls_must_be_https_or_loopback_http() {
        for ok in [
            "https://api.canonmsg.com",
            "https://self.hosted:8443/canon",
            "http://127.0.0.1:4000",
            "http://127.200.1.2",
            "http://127.1:9",
            "http://[::1]:4000",
            "http://localhost:4000",
            "http://LocalHost",
        ] {
            assert!(check_base_url(ok).is_ok(), "{ok} should be accepted");
        }
        for refused in [
            "http://api.canonmsg.com",
            "http://10.0.0.7:4000",
            "http://[::ffff:10.0.0.7]",
            "http://127.0.0.1.example.com",
            "http://localhost.example.com",
            "ftp://api.canonmsg.com",
            "https://user:secret@api.canonmsg.com",
            "api.canonmsg.com",
            "",
        ] {
            let err = check_base_url(refused).expect_err(refused);
            assert!(
                matches!(err, ClientError::InsecureBaseUrl { .. }),
                "{refused}: {err:?}"
            );
            assert!(!err.to_string().contains("secret"), "{err}");
            assert!(!err.is_transient());
        }
        assert!(CanonClient::new("http://api.canonmsg.com").is_err());
        assert!(is_tls("https://api.canonmsg.com"));
        assert!(!is_tls("http://127.0.0.1:4000"));
    }
}
