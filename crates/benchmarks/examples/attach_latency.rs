//! Attach, end to end: from the core's `attach` (what the `attach` IPC command and the tray menu
//! call) and from the CLI's `attach ID --no-open` to the first byte of the runtime's page in a
//! real headless Chromium, beside opening the runtime's page directly in the same browser.
//!
//! Run it inside a session with a keychain, e.g. the throwaway one of `scripts/test-env.sh`:
//!
//! ```text
//! scripts/test-env.sh cargo run --release -p benchmarks --example attach_latency -- \
//!     --runtimes 50 --bin target/release/supercode-tray
//! ```
//!
//! What it does, all real: starts `--runtimes` demo runtimes per secret store (this binary again,
//! each in its own process, registered through `live-runtime` with its token in the OS keychain
//! or in the opt-in file store), one [`Supercode`] core per store, and one headless Chromium
//! driven over the DevTools protocol (one tab, cache disabled). Then, runtime by runtime, the
//! stores taking turns, and `about:blank` before every visit:
//!
//! 1. **first attach**: `core.attach(id)` (no proxy yet: resolve, keychain, health check, proxy
//!    start, one-time code), then `desktop::open_in_browser` as the command does (with
//!    `SUPERCODE_BROWSER=true`, so the hand-off's process spawn is timed but nothing opens), then
//!    the URL is navigated to over CDP;
//! 2. **direct, first visit**: the runtime's own `/` with its bearer token added by the browser
//!    (`Network.setExtraHTTPHeaders`, cleared right after), on a new connection;
//! 3. **repeated attach**: the same as 1 with the proxy already running;
//! 4. **direct, repeated**: the same as 2, the browser's connection to the runtime kept alive;
//! 5. **bare redirect**: one more attach, its URL fetched by a bare HTTP/1.1 client on a new
//!    connection (connect → head of the `303`): the proxy's own part of the browser's first hop;
//! 6. with `--bin`, **CLI**: `supercode-tray attach ID --no-open` spawned, its first stdout line
//!    (the URL) read, navigated to, then the CLI stopped with SIGINT.
//!
//! Before all of it, the hand-off alone (`desktop::launch` of `true`, what `open_in_browser`
//! does: one `posix_spawn`) is timed from this process while it is still small, taking turns
//! with `open::with_detached` of `true` (the double fork it replaced); `--handoff-only` stops
//! after that.
//!
//! The tray's share (call → URL handed to the browser) is split with the `debug` spans the core
//! opens around each step (`attach_find`, `attach_resolve` and inside it `secret_store_get`,
//! `attach_health`, `attach_proxy_start`). The browser's share is split with CDP's own
//! timestamps (Chromium's monotonic clock is `CLOCK_MONOTONIC`, the clock this program reads;
//! the report says how many samples were out of order, which would show it is not): CDP
//! command → the browser starts the request, → the proxy's redirect from `/__attach/<code>`
//! arrives, → the first byte of the page's response (`receiveHeadersStart`).
//!
//! No token, address or attach URL is printed: tokens reach the runtimes over their stdin, the
//! browser over the DevTools socket.

use std::collections::BTreeMap;
use std::io::{BufRead, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bench_support::stats::percentile;
use futures_util::{SinkExt, StreamExt};
use live_runtime::{LiveRuntimeSource, ReceiptDir, SecretStore, Sensitive};
use serde_json::{json, Value};
use supercode_core::{Locations, Supercode};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::Message;

/// Environment variable that makes this binary serve one demo runtime instead of measuring.
const RUNTIME_ROLE_ENV: &str = "ATTACH_LATENCY_RUNTIME";

/// How long one navigation, one CDP call or one process start may take on a loaded machine
/// before the run fails rather than hangs.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// How long to wait for `about:blank` to finish loading between visits; it loads in
/// milliseconds, the bound only keeps a missed event from stalling the run.
const BLANK_TIMEOUT: Duration = Duration::from_secs(5);

/// The spans the core opens around the steps of an attach, in the order they run.
const PHASES: [&str; 5] = [
    "attach_find",
    "attach_resolve",
    "secret_store_get",
    "attach_health",
    "attach_proxy_start",
];

struct Args {
    runtimes: usize,
    bin: Option<PathBuf>,
    chromium: String,
    handoff_only: bool,
}

fn parse_args() -> Args {
    let mut args = Args {
        runtimes: 50,
        bin: None,
        chromium: "chromium".into(),
        handoff_only: false,
    };
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        let mut value = || argv.next().expect("a value");
        match arg.as_str() {
            "--runtimes" => args.runtimes = value().parse().unwrap(),
            "--bin" => args.bin = Some(std::fs::canonicalize(value()).unwrap()),
            "--chromium" => args.chromium = value(),
            "--handoff-only" => args.handoff_only = true,
            other => panic!("unknown argument {other}"),
        }
    }
    args
}

