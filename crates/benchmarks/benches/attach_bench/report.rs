//! What one placement measured: a row per target and round, the median row over the rounds,
//! and the markdown table, per-round spread and "vs direct" lines that `docs/BENCHMARKS.md`
//! quotes.

use std::fmt::Write as _;

use bench_support::stats::{median, median_of_all};

use crate::client::{Target, BLOB_REPEATS, SEQUENTIAL_REQUESTS, WS_ROUND_TRIPS};
use crate::placement::Placement;
use crate::wrk::wrk_connections;
use crate::ROUNDS;

/// One target's figures in one round, or their medians over the rounds.
#[derive(Default)]
pub struct Row {
    pub rps: Option<f64>,
    pub load_p50_us: Option<f64>,
    pub load_p99_us: Option<f64>,
    /// CPU µs per request under wrk: wrk itself, the runtime, the proxy.
    pub wrk_cpu_us: Option<f64>,
    pub runtime_cpu_us: Option<f64>,
    pub middle_cpu_us: Option<f64>,
    /// Of the CPU µs per request of wrk and the runtime, those spent in the kernel: what a hop
    /// between them changes, since their user-space work per request stays the same.
    pub wrk_kernel_us: Option<f64>,
    pub runtime_kernel_us: Option<f64>,
    /// The proxy's kernel share of its CPU µs per request: set beside its total, it splits
    /// what the proxy spends into its own code (user) and the system calls it makes (kernel).
    pub middle_kernel_us: Option<f64>,
    /// Under wrk, % of one core busy with wrk + runtime, and with the proxy. Isolated, a proxy
    /// near 100 % is the bottleneck; neither near 100 % means the hand-offs between cores are.
    pub client_runtime_busy: Option<f64>,
    pub middle_busy: Option<f64>,
    /// Under wrk, % busy of CPU 0 and CPU 1 with anything (other builds included), from
    /// `/proc/stat`: tells a proxy short of CPU from a proxy waiting on hand-offs.
    pub cpu0_busy: Option<f64>,
    pub cpu1_busy: Option<f64>,
    pub seq_p50_us: f64,
    pub seq_p99_us: f64,
    pub mb_per_s: f64,
    /// CPU ms per 10 MB body: this process's client threads, the runtime, the proxy.
    pub blob_client_cpu_ms: f64,
    pub blob_runtime_cpu_ms: f64,
    pub blob_middle_cpu_ms: Option<f64>,
    pub ws_p50_us: f64,
    pub ws_p99_us: f64,
}

/// One placement's rows, with what the machine was doing around them.
pub struct Measurement {
    pub rows: Vec<Row>,
    pub rounds: Vec<Vec<Row>>,
    pub load_before: String,
    pub load_after: String,
    /// How idle cores wait ([`crate::placement::idle_policy`]), read before the rows.
    pub idle_policy: String,
    /// The CPU affinity of every party, read back after the rows were measured.
    pub affinity: String,
}

/// The median of every figure over the rounds.
pub fn median_row(rounds: &[Row]) -> Row {
    let m = |f: fn(&Row) -> f64| median(rounds.iter().map(f).collect());
    let mo = |f: fn(&Row) -> Option<f64>| median_of_all(rounds.iter().map(f).collect());
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
        middle_kernel_us: mo(|r| r.middle_kernel_us),
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

/// A figure with `digits` decimals, or `n/a` when wrk did not produce it.
fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"))
}

/// A figure of the process between client and runtime: `-` for the row that has none (direct).
fn fmt_middle(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// The figures of one cell, as `a / b / …`.
fn slashed(figures: &[String]) -> String {
    figures.join(" / ")
}

/// Prints one placement's table, how it was measured, the per-round spread and each proxy
/// against direct.
pub fn print_measurement(
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
        slashed(&[fmt_opt(r.load_p50_us, 0), fmt_opt(r.load_p99_us, 0)])
    });
    line(
        "CPU per request under that load, wrk / runtime / proxy (µs)",
        &|r| {
            slashed(&[
                fmt_opt(r.wrk_cpu_us, 1),
                fmt_opt(r.runtime_cpu_us, 1),
                fmt_middle(r.middle_cpu_us, 1),
            ])
        },
    );
    line(
        "of which in the kernel, wrk / runtime / proxy (µs)",
        &|r| {
            slashed(&[
                fmt_opt(r.wrk_kernel_us, 1),
                fmt_opt(r.runtime_kernel_us, 1),
                fmt_middle(r.middle_kernel_us, 1),
            ])
        },
    );
    line(
        "CPU busy under that load, wrk + runtime / proxy (% of one core)",
        &|r| {
            slashed(&[
                fmt_opt(r.client_runtime_busy, 0),
                fmt_middle(r.middle_busy, 0),
            ])
        },
    );
    line(
        "CPU 0 / CPU 1 busy under that load, all processes (%)",
        &|r| slashed(&[fmt_opt(r.cpu0_busy, 0), fmt_opt(r.cpu1_busy, 0)]),
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
            fmt_middle(r.blob_middle_cpu_ms, 1)
        )
    });
    line(
        &format!("WebSocket echo round trip p50 / p99 (µs, n={WS_ROUND_TRIPS})"),
        &|r| format!("{:.0} / {:.0}", r.ws_p50_us, r.ws_p99_us),
    );
    println!("{table}");
    println!(
        "req/s: median of {ROUNDS} wrk runs per target in rotated order; round trips and MB/s: targets interleaved request by request (MB/s: median per 10 MB body); CPU: user + kernel time from /proc (schedstat; wrk's own /proc/self/stat), medians. Machine: {cpus} cores, {}; load average before {}, after {}.",
        measurement.idle_policy, measurement.load_before, measurement.load_after
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
