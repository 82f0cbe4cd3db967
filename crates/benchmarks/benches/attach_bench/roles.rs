//! The processes the benchmark starts of itself: the same binary again, in a role named by an
//! environment variable. The demo runtime (the upstream every target reaches), an attach proxy
//! (for `--instructions` / `--syscalls`, so it can run under a counter) and the TCP relay (the
//! floor under every proxy). Secrets go to a child over its stdin, never argv or the
//! environment; a child serves until its stdin closes.

use std::net::SocketAddr;
use std::process::Stdio;

use attach_proxy::AttachProxy;
use demo_runtime::DemoConfig;
use live_runtime::Sensitive;

/// Environment variable that makes this binary serve the demo runtime instead of benchmarking.
pub const RUNTIME_ROLE_ENV: &str = "ATTACH_BENCH_RUNTIME_PROCESS";

/// Environment variable that makes this binary serve an attach proxy (for `--instructions`).
pub const PROXY_ROLE_ENV: &str = "ATTACH_BENCH_PROXY_PROCESS";

/// Environment variable that makes this binary serve a TCP relay (see [`serve_relay_process`]).
pub const RELAY_ROLE_ENV: &str = "ATTACH_BENCH_RELAY_PROCESS";

/// Buffer per direction of the TCP relay: enough for a request or a large read of a body.
const RELAY_BUFFER: usize = 256 * 1024;

/// Starts this binary again as a TCP relay to `upstream`; returns it and its address.
pub async fn spawn_relay_process(upstream: SocketAddr) -> (tokio::process::Child, SocketAddr) {
    spawn_listening_role(RELAY_ROLE_ENV, &[], &format!("{upstream}\n")).await
}

/// The floor under every proxy in the tables: a TCP relay that copies bytes both ways on one
/// thread (a single-threaded tokio runtime, one upstream connection per client connection,
/// `TCP_NODELAY` on both) and parses nothing, so it can neither check a session nor add the
/// token; the client sends the token itself. No HTTP proxy can do less per request, so "% of
/// direct" of this row bounds what any proxy gets on this machine in this placement. Serves
/// until stdin closes.
pub async fn serve_relay_process() {
    use std::io::{BufRead, Read};
    let mut upstream = String::new();
    std::io::stdin().lock().read_line(&mut upstream).unwrap();
    let upstream: SocketAddr = upstream.trim().parse().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    // The benchmark's private pipe: the parent needs the address to connect.
    println!("{}", listener.local_addr().unwrap());
    std::thread::Builder::new()
        .name("tcp-relay".to_owned())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((mut client, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(async move {
                        let Ok(mut runtime) = tokio::net::TcpStream::connect(upstream).await else {
                            return;
                        };
                        let _ = client.set_nodelay(true);
                        let _ = runtime.set_nodelay(true);
                        let _ = tokio::io::copy_bidirectional_with_sizes(
                            &mut client,
                            &mut runtime,
                            RELAY_BUFFER,
                            RELAY_BUFFER,
                        )
                        .await;
                    });
                }
            });
        })
        .unwrap();
    let _ =
        tokio::task::spawn_blocking(|| std::io::stdin().lock().read_to_end(&mut Vec::new())).await;
}

/// Starts this binary again as a demo-runtime process, under `wrapper` (e.g. valgrind) if not
/// empty. The token goes over stdin (not argv or the environment); the child prints its address
/// and serves until its stdin closes.
pub async fn spawn_runtime_process(
    token: &str,
    wrapper: &[String],
) -> (tokio::process::Child, SocketAddr) {
    spawn_listening_role(RUNTIME_ROLE_ENV, wrapper, &format!("{token}\n")).await
}

/// [`spawn_role`] for a role whose first line on stdout is the address it listens on.
async fn spawn_listening_role(
    role: &str,
    wrapper: &[String],
    input: &str,
) -> (tokio::process::Child, SocketAddr) {
    let (child, mut lines) = spawn_role(role, wrapper, input).await;
    let addr = lines
        .next_line()
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("{role} child prints its address"))
        .parse()
        .unwrap();
    (child, addr)
}

pub type ChildLines = tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>;

/// Starts this binary again in `role`, writes `input` to its stdin (kept open: closing it stops
/// the child) and returns its stdout lines: a private pipe, not a log.
pub async fn spawn_role(
    role: &str,
    wrapper: &[String],
    input: &str,
) -> (tokio::process::Child, ChildLines) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let exe = std::env::current_exe().unwrap();
    let mut command = match wrapper.split_first() {
        Some((program, args)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(args).arg(&exe);
            command
        }
        None => tokio::process::Command::new(&exe),
    };
    let mut child = command
        .env(role, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("child process starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    child.stdin = Some(stdin);
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// Serves an attach proxy in this process until stdin closes. Reads the runtime's address and
/// token from stdin; prints the proxy's origin and one attach URL to the parent's private pipe.
pub async fn serve_proxy_process() {
    use std::io::{BufRead, Read, Write};
    let mut input = std::io::stdin().lock();
    let (mut addr, mut token) = (String::new(), String::new());
    input.read_line(&mut addr).unwrap();
    input.read_line(&mut token).unwrap();
    drop(input);
    let proxy = AttachProxy::start(
        Sensitive::new(addr.trim().parse().unwrap()),
        Sensitive::new(token.trim().to_owned()),
    )
    .await
    .unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", proxy.origin()).unwrap();
    writeln!(out, "{}", proxy.mint_code()).unwrap();
    out.flush().unwrap();
    drop(out);
    let _ =
        tokio::task::spawn_blocking(|| std::io::stdin().lock().read_to_end(&mut Vec::new())).await;
    proxy.shutdown().await;
}

/// Serves the demo runtime in this process until stdin closes; its token comes over stdin.
pub async fn serve_runtime_process() {
    use std::io::{BufRead, Read};
    let mut token = String::new();
    std::io::stdin().lock().read_line(&mut token).unwrap();
    let runtime = demo_runtime::serve(DemoConfig::new(
        "bench",
        Sensitive::new(token.trim().to_owned()),
    ))
    .await
    .unwrap();
    // The benchmark's private pipe, not a log: the parent needs the address to connect.
    println!("{}", runtime.local_addr().expose());
    // Serve until the parent closes our stdin (or dies).
    let _ =
        tokio::task::spawn_blocking(|| std::io::stdin().lock().read_to_end(&mut Vec::new())).await;
    runtime.shutdown().await;
}
