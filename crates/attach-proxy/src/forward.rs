//! The per-request path: checks, header rewriting, streaming forwarding, WebSocket tunnels.
//!
//! Order of checks for every request: `CONNECT` and `TRACE` are refused (nothing here is a
//! tunnel or echoes a request back), `Host` must be the proxy's own (DNS rebinding), then
//! `Sec-Fetch-Site` must not name another site (every `127.0.0.1` port is "same-site" to a
//! browser, so another runtime's page would otherwise ride on this session), then either the
//! attach route redeems a code, or the session cookie must be valid and not idle for too long,
//! then a service worker's script is refused (it would outlive the runtime on this origin),
//! then unsafe methods and WebSocket upgrades must come from the proxy's own `Origin` (CSRF,
//! cross-site WebSocket hijacking). Only then is the request forwarded with the bearer token
//! added, over a connection whose other end the kernel says is the user's own socket
//! ([`runtime_link::RuntimeConnector`]), by hyper's HTTP/1.1 client.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::http::request::Parts;
use hyper::http::uri::PathAndQuery;
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::TokioIo;
use runtime_link::{ConnectError, RuntimeConnection, RuntimeConnector, MAX_RESPONSE_HEAD_BYTES};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::access::{random_hex, AttachCodes, Sessions};
use crate::body::{Progress, ProxyBody};
use crate::options::AttachOptions;
use crate::pages;
use crate::rewrite::RuntimeTraces;

/// Path prefix of the attach route: `/__attach/<code>`.
pub(crate) const ATTACH_PATH_PREFIX: &str = "/__attach/";

/// Every session cookie name starts with this. Cookies are shared by all ports of 127.0.0.1, so a
/// browser attached to several runtimes sends every proxy's cookie to every proxy; stripping the
/// whole prefix keeps one runtime from ever seeing another runtime's session.
const SESSION_COOKIE_PREFIX: &str = "sc_attach_";

/// Request and response headers that describe one hop, not the message (RFC 9110 section 7.6.1),
/// plus the proxy-auth pair that is meant for us, never for the runtime. A `static`, not a
/// `const`: the array is built once, not on every use.
static HOP_BY_HOP: [HeaderName; 8] = [
    header::CONNECTION,
    HeaderName::from_static("keep-alive"),
    HeaderName::from_static("proxy-connection"),
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    header::PROXY_AUTHORIZATION,
];

/// Fetch metadata: which site a browser request comes from.
static SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// Request headers dropped besides [`HOP_BY_HOP`]: `Proxy-Authenticate` is ours, and the
/// runtime side does not wait for a 100 (the body is sent right away; hyper's server has already
/// answered the browser's `Expect` by reading the body).
static REQUEST_ONLY_DROPPED: [HeaderName; 2] = [header::PROXY_AUTHENTICATE, header::EXPECT];

/// Most informational (1xx) responses taken before a final one. A runtime sends one `100
/// Continue` or a few `103 Early Hints`; a stream of them is a runtime that will never answer,
/// and the proxy stops reading them rather than parse them until the head deadline.
const MAX_INFORMATIONAL_RESPONSES: usize = 16;

/// Set by a browser on the request for a service worker's script (and only there).
static SERVICE_WORKER: HeaderName = HeaderName::from_static("service-worker");

/// Fetch metadata: what the response is for (`serviceworker` for a service worker's script).
static SEC_FETCH_DEST: HeaderName = HeaderName::from_static("sec-fetch-dest");

/// Lets a service worker control more of the origin than its script's directory.
static SERVICE_WORKER_ALLOWED: HeaderName = HeaderName::from_static("service-worker-allowed");

/// Tells the browser to forget what earlier pages of this origin left behind (issue 29 item 7).
/// Proxies take ephemeral ports, so `http://127.0.0.1:P` may have served another runtime before:
/// its cached files and storage must not act in this one. `executionContexts` also reloads that
/// runtime's tabs still open on the origin, where a browser supports it.
static CLEAR_SITE_DATA: HeaderName = HeaderName::from_static("clear-site-data");

/// State shared by every connection of one proxy.
pub(crate) struct Shared {
    /// `127.0.0.1:PORT` of the runtime. Secret: never logged or sent to the browser.
    upstream_addr: SocketAddr,
    upstream_host: HeaderValue,
    upstream_origin: HeaderValue,
    /// `Bearer <token>`, marked sensitive.
    authorization: HeaderValue,
    /// The token and the runtime's address, to keep them out of response headers.
    traces: RuntimeTraces,
    own_hosts: [String; 2],
    cookie_name: String,
    pub(crate) codes: AttachCodes,
    sessions: Sessions,
    pub(crate) code_ttl: Duration,
    response_head_timeout: Duration,
    stop: CancellationToken,
    /// Opens checked runtime connections, and asks the kernel about the browser's end of each
    /// accepted connection.
    pub(crate) connector: RuntimeConnector,
}

