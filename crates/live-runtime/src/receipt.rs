//! Receipts: the files through which a running runtime announces itself to the tray.
//!
//! One registration writes one `<endpoint>.json` file (format in `docs/receipt-format.md`) into a
//! private [`ReceiptDir`], after putting its bearer token in the [`SecretStore`]. Every read goes
//! through [`read_receipt`]'s checks — the directory is shared with foreign writers (Node and
//! Python runtimes) and with anything else running as the user, so a file is trusted only if it is a
//! regular file we own, private, small, well-formed and names a loopback address. A bad file is
//! reported as an [`IgnoredReceipt`] with a reason and never hides the good ones.
//!
//! Reads also reconcile: a receipt whose process has exited is removed with its secret; a pid now
//! used by another process makes the receipt [`LiveRuntimeStatus::Stale`]; a foreign receipt
//! carrying an inline token is *adopted* (token moved into the secret store, start time filled in,
//! file rewritten atomically without the token).
//!
//! A watcher that must not rescan the whole directory for every change keeps a [`ReceiptFiles`]:
//! it re-reads only the files that changed and lists the rest from memory.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io;
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::owned_file::{
    parse_json, read_owned_file, write_atomically, FileRules, ModeRule, OwnedFile, StagedFile,
};
use crate::process::{effective_uid, pid_exists, ProcessIdentity};
use crate::secret::{BearerToken, SecretStore, SecretStoreError, Sensitive};

/// The receipt format version this crate writes and understands.
pub const RECEIPT_VERSION: u64 = 1;

/// Largest receipt file that will be read. Real receipts are well under 2 KiB; the cap stops a
/// hostile or corrupt file (or a 100 MB sparse file) from costing memory or time on every scan.
pub const MAX_RECEIPT_BYTES: u64 = 64 * 1024;

/// How old a leftover temp file (`.*.tmp`) must be, with its writer pid gone, before a scan deletes
/// it. Writers hold a temp file for milliseconds; ten minutes is far beyond any live write (even a
/// writer paused in a debugger for a while) yet still cleans crash leftovers within a session.
pub const STALE_TEMP_FILE_AGE: Duration = Duration::from_secs(10 * 60);

/// Prefix of every generated endpoint.
const ENDPOINT_PREFIX: &str = "lre_";
/// Number of lowercase hex digits after the prefix (128 random bits).
const ENDPOINT_HEX_DIGITS: usize = 32;

/// The secret-store account holding the bearer token of `endpoint`: `live-runtime:<endpoint>`.
pub fn secret_account(endpoint: &LiveRuntimeEndpoint) -> String {
    format!("live-runtime:{}", endpoint.as_str())
}

// ---------------------------------------------------------------------------------------------
// Public types.

/// Browser-safe reference to a trusted local runtime receipt: `lre_` followed by 32 lowercase hex
/// digits (128 random bits), fresh for every registration. It is also the receipt's file stem, so
/// parsing is strict (no path characters can get through).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct LiveRuntimeEndpoint(String);

impl LiveRuntimeEndpoint {
    /// A fresh random endpoint.
    pub fn generate() -> Self {
        LiveRuntimeEndpoint(format!("{ENDPOINT_PREFIX}{:032x}", rand::random::<u128>()))
    }

    /// The endpoint as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LiveRuntimeEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for LiveRuntimeEndpoint {
    type Err = LiveRuntimeReceiptError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let valid = s.strip_prefix(ENDPOINT_PREFIX).is_some_and(|hex| {
            hex.len() == ENDPOINT_HEX_DIGITS
                && hex
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if valid {
            Ok(LiveRuntimeEndpoint(s.to_string()))
        } else {
            Err(LiveRuntimeReceiptError::Invalid {
                what: "endpoint".into(),
                reason: format!(
                    "expected {ENDPOINT_PREFIX} followed by {ENDPOINT_HEX_DIGITS} lowercase hex digits"
                ),
            })
        }
    }
}

impl<'de> Deserialize<'de> for LiveRuntimeEndpoint {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Stable source identity through which a hosted continuation is discovered: the agent session and
/// the workspace it works in.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveRuntimeSource {
    /// The agent's session id.
    pub session_id: String,
    /// The workspace directory the session belongs to.
    pub workspace: PathBuf,
}

/// Static runtime metadata recorded at registration. Dynamic state, actions, controller and
/// observers are queried from the authenticated SDK endpoint instead.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LiveRuntimeMetadata {
    /// What kind of runtime this is: `"claude-code"`, `"codex"`, `"sdk"`, `"demo"`, ...
    pub runtime_kind: String,
    /// A name for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The canon profile name, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The agent's name, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// The runtime's working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Workspace roots the runtime works in.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub workspace_roots: Vec<PathBuf>,
    /// Id of the matching `@canonmsg/core` catalog entry, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub canon_runtime_id: Option<String>,
    /// How the runtime can be started again.
    pub supervisor: LiveRuntimeSupervisor,
}

/// Optional local process supervisor for an attachable runtime: how it can be revived.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum LiveRuntimeSupervisor {
    /// Started by hand; the tray cannot revive it.
    #[default]
    Manual,
    /// Started by running a command. Never put secrets in `argv` or `env`: receipts are not secret.
    LaunchCommand {
        /// Program and arguments.
        argv: Vec<String>,
        /// Working directory.
        cwd: PathBuf,
        /// Extra environment variables.
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
}

/// Whether a listed runtime can be attached to.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "camelCase")]
pub enum LiveRuntimeStatus {
    /// Its process (same pid AND start time) is alive.
    Running,
    /// The receipt cannot be trusted any more (e.g. its pid was reused); it can only be forgotten.
    Stale {
        /// Why, for people.
        reason: String,
    },
}

