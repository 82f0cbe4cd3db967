//! Attach proxy benchmark: direct vs attach-proxy vs nginx in front of the same demo runtime.
//!
//! Run with `cargo bench -p attach-proxy --bench attach_bench` (set `ATTACH_BENCH_SECONDS` to
//! change the wrk duration per row and round, default 2). Measures, in one run and on loopback only:
//! requests/s and latency under keep-alive load (wrk, if installed), sequential round-trip
//! latency on one keep-alive connection, throughput of a 10 MB body, and WebSocket echo round
//! trips, plus the CPU time each party spends per request and per body. Secrets (token, session
//! cookie) go to wrk and nginx through 0600 files in a temporary directory, never on a command
//! line.
//!
//! Every row is measured twice (see [`Placement`]): unpinned, and CPU-isolated (client and runtime
//! share CPU 0, the proxy under test has CPU 1), because on a 2-core machine an unpinned proxy can
//! only take CPU from the client and the runtime. `ATTACH_BENCH_PLACEMENT=unpinned|isolated`
//! runs one of them only; `ATTACH_BENCH_CONNECTIONS` changes wrk's connection count (default 10).
//!
//! `cargo bench -p attach-proxy --bench attach_bench -- --instructions` instead counts the user-space
//! instructions the proxy and the runtime execute per request and per 10 MB body, each in its own
//! process under `valgrind --tool=callgrind`: a figure that does not move with the machine's load.
//! `-- --syscalls` counts their system calls the same way, under `strace -c` (the kernel side,
//! which callgrind does not see). `ATTACH_BENCH_PROFILE_DIR=DIR` keeps the profiles there (for
//! `callgrind_annotate`).

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Stdio;
use std::str::FromStr;
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
/// `ATTACH_BENCH_CONNECTIONS` overrides it, e.g. to see whether more requests in flight hide the
/// hand-offs between cores in the CPU-isolated rows.
const WRK_CONNECTIONS: u32 = 10;

fn wrk_connections() -> u32 {
    std::env::var("ATTACH_BENCH_CONNECTIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(WRK_CONNECTIONS)
}
/// Bound for waiting on nginx to listen (it has no readiness signal besides the socket).
const NGINX_START_TIMEOUT: Duration = Duration::from_secs(10);
/// Kernel clock ticks per second (`USER_HZ`, 100 on every Linux architecture we run on): the unit
/// of the CPU times wrk reads from `/proc/self/stat`.
const USER_HZ: f64 = 100.0;

/// How the benchmark's processes are placed on CPUs for one set of rows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Placement {
    /// No affinity: the scheduler spreads wrk, the runtime, the proxy and this process's client
    /// threads over all CPUs. On 2 cores, whatever a proxy spends comes out of client and runtime.
    Unpinned,
    /// Client (wrk, or this process's client threads) and runtime share CPU 0 for every target,
    /// direct included; the proxy under test (attach-proxy's thread, or nginx's one process) has
    /// CPU 1. "% of direct" then says whether a proxy with a core of its own keeps up with client
    /// and runtime, which is what it gets on a user's multi-core machine.
    Isolated,
}

impl Placement {
    fn title(self) -> &'static str {
        match self {
            Placement::Unpinned => "unpinned (all CPUs shared)",
            Placement::Isolated => "CPU-isolated (client + runtime on CPU 0, proxy on CPU 1)",
        }
    }
}

/// A set of threads whose CPU time (user + kernel, from `schedstat`) is sampled.
#[derive(Clone, Copy)]
enum Threads {
    /// Every thread of a process.
    Process(u32),
    /// One thread of a process.
    Thread { pid: u32, tid: u32 },
    /// Every thread of a process but one.
    ProcessExcept { pid: u32, tid: u32 },
}

