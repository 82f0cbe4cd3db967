//! The one way to open a connection to a runtime: connect to its loopback address, then ask the
//! kernel whether the socket at the other end is this user's, before a byte (the token above
//! all) is written to it; then speak HTTP/1.1 on it with hyper's client.
//!
//! Any local user can listen on a port a runtime has just closed, so every connection that will
//! carry a runtime's token goes through [`RuntimeConnector`]: the proxy's forwarded requests and
//! WebSocket handshakes, its health check, and the core's status API client.

use std::net::SocketAddr;
use std::sync::Mutex;

use hyper::body::Body;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::AbortHandle;

use crate::owner::{Peer, SocketTable};
use crate::CONNECT_TIMEOUT;

/// Largest response head (status line and fields) read from a runtime: Chromium's own limit on
/// the response headers it accepts, so nothing a browser would take is refused. hyper's client
/// refuses more than 100 fields on its own.
pub const MAX_RESPONSE_HEAD_BYTES: usize = 256 * 1024;

/// Why no checked connection to a runtime could be opened. Never carries the runtime's address.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Connecting failed (refused, reset).
    #[error("the runtime did not accept a connection ({0})")]
    Unreachable(#[source] std::io::Error),
    /// Connecting took longer than [`CONNECT_TIMEOUT`].
    #[error("the runtime did not accept a connection within {CONNECT_TIMEOUT:?}")]
    Timeout,
    /// The kernel says the socket at the other end belongs to another OS user.
    #[error("the socket at the runtime's address belongs to another user (uid {uid})")]
    Foreign {
        /// Its uid.
        uid: u32,
    },
    /// The kernel knows no established socket at the other end any more.
    #[error("the runtime's end of the connection is gone")]
    Gone,
    /// The kernel could not be asked.
    #[error("could not ask the kernel who owns the runtime's socket ({0})")]
    OwnerUnknown(#[source] std::io::Error),
    /// The HTTP/1.1 connection could not be set up.
    #[error("the HTTP connection to the runtime failed ({0})")]
    Http(#[source] hyper::Error),
}

/// Opens connections to runtimes whose other end the kernel says is this user's.
///
/// Keeps one netlink socket for its queries; the proxy also asks it about the browser's end of
/// every accepted connection.
pub struct RuntimeConnector {
    /// std Mutex: held for one synchronous query, never across an await.
    sockets: Mutex<SocketTable>,
}

impl Default for RuntimeConnector {
    fn default() -> Self {
        Self::new()
    }
}

/// An HTTP/1.1 connection to a runtime: the sender for its requests and the task that drives it.
pub struct RuntimeConnection<B> {
    /// Sends requests (one at a time) on the connection.
    pub sender: SendRequest<B>,
    /// The task that drives the connection; aborting it closes the connection at once.
    pub task: AbortHandle,
}

impl RuntimeConnector {
    /// A connector with its own socket-table query socket.
    pub fn new() -> Self {
        Self {
            sockets: Mutex::new(SocketTable::new()),
        }
    }

    /// Whose socket is at the other end of `stream` (one exact-match query): the proxy asks it
    /// about the browser's end of every connection it accepts.
    pub fn peer_of(&self, stream: &TcpStream) -> Peer {
        self.sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .peer_of(stream)
    }

    /// Connects to `addr` within [`CONNECT_TIMEOUT`] and returns the stream only if the
    /// kernel says its other end is an established socket of this user (where the platform
    /// cannot tell, see [`crate::owner::Platform`], it is taken as the user's).
    pub async fn connect(&self, addr: SocketAddr) -> Result<TcpStream, ConnectError> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| ConnectError::Timeout)?
            .map_err(ConnectError::Unreachable)?;
        match self.peer_of(&stream) {
            Peer::Own => {}
            Peer::Other { uid } => return Err(ConnectError::Foreign { uid }),
            Peer::Gone => return Err(ConnectError::Gone),
            Peer::Unknown(error) => return Err(ConnectError::OwnerUnknown(error)),
        }
        let _ = stream.set_nodelay(true);
        Ok(stream)
    }

    /// [`RuntimeConnector::connect`], then an HTTP/1.1 connection on it (hyper's client), driven
    /// by a task of its own that also carries an upgraded connection (WebSocket) through. The
    /// task ends when the sender and every response body are dropped, or when it is aborted.
    pub async fn open<B>(&self, addr: SocketAddr) -> Result<RuntimeConnection<B>, ConnectError>
    where
        B: Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let stream = self.connect(addr).await?;
        let (sender, connection) = hyper::client::conn::http1::Builder::new()
            .max_buf_size(MAX_RESPONSE_HEAD_BYTES)
            .handshake(TokioIo::new(stream))
            .await
            .map_err(ConnectError::Http)?;
        let task = tokio::spawn(async move {
            let _ = connection.with_upgrades().await;
        })
        .abort_handle();
        Ok(RuntimeConnection { sender, task })
    }
}
