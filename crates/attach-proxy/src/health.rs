//! [`check_health`]: is the runtime up and does it accept its token?

use std::net::SocketAddr;

use hyper::header::{self, HeaderValue};
use hyper::{Request, StatusCode};
use live_runtime::{BearerToken, Sensitive};

use runtime_link::{verify_listener, ConnectError, ListenerError, RuntimeConnector};

use crate::authorization::bearer_header;
use crate::body::ProxyBody;
use crate::error::AttachError;
use crate::options::HEALTH_TIMEOUT;

/// Checks the listener ([`runtime_link::verify_listener`]), then sends `GET /` with the token to the
/// runtime on a fresh connection whose runtime end the kernel says is this user's, all within
/// [`HEALTH_TIMEOUT`].
///
/// Healthy means any status below 500 except 401 and 403: a runtime's `/` may redirect or 404,
/// but a refused token or a server error means attaching would only show an error page.
pub async fn check_health(
    upstream: &Sensitive<SocketAddr>,
    token: &BearerToken,
    pid: Option<u32>,
) -> Result<(), AttachError> {
    check_health_with(*upstream.expose(), bearer_header(token)?, pid).await
}

/// [`check_health`] with the `Authorization` header already built (a running proxy holds it).
pub(crate) async fn check_health_with(
    upstream: SocketAddr,
    authorization: HeaderValue,
    pid: Option<u32>,
) -> Result<(), AttachError> {
    verify_listener(&Sensitive::new(upstream), pid)?;
    tokio::time::timeout(HEALTH_TIMEOUT, probe(upstream, authorization))
        .await
        .map_err(|_| AttachError::HealthTimeout)?
}

async fn probe(addr: SocketAddr, authorization: HeaderValue) -> Result<(), AttachError> {
    let connection = RuntimeConnector::new().open::<ProxyBody>(addr).await?;
    let mut sender = connection.sender;
    let request = Request::get("/")
        .header(
            header::HOST,
            HeaderValue::try_from(addr.to_string()).expect("an address is a valid header value"),
        )
        .header(header::AUTHORIZATION, authorization)
        .body(ProxyBody::Empty)
        .expect("a GET with valid headers builds");
    let response = sender.send_request(request).await;
    connection.task.abort();
    let status = response
        .map_err(|e| AttachError::UpstreamUnreachable { source: e.into() })?
        .status();
    match status {
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            Err(AttachError::UpstreamRejectedToken {
                status: status.as_u16(),
            })
        }
        status if status.is_server_error() => Err(AttachError::UpstreamUnhealthy {
            status: status.as_u16(),
        }),
        _ => Ok(()),
    }
}

impl From<ConnectError> for AttachError {
    fn from(error: ConnectError) -> Self {
        match error {
            ConnectError::Foreign { uid } => ListenerError::Foreign { uid }.into(),
            ConnectError::Gone => ListenerError::NotListening.into(),
            ConnectError::OwnerUnknown(source) => ListenerError::OwnerUnknown { source }.into(),
            other => AttachError::UpstreamUnreachable {
                source: Box::new(other),
            },
        }
    }
}
