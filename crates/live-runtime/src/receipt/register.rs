//! Registration: how a runtime announces itself (token into the secret store, then the receipt
//! published atomically) and the RAII [`LiveRuntimeRegistration`] that removes exactly its own
//! receipt and token again.

use std::fmt;
use std::net::SocketAddr;

use serde_json::Value;
use time::OffsetDateTime;

use super::dir::{dir_error, ensure_private_dir, receipt_file_name};
use super::read::{format_rfc3339, RECEIPT_RULES};
use super::types::{io_error, Result};
use super::{
    secret_account, LiveRuntimeEndpoint, LiveRuntimeMetadata, LiveRuntimeReceiptError,
    LiveRuntimeSource, ReceiptDir, RECEIPT_VERSION,
};
use crate::owned_file::{read_owned_file, remove_durably, OwnedFile, StagedFile};
use crate::process::ProcessIdentity;
use crate::secret::BearerToken;

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
                remove_durably(&path).map_err(io_error(&path))?;
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
    let process = ProcessIdentity::current();
    register(
        dir, runtime_id, source, address, token, metadata, process, None,
    )
}

/// Register a runtime served by this process on behalf of another process of the same user: the
/// receipt records `process`, so the runtime lives exactly as long as that process (a hosted
/// continuation, such as a Claude Code session whose status a small host process serves).
///
/// The receipt also names the calling process as the runtime's `server`: the token goes only to a
/// listener it holds, and the runtime ends when either process exits. Refused unless `process`
/// is alive (same pid and start time) and belongs to the calling user: a receipt must never tie
/// a runtime to someone else's process.
pub fn register_live_runtime_for_process(
    dir: &ReceiptDir,
    runtime_id: &str,
    source: LiveRuntimeSource,
    address: SocketAddr,
    token: BearerToken,
    metadata: LiveRuntimeMetadata,
    process: ProcessIdentity,
) -> Result<LiveRuntimeRegistration> {
    if !process.is_alive() {
        return Err(LiveRuntimeReceiptError::ProcessGone { pid: process.pid });
    }
    match crate::process::owner_of(process.pid) {
        Some(uid) if uid == crate::process::effective_uid() => {}
        Some(uid) => {
            return Err(LiveRuntimeReceiptError::Invalid {
                what: format!("process {}", process.pid),
                reason: format!(
                    "it belongs to uid {uid}, not to you; a runtime can only be registered for your own processes"
                ),
            })
        }
        None => return Err(LiveRuntimeReceiptError::ProcessGone { pid: process.pid }),
    }
    let server = ProcessIdentity::current();
    register(
        dir,
        runtime_id,
        source,
        address,
        token,
        metadata,
        process,
        Some(server),
    )
}

#[allow(clippy::too_many_arguments)] // private: the two public forms above name each argument
fn register(
    dir: &ReceiptDir,
    runtime_id: &str,
    source: LiveRuntimeSource,
    address: SocketAddr,
    token: BearerToken,
    metadata: LiveRuntimeMetadata,
    process: ProcessIdentity,
    server: Option<ProcessIdentity>,
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
    ensure_private_dir(&dir.path).map_err(dir_error(&dir.path))?;
    let endpoint = LiveRuntimeEndpoint::generate();
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
    let mut receipt = receipt;
    if let Some(server) = server {
        receipt["server"] =
            serde_json::json!({ "pid": server.pid, "startTime": server.start_time });
    }
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
