//! Shared fixtures: temp receipt directories, receipts written by hand (as a foreign runtime would),
//! child processes that are always reaped, and keychain availability.

use std::fs;
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use live_runtime::{
    BearerToken, LiveRuntimeEndpoint, LiveRuntimeSource, ReceiptDir, SecretStore, Sensitive,
};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A receipt directory in a fresh temp dir, with the file secret store beside it.
pub struct Scratch {
    pub _tmp: TempDir,
    pub dir: ReceiptDir,
    pub secrets_path: PathBuf,
}

pub fn file_store_scratch() -> Scratch {
    let tmp = tempfile::tempdir().unwrap();
    let secrets_path = tmp.path().join("secrets");
    let dir = ReceiptDir::new(
        tmp.path().join("receipts"),
        SecretStore::file(&secrets_path),
    );
    Scratch {
        _tmp: tmp,
        dir,
        secrets_path,
    }
}

/// A receipt directory in a fresh temp dir using the given store.
pub fn scratch_with(store: SecretStore) -> (TempDir, ReceiptDir) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = ReceiptDir::new(tmp.path().join("receipts"), store);
    (tmp, dir)
}

pub fn source(session: &str) -> LiveRuntimeSource {
    LiveRuntimeSource {
        session_id: session.to_string(),
        workspace: PathBuf::from("/work/projects/demo"),
    }
}

pub fn loopback(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

pub fn token(value: &str) -> BearerToken {
    Sensitive::new(value.to_string())
}

/// Creates the receipt directory 0700 (as the library would).
pub fn make_receipt_dir(dir: &ReceiptDir) {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir.path())
        .unwrap();
}

/// Writes `bytes` as `dir/name` with `mode`, like a runtime in another language would.
pub fn write_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> PathBuf {
    let path = dir.join(name);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&path)
        .unwrap();
    file.write_all(bytes).unwrap();
    path
}

/// A v1 receipt as a foreign (Node/Python) writer would produce it.
pub fn foreign_receipt(
    endpoint: &LiveRuntimeEndpoint,
    runtime_id: &str,
    source: &LiveRuntimeSource,
    pid: u32,
    start_time: Option<u64>,
    address: &str,
    token: Option<&str>,
) -> Value {
    let mut process = json!({ "pid": pid });
    if let Some(start_time) = start_time {
        process["startTime"] = json!(start_time);
    }
    let mut receipt = json!({
        "version": 1,
        "endpoint": endpoint,
        "runtimeId": runtime_id,
        "source": source,
        "process": process,
        "address": address,
        "registeredAt": "2026-01-02T03:04:05.678Z",
        "metadata": { "runtimeKind": "sdk" },
    });
    if let Some(token) = token {
        receipt["token"] = json!(token);
    }
    receipt
}

/// Writes a receipt value as `<endpoint>.json`, mode 0600.
pub fn write_receipt(dir: &ReceiptDir, endpoint: &LiveRuntimeEndpoint, receipt: &Value) -> PathBuf {
    make_receipt_dir(dir);
    write_file(
        dir.path(),
        &format!("{endpoint}.json"),
        serde_json::to_string_pretty(receipt).unwrap().as_bytes(),
        0o600,
    )
}

/// The names of every entry in a directory (empty if it does not exist).
pub fn entries(dir: &Path) -> Vec<String> {
    match fs::read_dir(dir) {
        Ok(read) => {
            let mut names: Vec<String> = read
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        }
        Err(_) => Vec::new(),
    }
}

/// A child process that is killed and reaped when dropped, so no test leaks a `sleep`.
pub struct ChildGuard(pub Child);

impl ChildGuard {
    pub fn sleep() -> Self {
        ChildGuard(
            Command::new("sleep")
                .arg("300")
                .stdin(Stdio::null())
                .spawn()
                .expect("spawn sleep"),
        )
    }

    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The OS keychain if a Secret Service answers; `None` (with a message) otherwise, unless
/// `SUPERCODE_REQUIRE_KEYCHAIN=1`, in which case an unreachable keychain fails the test.
pub fn keychain_or_skip(test: &str) -> Option<SecretStore> {
    let store = SecretStore::keychain();
    match store.probe() {
        Ok(()) => Some(store),
        Err(e) => {
            if std::env::var("SUPERCODE_REQUIRE_KEYCHAIN").as_deref() == Ok("1") {
                panic!("SUPERCODE_REQUIRE_KEYCHAIN=1 but the keychain is unusable: {e}");
            }
            eprintln!("SKIPPED {test}: no usable OS keychain ({e}); run under dbus-run-session with gnome-keyring, or set SUPERCODE_REQUIRE_KEYCHAIN=1 to make this a failure");
            None
        }
    }
}

/// Environment variable naming the helper test a child process should run; helper tests do
/// nothing unless it names them.
pub const CHILD_ENV: &str = "LIVE_RUNTIME_TEST_CHILD";

/// True when this process was started by [`run_child_test`] for `test`.
pub fn is_child_for(test: &str) -> bool {
    std::env::var(CHILD_ENV).as_deref() == Ok(test)
}

/// The arguments that make this test binary run exactly one (ignored) helper test.
pub fn child_test_args(test: &str) -> [&str; 5] {
    [
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]
}

/// Re-runs this test binary for the single (ignored) helper test `test` with extra environment,
/// so tests that need process-global state (environment variables, a broken D-Bus address) do not
/// disturb the others. Fails if the child runs past `deadline`.
pub fn run_child_test(
    test: &str,
    set: &[(&str, &str)],
    unset: &[&str],
    deadline: std::time::Duration,
) -> std::process::Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(child_test_args(test));
    for name in unset {
        command.env_remove(name);
    }
    for (name, value) in set {
        command.env(name, value);
    }
    run_with_deadline(command, test, deadline)
}

/// Runs `command` (which runs the helper test `test`) and collects its output; kills it and fails
/// if it runs past `deadline`.
pub fn run_with_deadline(
    mut command: Command,
    test: &str,
    deadline: std::time::Duration,
) -> std::process::Output {
    command
        .env(CHILD_ENV, test.rsplit("::").next().unwrap())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("child test {test} did not finish within {deadline:?}");
        }
    }
}