fn task_ids(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Nanoseconds on CPU of one thread; 0 if it is gone.
fn thread_cpu_ns(pid: u32, tid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

impl Threads {
    fn cpu_ns(self) -> u64 {
        match self {
            Threads::Process(pid) => task_ids(pid).iter().map(|&t| thread_cpu_ns(pid, t)).sum(),
            Threads::Thread { pid, tid } => thread_cpu_ns(pid, tid),
            Threads::ProcessExcept { pid, tid } => task_ids(pid)
                .iter()
                .filter(|&&t| t != tid)
                .map(|&t| thread_cpu_ns(pid, t))
                .sum(),
        }
    }
}

/// The processes and threads of one benchmark run, for pinning and CPU accounting.
struct Parties {
    /// This process: the client threads (tokio workers, main) and attach-proxy's thread.
    bench: u32,
    /// attach-proxy's thread in this process (its single-threaded tokio runtime).
    proxy_thread: u32,
    runtime: u32,
    nginx: Option<u32>,
    /// The TCP relay process (see [`serve_relay_process`]).
    relay: u32,
}

impl Parties {
    fn runtime_threads(&self) -> Threads {
        Threads::Process(self.runtime)
    }

    /// This process's threads that act as the client (all but the proxy's).
    fn client_threads(&self) -> Threads {
        Threads::ProcessExcept {
            pid: self.bench,
            tid: self.proxy_thread,
        }
    }
}

/// The thread attach-proxy runs on: `AttachProxy::start` names it `attach-proxy-PORT` (the
/// kernel keeps the first 15 bytes of a thread name).
fn find_proxy_thread(pid: u32) -> u32 {
    let threads: Vec<u32> = task_ids(pid)
        .into_iter()
        .filter(|tid| {
            std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
                .is_ok_and(|comm| comm.starts_with("attach-proxy"))
        })
        .collect();
    assert_eq!(threads.len(), 1, "exactly one attach-proxy thread");
    threads[0]
}

/// `taskset -p -c CPUS PID` (with `-a`: every thread of the process). Only pids and CPU lists
/// go on the command line.
fn set_affinity(pid: u32, cpus: &str, all_threads: bool) {
    let mut command = std::process::Command::new("taskset");
    if all_threads {
        command.arg("-a");
    }
    let status = command
        .args(["-p", "-c", cpus, &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("taskset (util-linux) runs");
    assert!(status.success(), "taskset -p -c {cpus} {pid} failed");
}

/// Pins every party for `placement`. Threads created later (tokio's blocking pool, wrk's)
/// inherit the affinity of the thread that creates them.
fn place(parties: &Parties, placement: Placement, cpus: usize) {
    let all = format!("0-{}", cpus - 1);
    let (client, runtime, proxy) = match placement {
        Placement::Unpinned => (all.as_str(), all.as_str(), all.as_str()),
        Placement::Isolated => ("0", "0", "1"),
    };
    set_affinity(parties.bench, client, true);
    set_affinity(parties.proxy_thread, proxy, false);
    set_affinity(parties.runtime, runtime, true);
    if let Some(nginx) = parties.nginx {
        set_affinity(nginx, proxy, true);
    }
    set_affinity(parties.relay, proxy, true);
}

fn cpus_allowed(pid: u32, tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("Cpus_allowed_list:")
                    .map(|v| v.trim().to_owned())
            })
        })
        .unwrap_or_else(|| "?".to_owned())
}

/// "N threads on CPUS" for a set of threads, read back from the kernel, so the output shows the
/// placement that was in force rather than the one intended.
fn describe_affinity(pid: u32, tids: &[u32]) -> String {
    let mut lists: Vec<String> = tids.iter().map(|&t| cpus_allowed(pid, t)).collect();
    lists.sort();
    lists.dedup();
    format!("{} thread(s) on CPU {}", tids.len(), lists.join(" / "))
}

fn placement_report(parties: &Parties) -> String {
    let client: Vec<u32> = task_ids(parties.bench)
        .into_iter()
        .filter(|&t| t != parties.proxy_thread)
        .collect();
    let mut report = format!(
        "client threads of the bench process: {}; attach-proxy: {}; runtime process: {}",
        describe_affinity(parties.bench, &client),
        describe_affinity(parties.bench, &[parties.proxy_thread]),
        describe_affinity(parties.runtime, &task_ids(parties.runtime)),
    );
    if let Some(nginx) = parties.nginx {
        write!(
            report,
            "; nginx: {}",
            describe_affinity(nginx, &task_ids(nginx))
        )
        .unwrap();
    }
    write!(
        report,
        "; tcp-relay: {}",
        describe_affinity(parties.relay, &task_ids(parties.relay))
    )
    .unwrap();
    report
}

struct Target {
    name: &'static str,
    addr: SocketAddr,
    /// Headers that authenticate this route (token, cookie); kept out of argv.
    headers: Vec<(HeaderName, HeaderValue)>,
    /// The proxy between client and runtime, for CPU accounting (`None` for direct).
    middle: Option<Threads>,
}

#[derive(Default)]
struct Row {
    rps: Option<f64>,
    load_p50_us: Option<f64>,
    load_p99_us: Option<f64>,
    /// CPU µs per request under wrk: wrk itself, the runtime, the proxy.
    wrk_cpu_us: Option<f64>,
    runtime_cpu_us: Option<f64>,
    middle_cpu_us: Option<f64>,
    /// Of the CPU µs per request of wrk and the runtime, those spent in the kernel: what a hop
    /// between them changes, since their user-space work per request stays the same.
    wrk_kernel_us: Option<f64>,
    runtime_kernel_us: Option<f64>,
    /// Under wrk, % of one core busy with wrk + runtime, and with the proxy. Isolated, a proxy
    /// near 100 % is the bottleneck; neither near 100 % means the hand-offs between cores are.
    client_runtime_busy: Option<f64>,
    middle_busy: Option<f64>,
    /// Under wrk, % busy of CPU 0 and CPU 1 with anything (other builds included), from
    /// `/proc/stat`: tells a proxy short of CPU from a proxy waiting on hand-offs.
    cpu0_busy: Option<f64>,
    cpu1_busy: Option<f64>,
    seq_p50_us: f64,
    seq_p99_us: f64,
    mb_per_s: f64,
    /// CPU ms per 10 MB body: this process's client threads, the runtime, the proxy.
    blob_client_cpu_ms: f64,
    blob_runtime_cpu_ms: f64,
    blob_middle_cpu_ms: Option<f64>,
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

/// Per target: MB/s and CPU ms of client, runtime and proxy for one 10 MB body.
struct BlobSample {
    mb_per_s: f64,
    client_cpu_ms: f64,
    runtime_cpu_ms: f64,
    middle_cpu_ms: Option<f64>,
}

/// 10 MB bodies, one keep-alive connection per target, targets taking turns body by body; each
/// figure is the median over the bodies.
async fn interleaved_blob(targets: &[Target], parties: &Parties) -> Vec<BlobSample> {
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
            middle_cpu_ms: median_opt(s.iter().map(|b| b.middle_cpu_ms).collect()),
        })
        .collect()
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