/// Browser-safe inventory record for one reconciled live receipt: no token, no address.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveRuntimeRecord {
    /// The opaque endpoint (also the receipt file stem).
    pub endpoint: LiveRuntimeEndpoint,
    /// The runtime's stable id (several registrations may share it).
    pub runtime_id: String,
    /// The session/workspace identity.
    pub source: LiveRuntimeSource,
    /// Static metadata.
    pub metadata: LiveRuntimeMetadata,
    /// The runtime's process id.
    pub pid: u32,
    /// When it registered, RFC 3339 UTC.
    pub registered_at: String,
    /// Running or stale.
    #[serde(flatten)]
    pub status: LiveRuntimeStatus,
}

/// A file in the receipt directory that was refused, and why.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IgnoredReceipt {
    /// The file name only (no directory).
    pub file: String,
    /// Why it was refused, for people (never contains a secret or an address).
    pub reason: String,
}

/// The result of [`list_live_runtimes`].
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveRuntimeList {
    /// Valid receipts, newest first.
    pub runtimes: Vec<LiveRuntimeRecord>,
    /// Refused files, by file name.
    pub ignored: Vec<IgnoredReceipt>,
    /// Receipts this read removed because their process had exited: the runtime died without
    /// unregistering (a runtime that stops cleanly removes its own receipt first).
    pub exited: Vec<LiveRuntimeEndpoint>,
}

/// Secret host-side information recovered from a verified receipt. Not `Serialize`; `Debug` redacts
/// the address and token.
#[derive(Clone, Debug)]
pub struct ResolvedLiveRuntime {
    /// The browser-safe record.
    pub record: LiveRuntimeRecord,
    /// The loopback address the runtime serves on.
    pub address: Sensitive<SocketAddr>,
    /// The bearer token it requires.
    pub token: BearerToken,
}

/// What [`read_receipt`] found under one file name.
// Returned once per changed file and matched on immediately, so boxing the record buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum ReceiptScan {
    /// A valid receipt (running or stale).
    Listed(LiveRuntimeRecord),
    /// A file that was refused.
    Ignored(IgnoredReceipt),
    /// No receipt under that name: never there, or removed by its owner.
    Gone,
    /// The receipt's process had exited, so this read removed the receipt and its token: the
    /// runtime died without unregistering (a runtime that stops cleanly removes its own receipt).
    Exited {
        /// The pid the receipt recorded.
        pid: u32,
    },
    /// The name is not a receipt name (a `.`-prefixed temp file, or not `*.json`): it is never read.
    NotAReceipt,
}

/// Receipt registration or resolution failure.
#[derive(Debug, thiserror::Error)]
pub enum LiveRuntimeReceiptError {
    /// No receipt for that endpoint or runtime id.
    #[error("no live runtime receipt matches {what}; it may have exited or been forgotten: refresh the runtime list")]
    NotFound {
        /// The endpoint or runtime id looked for.
        what: String,
    },
    /// The receipt exists but belongs to another session or workspace.
    #[error("receipt {endpoint} belongs to a different session or workspace than the one requested; refusing to attach: refresh the list and pick the runtime again")]
    SourceMismatch {
        /// The endpoint that was asked for.
        endpoint: LiveRuntimeEndpoint,
    },
    /// The runtime's process has exited (its receipt has been removed).
    #[error("the runtime process (PID {pid}) has exited and its receipt was removed; start the runtime again")]
    ProcessGone {
        /// The pid the receipt recorded.
        pid: u32,
    },
    /// The recorded pid now belongs to a different process.
    #[error("PID {pid} now belongs to another process, so this receipt is stale; forget it and start the runtime again")]
    ProcessMismatch {
        /// The pid the receipt recorded.
        pid: u32,
    },
    /// Forget refused because the runtime is alive.
    #[error("runtime is still running (PID {pid}); stop it first")]
    StillRunning {
        /// Its pid.
        pid: u32,
    },
    /// Several receipts share the runtime id.
    #[error("runtime id {runtime_id:?} matches {count} receipts; pass an explicit endpoint (or forget the stale ones):\n  {list}", count = .candidates.len(), list = .candidates.join("\n  "))]
    Ambiguous {
        /// The runtime id asked for.
        runtime_id: String,
        /// One line per candidate: endpoint, status, pid, registration time.
        candidates: Vec<String>,
    },
    /// A file-system operation on the receipt directory failed.
    #[error("cannot access {path}: {source}; check that it exists and belongs to you")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Something is malformed or refused: an argument, a receipt, the directory.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// What (a file name, "endpoint", "runtime id", the directory).
        what: String,
        /// Why, and what to do.
        reason: String,
    },
    /// Registration refused: the address is not on loopback.
    #[error("the runtime address is not on loopback; bind the runtime to 127.0.0.1 (or ::1) before registering it")]
    NotLoopback,
    /// The secret store failed.
    #[error(transparent)]
    Secret(#[from] SecretStoreError),
    /// The receipt is valid but its token is not in the secret store.
    #[error("the bearer token for {endpoint} is missing from the secret store; restart the runtime so it registers again")]
    MissingToken {
        /// The endpoint whose token is missing.
        endpoint: LiveRuntimeEndpoint,
    },
}

type Result<T, E = LiveRuntimeReceiptError> = std::result::Result<T, E>;

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> LiveRuntimeReceiptError + '_ {
    move |source| LiveRuntimeReceiptError::Io {
        path: path.to_path_buf(),
        source,
    }
}

// ---------------------------------------------------------------------------------------------
// The directory.

/// The directory holding receipts, together with the secret store holding their tokens.
#[derive(Clone, Debug)]
pub struct ReceiptDir {
    path: PathBuf,
    secrets: SecretStore,
}

