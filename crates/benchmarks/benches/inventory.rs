//! Inventory-scale benchmark (issue 6): what `list_live_runtimes` costs at 10 / 100 / 1,000 /
//! 10,000 receipts, beside the floor of merely reading and parsing the same files, and what one
//! `read_receipt` of a single changed file costs in a directory of 10,000 receipts.
//!
//! The directory holds a realistic mix: live receipts (each naming a process of its own: a
//! `sleep` started for it, with its start time), dead ones (the pid of a child that has been
//! reaped) and corrupt ones (bad JSON). A list removes dead receipts, so they are written again
//! before every timed list, outside the timed part. Secrets live in the file store, so the figures
//! are the receipt work itself, not keychain round trips.
//!
//! The floor is what any inventory must do at least, timed in the same round: list the directory,
//! read and parse every file, and read `/proc/<pid>/stat` of the pid each names.
//!
//! Run: `cargo bench -p benchmarks --bench inventory` (add `-- --quick` for a smoke run).
//! `-- --populate DIR SIZE` instead writes the same mix for the CLI measurement with hyperfine
//! (docs/BENCHMARKS.md): live receipts into `DIR/receipts`, each naming a `sleep 7200` started for
//! it (their pids in `DIR/sleepers`, for `xargs kill`), and the dead ones into `DIR/dead`, to be
//! copied back before every timed run.
//! Plain `Instant` timings with repetitions; median and p90 per size. The machine is shared, so
//! compare ratios within one run rather than absolute figures across runs.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use bench_support::floor;
use bench_support::stats::{ms as millis, percentile, us as micros};
use live_runtime::{
    list_live_runtimes, read_receipt, LiveRuntimeEndpoint, ProcessIdentity, ReceiptDir,
    ReceiptScan, SecretStore,
};
use serde_json::{json, Value};

/// Share of receipts pointing at a live process, in percent; the rest splits into dead and corrupt.
const LIVE_PERCENT: usize = 70;
/// Share of receipts whose process is gone, in percent.
const DEAD_PERCENT: usize = 20;

/// Directory sizes measured.
const SIZES: [usize; 4] = [10, 100, 1_000, 10_000];

/// Timed repetitions per size: enough for a stable median at small sizes, few enough at 10,000
/// (each repetition rewrites 2,000 dead receipts untimed) to keep the whole run near two minutes.
fn repetitions(size: usize, quick: bool) -> usize {
    let full = match size {
        0..=10 => 200,
        11..=100 => 60,
        101..=1_000 => 10,
        _ => 5,
    };
    if quick {
        (full / 10).max(3)
    } else {
        full
    }
}

/// Repetitions of the single-file re-read.
fn single_file_repetitions(quick: bool) -> usize {
    if quick {
        100
    } else {
        2_000
    }
}

struct Receipts {
    live: Vec<(String, Vec<u8>)>,
    dead: Vec<(String, Vec<u8>)>,
    corrupt: Vec<(String, Vec<u8>)>,
}

fn receipt(endpoint: &LiveRuntimeEndpoint, index: usize, pid: u32, start_time: u64) -> Vec<u8> {
    let value: Value = json!({
        "version": 1,
        "endpoint": endpoint,
        "runtimeId": format!("bench-runtime-{index}"),
        "source": { "sessionId": format!("session-{index}"), "workspace": format!("/home/dev/projects/p{index}") },
        "process": { "pid": pid, "startTime": start_time },
        "address": format!("127.0.0.1:{}", 20_000 + index % 40_000),
        "registeredAt": "2026-01-02T03:04:05.678Z",
        "metadata": {
            "runtimeKind": "claude-code",
            "displayName": format!("Runtime {index}"),
            "cwd": format!("/home/dev/projects/p{index}"),
            "workspaceRoots": [format!("/home/dev/projects/p{index}")],
            "supervisor": { "kind": "launchCommand", "argv": ["claude", "--resume"], "cwd": format!("/home/dev/projects/p{index}"), "env": {} }
        }
    });
    serde_json::to_vec_pretty(&value).unwrap()
}

/// A pid that no longer exists: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().expect("spawn true");
    let pid = child.id();
    child.wait().unwrap();
    assert!(
        ProcessIdentity::of(pid).is_none(),
        "reaped pid {pid} still alive"
    );
    pid
}

/// Live processes for the live receipts to name, one each: `sleep` children, killed on drop.
struct Sleepers {
    children: Vec<std::process::Child>,
    identities: Vec<ProcessIdentity>,
}

impl Sleepers {
    fn start(count: usize) -> Self {
        let mut sleepers = Self {
            children: Vec::with_capacity(count),
            identities: Vec::with_capacity(count),
        };
        for _ in 0..count {
            let child = Command::new("sleep")
                .arg("7200")
                .spawn()
                .expect("spawn sleep");
            let identity = ProcessIdentity::of(child.id()).expect("a sleeper just started");
            sleepers.children.push(child);
            sleepers.identities.push(identity);
        }
        sleepers
    }

    /// Leaves the processes running (for `--populate`), returning their pids.
    fn detach(mut self) -> Vec<u32> {
        self.children.drain(..).map(|child| child.id()).collect()
    }
}

