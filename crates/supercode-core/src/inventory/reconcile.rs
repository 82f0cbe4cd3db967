//! [`Sources::reconcile`]: the explicit step that cleans the receipt directory up, and records
//! the runtimes that died.

use live_runtime::LiveRuntimeRecord;
#[cfg(doc)]
use live_runtime::ReceiptFiles;

use super::sources::Sources;
use super::views::live_view;
use crate::exited::{self, ExitedRuntime, LastState};
use crate::view::{RuntimeStatus, Snapshot};
use crate::Locations;

impl Sources {
    /// Reconciles the receipt directory as read ([`ReceiptFiles::reconcile`]): removes the
    /// receipts of processes that exited and adopts foreign receipts. Returns the endpoints whose
    /// receipts it removed: runtimes that died without unregistering (the watcher tells them).
    /// Each of those that the inventory no longer shows (no catalog entry backs it, and no host
    /// serves it) is recorded as exited ([`crate::exited`]), with its agent's last state as
    /// `shown` (the watcher's last snapshot) showed it; one that another process reconciled
    /// first gets that state filled in. The explicit step that the watcher's pass and `list`
    /// take; nothing else cleans up.
    pub fn reconcile(&mut self, locations: &Locations, shown: Option<&Snapshot>) -> Vec<String> {
        let Ok(files) = &mut self.receipts else {
            return Vec::new();
        };
        let dead: Vec<LiveRuntimeRecord> = files.exited_records().into_iter().cloned().collect();
        let removed: Vec<String> = files
            .reconcile(&locations.receipts)
            .iter()
            .map(ToString::to_string)
            .collect();
        let exited_at = now_rfc3339();
        let vanished: Vec<ExitedRuntime> = dead
            .iter()
            .filter(|record| removed.iter().any(|e| e == record.endpoint.as_str()))
            .filter(|record| !self.canon.backs(record))
            // A hosted continuation (a Claude Code or Codex session, served by its host) ends
            // with its agent, however the agent ends (its terminal closed, a kill): its host
            // removes the receipt then. Reaped here only when this pass came first, it is not a
            // crash to keep on the list either.
            .filter(|record| record.server_pid.is_none())
            .map(|record| {
                let view = live_view(locations, record, None, false);
                let shown = shown.and_then(|s| {
                    s.runtimes
                        .iter()
                        .find(|r| r.endpoint.as_deref() == Some(record.endpoint.as_str()))
                });
                ExitedRuntime::of(record, view, shown, exited_at.clone())
            })
            .collect();
        if !vanished.is_empty() {
            if let Err(e) = exited::record(&locations.state_dir, vanished) {
                tracing::warn!("runtimes that stopped unexpectedly were not recorded: {e}");
            }
            self.reread_exited(locations);
        }
        // Another process (`list`) may have reconciled, and recorded, a runtime `shown` still
        // showed running: only this one saw its agent's state, so it fills that in.
        if let (Some(shown), Ok(recorded)) = (shown, &self.exited) {
            let states: Vec<(String, LastState)> = recorded
                .iter()
                .filter(|r| r.last_state.is_none())
                .filter_map(|r| {
                    let was = shown.runtimes.iter().find(|v| {
                        v.status == RuntimeStatus::Running
                            && v.endpoint.as_deref() == Some(r.id.as_str())
                    })?;
                    Some((r.id.clone(), LastState::of(was)?))
                })
                .collect();
            if !states.is_empty() {
                if let Err(e) = exited::fill_last_states(&locations.state_dir, states) {
                    tracing::warn!("the last state of an exited runtime was not recorded: {e}");
                }
                self.reread_exited(locations);
            }
        }
        removed
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}