impl ReceiptDir {
    /// The directory the environment selects: `$SUPERCODE_RUNTIME_DIR`; else on Linux
    /// `$XDG_RUNTIME_DIR/supercode/live-runtimes`; else the platform runtime dir from `directories`;
    /// else `<temp dir>/supercode-<uid>-live-runtimes`. The secret store is [`SecretStore::from_env`].
    pub fn from_env() -> Result<Self> {
        let secrets = SecretStore::from_env()?;
        let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let path = if let Some(dir) = non_empty("SUPERCODE_RUNTIME_DIR") {
            PathBuf::from(dir)
        } else if let Some(xdg) = non_empty("XDG_RUNTIME_DIR").filter(|_| cfg!(target_os = "linux"))
        {
            PathBuf::from(xdg).join("supercode").join("live-runtimes")
        } else if let Some(runtime) =
            directories::BaseDirs::new().and_then(|b| b.runtime_dir().map(Path::to_path_buf))
        {
            runtime.join("supercode").join("live-runtimes")
        } else {
            // One level only: the temp dir is shared, and a parent directory someone else
            // created could be used to swap ours out. The one directory we use is checked for
            // ownership and mode before every use.
            std::env::temp_dir().join(format!("supercode-{}-live-runtimes", effective_uid()))
        };
        Ok(Self::new(path, secrets))
    }

    /// A receipt directory at `path` (created 0700 on first registration) using `secrets`.
    pub fn new(path: impl Into<PathBuf>, secrets: SecretStore) -> Self {
        ReceiptDir {
            path: path.into(),
            secrets,
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store holding the receipts' tokens.
    pub fn secret_store(&self) -> &SecretStore {
        &self.secrets
    }

    /// Where the receipt for `endpoint` lives: `<dir>/<endpoint>.json`.
    pub fn receipt_path(&self, endpoint: &LiveRuntimeEndpoint) -> PathBuf {
        self.path.join(receipt_file_name(endpoint))
    }
}

fn receipt_file_name(endpoint: &LiveRuntimeEndpoint) -> String {
    format!("{}.json", endpoint.as_str())
}

/// Creates `dir` (and missing parents) with mode 0700; an existing directory must be a real
/// directory owned by us, and is tightened to 0700 if it is wider.
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    check_private_dir(dir).map(|_| ())
}

/// Checks an existing directory: `Ok(false)` if it does not exist.
fn check_private_dir(dir: &Path) -> io::Result<bool> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return Err(io::Error::other(
            "it is not a directory (symbolic links are refused); remove it or point SUPERCODE_RUNTIME_DIR elsewhere",
        ));
    }
    if meta.uid() != effective_uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "it is owned by uid {}, not by you; use a directory of your own",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(true)
}

// ---------------------------------------------------------------------------------------------
// Reading one receipt.

/// The receipt fields this crate interprets; anything else in the file is preserved on rewrite.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReceiptFields {
    endpoint: String,
    runtime_id: String,
    source: LiveRuntimeSource,
    process: ReceiptProcess,
    address: String,
    registered_at: String,
    #[serde(default)]
    metadata: LiveRuntimeMetadata,
    #[serde(default)]
    token: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReceiptProcess {
    pid: u32,
    #[serde(default)]
    start_time: Option<u64>,
}

/// A receipt that passed every check.
struct ValidReceipt {
    record: LiveRuntimeRecord,
    registered: OffsetDateTime,
    address: SocketAddr,
    process: ProcessIdentity,
}

enum Scan {
    Valid(Box<ValidReceipt>),
    Ignored(IgnoredReceipt),
    Gone { exited_pid: Option<u32> },
    NotAReceipt,
}

/// How receipts are read: owner only (0600), at most [`MAX_RECEIPT_BYTES`].
const RECEIPT_RULES: FileRules = FileRules {
    singular: "receipt",
    plural: "receipts",
    max_bytes: MAX_RECEIPT_BYTES,
    mode: ModeRule::OwnerOnly,
};

/// Parses and validates receipt bytes. Reasons never quote field values (the address and token
/// are secrets).
fn parse_receipt(
    file_name: &str,
    bytes: Vec<u8>,
) -> std::result::Result<(Map<String, Value>, ReceiptFields), String> {
    let text = String::from_utf8(bytes).map_err(|_| "it is not valid UTF-8".to_string())?;
    let value = parse_json(&text)?;
    let Value::Object(object) = value else {
        return Err("it is not a JSON object".into());
    };
    match object.get("version").and_then(Value::as_u64) {
        Some(RECEIPT_VERSION) => {}
        Some(other) => {
            return Err(format!(
                "it uses receipt format version {other}, but this build understands version {RECEIPT_VERSION}; update Supercode Tray"
            ))
        }
        None => return Err("it has no numeric \"version\" field".into()),
    }
    let fields: ReceiptFields =
        serde_json::from_value(Value::Object(object.clone())).map_err(|e| {
            // serde messages about wrong types quote the offending value, which could be a token
            // or an address: only "missing field" messages are safe to pass on.
            let message = e.to_string();
            if message.starts_with("missing field") {
                format!("it does not follow receipt format version 1 ({message})")
            } else {
                "it does not follow receipt format version 1 (a field has the wrong type or value)"
                    .to_string()
            }
        })?;
    let endpoint: LiveRuntimeEndpoint = fields.endpoint.parse().map_err(|_| {
        format!("its endpoint is not {ENDPOINT_PREFIX} followed by {ENDPOINT_HEX_DIGITS} lowercase hex digits")
    })?;
    if file_name.strip_suffix(".json") != Some(endpoint.as_str()) {
        return Err(format!(
            "its file name does not match its endpoint {endpoint}; a receipt must be saved as <endpoint>.json (is it a copy or a duplicate of another receipt?)"
        ));
    }
    Ok((object, fields))
}

