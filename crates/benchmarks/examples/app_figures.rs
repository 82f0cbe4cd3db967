//! Measures the real app (`supercode-tray`, the tray with no subcommand) from the outside:
//! start-up, idle CPU with many live runtimes, and memory with the window closed and open.
//!
//! Run it inside a desktop session, e.g. the throwaway one of `scripts/test-env.sh`:
//!
//! ```text
//! scripts/test-env.sh cargo run --release -p benchmarks --example app_figures -- \
//!     --bin target/release/supercode-tray --runtimes 50 --idle-secs 60
//! ```
//!
//! - **Start-up**: from spawning the app to (a) its "starting Supercode Tray" log line and (b)
//!   its first pidfd: the watcher opens one per running runtime right after it has published
//!   its first snapshot to the tray, which `setup` builds before starting the watcher. So (b)
//!   is "tray built and inventory loaded", seen from outside without any log line.
//! - **Idle CPU**: utime + stime of the app and every descendant over `--idle-secs`, after
//!   `--settle-secs`, with `--runtimes` demo runtimes registered.
//! - **Start-up, two binaries side by side** (`--compare PATH`): start-ups of `--bin` and of
//!   `PATH` alternate, `--startups` of each with the same runtimes, and both are printed; idle,
//!   memory and the window-open run are skipped. E.g. `--bin target/release/supercode-tray`
//!   (which execs the app) against `--compare target/release/supercode-tray-app` (the app
//!   started directly) shows what the exec adds.
//! - **Memory**: VmRSS of the app and each descendant (WebKit processes are descendants), with
//!   the window closed and with `SUPERCODE_TRAY_OPEN_WINDOW=1`; with `--baseline PATH`, the same
//!   for a bare Tauri app (a tray icon; a window when `BARE_OPEN_WINDOW=1`) built with the same
//!   profile.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bench_support::procfs::process_stat;
use bench_support::stats::percentile;

/// How often start-up signals are polled: fine enough for millisecond-level start-up figures.
const POLL: Duration = Duration::from_millis(1);

/// How long the demo runtimes and the app may take to come up on a loaded machine.
const UP_TIMEOUT: Duration = Duration::from_secs(120);

struct Args {
    bin: PathBuf,
    compare: Option<PathBuf>,
    baseline: Option<PathBuf>,
    demo_bin: PathBuf,
    runtimes: usize,
    idle_secs: u64,
    settle_secs: u64,
    startups: usize,
}

fn parse_args() -> Args {
    let mut bin = None;
    let mut demo_bin = None;
    let mut baseline = None;
    let mut compare = None;
    let (mut runtimes, mut idle_secs, mut settle_secs, mut startups) = (50, 60, 5, 5);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().expect("a value");
        match arg.as_str() {
            "--bin" => bin = Some(PathBuf::from(value())),
            "--demo-bin" => demo_bin = Some(PathBuf::from(value())),
            "--baseline" => baseline = Some(PathBuf::from(value())),
            "--compare" => compare = Some(std::fs::canonicalize(value()).unwrap()),
            "--runtimes" => runtimes = value().parse().unwrap(),
            "--idle-secs" => idle_secs = value().parse().unwrap(),
            "--settle-secs" => settle_secs = value().parse().unwrap(),
            "--startups" => startups = value().parse().unwrap(),
            other => panic!("unknown argument {other}"),
        }
    }
    let bin = std::fs::canonicalize(bin.expect("--bin PATH to supercode-tray")).unwrap();
    Args {
        demo_bin: demo_bin
            .map(|p| std::fs::canonicalize(p).unwrap())
            .unwrap_or_else(|| bin.clone()),
        bin,
        compare,
        baseline,
        runtimes,
        idle_secs,
        settle_secs,
        startups,
    }
}

