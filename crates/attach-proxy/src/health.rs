//! [`check_health`]: is the runtime up and does it accept its token?

use std::net::SocketAddr;

use hyper::header::{self, HeaderValue};
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use live_runtime::{BearerToken, Sensitive};

use crate::body::ProxyBody;
use crate::{bearer_header, AttachError, HEALTH_TIMEOUT};

/// Sends `GET /` with the token to the runtime on a fresh connection, within [`HEALTH_TIMEOUT`].
///
/// Healthy means any status below 500 except 401 and 403: a runtime's `/` may redirect or 404,
/// but a refused token or a server error means attaching would only show an error page.
pub async fn check_health(
    upstream: &Sensitive<SocketAddr>,
    token: &BearerToken,
) -> Result<(), AttachError> {
    let authorization = bearer_header(token)?;
    tokio::time::timeout(HEALTH_TIMEOUT, probe(*upstream.expose(), authorization))
        .await
        .map_err(|_| AttachError::HealthTimeout)?
}

async fn probe(addr: SocketAddr, authorization: HeaderValue) -> Result<(), AttachError> {
    let unreachable = |source: Box<dyn std::error::Error + Send + Sync>| {
        AttachError::UpstreamUnreachable { source }
    };
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| unreachable(e.into()))?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake::<_, ProxyBody>(TokioIo::new(stream))
            .await
            .map_err(|e| unreachable(e.into()))?;
    let connection = tokio::spawn(connection);
    let request = Request::get("/")
        .header(
            header::HOST,
            HeaderValue::try_from(addr.to_string()).expect("an address is a valid header value"),
        )
        .header(header::AUTHORIZATION, authorization)
        .body(ProxyBody::Empty)
        .expect("a GET with valid headers builds");
    let response = sender.send_request(request).await;
    connection.abort();
    let status = response.map_err(|e| unreachable(e.into()))?.status();
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
