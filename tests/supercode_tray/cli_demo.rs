//! `supercode-tray demo-runtime` as a user runs it, under what a busy machine does to it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::{assert_clean, Home, START_TIMEOUT, TOKEN_CANARY};

/// CPU time (user + system, in clock ticks) of process `pid` so far.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // utime and stime are fields 14 and 15 of stat(5); the split starts at field 3.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
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
    let token_file = home.path("token");
    std::fs::write(&token_file, TOKEN_CANARY).unwrap();
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
    let limit = open_descriptors(pid) + 4;
    let lowered = Command::new("prlimit")
        .arg(format!("--pid={pid}"))
        .arg(format!("--nofile={limit}:{limit}"))
        .status()
        .expect("prlimit (util-linux) runs");
    assert!(lowered.success(), "{lowered:?}");
    let crowd: Vec<TcpStream> = (0..40)
        .map(|_| TcpStream::connect(address).unwrap())
        .collect();
    let deadline = Instant::now() + START_TIMEOUT;
    while open_descriptors(pid) < limit {
        assert!(
            Instant::now() < deadline,
            "the runtime took no connection up to its limit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let before = cpu_ticks(pid);
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(pid) - before;
    // 2 s are 200 ticks at the usual 100 a second: a spinning accept loop takes most of them.
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