fn main() {
    let args = parse_args();
    let dir = tempfile::tempdir().unwrap();
    let env = environment(dir.path());
    let ticks_per_sec = clock_ticks();

    let mut demos: Vec<Child> = (0..args.runtimes)
        .map(|i| {
            Command::new(&args.demo_bin)
                .args(["demo-runtime", "--name", &format!("demo-{i}")])
                .envs(env.iter().cloned())
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    wait_for("the demo runtimes to register", || {
        (count_receipts(&dir.path().join("receipts")) == args.runtimes).then_some(())
    });
    println!(
        "binary: {} ({} bytes)",
        args.bin.display(),
        std::fs::metadata(&args.bin).unwrap().len()
    );
    println!("{} live demo runtimes registered", args.runtimes);

    if let Some(compare) = &args.compare {
        compare_startups(&args, compare, &env, dir.path());
        for demo in &mut demos {
            let _ = demo.kill();
            let _ = demo.wait();
        }
        return;
    }

    // Start-up, window closed.
    let mut to_log = Vec::new();
    let mut to_ready = Vec::new();
    for run in 0..args.startups {
        let log = dir.path().join(format!("app-{run}.err"));
        let (mut app, log_at, ready_at) = start_app(&args.bin, &env, &log, false);
        to_log.push(log_at);
        to_ready.push(ready_at);
        let last = run + 1 == args.startups;
        if last {
            idle_and_memory(&args, &app, ticks_per_sec, "window closed");
        }
        stop(&mut app);
    }
    to_log.sort();
    to_ready.sort();
    println!(
        "start-up ({} runs, median [min..max]): log line {} ms [{}..{}], tray + inventory loaded {} ms [{}..{}]",
        args.startups,
        percentile(&to_log, 0.5).as_millis(),
        to_log[0].as_millis(),
        to_log[to_log.len() - 1].as_millis(),
        percentile(&to_ready, 0.5).as_millis(),
        to_ready[0].as_millis(),
        to_ready[to_ready.len() - 1].as_millis(),
    );

    // Window open.
    let log = dir.path().join("app-open.err");
    let (mut app, _, _) = start_app(&args.bin, &env, &log, true);
    std::thread::sleep(Duration::from_secs(args.settle_secs.max(10)));
    if let Some(status) = app.try_wait().unwrap() {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        panic!("the app with its window open exited ({status}); its stderr:\n{text}");
    }
    let open = memory(app.id());
    print_memory("window open", &open);
    stop(&mut app);

    if let Some(baseline) = &args.baseline {
        println!(
            "baseline: {} ({} bytes)",
            baseline.display(),
            std::fs::metadata(baseline).unwrap().len()
        );
        for open in [false, true] {
            let mut command = Command::new(baseline);
            command
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if open {
                command.env("BARE_OPEN_WINDOW", "1");
            }
            let mut app = command.spawn().unwrap();
            std::thread::sleep(Duration::from_secs(args.settle_secs.max(10)));
            let label = if open {
                "baseline, window open"
            } else {
                "baseline, window closed"
            };
            print_memory(label, &memory(app.id()));
            stop(&mut app);
        }
    }

    for demo in &mut demos {
        let _ = demo.kill();
        let _ = demo.wait();
    }
}

/// `--compare`: start-ups of `args.bin` and `compare`, alternating, then both medians.
fn compare_startups(args: &Args, compare: &Path, env: &[(String, String)], dir: &Path) {
    let bins = [args.bin.as_path(), compare];
    let mut to_log = [Vec::new(), Vec::new()];
    let mut to_ready = [Vec::new(), Vec::new()];
    for run in 0..args.startups {
        for (i, bin) in bins.iter().enumerate() {
            let log = dir.join(format!("app-{i}-{run}.err"));
            let (mut app, log_at, ready_at) = start_app(bin, env, &log, false);
            to_log[i].push(log_at);
            to_ready[i].push(ready_at);
            stop(&mut app);
        }
    }
    for (i, bin) in bins.iter().enumerate() {
        to_log[i].sort();
        to_ready[i].sort();
        let (log, ready) = (&to_log[i], &to_ready[i]);
        println!(
            "{}: start-up ({} runs, median [min..max]): log line {:.1} ms [{:.1}..{:.1}], tray + inventory loaded {:.1} ms [{:.1}..{:.1}]",
            bin.display(),
            args.startups,
            ms(percentile(log, 0.5)),
            ms(log[0]),
            ms(log[log.len() - 1]),
            ms(percentile(ready, 0.5)),
            ms(ready[0]),
            ms(ready[ready.len() - 1]),
        );
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn environment(root: &Path) -> Vec<(String, String)> {
    let p = |name: &str| root.join(name).display().to_string();
    vec![
        ("SUPERCODE_RUNTIME_DIR".into(), p("receipts")),
        ("SUPERCODE_SECRET_STORE".into(), "file".into()),
        ("SUPERCODE_SECRET_DIR".into(), p("secrets")),
        ("CANON_HOME".into(), p("canon")),
        ("SUPERCODE_LOG_DIR".into(), p("logs")),
        ("SUPERCODE_STATE_DIR".into(), p("state")),
        ("RUST_LOG".into(), "info".into()),
    ]
}

/// Spawns the app; returns it with the time to its start log line and to its first pidfd.
fn start_app(
    bin: &Path,
    env: &[(String, String)],
    log: &Path,
    open_window: bool,
) -> (Child, Duration, Duration) {
    let mut command = Command::new(bin);
    command
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    // Said either way: unset, a fresh state directory is a first start, which opens the window.
    command.env(
        "SUPERCODE_TRAY_OPEN_WINDOW",
        if open_window { "1" } else { "0" },
    );
    let start = Instant::now();
    let app = command.spawn().unwrap();
    let mut log_at = None;
    let mut ready_at = None;
    let deadline = start + UP_TIMEOUT;
    while log_at.is_none() || ready_at.is_none() {
        assert!(Instant::now() < deadline, "the app did not come up");
        if log_at.is_none()
            && std::fs::read_to_string(log).is_ok_and(|t| t.contains("starting Supercode Tray"))
        {
            log_at = Some(start.elapsed());
        }
        if ready_at.is_none() && has_pidfd(app.id()) {
            ready_at = Some(start.elapsed());
        }
        std::thread::sleep(POLL);
    }
    (app, log_at.unwrap(), ready_at.unwrap())
}

fn stop(app: &mut Child) {
    // The app keeps running when asked to exit (it lives in the tray); SIGTERM ends it.
    let _ = Command::new("kill").arg(app.id().to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if app.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = app.kill();
    let _ = app.wait();
}

fn idle_and_memory(args: &Args, app: &Child, ticks_per_sec: u64, label: &str) {
    std::thread::sleep(Duration::from_secs(args.settle_secs));
    let before = memory(app.id());
    print_memory(&format!("{label}, after {} s", args.settle_secs), &before);
    let cpu_before = cpu_ticks(app.id());
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(args.idle_secs));
    let elapsed = started.elapsed().as_secs_f64();
    let cpu_after = cpu_ticks(app.id());
    let used = cpu_after.saturating_sub(cpu_before);
    println!(
        "idle CPU ({label}, {} runtimes, {:.0} s): {used} ticks = {:.3} s CPU = {:.3}% of one core",
        args.runtimes,
        elapsed,
        used as f64 / ticks_per_sec as f64,
        100.0 * used as f64 / ticks_per_sec as f64 / elapsed
    );
    let after = memory(app.id());
    print_memory(&format!("{label}, after idling"), &after);
}

fn print_memory(label: &str, processes: &[(u32, String, u64)]) {
    let total: u64 = processes.iter().map(|p| p.2).sum();
    let webkit = processes
        .iter()
        .filter(|p| p.1.starts_with("WebKit"))
        .count();
    let list: Vec<String> = processes
        .iter()
        .map(|(pid, name, kb)| {
            let split = rss_split(*pid);
            format!("{name}[{pid}] {:.1} MB ({split})", *kb as f64 / 1024.0)
        })
        .collect();
    println!(
        "RSS ({label}): total {:.1} MB over {} process(es), {webkit} WebKit: {}",
        total as f64 / 1024.0,
        processes.len(),
        list.join(", ")
    );
}

/// "anon X MB, file Y MB, shmem Z MB" from `/proc/<pid>/status`.
fn rss_split(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let mb = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| {
                l[key.len()..]
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map_or(0.0, |kb| kb / 1024.0)
    };
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
    let pss = rollup
        .lines()
        .find(|l| l.starts_with("Pss:"))
        .and_then(|l| {
            l[4..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kb| kb / 1024.0);
    format!(
        "anon {:.1} MB, file {:.1} MB, shmem {:.1} MB; PSS {pss:.1} MB; of it Mesa's libLLVM {:.1} MB",
        mb("RssAnon:"),
        mb("RssFile:"),
        mb("RssShmem:"),
        mapped_rss_mb(pid, "libLLVM")
    )
}

/// RSS of the mappings whose path contains `needle` (e.g. the software GL driver's LLVM, which
/// GTK/WebKit pull in on a display without a GPU such as Xvfb).
fn mapped_rss_mb(pid: u32, needle: &str) -> f64 {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut inside = false;
    let mut kb = 0.0;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or_default();
        if first.contains('-') && first.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            inside = line.contains(needle);
        } else if inside && line.starts_with("Rss:") {
            kb += line[4..]
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .unwrap_or(0.0);
        }
    }
    kb / 1024.0
}

/// `pid` and all its descendants: (pid, name, VmRSS in kB).
fn memory(pid: u32) -> Vec<(u32, String, u64)> {
    family(pid)
        .into_iter()
        .filter_map(|p| {
            let status = std::fs::read_to_string(format!("/proc/{p}/status")).ok()?;
            let field = |key: &str| {
                status
                    .lines()
                    .find(|l| l.starts_with(key))
                    .map(|l| l[key.len()..].trim().to_owned())
            };
            let name = field("Name:")?;
            let rss = field("VmRSS:")
                .and_then(|v| v.trim_end_matches("kB").trim().parse().ok())
                .unwrap_or(0);
            Some((p, name, rss))
        })
        .collect()
}

/// utime + stime of `pid` and every descendant (children that were reaped count in cutime of
/// their parent, so include those too).
fn cpu_ticks(pid: u32) -> u64 {
    family(pid)
        .into_iter()
        .filter_map(process_stat)
        .map(|stat| stat.utime + stat.stime + stat.cutime + stat.cstime)
        .sum()
}

/// `pid` and its descendants, from `/proc/*/stat` parent links.
fn family(pid: u32) -> Vec<u32> {
    let mut parent_of: HashMap<u32, u32> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Some(stat) = process_stat(p) {
            parent_of.insert(p, stat.ppid);
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let current = out[i];
        out.extend(
            parent_of
                .iter()
                .filter(|(_, ppid)| **ppid == current)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out
}

fn has_pidfd(pid: u32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path())
            .is_ok_and(|target| target.to_string_lossy().contains("[pidfd]"))
    })
}

fn count_receipts(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with("lre_") && name.ends_with(".json")
                })
                .count()
        })
        .unwrap_or(0)
}

fn clock_ticks() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100)
}

fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + UP_TIMEOUT;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
