//! Shared rig: a demo runtime, a proxy in front of it, and clients that check every response for
//! the canary token.

use std::net::SocketAddr;
use std::time::Duration;

use attach_proxy::{AttachOptions, AttachProxy, AttachUrl};
use demo_runtime::{DemoConfig, DemoServer};
use live_runtime::Sensitive;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;

/// Generous bound for any single step, so a slow CI machine does not make tests flaky.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(20);

/// The runtime's token. It must never show up in anything the proxy sends to a browser.
pub const CANARY_TOKEN: &str = "canary-token-0d6f1c9b27e84a53";

pub const RUNTIME_NAME: &str = "proxy-test-runtime";

pub struct Rig {
    pub runtime: Option<DemoServer>,
    pub proxy: AttachProxy,
    pub runtime_addr: SocketAddr,
}

impl Rig {
    pub async fn start() -> Rig {
        Self::start_with(AttachOptions::default()).await
    }

    pub async fn start_with(options: AttachOptions) -> Rig {
        let runtime = demo_runtime::serve(DemoConfig::new(
            RUNTIME_NAME,
            Sensitive::new(CANARY_TOKEN.to_owned()),
        ))
        .await
        .expect("demo runtime starts");
        let runtime_addr = *runtime.local_addr().expose();
        let proxy = AttachProxy::start_with_options(
            runtime.local_addr(),
            Sensitive::new(CANARY_TOKEN.to_owned()),
            options,
        )
        .await
        .expect("proxy starts");
        Rig {
            runtime: Some(runtime),
            proxy,
            runtime_addr,
        }
    }

    pub fn origin(&self) -> String {
        self.proxy.origin()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.proxy.origin())
    }

    /// `127.0.0.1:PORT` of the proxy.
    pub fn proxy_addr(&self) -> SocketAddr {
        self.origin()
            .strip_prefix("http://")
            .unwrap()
            .parse()
            .unwrap()
    }

    /// Redeems a fresh code over a raw socket and returns the `name=value` session cookie.
    pub async fn session_cookie(&self) -> String {
        let url = self.proxy.mint_code();
        let response = raw_get(self.proxy_addr(), path_of(&url), &[]).await;
        assert_eq!(response.status, 303);
        let set_cookie = response.header("set-cookie").expect("session cookie set");
        set_cookie.split(';').next().unwrap().trim().to_owned()
    }

    /// A WebSocket handshake request for the runtime's echo socket through the proxy, sending
    /// `cookie` and, when given, `origin`.
    pub fn ws_request(
        &self,
        cookie: &str,
        origin: Option<&str>,
    ) -> tokio_tungstenite::tungstenite::handshake::client::Request {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let mut request = format!("ws://{}/api/ws", self.proxy_addr())
            .into_client_request()
            .unwrap();
        let headers = request.headers_mut();
        headers.insert("cookie", cookie.parse().unwrap());
        if let Some(origin) = origin {
            headers.insert("origin", origin.parse().unwrap());
        }
        request
    }

    /// A cookie-keeping client that has followed a fresh attach URL.
    pub async fn attached_client(&self) -> reqwest::Client {
        let client = cookie_client();
        let response = send(client.get(self.proxy.mint_code().as_str())).await;
        assert_eq!(response.status(), 200);
        client
    }
}

pub fn path_of(url: &AttachUrl) -> &str {
    let rest = url.as_str().strip_prefix("http://").unwrap();
    &rest[rest.find('/').unwrap()..]
}

pub fn cookie_client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap()
}

/// Sends a request within [`STEP_TIMEOUT`] and checks its headers for the canary.
pub async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    let response = timeout(STEP_TIMEOUT, request.send())
        .await
        .expect("response in time")
        .expect("request succeeds");
    for (name, value) in response.headers() {
        assert_no_canary(name.as_str().as_bytes(), "header name");
        assert_no_canary(value.as_bytes(), "header value");
    }
    response
}

/// Reads a whole body within [`STEP_TIMEOUT`] and checks it for the canary.
pub async fn text(response: reqwest::Response) -> String {
    let body = timeout(STEP_TIMEOUT, response.text())
        .await
        .expect("body in time")
        .expect("body reads");
    assert_no_canary(body.as_bytes(), "body");
    body
}

pub fn assert_no_canary(bytes: &[u8], what: &str) {
    let found = bytes
        .windows(CANARY_TOKEN.len())
        .any(|w| w == CANARY_TOKEN.as_bytes());
    assert!(!found, "the runtime token leaked into a response {what}");
}

/// A response read off a raw socket.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_in(&self.headers, name)
    }
}

/// The first value of the field `name` (any case) among parsed `headers`.
pub fn header_in<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// GET `path` with exactly the given extra headers (and `Host` = the proxy unless overridden).
pub async fn raw_get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> RawResponse {
    raw_request(addr, "GET", path, headers, "").await
}

/// Sends one HTTP/1.1 request with `Connection: close` and reads the whole response.
/// Uses a raw socket so tests control every header, `Host` included.
pub async fn raw_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> RawResponse {
    let mut request = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = timeout(STEP_TIMEOUT, exchange)
        .await
        .expect("raw exchange in time");
    assert_no_canary(&raw, "(raw)");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .expect("a complete response head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    RawResponse {
        status,
        headers,
        body: body.to_owned(),
    }
}
