//! Shared fixtures: a private set of locations, real child processes (a runtime registering
//! through the real library, `sleep`, the app's `demo-runtime`), hand-written receipts and
//! catalog entries, an event recorder and deadline-bounded polling.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use canon_local::{
    AgentProfile, CanonHome, LocalRuntimeCatalogEntry, LocalRuntimeStatus, ReviveCapability,
};
use live_runtime::{
    LiveRuntimeEndpoint, LiveRuntimeMetadata, LiveRuntimeRegistration, LiveRuntimeSource,
    ReceiptDir, SecretStore, Sensitive,
};
use supercode_core::revive::ReviveRequest;
use supercode_core::view::{ReviveOutcome, RuntimeView, Snapshot};
use supercode_core::{CoreError, CoreEvent, Locations, Supercode};

use live_runtime::test_support;

/// The longest any single wait in these tests may take (the shared, generous bound).
pub const TIMEOUT: Duration = live_runtime::test_support::WAIT_TIMEOUT;

/// The fixture root a child process should use.
pub const ROOT_ENV: &str = "SUPERCODE_CORE_TEST_ROOT";

/// The runtime name a runtime child registers under.
const NAME_ENV: &str = "SUPERCODE_CORE_TEST_NAME";

/// A private set of locations under one temporary directory: receipts, file secret store,
/// `$CANON_HOME`, logs, state and a workspace.
pub struct Fixture {
    _dir: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub locations: Locations,
}

impl Fixture {
    /// Fresh locations with the plaintext file store.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let store = SecretStore::file(root.join("secrets"));
        Self::build(Some(dir), root, store)
    }

    /// Fresh locations with the given secret store (e.g. the OS keychain).
    pub fn with_store(store: SecretStore) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        Self::build(Some(dir), root, store)
    }

    /// The locations a parent test created under `root` (for re-executed children).
    pub fn at(root: PathBuf) -> Self {
        let store = SecretStore::file(root.join("secrets"));
        Self::build(None, root, store)
    }

    fn build(dir: Option<tempfile::TempDir>, root: PathBuf, store: SecretStore) -> Self {
        std::fs::create_dir_all(root.join("workspace")).unwrap();
        let locations = Locations {
            receipts: ReceiptDir::new(root.join("receipts"), store),
            canon: CanonHome::at(root.join("canon")).unwrap(),
            log_dir: root.join("logs"),
            state_dir: root.join("state"),
        };
        Self {
            _dir: dir,
            root,
            locations,
        }
    }

    /// A core over these locations that shows no events.
    pub fn core(&self) -> Supercode {
        Supercode::without_events(self.locations.clone())
    }

    /// A core over these locations whose events go to `sink` (see [`recorder`]).
    pub fn core_with(&self, sink: impl Fn(CoreEvent) + Send + Sync + 'static) -> Supercode {
        Supercode::new(self.locations.clone(), sink)
    }

    pub fn canon(&self) -> &CanonHome {
        &self.locations.canon
    }

    pub fn receipts(&self) -> &ReceiptDir {
        &self.locations.receipts
    }

    pub fn store(&self) -> &SecretStore {
        self.locations.receipts.secret_store()
    }

    /// A directory that exists, canonicalized (what runtimes record as their cwd).
    pub fn workspace(&self) -> PathBuf {
        std::fs::canonicalize(self.root.join("workspace")).unwrap()
    }

    /// The environment that points a child process (app binary, runtime) at these locations,
    /// with the file secret store (child processes must not depend on a keychain).
    pub fn child_env(&self) -> Vec<(&'static str, OsString)> {
        vec![
            (
                "SUPERCODE_RUNTIME_DIR",
                self.root.join("receipts").into_os_string(),
            ),
            ("SUPERCODE_SECRET_STORE", "file".into()),
            (
                "SUPERCODE_SECRET_DIR",
                self.root.join("secrets").into_os_string(),
            ),
            ("CANON_HOME", self.root.join("canon").into_os_string()),
            ("SUPERCODE_LOG_DIR", self.root.join("logs").into_os_string()),
            (
                "SUPERCODE_STATE_DIR",
                self.root.join("state").into_os_string(),
            ),
            (ROOT_ENV, self.root.clone().into_os_string()),
        ]
    }

    /// Adds `profile` to `agents.json` with `api_key`.
    pub fn add_profile(&self, profile: &str, api_key: &str) {
        canon_local::upsert_agent_profile(
            self.canon(),
            profile,
            AgentProfile::new(
                Sensitive::new(api_key.to_owned()),
                format!("agent-{profile}"),
                format!("Agent {profile}"),
                canon_local::json::iso_now(),
            ),
        )
        .unwrap();
    }

    /// Writes a revivable catalog entry for `profile` running `launch` in the workspace; returns
    /// its id.
    pub fn add_catalog_entry(
        &self,
        profile: Option<&str>,
        launch: &[&str],
        status: LocalRuntimeStatus,
        pid: Option<u32>,
    ) -> String {
        self.add_catalog_entry_with(profile, launch, status, pid, ReviveCapability::Revivable)
    }

    /// [`Fixture::add_catalog_entry`] with the revive capability the entry records.
    pub fn add_catalog_entry_with(
        &self,
        profile: Option<&str>,
        launch: &[&str],
        status: LocalRuntimeStatus,
        pid: Option<u32>,
        capability: ReviveCapability,
    ) -> String {
        let cwd = self.workspace().to_string_lossy().into_owned();
        let launch: Vec<String> = launch.iter().map(|s| (*s).to_owned()).collect();
        let id = canon_local::build_local_runtime_id("sdk", profile, &cwd, &launch).unwrap();
        let mut entry = LocalRuntimeCatalogEntry::new(
            id.clone(),
            "sdk",
            profile.map(str::to_owned),
            cwd,
            launch,
            status,
            capability,
        );
        entry.pid = pid.map(i64::from);
        entry.last_stopped_at = Some(canon_local::json::iso_now());
        canon_local::upsert_local_runtime_entry(self.canon(), &entry).unwrap();
        id
    }

    /// Writes `locks/<profile>.lock` naming `pid` as the holder, as the package does.
    pub fn hold_lock_as(&self, profile: &str, pid: u32) {
        std::fs::create_dir_all(self.canon().locks_dir()).unwrap();
        std::fs::write(
            self.canon().lock_path(profile),
            format!("{{\"pid\":{pid},\"token\":\"held-by-test\"}}"),
        )
        .unwrap();
    }
}

