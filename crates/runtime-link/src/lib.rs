//! The one way to reach a runtime on its loopback address.
//!
//! Any local user can listen on a port a runtime has just closed, and any local user can
//! connect to a `127.0.0.1` port. So before a runtime's token is written anywhere, two things are
//! asked of the kernel ([`owner`]): that the socket listening at the receipt's address is this
//! user's and held by the receipt's process ([`verify_listener`]), and that the other end of the
//! connection just opened is this user's socket ([`RuntimeConnector`]). Then HTTP/1.1 is spoken
//! with hyper's client. The attach proxy (forwarded requests, WebSocket handshakes, the health
//! check) and the core's status API client both reach runtimes only through here.

mod connect;
mod listener;
pub mod owner;

use std::time::Duration;

pub use connect::{ConnectError, RuntimeConnection, RuntimeConnector, MAX_RESPONSE_HEAD_BYTES};
pub use listener::{verify_listener, verify_listener_in, ListenerError};

/// Upper bound for opening a TCP connection to the runtime.
///
/// Loopback connects succeed or are refused at once; the bound only matters when the runtime's
/// accept backlog is full, and 5 s is long enough to ride out a burst without hanging a tab.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
