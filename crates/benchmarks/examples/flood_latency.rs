//! Measures what a runtime flooding its status stream costs the others (issue 29): the latency
//! of a well-behaved runtime's state changes (from the `since` its runtime stamps on the change
//! to the watcher's `Snapshot` event showing it; target p99 ≤ 100 ms), first alone, then while
//! another runtime answers its stream with blank lines (valid SSE that completes no event, in
//! 512 KiB writes, the `blank-lines` demo scenario), and the CPU this process spends meanwhile.
//!
//! The flooder is a child process (this example re-executed), so this process's CPU is the
//! tray's side only: its watcher thread, which parses every stream, and the rest of the core.
//! The well-behaved runtime (the `error` scenario: working, then `error` after the phase delay,
//! `retry` starts over) runs in this process in both runs, so the difference between the runs
//! is what the flood costs.
//!
//! ```text
//! cargo run --release -p benchmarks --example flood_latency -- --samples 200
//! ```

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use bench_support::procfs::process_stat;
use bench_support::stats::{ms, percentile};
use demo_runtime::{DemoConfig, Scenario};
use live_runtime::{
    LiveRuntimeMetadata, LiveRuntimeRegistration, LiveRuntimeSource, ReceiptDir, SecretStore,
    Sensitive,
};
use supercode_core::view::{AgentState, Snapshot};
use supercode_core::{CoreEvent, Locations, Supercode};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The token both runtimes register (a benchmark's, not a secret).
const TOKEN: &str = "flood-latency-bench-token";

/// How long the well-behaved runtime works before it fails (and how long after it failed the
/// run retries): well above the core's 100 ms publish interval, so coalescing adds nothing and
/// every change is shown as it happens.
const PHASE: Duration = Duration::from_millis(250);

/// How long one change may take to show before the run is declared broken.
const SAMPLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Clock ticks per second of `/proc/PID/stat` (`USER_HZ`, 100 on Linux).
const USER_HZ: f64 = 100.0;

fn main() {
    let mut args = std::env::args().skip(1);
    let mut samples = 200usize;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--samples" => samples = args.next().and_then(|v| v.parse().ok()).expect("a number"),
            "--flooder" => return flooder(PathBuf::from(args.next().expect("a root"))),
            other => panic!("unknown argument {other}; use --samples N"),
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(measure(samples));
}

async fn measure(samples: usize) {
    let dir = tempfile::tempdir().unwrap();
    let locations = locations_in(dir.path());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let core = Supercode::new(locations.clone(), move |event| {
        if let CoreEvent::Snapshot(snapshot) = event {
            let _ = tx.send((SystemTime::now(), snapshot));
        }
    });
    let _watch = core.watch();
    let mut events = Events { rx };

    let mut config = DemoConfig::new("steady-asker", Sensitive::new(TOKEN.to_owned()));
    config.scenario = Scenario::Failing;
    config.phase_delay = PHASE;
    let asker = demo_runtime::serve(config).await.unwrap();
    let address = *asker.local_addr().expose();
    let registration = register(&locations.receipts, "steady-asker", address);
    let endpoint = registration.endpoint().to_string();
    let http = reqwest::Client::new();
    let retry = format!("http://{address}/supercode/v1/actions/retry");

    println!(
        "flood_latency: {samples} state changes of a well-behaved runtime per run, phase {PHASE:?}"
    );
    // Every run starts from a failure and ends on one (an even number of changes), so that
    // each change measured is one a run caused or timed.
    let samples = samples.max(2).next_multiple_of(2);
    events.shown(&endpoint, AgentState::Error).await;
    let (alone, alone_cpu, alone_wall) = run(&mut events, &endpoint, &http, &retry, samples).await;
    report("alone", alone, alone_cpu, alone_wall);

    let mut child = Command::new(std::env::current_exe().unwrap())
        .arg("--flooder")
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let flooder = line.trim().to_owned();
    events
        .until(|s| {
            snapshot_state(s, &flooder).is_some_and(|(_, title, _)| title == "Sending blank lines")
        })
        .await;
    let child_cpu = cpu_of(child.id());
    let (flooded, flooded_cpu, flooded_wall) =
        run(&mut events, &endpoint, &http, &retry, samples).await;
    let child_cpu = cpu_of(child.id()) - child_cpu;
    report(
        "beside a blank-lines flooder",
        flooded,
        flooded_cpu,
        flooded_wall,
    );
    let extra = flooded_cpu / flooded_wall - alone_cpu / alone_wall;
    println!(
        "  the flood costs this process {:.1} % of a core ({:.1} % beside it minus {:.1} % alone); the flooder itself spent {:.1} % of a core writing",
        extra * 100.0,
        flooded_cpu / flooded_wall * 100.0,
        alone_cpu / alone_wall * 100.0,
        child_cpu / flooded_wall * 100.0,
    );
    let shown = core.snapshot();
    println!(
        "  the flooder is shown as {:?}",
        snapshot_state(&shown, &flooder).map(|(state, title, _)| (state, title))
    );
    drop(child.stdin.take());
    let _ = child.wait();
    drop(registration);
}

/// `samples` changes of the runtime `endpoint`, from `error` (where it is) back to it: each latency, and this process's CPU seconds and
/// the wall seconds the run took.
async fn run(
    events: &mut Events,
    endpoint: &str,
    http: &reqwest::Client,
    retry: &str,
    samples: usize,
) -> (Vec<Duration>, f64, f64) {
    let me = std::process::id();
    let (cpu, wall) = (cpu_of(me), Instant::now());
    let mut latencies = Vec::with_capacity(samples);
    let mut failed = true;
    while latencies.len() < samples {
        let wanted = if failed {
            tokio::time::sleep(PHASE).await;
            let answer = http.post(retry).bearer_auth(TOKEN).send().await.unwrap();
            assert_eq!(answer.status(), 202, "retry taken");
            AgentState::Working
        } else {
            AgentState::Error
        };
        let (at, since) = events.shown(endpoint, wanted).await;
        latencies.push(at.duration_since(since).unwrap_or_default());
        failed = !failed;
    }
    (latencies, cpu_of(me) - cpu, wall.elapsed().as_secs_f64())
}

fn report(label: &str, mut latencies: Vec<Duration>, cpu: f64, wall: f64) {
    latencies.sort_unstable();
    println!(
        "{label}: change -> snapshot p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} changes); this process {:.1} % of a core over {wall:.1} s",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(*latencies.last().unwrap()),
        latencies.len(),
        cpu / wall * 100.0,
    );
}

/// The flooding runtime: serves `blank-lines`, registers it in the parent's receipt directory,
/// prints its endpoint and runs until its stdin closes.
fn flooder(root: PathBuf) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut config = DemoConfig::new("blank-flooder", Sensitive::new(TOKEN.to_owned()));
        config.scenario = Scenario::BlankLines;
        let server = demo_runtime::serve(config).await.unwrap();
        let receipts = locations_in(&root).receipts;
        let registration = register(&receipts, "blank-flooder", *server.local_addr().expose());
        println!("{}", registration.endpoint());
        std::io::stdout().flush().unwrap();
        tokio::task::spawn_blocking(|| {
            let _ = std::io::stdin().read_line(&mut String::new());
        })
        .await
        .unwrap();
        drop(registration);
        server.shutdown().await;
    });
}