/// Revives `id` as the window does: shows its plan, then confirms that plan's digest.
pub async fn revive_confirmed(core: &Supercode, id: &str) -> Result<ReviveOutcome, CoreError> {
    let plan = core.revive_plan(id).await?;
    core.revive(ReviveRequest {
        id: id.to_owned(),
        plan_digest: plan.digest,
        allow_env: Vec::new(),
    })
    .await
}

/// A revive of `id` confirming no plan (for refusals that come before any plan is compared).
pub fn unplanned(id: &str) -> ReviveRequest {
    ReviveRequest {
        id: id.to_owned(),
        ..ReviveRequest::default()
    }
}

/// Registers a runtime of this process through the real library, on a real loopback listener.
pub fn register(
    receipts: &ReceiptDir,
    name: &str,
    token: &str,
    canon_runtime_id: Option<&str>,
) -> (LiveRuntimeRegistration, TcpListener) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let registration = register_at(receipts, name, token, canon_runtime_id, address);
    (registration, listener)
}

pub fn register_at(
    receipts: &ReceiptDir,
    name: &str,
    token: &str,
    canon_runtime_id: Option<&str>,
    address: SocketAddr,
) -> LiveRuntimeRegistration {
    let workspace = std::env::temp_dir();
    live_runtime::register_live_runtime_with_metadata(
        receipts,
        &format!("test:{name}"),
        LiveRuntimeSource {
            session_id: format!("session-{name}"),
            workspace,
        },
        address,
        Sensitive::new(token.to_owned()),
        LiveRuntimeMetadata {
            runtime_kind: "sdk".into(),
            display_name: Some(name.to_owned()),
            canon_runtime_id: canon_runtime_id.map(str::to_owned),
            ..LiveRuntimeMetadata::default()
        },
    )
    .unwrap()
}

/// Writes a receipt by hand (atomically, as foreign writers must) for process `pid` with the
/// given start time; returns its endpoint.
pub fn write_receipt(receipts: &ReceiptDir, pid: u32, start_time: u64, name: &str) -> String {
    let endpoint = LiveRuntimeEndpoint::generate();
    let metadata = serde_json::json!({ "runtimeKind": "sdk", "displayName": name });
    write_receipt_as(receipts, &endpoint, pid, start_time, name, metadata);
    endpoint.to_string()
}

/// Writes (or rewrites) the receipt `endpoint` by hand, with the given `metadata` object.
pub fn write_receipt_as(
    receipts: &ReceiptDir,
    endpoint: &LiveRuntimeEndpoint,
    pid: u32,
    start_time: u64,
    name: &str,
    metadata: serde_json::Value,
) {
    let mut receipt = test_support::foreign_receipt(endpoint, name, pid, Some(start_time));
    receipt["metadata"] = metadata;
    test_support::write_receipt_file(receipts.path(), &format!("{endpoint}.json"), &receipt);
}

