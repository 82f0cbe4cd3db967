//! Attach proxy benchmark: direct vs attach-proxy vs nginx in front of the same demo runtime.
//!
//! Run with `cargo bench -p attach-proxy --bench attach_bench` (set `ATTACH_BENCH_SECONDS` to
//! change the wrk duration per row and round, default 2). Measures, in one run and on loopback only:
//! requests/s and latency under keep-alive load (wrk, if installed), sequential round-trip
//! latency on one keep-alive connection, throughput of a 10 MB body, and WebSocket echo round
//! trips. Secrets (token, session cookie) go to wrk and nginx through 0600 files in a temporary
//! directory, never on a command line.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use attach_proxy::AttachProxy;
use bytes::Bytes;
use demo_runtime::DemoConfig;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Empty};
use hyper::header::{HeaderName, HeaderValue};
use hyper::Request;
use hyper_util::rt::TokioIo;
use live_runtime::Sensitive;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

/// Sequential requests per row for the latency percentiles (after `WARMUP` of them).
const SEQUENTIAL_REQUESTS: usize = 5_000;
/// WebSocket echo round trips per row.
const WS_ROUND_TRIPS: usize = 5_000;
/// Requests sent and discarded first so connection setup and lazy init are not measured.
const WARMUP: usize = 200;
/// Body size for the throughput row.
const BLOB_BYTES: u64 = 10 * 1024 * 1024;
/// How many 10 MB bodies are fetched per row.
const BLOB_REPEATS: usize = 20;
/// Measurement rounds; each cell is the median over them.
const ROUNDS: usize = 7;
/// wrk connections: a handful, like one busy browser tab set, not a server load test.
const WRK_CONNECTIONS: u32 = 10;
/// Bound for waiting on nginx to listen (it has no readiness signal besides the socket).
const NGINX_START_TIMEOUT: Duration = Duration::from_secs(10);

struct Target {
    name: &'static str,
    addr: SocketAddr,
    /// Headers that authenticate this route (token, cookie); kept out of argv.
    headers: Vec<(HeaderName, HeaderValue)>,
}

#[derive(Default)]
struct Row {
    rps: Option<f64>,
    load_p50_us: Option<f64>,
    load_p99_us: Option<f64>,
    seq_p50_us: f64,
    seq_p99_us: f64,
    mb_per_s: f64,
    ws_p50_us: f64,
    ws_p99_us: f64,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1e6
}