impl Shared {
    pub(crate) fn new(
        upstream_addr: SocketAddr,
        authorization: HeaderValue,
        port: u16,
        options: &AttachOptions,
        stop: CancellationToken,
    ) -> Self {
        let upstream = upstream_addr.to_string();
        let token = authorization
            .as_bytes()
            .strip_prefix(b"Bearer ")
            .unwrap_or_default();
        Self {
            upstream_addr,
            upstream_host: HeaderValue::try_from(upstream.as_str())
                .expect("a socket address is a valid header value"),
            upstream_origin: HeaderValue::try_from(format!("http://{upstream}"))
                .expect("an http origin is a valid header value"),
            traces: RuntimeTraces::new(upstream_addr, token),
            authorization,
            own_hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
            cookie_name: format!("{SESSION_COOKIE_PREFIX}{}", random_hex(8)),
            codes: AttachCodes::default(),
            sessions: Sessions::new(options.session_idle_timeout),
            code_ttl: options.code_ttl,
            response_head_timeout: options.response_head_timeout,
            stop,
            connector: RuntimeConnector::new(),
        }
    }
    /// The runtime's address and the `Authorization` header the proxy adds, for a health check
    /// of the runtime it serves.
    pub(crate) fn upstream(&self) -> (SocketAddr, HeaderValue) {
        (self.upstream_addr, self.authorization.clone())
    }

    fn is_own_host(&self, host: &[u8]) -> bool {
        self.own_hosts.iter().any(|own| own.as_bytes() == host)
    }

    /// Reads the `Cookie` headers once: is there a valid session of this proxy, and is every
    /// cookie an attach-session cookie (of any proxy)?
    fn cookies(&self, headers: &HeaderMap) -> Cookies {
        let mut cookies = Cookies {
            session: false,
            only_sessions: true,
        };
        for (name, value) in cookie_pairs(headers) {
            if !name.starts_with(SESSION_COOKIE_PREFIX) {
                cookies.only_sessions = false;
            } else if !cookies.session && name == self.cookie_name {
                cookies.session = self.sessions.touch(value);
            }
        }
        cookies
    }
}

/// What the `Cookie` headers of a request hold, as far as the proxy cares.
#[derive(Clone, Copy)]
struct Cookies {
    /// A valid session cookie of this proxy is present.
    session: bool,
    /// Every cookie (possibly none) is an attach-session cookie, so forwarding drops the whole
    /// header instead of rebuilding it.
    only_sessions: bool,
}

/// The keep-alive connection to the runtime that serves one browser connection.
///
/// HTTP/1.1 requests on a browser connection are strictly sequential, so pairing each browser
/// connection with its own runtime connection gives keep-alive reuse without a shared pool, and
/// the runtime sees the same request order as the browser sent. hyper's client decides whether
/// a connection may carry another request (the last response ended where its framing said, no
/// `Connection: close`); the runtime connection closes with the browser one.
#[derive(Default)]
pub(crate) struct UpstreamLink {
    // std Mutex: held only to move the connection in or out, never across an await.
    idle: Mutex<Option<RuntimeConnection<ProxyBody>>>,
}

impl UpstreamLink {
    fn take(&self) -> Option<RuntimeConnection<ProxyBody>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn put_back(&self, connection: RuntimeConnection<ProxyBody>) {
        *self.idle.lock().unwrap_or_else(|e| e.into_inner()) = Some(connection);
    }
}

/// Handles one browser request end to end.
pub(crate) async fn handle(
    shared: &Shared,
    link: &Arc<UpstreamLink>,
    request: Request<Incoming>,
) -> Response<ProxyBody> {
    if matches!(*request.method(), Method::CONNECT | Method::TRACE) {
        return pages::method_not_allowed();
    }
    let Some(host) = own_host(shared, &request).cloned() else {
        return pages::wrong_host();
    };
    if !fetched_by_own_site(request.headers()) {
        return pages::cross_origin();
    }
    if let Some(code) = request.uri().path().strip_prefix(ATTACH_PATH_PREFIX) {
        return redeem(shared, request.method(), code, request.headers());
    }
    let cookies = shared.cookies(request.headers());
    if !cookies.session {
        return pages::no_session();
    }
    if is_service_worker_script(request.headers()) {
        return pages::service_worker_refused();
    }
    let upgrade = is_websocket_upgrade(request.headers());
    let safe_method = matches!(*request.method(), Method::GET | Method::HEAD);
    let own_origin = is_own_origin(request.headers(), &host);
    if (upgrade || !safe_method) && !own_origin {
        return pages::cross_origin();
    }
    let to_runtime = ToRuntime {
        cookies,
        own_origin,
        host,
    };
    if upgrade {
        forward_upgrade(shared, request, to_runtime).await
    } else {
        forward(shared, link, request, to_runtime).await
    }
}