/// Reads, validates and reconciles one receipt file.
fn scan_file(dir: &ReceiptDir, file_name: &str) -> Scan {
    if file_name.starts_with('.') || !file_name.ends_with(".json") || file_name.contains('/') {
        return Scan::NotAReceipt;
    }
    let ignored = |reason: String| {
        Scan::Ignored(IgnoredReceipt {
            file: file_name.to_string(),
            reason,
        })
    };
    let path = dir.path.join(file_name);
    let bytes = match read_owned_file(&path, &RECEIPT_RULES) {
        Ok(Some(file)) => file.bytes,
        Ok(None) => return Scan::Gone { exited_pid: None },
        Err(refused) => return ignored(refused.reason),
    };
    let (mut object, fields) = match parse_receipt(file_name, bytes) {
        Ok(parsed) => parsed,
        Err(reason) => return ignored(reason),
    };
    let token = fields.token.map(Sensitive::new);
    let endpoint: LiveRuntimeEndpoint = match fields.endpoint.parse() {
        Ok(endpoint) => endpoint,
        Err(e) => return ignored(e.to_string()),
    };
    let Ok(address) = fields.address.parse::<SocketAddr>() else {
        return ignored("its address is not an IP:port pair".into());
    };
    if !address.ip().is_loopback() {
        return ignored(
            "its address is not on loopback (127.0.0.0/8 or ::1); only local runtimes are trusted"
                .into(),
        );
    }
    if fields.runtime_id.trim().is_empty() {
        return ignored("its runtimeId is empty".into());
    }
    let Ok(registered) = OffsetDateTime::parse(&fields.registered_at, &Rfc3339) else {
        return ignored("its registeredAt is not an RFC 3339 timestamp".into());
    };
    let pid = fields.process.pid;
    if pid == 0 {
        return ignored("its process pid is 0".into());
    }
    let account = secret_account(&endpoint);

    let Some(now) = ProcessIdentity::of(pid) else {
        // Dead-process receipts are removed as part of the read, secret first so that a failure
        // leaves the receipt in place for the next scan to retry.
        if let Err(e) = dir.secrets.delete(&account) {
            return ignored(format!(
                "its process (PID {pid}) has exited, but its token could not be removed from the {}: {e}",
                dir.secrets.describe()
            ));
        }
        return match fs::remove_file(&path) {
            // No directory fsync here: a removal lost in a crash only means the next list removes
            // the receipt again, and syncing per removal made a list of 2,000 dead receipts cost
            // 3.3 s instead of 0.3 s (docs/BENCHMARKS.md, "Inventory scale").
            Ok(()) => Scan::Gone {
                exited_pid: Some(pid),
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => Scan::Gone {
                exited_pid: Some(pid),
            },
            Err(e) => ignored(format!(
                "its process (PID {pid}) has exited, but the receipt could not be removed ({e})"
            )),
        };
    };
    let process = ProcessIdentity {
        pid,
        start_time: fields.process.start_time.unwrap_or(now.start_time),
    };
    let status = if process.start_time == now.start_time {
        LiveRuntimeStatus::Running
    } else {
        LiveRuntimeStatus::Stale {
            reason: format!("PID {pid} now belongs to another process"),
        }
    };

    // Adopt a foreign receipt: token into the secret store, start time filled in, file rewritten.
    if token.is_some() || fields.process.start_time.is_none() {
        if let Some(token) = &token {
            if let Err(e) = dir.secrets.set(&account, token) {
                return ignored(format!(
                    "its inline token could not be moved into the {} ({e}); the file was left as is and will be retried",
                    dir.secrets.describe()
                ));
            }
        }
        object.remove("token");
        if let Some(Value::Object(proc_fields)) = object.get_mut("process") {
            proc_fields.insert("startTime".into(), Value::from(process.start_time));
        }
        let rewritten = serde_json::to_vec_pretty(&Value::Object(object))
            .map_err(io::Error::other)
            .and_then(|bytes| write_atomically(&dir.path, file_name, &bytes));
        if let Err(e) = rewritten {
            return ignored(format!(
                "its token was stored but the receipt could not be rewritten without it ({e}); it will be retried"
            ));
        }
    }

    Scan::Valid(Box::new(ValidReceipt {
        record: LiveRuntimeRecord {
            endpoint,
            runtime_id: fields.runtime_id,
            source: fields.source,
            metadata: fields.metadata,
            pid,
            registered_at: format_rfc3339(registered),
            status,
        },
        registered,
        address,
        process,
    }))
}

fn format_rfc3339(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// Deletes a leftover `.*.tmp` file once it is older than [`STALE_TEMP_FILE_AGE`] and its writer
/// (the pid before `.tmp`) is gone. A staged receipt whose receipt never appeared belonged to a
/// registration killed between storing its token and publishing: that token is deleted too.
fn clean_stale_temp(receipts: &ReceiptDir, name: &str) {
    let dir = receipts.path.as_path();
    let path = dir.join(name);
    let Ok(meta) = fs::symlink_metadata(&path) else {
        return;
    };
    if meta.uid() != effective_uid() || meta.is_dir() {
        return;
    }
    let old = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age > STALE_TEMP_FILE_AGE);
    let writer_alive = name
        .strip_suffix(".tmp")
        .and_then(|stem| stem.rsplit('.').next())
        .and_then(|pid| pid.parse::<u32>().ok())
        .is_some_and(pid_exists);
    if old && !writer_alive && fs::remove_file(&path).is_ok() {
        let staged_for = name
            .strip_prefix('.')
            .and_then(|rest| rest.split_once(".json."))
            .and_then(|(endpoint, _)| endpoint.parse::<LiveRuntimeEndpoint>().ok());
        if let Some(endpoint) = staged_for {
            if !receipts.receipt_path(&endpoint).exists() {
                let _ = receipts.secrets.delete(&secret_account(&endpoint));
            }
        }
    }
}

fn check_dir(dir: &ReceiptDir) -> Result<bool> {
    check_private_dir(&dir.path).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::Other => {
            LiveRuntimeReceiptError::Invalid {
                what: format!("receipt directory {}", dir.path.display()),
                reason: e.to_string(),
            }
        }
        _ => io_error(&dir.path)(e),
    })
}