fn main() {
    if std::env::var_os(RUNTIME_ROLE_ENV).is_some() {
        serve_runtime();
        return;
    }
    let args = parse_args();
    // Set before any thread starts. `true` takes the URL like a browser would and exits: the
    // hand-off is timed, the page is then opened over CDP.
    std::env::set_var("SUPERCODE_BROWSER", "true");
    tracing::subscriber::set_global_default(tracing_subscriber::layer::SubscriberExt::with(
        tracing_subscriber::registry(),
        PhaseClock,
    ))
    .unwrap();
    // The app runs the core on a multi-threaded tokio runtime (Tauri's); so does this.
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(args));
}

// ---------------------------------------------------------------------------------------------
// The clock and the phase spans.

/// Seconds on `CLOCK_MONOTONIC`, the clock Chromium's CDP timestamps use on Linux.
fn now() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Durations of the core's attach spans closed since the last [`take_phases`], by span name.
static PHASE_LOG: Mutex<Vec<(&'static str, f64)>> = Mutex::new(Vec::new());

/// A tracing layer that times every span from creation to close (wall clock, across `.await`s).
struct PhaseClock;

struct Opened(f64);

impl<S> tracing_subscriber::Layer<S> for PhaseClock
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        _: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Opened(now()));
        }
    }

    fn on_close(&self, id: tracing::span::Id, ctx: tracing_subscriber::layer::Context<'_, S>) {
        if let Some(span) = ctx.span(&id) {
            let name = span.metadata().name();
            if let Some(Opened(at)) = span.extensions().get::<Opened>() {
                if PHASES.contains(&name) {
                    PHASE_LOG.lock().unwrap().push((name, now() - at));
                }
            }
        }
    }
}

fn take_phases() -> BTreeMap<&'static str, f64> {
    let mut phases = BTreeMap::new();
    for (name, secs) in PHASE_LOG.lock().unwrap().drain(..) {
        *phases.entry(name).or_insert(0.0) += secs;
    }
    phases
}

// ---------------------------------------------------------------------------------------------
// The demo runtimes.

/// One demo runtime in its own process; closing its stdin stops it (it removes its receipt and
/// its token on the way out).
struct Runtime {
    child: tokio::process::Child,
    endpoint: String,
    address: Sensitive<SocketAddr>,
    token: Sensitive<String>,
}

/// The runtime role: serves a demo runtime, registers it in the receipt directory and secret
/// store the environment names, prints its endpoint and address to the parent's private pipe,
/// and serves until stdin closes. The token comes over stdin.
fn serve_runtime() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut token = String::new();
        std::io::stdin().lock().read_line(&mut token).unwrap();
        let token = Sensitive::new(token.trim().to_owned());
        let name = std::env::var("ATTACH_LATENCY_NAME").unwrap();
        let server = demo_runtime::serve(demo_runtime::DemoConfig::new(&*name, token.clone()))
            .await
            .unwrap();
        let receipts = ReceiptDir::from_env().unwrap();
        let source = LiveRuntimeSource {
            session_id: format!("bench:{name}"),
            workspace: std::env::current_dir().unwrap(),
        };
        let address = server.local_addr();
        let registration = live_runtime::register_live_runtime(
            &receipts,
            &format!("bench:{name}"),
            source,
            *address.expose(),
            token,
        )
        .unwrap();
        println!("{}", registration.endpoint());
        println!("{}", address.expose());
        let _ =
            tokio::task::spawn_blocking(|| std::io::stdin().lock().read_to_end(&mut Vec::new()))
                .await;
        drop(registration);
        server.shutdown().await;
    });
}