impl Drop for Sleepers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How many live receipts a directory of `size` holds.
fn live_count(size: usize) -> usize {
    size * LIVE_PERCENT / 100
}

fn make_for(size: usize, live: &[ProcessIdentity]) -> Receipts {
    assert!(
        live.len() >= live_count(size),
        "one live process per live receipt"
    );
    let dead = dead_pid();
    let live_count = live_count(size);
    let dead_count = size * DEAD_PERCENT / 100;
    let mut receipts = Receipts {
        live: Vec::new(),
        dead: Vec::new(),
        corrupt: Vec::new(),
    };
    for index in 0..size {
        let endpoint = LiveRuntimeEndpoint::generate();
        let name = format!("{endpoint}.json");
        if index < live_count {
            let me = live[index];
            let bytes = receipt(&endpoint, index, me.pid, me.start_time);
            receipts.live.push((name, bytes));
        } else if index < live_count + dead_count {
            let bytes = receipt(&endpoint, index, dead, 4242);
            receipts.dead.push((name, bytes));
        } else {
            let mut bytes = receipt(&endpoint, index, live[0].pid, live[0].start_time);
            bytes.truncate(bytes.len() / 2);
            receipts.corrupt.push((name, bytes));
        }
    }
    receipts
}

fn write_file(dir: &Path, name: &str, bytes: &[u8]) {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(dir.join(name))
        .unwrap();
    file.write_all(bytes).unwrap();
}

fn write_all(dir: &Path, files: &[(String, Vec<u8>)]) {
    for (name, bytes) in files {
        write_file(dir, name, bytes);
    }
}

struct Stats {
    median: Duration,
    p90: Duration,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    Stats {
        median: percentile(&samples, 0.5),
        p90: percentile(&samples, 0.9),
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3}", millis(d))
}

fn us(d: Duration) -> String {
    format!("{:.1}", micros(d))
}

struct SizeResult {
    size: usize,
    reps: usize,
    /// The first list after a fifth of the runtimes died: it removes their receipts.
    list: Stats,
    /// Read + parse of the same directory (dead receipts included).
    floor: Stats,
    /// The list right after: live and corrupt receipts only, nothing left to remove.
    steady_list: Stats,
    /// Read + parse of that steady directory.
    steady_floor: Stats,
}

/// A private receipt directory in a new temp dir (kept alive by the returned guard), with the
/// file secret store, and the mix of receipts for `size` (not written yet).
fn receipt_dir_for(
    size: usize,
    live: &[ProcessIdentity],
) -> (tempfile::TempDir, ReceiptDir, Receipts) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("receipts");
    fs::DirBuilder::new().mode(0o700).create(&path).unwrap();
    let dir = ReceiptDir::new(&path, SecretStore::file(tmp.path().join("secrets")));
    (tmp, dir, make_for(size, live))
}

fn bench_size(size: usize, quick: bool, live: &[ProcessIdentity]) -> SizeResult {
    let (_tmp, dir, receipts) = receipt_dir_for(size, live);
    let path = dir.path();
    write_all(path, &receipts.live);
    write_all(path, &receipts.corrupt);

    let reps = repetitions(size, quick);
    let mut list_samples = Vec::with_capacity(reps);
    let mut floor_samples = Vec::with_capacity(reps);
    let mut steady_list_samples = Vec::with_capacity(reps);
    let mut steady_floor_samples = Vec::with_capacity(reps);
    // One warm-up round of each, untimed, so both start with a warm page cache.
    for round in 0..=reps {
        write_all(path, &receipts.dead);

        let started = Instant::now();
        let parsed = floor::read_and_parse(path);
        let floor = started.elapsed();
        assert_eq!(parsed, receipts.live.len() + receipts.dead.len());

        let started = Instant::now();
        let list = list_live_runtimes(&dir).unwrap();
        let listed = started.elapsed();
        assert_eq!(list.runtimes.len(), receipts.live.len());
        assert_eq!(list.ignored.len(), receipts.corrupt.len());

        let started = Instant::now();
        let parsed = floor::read_and_parse(path);
        let steady_floor = started.elapsed();
        assert_eq!(parsed, receipts.live.len());

        let started = Instant::now();
        let steady = list_live_runtimes(&dir).unwrap();
        let steady_listed = started.elapsed();
        assert_eq!(steady.runtimes.len(), receipts.live.len());

        if round > 0 {
            floor_samples.push(floor);
            list_samples.push(listed);
            steady_floor_samples.push(steady_floor);
            steady_list_samples.push(steady_listed);
        }
    }
    SizeResult {
        size,
        reps,
        list: stats(list_samples),
        floor: stats(floor_samples),
        steady_list: stats(steady_list_samples),
        steady_floor: stats(steady_floor_samples),
    }
}