/// What one wrk run measured.
struct WrkResult {
    rps: f64,
    p50_us: f64,
    p99_us: f64,
    /// CPU µs per request of wrk, the runtime and the proxy (`None` for direct).
    wrk_cpu_us: f64,
    runtime_cpu_us: f64,
    middle_cpu_us: Option<f64>,
    /// Of those, µs per request in the kernel (stime), for wrk and the runtime.
    wrk_kernel_us: f64,
    runtime_kernel_us: f64,
}

/// wrk's `done` hook prints the requests it completed and its own CPU time (utime + stime of
/// all its threads, in clock ticks, from `/proc/self/stat`), so CPU per request needs no
/// sampling of a process that is about to exit.
const WRK_DONE_HOOK: &str = r#"
done = function(summary, latency, requests)
  local f = io.open("/proc/self/stat")
  local stat = f:read("*a")
  f:close()
  local fields = {}
  for v in stat:match("%) (.*)"):gmatch("%S+") do fields[#fields + 1] = v end
  io.write(string.format("bench-requests: %d\n", summary.requests))
  io.write(string.format("bench-cpu-ticks: %d\n", tonumber(fields[12]) + tonumber(fields[13])))
  io.write(string.format("bench-kernel-ticks: %d\n", tonumber(fields[13])))
end
"#;

/// Runs wrk against `/api/health` with the target's headers set from a 0600 Lua script.
async fn wrk(
    target: &Target,
    parties: &Parties,
    placement: Placement,
    dir: &Path,
    seconds: u64,
) -> Option<WrkResult> {
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
    lua.push_str(WRK_DONE_HOOK);
    write_private(&script, &lua);
    // wrk would inherit CPU 0 from this process's client threads anyway; saying it keeps the
    // placement visible in one place.
    let mut command = match placement {
        Placement::Unpinned => tokio::process::Command::new("wrk"),
        Placement::Isolated => {
            let mut command = tokio::process::Command::new("taskset");
            command.args(["-c", "0", "wrk"]);
            command
        }
    };
    let runtime = parties.runtime_threads();
    let cpu_before = (runtime.cpu_ns(), target.middle.map(Threads::cpu_ns));
    let kernel_before = kernel_ticks(parties.runtime);
    let output = command
        .arg("-t1")
        .arg(format!("-c{}", wrk_connections()))
        .arg(format!("-d{seconds}s"))
        .arg("--latency")
        .arg("-s")
        .arg(&script)
        .arg(format!("http://{}/api/health", target.addr))
        .stdin(Stdio::null())
        .output()
        .await
        .ok()?;
    let cpu_after = (runtime.cpu_ns(), target.middle.map(Threads::cpu_ns));
    let kernel_after = kernel_ticks(parties.runtime);
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
    let p50_us = parse_wrk_latency(&field("50%")?)?;
    let p99_us = parse_wrk_latency(&field("99%")?)?;
    let requests: f64 = field("bench-requests:")?.parse().ok()?;
    let wrk_ticks: f64 = field("bench-cpu-ticks:")?.parse().ok()?;
    let wrk_kernel_ticks: f64 = field("bench-kernel-ticks:")?.parse().ok()?;
    let ticks_per_request_us = |ticks: f64| ticks / USER_HZ * 1e6 / requests.max(1.0);
    let per_request_us =
        |before: u64, after: u64| after.saturating_sub(before) as f64 / 1e3 / requests.max(1.0);
    Some(WrkResult {
        rps,
        p50_us,
        p99_us,
        wrk_cpu_us: ticks_per_request_us(wrk_ticks),
        wrk_kernel_us: ticks_per_request_us(wrk_kernel_ticks),
        runtime_kernel_us: ticks_per_request_us(kernel_after.saturating_sub(kernel_before) as f64),
        runtime_cpu_us: per_request_us(cpu_before.0, cpu_after.0),
        middle_cpu_us: cpu_before
            .1
            .zip(cpu_after.1)
            .map(|(before, after)| per_request_us(before, after)),
    })
}

/// Kernel time (stime) of every thread of a process so far, in clock ticks, from `/proc/PID/stat`.
fn kernel_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let (_, fields) = stat.rsplit_once(") ")?;
            fields.split_whitespace().nth(12)?.parse().ok()
        })
        .unwrap_or(0)
}

