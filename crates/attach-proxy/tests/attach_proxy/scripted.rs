//! A runtime scripted on a raw loopback socket, so a test controls every byte it answers with
//! and sees every byte the proxy sends it; and a raw keep-alive browser connection, so a test
//! sees exactly how each response is framed. Used by `framing` and `runtime_side`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use attach_proxy::{AttachOptions, AttachProxy};
use live_runtime::Sensitive;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;

use crate::support::{assert_no_canary, header_in, path_of, raw_get, CANARY_TOKEN, STEP_TIMEOUT};

/// A request as the scripted runtime received it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Which accepted connection it came on, from 1.
    pub connection: usize,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_in(&self.headers, name)
    }
}

/// What the scripted runtime does with a request.
pub struct Reply {
    /// Written as they are, in one write.
    pub bytes: Vec<u8>,
    /// Close the connection after writing them.
    pub close: bool,
    /// Answer before reading the request's body (it is not read at all).
    pub before_body: bool,
}

impl Reply {
    pub fn keep(bytes: impl Into<Vec<u8>>) -> Reply {
        Reply {
            bytes: bytes.into(),
            close: false,
            before_body: false,
        }
    }

    pub fn then_close(bytes: impl Into<Vec<u8>>) -> Reply {
        Reply {
            close: true,
            ..Reply::keep(bytes)
        }
    }
}

pub type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// A runtime that answers by script and records what it was sent.
pub struct Scripted {
    pub addr: SocketAddr,
    pub accepted: Arc<AtomicUsize>,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Scripted {
    pub async fn start(script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Script = Arc::new(script);
        let (counter, log) = (accepted.clone(), seen.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let connection = counter.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::spawn(serve(stream, connection, script.clone(), log.clone()));
            }
        });
        Scripted {
            addr,
            accepted,
            seen,
        }
    }

    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

pub async fn serve(
    mut stream: TcpStream,
    connection: usize,
    script: Script,
    log: Arc<Mutex<Vec<Seen>>>,
) {
    let mut buffer = Vec::new();
    loop {
        let Some((mut seen, head_length)) = read_head(&mut stream, &mut buffer).await else {
            return;
        };
        seen.connection = connection;
        buffer.drain(..head_length);
        let mut reply = script(&seen);
        if !reply.before_body {
            let Some(body) = read_body(&mut stream, &mut buffer, &seen).await else {
                return;
            };
            seen.body = body;
            reply = script(&seen);
        }
        log.lock().unwrap().push(seen);
        if stream.write_all(&reply.bytes).await.is_err() {
            return;
        }
        if reply.close {
            if reply.before_body {
                linger(stream).await;
            }
            return;
        }
    }
}

/// How long an answer given before the request's body was read waits for the rest of that body.
const LINGER: std::time::Duration = std::time::Duration::from_secs(2);

/// Closes as servers close after answering before the body (nginx's `lingering_close`, hyper's
/// server): stop sending, then read and drop what still comes for a while. Closing at once with
/// unread bytes makes the kernel reset the connection, and a reset discards the answer still
/// waiting in the proxy's receive queue: the proxy would see a reset, not the answer, and which
/// comes first is then a race between the two machines' schedulers.
async fn linger(mut stream: TcpStream) {
    let _ = stream.shutdown().await;
    let mut sink = [0u8; 16 * 1024];
    let _ = timeout(LINGER, async {
        while matches!(stream.read(&mut sink).await, Ok(n) if n > 0) {}
    })
    .await;
}

pub async fn fill(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 16 * 1024];
    match stream.read(&mut chunk).await {
        Ok(0) | Err(_) => false,
        Ok(read) => {
            buffer.extend_from_slice(&chunk[..read]);
            true
        }
    }
}

pub async fn read_head(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<(Seen, usize)> {
    loop {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut fields);
        if let httparse::Status::Complete(length) =
            request.parse(buffer).expect("proxy request parses")
        {
            let seen = Seen {
                method: request.method.unwrap().to_owned(),
                path: request.path.unwrap().to_owned(),
                headers: request
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect(),
                body: Vec::new(),
                connection: 0,
            };
            return Some((seen, length));
        }
        if !fill(stream, buffer).await {
            return None;
        }
    }
}