/// Reads, validates and reconciles ONE receipt file by name — what an incremental rescan needs when
/// a file watcher reports that `file_name` changed ([`ReceiptFiles::refresh`] also keeps the
/// result).
///
/// It applies every check [`list_live_runtimes`] applies (except the duplicate-endpoint check,
/// which needs the whole directory) and the same reconciliation: a receipt whose process exited is
/// removed and reported as [`ReceiptScan::Exited`]; a foreign receipt is adopted. `file_name` must
/// be a bare file name; temp files and non-`.json` names are [`ReceiptScan::NotAReceipt`].
pub fn read_receipt(dir: &ReceiptDir, file_name: &str) -> Result<ReceiptScan> {
    check_file_name(file_name)?;
    if !check_dir(dir)? {
        return Ok(ReceiptScan::Gone);
    }
    Ok(match scan_file(dir, file_name) {
        Scan::Valid(valid) => ReceiptScan::Listed(valid.record),
        Scan::Ignored(ignored) => ReceiptScan::Ignored(ignored),
        Scan::Gone {
            exited_pid: Some(pid),
        } => ReceiptScan::Exited { pid },
        Scan::Gone { exited_pid: None } => ReceiptScan::Gone,
        Scan::NotAReceipt => ReceiptScan::NotAReceipt,
    })
}

fn check_file_name(file_name: &str) -> Result<()> {
    if file_name.is_empty() || file_name.contains('/') || file_name.contains('\0') {
        return Err(LiveRuntimeReceiptError::Invalid {
            what: "receipt file name".into(),
            reason: "pass a bare file name from the receipt directory, not a path".into(),
        });
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Operations.

/// RAII registration for one live runtime. Dropping it removes only the receipt created by this
/// registration (if the file still carries this registration's endpoint and process identity) and
/// its token, leaving persisted chat data — and every other registration — intact.
#[must_use = "dropping the registration removes the receipt immediately"]
pub struct LiveRuntimeRegistration {
    dir: ReceiptDir,
    endpoint: LiveRuntimeEndpoint,
    process: ProcessIdentity,
    active: bool,
}

impl fmt::Debug for LiveRuntimeRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LiveRuntimeRegistration")
            .field("endpoint", &self.endpoint)
            .field("dir", &self.dir.path)
            .finish_non_exhaustive()
    }
}

impl LiveRuntimeRegistration {
    /// The endpoint this registration published.
    pub fn endpoint(&self) -> &LiveRuntimeEndpoint {
        &self.endpoint
    }

    /// Removes the receipt and token now, reporting failures (Drop does the same silently).
    pub fn unregister(mut self) -> Result<()> {
        self.active = false;
        self.remove_own()
    }

    fn remove_own(&self) -> Result<()> {
        // Token first, receipt second: a process killed in between leaves a receipt of a dead
        // pid, which the next scan removes, rather than a token nothing points to any more.
        self.dir.secrets.delete(&secret_account(&self.endpoint))?;
        let path = self.dir.receipt_path(&self.endpoint);
        if let Ok(Some(OwnedFile { bytes, .. })) = read_owned_file(&path, &RECEIPT_RULES) {
            let ours = serde_json::from_slice::<Value>(&bytes).is_ok_and(|value| {
                value.get("endpoint").and_then(Value::as_str) == Some(self.endpoint.as_str())
                    && value.pointer("/process/pid").and_then(Value::as_u64)
                        == Some(u64::from(self.process.pid))
                    && value.pointer("/process/startTime").and_then(Value::as_u64)
                        == Some(self.process.start_time)
            });
            if ours {
                match fs::remove_file(&path) {
                    Ok(()) => {
                        let _ = File::open(&self.dir.path).and_then(|d| d.sync_all());
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_error(&path)(e)),
                }
            }
        }
        Ok(())
    }
}

impl Drop for LiveRuntimeRegistration {
    fn drop(&mut self) {
        if self.active {
            self.active = false;
            if let Err(e) = self.remove_own() {
                tracing::warn!(endpoint = %self.endpoint, error = %e, "could not remove live runtime receipt");
            }
        }
    }
}

/// Register an authenticated loopback runtime and return its opaque endpoint (inside the RAII
/// registration). Same as [`register_live_runtime_with_metadata`] with default metadata.
pub fn register_live_runtime(
    dir: &ReceiptDir,
    runtime_id: &str,
    source: LiveRuntimeSource,
    address: SocketAddr,
    token: BearerToken,
) -> Result<LiveRuntimeRegistration> {
    register_live_runtime_with_metadata(
        dir,
        runtime_id,
        source,
        address,
        token,
        LiveRuntimeMetadata::default(),
    )
}