struct Nginx {
    child: tokio::process::Child,
    addr: SocketAddr,
    pid: u32,
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
    let pid = child.id()?;
    Some(Nginx { child, addr, pid })
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
        middle: None,
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
        wrk_cpu_us: mo(|r| r.wrk_cpu_us),
        runtime_cpu_us: mo(|r| r.runtime_cpu_us),
        middle_cpu_us: mo(|r| r.middle_cpu_us),
        wrk_kernel_us: mo(|r| r.wrk_kernel_us),
        runtime_kernel_us: mo(|r| r.runtime_kernel_us),
        client_runtime_busy: mo(|r| r.client_runtime_busy),
        middle_busy: mo(|r| r.middle_busy),
        cpu0_busy: mo(|r| r.cpu0_busy),
        cpu1_busy: mo(|r| r.cpu1_busy),
        mb_per_s: m(|r| r.mb_per_s),
        blob_client_cpu_ms: m(|r| r.blob_client_cpu_ms),
        blob_runtime_cpu_ms: m(|r| r.blob_runtime_cpu_ms),
        blob_middle_cpu_ms: mo(|r| r.blob_middle_cpu_ms),
        ws_p50_us: m(|r| r.ws_p50_us),
        ws_p99_us: m(|r| r.ws_p99_us),
    }
}

/// Per CPU (`cpuN` lines of `/proc/stat`): (busy, total) jiffies; busy is all but idle and iowait.
fn core_times() -> Vec<(u64, u64)> {
    std::fs::read_to_string("/proc/stat")
        .unwrap_or_default()
        .lines()
        .filter(|line| line.starts_with("cpu") && !line.starts_with("cpu "))
        .map(|line| {
            let fields: Vec<u64> = line
                .split_whitespace()
                .skip(1)
                .filter_map(|f| f.parse().ok())
                .collect();
            let total: u64 = fields.iter().sum();
            let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
            (total - idle, total)
        })
        .collect()
}

