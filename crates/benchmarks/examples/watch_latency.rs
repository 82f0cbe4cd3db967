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
//! cargo run --release -p benchmarks --example watch_latency -- --trials 200 --background 50
//! ```
//!
//! With `--scale 10,10000` it instead answers "does one change cost one receipt?" (issue 6): for
//! each directory size, one after the other in the same run, a receipt written (and removed) →
//! its snapshot, with the watcher's CPU time for that change (its thread plus notify's, from
//! `/proc/self/task/*/schedstat`) and how many receipt files were opened meanwhile (an inotify
//! spy). Beside them, what the in-memory snapshot rebuild costs and what a full read costs (what
//! every change cost before the watcher was incremental). The directory holds 90 % live receipts
//! (this process) and 10 % corrupt ones.
//!
//! ```text
//! cargo run --release -p benchmarks --example watch_latency -- --scale 10,10000 --trials 200
//! ```

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bench_support::procfs::{thread_cpu, thread_ids, thread_name, thread_stat};
use bench_support::stats::{ms, percentile, us};
use live_runtime::{LiveRuntimeEndpoint, ProcessIdentity, ReceiptDir, SecretStore};
use supercode_core::approvals::ApprovalBoard;
use supercode_core::inventory::{self, Sources};
use supercode_core::view::Snapshot;
use supercode_core::{CoreEvent, Locations, Supercode, WatchHandle};

/// How long one trial may wait for its snapshot before the run is declared broken: far above
/// any plausible latency, so only a real failure hits it.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(30);

fn main() {
    let mut trials = 200usize;
    let mut background = 50usize;
    let mut scale: Option<Vec<usize>> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().and_then(|v| v.parse().ok()).expect("a number");
        match arg.as_str() {
            "--trials" => trials = value(),
            "--background" => background = value(),
            "--scale" => {
                let list = args.next().expect("a list of sizes, e.g. 10,10000");
                scale = Some(
                    list.split(',')
                        .map(|n| n.trim().parse().expect("a number"))
                        .collect(),
                );
            }
            other => panic!(
                "unknown argument {other}; use --trials N --background N, or --scale N,N --trials N"
            ),
        }
    }
    if let Some(sizes) = scale {
        scale_run(&sizes, trials);
        return;
    }

    let dir = tempfile::tempdir().unwrap();
    let (receipts, locations) = locations_in(dir.path());

    let mut sleepers: Vec<Child> = Vec::new();
    for i in 0..background {
        let child = spawn_sleep();
        let id = ProcessIdentity::of(child.id()).unwrap();
        write_receipt(&receipts, id, &format!("background-{i}"));
        sleepers.push(child);
    }

    let (_core, watch, mut events) = watched(locations);
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

fn locations_in(root: &Path) -> (ReceiptDir, Locations) {
    let receipts = ReceiptDir::new(
        root.join("receipts"),
        SecretStore::file(root.join("secrets")),
    );
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(receipts.path())
        .unwrap();
    let locations = Locations {
        receipts: receipts.clone(),
        canon: canon_local::CanonHome::at(root.join("canon")).unwrap(),
        log_dir: root.join("logs"),
        state_dir: root.join("state"),
    };
    (receipts, locations)
}

/// Repetitions of each in-memory or full-read timing: enough for a stable median at 10,000
/// receipts (where a full read takes a few hundred ms) without making the run long.
const COST_REPS: usize = 15;

/// One change in the scale run.
struct Sample {
    latency: Duration,
    cpu: Duration,
    opened: usize,
}

/// Every row of the scale run, printed together at the end so they sit side by side.
struct ScaleRow {
    size: usize,
    written: Vec<Sample>,
    removed: Vec<Sample>,
    full_read: Duration,
    rebuild: Duration,
    clone_compare: Duration,
}

