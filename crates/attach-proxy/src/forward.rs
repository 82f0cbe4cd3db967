//! The per-request path: checks, header rewriting, streaming forwarding, WebSocket tunnels.
//!
//! Order of checks for every request: `Host` must be the proxy's own (DNS rebinding), then
//! `Sec-Fetch-Site` must not name another site (every `127.0.0.1` port is "same-site" to a
//! browser, so another runtime's page would otherwise ride on this session), then either the
//! attach route redeems a code, or the session cookie must be valid and not idle for too long,
//! then unsafe methods and WebSocket upgrades must come from the proxy's own `Origin` (CSRF,
//! cross-site WebSocket hijacking). Only then is the request forwarded with the bearer token
//! added, over a connection whose other end the kernel says is the user's own socket.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{self, HeaderMap, HeaderName, HeaderValue};
use hyper::http::uri::PathAndQuery;
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::TokioIo;
use tokio_util::sync::CancellationToken;

use crate::access::{random_hex, AttachCodes, Sessions};
use crate::body::ProxyBody;
use crate::exchange::{Failure, Outgoing, RequestHead, RuntimeConnection};
use crate::owner::{self, SocketTable};
use crate::{pages, AttachOptions, UPSTREAM_CONNECT_TIMEOUT};

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

/// State shared by every connection of one proxy.
pub(crate) struct Shared {
    /// `127.0.0.1:PORT` of the runtime. Secret: never logged or sent to the browser.
    upstream_addr: SocketAddr,
    upstream_host: HeaderValue,
    upstream_origin: HeaderValue,
    /// `Bearer <token>`, marked sensitive.
    authorization: HeaderValue,
    own_hosts: [String; 2],
    cookie_name: String,
    pub(crate) codes: AttachCodes,
    sessions: Sessions,
    pub(crate) code_ttl: Duration,
    stop: CancellationToken,
    /// The kernel's socket table, asked about both ends of every connection. std Mutex: held
    /// for one synchronous query, never across an await (and uncontended: one thread per proxy).
    pub(crate) sockets: Mutex<SocketTable>,
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
        Self {
            upstream_addr,
            upstream_host: HeaderValue::try_from(upstream.as_str())
                .expect("a socket address is a valid header value"),
            upstream_origin: HeaderValue::try_from(format!("http://{upstream}"))
                .expect("an http origin is a valid header value"),
            authorization,
            own_hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
            cookie_name: format!("{SESSION_COOKIE_PREFIX}{}", random_hex(8)),
            codes: AttachCodes::default(),
            sessions: Sessions::new(options.session_idle_timeout),
            code_ttl: options.code_ttl,
            stop,
            sockets: Mutex::new(SocketTable::new()),
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
/// connection with its own runtime connection gives keep-alive reuse without a shared pool: no
/// pool lock, no per-request task to return a connection, and the runtime sees the same
/// request order as the browser sent. The runtime connection closes with the browser one.
#[derive(Default)]
pub(crate) struct UpstreamLink {
    // std Mutex: held only to move the connection in or out, never across an await. The
    // response body that holds the connection while it streams gives it back here.
    idle: Mutex<Option<RuntimeConnection>>,
}

impl UpstreamLink {
    /// The idle connection, if the runtime has not closed it meanwhile.
    fn take_open(&self) -> Option<RuntimeConnection> {
        let mut connection = self.idle.lock().unwrap_or_else(|e| e.into_inner()).take()?;
        connection.is_open_and_idle().then_some(connection)
    }

    pub(crate) fn put_back(&self, connection: RuntimeConnection) {
        *self.idle.lock().unwrap_or_else(|e| e.into_inner()) = Some(connection);
    }
}

/// Opens a TCP connection to the runtime, checked to be the user's own before anything (the
/// token above all) is written to it.
async fn connect_runtime(shared: &Shared) -> Result<tokio::net::TcpStream, ()> {
    let connect = tokio::time::timeout(
        UPSTREAM_CONNECT_TIMEOUT,
        tokio::net::TcpStream::connect(shared.upstream_addr),
    );
    let stream = connect.await.map_err(drop)?.map_err(drop)?;
    if !runtime_end_is_own(shared, &stream) {
        tracing::warn!(
            "the socket at the runtime's address belongs to another user; token not sent"
        );
        return Err(());
    }
    let _ = stream.set_nodelay(true);
    Ok(stream)
}

/// True when the kernel says the runtime's end of `stream` is a socket of the proxy's own user,
/// so the token may be written to it. Fails closed: a socket that cannot be looked up is not ours.
fn runtime_end_is_own(shared: &Shared, stream: &tokio::net::TcpStream) -> bool {
    let peer = shared
        .sockets
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .peer_of(stream);
    matches!(peer, owner::Peer::Own)
}

/// Handles one browser request end to end.
pub(crate) async fn handle(
    shared: &Shared,
    link: &Arc<UpstreamLink>,
    request: Request<Incoming>,
) -> Response<ProxyBody> {
    let Some(host) = own_host(shared, &request) else {
        return pages::wrong_host();
    };
    if !fetched_by_own_site(request.headers()) {
        return pages::cross_origin();
    }
    if let Some(code) = request.uri().path().strip_prefix(ATTACH_PATH_PREFIX) {
        return redeem(shared, request.method(), code);
    }
    let cookies = shared.cookies(request.headers());
    if !cookies.session {
        return pages::no_session();
    }
    let upgrade = is_websocket_upgrade(request.headers());
    let safe_method = matches!(*request.method(), Method::GET | Method::HEAD);
    if (upgrade || !safe_method) && !is_own_origin(request.headers(), host) {
        return pages::cross_origin();
    }
    if upgrade {
        forward_upgrade(shared, request, cookies).await
    } else {
        forward(shared, link, request, cookies).await
    }
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

fn redeem(shared: &Shared, method: &Method, code: &str) -> Response<ProxyBody> {
    if method != Method::GET {
        // Not consumed: a HEAD from a link previewer must not burn the user's code.
        return pages::attach_method_not_allowed();
    }
    if !shared.codes.redeem(code) {
        return pages::expired_code();
    }
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
    pages::no_store_no_referrer(headers);
    response
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
/// [`REQUEST_ONLY_DROPPED`], `Host`, `Authorization` and the attach-session cookies; then the
/// runtime's `Host`, the proxy's `Authorization` (the only one), the runtime's own origin for an
/// `Origin` (already checked to be the proxy's) and the runtime's cookies, if the browser holds
/// any. `Content-Length` is handed on like any field: how a body is framed is up to the sender.
///
/// The one rule for both ways a request goes to the runtime: written straight into a request
/// head (`exchange`), or collected into the header map of a WebSocket handshake.
fn runtime_request_fields(
    shared: &Shared,
    headers: &HeaderMap,
    cookies: Cookies,
    mut field: impl FnMut(&HeaderName, &HeaderValue),
) {
    // Looked up only if there is a `Connection` header (browsers send none over HTTP/1.1
    // keep-alive, or a plain `keep-alive`).
    let listed = if headers.keys().any(|name| name == header::CONNECTION) {
        connection_listed(headers)
    } else {
        Vec::new()
    };
    let mut origin = false;
    for (name, value) in headers {
        if name == header::ORIGIN {
            origin = true;
        } else if !(HOP_BY_HOP.contains(name)
            || REQUEST_ONLY_DROPPED.contains(name)
            || name == header::HOST
            || name == header::AUTHORIZATION
            || name == header::COOKIE
            || listed.contains(name))
        {
            field(name, value);
        }
    }
    field(&header::HOST, &shared.upstream_host);
    field(&header::AUTHORIZATION, &shared.authorization);
    if origin {
        field(&header::ORIGIN, &shared.upstream_origin);
    }
    if !cookies.only_sessions {
        // The common case (the browser holds no cookie of the runtime's) skips this.
        if let Some(kept) = runtime_cookies(headers) {
            field(&header::COOKIE, &kept);
        }
    }
}

/// Turns runtime response headers into browser response headers.
fn rewrite_response_headers(headers: &mut HeaderMap) {
    strip_hop_by_hop(headers);
    strip_session_set_cookies(headers);
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

async fn forward(
    shared: &Shared,
    link: &Arc<UpstreamLink>,
    request: Request<Incoming>,
    cookies: Cookies,
) -> Response<ProxyBody> {
    let (parts, body) = request.into_parts();
    let mut head = RequestHead::new(&parts.method, &parts.uri, parts.headers.len());
    runtime_request_fields(shared, &parts.headers, cookies, |name, value| {
        head.field(name, value)
    });
    let outgoing = head.finish(body);
    let sent = match link.take_open() {
        Some(connection) => match connection.exchange(outgoing, link.clone()).await {
            // The runtime closed the kept-alive connection just as this request came (its
            // keep-alive timeout, or a restart), and the request can be sent again as it was:
            // once more, on a fresh connection.
            Err(Failure::Unanswered(outgoing)) => {
                send_on_fresh_connection(shared, link, outgoing).await
            }
            sent => sent.ok(),
        },
        None => send_on_fresh_connection(shared, link, outgoing).await,
    };
    let Some(mut response) = sent else {
        // No error text is logged: it is not needed, and connection errors can carry details
        // of the runtime's socket.
        tracing::warn!("runtime request failed");
        return pages::upstream_down();
    };
    rewrite_response_headers(response.headers_mut());
    response
}

async fn send_on_fresh_connection(
    shared: &Shared,
    link: &Arc<UpstreamLink>,
    outgoing: Outgoing,
) -> Option<Response<ProxyBody>> {
    let stream = connect_runtime(shared).await.ok()?;
    RuntimeConnection::new(stream)
        .exchange(outgoing, link.clone())
        .await
        .ok()
}

/// The two headers that make a message a WebSocket upgrade (hop-by-hop, so the proxy sets them
/// itself on each side instead of passing the browser's or the runtime's on).
fn mark_websocket_upgrade(headers: &mut HeaderMap) {
    headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
}

/// Opens a runtime connection for a WebSocket handshake, driven by hyper's client.
async fn connect_websocket(shared: &Shared) -> Result<SendRequest<ProxyBody>, ()> {
    let stream = connect_runtime(shared).await?;
    let (sender, connection) =
        hyper::client::conn::http1::handshake::<_, ProxyBody>(TokioIo::new(stream))
            .await
            .map_err(drop)?;
    let stop = shared.stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = stop.cancelled() => {}
            _ = connection.with_upgrades() => {}
        }
    });
    Ok(sender)
}

/// Forwards a WebSocket handshake on a dedicated runtime connection and, if the runtime switches
/// protocols, splices the two upgraded connections together.
async fn forward_upgrade(
    shared: &Shared,
    mut request: Request<Incoming>,
    cookies: Cookies,
) -> Response<ProxyBody> {
    let browser_side = hyper::upgrade::on(&mut request);
    let (mut parts, _empty_body) = request.into_parts();
    let mut headers = HeaderMap::with_capacity(parts.headers.len() + 2);
    runtime_request_fields(shared, &parts.headers, cookies, |name, value| {
        // hyper's client frames the (empty) handshake body itself.
        if name != header::CONTENT_LENGTH {
            headers.append(name.clone(), value.clone());
        }
    });
    parts.headers = headers;
    mark_websocket_upgrade(&mut parts.headers);
    parts.uri = origin_form(parts.uri);
    parts.version = Version::HTTP_11;

    // A dedicated connection, driven by hyper's client on a task of its own: once upgraded it
    // belongs to this WebSocket alone.
    let Ok(mut sender) = connect_websocket(shared).await else {
        tracing::warn!("runtime did not accept a WebSocket connection");
        return pages::upstream_down();
    };
    let Ok(mut response) = sender
        .send_request(Request::from_parts(parts, ProxyBody::Empty))
        .await
    else {
        tracing::warn!("runtime failed the WebSocket handshake");
        return pages::upstream_down();
    };
    if response.status() != StatusCode::SWITCHING_PROTOCOLS {
        let (mut parts, body) = response.into_parts();
        rewrite_response_headers(&mut parts.headers);
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
    rewrite_response_headers(&mut parts.headers);
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
        let mut fields = Vec::new();
        runtime_request_fields(shared, &map, shared.cookies(&map), |name, value| {
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
                "content-length: 3",
                "accept: */*",
                "x-end-to-end: kept",
                "host: 127.0.0.1:9",
                "authorization: Bearer ours",
                "origin: http://127.0.0.1:9",
                "cookie: theme=dark",
            ]
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
