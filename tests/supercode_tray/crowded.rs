//! Our servers as a user runs them, out of file descriptors: `supercode-tray demo-runtime`, and
//! `supercode-tray hook-host` as an agent's hook starts it for a session. Each has its open-file
//! limit lowered (`prlimit`) to just above what it holds and is given 40 connections: one it
//! cannot accept stays queued, and a loop that tried again at once would spin a core.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agent_hooks::agent::Agent;
use agent_hooks::event::{EventKind, HookEvent};
use live_runtime::test_support::ChildGuard;
use live_runtime::ProcessIdentity;
use serde_json::Value;

use crate::cli::{assert_clean, Home, START_TIMEOUT, TOKEN_CANARY};

/// CPU time (user + system, in clock ticks) of process `pid` so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = bench_support::procfs::process_stat(pid).expect("the process runs");
    stat.utime + stat.stime
}

/// Lowers the open-file limit of `pid` to just above what it holds, then opens 40 connections
/// with `connect` and waits until it has taken as many as it can.
fn crowd_out<S>(pid: u32, connect: impl Fn() -> S) -> Vec<S> {
    let limit = open_descriptors(pid) + 4;
    let lowered = Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:{limit}"))
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(lowered.success(), "{lowered:?}");
    let crowd: Vec<S> = (0..40).map(|_| connect()).collect();
    let deadline = Instant::now() + START_TIMEOUT;
    while open_descriptors(pid) < limit {
        assert!(
            Instant::now() < deadline,
            "PID {pid} took no connection up to its limit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    crowd
}

/// The CPU ticks `pid` uses in the next 2 s: 200 at the usual 100 a second, and a spinning
/// accept loop takes most of them.
fn ticks_in_two_seconds(pid: u32) -> u64 {
    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    cpu_ticks(pid) - before
}

fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// `GET /api/health` with the token, on a connection of its own: the status code, if any came.
fn health(address: SocketAddr) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let request = format!(
        "GET /api/health HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {TOKEN_CANARY}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

// Proves: a demo runtime that runs out of file descriptors (connections it cannot accept wait in
// the queue) does not spin a core trying again at once, and serves again once they free: a
// runtime with its open-file limit lowered to just above what it holds, given 40 connections,
// uses under a fifth of a core over 2 s, then answers its health check after they close.
#[test]
fn a_runtime_out_of_file_descriptors_waits_instead_of_spinning_and_recovers() {
    let home = Home::new();
    let token_file = home.canary_token_file();
    let mut demo = home.start_demo("crowded", &token_file);
    let receipt: Value = serde_json::from_slice(
        &std::fs::read(
            home.path("receipts")
                .join(format!("{}.json", demo.endpoint)),
        )
        .unwrap(),
    )
    .unwrap();
    let address: SocketAddr = receipt["address"].as_str().unwrap().parse().unwrap();
    assert_eq!(health(address), Some(200), "it serves before");

    let pid = demo.pid();
    let crowd = crowd_out(pid, || TcpStream::connect(address).unwrap());
    let used = ticks_in_two_seconds(pid);
    assert!(
        used < 40,
        "the runtime used {used} ticks in 2 s while it could not accept"
    );

    drop(crowd);
    let deadline = Instant::now() + START_TIMEOUT;
    while health(address) != Some(200) {
        assert!(
            Instant::now() < deadline,
            "the runtime did not serve again once the connections closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_clean("the runtime's stderr", &demo.kill(), &[TOKEN_CANARY]);
}

// Proves: a session's host (started as the hook starts it, for this test's process as the
// agent's) that runs out of file descriptors waits instead of spinning, and takes the session's
// events again once the connections close: given SessionEnd, it ends.
#[test]
fn a_session_host_out_of_file_descriptors_waits_instead_of_spinning_and_recovers() {
    let home = Home::new();
    let run_dir = home.path("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let agent = ProcessIdentity::current();
    let session = "crowded-session-1";
    let cwd = home.path("workspace");
    let mut host = ChildGuard(
        home.command(&["hook-host", "claude-code", "--session", session, "--cwd"])
            .arg(&cwd)
            .args(["--pid", &agent.pid.to_string()])
            .args(["--start-time", &agent.start_time.to_string()])
            .env("XDG_RUNTIME_DIR", &run_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let sockets = run_dir.join("supercode").join("hooks");
    let socket = agent_hooks::channel::socket_path(&sockets, "claude-code", session);
    let deadline = Instant::now() + START_TIMEOUT;
    while UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "the host never listened");
        std::thread::sleep(Duration::from_millis(20));
    }

    let pid = host.pid();
    let crowd = crowd_out(pid, || UnixStream::connect(&socket).unwrap());
    let used = ticks_in_two_seconds(pid);
    assert!(
        used < 40,
        "the host used {used} ticks in 2 s while it could not accept"
    );

    drop(crowd);
    let end = HookEvent {
        session_id: session.into(),
        cwd: PathBuf::from(&cwd),
        subagent: None,
        transcript: None,
        spawned: None,
        kind: EventKind::SessionEnd,
    };
    // The host's socket takes the event once a descriptor frees; it then ends.
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let request = agent_hooks::channel::Request {
            event: end.clone(),
            wait: false,
            in_terminal: false,
            while_watched: false,
        };
        agent_hooks::hook::send(Agent::ClaudeCode, &sockets, &request);
        if host.0.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the host took no event once the connections closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
