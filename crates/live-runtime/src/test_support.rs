//! Fixtures the workspace's integration tests share (feature `test-support`, never in the app):
//! receipts written by hand the way a foreign runtime writes them (a temp file, then a rename),
//! hostile files (raw writes with a chosen mode, sparse huge files, FIFOs), child processes
//! (`sleep` most often) that are always killed and reaped, the real OS keychain or a clear skip,
//! re-running the test binary for one helper test in a child process, deadline-bounded
//! polling, and ([`prompt_runtime`]) a raw-socket runtime whose status API moves from one prompt
//! to the next.
//!
//! Everything here is real (files, processes, the Secret Service); nothing is mocked. Helpers
//! panic on failure: they run inside tests, where a panic is the failure report.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::{LiveRuntimeEndpoint, ProcessIdentity, SecretStore};

pub mod prompt_runtime;

/// The longest a single [`wait_until`] in a test should wait. Generous: CI machines are shared
/// and slow, and a passing test never waits this long.
pub const WAIT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often [`wait_until`] re-checks: short enough that a passing test barely waits, long
/// enough not to spin a shared CPU.
const POLL: Duration = Duration::from_millis(10);

/// Names the helper test a re-executed copy of a test binary should run; helper tests do
/// nothing unless it names them.
pub const CHILD_ENV: &str = "SUPERCODE_TEST_CHILD";

/// Set to `1` (CI) to make an unusable keychain fail [`keychain_or_skip`] instead of skipping.
pub const REQUIRE_KEYCHAIN_ENV: &str = "SUPERCODE_REQUIRE_KEYCHAIN";

/// Polls `check` until it returns `Some`, failing the test after `timeout` with `what`.
pub fn wait_until<T>(what: &str, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(POLL);
    }
}

/// A child process that is SIGKILLed and reaped when dropped, so no test leaks one; most often a
/// `sleep` ([`ChildGuard::sleep`]): a real, live pid that is not this process.
pub struct ChildGuard(pub Child);

impl ChildGuard {
    /// Starts `sleep 600` (long enough to outlive any test) with stdin closed.
    pub fn sleep() -> Self {
        Self(
            Command::new("sleep")
                .arg("600")
                .stdin(Stdio::null())
                .spawn()
                .expect("spawn sleep"),
        )
    }

    /// Its pid.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Its process identity (pid and start time), as a receipt records it.
    pub fn identity(&self) -> ProcessIdentity {
        ProcessIdentity::of(self.pid()).expect("a live child has an identity")
    }

    /// SIGKILL and reap (again is harmless).
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

/// A version 1 receipt as a foreign (Node/Python) writer produces it, for runtime `name`:
/// runtime id `test:<name>`, session `session-<name>` in `/tmp`, address `127.0.0.1:9`, an SDK
/// runtime shown as `name`. Tests change the fields they are about.
pub fn foreign_receipt(
    endpoint: &LiveRuntimeEndpoint,
    name: &str,
    pid: u32,
    start_time: Option<u64>,
) -> Value {
    let mut process = json!({ "pid": pid });
    if let Some(start_time) = start_time {
        process["startTime"] = json!(start_time);
    }
    json!({
        "version": 1,
        "endpoint": endpoint,
        "runtimeId": format!("test:{name}"),
        "source": { "sessionId": format!("session-{name}"), "workspace": "/tmp" },
        "process": process,
        "address": "127.0.0.1:9",
        "registeredAt": "2026-01-02T03:04:05.678Z",
        "metadata": { "runtimeKind": "sdk", "displayName": name },
    })
}

/// Writes `receipt` (pretty JSON, mode 0600) as `dir/file_name` the way every writer must: a
/// temp file in the same directory, then a rename over the target, so a reader never sees half
/// a file. Creates `dir` 0700 first, as the library would. Returns the receipt's path.
pub fn write_receipt_file(dir: &Path, file_name: &str, receipt: &Value) -> PathBuf {
    /// Keeps temp names unique when one process writes the same receipt from two threads.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .expect("create the receipt directory");
    let temp = dir.join(format!(
        ".{file_name}.test.{}.{}.tmp",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .expect("create the temp receipt");
    file.write_all(&serde_json::to_vec_pretty(receipt).unwrap())
        .expect("write the temp receipt");
    drop(file);
    let path = dir.join(file_name);
    std::fs::rename(&temp, &path).expect("rename the temp receipt into place");
    path
}

/// Writes `bytes` to `path` in place (created or truncated) with `mode`: a file as a careless
/// writer or an attacker leaves it, for the hostile and odd files tests need. Receipts as a
/// proper writer leaves them come from [`write_receipt_file`].
pub fn write_file_mode(path: &Path, bytes: &[u8], mode: u32) {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .unwrap_or_else(|e| panic!("open {} for writing: {e}", path.display()));
    file.write_all(bytes)
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

/// A file that starts with `start` (mode 0600) and is extended, sparsely, to `len` bytes: a
/// huge file for size caps that costs no disk.
pub fn sparse_file(path: &Path, start: &[u8], len: u64) {
    write_file_mode(path, start, 0o600);
    std::fs::File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_len(len))
        .unwrap_or_else(|e| panic!("extend {} to {len} bytes: {e}", path.display()));
}

/// A FIFO at `path` (with `mkfifo`, as a user would make one): opening it for reading blocks
/// unless the reader asks not to.
pub fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Removes whatever is at `path`: a file, a symlink (not its target) or a directory tree.
/// Nothing there is fine.
pub fn remove_any(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path).expect("remove the directory"),
        Ok(_) => std::fs::remove_file(path).expect("remove the file"),
        Err(_) => {}
    }
}

/// A receipt file gone wrong in one of the ways a reader must refuse (and say why) without
/// losing any other receipt: what the property tests of the per-file cache and of the watcher
/// put in a receipt's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostileReceipt {
    /// Cut off mid-object.
    NotJson,
    /// A format version from the future.
    FutureVersion,
    /// An address off loopback.
    RemoteAddress,
    /// Another endpoint's receipt saved under this one's name.
    WrongName,
    /// A symlink to a valid receipt elsewhere.
    SymlinkToFile,
    /// A directory where the file should be.
    Directory,
}