/// Reads a request body by its framing, decoding chunks.
pub async fn read_body(
    stream: &mut TcpStream,
    buffer: &mut Vec<u8>,
    seen: &Seen,
) -> Option<Vec<u8>> {
    if let Some(length) = seen.header("content-length") {
        let length: usize = length.parse().expect("a numeric Content-Length");
        while buffer.len() < length {
            if !fill(stream, buffer).await {
                return None;
            }
        }
        return Some(buffer.drain(..length).collect());
    }
    if seen.header("transfer-encoding") != Some("chunked") {
        return Some(Vec::new());
    }
    let mut body = Vec::new();
    loop {
        match httparse::parse_chunk_size(buffer).expect("a valid chunk size") {
            httparse::Status::Complete((line, 0)) => {
                while buffer.len() < line + 2 {
                    if !fill(stream, buffer).await {
                        return None;
                    }
                }
                assert_eq!(&buffer[line..line + 2], b"\r\n", "no trailers sent on");
                buffer.drain(..line + 2);
                return Some(body);
            }
            httparse::Status::Complete((line, size)) => {
                let end = line + size as usize + 2;
                while buffer.len() < end {
                    if !fill(stream, buffer).await {
                        return None;
                    }
                }
                assert_eq!(&buffer[end - 2..end], b"\r\n", "chunk data ends with CRLF");
                body.extend_from_slice(&buffer[line..end - 2]);
                buffer.drain(..end);
            }
            httparse::Status::Partial => {
                if !fill(stream, buffer).await {
                    return None;
                }
            }
        }
    }
}

/// A proxy in front of a runtime, and a browser-side session with it.
pub struct Front {
    pub proxy: AttachProxy,
    pub cookie: String,
}

impl Front {
    pub async fn new(runtime: SocketAddr) -> Front {
        Self::with_options(runtime, AttachOptions::default()).await
    }

    pub async fn with_options(runtime: SocketAddr, options: AttachOptions) -> Front {
        let proxy = AttachProxy::start_with_options(
            Sensitive::new(runtime),
            Sensitive::new(CANARY_TOKEN.to_owned()),
            options,
        )
        .await
        .expect("proxy starts");
        // Redeeming a code never reaches the runtime: the proxy answers it itself.
        let redeemed = raw_get(proxy_addr(&proxy), path_of(&proxy.mint_code()), &[]).await;
        assert_eq!(redeemed.status, 303);
        let cookie = redeemed
            .header("set-cookie")
            .expect("session cookie")
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        Front { proxy, cookie }
    }

    /// One browser connection to the proxy.
    pub async fn browser(&self) -> Browser {
        let addr = proxy_addr(&self.proxy);
        Browser {
            stream: TcpStream::connect(addr).await.unwrap(),
            host: addr.to_string(),
            cookie: self.cookie.clone(),
            buffer: Vec::new(),
        }
    }
}

/// A proxy in front of a scripted runtime.
pub struct Rig {
    pub runtime: Scripted,
    pub front: Front,
}

impl Rig {
    pub async fn start(script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Rig {
        Self::start_with(AttachOptions::default(), script).await
    }

    pub async fn start_with(
        options: AttachOptions,
        script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Rig {
        let runtime = Scripted::start(script).await;
        let front = Front::with_options(runtime.addr, options).await;
        assert_eq!(runtime.accepted(), 0);
        Rig { runtime, front }
    }

    pub async fn browser(&self) -> Browser {
        self.front.browser().await
    }
}

/// A runtime written out by hand: `serve` runs for each accepted connection. Returns its
/// address and how many connections it accepted.
pub fn hand_written_runtime<F, Fut>(serve: F) -> (SocketAddr, Arc<AtomicUsize>)
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = TcpListener::from_std(listener).unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(stream));
        }
    });
    (addr, accepted)
}

pub fn proxy_addr(proxy: &AttachProxy) -> SocketAddr {
    proxy
        .origin()
        .strip_prefix("http://")
        .unwrap()
        .parse()
        .unwrap()
}

/// A response as the browser got it.
#[derive(Debug)]
pub struct Got {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body ended by its framing (not cut off by a closed connection).
    pub complete: bool,
}