/// What the checks found that shapes the request sent to the runtime and its answer.
struct ToRuntime {
    cookies: Cookies,
    /// The request carries exactly one `Origin`, the proxy's own.
    own_origin: bool,
    /// The `Host` the browser used (one of the proxy's own).
    host: HeaderValue,
}

/// The request's `Host` if it is one of the proxy's own; also checks an absolute-form target.
fn own_host<'r>(shared: &Shared, request: &'r Request<Incoming>) -> Option<&'r HeaderValue> {
    let host = request.headers().get(header::HOST)?;
    if !shared.is_own_host(host.as_bytes()) {
        return None;
    }
    if let Some(authority) = request.uri().authority() {
        if authority.as_str().as_bytes() != host.as_bytes() {
            return None;
        }
    }
    Some(host)
}

/// `Sec-Fetch-Site` is `same-origin` (the runtime's own page), `none` (typed, bookmarked, opened
/// by the tray) or absent (clients that do not send fetch metadata). `same-site` is refused too:
/// every `127.0.0.1` port is the same site, so that is another runtime's page.
fn fetched_by_own_site(headers: &HeaderMap) -> bool {
    let mut sites = headers.get_all(&SEC_FETCH_SITE).iter();
    match (sites.next(), sites.next()) {
        (None, _) => true,
        (Some(site), None) => matches!(site.as_bytes(), b"same-origin" | b"none"),
        _ => false,
    }
}

/// `Origin` must be exactly `http://` + the (already validated) `Host`.
fn is_own_origin(headers: &HeaderMap, host: &HeaderValue) -> bool {
    let mut origins = headers.get_all(header::ORIGIN).iter();
    match (origins.next(), origins.next()) {
        (Some(origin), None) => origin
            .as_bytes()
            .strip_prefix(b"http://")
            .is_some_and(|rest| rest == host.as_bytes()),
        _ => false,
    }
}

fn redeem(
    shared: &Shared,
    method: &Method,
    code: &str,
    headers: &HeaderMap,
) -> Response<ProxyBody> {
    if method != Method::GET {
        // Not consumed: a HEAD from a link previewer must not burn the user's code.
        return pages::attach_method_not_allowed();
    }
    if !shared.codes.redeem(code) {
        return pages::expired_code();
    }
    // A browser that already holds this proxy's cookie was attached to this very runtime: what
    // the origin holds is the runtime's own, and clearing it would only lose its settings.
    let attached_before = cookie_pairs(headers).any(|(name, _)| name == shared.cookie_name);
    let session = shared.sessions.open();
    let cookie = format!(
        "{}={session}; HttpOnly; SameSite=Strict; Path=/",
        shared.cookie_name
    );
    let mut response = Response::new(ProxyBody::Empty);
    *response.status_mut() = StatusCode::SEE_OTHER;
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    let mut cookie = HeaderValue::try_from(cookie).expect("hex cookie is a valid header value");
    cookie.set_sensitive(true);
    headers.insert(header::SET_COOKIE, cookie);
    if !attached_before {
        headers.insert(
            CLEAR_SITE_DATA.clone(),
            HeaderValue::from_static("\"cache\", \"storage\", \"executionContexts\""),
        );
    }
    pages::no_store_no_referrer(headers);
    response
}

/// A browser fetching a service worker's script says so twice: `Service-Worker: script` and
/// `Sec-Fetch-Dest: serviceworker`. Either refuses it.
fn is_service_worker_script(headers: &HeaderMap) -> bool {
    headers.contains_key(&SERVICE_WORKER)
        || headers
            .get_all(&SEC_FETCH_DEST)
            .iter()
            .any(|dest| dest.as_bytes().eq_ignore_ascii_case(b"serviceworker"))
}

fn is_websocket_upgrade(headers: &HeaderMap) -> bool {
    let upgrade_token = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    upgrade_token
        && headers
            .get(header::UPGRADE)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"))
}

/// `name=value` pairs of every `Cookie` header.
fn cookie_pairs(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            Some((name.trim(), value.trim()))
        })
}

/// Removes hop-by-hop headers, including any named in `Connection`.
///
/// Messages carry a handful of headers and rarely more than one hop-by-hop header, so one pass
/// over the names present (comparing well-known names is an integer compare) finds which of them
/// are there, and only those are removed, one hash lookup each.
fn strip_hop_by_hop(headers: &mut HeaderMap) {
    // Bit i set: HOP_BY_HOP[i] is present.
    let mut present = 0u16;
    for name in headers.keys() {
        if let Some(i) = HOP_BY_HOP.iter().position(|hop| hop == name) {
            present |= 1 << i;
        }
    }
    if present == 0 {
        return;
    }
    for name in connection_listed(headers) {
        headers.remove(name);
    }
    for (i, name) in HOP_BY_HOP.iter().enumerate() {
        if present & (1 << i) != 0 {
            headers.remove(name);
        }
    }
}

/// The field names a message's `Connection` header lists: hop-by-hop for this message only.
/// Empty (no allocation) when there is no `Connection` header.
fn connection_listed(headers: &HeaderMap) -> Vec<HeaderName> {
    headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect()
}