/// One changed receipt in a directory of `size`: rewrite it (untimed), then `read_receipt` it.
fn bench_single_file(size: usize, quick: bool, live: &[ProcessIdentity]) -> Stats {
    let (_tmp, dir, receipts) = receipt_dir_for(size, live);
    let path = dir.path();
    write_all(path, &receipts.live);
    write_all(path, &receipts.dead);
    write_all(path, &receipts.corrupt);
    let (name, bytes) = receipts.live[receipts.live.len() / 2].clone();
    let reps = single_file_repetitions(quick);
    let mut samples = Vec::with_capacity(reps);
    for round in 0..=reps {
        write_file(path, &name, &bytes);
        let started = Instant::now();
        let scan = read_receipt(&dir, &name).unwrap();
        let elapsed = started.elapsed();
        assert!(matches!(scan, ReceiptScan::Listed(_)), "{scan:?}");
        if round > 0 {
            samples.push(elapsed);
        }
    }
    stats(samples)
}

/// `--populate DIR SIZE`: the benchmark's receipt mix, on disk, for an external command, with
/// its live processes left running.
fn populate(args: &[String]) {
    let [dir, size] = args else {
        panic!("usage: --populate DIR SIZE");
    };
    let size: usize = size.parse().expect("SIZE");
    let sleepers = Sleepers::start(live_count(size).max(1));
    let receipts = make_for(size, &sleepers.identities);
    let dir = Path::new(dir);
    for sub in ["receipts", "dead"] {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir.join(sub))
            .unwrap();
    }
    write_all(&dir.join("receipts"), &receipts.live);
    write_all(&dir.join("receipts"), &receipts.corrupt);
    write_all(&dir.join("dead"), &receipts.dead);
    let pids: Vec<String> = sleepers.detach().iter().map(u32::to_string).collect();
    fs::write(dir.join("sleepers"), pids.join("\n") + "\n").unwrap();
}

/// `--once list|floor|none DIR`: one list (or one floor pass, or nothing) of `DIR/receipts` with
/// the secrets in `DIR/secrets`, for counting instructions (callgrind) and system calls (strace)
/// per receipt, which the machine's load does not move: the counts of `none` are the baseline
/// to subtract.
fn once(args: &[String]) {
    let [what, dir] = args else {
        panic!("usage: --once list|floor|none DIR");
    };
    let dir = Path::new(dir);
    let receipts = ReceiptDir::new(dir.join("receipts"), SecretStore::file(dir.join("secrets")));
    let found = match what.as_str() {
        "list" => list_live_runtimes(&receipts).unwrap().runtimes.len(),
        "floor" => floor::read_and_parse(&dir.join("receipts")),
        "none" => 0,
        other => panic!("--once {other}: expected list, floor or none"),
    };
    println!("{what}: {found}");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--populate") {
        populate(&args[at + 1..(at + 3).min(args.len())]);
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--once") {
        once(&args[at + 1..(at + 3).min(args.len())]);
        return;
    }
    // `cargo bench` passes `--bench`; anything else we ignore except `--quick`.
    let quick = args.iter().any(|a| a == "--quick");
    let run = Instant::now();
    println!(
        "# Inventory scale ({} live / {} dead / {} corrupt percent; file secret store)",
        LIVE_PERCENT,
        DEAD_PERCENT,
        100 - LIVE_PERCENT - DEAD_PERCENT
    );
    println!();
    let largest = SIZES.iter().copied().max().unwrap_or(0);
    let sleepers = Sleepers::start(live_count(largest).max(1));
    let live = &sleepers.identities;
    println!(
        "({} sleeper processes started for the live receipts)",
        live.len()
    );
    println!();
    let results: Vec<SizeResult> = SIZES
        .iter()
        .map(|&size| bench_size(size, quick, live))
        .collect();
    let table = |title: &str, pick: &dyn Fn(&SizeResult) -> (&Stats, &Stats, usize)| {
        println!("{title}");
        println!();
        println!("| receipts in dir | reps | list median ms | list p90 ms | list per receipt us | floor median ms | floor p90 ms | floor per receipt us | list / floor |");
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for r in &results {
            let (list, floor, files) = pick(r);
            println!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1}x |",
                files,
                r.reps,
                ms(list.median),
                ms(list.p90),
                us(list.median / files as u32),
                ms(floor.median),
                ms(floor.p90),
                us(floor.median / files as u32),
                list.median.as_secs_f64() / floor.median.as_secs_f64()
            );
        }
        println!();
    };
    table(
        "First list after a fifth of the runtimes died (it removes their receipts):",
        &|r| (&r.list, &r.floor, r.size),
    );
    table(
        "Steady state (the next list: the dead receipts are gone, live and corrupt ones remain):",
        &|r| {
            (
                &r.steady_list,
                &r.steady_floor,
                r.size - r.size * DEAD_PERCENT / 100,
            )
        },
    );
    println!("| read_receipt of one changed file | reps | median us | p90 us |");
    println!("|---|---:|---:|---:|");
    for size in [10, 10_000] {
        let s = bench_single_file(size, quick, live);
        println!(
            "| in a directory of {size} receipts | {} | {} | {} |",
            single_file_repetitions(quick),
            us(s.median),
            us(s.p90)
        );
    }
    println!();
    println!("total run time: {:.1} s", run.elapsed().as_secs_f64());
}