impl Got {
    pub fn header(&self, name: &str) -> Option<&str> {
        header_in(&self.headers, name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.header(name).is_some()
    }
}

/// A raw keep-alive browser connection, so a test sees exactly how each response is framed.
pub struct Browser {
    pub stream: TcpStream,
    pub host: String,
    pub cookie: String,
    pub buffer: Vec<u8>,
}

impl Browser {
    pub async fn get(&mut self, path: &str) -> Got {
        self.send("GET", path, &[], b"").await
    }

    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Got {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n",
            self.host, self.cookie
        )
        .into_bytes();
        if !matches!(method, "GET" | "HEAD") {
            // As a browser sends it with any unsafe request, which the proxy requires.
            request.extend_from_slice(format!("Origin: http://{}\r\n", self.host).as_bytes());
        }
        for (name, value) in headers {
            request.extend_from_slice(format!("{name}: {value}\r\n").as_bytes());
        }
        request.extend_from_slice(b"\r\n");
        request.extend_from_slice(body);
        self.stream.write_all(&request).await.unwrap();
        let got = timeout(STEP_TIMEOUT, self.read_response(method == "HEAD"))
            .await
            .expect("a response in time")
            .expect("a response head before the connection closed");
        assert_no_canary(&got.body, "body");
        for (name, value) in &got.headers {
            assert_no_canary(format!("{name}: {value}").as_bytes(), "header");
        }
        got
    }

    /// The next response; `None` if the proxy closed the connection before a complete head.
    pub async fn read_response(&mut self, head_request: bool) -> Option<Got> {
        let (status, headers, length) = loop {
            let mut fields = [httparse::EMPTY_HEADER; 64];
            let mut response = httparse::Response::new(&mut fields);
            if let httparse::Status::Complete(length) =
                response.parse(&self.buffer).expect("proxy response parses")
            {
                let headers: Vec<(String, String)> = response
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_owned(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                break (response.code.unwrap(), headers, length);
            }
            if !fill(&mut self.stream, &mut self.buffer).await {
                return None;
            }
        };
        self.buffer.drain(..length);
        let mut got = Got {
            status,
            headers,
            body: Vec::new(),
            complete: true,
        };
        if head_request || matches!(status, 204 | 304) {
            return Some(got);
        }
        if let Some(length) = got.header("content-length") {
            let length: usize = length.parse().unwrap();
            while self.buffer.len() < length {
                if !fill(&mut self.stream, &mut self.buffer).await {
                    got.complete = false;
                    got.body = std::mem::take(&mut self.buffer);
                    return Some(got);
                }
            }
            got.body = self.buffer.drain(..length).collect();
            return Some(got);
        }
        assert_eq!(got.header("transfer-encoding"), Some("chunked"), "{got:?}");
        loop {
            match httparse::parse_chunk_size(&self.buffer) {
                Ok(httparse::Status::Complete((line, 0))) if self.buffer.len() >= line + 2 => {
                    assert_eq!(&self.buffer[line..line + 2], b"\r\n");
                    self.buffer.drain(..line + 2);
                    return Some(got);
                }
                Ok(httparse::Status::Complete((line, size)))
                    if size > 0 && self.buffer.len() >= line + size as usize + 2 =>
                {
                    let end = line + size as usize;
                    got.body.extend_from_slice(&self.buffer[line..end]);
                    self.buffer.drain(..end + 2);
                    continue;
                }
                Err(_) => panic!("the proxy sent a bad chunk"),
                _ => {}
            }
            if !fill(&mut self.stream, &mut self.buffer).await {
                got.complete = false;
                return Some(got);
            }
        }
    }

    /// GETs `path` from a runtime whose response breaks off, and checks the browser never takes
    /// it for a whole one: the proxy either sends the head and cuts the body off, or (when it
    /// had not written the head yet) closes without a response; the connection closes either way.
    pub async fn get_cut_off(&mut self, path: &str) {
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nCookie: {}\r\n\r\n",
            self.host, self.cookie
        );
        self.stream.write_all(request.as_bytes()).await.unwrap();
        let got = timeout(STEP_TIMEOUT, self.read_response(false))
            .await
            .expect("the proxy answers or closes in time");
        if let Some(got) = got {
            assert_eq!(got.status, 200);
            assert!(!got.complete, "a broken body passed on as whole: {got:?}");
        }
        assert!(
            self.is_closed().await,
            "the connection is closed after a cut-off body"
        );
    }

    /// True once the proxy has closed this connection.
    pub async fn is_closed(&mut self) -> bool {
        let mut byte = [0u8; 1];
        matches!(
            timeout(STEP_TIMEOUT, self.stream.read(&mut byte)).await,
            Ok(Ok(0) | Err(_))
        )
    }
}

pub fn length_response(body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}
