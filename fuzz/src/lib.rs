//! Fuzz targets for the files Supercode Tray reads from disk: live-runtime receipts and the
//! `@canonmsg/core` files under `$CANON_HOME`.
//!
//! Each target feeds one input through the real public entry point, on a real file in a private
//! temp directory, and panics when an invariant breaks. The invariants go beyond "does not
//! panic":
//!
//! - **receipt** ([`ReceiptTarget`]): `read_receipt` never errors on a file in a valid directory
//!   and leaves it byte-for-byte unchanged; neither does `reconcile_receipt`, which also leaves a
//!   refused file byte-for-byte unchanged; a listed receipt names its file's endpoint,
//!   no longer carries an inline token (it was adopted into the secret store, which now holds it)
//!   and reads back the same the second time; a receipt whose process is gone is removed; no
//!   reason or `Debug` output ever contains the receipt's token or address.
//! - **canon_agents** / **canon_pending** ([`RecordFileTarget`]): loading either succeeds or is a
//!   `Corrupt` error; saving what was loaded and loading it again gives the same entries, and a
//!   second save writes the same bytes (rewrites converge); a file that is already exactly what the
//!   package writes is rewritten byte-for-byte; API keys and poll tokens never appear in errors or
//!   `Debug` output.
//! - **canon_catalog** ([`CatalogTarget`]): listing never errors on a file it can read; a parsed
//!   entry survives `to_json` → `from_json` unchanged.
//! - **canon_lock** ([`LockTarget`]): `parse_lock` and `is_profile_locked` agree: a lock reported
//!   as held has a parsed pid that is a live process, and a lock reported available has been
//!   deleted.
//!
//! Inputs may contain the placeholders `@PID@`, `@START@` (this process's pid and start time) and
//! `@DEADPID@` (a pid that has exited), replaced before the file is written, so seed receipts can
//! point at a live or a dead process wherever they run.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use canon_local::home::short_hash;
use canon_local::json::to_js_json_pretty;
use canon_local::{
    is_profile_locked, list_local_runtime_entries, load_pending_registrations, load_profiles,
    locks::parse_lock, save_pending_registrations, save_profiles, CanonFileError, CanonHome,
    LocalRuntimeCatalogEntry, LockStatus,
};
use live_runtime::{
    read_receipt, reconcile_receipt, secret_account, LiveRuntimeEndpoint, ProcessIdentity,
    ReceiptDir, ReceiptScan, SecretStore,
};
use serde_json::Value;

pub mod mutate;

/// Every target the driver and the AFL entry point know, by corpus directory name.
pub const TARGETS: [&str; 5] = [
    "receipt",
    "canon_agents",
    "canon_pending",
    "canon_catalog",
    "canon_lock",
];

/// A fuzz target: set up once per process, then run once per input.
pub trait Target {
    /// Runs one input; panics when an invariant is broken.
    fn run(&mut self, input: &[u8]);

    /// How the inputs so far came out, for people judging whether the mutations reach deep.
    fn outcomes(&self) -> String {
        String::new()
    }
}

/// Builds the target named `name` (one of [`TARGETS`]).
pub fn target(name: &str) -> Option<Box<dyn Target>> {
    Some(match name {
        "receipt" => Box::new(ReceiptTarget::new()),
        "canon_agents" => Box::new(RecordFileTarget::new(RecordFile::Agents)),
        "canon_pending" => Box::new(RecordFileTarget::new(RecordFile::Pending)),
        "canon_catalog" => Box::new(CatalogTarget::new()),
        "canon_lock" => Box::new(LockTarget::new()),
        _ => return None,
    })
}

/// Smallest secret checked for leaks: shorter strings turn up in ordinary messages by chance.
const MIN_SECRET_LEN: usize = 12;