/// The header fields a browser request carries to the runtime, each handed to `field` in turn:
/// the browser's own less the hop-by-hop ones (and any its `Connection` names),
/// [`REQUEST_ONLY_DROPPED`], `Host`, `Authorization`, `Origin`, `Content-Length` and the
/// attach-session cookies; then the runtime's `Host`, the proxy's `Authorization` (the only one),
/// the runtime's own origin in place of an `Origin` that is the proxy's own (checked; any other
/// `Origin` is dropped, never passed off as the runtime's), and the runtime's cookies, if the
/// browser holds any. hyper's client frames the body by what hyper's server read of it.
///
/// The one rule for every request that goes to the runtime, WebSocket handshakes included.
fn runtime_request_fields(
    shared: &Shared,
    headers: &HeaderMap,
    to_runtime: &ToRuntime,
    mut field: impl FnMut(&HeaderName, &HeaderValue),
) {
    // Looked up only if there is a `Connection` header (browsers send none over HTTP/1.1
    // keep-alive, or a plain `keep-alive`).
    let listed = if headers.keys().any(|name| name == header::CONNECTION) {
        connection_listed(headers)
    } else {
        Vec::new()
    };
    for (name, value) in headers {
        if !(HOP_BY_HOP.contains(name)
            || REQUEST_ONLY_DROPPED.contains(name)
            || name == header::HOST
            || name == header::AUTHORIZATION
            || name == header::COOKIE
            || name == header::ORIGIN
            || name == header::CONTENT_LENGTH
            || listed.contains(name))
        {
            field(name, value);
        }
    }
    field(&header::HOST, &shared.upstream_host);
    field(&header::AUTHORIZATION, &shared.authorization);
    if to_runtime.own_origin {
        field(&header::ORIGIN, &shared.upstream_origin);
    }
    if !to_runtime.cookies.only_sessions {
        // The common case (the browser holds no cookie of the runtime's) skips this.
        if let Some(kept) = runtime_cookies(headers) {
            field(&header::COOKIE, &kept);
        }
    }
}

/// Turns runtime response headers into browser response headers: no hop-by-hop fields, no
/// attach-session cookies, nothing carrying the token, URLs at the runtime pointed at the proxy
/// (see `rewrite`), and no `Service-Worker-Allowed` (no service worker is registered here).
fn rewrite_response_headers(shared: &Shared, headers: &mut HeaderMap, host: &HeaderValue) {
    strip_hop_by_hop(headers);
    strip_session_set_cookies(headers);
    headers.remove(&SERVICE_WORKER_ALLOWED);
    shared.traces.scrub(headers, host);
}

/// Drops every `Set-Cookie` that would set a cookie under the proxies' prefix: a runtime must not
/// plant or overwrite an attach session (its own or another runtime's proxy's), since cookies on
/// `127.0.0.1` reach every port. The runtime's other cookies pass.
fn strip_session_set_cookies(headers: &mut HeaderMap) {
    let is_session = |value: &HeaderValue| {
        let name = value
            .as_bytes()
            .split(|b| *b == b'=')
            .next()
            .unwrap_or_default();
        let name = name.trim_ascii();
        name.len() >= SESSION_COOKIE_PREFIX.len()
            && name[..SESSION_COOKIE_PREFIX.len()]
                .eq_ignore_ascii_case(SESSION_COOKIE_PREFIX.as_bytes())
    };
    if !headers.get_all(header::SET_COOKIE).iter().any(is_session) {
        return;
    }
    let kept: Vec<HeaderValue> = headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter(|value| !is_session(value))
        .cloned()
        .collect();
    headers.remove(header::SET_COOKIE);
    for value in kept {
        headers.append(header::SET_COOKIE, value);
    }
}

/// The browser's cookies less every attach-session cookie (any proxy's), as one `Cookie` value;
/// `None` if nothing is left.
fn runtime_cookies(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut kept = String::new();
    for (name, value) in cookie_pairs(headers) {
        if name.starts_with(SESSION_COOKIE_PREFIX) {
            continue;
        }
        if !kept.is_empty() {
            kept.push_str("; ");
        }
        kept.push_str(name);
        kept.push('=');
        kept.push_str(value);
    }
    HeaderValue::try_from(kept)
        .ok()
        .filter(|value| !value.is_empty())
}

/// The origin-form target (`/path?query`) for the runtime; browsers already send that form.
fn origin_form(uri: Uri) -> Uri {
    if uri.scheme().is_none() && uri.authority().is_none() {
        return uri;
    }
    uri.path_and_query()
        .cloned()
        .unwrap_or_else(|| PathAndQuery::from_static("/"))
        .into()
}

/// A request for the runtime and how far it has gone out.
type Outgoing = (Request<ProxyBody>, Arc<Progress>);

