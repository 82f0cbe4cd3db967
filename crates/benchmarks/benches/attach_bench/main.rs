//! Attach proxy benchmark: direct vs attach-proxy vs nginx in front of the same demo runtime.
//!
//! Run with `cargo bench -p benchmarks --bench attach_bench` (set `ATTACH_BENCH_SECONDS` to
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
//! `cargo bench -p benchmarks --bench attach_bench -- --instructions` instead counts the user-space
//! instructions the proxy and the runtime execute per request and per 10 MB body, each in its own
//! process under `valgrind --tool=callgrind`: a figure that does not move with the machine's load.
//! `-- --syscalls` counts their system calls the same way, under `strace -c` (the kernel side,
//! which callgrind does not see). `ATTACH_BENCH_PROFILE_DIR=DIR` keeps the profiles there (for
//! `callgrind_annotate`).

//!
//! # Layout
//! - `main.rs`: the modes (timed run, `--instructions` / `--syscalls`, or a role of a child
//!   process) and the timed run's rounds.
//! - [`roles`]: this binary started again as the demo runtime, an attach proxy or a TCP relay.
//! - [`nginx`]: nginx configured as the same kind of proxy, for comparison.
//! - [`client`]: the targets and the native client's interleaved round trips, bodies and
//!   WebSocket echoes.
//! - [`wrk`]: the load generator and the CPU each party spends under it.
//! - [`placement`]: pinning the parties to CPUs and sampling their CPU time.
//! - [`report`]: a placement's rows, their medians over the rounds, and the printed table.
//! - [`counts`]: `--instructions` / `--syscalls`, per-message counts under callgrind or strace.

mod client;
mod counts;
mod nginx;
mod placement;
mod report;
mod roles;
mod wrk;

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use attach_proxy::AttachProxy;
use hyper::header::HeaderValue;
use live_runtime::Sensitive;

use client::{
    interleaved_blob, interleaved_latency, interleaved_websocket, session_cookie, Target,
};
use counts::{count_per_message, Counter};
use placement::{
    core_busy, core_times, find_proxy_thread, idle_policy, load_average, place, placement_report,
    Parties, Placement, Threads,
};
use report::{median_row, print_measurement, Measurement, Row};

/// Measurement rounds; each cell is the median over them.
const ROUNDS: usize = 7;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::var_os(roles::RUNTIME_ROLE_ENV).is_some() {
        return roles::serve_runtime_process().await;
    }
    if std::env::var_os(roles::PROXY_ROLE_ENV).is_some() {
        return roles::serve_proxy_process().await;
    }
    if std::env::var_os(roles::RELAY_ROLE_ENV).is_some() {
        return roles::serve_relay_process().await;
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
    let (mut runtime, runtime_addr) = roles::spawn_runtime_process(&token, &[]).await;
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
    let nginx = nginx::start_nginx(dir.path(), runtime_addr, &token, &[]).await;
    let (mut relay, relay_addr) = roles::spawn_relay_process(runtime_addr).await;
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

async fn measure(
    targets: &[Target],
    origins: &[Option<String>],
    parties: &Parties,
    placement: Placement,
    dir: &Path,
    seconds: u64,
) -> Measurement {
    let load_before = load_average();
    let idle_policy = idle_policy();
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
            let run = wrk::wrk(target, parties, placement, dir, seconds).await;
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
                row.middle_kernel_us = run.middle_kernel_us;
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
        idle_policy,
        affinity: placement_report(parties),
    }
}

/// Writes a file that carries a secret (wrk's Lua script, nginx's configuration), readable by
/// this user only: secrets reach wrk and nginx this way, never on a command line.
fn write_private(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A fresh random bearer token for the run's demo runtime.
fn hex_token() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}