/// A `sleep` process (`Sleeper::sleep()`): a real, live pid that is not this process. Killed
/// and reaped on drop.
pub use live_runtime::test_support::ChildGuard as Sleeper;

/// Sends SIGKILL to a process that is not our child (e.g. a revived, detached runtime).
pub fn kill_pid(pid: u32) {
    use rustix::process::{kill_process, Pid, Signal};
    if let Some(pid) = Pid::from_raw(i32::try_from(pid).unwrap()) {
        let _ = kill_process(pid, Signal::KILL);
    }
}

/// The session id of `pid` (field 6 of `/proc/<pid>/stat`).
pub fn session_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after
        .split_ascii_whitespace()
        .nth(3)
        .unwrap()
        .parse()
        .unwrap()
}

pub use live_runtime::test_support::wait_until;

/// The runtime in `snapshot` with this id or catalog id.
/// The attach proxy's own loopback address, from its one-time URL.
pub fn proxy_address(url: &str) -> SocketAddr {
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap();
    authority.parse().unwrap()
}

/// Whether anything accepts a TCP connection at `address` (within two seconds).
pub fn accepts(address: SocketAddr) -> bool {
    std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
}

pub fn find<'a>(snapshot: &'a Snapshot, id: &str) -> Option<&'a RuntimeView> {
    snapshot.runtimes.iter().find(|r| {
        r.id == id || r.catalog_id.as_deref() == Some(id) || r.endpoint.as_deref() == Some(id)
    })
}

/// Every core event the sink received, with when it arrived.
pub struct Events {
    rx: mpsc::Receiver<(Instant, CoreEvent)>,
    pub seen: Vec<(Instant, CoreEvent)>,
}

/// A sink for [`Fixture::core_with`] and the recorder reading it.
pub fn recorder() -> (impl Fn(CoreEvent) + Send + Sync + 'static, Events) {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let sink = move |event: CoreEvent| {
        let _ = tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send((Instant::now(), event));
    };
    (
        sink,
        Events {
            rx,
            seen: Vec::new(),
        },
    )
}