/// Register a runtime with the static fields used by list/describe output.
///
/// Stores the token under `live-runtime:<endpoint>` first, then atomically writes
/// `<endpoint>.json` (0600, in a 0700 directory) recording the calling process's identity. The
/// address must be loopback.
pub fn register_live_runtime_with_metadata(
    dir: &ReceiptDir,
    runtime_id: &str,
    source: LiveRuntimeSource,
    address: SocketAddr,
    token: BearerToken,
    metadata: LiveRuntimeMetadata,
) -> Result<LiveRuntimeRegistration> {
    if runtime_id.trim().is_empty() {
        return Err(LiveRuntimeReceiptError::Invalid {
            what: "runtime id".into(),
            reason: "it is empty; pass the runtime's stable id".into(),
        });
    }
    if !address.ip().is_loopback() {
        return Err(LiveRuntimeReceiptError::NotLoopback);
    }
    if token.expose().is_empty() {
        return Err(LiveRuntimeReceiptError::Invalid {
            what: "bearer token".into(),
            reason: "it is empty; runtimes must require a token".into(),
        });
    }
    ensure_private_dir(&dir.path).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::Other => {
            LiveRuntimeReceiptError::Invalid {
                what: format!("receipt directory {}", dir.path.display()),
                reason: e.to_string(),
            }
        }
        _ => io_error(&dir.path)(e),
    })?;
    let endpoint = LiveRuntimeEndpoint::generate();
    let process = ProcessIdentity::current();
    // Serialized up front: `json!` would panic on a value that cannot be JSON (a non-UTF-8 path).
    let not_json = |e: serde_json::Error| LiveRuntimeReceiptError::Invalid {
        what: "runtime metadata".into(),
        reason: format!("it cannot be written as JSON ({e}); use UTF-8 paths"),
    };
    let source = serde_json::to_value(&source).map_err(not_json)?;
    let metadata = serde_json::to_value(&metadata).map_err(not_json)?;
    let receipt = serde_json::json!({
        "version": RECEIPT_VERSION,
        "endpoint": endpoint,
        "runtimeId": runtime_id,
        "source": source,
        "process": { "pid": process.pid, "startTime": process.start_time },
        "address": address.to_string(),
        "registeredAt": format_rfc3339(OffsetDateTime::now_utc()),
        "metadata": metadata,
    });
    let bytes = serde_json::to_vec_pretty(&receipt).map_err(not_json)?;
    let account = secret_account(&endpoint);
    let name = receipt_file_name(&endpoint);
    // Staged, then the token, then published. The token must be in place before the receipt
    // becomes visible, so no reader ever finds a receipt without its token; and the staged temp
    // file, which names the endpoint, exists before the token does, so a process killed between
    // the two leaves a temp file from which a later scan removes the orphaned token too.
    let staged = StagedFile::write(&dir.path, &name, &bytes)
        .map_err(|e| io_error(&dir.path.join(&name))(e))?;
    dir.secrets.set(&account, &token)?;
    if let Err(e) = staged.publish() {
        let _ = dir.secrets.delete(&account);
        return Err(io_error(&dir.path.join(name))(e));
    }
    Ok(LiveRuntimeRegistration {
        dir: dir.clone(),
        endpoint,
        process,
        active: true,
    })
}

/// List every reconciled live runtime without exposing its bearer token or loopback address.
/// Dead-process receipts are removed as part of the read; refused files are listed in
/// [`LiveRuntimeList::ignored`] with a reason. Newest first. A missing directory is an empty list.
pub fn list_live_runtimes(dir: &ReceiptDir) -> Result<LiveRuntimeList> {
    let (files, exited) = ReceiptFiles::scan(dir)?;
    let mut list = files.list();
    list.exited = exited;
    Ok(list)
}

/// The receipt directory as last read, file by file: what a watcher keeps so that a change to
/// one file costs one read ([`ReceiptFiles::refresh`]), while [`ReceiptFiles::list`] still gives
/// exactly what [`list_live_runtimes`] would for the same files. The checks that span files (a
/// duplicate endpoint, the newest-first order) are made by `list`, over every file, because no
/// read of one file can see them.
#[derive(Clone, Debug, Default)]
pub struct ReceiptFiles {
    /// By file name: the order a scan visits them in, which fixes the order of `ignored`.
    files: BTreeMap<String, FileState>,
    /// Names that are not UTF-8. A file event cannot name them as a `&str`, so only a full scan
    /// finds them (and forgets them).
    unnamed: Vec<IgnoredReceipt>,
}

// Nearly every file is a listed receipt, so boxing that variant would add an allocation per
// receipt to save space only on the few refused ones.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum FileState {
    Listed {
        record: LiveRuntimeRecord,
        /// Kept parsed because the listing sorts by it on every call.
        registered: OffsetDateTime,
    },
    Ignored(IgnoredReceipt),
}

impl ReceiptFiles {
    /// Reads the whole directory as [`list_live_runtimes`] does (dead receipts removed, stale temp
    /// files cleaned), and returns it with the endpoints whose receipts this read removed because
    /// their process had exited. A missing directory holds no files.
    pub fn scan(dir: &ReceiptDir) -> Result<(Self, Vec<LiveRuntimeEndpoint>)> {
        let mut files = Self::default();
        let mut exited = Vec::new();
        if !check_dir(dir)? {
            return Ok((files, exited));
        }
        let mut names = Vec::new();
        for entry in fs::read_dir(&dir.path).map_err(io_error(&dir.path))? {
            let entry = entry.map_err(io_error(&dir.path))?;
            match entry.file_name().into_string() {
                Ok(name) => names.push(name),
                Err(raw) => {
                    let lossy = raw.to_string_lossy().into_owned();
                    if lossy.ends_with(".json") && !lossy.starts_with('.') {
                        files.unnamed.push(IgnoredReceipt {
                            file: lossy,
                            reason: "its file name is not valid UTF-8, so it cannot be an endpoint"
                                .into(),
                        });
                    }
                }
            }
        }
        // Sorted so that removals of dead receipts, and so `exited`, come in a stable order.
        names.sort();
        for name in names {
            if name.starts_with('.') {
                if name.ends_with(".tmp") {
                    clean_stale_temp(dir, &name);
                }
                continue;
            }
            let scan = scan_file(dir, &name);
            if let Scan::Gone {
                exited_pid: Some(_),
            } = scan
            {
                if let Ok(endpoint) = name.trim_end_matches(".json").parse() {
                    exited.push(endpoint);
                }
            }
            files.store(name, scan);
        }
        Ok((files, exited))
    }