async fn connect(target: &Target) -> hyper::client::conn::http1::SendRequest<Empty<Bytes>> {
    let stream = tokio::net::TcpStream::connect(target.addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

fn request(target: &Target, path: &str) -> Request<Empty<Bytes>> {
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
async fn interleaved_latency(targets: &[Target]) -> Vec<(f64, f64)> {
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
    samples.into_iter().map(percentiles).collect()
}

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    (percentile(&samples, 0.50), percentile(&samples, 0.99))
}

/// MB/s for 10 MB bodies, one keep-alive connection per target, targets taking turns body by
/// body; each cell is the median over the bodies.
async fn interleaved_blob(targets: &[Target]) -> Vec<f64> {
    let mut senders = Vec::new();
    for target in targets {
        senders.push(connect(target).await);
    }
    let path = format!("/api/blob?bytes={BLOB_BYTES}");
    let mut samples = vec![Vec::with_capacity(BLOB_REPEATS); targets.len()];
    for _ in 0..BLOB_REPEATS {
        for (t, target) in targets.iter().enumerate() {
            let sender = &mut senders[t];
            sender.ready().await.unwrap();
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
            samples[t].push(total as f64 / started.elapsed().as_secs_f64() / 1e6);
        }
    }
    samples.into_iter().map(median).collect()
}

/// WebSocket echo round trips of a 32-byte text message, one socket per target, interleaved
/// like [`interleaved_latency`]. `origins[i]` is the `Origin` header for target `i`, if any.
async fn interleaved_websocket(targets: &[Target], origins: &[Option<String>]) -> Vec<(f64, f64)> {
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
    samples.into_iter().map(percentiles).collect()
}

fn write_private(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn parse_wrk_latency(text: &str) -> Option<f64> {
    let (number, unit) = text
        .find(|c: char| c.is_ascii_alphabetic())
        .map(|i| text.split_at(i))?;
    let value: f64 = number.parse().ok()?;
    Some(match unit {
        "us" => value,
        "ms" => value * 1e3,
        "s" => value * 1e6,
        _ => return None,
    })
}

/// Runs wrk against `/api/health` with the target's headers set from a 0600 Lua script.
async fn wrk(target: &Target, dir: &Path, seconds: u64) -> Option<(f64, f64, f64)> {
    let script = dir.join(format!("{}.lua", target.name));
    let mut lua = String::new();
    for (name, value) in &target.headers {
        writeln!(
            lua,
            "wrk.headers[\"{}\"] = \"{}\"",
            name.as_str(),
            value.to_str().unwrap()
        )
        .unwrap();
    }
    write_private(&script, &lua);
    let output = tokio::process::Command::new("wrk")
        .arg("-t1")
        .arg(format!("-c{WRK_CONNECTIONS}"))
        .arg(format!("-d{seconds}s"))
        .arg("--latency")
        .arg("-s")
        .arg(&script)
        .arg(format!("http://{}/api/health", target.addr))
        .stdin(Stdio::null())
        .output()
        .await
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    if text.contains("Non-2xx") {
        panic!("wrk saw errors for {}:\n{text}", target.name);
    }
    let field = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|line| line.strip_prefix(prefix))
            .map(|rest| rest.trim().to_owned())
    };
    let rps: f64 = field("Requests/sec:")?.parse().ok()?;
    let p50 = parse_wrk_latency(&field("50%")?)?;
    let p99 = parse_wrk_latency(&field("99%")?)?;
    Some((rps, p50, p99))
}

struct Nginx {
    child: tokio::process::Child,
    addr: SocketAddr,
}

async fn start_nginx(dir: &Path, upstream: SocketAddr, token: &str) -> Option<Nginx> {
    let binary = Path::new("/usr/sbin/nginx");
    if !binary.exists() {
        return None;
    }
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let d = dir.display();
    let conf = format!(
        r#"daemon off;
master_process off;
worker_processes 1;
error_log {d}/nginx-error.log warn;
pid {d}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  keepalive_requests 1000000;
  upstream runtime {{ server {upstream}; keepalive 32; keepalive_requests 1000000; }}
  map $http_upgrade $connection_upgrade {{ default upgrade; '' ''; }}
  server {{
    listen {addr};
    location / {{
      proxy_pass http://runtime;
      proxy_http_version 1.1;
      proxy_set_header Authorization "Bearer {token}";
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_buffering off;
      proxy_read_timeout 1h;
    }}
  }}
}}
"#
    );
    let conf_path = dir.join("nginx.conf");
    write_private(&conf_path, &conf);
    let child = tokio::process::Command::new(binary)
        .arg("-p")
        .arg(dir)
        .arg("-c")
        .arg(&conf_path)
        .arg("-e")
        .arg(dir.join("nginx-error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    // nginx offers no readiness signal besides its socket, so probe it (bounded).
    let deadline = Instant::now() + NGINX_START_TIMEOUT;
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        if Instant::now() > deadline {
            eprintln!("nginx did not start; see {d}/nginx-error.log");
            return None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Some(Nginx { child, addr })
}

async fn session_cookie(proxy: &AttachProxy) -> HeaderValue {
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
    };
    let path = &url.as_str()[proxy.origin().len()..];
    let mut sender = connect(&target).await;
    let response = sender.send_request(request(&target, path)).await.unwrap();
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().parse().unwrap()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn median_opt(values: Vec<Option<f64>>) -> Option<f64> {
    let present: Vec<f64> = values.iter().flatten().copied().collect();
    (present.len() == values.len()).then(|| median(present))
}

fn median_row(rounds: &[Row]) -> Row {
    let m = |f: fn(&Row) -> f64| median(rounds.iter().map(f).collect());
    let mo = |f: fn(&Row) -> Option<f64>| median_opt(rounds.iter().map(f).collect());
    Row {
        rps: mo(|r| r.rps),
        load_p50_us: mo(|r| r.load_p50_us),
        load_p99_us: mo(|r| r.load_p99_us),
        seq_p50_us: m(|r| r.seq_p50_us),
        seq_p99_us: m(|r| r.seq_p99_us),
        mb_per_s: m(|r| r.mb_per_s),
        ws_p50_us: m(|r| r.ws_p50_us),
        ws_p99_us: m(|r| r.ws_p99_us),
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os(RUNTIME_ROLE_ENV).is_some() {
        return serve_runtime_process().await;
    }
    let seconds: u64 = std::env::var("ATTACH_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let load_before = load_average();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let token = hex_token();

    // The runtime runs in its own process, as real runtimes do: the proxy (in this process) and
    // nginx then each compete for CPU as a separate process, and nobody shares the runtime's
    // tokio workers.
    let (mut runtime, runtime_addr) = spawn_runtime_process(&token).await;
    let proxy = AttachProxy::start(Sensitive::new(runtime_addr), Sensitive::new(token.clone()))
        .await
        .unwrap();
    let proxy_addr: SocketAddr = proxy
        .origin()
        .strip_prefix("http://")
        .unwrap()
        .parse()
        .unwrap();
    let cookie = session_cookie(&proxy).await;
    let nginx = start_nginx(dir.path(), runtime_addr, &token).await;

    let mut bearer: HeaderValue = format!("Bearer {token}").parse().unwrap();
    bearer.set_sensitive(true);
    let mut targets = vec![
        Target {
            name: "direct",
            addr: runtime_addr,
            headers: vec![(hyper::header::AUTHORIZATION, bearer)],
        },
        Target {
            name: "attach-proxy",
            addr: proxy_addr,
            headers: vec![(hyper::header::COOKIE, cookie)],
        },
    ];
    if let Some(nginx) = &nginx {
        targets.push(Target {
            name: "nginx",
            addr: nginx.addr,
            headers: Vec::new(),
        });
    }

    // Load on a shared machine drifts, so every target is measured once per round, in rotated
    // order, and each throughput cell reports the median over the rounds.
    let mut rounds: Vec<Vec<Row>> = (0..targets.len()).map(|_| Vec::new()).collect();
    for round in 0..ROUNDS {
        for offset in 0..targets.len() {
            let index = (round + offset) % targets.len();
            let target = &targets[index];
            eprintln!("round {}/{ROUNDS}: {} ...", round + 1, target.name);
            let mut row = Row::default();
            if let Some((rps, p50, p99)) = wrk(target, dir.path(), seconds).await {
                row.rps = Some(rps);
                row.load_p50_us = Some(p50);
                row.load_p99_us = Some(p99);
            }
            rounds[index].push(row);
        }
    }
    let mut rows: Vec<Row> = rounds.iter().map(|r| median_row(r)).collect();
    eprintln!("interleaved latency and WebSocket round trips ...");
    let latency = interleaved_latency(&targets).await;
    let origins: Vec<Option<String>> = targets
        .iter()
        .map(|t| (t.name == "attach-proxy").then(|| proxy.origin()))
        .collect();
    let websocket = interleaved_websocket(&targets, &origins).await;
    eprintln!("interleaved 10 MB bodies ...");
    let blobs = interleaved_blob(&targets).await;
    for (row, mb_per_s) in rows.iter_mut().zip(blobs) {
        row.mb_per_s = mb_per_s;
    }
    for (row, ((seq_p50, seq_p99), (ws_p50, ws_p99))) in
        rows.iter_mut().zip(latency.into_iter().zip(websocket))
    {
        (row.seq_p50_us, row.seq_p99_us, row.ws_p50_us, row.ws_p99_us) =
            (seq_p50, seq_p99, ws_p50, ws_p99);
    }

    let names: Vec<&str> = targets.iter().map(|t| t.name).collect();
    let mut table = String::new();
    writeln!(table, "| metric | {} |", names.join(" | ")).unwrap();
    writeln!(table, "|---|{}", "---|".repeat(names.len())).unwrap();
    let mut line = |metric: &str, cell: &dyn Fn(&Row) -> String| {
        let cells: Vec<String> = rows.iter().map(cell).collect();
        writeln!(table, "| {metric} | {} |", cells.join(" | ")).unwrap();
    };
    line(
        &format!("req/s, GET /api/health, wrk -t1 -c{WRK_CONNECTIONS} -d{seconds}s keep-alive"),
        &|r| fmt_opt(r.rps, 0),
    );
    line("latency under that load p50 / p99 (µs)", &|r| {
        format!(
            "{} / {}",
            fmt_opt(r.load_p50_us, 0),
            fmt_opt(r.load_p99_us, 0)
        )
    });
    line(
        &format!(
            "sequential round trip, 1 keep-alive conn, p50 / p99 (µs, n={SEQUENTIAL_REQUESTS})"
        ),
        &|r| format!("{:.0} / {:.0}", r.seq_p50_us, r.seq_p99_us),
    );
    line(
        &format!("10 MB body throughput (MB/s, median of {BLOB_REPEATS} bodies)"),
        &|r| format!("{:.0}", r.mb_per_s),
    );
    line(
        &format!("WebSocket echo round trip p50 / p99 (µs, n={WS_ROUND_TRIPS})"),
        &|r| format!("{:.0} / {:.0}", r.ws_p50_us, r.ws_p99_us),
    );
    println!("{table}");
    println!(
        "req/s: median of {ROUNDS} wrk runs per target in rotated order; round trips and MB/s: targets interleaved request by request (MB/s: median per 10 MB body). Machine: {} cores; load average before {load_before}, after {}.",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!();

    let (direct, attach) = (&rows[0], &rows[1]);
    println!("Per round (spread shows how much the shared machine's load moved the numbers):");
    for (target, per_round) in targets.iter().zip(&rounds) {
        let rps: Vec<String> = per_round.iter().map(|r| fmt_opt(r.rps, 0)).collect();
        println!("- {}: req/s [{}]", target.name, rps.join(", "));
    }
    println!();
    println!("attach-proxy vs direct:");
    if let (Some(a), Some(d)) = (attach.rps, direct.rps) {
        println!("- req/s: {:.1}% of direct (target >= 90%)", 100.0 * a / d);
    }
    println!(
        "- added sequential p50: {:.0} µs (target <= 100 µs)",
        attach.seq_p50_us - direct.seq_p50_us
    );
    println!(
        "- 10 MB throughput: {:.1}% of direct (target >= 90%)",
        100.0 * attach.mb_per_s / direct.mb_per_s
    );
    println!(
        "- added WebSocket p50: {:.0} µs",
        attach.ws_p50_us - direct.ws_p50_us
    );
    if nginx.is_none() {
        println!("(nginx row missing: /usr/sbin/nginx not found or did not start)");
    }

    if let Some(mut nginx) = nginx {
        let _ = nginx.child.kill().await;
    }
    proxy.shutdown().await;
    drop(runtime.stdin.take());
    let _ = runtime.wait().await;
}

/// Environment variable that makes this binary serve the demo runtime instead of benchmarking.
const RUNTIME_ROLE_ENV: &str = "ATTACH_BENCH_RUNTIME_PROCESS";

/// Starts this binary again as a demo-runtime process. The token goes over stdin (not argv or
/// the environment); the child prints its address and serves until its stdin closes.
async fn spawn_runtime_process(token: &str) -> (tokio::process::Child, SocketAddr) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env(RUNTIME_ROLE_ENV, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("runtime process starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{token}\n").as_bytes())
        .await
        .unwrap();
    child.stdin = Some(stdin);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = lines
        .next_line()
        .await
        .unwrap()
        .expect("runtime process prints its address")
        .parse()
        .unwrap();
    (child, addr)
}

async fn serve_runtime_process() {
    use std::io::{BufRead, Read};
    let mut token = String::new();
    std::io::stdin().lock().read_line(&mut token).unwrap();
    let runtime = demo_runtime::serve(DemoConfig::new(
        "bench",
        Sensitive::new(token.trim().to_owned()),
    ))
    .await
    .unwrap();
    // The benchmark's private pipe, not a log: the parent needs the address to connect.
    println!("{}", runtime.local_addr().expose());
    // Serve until the parent closes our stdin (or dies).
    let _ =
        tokio::task::spawn_blocking(|| std::io::stdin().lock().read_to_end(&mut Vec::new())).await;
    runtime.shutdown().await;
}

fn hex_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}
