//! [`check_health`]: is the runtime up and does it accept its token? And [`verify_listener`]:
//! is the socket at its address still the runtime's, so that the token may go there?

use std::net::SocketAddr;

use hyper::header::{self, HeaderValue};
use hyper::{Request, StatusCode};
use live_runtime::{BearerToken, Sensitive};

use crate::body::ProxyBody;
use crate::connect::{ConnectError, RuntimeConnector};
use crate::owner::{self, ListenerLookup, Platform, SocketTable};
use crate::{bearer_header, AttachError, HEALTH_TIMEOUT};

/// Checks that the socket listening at `upstream` belongs to this user and, when `pid` is given,
/// is held by that process (the receipt's). A port that another user, or another program, took
/// over after the runtime closed its listener fails, so no token is ever sent to it.
///
/// Where the platform cannot tell (see [`owner::Platform`]) this passes.
pub fn verify_listener(
    upstream: &Sensitive<SocketAddr>,
    pid: Option<u32>,
) -> Result<(), AttachError> {
    verify_listener_in(&mut SocketTable::new(), upstream, pid)
}

/// [`verify_listener`] asking `table`, for a caller that checks many runtimes in a row: a
/// [`SocketTable`] keeps one netlink socket for all of them, a [`owner::Listeners`] read once
/// answers them all without asking the kernel again.
pub fn verify_listener_in(
    table: &mut dyn ListenerLookup,
    upstream: &Sensitive<SocketAddr>,
    pid: Option<u32>,
) -> Result<(), AttachError> {
    if Platform::check() == Platform::Unchecked {
        return Ok(());
    }
    let found = table
        .listener(*upstream.expose())
        .map_err(|source| AttachError::OwnerUnknown { source })?;
    let Some(listener) = found else {
        return Err(AttachError::NotListening);
    };
    if listener.uid != owner::own_uid() {
        return Err(AttachError::ForeignListener { uid: listener.uid });
    }
    if let Some(pid) = pid {
        if owner::process_holds_socket(pid, listener.inode) == Some(false) {
            return Err(AttachError::NotTheRuntime { pid });
        }
    }
    Ok(())
}

/// Checks the listener (see [`verify_listener`]), then sends `GET /` with the token to the
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
            ConnectError::Foreign { uid } => AttachError::ForeignListener { uid },
            ConnectError::Gone => AttachError::NotListening,
            ConnectError::OwnerUnknown(source) => AttachError::OwnerUnknown { source },
            other => AttachError::UpstreamUnreachable {
                source: Box::new(other),
            },
        }
    }
}