    /// Re-reads one file after a change to it, with every check and reconciliation of
    /// [`read_receipt`], and keeps what it found. A temp file or any other name that is not a
    /// receipt's is never read. A missing directory empties the cache, as a full scan would.
    pub fn refresh(&mut self, dir: &ReceiptDir, file_name: &str) -> Result<ReceiptScan> {
        check_file_name(file_name)?;
        if !check_dir(dir)? {
            *self = Self::default();
            return Ok(ReceiptScan::Gone);
        }
        let scan = scan_file(dir, file_name);
        let outcome = match &scan {
            Scan::Valid(valid) => ReceiptScan::Listed(valid.record.clone()),
            Scan::Ignored(ignored) => ReceiptScan::Ignored(ignored.clone()),
            Scan::Gone {
                exited_pid: Some(pid),
            } => ReceiptScan::Exited { pid: *pid },
            Scan::Gone { exited_pid: None } => ReceiptScan::Gone,
            Scan::NotAReceipt => ReceiptScan::NotAReceipt,
        };
        self.store(file_name.to_owned(), scan);
        Ok(outcome)
    }

    fn store(&mut self, name: String, scan: Scan) {
        match scan {
            Scan::Valid(valid) => {
                let ValidReceipt {
                    record, registered, ..
                } = *valid;
                self.files
                    .insert(name, FileState::Listed { record, registered });
            }
            Scan::Ignored(ignored) => {
                self.files.insert(name, FileState::Ignored(ignored));
            }
            Scan::Gone { .. } | Scan::NotAReceipt => {
                self.files.remove(&name);
            }
        }
    }

