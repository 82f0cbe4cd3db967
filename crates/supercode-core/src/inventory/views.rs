//! One runtime's view, from its receipt (with the catalog entry it names) or from its catalog
//! entry alone: its status, and which actions apply and why not.

use live_runtime::{LiveRuntimeRecord, LiveRuntimeStatus};

use super::catalog::{catalog_status, CatalogRuntime};
use super::forget::catalog_forget;
use super::name::display_name;
use super::revivable;
use crate::view::{ActionAvailability, RuntimeOrigin, RuntimeStatus, RuntimeView, SourceView};
use crate::Locations;

/// The status a receipt's view has.
pub(super) fn live_status(record: &LiveRuntimeRecord) -> RuntimeStatus {
    match record.status {
        LiveRuntimeStatus::Running => RuntimeStatus::Running,
        LiveRuntimeStatus::Stale { .. } => RuntimeStatus::Stale,
    }
}

/// The view of a live receipt; `owns_catalog_id` gives it its catalog entry's id as its own
/// (see [`merge`](super::merge::merge)), otherwise its id is its endpoint.
pub(super) fn live_view(
    locations: &Locations,
    record: &LiveRuntimeRecord,
    entry: Option<&CatalogRuntime>,
    owns_catalog_id: bool,
) -> RuntimeView {
    let meta = &record.metadata;
    let name = display_name(Some(record), entry);
    let status = live_status(record);
    let (status_reason, attach, forget) = match &record.status {
        LiveRuntimeStatus::Running => (
            None,
            ActionAvailability::yes(),
            ActionAvailability::never("It is running; only stale receipts can be forgotten."),
        ),
        LiveRuntimeStatus::Stale { reason } => (
            Some(reason.clone()),
            ActionAvailability::never(format!("Its receipt is stale: {reason}.")),
            ActionAvailability::yes(),
        ),
    };
    let revive = revivable::availability_of_receipt(locations, record, entry);
    let launch_command =
        entry
            .map(|e| e.launch_command.clone())
            .or_else(|| match &meta.supervisor {
                live_runtime::LiveRuntimeSupervisor::LaunchCommand { argv, .. } => {
                    Some(argv.clone())
                }
                live_runtime::LiveRuntimeSupervisor::Manual => None,
            });
    let workspace = record.source.workspace.display().to_string();
    RuntimeView {
        id: match entry {
            Some(entry) if owns_catalog_id => entry.id.clone(),
            _ => record.endpoint.as_str().to_owned(),
        },
        endpoint: Some(record.endpoint.as_str().to_owned()),
        runtime_id: record.runtime_id.clone(),
        catalog_id: entry.map(|e| e.id.clone()),
        source: Some(SourceView {
            session_id: record.source.session_id.clone(),
            workspace: workspace.clone(),
        }),
        name,
        kind: entry.map_or_else(|| meta.runtime_kind.clone(), |e| e.runtime.clone()),
        workspace: Some(workspace),
        workspace_roots: meta
            .workspace_roots
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        profile: meta
            .profile
            .clone()
            .or_else(|| entry.and_then(|e| e.profile.clone())),
        agent_name: meta.agent_name.clone(),
        status,
        status_reason,
        since: Some(record.registered_at.clone()),
        pid: Some(record.pid),
        attach,
        forget,
        revive,
        dismiss: ActionAvailability::dismiss_not_exited(),
        launch_command,
        origin: if entry.is_some() {
            RuntimeOrigin::Both
        } else {
            RuntimeOrigin::Receipt
        },
        catalog_status: entry.map(|e| e.status.clone()),
        revive_capability: entry.map(|e| e.revive_capability.clone()),
        state: None,
        exited: None,
    }
}

pub(super) fn catalog_view(locations: &Locations, entry: &CatalogRuntime) -> RuntimeView {
    let status = catalog_status(entry);
    let status_reason = match (status, entry.pid) {
        (RuntimeStatus::Stale, Some(pid)) => Some(format!(
            "It was running as PID {pid}, which has gone without stopping it."
        )),
        _ => entry.last_error.clone(),
    };
    let attach = match status {
        RuntimeStatus::Running => ActionAvailability::never(
            "It runs, but it did not tell the tray where to reach it, so there is nothing to open.",
        ),
        _ => ActionAvailability::never("It is not running."),
    };
    let revive = revivable::availability(locations, entry);
    let name = display_name(None, Some(entry));
    RuntimeView {
        id: entry.id.clone(),
        endpoint: None,
        runtime_id: entry.id.clone(),
        catalog_id: Some(entry.id.clone()),
        source: None,
        name,
        kind: entry.runtime.clone(),
        workspace: Some(entry.cwd.clone()),
        workspace_roots: entry.workspace_roots.clone(),
        profile: entry.profile.clone(),
        agent_name: entry.agent_name.clone(),
        status,
        status_reason,
        since: entry.since.clone(),
        pid: entry.pid,
        attach,
        forget: catalog_forget(entry),
        revive,
        dismiss: ActionAvailability::dismiss_not_exited(),
        launch_command: Some(entry.launch_command.clone()),
        origin: RuntimeOrigin::Catalog,
        catalog_status: Some(entry.status.clone()),
        revive_capability: Some(entry.revive_capability.clone()),
        state: None,
        exited: None,
    }
}