impl HostileReceipt {
    /// Every kind, for a strategy to pick from.
    pub const ALL: [Self; 6] = [
        Self::NotJson,
        Self::FutureVersion,
        Self::RemoteAddress,
        Self::WrongName,
        Self::SymlinkToFile,
        Self::Directory,
    ];

    /// Puts this kind at `path`, replacing whatever is there, made from `valid` (the receipt that
    /// belongs at `path`) or `other` (another endpoint's valid receipt). A symlink points at
    /// `outside/target_name`, written there. Files are written in place with mode 0600.
    pub fn write(
        self,
        path: &Path,
        valid: &Value,
        other: &Value,
        outside: &Path,
        target_name: &str,
    ) {
        let pretty = |value: &Value| serde_json::to_vec_pretty(value).unwrap();
        let with = |field: &str, value: Value| {
            let mut changed = valid.clone();
            changed[field] = value;
            pretty(&changed)
        };
        remove_any(path);
        match self {
            Self::NotJson => write_file_mode(path, b"{\"version\":1,", 0o600),
            Self::FutureVersion => write_file_mode(path, &with("version", json!(2)), 0o600),
            Self::RemoteAddress => {
                write_file_mode(path, &with("address", json!("10.9.8.7:80")), 0o600);
            }
            Self::WrongName => write_file_mode(path, &pretty(other), 0o600),
            Self::SymlinkToFile => {
                let target = outside.join(target_name);
                write_file_mode(&target, &pretty(valid), 0o600);
                std::os::unix::fs::symlink(target, path).expect("create the symlink");
            }
            Self::Directory => std::fs::create_dir(path).expect("create the directory"),
        }
    }
}

/// The OS keychain if a Secret Service answers; `None` (with a `SKIPPED` message) otherwise,
/// unless `SUPERCODE_REQUIRE_KEYCHAIN=1`, in which case an unusable keychain fails the test.
pub fn keychain_or_skip(test: &str) -> Option<SecretStore> {
    let store = SecretStore::keychain();
    match store.probe() {
        Ok(()) => Some(store),
        Err(e) => {
            if keychain_required() {
                panic!("{REQUIRE_KEYCHAIN_ENV}=1 but the keychain is unusable: {e}");
            }
            eprintln!("SKIPPED {test}: no usable OS keychain ({e}); run under scripts/test-env.sh, or set {REQUIRE_KEYCHAIN_ENV}=1 to make this a failure");
            None
        }
    }
}

/// True when `SUPERCODE_REQUIRE_KEYCHAIN=1`: a missing keychain (or its tools) is a failure.
pub fn keychain_required() -> bool {
    std::env::var(REQUIRE_KEYCHAIN_ENV).as_deref() == Ok("1")
}

/// The last segment of a test path (`module::name` → `name`): what [`CHILD_ENV`] carries.
fn child_name(test: &str) -> &str {
    test.rsplit("::").next().unwrap_or(test)
}

/// True when this process is a re-executed child asked to run the helper test `test` (a full
/// path or just its name).
pub fn is_child_for(test: &str) -> bool {
    std::env::var(CHILD_ENV).as_deref() == Ok(child_name(test))
}

/// The arguments that make a test binary run exactly the one (ignored) helper test `test`.
pub fn child_test_args(test: &str) -> [&str; 5] {
    [
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]
}

/// A command that re-runs this test binary for the single (ignored) helper test `test` (its full
/// path), marked so [`is_child_for`] lets that helper run. Stdin is closed; callers add the
/// environment they need, so process-global state never disturbs the other tests.
pub fn child_test_command(test: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("the test binary's path"));
    command.args(child_test_args(test));
    mark_child(&mut command, test);
    command
}

/// Marks `command` (which runs this test binary, perhaps through a wrapper such as
/// `dbus-run-session`) as the child for helper test `test`.
pub fn mark_child<'a>(command: &'a mut Command, test: &str) -> &'a mut Command {
    command
        .env(CHILD_ENV, child_name(test))
        .stdin(Stdio::null())
}

/// Runs `command` with its output collected; kills it (SIGKILL) and fails the test with `what`
/// if it has not ended within `deadline` (a hang is a failure, not a stuck CI job).
pub fn output_within(mut command: Command, what: &str, deadline: Duration) -> Output {
    let child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what} did not start: {e}"));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(deadline) {
        Ok(output) => output.expect("collect the child's output"),
        Err(_) => {
            // The child moved to the waiting thread; `kill` by pid is what is left to us.
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("{what} did not finish within {deadline:?}");
        }
    }
}

/// What a helper test prints last when all its checks passed; a child that exits 0 without it
/// never ran them (its `is_child_for` guard returned early).
pub const CHILD_OK: &str = "CHILD_OK";

/// Fails unless the child that ran helper test `test` succeeded and printed [`CHILD_OK`];
/// returns its stdout and stderr as one text (shown on failure).
pub fn assert_child_ok(test: &str, output: &Output) -> String {
    let text = format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "child test {test} failed ({}):\n{text}",
        output.status
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(CHILD_OK),
        "child test {test} did not run its checks:\n{text}"
    );
    text
}
