//! The proxy's limits, each a named constant that says why its value, and [`AttachOptions`],
//! which overrides the few that the app or a test sets.

use std::time::Duration;

/// How long a minted attach code stays redeemable.
///
/// The code travels through the OS "open URL" machinery and a browser that may be cold-starting,
/// which can take several seconds on a loaded machine; 30 s covers that, while a code that leaks
/// afterwards (shell history, a process listing, a crash report) is already useless.
pub const ATTACH_CODE_TTL: Duration = Duration::from_secs(30);

/// Upper bound for [`check_health`](crate::check_health).
///
/// A healthy runtime answers `GET /` on loopback in milliseconds; 3 s tolerates one that is busy
/// (a model call hogging its event loop) while keeping a click on "attach" from hanging.
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(3);

/// How long a browser connection may take to send a request's headers.
///
/// Browsers send headers in one go; 30 s only stops a stuck or malicious local client from
/// holding a connection (and its task) open forever.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a stopping proxy lets in-flight responses finish before dropping their connections.
///
/// The proxy is stopped when its runtime goes away, so nothing useful is still flowing; 1 s lets a
/// response that is almost done complete without making shutdown feel slow. SSE streams and
/// WebSocket tunnels are closed at once.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// How long a browser session may go unused before it is over and the browser must attach again.
///
/// A session cookie lives in the browser, where any page on another `127.0.0.1` port is
/// "same-site" and a forgotten tab or a later user of the browser profile could ride on it; an
/// hour covers a working stretch with the tab in the background (every request, SSE reconnects
/// included, counts as use), and attaching again is one click in the tray.
pub const SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(60 * 60);

/// Most browser connections one proxy serves at once. A browser opens six per host plus its
/// streams and WebSockets; 256 leaves room for many tabs while bounding what a local flood of
/// connections can make the proxy hold. Connections over the cap are closed at once.
pub const MAX_CONNECTIONS: usize = 256;

/// How long a runtime has to send its response head (the status line and fields) once the
/// request has been sent, and how long an upload to it may stall; over it the browser gets a
/// 504 and the runtime connection is closed.
///
/// A runtime that never answers, or stops reading an upload, would otherwise hold a browser
/// connection, and the proxy's task for it, forever. The clock restarts whenever a frame of the
/// request body goes out, so a large upload that keeps moving is never cut off. 60 s is
/// nginx's `proxy_read_timeout` and `proxy_send_timeout`: long enough for a slow handler or a
/// long poll (which answer within 30 s by convention). Response bodies are unbounded in time,
/// so a stream (SSE) that sends its head at once may then run for hours.
pub const RESPONSE_HEAD_TIMEOUT: Duration = Duration::from_secs(60);

/// Knobs for [`AttachProxy::start_with_options`](crate::AttachProxy::start_with_options). `Default` is what the app uses.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// How long a minted code stays redeemable; [`ATTACH_CODE_TTL`] by default.
    pub code_ttl: Duration,
    /// How long a session may go unused; [`SESSION_IDLE_TIMEOUT`] by default.
    pub session_idle_timeout: Duration,
    /// Most browser connections served at once; [`MAX_CONNECTIONS`] by default.
    pub max_connections: usize,
    /// How long a runtime has to send a response head; [`RESPONSE_HEAD_TIMEOUT`] by default.
    pub response_head_timeout: Duration,
    /// The `127.0.0.1` port to listen on; 0 (the default) takes an ephemeral one. Tests put a
    /// second proxy on the port of one that stopped, as the OS may do with ephemeral ports.
    pub port: u16,
}

impl Default for AttachOptions {
    fn default() -> Self {
        Self {
            code_ttl: ATTACH_CODE_TTL,
            session_idle_timeout: SESSION_IDLE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            response_head_timeout: RESPONSE_HEAD_TIMEOUT,
            port: 0,
        }
    }
}