fn scale_run(sizes: &[usize], trials: usize) {
    let me = ProcessIdentity::current();
    let mut rows = Vec::new();
    for &size in sizes {
        let dir = tempfile::tempdir().unwrap();
        let (receipts, locations) = locations_in(dir.path());
        let live = populate(&receipts, me, size);

        // The in-memory costs first, with no watcher competing for the CPU.
        let approvals = ApprovalBoard::default();
        let full_read = median_time(COST_REPS, || {
            std::hint::black_box(inventory::snapshot(&locations, &approvals));
        });
        let sources = Sources::read(&locations);
        let rebuild = median_time(COST_REPS, || {
            std::hint::black_box(sources.snapshot(&locations, &approvals));
        });
        let snapshot = sources.snapshot(&locations, &approvals);
        assert_eq!(snapshot.runtimes.len(), live);
        let clone_compare = median_time(COST_REPS, || {
            let copy = std::hint::black_box(snapshot.clone());
            assert!(copy == snapshot);
        });

        let threads_before = threads();
        let (_core, watch, mut events) = watched(locations);
        events.until(|s| s.runtimes.len() == live);
        let watcher = new_thread_named("supercode-watch", &threads_before);
        let notifier = new_thread_named("notify-rs inoti", &threads_before);
        let cpu = || cpu_time(watcher) + cpu_time(notifier);
        // Past the start-up read: a write and a removal answered, the second by its file event.
        let warm = write_receipt(&receipts, me, "warm-up");
        events.until(|s| has(s, &warm));
        wait_idle(watcher);
        std::fs::remove_file(receipts.path().join(format!("{warm}.json"))).unwrap();
        events.until(|s| !has(s, &warm));
        wait_idle(watcher);
        let opens = OpenSpy::new(receipts.path());

        let mut written = Vec::with_capacity(trials);
        let mut removed = Vec::with_capacity(trials);
        for i in 0..trials {
            opens.reset();
            let before = cpu();
            let start = Instant::now();
            let endpoint = write_receipt(&receipts, me, &format!("trial-{i}"));
            let at = events.until(|s| has(s, &endpoint));
            wait_idle(watcher);
            written.push(Sample {
                latency: at - start,
                cpu: cpu() - before,
                opened: opens.count(),
            });

            opens.reset();
            let before = cpu();
            let start = Instant::now();
            std::fs::remove_file(receipts.path().join(format!("{endpoint}.json"))).unwrap();
            let at = events.until(|s| !has(s, &endpoint));
            wait_idle(watcher);
            removed.push(Sample {
                latency: at - start,
                cpu: cpu() - before,
                opened: opens.count(),
            });
        }
        drop(watch);
        rows.push(ScaleRow {
            size,
            written,
            removed,
            full_read,
            rebuild,
            clone_compare,
        });
    }

    println!(
        "watch_latency --scale: {trials} trials per size, debounce {:?}, reconcile tick {:?}",
        supercode_core::watch::DEBOUNCE,
        supercode_core::watch::RECONCILE_INTERVAL
    );
    println!("| receipts in dir | change | n | latency p50 ms | p90 ms | p99 ms | watcher CPU p50 us | p90 us | p99 us | receipts opened (median, max) | trials overlapping a tick |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---:|");
    for row in &mut rows {
        for (what, samples) in [("written", &mut row.written), ("removed", &mut row.removed)] {
            // A reconcile tick that lands inside a trial reads every file; counted, not hidden.
            let ticked = samples.iter().filter(|s| s.opened > 1).count();
            let mut latency: Vec<Duration> = samples.iter().map(|s| s.latency).collect();
            let mut cpu: Vec<Duration> = samples.iter().map(|s| s.cpu).collect();
            let mut opened: Vec<usize> = samples.iter().map(|s| s.opened).collect();
            latency.sort();
            cpu.sort();
            opened.sort();
            println!(
                "| {} | {what} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {:.0} | {:.0} | {}, {} | {ticked} |",
                row.size,
                samples.len(),
                ms(percentile(&latency, 0.50)),
                ms(percentile(&latency, 0.90)),
                ms(percentile(&latency, 0.99)),
                us(percentile(&cpu, 0.50)),
                us(percentile(&cpu, 0.90)),
                us(percentile(&cpu, 0.99)),
                percentile(&opened, 0.50),
                opened.last().unwrap(),
            );
        }
    }
    println!();
    println!("| receipts in dir | full read (every change, before) median ms | in-memory rebuild median ms | snapshot clone + compare median ms |");
    println!("|---:|---:|---:|---:|");
    for row in &rows {
        println!(
            "| {} | {:.2} | {:.3} | {:.3} |",
            row.size,
            ms(row.full_read),
            ms(row.rebuild),
            ms(row.clone_compare)
        );
    }
}

/// Writes `size` receipts: nine in ten live (this process), one in ten corrupt. Returns how many
/// are live.
fn populate(receipts: &ReceiptDir, me: ProcessIdentity, size: usize) -> usize {
    let mut live = 0;
    for i in 0..size {
        if i % 10 == 9 {
            let endpoint = LiveRuntimeEndpoint::generate();
            let path = receipts.receipt_path(&endpoint);
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .unwrap();
            file.write_all(b"{\"version\": 1, \"endpoint\": \"lre_")
                .unwrap();
        } else {
            write_receipt(receipts, me, &format!("background-{i}"));
            live += 1;
        }
    }
    live
}