/// % busy per CPU between two [`core_times`] samples.
fn core_busy(before: &[(u64, u64)], after: &[(u64, u64)]) -> Vec<f64> {
    before
        .iter()
        .zip(after)
        .map(|(&(busy0, total0), &(busy1, total1))| {
            100.0 * busy1.saturating_sub(busy0) as f64 / total1.saturating_sub(total0).max(1) as f64
        })
        .collect()
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
    if std::env::var_os(PROXY_ROLE_ENV).is_some() {
        return serve_proxy_process().await;
    }
    if std::env::var_os(RELAY_ROLE_ENV).is_some() {
        return serve_relay_process().await;
    }
    if std::env::args().any(|arg| arg == "--instructions") {
        return count_per_message(Counter::Instructions).await;
    }
    if std::env::args().any(|arg| arg == "--syscalls") {
        return count_per_message(Counter::Syscalls).await;
    }
    let seconds: u64 = std::env::var("ATTACH_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    // Before any pinning: afterwards this process would only see the CPUs it is pinned to.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let placements = match std::env::var("ATTACH_BENCH_PLACEMENT").as_deref() {
        Ok("unpinned") => vec![Placement::Unpinned],
        Ok("isolated") => vec![Placement::Isolated],
        _ => vec![Placement::Unpinned, Placement::Isolated],
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let token = hex_token();

    // The runtime runs in its own process, as real runtimes do: the proxy (in this process) and
    // nginx then each compete for CPU as a separate process, and nobody shares the runtime's
    // tokio workers.
    let (mut runtime, runtime_addr) = spawn_runtime_process(&token, &[]).await;
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
    let (mut relay, relay_addr) = spawn_relay_process(runtime_addr).await;
    let bench = std::process::id();
    let parties = Parties {
        bench,
        proxy_thread: find_proxy_thread(bench),
        runtime: runtime.id().expect("runtime process runs"),
        nginx: nginx.as_ref().map(|n| n.pid),
        relay: relay.id().expect("relay process runs"),
    };

    let mut bearer: HeaderValue = format!("Bearer {token}").parse().unwrap();
    bearer.set_sensitive(true);
    let mut targets = vec![
        Target {
            name: "direct",
            addr: runtime_addr,
            headers: vec![(hyper::header::AUTHORIZATION, bearer.clone())],
            middle: None,
        },
        Target {
            name: "attach-proxy",
            addr: proxy_addr,
            headers: vec![(hyper::header::COOKIE, cookie)],
            middle: Some(Threads::Thread {
                pid: bench,
                tid: parties.proxy_thread,
            }),
        },
    ];
    if let Some(nginx) = &nginx {
        targets.push(Target {
            name: "nginx",
            addr: nginx.addr,
            headers: Vec::new(),
            middle: Some(Threads::Process(nginx.pid)),
        });
    }
    // The client sends the token itself here: the relay only copies bytes.
    targets.push(Target {
        name: "tcp-relay",
        addr: relay_addr,
        headers: vec![(hyper::header::AUTHORIZATION, bearer)],
        middle: Some(Threads::Process(parties.relay)),
    });
    let origins: Vec<Option<String>> = targets
        .iter()
        .map(|t| (t.name == "attach-proxy").then(|| proxy.origin()))
        .collect();

    for placement in placements {
        if placement == Placement::Isolated && cpus < 2 {
            println!("(CPU-isolated rows skipped: this machine has {cpus} CPU)");
            continue;
        }
        place(&parties, placement, cpus);
        let measurement =
            measure(&targets, &origins, &parties, placement, dir.path(), seconds).await;
        print_measurement(&targets, &measurement, placement, seconds, cpus);
    }
    if nginx.is_none() {
        println!("(nginx row missing: /usr/sbin/nginx not found or did not start)");
    }

    if let Some(mut nginx) = nginx {
        let _ = nginx.child.kill().await;
    }
    proxy.shutdown().await;
    drop(relay.stdin.take());
    let _ = relay.wait().await;
    drop(runtime.stdin.take());
    let _ = runtime.wait().await;
}

/// One placement's rows, with what the machine was doing around them.
struct Measurement {
    rows: Vec<Row>,
    rounds: Vec<Vec<Row>>,
    load_before: String,
    load_after: String,
    /// The CPU affinity of every party, read back after the rows were measured.
    affinity: String,
}

async fn measure(
    targets: &[Target],
    origins: &[Option<String>],
    parties: &Parties,
    placement: Placement,
    dir: &Path,
    seconds: u64,
) -> Measurement {
    let load_before = load_average();
    // Load on a shared machine drifts, so every target is measured once per round, in rotated
    // order, and each throughput cell reports the median over the rounds.
    let mut rounds: Vec<Vec<Row>> = (0..targets.len()).map(|_| Vec::new()).collect();
    for round in 0..ROUNDS {
        for offset in 0..targets.len() {
            let index = (round + offset) % targets.len();
            let target = &targets[index];
            eprintln!(
                "{placement:?} round {}/{ROUNDS}: {} ...",
                round + 1,
                target.name
            );
            let mut row = Row::default();
            let cores_before = core_times();
            let run = wrk(target, parties, placement, dir, seconds).await;
            let busy = core_busy(&cores_before, &core_times());
            (row.cpu0_busy, row.cpu1_busy) = (busy.first().copied(), busy.get(1).copied());
            if let Some(run) = run {
                row.rps = Some(run.rps);
                row.load_p50_us = Some(run.p50_us);
                row.load_p99_us = Some(run.p99_us);
                row.wrk_cpu_us = Some(run.wrk_cpu_us);
                row.runtime_cpu_us = Some(run.runtime_cpu_us);
                row.wrk_kernel_us = Some(run.wrk_kernel_us);
                row.runtime_kernel_us = Some(run.runtime_kernel_us);
                row.middle_cpu_us = run.middle_cpu_us;
                // µs per request × requests per second = µs busy per second; / 1e4 gives %.
                row.client_runtime_busy =
                    Some((run.wrk_cpu_us + run.runtime_cpu_us) * run.rps / 1e4);
                row.middle_busy = run.middle_cpu_us.map(|us| us * run.rps / 1e4);
            }
            rounds[index].push(row);
        }
    }
    let mut rows: Vec<Row> = rounds.iter().map(|r| median_row(r)).collect();
    eprintln!("{placement:?}: interleaved latency and WebSocket round trips ...");
    let latency = interleaved_latency(targets).await;
    let websocket = interleaved_websocket(targets, origins).await;
    eprintln!("{placement:?}: interleaved 10 MB bodies ...");
    let blobs = interleaved_blob(targets, parties).await;
    for (row, blob) in rows.iter_mut().zip(blobs) {
        row.mb_per_s = blob.mb_per_s;
        row.blob_client_cpu_ms = blob.client_cpu_ms;
        row.blob_runtime_cpu_ms = blob.runtime_cpu_ms;
        row.blob_middle_cpu_ms = blob.middle_cpu_ms;
    }
    for (row, ((seq_p50, seq_p99), (ws_p50, ws_p99))) in
        rows.iter_mut().zip(latency.into_iter().zip(websocket))
    {
        (row.seq_p50_us, row.seq_p99_us, row.ws_p50_us, row.ws_p99_us) =
            (seq_p50, seq_p99, ws_p50, ws_p99);
    }
    Measurement {
        rows,
        rounds,
        load_before,
        load_after: load_average(),
        affinity: placement_report(parties),
    }
}

fn print_measurement(
    targets: &[Target],
    measurement: &Measurement,
    placement: Placement,
    seconds: u64,
    cpus: usize,
) {
    let rows = &measurement.rows;
    println!("### {}", placement.title());
    println!();
    let names: Vec<&str> = targets.iter().map(|t| t.name).collect();
    let mut table = String::new();
    writeln!(table, "| metric | {} |", names.join(" | ")).unwrap();
    writeln!(table, "|---|{}", "---|".repeat(names.len())).unwrap();
    let mut line = |metric: &str, cell: &dyn Fn(&Row) -> String| {
        let cells: Vec<String> = rows.iter().map(cell).collect();
        writeln!(table, "| {metric} | {} |", cells.join(" | ")).unwrap();
    };
    line(
        &format!(
            "req/s, GET /api/health, wrk -t1 -c{} -d{seconds}s keep-alive",
            wrk_connections()
        ),
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
        "CPU per request under that load, wrk / runtime / proxy (µs)",
        &|r| {
            format!(
                "{} / {} / {}",
                fmt_opt(r.wrk_cpu_us, 1),
                fmt_opt(r.runtime_cpu_us, 1),
                r.middle_cpu_us
                    .map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
            )
        },
    );
    line("of which in the kernel, wrk / runtime (µs)", &|r| {
        format!(
            "{} / {}",
            fmt_opt(r.wrk_kernel_us, 1),
            fmt_opt(r.runtime_kernel_us, 1)
        )
    });
    line(
        "CPU busy under that load, wrk + runtime / proxy (% of one core)",
        &|r| {
            format!(
                "{} / {}",
                fmt_opt(r.client_runtime_busy, 0),
                r.middle_busy
                    .map_or_else(|| "-".to_owned(), |v| format!("{v:.0}"))
            )
        },
    );
    line(
        "CPU 0 / CPU 1 busy under that load, all processes (%)",
        &|r| format!("{} / {}", fmt_opt(r.cpu0_busy, 0), fmt_opt(r.cpu1_busy, 0)),
    );
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
    line("CPU per 10 MB body, client / runtime / proxy (ms)", &|r| {
        format!(
            "{:.1} / {:.1} / {}",
            r.blob_client_cpu_ms,
            r.blob_runtime_cpu_ms,
            r.blob_middle_cpu_ms
                .map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"))
        )
    });
    line(
        &format!("WebSocket echo round trip p50 / p99 (µs, n={WS_ROUND_TRIPS})"),
        &|r| format!("{:.0} / {:.0}", r.ws_p50_us, r.ws_p99_us),
    );
    println!("{table}");
    println!(
        "req/s: median of {ROUNDS} wrk runs per target in rotated order; round trips and MB/s: targets interleaved request by request (MB/s: median per 10 MB body); CPU: user + kernel time from /proc (schedstat; wrk's own /proc/self/stat), medians. Machine: {cpus} cores; load average before {}, after {}.",
        measurement.load_before, measurement.load_after
    );
    println!(
        "Placement read back from the kernel: {}.",
        measurement.affinity
    );
    println!();
    println!("Per round (spread shows how much the shared machine's load moved the numbers):");
    for (target, per_round) in targets.iter().zip(&measurement.rounds) {
        let rps: Vec<String> = per_round.iter().map(|r| fmt_opt(r.rps, 0)).collect();
        println!("- {}: req/s [{}]", target.name, rps.join(", "));
    }
    println!();
    let direct = &rows[0];
    for (target, row) in targets.iter().zip(rows).skip(1) {
        println!("{} vs direct ({placement:?}):", target.name);
        if let (Some(a), Some(d)) = (row.rps, direct.rps) {
            println!("- req/s: {:.1}% of direct (target >= 90%)", 100.0 * a / d);
        }
        println!(
            "- added sequential p50: {:.0} µs (target <= 100 µs)",
            row.seq_p50_us - direct.seq_p50_us
        );
        println!(
            "- 10 MB throughput: {:.1}% of direct (target >= 90%)",
            100.0 * row.mb_per_s / direct.mb_per_s
        );
        println!(
            "- added WebSocket p50: {:.0} µs",
            row.ws_p50_us - direct.ws_p50_us
        );
    }
    println!();
}

/// Environment variable that makes this binary serve the demo runtime instead of benchmarking.
const RUNTIME_ROLE_ENV: &str = "ATTACH_BENCH_RUNTIME_PROCESS";

/// Environment variable that makes this binary serve an attach proxy (for `--instructions`).
const PROXY_ROLE_ENV: &str = "ATTACH_BENCH_PROXY_PROCESS";

/// Environment variable that makes this binary serve a TCP relay (see [`serve_relay_process`]).
const RELAY_ROLE_ENV: &str = "ATTACH_BENCH_RELAY_PROCESS";

/// Buffer per direction of the TCP relay: enough for a request or a large read of a body.
const RELAY_BUFFER: usize = 256 * 1024;

/// Starts this binary again as a TCP relay to `upstream`; returns it and its address.
async fn spawn_relay_process(upstream: SocketAddr) -> (tokio::process::Child, SocketAddr) {
    spawn_listening_role(RELAY_ROLE_ENV, &[], &format!("{upstream}\n")).await
}

/// The floor under every proxy in the tables: a TCP relay that copies bytes both ways on one
/// thread (a single-threaded tokio runtime, one upstream connection per client connection,
/// `TCP_NODELAY` on both) and parses nothing, so it can neither check a session nor add the
/// token; the client sends the token itself. No HTTP proxy can do less per request, so "% of
/// direct" of this row bounds what any proxy gets on this machine in this placement. Serves
/// until stdin closes.
async fn serve_relay_process() {
    use std::io::{BufRead, Read};
    let mut upstream = String::new();
    std::io::stdin().lock().read_line(&mut upstream).unwrap();
    let upstream: SocketAddr = upstream.trim().parse().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    // The benchmark's private pipe: the parent needs the address to connect.
    println!("{}", listener.local_addr().unwrap());
    std::thread::Builder::new()
        .name("tcp-relay".to_owned())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((mut client, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(async move {
                        let Ok(mut runtime) = tokio::net::TcpStream::connect(upstream).await else {
                            return;
                        };
                        let _ = client.set_nodelay(true);
                        let _ = runtime.set_nodelay(true);
                        let _ = tokio::io::copy_bidirectional_with_sizes(
                            &mut client,
                            &mut runtime,
                            RELAY_BUFFER,
                            RELAY_BUFFER,
                        )
                        .await;
                    });
                }
            });
        })
        .unwrap();
    let _ =
        tokio::task::spawn_blocking(|| std::io::stdin().lock().read_to_end(&mut Vec::new())).await;
}

