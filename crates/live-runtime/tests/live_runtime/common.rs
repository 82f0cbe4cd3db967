//! This crate's own fixtures (temp receipt directories, raw files, receipts with chosen fields)
//! over the shared ones in `live_runtime::test_support` (child guards, keychain-or-skip, child
//! re-exec), which this module re-exports for the area modules.

use std::fs;
use std::net::SocketAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use live_runtime::test_support;
use live_runtime::{
    resolve_live_runtime, BearerToken, LiveRuntimeEndpoint, LiveRuntimeReceiptError,
    LiveRuntimeRecord, LiveRuntimeSource, ReceiptDir, SecretStore, Sensitive,
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

impl Scratch {
    /// Fails unless no receipt, temp file or stored token is left.
    pub fn assert_empty(&self) {
        assert_eq!(
            entries(self.dir.path()),
            Vec::<String>::new(),
            "receipt dir not empty"
        );
        assert_eq!(
            entries(&self.secrets_path),
            Vec::<String>::new(),
            "tokens left behind"
        );
    }
}

/// Resolves `record`, just listed while other runtimes register and drop: it must carry the
/// token it registered with (`token-<runtime id>`), and one dropped since the list (receipt
/// first, then token) is no failure. Returns whether it resolved.
pub fn resolve_listed(dir: &ReceiptDir, record: &LiveRuntimeRecord) -> bool {
    match resolve_live_runtime(dir, &record.endpoint, &record.source) {
        Ok(resolved) => {
            assert_eq!(
                resolved.token.expose(),
                &format!("token-{}", record.runtime_id)
            );
            true
        }
        Err(LiveRuntimeReceiptError::NotFound { .. })
        | Err(LiveRuntimeReceiptError::MissingToken { .. }) => false,
        Err(other) => panic!("unexpected resolve failure: {other:?}"),
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
    test_support::write_file_mode(&path, bytes, mode);
    path
}

/// A v1 receipt as a foreign (Node/Python) writer would produce it, with these fields.
pub fn foreign_receipt(
    endpoint: &LiveRuntimeEndpoint,
    runtime_id: &str,
    source: &LiveRuntimeSource,
    pid: u32,
    start_time: Option<u64>,
    address: &str,
    token: Option<&str>,
) -> Value {
    let mut receipt = test_support::foreign_receipt(endpoint, runtime_id, pid, start_time);
    receipt["runtimeId"] = json!(runtime_id);
    receipt["source"] = json!(source);
    receipt["address"] = json!(address);
    receipt["metadata"] = json!({ "runtimeKind": "sdk" });
    if let Some(token) = token {
        receipt["token"] = json!(token);
    }
    receipt
}

/// Writes a receipt value as `<endpoint>.json`, mode 0600, temp file then rename.
pub fn write_receipt(dir: &ReceiptDir, endpoint: &LiveRuntimeEndpoint, receipt: &Value) -> PathBuf {
    test_support::write_receipt_file(dir.path(), &format!("{endpoint}.json"), receipt)
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

pub use live_runtime::test_support::{child_test_args, is_child_for, keychain_or_skip, ChildGuard};

/// Re-runs this test binary for the single (ignored) helper test `test` with extra environment,
/// so tests that need process-global state (environment variables, a broken D-Bus address) do not
/// disturb the others. Fails if the child runs past `deadline`.
pub fn run_child_test(
    test: &str,
    set: &[(&str, &str)],
    unset: &[&str],
    deadline: std::time::Duration,
) -> std::process::Output {
    let mut command = live_runtime::test_support::child_test_command(test);
    for name in unset {
        command.env_remove(name);
    }
    for (name, value) in set {
        command.env(name, value);
    }
    run_with_deadline(command, test, deadline)
}

/// Runs `command` (which runs the helper test `test`, perhaps through a wrapper) and collects its
/// output; kills it and fails if it runs past `deadline`.
pub fn run_with_deadline(
    mut command: Command,
    test: &str,
    deadline: std::time::Duration,
) -> std::process::Output {
    live_runtime::test_support::mark_child(&mut command, test);
    live_runtime::test_support::output_within(command, &format!("child test {test}"), deadline)
}
