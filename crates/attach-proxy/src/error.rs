//! [`AttachError`]: what can go wrong starting a proxy or probing a runtime.

use crate::options::HEALTH_TIMEOUT;

/// Everything that can go wrong starting a proxy or probing a runtime.
#[derive(thiserror::Error, Debug)]
pub enum AttachError {
    /// No loopback port could be bound for the proxy.
    #[error("could not open a loopback port for the attach proxy ({source}); close unused applications and attach again")]
    Bind {
        /// The OS error.
        source: std::io::Error,
    },
    /// The proxy's thread or its async runtime could not be created.
    #[error("could not start the attach proxy's thread ({source}); the system may be out of resources, close unused applications and attach again")]
    Thread {
        /// The OS error.
        source: std::io::Error,
    },
    /// The token cannot be sent in an HTTP header.
    #[error("the runtime's bearer token contains characters that cannot go in an HTTP header; restart the runtime so it registers a new token")]
    InvalidToken,
    /// The runtime could not be reached on its loopback address.
    #[error("the runtime is not answering on its loopback address ({source}); check that it is still running, or revive it from the tray")]
    UpstreamUnreachable {
        /// What failed (connect or HTTP exchange). Never contains the address.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The runtime refused the token it was registered with.
    #[error("the runtime refused its registered token (HTTP {status}); restart the runtime so it writes a fresh receipt")]
    UpstreamRejectedToken {
        /// 401 or 403.
        status: u16,
    },
    /// The runtime answered, but with a server error.
    #[error("the runtime answered HTTP {status}; check its logs and restart it")]
    UpstreamUnhealthy {
        /// The 5xx status.
        status: u16,
    },
    /// The runtime did not answer within [`HEALTH_TIMEOUT`].
    #[error("the runtime did not answer within {HEALTH_TIMEOUT:?}; it may be hung, restart it")]
    HealthTimeout,
    /// The socket at the runtime's address is not the runtime's, or cannot be checked, so the
    /// token was not sent.
    #[error(transparent)]
    Listener(#[from] runtime_link::ListenerError),
}