/// 256 random bits, hex-encoded, as the demo runtime generates its own.
fn random_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

async fn spawn_runtime(env: &[(String, String)], name: String) -> Runtime {
    let token = random_token();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .env(RUNTIME_ROLE_ENV, "1")
        .env("ATTACH_LATENCY_NAME", &name)
        .envs(env.iter().cloned())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("{token}\n").as_bytes())
        .await
        .unwrap();
    child.stdin = Some(stdin);
    let mut lines_of_child = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut lines = Vec::new();
    for _ in 0..2 {
        let line = tokio::time::timeout(STEP_TIMEOUT, lines_of_child.next_line())
            .await
            .expect("the runtime starts")
            .unwrap()
            .expect("the runtime prints its endpoint and address");
        lines.push(line);
    }
    let address = Sensitive::new(lines[1].parse().unwrap());
    let endpoint = lines.swap_remove(0);
    Runtime {
        child,
        endpoint,
        address,
        token: Sensitive::new(token),
    }
}

// ---------------------------------------------------------------------------------------------
// The secret stores, each with its own runtimes and core.

struct Store {
    name: &'static str,
    env: Vec<(String, String)>,
    core: Supercode,
    runtimes: Vec<Runtime>,
}

async fn open_store(name: &'static str, root: &Path, runtimes: usize) -> Option<Store> {
    let secrets = match name {
        "keychain" => SecretStore::keychain(),
        _ => SecretStore::file(root.join("secrets")),
    };
    if let Err(e) = secrets.probe() {
        println!("{name}: skipped, the store does not work here ({e})");
        return None;
    }
    let p = |dir: &str| root.join(dir).display().to_string();
    let mut env = vec![
        ("SUPERCODE_RUNTIME_DIR".to_owned(), p("receipts")),
        ("SUPERCODE_SECRET_STORE".to_owned(), name.to_owned()),
        ("CANON_HOME".to_owned(), p("canon")),
        ("SUPERCODE_LOG_DIR".to_owned(), p("logs")),
        ("SUPERCODE_STATE_DIR".to_owned(), p("state")),
    ];
    if name == "file" {
        env.push(("SUPERCODE_SECRET_DIR".to_owned(), p("secrets")));
    }
    for dir in ["canon", "logs", "state"] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    let locations = Locations {
        receipts: ReceiptDir::new(root.join("receipts"), secrets),
        canon: canon_local::CanonHome::at(root.join("canon")).unwrap(),
        log_dir: root.join("logs"),
        state_dir: root.join("state"),
    };
    let started = futures_util::future::join_all(
        (0..runtimes).map(|i| spawn_runtime(&env, format!("{name}-{i}"))),
    )
    .await;
    Some(Store {
        name,
        env,
        core: Supercode::without_events(locations),
        runtimes: started,
    })
}

// ---------------------------------------------------------------------------------------------
// A small DevTools protocol client over one WebSocket.

type Pending = Arc<Mutex<BTreeMap<u64, oneshot::Sender<Value>>>>;

struct Browser {
    child: tokio::process::Child,
    outgoing: mpsc::UnboundedSender<Message>,
    pending: Pending,
    events: mpsc::UnboundedReceiver<(f64, Value)>,
    next_id: AtomicU64,
    session: String,
    _profile: tempfile::TempDir,
}

/// One navigation as the browser saw it, every time in seconds on `CLOCK_MONOTONIC`.
struct Visit {
    /// The CDP `Page.navigate` was sent.
    sent: f64,
    /// The browser started the document request (`Network.requestWillBeSent`).
    request: f64,
    /// The redirect's response arrived (the next `requestWillBeSent`), if there was one.
    redirect: Option<f64>,
    /// The first byte of the final document's response.
    first_byte: f64,
    status: u64,
}

