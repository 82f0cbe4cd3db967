//! What the per-connection owner check costs (issue 12): µs per accepted loopback connection
//! for connect + accept + close alone, and with the kernel asked who owns the peer, over
//! netlink (what the proxy does) and from `/proc/net/tcp` (its fallback), side by side in one run.
//!
//! `cargo bench -p benchmarks --bench owner_check` (`OWNER_CHECK_CONNECTIONS`, default 20,000).

use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use runtime_link::owner::{own_uid, SocketTable};

fn main() {
    let connections: u32 = std::env::var("OWNER_CHECK_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut table = SocketTable::new();
    let uid = own_uid();
    let run = |check: &mut dyn FnMut(std::net::SocketAddr, std::net::SocketAddr)| {
        let started = Instant::now();
        for _ in 0..connections {
            let client = TcpStream::connect(addr).unwrap();
            let (accepted, peer) = listener.accept().unwrap();
            check(peer, accepted.local_addr().unwrap());
            // Closed with a reset: no TIME_WAIT, so the ephemeral ports never run out.
            rustix::net::sockopt::set_socket_linger(&client, Some(Duration::ZERO)).unwrap();
            drop(client);
            drop(accepted);
        }
        started.elapsed().as_secs_f64() * 1e6 / f64::from(connections)
    };
    // Interleaved rounds, so a change in machine load shows in every column alike.
    let mut rows = [
        ("connect + accept + close", 0.0),
        ("+ netlink check", 0.0),
        ("+ /proc check", 0.0),
    ];
    for _ in 0..3 {
        rows[0].1 += run(&mut |_, _| {});
        rows[1].1 += run(&mut |peer, local| {
            let owner = table.connection(peer, local).unwrap().unwrap();
            assert_eq!(owner.uid, uid);
        });
        rows[2].1 += run(&mut |peer, local| {
            let owner = SocketTable::connection_from_proc(peer, local)
                .unwrap()
                .unwrap();
            assert_eq!(owner.uid, uid);
        });
    }
    println!("| per accepted connection ({connections} x 3 rounds) | µs | added by the check |");
    println!("|---|---|---|");
    let base = rows[0].1 / 3.0;
    for (name, total) in rows {
        let each = total / 3.0;
        println!("| {name} | {each:.1} | {:.1} |", each - base);
    }
}