    /// The names of the listed receipts that record process `pid`: what to re-read when it exits.
    pub fn names_with_pid(&self, pid: u32) -> Vec<String> {
        self.files
            .iter()
            .filter(
                |(_, state)| matches!(state, FileState::Listed { record, .. } if record.pid == pid),
            )
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The listing these files make, exactly as [`list_live_runtimes`] gives it: valid receipts
    /// newest first, refused files with their reasons. `exited` is empty: a removal is reported
    /// by the read that made it. Costs memory work only, no file is touched.
    pub fn list(&self) -> LiveRuntimeList {
        let (runtimes, ignored) = self.list_borrowed();
        LiveRuntimeList {
            runtimes: runtimes.into_iter().cloned().collect(),
            ignored,
            exited: Vec::new(),
        }
    }

    /// [`ReceiptFiles::list`] with the records borrowed from the cache instead of copied, for a
    /// caller that builds something else from them on every change (copying 10,000 records costs
    /// more than the rest of such a rebuild).
    pub fn list_borrowed(&self) -> (Vec<&LiveRuntimeRecord>, Vec<IgnoredReceipt>) {
        let mut seen = HashSet::with_capacity(self.files.len());
        let mut valid = Vec::with_capacity(self.files.len());
        let mut ignored = self.unnamed.clone();
        for (name, state) in &self.files {
            match state {
                FileState::Listed { record, registered } => {
                    if seen.insert(&record.endpoint) {
                        valid.push((record, registered));
                    } else {
                        ignored.push(IgnoredReceipt {
                            file: name.clone(),
                            reason: format!(
                                "duplicate endpoint {}: another receipt already uses it",
                                record.endpoint
                            ),
                        });
                    }
                }
                FileState::Ignored(refused) => ignored.push(refused.clone()),
            }
        }
        valid.sort_by(|(a, a_at), (b, b_at)| {
            b_at.cmp(a_at)
                .then_with(|| a.endpoint.as_str().cmp(b.endpoint.as_str()))
        });
        (
            valid.into_iter().map(|(record, _)| record).collect(),
            ignored,
        )
    }
}

/// Resolve an opaque endpoint and verify that it belongs to `expected`: the receipt must exist and
/// be valid, its source must equal `expected`, its process (pid AND start time) must be alive, and
/// its token must be in the secret store.
pub fn resolve_live_runtime(
    dir: &ReceiptDir,
    endpoint: &LiveRuntimeEndpoint,
    expected: &LiveRuntimeSource,
) -> Result<ResolvedLiveRuntime> {
    let valid = match scan_endpoint(dir, endpoint)? {
        Scan::Valid(valid) => valid,
        other => return Err(unusable(endpoint, other)),
    };
    if valid.record.source != *expected {
        return Err(LiveRuntimeReceiptError::SourceMismatch {
            endpoint: endpoint.clone(),
        });
    }
    if let LiveRuntimeStatus::Stale { .. } = valid.record.status {
        return Err(LiveRuntimeReceiptError::ProcessMismatch {
            pid: valid.record.pid,
        });
    }
    let token = dir.secrets.get(&secret_account(endpoint))?.ok_or_else(|| {
        LiveRuntimeReceiptError::MissingToken {
            endpoint: endpoint.clone(),
        }
    })?;
    // The keychain call may have taken a while: check the process once more before handing out
    // its address and token.
    if !valid.process.is_alive() {
        return Err(if pid_exists(valid.process.pid) {
            LiveRuntimeReceiptError::ProcessMismatch {
                pid: valid.process.pid,
            }
        } else {
            LiveRuntimeReceiptError::ProcessGone {
                pid: valid.process.pid,
            }
        });
    }
    Ok(ResolvedLiveRuntime {
        record: valid.record,
        address: Sensitive::new(valid.address),
        token,
    })
}

fn scan_endpoint(dir: &ReceiptDir, endpoint: &LiveRuntimeEndpoint) -> Result<Scan> {
    if !check_dir(dir)? {
        return Ok(Scan::Gone { exited_pid: None });
    }
    Ok(scan_file(dir, &receipt_file_name(endpoint)))
}

fn unusable(endpoint: &LiveRuntimeEndpoint, scan: Scan) -> LiveRuntimeReceiptError {
    match scan {
        Scan::Gone {
            exited_pid: Some(pid),
        } => LiveRuntimeReceiptError::ProcessGone { pid },
        Scan::Ignored(ignored) => LiveRuntimeReceiptError::Invalid {
            what: format!("receipt {}", ignored.file),
            reason: ignored.reason,
        },
        Scan::Valid(_) | Scan::Gone { exited_pid: None } | Scan::NotAReceipt => {
            LiveRuntimeReceiptError::NotFound {
                what: endpoint.to_string(),
            }
        }
    }
}

/// Find the newest running receipt matching a discovered source session, if any.
pub fn discover_live_runtime(
    dir: &ReceiptDir,
    source: &LiveRuntimeSource,
) -> Result<Option<LiveRuntimeRecord>> {
    Ok(list_live_runtimes(dir)?
        .runtimes
        .into_iter()
        .find(|r| r.source == *source && r.status == LiveRuntimeStatus::Running))
}

/// Resolve one stable runtime id, requiring an explicit choice if stale or concurrent registrations
/// would otherwise make attachment ambiguous.
///
/// Exactly one receipt with that id (running, or a lone stale one the caller can show and forget)
/// is returned; several are [`LiveRuntimeReceiptError::Ambiguous`], listing each candidate; none is
/// [`LiveRuntimeReceiptError::NotFound`].
pub fn find_live_runtime(dir: &ReceiptDir, runtime_id: &str) -> Result<LiveRuntimeRecord> {
    let mut matches: Vec<LiveRuntimeRecord> = list_live_runtimes(dir)?
        .runtimes
        .into_iter()
        .filter(|r| r.runtime_id == runtime_id)
        .collect();
    match matches.len() {
        0 => Err(LiveRuntimeReceiptError::NotFound {
            what: format!("runtime id {runtime_id:?}"),
        }),
        1 => Ok(matches.remove(0)),
        _ => Err(LiveRuntimeReceiptError::Ambiguous {
            runtime_id: runtime_id.to_string(),
            candidates: matches
                .iter()
                .map(|r| {
                    let status = match &r.status {
                        LiveRuntimeStatus::Running => "running".to_string(),
                        LiveRuntimeStatus::Stale { reason } => format!("stale ({reason})"),
                    };
                    format!(
                        "{}  {status}  PID {}  registered {}",
                        r.endpoint, r.pid, r.registered_at
                    )
                })
                .collect(),
        }),
    }
}

/// Remove only a stale attachment receipt (or one whose process is gone) and its token. Canonical,
/// sidecar, source-native and exported session data are never addressed by this operation, nor is
/// any other receipt. A running runtime is refused with [`LiveRuntimeReceiptError::StillRunning`].
pub fn forget_live_runtime(dir: &ReceiptDir, endpoint: &LiveRuntimeEndpoint) -> Result<()> {
    let valid = match scan_endpoint(dir, endpoint)? {
        // Its process was gone: the scan already removed receipt and token.
        Scan::Gone {
            exited_pid: Some(_),
        } => return Ok(()),
        Scan::Valid(valid) => valid,
        other => return Err(unusable(endpoint, other)),
    };
    if valid.record.status == LiveRuntimeStatus::Running {
        return Err(LiveRuntimeReceiptError::StillRunning {
            pid: valid.record.pid,
        });
    }
    let path = dir.receipt_path(endpoint);
    match fs::remove_file(&path) {
        Ok(()) => {
            let _ = File::open(&dir.path).and_then(|d| d.sync_all());
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_error(&path)(e)),
    }
    dir.secrets.delete(&secret_account(endpoint))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_parsing_accepts_only_the_generated_shape() {
        let generated = LiveRuntimeEndpoint::generate();
        assert_eq!(
            generated.as_str().parse::<LiveRuntimeEndpoint>().unwrap(),
            generated
        );
        for bad in [
            "",
            "lre_",
            "lre_0123456789abcdef0123456789ABCDEF",
            "lre_0123456789abcdef0123456789abcde",
            "lre_0123456789abcdef0123456789abcdef0",
            "../lre_0123456789abcdef0123456789abcd",
            "xre_0123456789abcdef0123456789abcdef",
            "lre_0123456789abcdef/123456789abcdef",
        ] {
            assert!(
                bad.parse::<LiveRuntimeEndpoint>().is_err(),
                "{bad:?} parsed"
            );
        }
        assert!(serde_json::from_str::<LiveRuntimeEndpoint>("\"lre_../../etc\"").is_err());
    }

    #[test]
    fn ambiguous_error_lists_every_candidate_and_asks_for_an_endpoint() {
        let e = LiveRuntimeReceiptError::Ambiguous {
            runtime_id: "rt".into(),
            candidates: vec!["lre_a  running".into(), "lre_b  stale".into()],
        };
        let message = e.to_string();
        assert!(message.contains("lre_a  running") && message.contains("lre_b  stale"));
        assert!(message.contains("explicit endpoint"));
    }
}
