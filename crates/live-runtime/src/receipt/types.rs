//! The receipt's public face: the opaque [`LiveRuntimeEndpoint`] (also the receipt's file stem)
//! and the account its token is kept under, the records and listings a read returns, what one
//! file was found to be ([`ReceiptScan`]), and the one error type of every receipt operation.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

use crate::process::ProcessIdentity;
use crate::secret::{BearerToken, SecretStoreError, Sensitive};

/// The receipt format version this crate writes and understands.
pub const RECEIPT_VERSION: u64 = 1;

/// Prefix of every generated endpoint.
pub(super) const ENDPOINT_PREFIX: &str = "lre_";
/// Number of lowercase hex digits after the prefix (128 random bits).
pub(super) const ENDPOINT_HEX_DIGITS: usize = 32;

/// The secret-store account holding the bearer token of `endpoint`: `live-runtime:<endpoint>`.
pub fn secret_account(endpoint: &LiveRuntimeEndpoint) -> String {
    format!("live-runtime:{}", endpoint.as_str())
}

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
    /// The process that serves the endpoint, when it is not the runtime's own (a host serving a
    /// hosted continuation, such as a Claude Code session): the token goes only to a listener
    /// it holds, and the runtime ends when either process does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_pid: Option<u32>,
    /// When it registered, RFC 3339 UTC.
    pub registered_at: String,
    /// Running or stale.
    #[serde(flatten)]
    pub status: LiveRuntimeStatus,
}

impl LiveRuntimeRecord {
    /// The process that must hold the listener at the runtime's address: its server when it has
    /// one, else the runtime's own process.
    pub fn listener_pid(&self) -> u32 {
        self.server_pid.unwrap_or(self.pid)
    }
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
///
/// [`list_live_runtimes`]: super::list_live_runtimes
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LiveRuntimeList {
    /// Valid receipts, newest first.
    pub runtimes: Vec<LiveRuntimeRecord>,
    /// Refused files, by file name.
    pub ignored: Vec<IgnoredReceipt>,
    /// Receipts this list's reconciliation removed because their process had exited: the runtime
    /// died without unregistering (a runtime that stops cleanly removes its own receipt first).
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

/// A running runtime as a read of its receipt found it, before its token is asked for: its
/// address and process, so that a caller can first check who listens at the address (one
/// socket-table query) and ask the secret store only for runtimes that serve. From
/// [`ReceiptFiles::located`]; [`LocatedLiveRuntime::resolve`] finishes what
/// [`resolve_live_runtime`] does. Not `Serialize`; `Debug` redacts the address.
///
/// [`ReceiptFiles::located`]: super::ReceiptFiles::located
/// [`resolve_live_runtime`]: super::resolve_live_runtime
#[derive(Clone, Debug)]
pub struct LocatedLiveRuntime {
    /// The browser-safe record.
    pub record: LiveRuntimeRecord,
    /// The loopback address the runtime serves on.
    pub address: Sensitive<SocketAddr>,
    /// The process the receipt names, with the start time it recorded.
    pub process: ProcessIdentity,
}

/// What [`read_receipt`] found under one file name (or what [`reconcile_receipt`] left there).
///
/// [`read_receipt`]: super::read_receipt
/// [`reconcile_receipt`]: super::reconcile_receipt
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
    /// The receipt's process has exited: the runtime died without unregistering (a runtime that
    /// stops cleanly removes its own receipt). A read leaves the receipt in place;
    /// reconciliation removes it and its token.
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

pub(super) type Result<T, E = LiveRuntimeReceiptError> = std::result::Result<T, E>;

pub(super) fn io_error(path: &Path) -> impl FnOnce(io::Error) -> LiveRuntimeReceiptError + '_ {
    move |source| LiveRuntimeReceiptError::Io {
        path: path.to_path_buf(),
        source,
    }
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
