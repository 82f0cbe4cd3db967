//! Building the [`Snapshot`] from [`Sources`]: the views, the pending registrations, the exited
//! runtimes, the counts, and the first-run state.

use std::collections::HashSet;
use std::path::Path;

use live_runtime::ReceiptFiles;

use super::merge::merge;
use super::sources::Sources;
use crate::approvals::ApprovalBoard;
use crate::exited::ExitedRuntime;
use crate::view::{PendingView, SecretStoreKindView, SecretStoreView, Snapshot, SnapshotCounts};
use crate::Locations;

/// The marker that says the tray has seen a runtime at least once (ends the first-run state).
const SEEN_MARKER: &str = "seen-runtime";

/// Builds the whole snapshot, changing nothing on disk. Never fails: what cannot be read is
/// reported in `ignored`.
pub fn snapshot(locations: &Locations, approvals: &ApprovalBoard) -> Snapshot {
    Sources::read(locations).snapshot(locations, approvals)
}

/// [`snapshot`], with the receipt directory as it was read for it (`None` when the directory
/// itself could not be read): what a one-shot read of the agents' states starts from, so that
/// no receipt is read twice. With `reconcile`, the directory is reconciled
/// ([`Sources::reconcile`]) between the read and the snapshot, what `list` does.
pub fn snapshot_with_receipts(
    locations: &Locations,
    approvals: &ApprovalBoard,
    reconcile: bool,
) -> (Snapshot, Option<ReceiptFiles>) {
    let mut sources = Sources::read(locations);
    if reconcile {
        sources.reconcile(locations, None);
    }
    let snapshot = sources.snapshot(locations, approvals);
    (snapshot, sources.receipts.ok())
}

impl Sources {
    /// The snapshot these sources make, the same as [`snapshot`](fn@snapshot) would give for the
    /// same files. Reads no receipt and no catalog file: it merges what is in memory, applies the
    /// approval board, and checks profile locks and the first-run marker (a few small files at
    /// most).
    pub fn snapshot(&self, locations: &Locations, approvals: &ApprovalBoard) -> Snapshot {
        let (live, ignored) = self.listed();
        let warnings = self.canon.warnings.clone();
        let pending: Vec<PendingView> = self
            .canon
            .pending
            .iter()
            .map(|p| p.view(approvals))
            .collect();

        let mut runtimes = merge(locations, live, &self.canon.catalog);
        // An exited runtime is shown until dismissed, unless it is back under the same id.
        if let Ok(exited) = &self.exited {
            let shown: HashSet<String> = runtimes.iter().map(|r| r.id.clone()).collect();
            runtimes.extend(
                exited
                    .iter()
                    .filter(|r| !shown.contains(&r.id))
                    .map(ExitedRuntime::view),
            );
        }
        let first_run = runtimes.is_empty() && !seen_before(&locations.state_dir);
        if !runtimes.is_empty() {
            remember_seen(&locations.state_dir);
        }
        let store = locations.receipts.secret_store();
        Snapshot {
            counts: SnapshotCounts::of(&runtimes, &pending),
            runtimes,
            ignored,
            warnings,
            pending,
            secret_store: SecretStoreView {
                kind: match store.kind() {
                    live_runtime::SecretStoreKind::Keychain => SecretStoreKindView::Keychain,
                    live_runtime::SecretStoreKind::File => SecretStoreKindView::File,
                },
                description: store.describe(),
            },
            first_run,
            receipt_dir: locations.receipts.path().display().to_string(),
            canon_home: locations.canon.root().display().to_string(),
        }
    }
}

fn seen_before(state_dir: &Path) -> bool {
    state_dir.join(SEEN_MARKER).exists()
}

fn remember_seen(state_dir: &Path) {
    let marker = state_dir.join(SEEN_MARKER);
    if !marker.exists() {
        let _ = std::fs::create_dir_all(state_dir).and_then(|()| std::fs::write(marker, b""));
    }
}
