//! Catalog entries (`runtimes/<hash>.json`) with the package's derived state.

use canon_local::{LocalRuntimeStatus, ReviveCapability};

use super::problems::{canon_problem, canon_warning};
use crate::view::{FileWarning, IgnoredFile, RuntimeStatus};
use crate::Locations;

/// A catalog entry as the inventory needs it, with the package's derived state applied.
#[derive(Clone, Debug)]
pub struct CatalogRuntime {
    /// The catalog id (`buildLocalRuntimeId`).
    pub id: String,
    /// `runtime` (claude-code, codex, sdk...).
    pub runtime: String,
    /// `profile`.
    pub profile: Option<String>,
    /// `agentName`.
    pub agent_name: Option<String>,
    /// `cwd`.
    pub cwd: String,
    /// `workspaceRoots`.
    pub workspace_roots: Vec<String>,
    /// `launchCommand`.
    pub launch_command: Vec<String>,
    /// `pid`.
    pub pid: Option<u32>,
    /// Status as the package derives it: running, offline, stale, manual, embedded.
    pub status: LocalRuntimeStatus,
    /// Revive capability as the package derives it: revivable, manual, embedded, missing-profile.
    pub revive_capability: ReviveCapability,
    /// `lastHeartbeatAt ?? lastStartedAt ?? lastStoppedAt`.
    pub since: Option<String>,
    /// `lastError`, if any.
    pub last_error: Option<String>,
}

/// Catalog entries with the package's derived state, and the files that were skipped.
pub fn catalog_runtimes(locations: &Locations) -> (Vec<CatalogRuntime>, Vec<IgnoredFile>) {
    let catalog = read_catalog(locations);
    (catalog.runtimes, catalog.ignored)
}

/// What reading the catalog found: entries, skipped files, and files used with a warning.
pub(super) struct CatalogRead {
    pub(super) runtimes: Vec<CatalogRuntime>,
    pub(super) ignored: Vec<IgnoredFile>,
    pub(super) warnings: Vec<FileWarning>,
}

pub(super) fn read_catalog(locations: &Locations) -> CatalogRead {
    let listing = match canon_local::list_local_runtime_entries(&locations.canon, None) {
        Ok(listing) => listing,
        Err(e) => {
            return CatalogRead {
                runtimes: Vec::new(),
                ignored: vec![canon_problem(
                    locations,
                    &canon_local::FileProblem::from(&e),
                )],
                warnings: Vec::new(),
            }
        }
    };
    let ignored = listing
        .problems
        .iter()
        .map(|p| canon_problem(locations, p))
        .collect();
    let warnings = listing
        .warnings
        .iter()
        .map(|p| canon_warning(locations, p))
        .collect();
    let runtimes = listing
        .entries
        .into_iter()
        .map(|e| CatalogRuntime {
            since: e
                .last_heartbeat_at
                .clone()
                .or_else(|| e.last_started_at.clone())
                .or_else(|| e.last_stopped_at.clone()),
            id: e.id,
            runtime: e.runtime,
            profile: e.profile,
            agent_name: e.agent_name,
            cwd: e.cwd,
            workspace_roots: e.workspace_roots.unwrap_or_default(),
            launch_command: e.launch_command,
            pid: e.pid.and_then(|p| u32::try_from(p).ok()),
            status: e.status,
            revive_capability: e.revive_capability,
            last_error: e.last_error,
        })
        .collect();
    CatalogRead {
        runtimes,
        ignored,
        warnings,
    }
}

/// The status a catalog entry's view has, from the package's derived status.
pub(super) fn catalog_status(entry: &CatalogRuntime) -> RuntimeStatus {
    match entry.status {
        LocalRuntimeStatus::Running => RuntimeStatus::Running,
        LocalRuntimeStatus::Stale => RuntimeStatus::Stale,
        LocalRuntimeStatus::Manual => RuntimeStatus::Manual,
        LocalRuntimeStatus::Embedded => RuntimeStatus::Embedded,
        LocalRuntimeStatus::Offline | LocalRuntimeStatus::Other(_) => RuntimeStatus::Offline,
    }
}
