//! The targets the client reaches the runtime through, and the native client's rows: sequential
//! round trips, 10 MB bodies and WebSocket echoes, with the targets taking turns request by
//! request so that drifting machine load hits them alike.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use attach_proxy::AttachProxy;
use bench_support::stats::{median, median_of_all, percentiles, us};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Empty};
use hyper::header::{HeaderName, HeaderValue};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::placement::{Parties, Threads};

/// Sequential requests per row for the latency percentiles (after `WARMUP` of them).
pub const SEQUENTIAL_REQUESTS: usize = 5_000;
/// WebSocket echo round trips per row.
pub const WS_ROUND_TRIPS: usize = 5_000;
/// Requests sent and discarded first so connection setup and lazy init are not measured.
const WARMUP: usize = 200;
/// Body size for the throughput row.
pub const BLOB_BYTES: u64 = 10 * 1024 * 1024;
/// How many 10 MB bodies are fetched per row.
pub const BLOB_REPEATS: usize = 20;

/// One way of reaching the runtime: directly, or through one of the proxies.
pub struct Target {
    pub name: &'static str,
    pub addr: SocketAddr,
    /// Headers that authenticate this route (token, cookie); kept out of argv.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The proxy between client and runtime, for CPU accounting (`None` for direct).
    pub middle: Option<Threads>,
}

