//! Shared test plumbing: a temporary Canon home and the Node reference driver.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use canon_local::client::RegistrationRequest;
use canon_local::test_server::{TestServer, TestServerConfig};
use canon_local::{
    approve, get_or_create_pending_registration, ApprovalError, ApprovalOptions, ApprovalOutcome,
    ApprovalState, CanonHome, RegistrationOrigins, SecretStore,
};
use serde_json::{json, Value};

/// A Canon home in a fresh temporary directory.
pub struct TempHome {
    _dir: tempfile::TempDir,
    pub home: CanonHome,
    /// The tray's record of each registration's Canon API, outside the Canon home as in the app.
    pub origins: RegistrationOrigins,
}

pub fn temp_home() -> TempHome {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = CanonHome::at(dir.path().join("canon")).expect("home");
    let origins = RegistrationOrigins::at(dir.path().join("tray-state/origins.json"));
    TempHome {
        _dir: dir,
        home,
        origins,
    }
}

/// The opt-in file secret store in a fresh temporary directory (kept alive by the `TempDir`).
pub fn file_secrets() -> (tempfile::TempDir, SecretStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SecretStore::file(dir.path());
    (dir, store)
}

/// Approval options against `base_url` that poll fast and give up in time for a test.
pub fn fast_options(base_url: String) -> ApprovalOptions {
    ApprovalOptions {
        base_url: Some(base_url),
        deadline: Duration::from_secs(30),
        poll_interval: Duration::from_millis(20),
        min_poll_interval: Duration::from_millis(5),
        max_backoff: Duration::from_millis(200),
    }
}

/// Generous bound on any single approval run (CI machines are slow; runs take well under 1 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// One approval run of the registration `alice`: its outcome and every state it reported.
pub struct Run {
    pub outcome: Result<ApprovalOutcome, ApprovalError>,
    pub states: Vec<ApprovalState>,
}

/// Runs the approval of `alice` to its end, within [`RUN_TIMEOUT`].
pub async fn approve_alice(t: &TempHome, secrets: &SecretStore, options: &ApprovalOptions) -> Run {
    let mut states = Vec::new();
    let outcome = tokio::time::timeout(
        RUN_TIMEOUT,
        approve(&t.home, &t.origins, "alice", secrets, options, |s| {
            states.push(s)
        }),
    )
    .await
    .expect("approve did not finish in time");
    Run { outcome, states }
}

/// A fake Canon and a fresh home holding alice's pending registration, ready to approve.
pub struct Case {
    pub server: TestServer,
    pub t: TempHome,
    pub secrets: SecretStore,
    _secrets_dir: tempfile::TempDir,
}

pub async fn pending_alice(config: TestServerConfig, client_type: Option<&str>) -> Case {
    let server = TestServer::start(config).await.unwrap();
    let t = temp_home();
    let (_secrets_dir, secrets) = file_secrets();
    get_or_create_pending_registration(&t.home, "alice", client_type).unwrap();
    Case {
        server,
        t,
        secrets,
        _secrets_dir,
    }
}

impl Case {
    /// One approval run against the fake Canon, polling fast.
    pub async fn approve(&self) -> Run {
        approve_alice(
            &self.t,
            &self.secrets,
            &fast_options(self.server.base_url()),
        )
        .await
    }
}

/// A registration request as a runtime submits it.
pub fn registration(name: &str, local_registration_id: &str) -> RegistrationRequest {
    RegistrationRequest {
        name: name.into(),
        description: "d".into(),
        client_type: None,
        local_registration_id: local_registration_id.into(),
    }
}

fn cli_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/cli.mjs")
}

/// Whether Node is usable. Panics when it is not but `SUPERCODE_REQUIRE_NODE=1`.
pub fn node_available() -> bool {
    let ok = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var("SUPERCODE_REQUIRE_NODE").as_deref() == Ok("1") {
        panic!("node is required (SUPERCODE_REQUIRE_NODE=1) but could not be run");
    }
    if !ok {
        eprintln!("node not found: skipping the reference cross-check");
    }
    ok
}

/// Returns early from a test when Node is missing (and not required).
#[macro_export]
macro_rules! require_node {
    () => {
        if !$crate::support::node_available() {
            return;
        }
    };
}

fn spawn(home: &CanonHome, cmd: &str, args: Value) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut child = Command::new("node")
        .arg(cli_path())
        .env("CANON_HOME", home.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn node");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    writeln!(stdin, "{}", json!({ "cmd": cmd, "args": args })).expect("write request");
    (child, stdin, stdout)
}

fn read_reply(stdout: &mut BufReader<ChildStdout>) -> Result<Value, String> {
    let mut line = String::new();
    stdout.read_line(&mut line).expect("read node reply");
    let reply: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("node reply {line:?}: {e}"));
    match reply.get("error") {
        Some(Value::String(e)) => Err(e.clone()),
        _ => Ok(reply["ok"].clone()),
    }
}

/// Calls one function of the reference implementation against `home`.
pub fn node(home: &CanonHome, cmd: &str, args: Value) -> Result<Value, String> {
    let (mut child, stdin, mut stdout) = spawn(home, cmd, args);
    let reply = read_reply(&mut stdout);
    drop(stdin);
    let status = child.wait().expect("wait node");
    assert!(status.success(), "node exited with {status}");
    reply
}

/// `node(...)` that must succeed.
pub fn node_ok(home: &CanonHome, cmd: &str, args: Value) -> Value {
    node(home, cmd, args).unwrap_or_else(|e| panic!("node {cmd} failed: {e}"))
}

/// Asserts that the file is exactly what `JSON.stringify(JSON.parse(file), null, 2)` gives.
pub fn assert_js_pretty(home: &CanonHome, path: &Path) {
    let bytes = std::fs::read_to_string(path).expect("read written file");
    let js = node_ok(home, "stringifyFile", json!([path]));
    assert_eq!(
        Some(bytes.as_str()),
        js.as_str(),
        "{} differs from JSON.stringify",
        path.display()
    );
}

/// A Node process holding a profile lock until [`HeldLock::release`].
pub struct HeldLock {
    child: Child,
    stdin: Option<ChildStdin>,
    pub pid: i64,
}

pub fn node_hold_lock(home: &CanonHome, profile: &str) -> HeldLock {
    let (child, stdin, mut stdout) = spawn(home, "holdLock", json!([profile]));
    let reply = read_reply(&mut stdout).expect("node acquireLock");
    HeldLock {
        child,
        stdin: Some(stdin),
        pid: reply["pid"].as_i64().expect("pid"),
    }
}

impl HeldLock {
    /// Closes stdin: the Node process releases through its handle and exits; waits for it.
    pub fn release(mut self) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("wait node");
        assert!(status.success());
    }
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Asserts that `path` holds exactly `text` and is private to its owner (0600), as the package
/// saves every file.
#[cfg(unix)]
pub fn assert_saved_as(path: &Path, text: &str) {
    assert_eq!(
        std::fs::read_to_string(path).expect("read the saved file"),
        text,
        "{} differs",
        path.display()
    );
    assert_eq!(mode(path), 0o600, "{} is not 0600", path.display());
}

/// Mode bits of a file.
#[cfg(unix)]
pub fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}
