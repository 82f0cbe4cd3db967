//! What the tray does with receipts: list them, resolve one into its address and token, discover
//! or find one by source or runtime id, and forget a stale one.
//!
//! Resolving, discovering and finding are pure reads: they change nothing on disk. Listing
//! reconciles first (the seed's contract: dead-process receipts are removed as part of it), and
//! forgetting removes one receipt; both through the reconciliation rules of `reconcile`.

use super::dir::{check_dir, receipt_file_name};
use super::files::ReceiptFiles;
use super::read::{scan_file, Scan};
use super::reconcile::remove_dead;
use super::types::{io_error, Result};
use super::{
    secret_account, LiveRuntimeEndpoint, LiveRuntimeList, LiveRuntimeReceiptError,
    LiveRuntimeRecord, LiveRuntimeSource, LiveRuntimeStatus, LocatedLiveRuntime, ReceiptDir,
    ResolvedLiveRuntime,
};
use crate::owned_file::remove_durably;
use crate::process::pid_exists;
use crate::secret::Sensitive;

/// List every reconciled live runtime without exposing its bearer token or loopback address.
/// Dead-process receipts are removed as part of the read; refused files are listed in
/// [`LiveRuntimeList::ignored`] with a reason. Newest first. A missing directory is an empty list.
///
/// Built from the explicit steps: a pure read ([`ReceiptFiles::scan`]), then reconciliation
/// ([`ReceiptFiles::reconcile`], which also adopts foreign receipts), whose removals are
/// [`LiveRuntimeList::exited`].
pub fn list_live_runtimes(dir: &ReceiptDir) -> Result<LiveRuntimeList> {
    let mut files = ReceiptFiles::scan(dir)?;
    let exited = files.reconcile(dir);
    let mut list = files.list();
    list.exited = exited;
    Ok(list)
}

/// Resolve an opaque endpoint and verify that it belongs to `expected`: the receipt must exist and
/// be valid, its source must equal `expected`, its process (pid AND start time) must be alive, and
/// its token must be in the secret store (or, for a foreign receipt not yet adopted, in the file).
/// A pure read: nothing on disk changes.
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
    let inline_token = valid.adoption.and_then(|adoption| adoption.token);
    let located = LocatedLiveRuntime {
        record: valid.record,
        address: Sensitive::new(valid.address),
        process: valid.process,
    };
    match inline_token {
        Some(token) => located.checked(token),
        None => located.resolve(dir),
    }
}

impl LocatedLiveRuntime {
    /// The rest of [`resolve_live_runtime`]: the token from `dir`'s secret store, then the process
    /// checked once more (the keychain call may have taken a while) before its address and token
    /// are handed out.
    pub fn resolve(self, dir: &ReceiptDir) -> Result<ResolvedLiveRuntime> {
        let endpoint = &self.record.endpoint;
        let token = dir.secrets.get(&secret_account(endpoint))?.ok_or_else(|| {
            LiveRuntimeReceiptError::MissingToken {
                endpoint: endpoint.clone(),
            }
        })?;
        self.checked(token)
    }

    /// Hands out the address and `token` once the process is checked again.
    fn checked(self, token: Sensitive<String>) -> Result<ResolvedLiveRuntime> {
        if !self.process.is_alive() {
            return Err(if pid_exists(self.process.pid) {
                LiveRuntimeReceiptError::ProcessMismatch {
                    pid: self.process.pid,
                }
            } else {
                LiveRuntimeReceiptError::ProcessGone {
                    pid: self.process.pid,
                }
            });
        }
        Ok(ResolvedLiveRuntime {
            record: self.record,
            address: self.address,
            token,
        })
    }
}

/// Reads one endpoint's receipt, changing nothing.
fn scan_endpoint(dir: &ReceiptDir, endpoint: &LiveRuntimeEndpoint) -> Result<Scan> {
    if !check_dir(dir)? {
        return Ok(Scan::Gone { exited_pid: None });
    }
    Ok(scan_file(dir, &receipt_file_name(endpoint), None))
}

fn unusable(endpoint: &LiveRuntimeEndpoint, scan: Scan) -> LiveRuntimeReceiptError {
    match scan {
        Scan::Exited { pid, .. }
        | Scan::Gone {
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

/// Find the newest running receipt matching a discovered source session, if any. A pure read.
pub fn discover_live_runtime(
    dir: &ReceiptDir,
    source: &LiveRuntimeSource,
) -> Result<Option<LiveRuntimeRecord>> {
    Ok(ReceiptFiles::scan(dir)?
        .list()
        .runtimes
        .into_iter()
        .find(|r| r.source == *source && r.status == LiveRuntimeStatus::Running))
}

/// Resolve one stable runtime id, requiring an explicit choice if stale or concurrent registrations
/// would otherwise make attachment ambiguous.
///
/// Exactly one receipt with that id (running, or a lone stale one the caller can show and forget)
/// is returned; several are [`LiveRuntimeReceiptError::Ambiguous`], listing each candidate; none is
/// [`LiveRuntimeReceiptError::NotFound`]. A pure read.
pub fn find_live_runtime(dir: &ReceiptDir, runtime_id: &str) -> Result<LiveRuntimeRecord> {
    let mut matches: Vec<LiveRuntimeRecord> = ReceiptFiles::scan(dir)?
        .list()
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
        // Its process is gone: removed as reconciliation removes a dead process's receipt.
        Scan::Exited { endpoint, pid, .. } => {
            return remove_dead(dir, &receipt_file_name(&endpoint), &endpoint, pid)
                .map(|_| ())
                .map_err(|reason| LiveRuntimeReceiptError::Invalid {
                    what: format!("receipt {}", receipt_file_name(&endpoint)),
                    reason,
                });
        }
        Scan::Valid(valid) => valid,
        other => return Err(unusable(endpoint, other)),
    };
    if valid.record.status == LiveRuntimeStatus::Running {
        return Err(LiveRuntimeReceiptError::StillRunning {
            pid: valid.record.pid,
        });
    }
    let path = dir.receipt_path(endpoint);
    remove_durably(&path).map_err(io_error(&path))?;
    dir.secrets.delete(&secret_account(endpoint))?;
    Ok(())
}