pub async fn connect(target: &Target) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>> {
    let stream = tokio::net::TcpStream::connect(target.addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

pub fn request(target: &Target, path: &str) -> Request<Empty<Bytes>> {
    let mut request = Request::get(path)
        .header(hyper::header::HOST, target.addr.to_string())
        .body(Empty::new())
        .unwrap();
    for (name, value) in &target.headers {
        request.headers_mut().insert(name.clone(), value.clone());
    }
    request
}

/// Sequential `GET /api/health` round trips, one keep-alive connection per target. Targets take
/// turns request by request, so drifting machine load hits every target alike.
pub async fn interleaved_latency(targets: &[Target]) -> Vec<(f64, f64)> {
    let mut senders = Vec::new();
    for target in targets {
        senders.push(connect(target).await);
    }
    let mut samples = vec![Vec::with_capacity(SEQUENTIAL_REQUESTS); targets.len()];
    for i in 0..WARMUP + SEQUENTIAL_REQUESTS {
        for (t, target) in targets.iter().enumerate() {
            let sender = &mut senders[t];
            sender.ready().await.unwrap();
            let started = Instant::now();
            let response = sender
                .send_request(request(target, "/api/health"))
                .await
                .unwrap();
            assert_eq!(response.status(), 200, "{}", target.name);
            response.into_body().collect().await.unwrap();
            if i >= WARMUP {
                samples[t].push(started.elapsed());
            }
        }
    }
    samples.into_iter().map(p50_p99_us).collect()
}

/// p50 and p99 of round trips, in µs.
fn p50_p99_us(samples: Vec<Duration>) -> (f64, f64) {
    let [p50, p99] = percentiles(samples, [0.50, 0.99]);
    (us(p50), us(p99))
}

/// Per target: MB/s and CPU ms of client, runtime and proxy for one 10 MB body.
pub struct BlobSample {
    pub mb_per_s: f64,
    pub client_cpu_ms: f64,
    pub runtime_cpu_ms: f64,
    pub middle_cpu_ms: Option<f64>,
}

/// 10 MB bodies, one keep-alive connection per target, targets taking turns body by body; each
/// figure is the median over the bodies.
pub async fn interleaved_blob(targets: &[Target], parties: &Parties) -> Vec<BlobSample> {
    let mut senders = Vec::new();
    for target in targets {
        senders.push(connect(target).await);
    }
    let path = format!("/api/blob?bytes={BLOB_BYTES}");
    let mut samples: Vec<Vec<BlobSample>> = targets.iter().map(|_| Vec::new()).collect();
    let (client, runtime) = (parties.client_threads(), parties.runtime_threads());
    for _ in 0..BLOB_REPEATS {
        for (t, target) in targets.iter().enumerate() {
            let sender = &mut senders[t];
            sender.ready().await.unwrap();
            let cpu_before = (
                client.cpu_ns(),
                runtime.cpu_ns(),
                target.middle.map(Threads::cpu_ns),
            );
            let started = Instant::now();
            let response = sender.send_request(request(target, &path)).await.unwrap();
            assert_eq!(response.status(), 200, "{}", target.name);
            let mut body = response.into_body();
            let mut total = 0u64;
            while let Some(frame) = body.frame().await {
                if let Ok(data) = frame.unwrap().into_data() {
                    total += data.len() as u64;
                }
            }
            assert_eq!(total, BLOB_BYTES);
            let elapsed = started.elapsed();
            let ms = |before: u64, after: u64| after.saturating_sub(before) as f64 / 1e6;
            samples[t].push(BlobSample {
                mb_per_s: total as f64 / elapsed.as_secs_f64() / 1e6,
                client_cpu_ms: ms(cpu_before.0, client.cpu_ns()),
                runtime_cpu_ms: ms(cpu_before.1, runtime.cpu_ns()),
                middle_cpu_ms: target
                    .middle
                    .zip(cpu_before.2)
                    .map(|(middle, before)| ms(before, middle.cpu_ns())),
            });
        }
    }
    samples
        .into_iter()
        .map(|s| BlobSample {
            mb_per_s: median(s.iter().map(|b| b.mb_per_s).collect()),
            client_cpu_ms: median(s.iter().map(|b| b.client_cpu_ms).collect()),
            runtime_cpu_ms: median(s.iter().map(|b| b.runtime_cpu_ms).collect()),
            middle_cpu_ms: median_of_all(s.iter().map(|b| b.middle_cpu_ms).collect()),
        })
        .collect()
}

/// WebSocket echo round trips of a 32-byte text message, one socket per target, interleaved
/// like [`interleaved_latency`]. `origins[i]` is the `Origin` header for target `i`, if any.
pub async fn interleaved_websocket(
    targets: &[Target],
    origins: &[Option<String>],
) -> Vec<(f64, f64)> {
    let mut sockets = Vec::new();
    for (target, origin) in targets.iter().zip(origins) {
        let mut ws_request = format!("ws://{}/api/ws", target.addr)
            .into_client_request()
            .unwrap();
        for (name, value) in &target.headers {
            ws_request.headers_mut().insert(name.clone(), value.clone());
        }
        if let Some(origin) = origin {
            ws_request
                .headers_mut()
                .insert("origin", origin.parse().unwrap());
        }
        let (socket, _) = tokio_tungstenite::connect_async_with_config(ws_request, None, true)
            .await
            .unwrap();
        sockets.push(socket);
    }
    let payload = "x".repeat(32);
    let mut samples = vec![Vec::with_capacity(WS_ROUND_TRIPS); targets.len()];
    for i in 0..WARMUP + WS_ROUND_TRIPS {
        for (t, socket) in sockets.iter_mut().enumerate() {
            let started = Instant::now();
            socket.send(Message::text(payload.clone())).await.unwrap();
            let reply = socket.next().await.unwrap().unwrap();
            assert!(reply.is_text());
            if i >= WARMUP {
                samples[t].push(started.elapsed());
            }
        }
    }
    for mut socket in sockets {
        let _ = socket.close(None).await;
    }
    samples.into_iter().map(p50_p99_us).collect()
}

/// Trades a freshly minted one-time code for the session cookie, as a browser would.
pub async fn session_cookie(proxy: &AttachProxy) -> HeaderValue {
    let url = proxy.mint_code();
    let addr: SocketAddr = proxy
        .origin()
        .strip_prefix("http://")
        .unwrap()
        .parse()
        .unwrap();
    let target = Target {
        name: "attach",
        addr,
        headers: Vec::new(),
        middle: None,
    };
    let path = &url.as_str()[proxy.origin().len()..];
    let mut sender = connect(&target).await;
    let response = sender.send_request(request(&target, path)).await.unwrap();
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().parse().unwrap()
}