fn locations_in(root: &Path) -> Locations {
    let receipts = ReceiptDir::new(
        root.join("receipts"),
        SecretStore::file(root.join("secrets")),
    );
    Locations {
        receipts,
        canon: canon_local::CanonHome::at(root.join("canon")).unwrap(),
        log_dir: root.join("logs"),
        state_dir: root.join("state"),
    }
}

fn register(
    receipts: &ReceiptDir,
    name: &str,
    address: std::net::SocketAddr,
) -> LiveRuntimeRegistration {
    live_runtime::register_live_runtime_with_metadata(
        receipts,
        &format!("bench:{name}"),
        LiveRuntimeSource {
            session_id: format!("session-{name}"),
            workspace: std::env::temp_dir(),
        },
        address,
        Sensitive::new(TOKEN.to_owned()),
        LiveRuntimeMetadata {
            runtime_kind: "sdk".into(),
            display_name: Some(name.to_owned()),
            ..LiveRuntimeMetadata::default()
        },
    )
    .unwrap()
}

/// A process's CPU seconds so far (user + kernel, all its threads).
fn cpu_of(pid: u32) -> f64 {
    let stat = process_stat(pid).expect("the process is there");
    (stat.utime + stat.stime) as f64 / USER_HZ
}

/// A runtime's shown state, title and `since`.
fn snapshot_state(snapshot: &Snapshot, endpoint: &str) -> Option<(AgentState, String, SystemTime)> {
    let state = snapshot
        .runtimes
        .iter()
        .find(|r| r.id == endpoint)?
        .state
        .as_ref()?;
    let since = OffsetDateTime::parse(state.since.as_deref()?, &Rfc3339).ok()?;
    Some((
        state.value,
        state.title.clone().unwrap_or_default(),
        since.into(),
    ))
}

struct Events {
    rx: tokio::sync::mpsc::UnboundedReceiver<(SystemTime, std::sync::Arc<Snapshot>)>,
}

impl Events {
    /// When the first snapshot matching `pred` arrived, and the snapshot.
    async fn until(
        &mut self,
        pred: impl Fn(&Snapshot) -> bool,
    ) -> (SystemTime, std::sync::Arc<Snapshot>) {
        tokio::time::timeout(SAMPLE_TIMEOUT, async {
            loop {
                let (at, snapshot) = self.rx.recv().await.expect("the watcher runs");
                if pred(&snapshot) {
                    return (at, snapshot);
                }
            }
        })
        .await
        .expect("the change was shown in time")
    }

    /// When `endpoint` was first shown in `state`, and the `since` of that state.
    async fn shown(&mut self, endpoint: &str, state: AgentState) -> (SystemTime, SystemTime) {
        let (at, snapshot) = self
            .until(|s| snapshot_state(s, endpoint).is_some_and(|(v, _, _)| v == state))
            .await;
        (at, snapshot_state(&snapshot, endpoint).unwrap().2)
    }
}