fn median_time(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..reps)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    percentile(&times, 0.5)
}

/// This process's threads, by id, with their names.
fn threads() -> Vec<(u32, String)> {
    let me = std::process::id();
    thread_ids(me)
        .into_iter()
        .filter_map(|tid| Some((tid, thread_name(me, tid)?)))
        .collect()
}

/// The id of the thread called `name` (as `/proc` shows it: at most 15 bytes) that is not in
/// `before`: the one the watcher just started, not a previous size's or the open spy's.
fn new_thread_named(name: &str, before: &[(u32, String)]) -> u32 {
    let deadline = Instant::now() + TRIAL_TIMEOUT;
    loop {
        let found = threads()
            .into_iter()
            .find(|(tid, comm)| comm == name && !before.iter().any(|(old, _)| old == tid));
        if let Some((tid, _)) = found {
            return tid;
        }
        assert!(Instant::now() < deadline, "no new thread named {name}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// CPU time `tid` has run so far (nanosecond counter of the scheduler, not tick-sampled).
fn cpu_time(tid: u32) -> Duration {
    thread_cpu(std::process::id(), tid).expect("the watcher thread is running")
}

/// Waits until the watcher thread has been asleep (state S) with its CPU counter standing still
/// for longer than the debounce: it sends the snapshot before the end of its pass, and the rest
/// of the pass belongs to the change too; a debounce sleep would look idle for a shorter while.
fn wait_idle(tid: u32) {
    let quiet = supercode_core::watch::DEBOUNCE + Duration::from_millis(10);
    let deadline = Instant::now() + TRIAL_TIMEOUT;
    loop {
        let asleep = || {
            thread_stat(std::process::id(), tid)
                .expect("the watcher thread is running")
                .state
                == 'S'
        };
        if asleep() {
            let before = cpu_time(tid);
            std::thread::sleep(quiet);
            if asleep() && cpu_time(tid) == before {
                return;
            }
        }
        assert!(Instant::now() < deadline, "the watcher never went idle");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Counts opens of receipt files (not temp files) in a directory, whoever opens them.
struct OpenSpy {
    _watcher: notify::RecommendedWatcher,
    rx: mpsc::Receiver<()>,
}

impl OpenSpy {
    fn new(dir: &Path) -> Self {
        use notify::Watcher as _;
        let (tx, rx) = mpsc::channel();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                if !matches!(
                    event.kind,
                    notify::EventKind::Access(notify::event::AccessKind::Open(_))
                ) {
                    return;
                }
                let receipt = event.paths.iter().any(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(".json") && !n.starts_with('.'))
                });
                if receipt {
                    let _ = tx.send(());
                }
            })
            .unwrap();
        watcher
            .watch(dir, notify::RecursiveMode::NonRecursive)
            .unwrap();
        Self {
            _watcher: watcher,
            rx,
        }
    }

    fn reset(&self) {
        while self.rx.try_recv().is_ok() {}
    }

    /// Opens seen since the last reset (inotify delivers them within microseconds; the caller has
    /// already waited for the watcher to go idle).
    fn count(&self) -> usize {
        std::thread::sleep(Duration::from_millis(2));
        self.rx.try_iter().count()
    }
}

struct Events {
    rx: mpsc::Receiver<(Instant, std::sync::Arc<Snapshot>)>,
}

/// A core over `locations` with its watcher started, and the snapshots it publishes, each with
/// when it arrived.
fn watched(locations: Locations) -> (Supercode, WatchHandle, Events) {
    let (tx, rx) = mpsc::channel::<(Instant, std::sync::Arc<Snapshot>)>();
    let tx = Mutex::new(tx);
    let core = Supercode::new(locations, move |event| {
        if let CoreEvent::Snapshot(snapshot) = event {
            let _ = tx.lock().unwrap().send((Instant::now(), snapshot));
        }
    });
    let watch = core.watch();
    (core, watch, Events { rx })
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
    println!(
        "{what}: n={} p50={:.1} ms p90={:.1} ms p99={:.1} ms max={:.1} ms",
        samples.len(),
        ms(percentile(samples, 0.50)),
        ms(percentile(samples, 0.90)),
        ms(percentile(samples, 0.99)),
        ms(percentile(samples, 1.0))
    );
}
