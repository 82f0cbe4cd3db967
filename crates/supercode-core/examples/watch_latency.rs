//! Measures how fast the watcher turns a change into a `Snapshot` event (issues 4 and 6):
//!
//! - a receipt written (temp file + rename, as every writer does) or removed → the snapshot
//!   that shows it (target < 50 ms);
//! - a runtime's process SIGKILLed → the snapshot without it (target < 1 s).
//!
//! Every trial runs against real files and real `sleep` processes, with `--background` other
//! live runtimes registered so the rescan does realistic work.
//!
//! ```text
//! cargo run --release -p supercode-core --example watch_latency -- --trials 200 --background 50
//! ```

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use live_runtime::{LiveRuntimeEndpoint, ProcessIdentity, ReceiptDir, SecretStore};
use supercode_core::view::Snapshot;
use supercode_core::{CoreEvent, Locations, Supercode};

/// How long one trial may wait for its snapshot before the run is declared broken: far above
/// any plausible latency, so only a real failure hits it.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    let mut trials = 200usize;
    let mut background = 50usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse().ok()).expect("a number");
        match arg.as_str() {
            "--trials" => trials = value(),
            "--background" => background = value(),
            other => panic!("unknown argument {other}; use --trials N --background N"),
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let receipts = ReceiptDir::new(
        dir.path().join("receipts"),
        SecretStore::file(dir.path().join("secrets")),
    );
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(receipts.path())
        .unwrap();
    let locations = Locations {
        receipts: receipts.clone(),
        canon: canon_local::CanonHome::at(dir.path().join("canon")).unwrap(),
        log_dir: dir.path().join("logs"),
        state_dir: dir.path().join("state"),
    };

    let mut sleepers: Vec<Child> = Vec::new();
    for i in 0..background {
        let child = spawn_sleep();
        let id = ProcessIdentity::of(child.id()).unwrap();
        write_receipt(&receipts, id, &format!("background-{i}"));
        sleepers.push(child);
    }

    let core = Supercode::new(locations);
    let (tx, rx) = mpsc::channel::<(Instant, Snapshot)>();
    let tx = Mutex::new(tx);
    let watch = core.watch(move |event| {
        if let CoreEvent::Snapshot(snapshot) = event {
            let _ = tx.lock().unwrap().send((Instant::now(), snapshot));
        }
    });
    let mut events = Events { rx };
    events.until(|s| s.runtimes.len() == background);

    let me = ProcessIdentity::current();
    let mut written = Vec::with_capacity(trials);
    let mut removed = Vec::with_capacity(trials);
    for i in 0..trials {
        let start = Instant::now();
        let endpoint = write_receipt(&receipts, me, &format!("trial-{i}"));
        let at = events.until(|s| has(s, &endpoint));
        written.push(at - start);

        let start = Instant::now();
        std::fs::remove_file(receipts.path().join(format!("{endpoint}.json"))).unwrap();
        let at = events.until(|s| !has(s, &endpoint));
        removed.push(at - start);
    }

    let mut killed = Vec::with_capacity(trials);
    for i in 0..trials {
        let mut child = spawn_sleep();
        let endpoint = write_receipt(
            &receipts,
            ProcessIdentity::of(child.id()).unwrap(),
            &format!("victim-{i}"),
        );
        events.until(|s| has(s, &endpoint));
        let start = Instant::now();
        child.kill().unwrap();
        let at = events.until(|s| !has(s, &endpoint));
        killed.push(at - start);
        child.wait().unwrap();
    }

    drop(watch);
    for mut child in sleepers {
        let _ = child.kill();
        let _ = child.wait();
    }

    println!("watch_latency: {trials} trials each, {background} background runtimes, debounce {:?}, reconcile tick {:?}",
        supercode_core::watch::DEBOUNCE, supercode_core::watch::RECONCILE_INTERVAL);
    report("receipt written -> snapshot", &mut written);
    report("receipt removed -> snapshot", &mut removed);
    report("process SIGKILLed -> gone from snapshot", &mut killed);
}

struct Events {
    rx: mpsc::Receiver<(Instant, Snapshot)>,
}

impl Events {
    /// The arrival time of the first snapshot matching `pred`.
    fn until(&mut self, pred: impl Fn(&Snapshot) -> bool) -> Instant {
        let deadline = Instant::now() + TRIAL_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (at, snapshot) = self
                .rx
                .recv_timeout(left)
                .expect("the watcher published the change");
            if pred(&snapshot) {
                return at;
            }
        }
    }
}

fn has(snapshot: &Snapshot, endpoint: &str) -> bool {
    snapshot.runtimes.iter().any(|r| r.id == endpoint)
}

fn spawn_sleep() -> Child {
    Command::new("sleep").arg("3600").spawn().unwrap()
}

/// Writes a receipt for `process` the way every writer must: temp file, then rename.
fn write_receipt(receipts: &ReceiptDir, process: ProcessIdentity, name: &str) -> String {
    let endpoint = LiveRuntimeEndpoint::generate();
    let receipt = serde_json::json!({
        "version": 1,
        "endpoint": endpoint,
        "runtimeId": format!("bench:{name}"),
        "source": { "sessionId": name, "workspace": "/tmp" },
        "process": { "pid": process.pid, "startTime": process.start_time },
        "address": "127.0.0.1:9",
        "registeredAt": "2026-01-02T03:04:05.678Z",
        "metadata": { "runtimeKind": "sdk", "displayName": name },
    });
    let tmp = receipts
        .path()
        .join(format!(".{endpoint}.json.bench.{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .unwrap();
    file.write_all(serde_json::to_string_pretty(&receipt).unwrap().as_bytes())
        .unwrap();
    drop(file);
    std::fs::rename(&tmp, receipts.receipt_path(&endpoint)).unwrap();
    endpoint.to_string()
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let pct = |p: f64| {
        let rank = ((p / 100.0) * samples.len() as f64).ceil() as usize;
        samples[rank.clamp(1, samples.len()) - 1]
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{what}: n={} p50={:.1} ms p90={:.1} ms p99={:.1} ms max={:.1} ms",
        samples.len(),
        ms(pct(50.0)),
        ms(pct(90.0)),
        ms(pct(99.0)),
        ms(*samples.last().unwrap())
    );
}