/// The request for the runtime: the browser's method and target, the fields of
/// [`runtime_request_fields`], and (for a request with a declared empty body) `Content-Length: 0`.
/// `body` is the browser's request body, if it has one to send.
fn runtime_request(
    shared: &Shared,
    parts: &Parts,
    to_runtime: &ToRuntime,
    body: Option<Incoming>,
) -> Outgoing {
    let progress = Progress::new();
    let body = match body {
        Some(body) if !body.is_end_stream() => ProxyBody::Upload(body, progress.clone()),
        _ => ProxyBody::Empty,
    };
    let mut headers = HeaderMap::with_capacity(parts.headers.len() + 3);
    runtime_request_fields(shared, &parts.headers, to_runtime, |name, value| {
        headers.append(name.clone(), value.clone());
    });
    if body.is_end_stream() && parts.headers.contains_key(header::CONTENT_LENGTH) {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    }
    let mut request = Request::new(body);
    *request.method_mut() = parts.method.clone();
    *request.uri_mut() = origin_form(parts.uri.clone());
    *request.version_mut() = Version::HTTP_11;
    *request.headers_mut() = headers;
    (request, progress)
}

/// Why no response from the runtime is passed on.
enum Failure {
    /// The request was never written (the connection was closed first): it can go again as is.
    Unsent(Box<Outgoing>),
    /// The connection closed after the request was written and before any response.
    Unanswered,
    /// The runtime's answer broke the rules (or could not be read): 502.
    Refused,
    /// No response head within the deadline: 504.
    Timeout,
}

/// Counts the informational responses hyper's client skips for one request.
#[derive(Default)]
struct Informational {
    seen: AtomicUsize,
    too_many: Notify,
}

impl Informational {
    fn seen(&self) {
        if self.seen.fetch_add(1, Ordering::Relaxed) + 1 > MAX_INFORMATIONAL_RESPONSES {
            self.too_many.notify_one();
        }
    }
}

/// A response head from the runtime, and its connection if it may carry the next request.
type Answer = (Response<Incoming>, Option<RuntimeConnection<ProxyBody>>);

/// Ready once the request has not moved for the response-head timeout: its body (if any)
/// stopped going out, or it was all sent and no response head came.
async fn head_overdue(progress: &Progress, timeout: Duration) {
    loop {
        let due = progress.last() + timeout;
        if Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(due).await;
    }
}

/// Sends `request` on `connection` and waits for the final response head, for at most the
/// response-head timeout after the request last moved (see [`Progress`]). On any failure the
/// connection is closed at once; on success it comes back with the response, unless its
/// framing is not to be trusted again.
async fn exchange(
    shared: &Shared,
    connection: RuntimeConnection<ProxyBody>,
    (mut request, progress): (Request<ProxyBody>, Arc<Progress>),
    upgrade: bool,
) -> Result<Answer, Failure> {
    let RuntimeConnection { mut sender, task } = connection;
    let informational = Arc::new(Informational::default());
    let counter = informational.clone();
    hyper::ext::on_informational(&mut request, move |_| counter.seen());
    let answered = async {
        if sender.ready().await.is_err() {
            return Err(Failure::Unsent(Box::new((request, progress.clone()))));
        }
        sender
            .try_send_request(request)
            .await
            .map_err(|mut error| match error.take_message() {
                Some(request) => Failure::Unsent(Box::new((request, progress.clone()))),
                None if unanswered(error.error()) => Failure::Unanswered,
                None => Failure::Refused,
            })
    };
    let answered = tokio::select! {
        answered = answered => answered,
        _ = informational.too_many.notified() => Err(Failure::Refused),
        _ = head_overdue(&progress, shared.response_head_timeout) => Err(Failure::Timeout),
    };
    let checked = answered.and_then(|response| check_framing(response, upgrade));
    match checked {
        Ok((response, true)) => Ok((response, Some(RuntimeConnection { sender, task }))),
        // Dropping the sender lets the connection end once this response has been read.
        Ok((response, false)) => Ok((response, None)),
        Err(failure) => {
            task.abort();
            Err(failure)
        }
    }
}

/// The connection ended before any response came: the runtime closed it (a keep-alive timeout,
/// a restart) just as the request went out.
fn unanswered(error: &hyper::Error) -> bool {
    error.is_incomplete_message() || error.is_canceled() || error.is_closed()
}