/// Only secrets carrying one of the seed corpus's canary markers are checked: a mutated value can
/// otherwise equal a piece of a fixed message or of the file name (AFL found
/// `"address": "_0123456789abcd"`, a substring of the receipt's own file name, within seconds).
const CANARY_MARKERS: [&str; 2] = ["CANARY", "47913"];

/// The strings stored under `secret_keys` in `value` (at any depth) that carry a canary marker and
/// appear nowhere else in the document, so finding one in an error message can only mean a leak.
fn secrets_in(value: &Value, secret_keys: &[&str]) -> Vec<String> {
    fn walk(v: &Value, keys: &[&str], secret: &mut Vec<String>, other: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    other.push(k.clone());
                    match v {
                        Value::String(s) if keys.contains(&k.as_str()) => secret.push(s.clone()),
                        _ => walk(v, keys, secret, other),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, keys, secret, other)),
            Value::String(s) => other.push(s.clone()),
            _ => {}
        }
    }
    let (mut secret, mut other) = (Vec::new(), Vec::new());
    walk(value, secret_keys, &mut secret, &mut other);
    let mut seen = HashSet::new();
    secret
        .into_iter()
        .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
        .filter(|s| CANARY_MARKERS.iter().any(|m| s.contains(m)))
        .filter(|s| !other.iter().any(|o| o.contains(s.as_str())))
        .filter(|s| seen.insert(s.clone()))
        .collect()
}

fn assert_no_secret(what: &str, text: &str, secrets: &[String]) {
    for secret in secrets {
        assert!(
            !text.contains(secret.as_str()),
            "{what} leaks a secret value ({} chars): {text}",
            secret.len()
        );
    }
}

/// Replaces `@PID@`, `@START@` and `@DEADPID@`.
fn substitute(input: &[u8], me: ProcessIdentity, dead_pid: u32) -> Vec<u8> {
    let replacements: [(&[u8], String); 3] = [
        (b"@DEADPID@", dead_pid.to_string()),
        (b"@PID@", me.pid.to_string()),
        (b"@START@", me.start_time.to_string()),
    ];
    let mut out = Vec::with_capacity(input.len() + 16);
    let mut i = 0;
    'outer: while i < input.len() {
        for (pattern, value) in &replacements {
            if input[i..].starts_with(pattern) {
                out.extend_from_slice(value.as_bytes());
                i += pattern.len();
                continue 'outer;
            }
        }
        out.push(input[i]);
        i += 1;
    }
    out
}

/// A private temp dir, in memory (`/dev/shm`) when there is one: receipts are written with fsync,
/// which on a disk costs milliseconds per input and would starve the fuzzer.
fn scratch_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("supercode-fuzz-")
            .tempdir_in(shm)
        {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

/// A pid that no longer exists: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn `true`");
    let pid = child.id();
    child.wait().expect("reap `true`");
    pid
}