impl Browser {
    async fn launch(program: &str) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let child = tokio::process::Command::new(program)
            .args([
                "--headless=new",
                "--no-sandbox",
                "--remote-debugging-port=0",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromium starts (install Debian's chromium, or pass --chromium PATH)");
        // Chromium writes its port and browser target path here once it listens.
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = now() + STEP_TIMEOUT.as_secs_f64();
        let ws_url = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(port), Some(path)) = (lines.next(), lines.next()) {
                    break format!("ws://127.0.0.1:{port}{path}");
                }
            }
            assert!(now() < deadline, "chromium did not open its DevTools port");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        let (socket, _) = tokio_tungstenite::connect_async(ws_url).await.unwrap();
        let (mut sink, mut stream) = socket.split();
        let (outgoing, mut to_send) = mpsc::unbounded_channel::<Message>();
        tokio::spawn(async move {
            while let Some(message) = to_send.recv().await {
                if sink.send(message).await.is_err() {
                    break;
                }
            }
        });
        let pending: Pending = Arc::default();
        let (events_tx, events) = mpsc::unbounded_channel();
        let replies = pending.clone();
        tokio::spawn(async move {
            while let Some(Ok(message)) = stream.next().await {
                let at = now();
                let Message::Text(text) = message else {
                    continue;
                };
                let value: Value = serde_json::from_str(&text).unwrap();
                match value.get("id").and_then(Value::as_u64) {
                    Some(id) => {
                        if let Some(reply) = replies.lock().unwrap().remove(&id) {
                            let _ = reply.send(value);
                        }
                    }
                    None => {
                        let _ = events_tx.send((at, value));
                    }
                }
            }
        });
        let mut browser = Browser {
            child,
            outgoing,
            pending,
            events,
            next_id: AtomicU64::new(1),
            session: String::new(),
            _profile: profile,
        };
        let target = browser
            .call(
                "Target.createTarget",
                json!({ "url": "about:blank" }),
                false,
            )
            .await;
        let attached = browser
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target["targetId"], "flatten": true }),
                false,
            )
            .await;
        browser.session = attached["sessionId"].as_str().unwrap().to_owned();
        browser.call("Page.enable", json!({}), true).await;
        browser.call("Network.enable", json!({}), true).await;
        browser
            .call(
                "Network.setCacheDisabled",
                json!({ "cacheDisabled": true }),
                true,
            )
            .await;
        browser
    }

    async fn call(&self, method: &str, params: Value, on_page: bool) -> Value {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if on_page {
            message["sessionId"] = json!(self.session);
        }
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(id, tx);
        self.outgoing
            .send(Message::Text(message.to_string().into()))
            .unwrap();
        let reply = tokio::time::timeout(STEP_TIMEOUT, rx)
            .await
            .unwrap_or_else(|_| panic!("{method}: no reply"))
            .unwrap();
        if let Some(error) = reply.get("error") {
            panic!("{method}: {error}");
        }
        reply["result"].clone()
    }

    /// Leaves the current page for `about:blank` and waits until it has loaded, so the next
    /// visit starts from an idle tab.
    async fn blank(&mut self) {
        self.call("Page.navigate", json!({ "url": "about:blank" }), true)
            .await;
        let _ = tokio::time::timeout(BLANK_TIMEOUT, async {
            while let Some((_, event)) = self.events.recv().await {
                if event["method"] == "Page.loadEventFired" {
                    break;
                }
            }
        })
        .await;
        while self.events.try_recv().is_ok() {}
    }

    /// Navigates to `url` (with `authorization` added to every request when given) and waits
    /// for the final document's response.
    async fn visit(&mut self, url: &str, authorization: Option<&Sensitive<String>>) -> Visit {
        self.blank().await;
        if let Some(token) = authorization {
            let header = format!("Bearer {}", token.expose());
            self.call(
                "Network.setExtraHTTPHeaders",
                json!({ "headers": { "Authorization": header } }),
                true,
            )
            .await;
        }
        let sent = now();
        let navigated = self
            .call("Page.navigate", json!({ "url": url }), true)
            .await;
        assert!(
            navigated.get("errorText").is_none(),
            "navigation failed: {}",
            navigated["errorText"]
        );
        let (mut request, mut redirect) = (None, None);
        let visit = tokio::time::timeout(STEP_TIMEOUT, async {
            while let Some((_, event)) = self.events.recv().await {
                let params = &event["params"];
                if params["type"] != "Document" {
                    continue;
                }
                match event["method"].as_str() {
                    Some("Network.requestWillBeSent") => {
                        let at = params["timestamp"].as_f64().unwrap();
                        if params.get("redirectResponse").is_some() {
                            redirect = Some(at);
                        } else {
                            request.get_or_insert(at);
                        }
                    }
                    Some("Network.responseReceived") => {
                        let response = &params["response"];
                        let timing = &response["timing"];
                        let start = timing["requestTime"].as_f64().unwrap();
                        let offset = timing["receiveHeadersStart"]
                            .as_f64()
                            .filter(|ms| *ms >= 0.0)
                            .unwrap_or_else(|| timing["receiveHeadersEnd"].as_f64().unwrap());
                        return Visit {
                            sent,
                            request: request.expect("the request was seen before its response"),
                            redirect,
                            first_byte: start + offset / 1e3,
                            status: response["status"].as_u64().unwrap(),
                        };
                    }
                    Some("Network.loadingFailed") => panic!("the page did not load: {params}"),
                    _ => {}
                }
            }
            panic!("the browser went away");
        })
        .await
        .expect("the page answers");
        if authorization.is_some() {
            self.call(
                "Network.setExtraHTTPHeaders",
                json!({ "headers": {} }),
                true,
            )
            .await;
        }
        visit
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/// One attach or direct visit, in seconds.
struct Sample {
    /// Call → URL handed to the browser (`None` for direct visits).
    tray: Option<f64>,
    /// Of which `core.attach` (the rest is the hand-off's process spawn).
    core: Option<f64>,
    phases: BTreeMap<&'static str, f64>,
    visit: Visit,
}

impl Sample {
    /// Call (or, direct, CDP command) → first byte of the page.
    fn end_to_end(&self) -> f64 {
        self.tray.unwrap_or(0.0) + (self.visit.first_byte - self.visit.sent)
    }
}

/// Everything collected, by row name.
#[derive(Default)]
struct Rows(BTreeMap<String, Vec<Sample>>);

impl Rows {
    fn push(&mut self, row: String, sample: Sample) {
        assert_eq!(
            sample.visit.status, 200,
            "{row}: the runtime's page answers 200"
        );
        self.0.entry(row).or_default().push(sample);
    }
}

async fn attach_once(store: &Store, index: usize, browser: &mut Browser) -> Sample {
    let endpoint = &store.runtimes[index].endpoint;
    take_phases();
    let t0 = now();
    let url = store.core.attach(endpoint).await.unwrap();
    let t1 = now();
    supercode_core::desktop::open_in_browser(&url)
        .await
        .unwrap();
    let t2 = now();
    let phases = take_phases();
    let visit = browser.visit(url.as_str(), None).await;
    assert!(visit.redirect.is_some(), "an attach URL redirects once");
    Sample {
        tray: Some(t2 - t0),
        core: Some(t1 - t0),
        phases,
        visit,
    }
}

async fn direct_once(store: &Store, index: usize, browser: &mut Browser) -> Sample {
    let runtime = &store.runtimes[index];
    let url = format!("http://{}/", runtime.address.expose());
    let visit = browser.visit(&url, Some(&runtime.token)).await;
    Sample {
        tray: None,
        core: None,
        phases: BTreeMap::new(),
        visit,
    }
}

/// The redirect hop without a browser: a fresh one-time URL fetched by a bare HTTP/1.1 client on
/// a new connection, from `connect` to the end of the `303`'s head. What the proxy itself takes
/// for the hop the browser makes first.
async fn bare_redirect_once(store: &Store, index: usize) -> f64 {
    use tokio::io::AsyncReadExt;
    let url = store
        .core
        .attach(&store.runtimes[index].endpoint)
        .await
        .unwrap();
    let rest = url.as_str().strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap());
    let t0 = now();
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nSec-Fetch-Site: none\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(STEP_TIMEOUT, stream.read(&mut buf))
            .await
            .expect("the proxy answers")
            .unwrap();
        assert!(n > 0, "the proxy closed the connection");
        head.extend_from_slice(&buf[..n]);
    }
    let t1 = now();
    assert!(head.starts_with(b"HTTP/1.1 303"), "the code is redeemed");
    t1 - t0
}