/// Starts this binary again as a demo-runtime process, under `wrapper` (e.g. valgrind) if not
/// empty. The token goes over stdin (not argv or the environment); the child prints its address
/// and serves until its stdin closes.
async fn spawn_runtime_process(
    token: &str,
    wrapper: &[String],
) -> (tokio::process::Child, SocketAddr) {
    spawn_listening_role(RUNTIME_ROLE_ENV, wrapper, &format!("{token}\n")).await
}

/// [`spawn_role`] for a role whose first line on stdout is the address it listens on.
async fn spawn_listening_role(
    role: &str,
    wrapper: &[String],
    input: &str,
) -> (tokio::process::Child, SocketAddr) {
    let (child, mut lines) = spawn_role(role, wrapper, input).await;
    let addr = lines
        .next_line()
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{role} child prints its address"))
        .parse()
        .unwrap();
    (child, addr)
}

type ChildLines = tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>;

/// Starts this binary again in `role`, writes `input` to its stdin (kept open: closing it stops
/// the child) and returns its stdout lines: a private pipe, not a log.
async fn spawn_role(
    role: &str,
    wrapper: &[String],
    input: &str,
) -> (tokio::process::Child, ChildLines) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let exe = std::env::current_exe().unwrap();
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(args).arg(&exe);
            command
        }
        None => tokio::process::Command::new(&exe),
    };
    let mut child = command
        .env(role, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("child process starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    child.stdin = Some(stdin);
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// Serves an attach proxy in this process until stdin closes. Reads the runtime's address and
/// token from stdin; prints the proxy's origin and one attach URL to the parent's private pipe.
async fn serve_proxy_process() {
    use std::io::{BufRead, Read, Write};
    let mut input = std::io::stdin().lock();
    let (mut addr, mut token) = (String::new(), String::new());
    input.read_line(&mut addr).unwrap();
    input.read_line(&mut token).unwrap();
    drop(input);
    let proxy = AttachProxy::start(
        Sensitive::new(addr.trim().parse().unwrap()),
        Sensitive::new(token.trim().to_owned()),
    )
    .await
    .unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", proxy.origin()).unwrap();
    writeln!(out, "{}", proxy.mint_code()).unwrap();
    out.flush().unwrap();
    drop(out);
    let _ =
        tokio::task::spawn_blocking(|| std::io::stdin().lock().read_to_end(&mut Vec::new())).await;
    proxy.shutdown().await;
}

/// Requests in every `--instructions` / `--syscalls` run; the measured runs add to them, so
/// start-up and shutdown cancel out in the difference.
const PROFILE_BASE_REQUESTS: usize = 100;
/// Extra sequential `GET /api/health` requests of the request run.
const PROFILE_EXTRA_REQUESTS: usize = 2_000;
/// Extra 10 MB bodies of the body run.
const PROFILE_EXTRA_BODIES: usize = 4;

/// What `--instructions` and `--syscalls` count in the runtime and the proxy process.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Counter {
    /// User-space instructions (callgrind's `Ir`): deterministic, blind to the kernel.
    Instructions,
    /// System calls by name (`strace -c`): the kernel work a message costs, counted, not timed.
    Syscalls,
}

impl Counter {
    fn wrapper(self, out: &Path) -> Vec<String> {
        let out = out.display();
        match self {
            Counter::Instructions => vec![
                "valgrind".to_owned(),
                "--tool=callgrind".to_owned(),
                format!("--callgrind-out-file={out}"),
                format!("--log-file={out}.log"),
            ],
            Counter::Syscalls => ["strace", "-f", "-c", "-o"]
                .iter()
                .map(|s| (*s).to_owned())
                .chain([out.to_string()])
                .collect(),
        }
    }

    /// `"total"` and, for syscalls, one entry per syscall name.
    fn read(self, out: &Path) -> std::collections::BTreeMap<String, u64> {
        let text = std::fs::read_to_string(out).unwrap();
        let mut counts = std::collections::BTreeMap::new();
        match self {
            Counter::Instructions => {
                let total = text
                    .lines()
                    .find_map(|line| {
                        line.strip_prefix("summary:")
                            .or(line.strip_prefix("totals:"))
                    })
                    .and_then(|v| u64::from_str(v.trim()).ok())
                    .unwrap_or_else(|| panic!("no instruction total in {}", out.display()));
                counts.insert("total".to_owned(), total);
            }
            Counter::Syscalls => {
                // `% time  seconds  usecs/call  calls  [errors]  syscall`, then a `total` row.
                for line in text.lines() {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    if let (Some(calls), Some(name)) = (fields.get(3), fields.last()) {
                        if let Ok(calls) = calls.parse() {
                            counts.insert((*name).to_owned(), calls);
                        }
                    }
                }
            }
        }
        counts
    }
}

/// `--instructions` / `--syscalls`: the runtime and an attach proxy, each in its own process
/// under callgrind or strace, driven through the proxy by a native client in this process. Three
/// runs (base, base + N requests, base + M bodies) give the count per request and per body by
/// difference.
async fn count_per_message(counter: Counter) {
    let kept = std::env::var_os("ATTACH_BENCH_PROFILE_DIR");
    let temp = tempfile::tempdir().unwrap();
    let dir = kept.as_ref().map_or(temp.path(), Path::new);
    std::fs::create_dir_all(dir).unwrap();
    let base = profiled_run(counter, dir, "base", 0, 0).await;
    let requests = profiled_run(counter, dir, "requests", PROFILE_EXTRA_REQUESTS, 0).await;
    let bodies = profiled_run(counter, dir, "bodies", 0, PROFILE_EXTRA_BODIES).await;
    let per = |run: &RunCounts, who: usize, key: &str, n: usize| {
        let count = |counts: &RunCounts| counts[who].get(key).copied().unwrap_or(0);
        count(run).saturating_sub(count(&base)) as f64 / n as f64
    };
    let what = match counter {
        Counter::Instructions => "instructions (callgrind Ir, user space)",
        Counter::Syscalls => "syscalls (strace -c)",
    };
    println!("| {what} | runtime | attach-proxy | proxy / runtime |");
    println!("|---|---|---|---|");
    let digits = match counter {
        Counter::Instructions => 0,
        Counter::Syscalls => 2,
    };
    let (runtime, proxy) = (
        per(&requests, 0, "total", PROFILE_EXTRA_REQUESTS),
        per(&requests, 1, "total", PROFILE_EXTRA_REQUESTS),
    );
    println!(
        "| per GET /api/health, sequential on one keep-alive conn (n={PROFILE_EXTRA_REQUESTS}) | {runtime:.digits$} | {proxy:.digits$} | {:.2} |",
        proxy / runtime
    );
    let (runtime, proxy) = (
        per(&bodies, 0, "total", PROFILE_EXTRA_BODIES),
        per(&bodies, 1, "total", PROFILE_EXTRA_BODIES),
    );
    println!(
        "| per 10 MB body (n={PROFILE_EXTRA_BODIES}) | {runtime:.digits$} | {proxy:.digits$} | {:.2} |",
        proxy / runtime
    );
    println!();
    if counter == Counter::Syscalls {
        for (who, name) in [(0, "runtime"), (1, "attach-proxy")] {
            let calls: Vec<String> = requests[who]
                .keys()
                .filter(|key| *key != "total")
                .map(|key| (key, per(&requests, who, key, PROFILE_EXTRA_REQUESTS)))
                .filter(|(_, n)| *n >= 0.05)
                .map(|(key, n)| format!("{key} {n:.2}"))
                .collect();
            println!("- {name}, per request: {}", calls.join(", "));
        }
        println!();
    }
    println!(
        "Totals: base run ({PROFILE_BASE_REQUESTS} requests) runtime {} / proxy {}; +{PROFILE_EXTRA_REQUESTS} requests runtime {} / proxy {}; +{PROFILE_EXTRA_BODIES} bodies runtime {} / proxy {}.",
        base[0]["total"], base[1]["total"], requests[0]["total"], requests[1]["total"], bodies[0]["total"], bodies[1]["total"]
    );
}

/// Counts of the runtime (`[0]`) and the proxy (`[1]`) process in one run.
type RunCounts = [std::collections::BTreeMap<String, u64>; 2];

async fn profiled_run(
    counter: Counter,
    dir: &Path,
    name: &str,
    requests: usize,
    bodies: usize,
) -> RunCounts {
    let token = hex_token();
    let out = |who: &str| dir.join(format!("{name}-{who}.out"));
    eprintln!("profiled run {name}: +{requests} requests, +{bodies} bodies ...");
    let (mut runtime, runtime_addr) =
        spawn_runtime_process(&token, &counter.wrapper(&out("runtime"))).await;
    let (mut proxy, mut lines) = spawn_role(
        PROXY_ROLE_ENV,
        &counter.wrapper(&out("proxy")),
        &format!("{runtime_addr}\n{token}\n"),
    )
    .await;
    let origin = lines.next_line().await.unwrap().expect("proxy origin");
    let url = lines.next_line().await.unwrap().expect("attach URL");
    let target = Target {
        name: "attach-proxy",
        addr: origin.strip_prefix("http://").unwrap().parse().unwrap(),
        headers: Vec::new(),
        middle: None,
    };
    let mut sender = connect(&target).await;
    let response = sender
        .send_request(request(&target, &url[origin.len()..]))
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    let target = Target {
        headers: vec![(
            hyper::header::COOKIE,
            cookie.split(';').next().unwrap().parse().unwrap(),
        )],
        ..target
    };
    for _ in 0..PROFILE_BASE_REQUESTS + requests {
        sender.ready().await.unwrap();
        let response = sender
            .send_request(request(&target, "/api/health"))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.unwrap();
    }
    for _ in 0..bodies {
        sender.ready().await.unwrap();
        let response = sender
            .send_request(request(&target, &format!("/api/blob?bytes={BLOB_BYTES}")))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body.len() as u64, BLOB_BYTES);
    }
    drop(sender);
    drop(proxy.stdin.take());
    assert!(
        proxy.wait().await.unwrap().success(),
        "proxy process failed"
    );
    drop(runtime.stdin.take());
    assert!(
        runtime.wait().await.unwrap().success(),
        "runtime process failed"
    );
    [counter.read(&out("runtime")), counter.read(&out("proxy"))]
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