/// Refuses a response whose head the proxy will not pass on: a `101` nobody asked for, a head
/// over [`MAX_RESPONSE_HEAD_BYTES`] (hyper's client bounds its read buffer, not quite the head),
/// and any transfer coding but exactly one `chunked` (hyper's client would read another coding
/// until close, and the browser would get it without its coding). A `Content-Length` beside
/// `chunked` is dropped (RFC 9112 section 6.3), and the connection is not used again (`false`).
fn check_framing(
    mut response: Response<Incoming>,
    upgrade: bool,
) -> Result<(Response<Incoming>, bool), Failure> {
    if response.status() == StatusCode::SWITCHING_PROTOCOLS && !upgrade {
        return Err(Failure::Refused);
    }
    let headers = response.headers_mut();
    // Each field as `name: value\r\n`; the status line is short.
    let head_bytes: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    if head_bytes > MAX_RESPONSE_HEAD_BYTES {
        return Err(Failure::Refused);
    }
    let mut reusable = true;
    if headers.contains_key(header::TRANSFER_ENCODING) {
        let mut codings = headers
            .get_all(header::TRANSFER_ENCODING)
            .iter()
            .flat_map(|value| value.as_bytes().split(|b| *b == b','))
            .map(<[u8]>::trim_ascii);
        let only_chunked = codings
            .next()
            .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"))
            && codings.next().is_none();
        if !only_chunked {
            return Err(Failure::Refused);
        }
        reusable = headers.remove(header::CONTENT_LENGTH).is_none();
    } else if headers.contains_key(header::CONTENT_LENGTH) {
        // Repeated lengths that agree go on as one; any other (hyper's client has already
        // refused those on a response with a body, but not on a bodiless one) are refused.
        let length = one_content_length(headers).ok_or(Failure::Refused)?;
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    }
    Ok((response, reusable))
}

/// The one length that every `Content-Length` value (comma-separated lists included) gives,
/// each a plain decimal number; `None` when they disagree or one is not a number.
fn one_content_length(headers: &HeaderMap) -> Option<u64> {
    let mut length = None;
    for value in headers.get_all(header::CONTENT_LENGTH) {
        for item in value.as_bytes().split(|b| *b == b',') {
            let item = item.trim_ascii();
            if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let parsed: u64 = std::str::from_utf8(item).ok()?.parse().ok()?;
            if length.is_some_and(|seen| seen != parsed) {
                return None;
            }
            length = Some(parsed);
        }
    }
    length
}

/// Opens a checked connection to the runtime (within its connect timeout).
async fn open(shared: &Shared) -> Result<RuntimeConnection<ProxyBody>, Failure> {
    shared
        .connector
        .open(shared.upstream_addr)
        .await
        .map_err(|error| {
            if matches!(error, ConnectError::Foreign { .. }) {
                tracing::warn!(
                    "the socket at the runtime's address belongs to another user; token not sent"
                );
            }
            Failure::Refused
        })
}

/// The browser's page for a failure.
fn failure_page(failure: &Failure) -> Response<ProxyBody> {
    // No error text is logged: it is not needed, and connection errors can carry details of
    // the runtime's socket.
    match failure {
        Failure::Timeout => {
            tracing::warn!("runtime sent no response head in time");
            pages::upstream_timeout()
        }
        _ => {
            tracing::warn!("runtime request failed");
            pages::upstream_down()
        }
    }
}

async fn forward(
    shared: &Shared,
    link: &Arc<UpstreamLink>,
    request: Request<Incoming>,
    to_runtime: ToRuntime,
) -> Response<ProxyBody> {
    let (parts, body) = request.into_parts();
    // A safe method without a body can be sent again if a kept-alive connection closes under it
    // (RFC 9110 section 9.2.2), as browsers do.
    let repeatable = matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS)
        && body.is_end_stream();
    let outgoing = runtime_request(shared, &parts, &to_runtime, Some(body));
    let sent = match link.take() {
        Some(kept) => match exchange(shared, kept, outgoing, false).await {
            Err(Failure::Unsent(outgoing)) => send_fresh(shared, *outgoing).await,
            Err(Failure::Unanswered) if repeatable => {
                send_fresh(shared, runtime_request(shared, &parts, &to_runtime, None)).await
            }
            sent => sent,
        },
        None => send_fresh(shared, outgoing).await,
    };
    let (response, connection) = match sent {
        Ok(sent) => sent,
        Err(failure) => return failure_page(&failure),
    };
    if let Some(connection) = connection {
        link.put_back(connection);
    }
    let (mut parts, body) = response.into_parts();
    rewrite_response_headers(shared, &mut parts.headers, &to_runtime.host);
    Response::from_parts(parts, ProxyBody::Streamed(body))
}

async fn send_fresh(shared: &Shared, outgoing: Outgoing) -> Result<Answer, Failure> {
    let connection = open(shared).await?;
    exchange(shared, connection, outgoing, false).await
}

/// The two headers that make a message a WebSocket upgrade (hop-by-hop, so the proxy sets them
/// itself on each side instead of passing the browser's or the runtime's on).
fn mark_websocket_upgrade(headers: &mut HeaderMap) {
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
}