/// `supercode-tray attach ID --no-open`, spawned: time to its URL on stdout, then the browser.
async fn cli_once(store: &Store, index: usize, bin: &Path, browser: &mut Browser) -> Sample {
    let endpoint = &store.runtimes[index].endpoint;
    let t0 = now();
    let mut child = tokio::process::Command::new(bin)
        .args(["attach", endpoint, "--no-open"])
        .envs(store.env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(STEP_TIMEOUT, lines.next_line())
        .await
        .expect("the CLI prints its URL")
        .unwrap()
        .expect("the CLI prints its URL");
    let t1 = now();
    let visit = browser.visit(&url, None).await;
    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = tokio::time::timeout(STEP_TIMEOUT, child.wait())
        .await
        .expect("the CLI stops on SIGINT")
        .unwrap();
    assert!(status.success(), "the CLI ends cleanly on SIGINT: {status}");
    Sample {
        tray: Some(t1 - t0),
        core: None,
        phases: BTreeMap::new(),
        visit,
    }
}

async fn run(args: Args) {
    let root = tempfile::tempdir().unwrap();
    println!(
        "attach_latency: {} runtimes per store, chromium {}, CLI {}",
        args.runtimes,
        args.chromium,
        args.bin
            .as_ref()
            .map_or("not measured (no --bin)".into(), |b| b
                .display()
                .to_string())
    );
    // The hand-off alone, before any runtime or browser runs, from this process while it is
    // still small: `open`'s detached spawn of `true` (a double fork, what `open_in_browser` did
    // before) beside `desktop::launch` of `true` (one `posix_spawn` in its own process group,
    // reaped by a thread: what it does now), taking turns.
    let (mut handoff, mut spawned) = (Vec::new(), Vec::new());
    for _ in 0..args.runtimes.max(50) {
        let t0 = now();
        open::with_detached("http://127.0.0.1:9/", "true").unwrap();
        handoff.push(now() - t0);
        let t0 = now();
        supercode_core::desktop::launch("http://127.0.0.1:9/", Some("true")).unwrap();
        spawned.push(now() - t0);
    }
    println!(
        "hand-off alone, p50 / p99 ms: open::with_detached of `true` (the double fork) {}; desktop::launch of `true` (what open_in_browser does) {}",
        p50_p99(handoff),
        p50_p99(spawned)
    );
    if args.handoff_only {
        return;
    }
    let mut stores = Vec::new();
    for name in ["keychain", "file"] {
        let dir = root.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(store) = open_store(name, &dir, args.runtimes).await {
            stores.push(store);
        }
    }
    assert!(!stores.is_empty(), "no secret store works here");
    let mut browser = Browser::launch(&args.chromium).await;
    // One warm-up visit of each kind, not counted: the browser's first navigation pays for its
    // network service and renderer start.
    for store in &stores {
        let last = store.runtimes.len() - 1;
        direct_once(store, last, &mut browser).await;
    }

    let mut rows = Rows::default();
    let mut bare: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let load_before = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    for index in 0..args.runtimes {
        for store in &stores {
            let name = store.name;
            let first = attach_once(store, index, &mut browser).await;
            rows.push(format!("{name}: first attach (proxy started)"), first);
            let direct = direct_once(store, index, &mut browser).await;
            rows.push(format!("{name}: direct, first visit"), direct);
            let repeated = attach_once(store, index, &mut browser).await;
            rows.push(format!("{name}: repeated attach (proxy reused)"), repeated);
            let direct = direct_once(store, index, &mut browser).await;
            rows.push(format!("{name}: direct, repeated"), direct);
            bare.entry(name)
                .or_default()
                .push(bare_redirect_once(store, index).await);
            if let Some(bin) = &args.bin {
                let cli = cli_once(store, index, bin, &mut browser).await;
                rows.push(format!("{name}: CLI attach --no-open"), cli);
            }
        }
    }
    let load_after = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    report(&rows);
    for (name, samples) in bare {
        println!(
            "{name}: redirect hop from a bare HTTP client (new connection, connect → 303 head), p50 / p99 ms over {}: {}",
            samples.len(),
            p50_p99(samples)
        );
    }
    println!(
        "Load average before: {}; after: {}",
        load_before.trim(),
        load_after.trim()
    );

    for store in stores {
        store.core.shutdown().await;
        for mut runtime in store.runtimes {
            drop(runtime.child.stdin.take());
            let _ = tokio::time::timeout(STEP_TIMEOUT, runtime.child.wait()).await;
        }
    }
    let _ = browser.child.kill().await;
}

// ---------------------------------------------------------------------------------------------
// The report.

fn p50_p99(mut values: Vec<f64>) -> String {
    if values.is_empty() {
        return "-".into();
    }
    values.sort_by(f64::total_cmp);
    format!(
        "{:.2} / {:.2}",
        percentile(&values, 0.5) * 1e3,
        percentile(&values, 0.99) * 1e3
    )
}

fn report(rows: &Rows) {
    println!();
    println!("All times in ms, p50 / p99 over n samples.");
    println!();
    println!("| row | n | call → URL handed to the browser | of which core.attach | CDP command → browser starts request | → redirect from /__attach/ | → first byte of the page | call → first byte |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut out_of_order = 0;
    for (name, samples) in &rows.0 {
        for s in samples {
            let v = &s.visit;
            if v.request < v.sent
                || v.first_byte < v.request
                || v.redirect.is_some_and(|r| r < v.request)
            {
                out_of_order += 1;
            }
        }
        let col =
            |f: &dyn Fn(&Sample) -> Option<f64>| p50_p99(samples.iter().filter_map(f).collect());
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {} |",
            samples.len(),
            col(&|s| s.tray),
            col(&|s| s.core),
            col(&|s| Some(s.visit.request - s.visit.sent)),
            col(&|s| s.visit.redirect.map(|r| r - s.visit.request)),
            col(&|s| Some(s.visit.first_byte - s.visit.redirect.unwrap_or(s.visit.request))),
            col(&|s| Some(s.end_to_end())),
        );
    }
    println!();
    println!("Where core.attach goes (spans; secret_store_get is inside attach_resolve; \"other\" is core.attach minus the spans: the hop to the blocking pool and back, minting the code):");
    println!();
    println!("| row | n | attach_find | attach_resolve | of which secret_store_get | attach_health | attach_proxy_start | other | open_in_browser (spawn `true`) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, samples) in &rows.0 {
        let samples: Vec<&Sample> = samples.iter().filter(|s| s.core.is_some()).collect();
        if samples.is_empty() {
            continue;
        }
        let phase = |p: &str| {
            p50_p99(
                samples
                    .iter()
                    .map(|s| s.phases.get(p).copied().unwrap_or(0.0))
                    .collect(),
            )
        };
        let other = p50_p99(
            samples
                .iter()
                .map(|s| {
                    let spans: f64 = PHASES
                        .iter()
                        .filter(|p| **p != "secret_store_get")
                        .map(|p| s.phases.get(p).copied().unwrap_or(0.0))
                        .sum();
                    s.core.unwrap() - spans
                })
                .collect(),
        );
        let open = p50_p99(
            samples
                .iter()
                .map(|s| s.tray.unwrap() - s.core.unwrap())
                .collect(),
        );
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} | {other} | {open} |",
            samples.len(),
            phase("attach_find"),
            phase("attach_resolve"),
            phase("secret_store_get"),
            phase("attach_health"),
            phase("attach_proxy_start"),
        );
    }
    println!();
    println!(
        "Browser timestamps out of order against this program's clock: {out_of_order} of {} samples.",
        rows.0.values().map(Vec::len).sum::<usize>()
    );
}
