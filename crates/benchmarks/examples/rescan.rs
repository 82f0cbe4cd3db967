//! What the app's full rescan costs (the watcher's 10 s backstop tick and start-up: every receipt
//! and `$CANON_HOME` read afresh, then the snapshot built), and how much memory the inventory
//! keeps per receipt (issue 16).
//!
//! It reads a directory the inventory benchmark wrote (`cargo bench -p benchmarks --bench
//! inventory -- --populate DIR SIZE`), taken from the same environment variables the app uses:
//!
//! ```text
//! SUPERCODE_RUNTIME_DIR=DIR/receipts SUPERCODE_SECRET_STORE=file SUPERCODE_SECRET_DIR=DIR/secrets \
//! CANON_HOME=DIR/canon SUPERCODE_STATE_DIR=DIR/state SUPERCODE_LOG_DIR=DIR/logs \
//!   cargo run --release -p benchmarks --example rescan -- --reps 20
//! ```
//!
//! The first read removes the dead receipts, so the timed reads are the steady state the tick
//! sees; the floor (`bench_support::floor`) takes turns with them. Memory: the process's VmRSS
//! with one inventory kept (the watcher keeps exactly one `Sources`), then with a second one,
//! divided by the receipts it holds.

use std::time::{Duration, Instant};

use bench_support::stats::{ms, percentile};
use supercode_core::approvals::ApprovalBoard;
use supercode_core::inventory::Sources;
use supercode_core::Locations;

/// VmRSS of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line")
}

fn main() {
    let mut reps = 20usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--reps" => reps = args.next().and_then(|v| v.parse().ok()).expect("a number"),
            other => panic!("unknown argument {other}; use --reps N"),
        }
    }
    let locations = Locations::from_env().expect("the app's locations");
    let approvals = ApprovalBoard::default();

    // The first read is reconciled, which removes dead receipts; it also warms the page cache.
    let mut first = Sources::read(&locations);
    let exited = first.reconcile(&locations, None);
    let listed = first.snapshot(&locations, &approvals).runtimes.len();
    drop(first);

    // The rescan and the floor take turns, so drifting load hits both alike.
    let mut samples: Vec<Duration> = Vec::with_capacity(reps);
    let mut floor: Vec<Duration> = Vec::with_capacity(reps);
    for _ in 0..reps {
        let started = Instant::now();
        let sources = Sources::read(&locations);
        let snapshot = sources.snapshot(&locations, &approvals);
        samples.push(started.elapsed());
        assert_eq!(
            snapshot.runtimes.len(),
            listed,
            "the directory changed under the run"
        );
        let started = Instant::now();
        std::hint::black_box(bench_support::floor::read_and_parse(
            locations.receipts.path(),
        ));
        floor.push(started.elapsed());
    }
    samples.sort();
    floor.sort();

    // Kept one, then two: the second read's passing garbage reuses what the first one freed, so
    // the difference is what one kept `Sources` holds.
    let one = Sources::read(&locations);
    let before = rss_kib();
    let two = Sources::read(&locations);
    let after = rss_kib();
    let files = std::fs::read_dir(locations.receipts.path())
        .map(|dir| dir.count())
        .unwrap_or(0);
    println!(
        "receipt files {files}, runtimes listed {listed}, removed as dead by the first reconciliation {}",
        exited.len()
    );
    println!(
        "full rescan (read + snapshot), {reps} reps: median {:.3} ms, p90 {:.3} ms, per receipt file {:.1} us",
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.9)),
        ms(percentile(&samples, 0.5)) * 1000.0 / files.max(1) as f64
    );
    println!(
        "floor (read + parse + /proc/<pid>/stat), same rounds: median {:.3} ms, p90 {:.3} ms; rescan / floor {:.2}x",
        ms(percentile(&floor, 0.5)),
        ms(percentile(&floor, 0.9)),
        ms(percentile(&samples, 0.5)) / ms(percentile(&floor, 0.5))
    );
    println!(
        "memory kept by one more inventory: VmRSS {before} KiB -> {after} KiB, {:.0} bytes per receipt file",
        (after.saturating_sub(before) * 1024) as f64 / files.max(1) as f64
    );
    drop((one, two));
}
