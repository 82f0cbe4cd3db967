//! The load generator: wrk against `GET /api/health` over keep-alive connections, with the CPU
//! time wrk, the runtime and the proxy spend per request under that load.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Stdio;

use bench_support::procfs::process_stat;

use crate::client::Target;
use crate::placement::{Parties, Placement, Threads};
use crate::write_private;

/// wrk connections: a handful, like one busy browser tab set, not a server load test.
/// `ATTACH_BENCH_CONNECTIONS` overrides it, e.g. to see whether more requests in flight hide the
/// hand-offs between cores in the CPU-isolated rows.
const WRK_CONNECTIONS: u32 = 10;

/// wrk's connection count for this run.
pub fn wrk_connections() -> u32 {
    std::env::var("ATTACH_BENCH_CONNECTIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(WRK_CONNECTIONS)
}

/// Kernel clock ticks per second (`USER_HZ`, 100 on every Linux architecture we run on): the unit
/// of the CPU times wrk reads from `/proc/self/stat`.
const USER_HZ: f64 = 100.0;

/// A latency as wrk prints it (`812.00us`, `1.20ms`, `2s`), in µs.
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
pub struct WrkResult {
    pub rps: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// CPU µs per request of wrk, the runtime and the proxy (`None` for direct).
    pub wrk_cpu_us: f64,
    pub runtime_cpu_us: f64,
    pub middle_cpu_us: Option<f64>,
    /// Of those, µs per request in the kernel (stime), for wrk, the runtime and the proxy.
    pub wrk_kernel_us: f64,
    pub runtime_kernel_us: f64,
    pub middle_kernel_us: Option<f64>,
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
pub async fn wrk(
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
    let kernel_before = (
        kernel_ticks(parties.runtime),
        target.middle.map(Threads::kernel_ticks),
    );
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
    let kernel_after = (
        kernel_ticks(parties.runtime),
        target.middle.map(Threads::kernel_ticks),
    );
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
        runtime_kernel_us: ticks_per_request_us(
            kernel_after.0.saturating_sub(kernel_before.0) as f64
        ),
        middle_kernel_us: kernel_before
            .1
            .zip(kernel_after.1)
            .map(|(before, after)| ticks_per_request_us(after.saturating_sub(before) as f64)),
        runtime_cpu_us: per_request_us(cpu_before.0, cpu_after.0),
        middle_cpu_us: cpu_before
            .1
            .zip(cpu_after.1)
            .map(|(before, after)| per_request_us(before, after)),
    })
}

/// Kernel time (stime) of every thread of a process so far, in clock ticks, from `/proc/PID/stat`.
fn kernel_ticks(pid: u32) -> u64 {
    process_stat(pid).map_or(0, |stat| stat.stime)
}
