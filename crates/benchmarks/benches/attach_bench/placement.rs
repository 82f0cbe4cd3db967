//! Where the benchmark's parties run and what CPU they spend: the two placements, pinning with
//! `taskset` and reading the affinity back from the kernel, and CPU time per set of threads and
//! per core from `/proc`.

use std::fmt::Write as _;
use std::process::Stdio;

use bench_support::procfs::{thread_cpu, thread_ids, thread_name, thread_stat};

/// How the benchmark's processes are placed on CPUs for one set of rows.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Placement {
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
    pub fn title(self) -> &'static str {
        match self {
            Placement::Unpinned => "unpinned (all CPUs shared)",
            Placement::Isolated => "CPU-isolated (client + runtime on CPU 0, proxy on CPU 1)",
        }
    }
}

/// A set of threads whose CPU time (user + kernel, from `schedstat`) is sampled.
#[derive(Clone, Copy)]
pub enum Threads {
    /// Every thread of a process.
    Process(u32),
    /// One thread of a process.
    Thread { pid: u32, tid: u32 },
    /// Every thread of a process but one.
    ProcessExcept { pid: u32, tid: u32 },
}

/// Nanoseconds on CPU of one thread; 0 if it is gone.
fn thread_cpu_ns(pid: u32, tid: u32) -> u64 {
    thread_cpu(pid, tid).map_or(0, |cpu| u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX))
}

impl Threads {
    /// Kernel time (`stime`) of these threads so far, in clock ticks: tick-sampled, so only
    /// good over many requests, but the one split of their CPU time into user and kernel.
    pub fn kernel_ticks(self) -> u64 {
        self.sum(|pid, tid| thread_stat(pid, tid).map_or(0, |stat| stat.stime))
    }

    pub fn cpu_ns(self) -> u64 {
        self.sum(thread_cpu_ns)
    }

    /// `per_thread(pid, tid)` summed over these threads.
    fn sum(self, per_thread: impl Fn(u32, u32) -> u64) -> u64 {
        match self {
            Threads::Process(pid) => thread_ids(pid).iter().map(|&t| per_thread(pid, t)).sum(),
            Threads::Thread { pid, tid } => per_thread(pid, tid),
            Threads::ProcessExcept { pid, tid } => thread_ids(pid)
                .iter()
                .filter(|&&t| t != tid)
                .map(|&t| per_thread(pid, t))
                .sum(),
        }
    }
}

/// The processes and threads of one benchmark run, for pinning and CPU accounting.
pub struct Parties {
    /// This process: the client threads (tokio workers, main) and attach-proxy's thread.
    pub bench: u32,
    /// attach-proxy's thread in this process (its single-threaded tokio runtime).
    pub proxy_thread: u32,
    pub runtime: u32,
    pub nginx: Option<u32>,
    /// The TCP relay process (see [`crate::roles::serve_relay_process`]).
    pub relay: u32,
}

impl Parties {
    pub fn runtime_threads(&self) -> Threads {
        Threads::Process(self.runtime)
    }

    /// This process's threads that act as the client (all but the proxy's).
    pub fn client_threads(&self) -> Threads {
        Threads::ProcessExcept {
            pid: self.bench,
            tid: self.proxy_thread,
        }
    }
}

/// The thread attach-proxy runs on: `AttachProxy::start` names it `attach-proxy-PORT` (the
/// kernel keeps the first 15 bytes of a thread name).
pub fn find_proxy_thread(pid: u32) -> u32 {
    let threads: Vec<u32> = thread_ids(pid)
        .into_iter()
        .filter(|&tid| thread_name(pid, tid).is_some_and(|comm| comm.starts_with("attach-proxy")))
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
pub fn place(parties: &Parties, placement: Placement, cpus: usize) {
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

pub fn placement_report(parties: &Parties) -> String {
    let client: Vec<u32> = thread_ids(parties.bench)
        .into_iter()
        .filter(|&t| t != parties.proxy_thread)
        .collect();
    let mut report = format!(
        "client threads of the bench process: {}; attach-proxy: {}; runtime process: {}",
        describe_affinity(parties.bench, &client),
        describe_affinity(parties.bench, &[parties.proxy_thread]),
        describe_affinity(parties.runtime, &thread_ids(parties.runtime)),
    );
    if let Some(nginx) = parties.nginx {
        write!(
            report,
            "; nginx: {}",
            describe_affinity(nginx, &thread_ids(nginx))
        )
        .unwrap();
    }
    write!(
        report,
        "; tcp-relay: {}",
        describe_affinity(parties.relay, &thread_ids(parties.relay))
    )
    .unwrap();
    report
}

/// Per CPU (`cpuN` lines of `/proc/stat`): (busy, total) jiffies; busy is all but idle and iowait.
pub fn core_times() -> Vec<(u64, u64)> {
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
pub fn core_busy(before: &[(u64, u64)], after: &[(u64, u64)]) -> Vec<f64> {
    before
        .iter()
        .zip(after)
        .map(|(&(busy0, total0), &(busy1, total1))| {
            100.0 * busy1.saturating_sub(busy0) as f64 / total1.saturating_sub(total0).max(1) as f64
        })
        .collect()
}

/// How an idle core waits for its next wake-up: the cpuidle governor and, under the `haltpoll`
/// governor of a KVM guest, how long an idle vCPU polls before it halts. A halted vCPU is woken
/// by the host, which on some VMs costs tens of µs per hand-off between cores: the sequential
/// rows of the isolated placement make four such hand-offs per round trip.
pub fn idle_policy() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .ok()
            .map(|s| s.trim().to_owned())
    };
    let governor = read("/sys/devices/system/cpu/cpuidle/current_governor")
        .or_else(|| read("/sys/devices/system/cpu/cpuidle/current_governor_ro"))
        .unwrap_or_else(|| "unknown".to_owned());
    match read("/sys/module/haltpoll/parameters/guest_halt_poll_ns") {
        Some(ns) if governor == "haltpoll" => {
            format!("cpuidle governor haltpoll, guest halt polling up to {ns} ns")
        }
        _ => format!("cpuidle governor {governor}"),
    }
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}