impl Events {
    /// Waits for the next event matching `pred` (earlier ones are kept in `seen`).
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&CoreEvent) -> bool,
    ) -> (Instant, CoreEvent) {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((at, event)) => {
                    self.seen.push((at, event.clone()));
                    if pred(&event) {
                        return (at, event);
                    }
                }
                Err(_) => panic!(
                    "timed out after {timeout:?} waiting for {what}; saw: {}",
                    self.summary()
                ),
            }
        }
    }

    /// Waits for the next snapshot matching `pred`.
    pub fn wait_for_snapshot(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&Snapshot) -> bool,
    ) -> (Instant, Snapshot) {
        let (at, event) = self.wait_for(what, timeout, |e| match e {
            CoreEvent::Snapshot(s) => pred(s),
            _ => false,
        });
        match event {
            CoreEvent::Snapshot(s) => (at, Arc::unwrap_or_clone(s)),
            _ => unreachable!(),
        }
    }

    /// From an async test: waits, off the async workers, until a snapshot lists a runtime named
    /// `name` (within [`TIMEOUT`]), and gives the recorder back.
    pub async fn listed(mut self, name: &str) -> Self {
        let name = name.to_owned();
        tokio::task::spawn_blocking(move || {
            self.wait_for_snapshot("the runtime to be listed", TIMEOUT, |s| {
                s.runtimes.iter().any(|r| r.name == name)
            });
            self
        })
        .await
        .unwrap()
    }

    /// Takes whatever has arrived so far without waiting.
    pub fn drain(&mut self) {
        while let Ok(item) = self.rx.try_recv() {
            self.seen.push(item);
        }
    }

    /// The `RuntimeDied` names seen so far.
    pub fn died(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|(_, e)| match e {
                CoreEvent::RuntimeDied { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// The `RegistrationWaiting` profiles seen so far.
    pub fn waiting(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|(_, e)| match e {
                CoreEvent::RegistrationWaiting { profile } => Some(profile.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn summary(&self) -> String {
        let items: Vec<String> = self
            .seen
            .iter()
            .map(|(_, e)| match e {
                CoreEvent::Snapshot(s) => format!(
                    "Snapshot[{}]",
                    s.runtimes
                        .iter()
                        .map(|r| format!("{}:{:?}", r.name, r.status))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                other => format!("{other:?}"),
            })
            .collect();
        items.join(" | ")
    }
}

/// The app binary (`supercode-tray`): `SUPERCODE_TRAY_BIN`, else the one cargo built beside
/// this test binary ([`cargo_bin_dir`]). `None` (with a message) when it has not been built;
/// with `SUPERCODE_REQUIRE_E2E=1` a missing binary fails the test instead.
pub fn tray_binary(test: &str) -> Option<PathBuf> {
    let path = std::env::var_os("SUPERCODE_TRAY_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| cargo_bin_dir().join("supercode-tray"));
    if path.is_file() {
        return Some(path);
    }
    if std::env::var("SUPERCODE_REQUIRE_E2E").as_deref() == Ok("1") {
        panic!(
            "SUPERCODE_REQUIRE_E2E=1 but the app binary {} is missing; build it with `cargo build --workspace --bins --tests` or set SUPERCODE_TRAY_BIN",
            path.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: the app binary {} is missing; build it with `cargo build --workspace --bins --tests`, or set SUPERCODE_REQUIRE_E2E=1 to make this a failure",
        path.display()
    );
    None
}

/// Where cargo puts this build's binaries: the directory above this test binary's `deps/`
/// (`<target dir>/<profile>`). The app's binaries belong to another package, so cargo gives
/// this test no `CARGO_BIN_EXE_*` for them; their place beside this binary follows
/// `CARGO_TARGET_DIR`, `--target` and the profile as cargo does.
fn cargo_bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's directory");
    assert!(
        deps.ends_with("deps"),
        "the test binary {} is not in cargo's deps directory; set SUPERCODE_TRAY_BIN",
        exe.display()
    );
    deps.parent().expect("cargo's profile directory").to_owned()
}

pub use live_runtime::test_support::{is_child_for, keychain_or_skip};

fn child_command(test: &str) -> Command {
    test_support::child_test_command(test)
}

/// Runs the ignored helper test `test` in a fresh copy of this binary with `env`, and fails
/// unless it passes and prints `CHILD_OK`. Its output is returned (and shown on failure).
pub fn run_child(test: &str, env: &[(&'static str, OsString)]) -> String {
    let mut command = child_command(test);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    let output = command
        .output()
        .expect("the test binary can re-execute itself");
    test_support::assert_child_ok(test, &output)
}

/// A separate process that registered a runtime through the real library. Closing its stdin
/// makes it unregister cleanly and exit; dropping it kills it.
pub struct RuntimeProcess {
    child: Child,
    pub endpoint: String,
}

const RUNTIME_CHILD: &str = "support::runtime_child";

impl RuntimeProcess {
    pub fn start(fixture: &Fixture, name: &str) -> Self {
        let mut command = child_command(RUNTIME_CHILD);
        let mut child = command
            .envs(fixture.child_env())
            .env(NAME_ENV, name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let endpoint = first_line_with(&mut child, "ENDPOINT ");
        Self { child, endpoint }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes stdin: the runtime unregisters (removes its receipt) and exits; waits for that.
    pub fn stop_cleanly(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "the runtime child exited with {status}");
    }

    /// SIGKILL and reap: the receipt stays behind, as after a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RuntimeProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Reads `child`'s stdout until a line containing `prefix` and returns the word after it; the
/// rest of the output is drained in the background so the child never blocks on a full pipe.
pub fn first_line_with(child: &mut Child, prefix: &str) -> String {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let prefix = prefix.to_owned();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent {
                // The test harness may print "test name ... " on the same line first.
                if let Some(at) = line.find(&prefix) {
                    let rest = &line[at + prefix.len()..];
                    let word = rest.split_whitespace().next().unwrap_or_default();
                    let _ = tx.send(word.to_owned());
                    sent = true;
                }
            }
        }
    });
    rx.recv_timeout(TIMEOUT)
        .expect("the child process printed its endpoint")
}

/// Helper run in a child process by [`RuntimeProcess`]: registers, prints its endpoint, and
/// unregisters when stdin closes.
#[test]
#[ignore = "helper: runs only in a child process started by RuntimeProcess"]
fn runtime_child() {
    if !is_child_for(RUNTIME_CHILD) {
        return;
    }
    let fixture = Fixture::at(PathBuf::from(std::env::var_os(ROOT_ENV).unwrap()));
    let name = std::env::var(NAME_ENV).unwrap();
    let (registration, _listener) = register(fixture.receipts(), &name, "child-token", None);
    println!("ENDPOINT {}", registration.endpoint());
    std::io::stdout().flush().unwrap();
    let mut sink = String::new();
    while std::io::stdin().read_line(&mut sink).unwrap_or(0) > 0 {}
    registration.unregister().unwrap();
}
