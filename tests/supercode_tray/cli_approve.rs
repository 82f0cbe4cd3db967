//! `pending` and `approve` as a user runs them, against the contract-following test Canon
//! server: each state printed once, a rejection's exit code, and the poll token sent nowhere
//! but the Canon it was issued by.

use std::process::Stdio;

use live_runtime::test_support::wait_until;
use serde_json::Value;

use crate::cli::{assert_clean, Home, API_KEY_CANARY, START_TIMEOUT};

/// A pending registration for `profile` written as the package writes it, and the
/// contract-following Canon server the CLI is pointed at (kept alive by the returned runtime).
fn pending_with_server(
    home: &mut Home,
    profile: &str,
    config: canon_local::test_server::TestServerConfig,
) -> (
    canon_local::CanonHome,
    tokio::runtime::Runtime,
    canon_local::test_server::TestServer,
) {
    let canon = canon_local::CanonHome::at(home.path("canon")).unwrap();
    canon_local::get_or_create_pending_registration(&canon, profile, Some("codex")).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(canon_local::test_server::TestServer::start(config))
        .unwrap();
    home.extra_env
        .push(("CANON_BASE_URL", server.base_url().into()));
    (canon, runtime, server)
}

/// Issue 3's "done when" for approval, from the command line: `pending --json` shows the
/// package's pending registration without its poll token; `approve` completes it against the
/// contract-following server, printing each state once; `agents.json` then holds the profile in
/// the package's shape and nothing printed holds the API key. (The poll token is checked at the
/// core's level, where it can be read while it exists: `core canary`.)
#[test]
fn approve_completes_a_pending_registration_and_prints_each_state_once() {
    let mut home = Home::new();
    let (canon, _runtime, server) = pending_with_server(
        &mut home,
        "newbie",
        canon_local::test_server::TestServerConfig {
            pending_polls: 3,
            api_key: API_KEY_CANARY.into(),
            poll_interval_ms: Some(50),
            ..Default::default()
        },
    );
    let mut printed = String::new();

    let pending = home.run(&["pending", "--json"], &mut printed);
    assert!(pending.status.success(), "{pending:?}");
    let pending: Value = serde_json::from_slice(&pending.stdout).unwrap();
    assert_eq!(pending[0]["profile"], "newbie");
    assert_eq!(pending[0]["clientType"], "codex");
    assert_eq!(pending[0]["state"], "unsubmitted");
    assert!(pending[0].get("pollToken").is_none(), "{pending}");

    let approve = home.run(&["approve", "newbie"], &mut printed);
    let stdout = String::from_utf8_lossy(&approve.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&approve.stderr).into_owned();
    assert!(approve.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("newbie: approved"), "{stdout}");
    let progress: Vec<&str> = stderr.lines().collect();
    assert!(!progress.is_empty(), "progress is shown");
    for pair in progress.windows(2) {
        assert_ne!(pair[0], pair[1], "a state is printed once: {stderr}");
    }
    assert!(!stderr.contains("approved"), "{stderr}");

    let agents: Value =
        serde_json::from_str(&std::fs::read_to_string(canon.agents_path()).unwrap()).unwrap();
    assert_eq!(agents["newbie"]["apiKey"], API_KEY_CANARY);
    assert_eq!(agents["newbie"]["clientType"], "codex");
    let after = home.run(&["pending", "--json"], &mut printed);
    let after: Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(after, serde_json::json!([]));

    let state = server.state();
    assert_eq!(state.registrations.len(), 1);
    assert!(state.registrations[0].acked, "the approval was acked");
    assert_clean("the CLI's output", &printed, &[API_KEY_CANARY]);
}

/// A rejected registration is the command's failure: its state on stdout, exit 1.
#[test]
fn approve_exits_1_when_the_registration_is_rejected() {
    let mut home = Home::new();
    let (_canon, _runtime, _server) = pending_with_server(
        &mut home,
        "nope",
        canon_local::test_server::TestServerConfig {
            reject: true,
            ..Default::default()
        },
    );
    let mut printed = String::new();

    let approve = home.run(&["approve", "nope"], &mut printed);

    assert_eq!(approve.status.code(), Some(1), "{approve:?}");
    let stdout = String::from_utf8_lossy(&approve.stdout).into_owned();
    assert!(stdout.starts_with("nope: rejected"), "{stdout}");
    assert!(String::from_utf8_lossy(&approve.stderr).contains("error: "));
}

/// A loopback listener that only counts connections: proof that nothing at all went its way.
struct Witness {
    url: String,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Witness {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(stream);
            }
        });
        Self { url, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Issue 13: `approve` killed mid-poll and started again with another `CANON_BASE_URL` refuses
/// to send the poll token there: the other server gets not one connection. Plain http to another
/// machine is refused outright.
#[test]
fn approve_restarted_mid_poll_with_another_canon_base_url_sends_the_poll_token_nowhere_else() {
    let mut home = Home::new();
    let (_canon, _runtime, server) = pending_with_server(
        &mut home,
        "moving",
        canon_local::test_server::TestServerConfig {
            pending_polls: 1_000_000,
            poll_interval_ms: Some(50),
            ..Default::default()
        },
    );
    let mut first = home
        .command(&["approve", "moving"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("approve to poll", START_TIMEOUT, || {
        (server.state().polls > 0).then_some(())
    });
    first.kill().unwrap();
    first.wait().unwrap();

    let elsewhere = Witness::start();
    home.extra_env.retain(|(name, _)| *name != "CANON_BASE_URL");
    home.extra_env
        .push(("CANON_BASE_URL", elsewhere.url.clone().into()));
    let mut printed = String::new();
    let again = home.run(&["approve", "moving"], &mut printed);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    let stderr = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(stderr.contains(&server.base_url()), "{stderr}");
    assert!(
        stderr.contains("only sent to the API that issued it"),
        "{stderr}"
    );
    assert_eq!(elsewhere.connections(), 0, "the other Canon was contacted");

    home.extra_env.retain(|(name, _)| *name != "CANON_BASE_URL");
    home.extra_env
        .push(("CANON_BASE_URL", "http://canon.example.com".into()));
    let clear = home.run(&["approve", "moving"], &mut printed);
    assert_eq!(clear.status.code(), Some(1), "{clear:?}");
    let stderr = String::from_utf8_lossy(&clear.stderr).into_owned();
    assert!(stderr.contains("over https only"), "{stderr}");
}
