//! Reconciliation: the one step that changes the receipt directory on the reader's side, apart
//! from forgetting a receipt. Reads never change anything ([`read_receipt`], [`ReceiptFiles`],
//! [`resolve_live_runtime`], [`find_live_runtime`], [`discover_live_runtime`]); the few callers
//! that should clean up call this explicitly: [`list_live_runtimes`], [`reconcile_receipt`] and
//! [`ReceiptFiles::reconcile`] (the tray's watcher, every pass). It removes a receipt whose
//! process has exited, with its token, and adopts a foreign receipt (its inline token moved into
//! the secret store, its start time filled in, the file rewritten atomically without the token).
//!
//! [`read_receipt`]: super::read_receipt
//! [`ReceiptFiles`]: super::ReceiptFiles
//! [`ReceiptFiles::reconcile`]: super::ReceiptFiles::reconcile
//! [`resolve_live_runtime`]: super::resolve_live_runtime
//! [`find_live_runtime`]: super::find_live_runtime
//! [`discover_live_runtime`]: super::discover_live_runtime
//! [`list_live_runtimes`]: super::list_live_runtimes

use std::fs;
use std::io;

use serde_json::Value;

use super::read::{read_named, Adoption, Scan};
use super::types::Result;
use super::{secret_account, IgnoredReceipt, LiveRuntimeEndpoint, ReceiptDir, ReceiptScan};
use crate::owned_file::write_atomically;

/// Reads ONE receipt file as [`read_receipt`] does, then reconciles it: a receipt whose process
/// has exited is removed with its token and reported as [`ReceiptScan::Exited`]; a foreign
/// receipt is adopted and listed. A file whose reconciliation failed is
/// [`ReceiptScan::Ignored`], with the reason, and is retried by the next reconciliation of it.
///
/// [`read_receipt`]: super::read_receipt
pub fn reconcile_receipt(dir: &ReceiptDir, file_name: &str) -> Result<ReceiptScan> {
    let scan = read_named(dir, file_name)?;
    Ok(reconcile_scan(dir, file_name, scan).0.outcome())
}

/// Reconciles what a read of `file_name` found. Returns what the file is now, and the endpoint
/// when this call removed a dead process's receipt (not when someone else removed it first: a
/// runtime that unregistered removed its own).
pub(super) fn reconcile_scan(
    dir: &ReceiptDir,
    file_name: &str,
    scan: Scan,
) -> (Scan, Option<LiveRuntimeEndpoint>) {
    let ignored = |reason: String| {
        Scan::Ignored(IgnoredReceipt {
            file: file_name.to_string(),
            reason,
        })
    };
    match scan {
        Scan::Exited { endpoint, pid, .. } => match remove_dead(dir, file_name, &endpoint, pid) {
            Ok(removed) => (
                Scan::Gone {
                    exited_pid: Some(pid),
                },
                removed.then_some(endpoint),
            ),
            Err(reason) => (ignored(reason), None),
        },
        Scan::Valid(mut valid) => match valid.adoption.take() {
            None => (Scan::Valid(valid), None),
            Some(adoption) => match adopt(dir, file_name, &valid.record.endpoint, adoption) {
                Ok(()) => (Scan::Valid(valid), None),
                Err(reason) => (ignored(reason), None),
            },
        },
        other => (other, None),
    }
}

/// Removes a dead process's receipt, secret first so that a failure leaves the receipt in place
/// for the next reconciliation to retry. `Ok(false)` when the receipt was already gone.
pub(super) fn remove_dead(
    dir: &ReceiptDir,
    file_name: &str,
    endpoint: &LiveRuntimeEndpoint,
    pid: u32,
) -> std::result::Result<bool, String> {
    if let Err(e) = dir.secrets.delete(&secret_account(endpoint)) {
        return Err(format!(
            "its process (PID {pid}) has exited, but its token could not be removed from the {}: {e}",
            dir.secrets.describe()
        ));
    }
    match fs::remove_file(dir.path.join(file_name)) {
        // No directory fsync here: a removal lost in a crash only means the next reconciliation
        // removes the receipt again, while a sync per removal waits on the disk once per dead
        // receipt and turns a list that finds thousands of them into seconds.
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!(
            "its process (PID {pid}) has exited, but the receipt could not be removed ({e})"
        )),
    }
}

/// Adopts a foreign receipt: its token into the secret store, then the file rewritten without it.
fn adopt(
    dir: &ReceiptDir,
    file_name: &str,
    endpoint: &LiveRuntimeEndpoint,
    adoption: Adoption,
) -> std::result::Result<(), String> {
    if let Some(token) = &adoption.token {
        if let Err(e) = dir.secrets.set(&secret_account(endpoint), token) {
            return Err(format!(
                "its inline token could not be moved into the {} ({e}); the file was left as is and will be retried",
                dir.secrets.describe()
            ));
        }
    }
    serde_json::to_vec_pretty(&Value::Object(adoption.document))
        .map_err(io::Error::other)
        .and_then(|bytes| write_atomically(&dir.path, file_name, &bytes))
        .map_err(|e| {
            format!(
                "its token was stored but the receipt could not be rewritten without it ({e}); it will be retried"
            )
        })
}