/// Forwards a WebSocket handshake on a dedicated runtime connection and, if the runtime switches
/// protocols, splices the two upgraded connections together.
async fn forward_upgrade(
    shared: &Shared,
    mut request: Request<Incoming>,
    to_runtime: ToRuntime,
) -> Response<ProxyBody> {
    let browser_side = hyper::upgrade::on(&mut request);
    let (parts, _empty_body) = request.into_parts();
    let mut outgoing = runtime_request(shared, &parts, &to_runtime, None);
    mark_websocket_upgrade(outgoing.0.headers_mut());
    // A dedicated connection: once upgraded it belongs to this WebSocket alone.
    let sent = match open(shared).await {
        Ok(connection) => exchange(shared, connection, outgoing, true).await,
        Err(failure) => Err(failure),
    };
    let mut response = match sent {
        Ok((response, _connection)) => response,
        Err(failure) => return failure_page(&failure),
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let (mut parts, body) = response.into_parts();
        rewrite_response_headers(shared, &mut parts.headers, &to_runtime.host);
        return Response::from_parts(parts, ProxyBody::Streamed(body));
    }
    let runtime_side = hyper::upgrade::on(&mut response);
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        let tunnel = async {
            let (Ok(browser), Ok(runtime)) = tokio::join!(browser_side, runtime_side) else {
                return;
            };
            let mut browser = TokioIo::new(browser);
            let mut runtime = TokioIo::new(runtime);
            let _ = tokio::io::copy_bidirectional(&mut browser, &mut runtime).await;
        };
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = tunnel => {}
        }
    });
    let (mut parts, _) = response.into_parts();
    rewrite_response_headers(shared, &mut parts.headers, &to_runtime.host);
    mark_websocket_upgrade(&mut parts.headers);
    Response::from_parts(parts, ProxyBody::Empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    #[test]
    fn session_cookies_of_every_proxy_are_stripped_and_others_kept() {
        let map = headers(&[(
            "cookie",
            "theme=dark; sc_attach_aa=1; other=x=y; sc_attach_bb=2",
        )]);
        assert_eq!(runtime_cookies(&map).unwrap(), "theme=dark; other=x=y");

        let only_ours = headers(&[("cookie", "sc_attach_aa=1")]);
        assert_eq!(runtime_cookies(&only_ours), None);
    }

    #[test]
    fn runtimes_cannot_set_cookies_under_the_session_prefix() {
        let mut map = headers(&[
            ("set-cookie", "theme=dark; Path=/"),
            ("set-cookie", "sc_attach_0123=forged; Path=/"),
            ("set-cookie", " SC_ATTACH_x=forged"),
            ("set-cookie", "sc_attachment=kept"),
        ]);
        strip_session_set_cookies(&mut map);
        let kept: Vec<&[u8]> = map
            .get_all("set-cookie")
            .iter()
            .map(|v| v.as_bytes())
            .collect();
        assert_eq!(kept, [&b"theme=dark; Path=/"[..], b"sc_attachment=kept"]);
    }

    #[test]
    fn only_same_origin_and_user_initiated_fetches_are_served() {
        assert!(fetched_by_own_site(&HeaderMap::new()));
        for ok in ["same-origin", "none"] {
            assert!(
                fetched_by_own_site(&headers(&[("sec-fetch-site", ok)])),
                "{ok}"
            );
        }
        for refused in ["same-site", "cross-site", "Same-Origin", ""] {
            assert!(
                !fetched_by_own_site(&headers(&[("sec-fetch-site", refused)])),
                "{refused}"
            );
        }
        assert!(!fetched_by_own_site(&headers(&[
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-site", "cross-site"),
        ])));
    }

    /// Hop-by-hop fields of every kind: standard ones and one that `Connection` names.
    const HOP_BY_HOP_FIELDS: [(&str, &str); 7] = [
        ("connection", "keep-alive, x-private-hop"),
        ("keep-alive", "timeout=5"),
        ("x-private-hop", "1"),
        ("te", "trailers"),
        ("transfer-encoding", "chunked"),
        ("upgrade", "h2c"),
        ("proxy-authorization", "Basic abc"),
    ];

    #[test]
    fn connection_listed_and_standard_hop_by_hop_headers_are_removed() {
        let mut pairs = HOP_BY_HOP_FIELDS.to_vec();
        pairs.push(("x-end-to-end", "kept"));
        let mut map = headers(&pairs);
        strip_hop_by_hop(&mut map);
        let names: Vec<&str> = map.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, ["x-end-to-end"]);
    }

    #[test]
    fn one_read_of_the_cookies_finds_our_session_and_any_other_cookie() {
        let shared = shared();
        let ours = format!("{}={}", shared.cookie_name, shared.sessions.open());
        let only_ours = shared.cookies(&headers(&[("cookie", &ours)]));
        assert!(only_ours.session && only_ours.only_sessions);
        let with_runtime_cookie =
            shared.cookies(&headers(&[("cookie", &format!("theme=dark; {ours}"))]));
        assert!(with_runtime_cookie.session && !with_runtime_cookie.only_sessions);
        let forged = format!("{}={}", shared.cookie_name, "0".repeat(64));
        let no_session = shared.cookies(&headers(&[
            ("cookie", "sc_attach_other=1"),
            ("cookie", &forged),
        ]));
        assert!(!no_session.session && no_session.only_sessions);
    }

    fn shared() -> Shared {
        Shared::new(
            "127.0.0.1:9".parse().unwrap(),
            HeaderValue::from_static("Bearer ours"),
            4000,
            &AttachOptions::default(),
            CancellationToken::new(),
        )
    }

    /// The fields `runtime_request_fields` hands on for `pairs`, as `name: value` lines.
    fn runtime_fields(shared: &Shared, pairs: &[(&str, &str)]) -> Vec<String> {
        let map = headers(pairs);
        let host = HeaderValue::from_static("127.0.0.1:4000");
        let to_runtime = ToRuntime {
            cookies: shared.cookies(&map),
            own_origin: is_own_origin(&map, &host),
            host,
        };
        let mut fields = Vec::new();
        runtime_request_fields(shared, &map, &to_runtime, |name, value| {
            fields.push(format!("{}: {}", name, value.to_str().unwrap()));
        });
        fields
    }

    #[test]
    fn the_runtime_gets_end_to_end_fields_and_the_proxys_host_authorization_and_origin() {
        let shared = shared();
        let ours = format!("{}={}", shared.cookie_name, shared.sessions.open());
        let cookie = format!("theme=dark; {ours}");
        let mut pairs = vec![("host", "127.0.0.1:4000")];
        pairs.extend(HOP_BY_HOP_FIELDS);
        pairs.extend([
            ("proxy-authenticate", "Basic"),
            ("expect", "100-continue"),
            ("authorization", "Bearer browser-supplied"),
            ("origin", "http://127.0.0.1:4000"),
            ("cookie", &cookie),
            ("content-length", "3"),
            ("accept", "*/*"),
            ("x-end-to-end", "kept"),
        ]);
        let fields = runtime_fields(&shared, &pairs);
        assert_eq!(
            fields,
            [
                "accept: */*",
                "x-end-to-end: kept",
                "host: 127.0.0.1:9",
                "authorization: Bearer ours",
                "origin: http://127.0.0.1:9",
                "cookie: theme=dark",
            ]
        );
    }

    // Issue 29: an `Origin` that is not the proxy's own (never checked on a GET) is dropped,
    // not rewritten into the runtime's own origin.
    #[test]
    fn only_the_proxys_own_origin_becomes_the_runtimes_and_any_other_is_dropped() {
        let shared = shared();
        let ours = format!("{}={}", shared.cookie_name, shared.sessions.open());
        for foreign in ["http://evil.test", "null", "http://127.0.0.1:4001"] {
            let fields = runtime_fields(&shared, &[("cookie", &ours), ("origin", foreign)]);
            assert!(
                !fields.iter().any(|f| f.starts_with("origin:")),
                "{foreign}: {fields:?}"
            );
        }
        let twice = runtime_fields(
            &shared,
            &[
                ("origin", "http://127.0.0.1:4000"),
                ("origin", "http://evil.test"),
            ],
        );
        assert!(!twice.iter().any(|f| f.starts_with("origin:")), "{twice:?}");
        let own = runtime_fields(&shared, &[("origin", "http://127.0.0.1:4000")]);
        assert!(
            own.contains(&"origin: http://127.0.0.1:9".to_owned()),
            "{own:?}"
        );
    }

    #[test]
    fn a_request_with_only_session_cookies_and_no_origin_gets_neither() {
        let shared = shared();
        let ours = format!("{}={}", shared.cookie_name, shared.sessions.open());
        let fields = runtime_fields(
            &shared,
            &[
                ("cookie", &format!("sc_attach_other=1; {ours}")),
                ("accept", "*/*"),
            ],
        );
        assert_eq!(
            fields,
            [
                "accept: */*",
                "host: 127.0.0.1:9",
                "authorization: Bearer ours",
            ]
        );
    }

    #[test]
    fn websocket_upgrade_needs_both_connection_token_and_upgrade_header() {
        assert!(is_websocket_upgrade(&headers(&[
            ("connection", "keep-alive, Upgrade"),
            ("upgrade", "WebSocket"),
        ])));
        assert!(!is_websocket_upgrade(&headers(&[("upgrade", "websocket")])));
        assert!(!is_websocket_upgrade(&headers(&[
            ("connection", "upgrade"),
            ("upgrade", "h2c"),
        ])));
    }

    #[test]
    fn origin_must_match_the_validated_host_exactly() {
        let host = HeaderValue::from_static("127.0.0.1:4000");
        assert!(is_own_origin(
            &headers(&[("origin", "http://127.0.0.1:4000")]),
            &host
        ));
        for bad in [
            "http://127.0.0.1:4001",
            "https://127.0.0.1:4000",
            "http://127.0.0.1:4000.evil.test",
            "null",
        ] {
            assert!(!is_own_origin(&headers(&[("origin", bad)]), &host), "{bad}");
        }
        assert!(!is_own_origin(&HeaderMap::new(), &host));
    }
}