fn write_private(path: &std::path::Path, bytes: &[u8]) {
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

// ---------------------------------------------------------------------------------------------

/// The endpoint every fuzzed receipt is saved under (the seed receipts use it too).
pub const FUZZ_ENDPOINT: &str = "lre_0123456789abcdef0123456789abcdef";

/// `read_receipt` on one receipt file, through the file secret store.
pub struct ReceiptTarget {
    _tmp: tempfile::TempDir,
    dir: ReceiptDir,
    name: String,
    path: PathBuf,
    me: ProcessIdentity,
    dead_pid: u32,
    /// Inputs that were listed, adopted (listed with an inline token), ignored, gone.
    counts: [u64; 4],
}

impl ReceiptTarget {
    /// A private receipt directory in a fresh temp dir.
    pub fn new() -> Self {
        let tmp = scratch_dir();
        let receipts = tmp.path().join("receipts");
        fs::DirBuilder::new().mode(0o700).create(&receipts).unwrap();
        let dir = ReceiptDir::new(&receipts, SecretStore::file(tmp.path().join("secrets")));
        let name = format!("{FUZZ_ENDPOINT}.json");
        ReceiptTarget {
            path: receipts.join(&name),
            _tmp: tmp,
            dir,
            name,
            me: ProcessIdentity::current(),
            dead_pid: dead_pid(),
            counts: [0; 4],
        }
    }
}

impl Default for ReceiptTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for ReceiptTarget {
    fn run(&mut self, input: &[u8]) {
        let bytes = substitute(input, self.me, self.dead_pid);
        write_private(&self.path, &bytes);
        let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
        let secrets = parsed
            .as_ref()
            .map(|v| secrets_in(v, &["token", "address"]))
            .unwrap_or_default();
        let inline_token = parsed
            .as_ref()
            .and_then(|v| v.get("token"))
            .and_then(Value::as_str)
            .map(str::to_owned);

        let read = read_receipt(&self.dir, &self.name).expect("read_receipt failed on a valid dir");
        assert_no_secret("ReceiptScan Debug", &format!("{read:?}"), &secrets);
        assert_eq!(
            fs::read(&self.path).expect("a read removed the file"),
            bytes,
            "a read changed the file"
        );
        let scan = reconcile_receipt(&self.dir, &self.name)
            .expect("reconcile_receipt failed on a valid dir");
        let outcome = match &scan {
            ReceiptScan::Listed(_) if inline_token.is_some() => 1,
            ReceiptScan::Listed(_) => 0,
            ReceiptScan::Ignored(_) => 2,
            _ => 3,
        };
        self.counts[outcome] += 1;
        assert_no_secret("ReceiptScan Debug", &format!("{scan:?}"), &secrets);
        match &scan {
            ReceiptScan::Listed(record) => {
                assert_eq!(record.endpoint.as_str(), FUZZ_ENDPOINT);
                let on_disk: Value = serde_json::from_slice(
                    &fs::read(&self.path).expect("a listed receipt must still exist"),
                )
                .expect("a listed receipt must be JSON on disk");
                assert!(
                    on_disk.get("token").is_none(),
                    "a listed receipt still carries an inline token"
                );
                if let Some(token) = inline_token {
                    let endpoint: LiveRuntimeEndpoint = FUZZ_ENDPOINT.parse().unwrap();
                    let stored = self
                        .dir
                        .secret_store()
                        .get(&secret_account(&endpoint))
                        .unwrap()
                        .expect("an adopted token must be in the secret store");
                    assert_eq!(stored.expose(), &token, "adopted token differs");
                }
                // Reading again (now adopted, if it was foreign) gives the same record.
                match read_receipt(&self.dir, &self.name).unwrap() {
                    ReceiptScan::Listed(again) => {
                        assert_eq!(format!("{again:?}"), format!("{record:?}"))
                    }
                    other => panic!("listed once, then {other:?}"),
                }
            }
            ReceiptScan::Ignored(ignored) => {
                assert_eq!(ignored.file, self.name);
                assert_no_secret("ignored reason", &ignored.reason, &secrets);
                assert_eq!(
                    fs::read(&self.path).expect("an ignored receipt must be left in place"),
                    bytes,
                    "an ignored receipt was modified"
                );
            }
            ReceiptScan::Gone | ReceiptScan::Exited { .. } => {
                assert!(!self.path.exists(), "Gone, but the file is still there");
            }
            ReceiptScan::NotAReceipt => panic!("{} is a receipt name", self.name),
        }
    }

    fn outcomes(&self) -> String {
        let [listed, adopted, ignored, gone] = self.counts;
        format!("listed {listed}, adopted {adopted}, ignored {ignored}, gone {gone}")
    }
}

// ---------------------------------------------------------------------------------------------

/// Which `Record<string, T>` file a [`RecordFileTarget`] fuzzes.
#[derive(Clone, Copy, Debug)]
pub enum RecordFile {
    /// `agents.json` (secret: `apiKey`).
    Agents,
    /// `pending-registrations.json` (secret: `pollToken`).
    Pending,
}

/// Load → save → load → save of `agents.json` or `pending-registrations.json`.
pub struct RecordFileTarget {
    _tmp: tempfile::TempDir,
    file: RecordFile,
    homes: [CanonHome; 3],
}

impl RecordFileTarget {
    /// Three Canon homes in a fresh temp dir: the input, the first rewrite, the second rewrite.
    pub fn new(file: RecordFile) -> Self {
        let tmp = scratch_dir();
        let home = |n: &str| {
            let path = tmp.path().join(n);
            fs::create_dir(&path).unwrap();
            CanonHome::at(&path).unwrap()
        };
        let homes = [home("input"), home("first"), home("second")];
        RecordFileTarget {
            _tmp: tmp,
            file,
            homes,
        }
    }

    fn path(&self, home: &CanonHome) -> PathBuf {
        match self.file {
            RecordFile::Agents => home.agents_path(),
            RecordFile::Pending => home.pending_registrations_path(),
        }
    }

    /// Loads the file of `home`: its entries (sorted), its `Debug` output, and a closure saving
    /// what was loaded into another home.
    fn load(&self, home: &CanonHome) -> Result<Loaded, CanonFileError> {
        Ok(match self.file {
            RecordFile::Agents => {
                let loaded = load_profiles(home)?;
                Loaded {
                    entries: sorted_entries(&loaded),
                    debug: format!("{loaded:?}"),
                    save: Box::new(move |to: &CanonHome| save_profiles(to, &loaded).unwrap()),
                }
            }
            RecordFile::Pending => {
                let loaded = load_pending_registrations(home)?;
                Loaded {
                    entries: sorted_entries(&loaded),
                    debug: format!("{loaded:?}"),
                    save: Box::new(move |to: &CanonHome| {
                        save_pending_registrations(to, &loaded).unwrap()
                    }),
                }
            }
        })
    }
}

/// What [`RecordFileTarget::load`] gives back.
struct Loaded {
    entries: Vec<String>,
    debug: String,
    save: Box<dyn FnOnce(&CanonHome)>,
}

/// One line per entry, well-formed or not, sorted: the content without the order. (Writing puts
/// integer-like names first, as `JSON.stringify` does, while a load keeps file order, so the order
/// may change once on the first rewrite.)
fn sorted_entries<T: std::fmt::Debug>(records: &canon_local::Records<T>) -> Vec<String> {
    let mut lines: Vec<String> = records
        .iter()
        .map(|(name, entry)| format!("{name:?}: {entry:?}"))
        .chain(
            records
                .unrecognized()
                .map(|(name, reason)| format!("{name:?}: unrecognized: {reason}")),
        )
        .collect();
    lines.sort();
    lines
}

impl Target for RecordFileTarget {
    fn run(&mut self, input: &[u8]) {
        let [input_home, first, second] = &self.homes;
        write_private(&self.path(input_home), input);
        let parsed: Option<Value> = serde_json::from_slice(input).ok();
        let secret_key = match self.file {
            RecordFile::Agents => "apiKey",
            RecordFile::Pending => "pollToken",
        };
        let secrets = parsed
            .as_ref()
            .map(|v| secrets_in(v, &[secret_key]))
            .unwrap_or_default();

        let loaded = match self.load(input_home) {
            Ok(loaded) => loaded,
            Err(e) => {
                assert!(
                    matches!(e, CanonFileError::Corrupt { .. }),
                    "a readable file gave {e:?}"
                );
                assert_no_secret("load error", &format!("{e} {e:?}"), &secrets);
                return;
            }
        };
        assert_no_secret("loaded Debug", &loaded.debug, &secrets);
        (loaded.save)(first);
        let first_bytes = fs::read(self.path(first)).unwrap();
        if let Some(value) = &parsed {
            if to_js_json_pretty(value).as_bytes() == input {
                assert_eq!(
                    String::from_utf8_lossy(&first_bytes),
                    String::from_utf8_lossy(input),
                    "a file already in the package's format was not rewritten byte-for-byte"
                );
            }
        }
        let again = self
            .load(first)
            .expect("what we wrote cannot be loaded again");
        assert_eq!(
            again.entries, loaded.entries,
            "entries changed across save + load"
        );
        (again.save)(second);
        assert_eq!(
            String::from_utf8_lossy(&fs::read(self.path(second)).unwrap()),
            String::from_utf8_lossy(&first_bytes),
            "a second rewrite changed the bytes"
        );
        let third = self.load(second).unwrap();
        assert_eq!(
            third.debug, again.debug,
            "a rewritten file loads differently"
        );
    }
}

// ---------------------------------------------------------------------------------------------

/// `list_local_runtime_entries` over one `runtimes/<hash>.json` file.
pub struct CatalogTarget {
    _tmp: tempfile::TempDir,
    home: CanonHome,
    path: PathBuf,
}

impl CatalogTarget {
    /// A Canon home with an empty `runtimes/` in a fresh temp dir.
    pub fn new() -> Self {
        let tmp = scratch_dir();
        let home = CanonHome::at(tmp.path()).unwrap();
        fs::create_dir_all(home.runtimes_dir()).unwrap();
        let path = home
            .runtimes_dir()
            .join(format!("{}.json", short_hash("fuzz")));
        CatalogTarget {
            _tmp: tmp,
            home,
            path,
        }
    }
}

impl Default for CatalogTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for CatalogTarget {
    fn run(&mut self, input: &[u8]) {
        write_private(&self.path, input);
        let listing = list_local_runtime_entries(&self.home, None)
            .expect("listing failed on a readable runtimes/ directory");
        assert!(
            listing.entries.len() + listing.problems.len() == 1,
            "{listing:?}"
        );
        if let Ok(value) = serde_json::from_slice::<Value>(input) {
            if let Ok(entry) = LocalRuntimeCatalogEntry::from_json(value) {
                let json = entry.to_json();
                let back = LocalRuntimeCatalogEntry::from_json(Value::Object(json.clone()))
                    .expect("to_json output does not parse back");
                assert_eq!(
                    back.to_json(),
                    json,
                    "to_json -> from_json changed the entry"
                );
                assert_eq!(listing.entries.len(), 1, "parsed alone but not listed");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------

/// `parse_lock` and `is_profile_locked` on `locks/fuzz.lock`.
pub struct LockTarget {
    _tmp: tempfile::TempDir,
    home: CanonHome,
    path: PathBuf,
    me: ProcessIdentity,
    dead_pid: u32,
}

impl LockTarget {
    /// A Canon home with an empty `locks/` in a fresh temp dir.
    pub fn new() -> Self {
        let tmp = scratch_dir();
        let home = CanonHome::at(tmp.path()).unwrap();
        fs::create_dir_all(home.locks_dir()).unwrap();
        let path = home.lock_path("fuzz");
        LockTarget {
            _tmp: tmp,
            home,
            path,
            me: ProcessIdentity::current(),
            dead_pid: dead_pid(),
        }
    }
}

impl Default for LockTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for LockTarget {
    fn run(&mut self, input: &[u8]) {
        let bytes = substitute(input, self.me, self.dead_pid);
        let parsed = parse_lock(&String::from_utf8_lossy(&bytes));
        write_private(&self.path, &bytes);
        match is_profile_locked(&self.home, "fuzz") {
            LockStatus::Locked { pid } => {
                let lock = parsed.expect("locked by a file parse_lock rejects");
                assert_eq!(lock.pid, pid as f64, "locked by another pid than parsed");
                assert!(self.path.exists(), "a held lock was deleted");
            }
            LockStatus::Available => {
                assert!(!self.path.exists(), "a stale lock file was left in place");
            }
            LockStatus::Untrusted { reason } => {
                panic!("a private regular lock file was not read: {reason}");
            }
        }
    }
}
