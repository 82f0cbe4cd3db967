//! One inventory: live receipts and `@canonmsg/core` catalog entries merged into runtime views,
//! each saying which actions apply and why not when they don't.
//!
//! A live receipt that names its catalog entry (`metadata.canonRuntimeId`) becomes one view with
//! origin `both`: attachable while live, revivable from the catalog's launch command once stopped.

use std::collections::HashSet;
use std::path::Path;

use canon_local::{LocalRuntimeStatus, ReviveCapability};
use live_runtime::{LiveRuntimeRecord, LiveRuntimeStatus, ReceiptFiles};

use crate::approvals::ApprovalBoard;
use crate::exited::{self, ExitedRuntime, LastState};
use crate::resolve::RuntimeAction;
use crate::revive;
use crate::view::{
    ActionAvailability, FileWarning, IgnoredFile, IgnoredLocation, PendingState, PendingView,
    RuntimeOrigin, RuntimeStatus, RuntimeView, SecretStoreKindView, SecretStoreView, Snapshot,
    SnapshotCounts, SourceView,
};
use crate::{CoreError, Locations};

/// The marker that says the tray has seen a runtime at least once (ends the first-run state).
const SEEN_MARKER: &str = "seen-runtime";

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

/// Everything a snapshot is built from, as last read from disk. [`snapshot`] reads it all afresh
/// each time; the watcher keeps one, re-reads only the files that changed and builds each snapshot
/// from memory ([`Sources::snapshot`]). Reading changes nothing; [`Sources::reconcile`] is the
/// explicit step that cleans the receipt directory up.
#[derive(Clone, Debug)]
pub struct Sources {
    /// The receipt directory file by file, or why it cannot be read at all.
    receipts: Result<ReceiptFiles, IgnoredFile>,
    canon: CanonSources,
    /// The runtimes that stopped unexpectedly ([`crate::exited`]), or why the record was not read.
    exited: Result<Vec<ExitedRuntime>, IgnoredFile>,
}

/// `$CANON_HOME` as the inventory uses it. Small (a file per catalog entry, two record files), so
/// a change anywhere in it re-reads all of it.
#[derive(Clone, Debug)]
struct CanonSources {
    catalog: Vec<CatalogRuntime>,
    /// Catalog problems, then pending-registration problems, then untrusted lock files: the order
    /// a full read reports them.
    ignored: Vec<IgnoredFile>,
    /// Files that were used but that the user should fix (their mode lets other users read them).
    warnings: Vec<FileWarning>,
    pending: Vec<PendingEntry>,
    /// How many profiles `agents.json` holds (0 when it cannot be read).
    profiles: usize,
}

/// A pending registration before the approval board's view of it is applied: the board changes
/// without any file changing, so it is applied at every build, never cached. Holds no poll token.
#[derive(Clone, Debug)]
struct PendingEntry {
    profile: String,
    client_type: Option<String>,
    submitted: bool,
    created_at: String,
    updated_at: String,
}

impl Sources {
    /// Reads every source, changing nothing.
    pub fn read(locations: &Locations) -> Self {
        Self {
            receipts: read_receipts(locations),
            canon: CanonSources::read(locations),
            exited: exited::read(&locations.state_dir),
        }
    }

    /// [`Sources::read`] for doctor, which reports and changes nothing: a receipt directory that
    /// other users can enter is not read, because reading it tightens it to 0700 first
    /// (doctor's receipt-directory check says so; its files are listed once it is tightened).
    pub fn read_unchanged(locations: &Locations) -> Self {
        let too_open = matches!(
            locations.receipts.check(),
            Ok(live_runtime::PrivateDir::TooOpen { .. })
        );
        Self {
            receipts: if too_open {
                Ok(ReceiptFiles::default())
            } else {
                read_receipts(locations)
            },
            canon: CanonSources::read(locations),
            exited: exited::read(&locations.state_dir),
        }
    }

    /// Reconciles the receipt directory as read ([`ReceiptFiles::reconcile`]): removes the
    /// receipts of processes that exited and adopts foreign receipts. Returns the endpoints whose
    /// receipts it removed: runtimes that died without unregistering (the watcher tells them).
    /// Each of those that the inventory no longer shows (no catalog entry backs it, and no host
    /// serves it) is recorded as exited ([`crate::exited`]), with its agent's last state as `shown` (the watcher's last
    /// snapshot) showed it; one that another process reconciled first gets that state filled
    /// in. The explicit step that the watcher's pass and `list` take; nothing else cleans up.
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

    /// Re-reads the record of exited runtimes after a change to it.
    pub(crate) fn reread_exited(&mut self, locations: &Locations) {
        self.exited = exited::read(&locations.state_dir);
    }

    /// Re-reads one file of the receipt directory (by bare name) after a change to it.
    pub(crate) fn refresh_receipt(
        &mut self,
        locations: &Locations,
        file_name: &str,
    ) -> Result<(), FullReadNeeded> {
        let files = self.receipts.as_mut().map_err(|_| FullReadNeeded)?;
        files
            .refresh(&locations.receipts, file_name)
            .map(|_| ())
            .map_err(|_| FullReadNeeded)
    }

    /// Re-reads `$CANON_HOME` (catalog entries, their derived state, pending registrations).
    pub(crate) fn reread_canon(&mut self, locations: &Locations) {
        self.canon = CanonSources::read(locations);
    }

    /// The receipt files that record process `pid`: what to re-read when it exits.
    pub(crate) fn receipts_of_pid(&self, pid: u32) -> Vec<String> {
        self.receipts
            .as_ref()
            .map(|files| files.names_with_pid(pid))
            .unwrap_or_default()
    }

    /// The servers of running receipts (a Claude Code session's host): their exit ends a
    /// runtime too, so the watcher waits for it as for the runtime's own process.
    pub(crate) fn server_pids(&self) -> Vec<u32> {
        self.receipts
            .as_ref()
            .map(|files| files.server_pids())
            .unwrap_or_default()
    }

    /// Whether a catalog entry records process `pid` (its derived status depends on that process).
    pub(crate) fn catalog_has_pid(&self, pid: u32) -> bool {
        self.canon.catalog.iter().any(|c| c.pid == Some(pid))
    }

    /// The snapshot these sources make, the same as [`snapshot`] would give for the same files.
    /// Reads no receipt and no catalog file: it merges what is in memory, applies the approval
    /// board, and checks profile locks and the first-run marker (a few small files at most).
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

    /// The files these sources did not read, each with its reason: the snapshot's `ignored`,
    /// without building the rest of it (doctor lists them).
    pub fn ignored(&self) -> Vec<IgnoredFile> {
        self.listed().1
    }

    /// The live receipts, and every ignored file (the receipt directory's, then `$CANON_HOME`'s).
    fn listed(&self) -> (Vec<&LiveRuntimeRecord>, Vec<IgnoredFile>) {
        let mut ignored = Vec::new();
        let live = match &self.receipts {
            // Borrowed, not copied: this runs on every change the watcher sees.
            Ok(files) => {
                let (runtimes, refused) = files.list_borrowed();
                ignored.extend(refused.into_iter().map(|i| IgnoredFile {
                    location: IgnoredLocation::Receipts,
                    file: i.file,
                    reason: i.reason,
                }));
                runtimes
            }
            Err(problem) => {
                ignored.push(problem.clone());
                Vec::new()
            }
        };
        ignored.extend(self.canon.ignored.iter().cloned());
        if let Err(problem) = &self.exited {
            ignored.push(problem.clone());
        }
        (live, ignored)
    }

    /// A one-line summary of `$CANON_HOME` for doctor, with its files to fix.
    pub fn canon_summary(&self) -> CanonSummary {
        let canon = &self.canon;
        CanonSummary {
            text: format!(
                "{} profile(s), {} catalog entr{}, {} pending registration(s)",
                canon.profiles,
                canon.catalog.len(),
                if canon.catalog.len() == 1 { "y" } else { "ies" },
                canon.pending.len()
            ),
            ignored: canon.ignored.len(),
            warnings: canon
                .warnings
                .iter()
                .map(|w| format!("{}: {}", w.file, w.reason))
                .collect(),
        }
    }
}

/// A change one file's read cannot account for: the receipt directory itself is unusable now (or
/// was at the last full read), and only a full read says what it holds and why.
#[derive(Debug)]
pub(crate) struct FullReadNeeded;

fn read_receipts(locations: &Locations) -> Result<ReceiptFiles, IgnoredFile> {
    ReceiptFiles::scan(&locations.receipts).map_err(|e| IgnoredFile {
        location: IgnoredLocation::Receipts,
        file: locations.receipts.path().display().to_string(),
        reason: e.to_string(),
    })
}

impl CanonSources {
    /// Whether a catalog entry backs `record`'s runtime, so the inventory shows it as that entry
    /// once its receipt is gone.
    fn backs(&self, record: &LiveRuntimeRecord) -> bool {
        record
            .metadata
            .canon_runtime_id
            .as_ref()
            .is_some_and(|id| self.catalog.iter().any(|c| &c.id == id))
    }

    fn read(locations: &Locations) -> Self {
        let catalog = read_catalog(locations);
        let mut ignored = catalog.ignored;
        let mut warnings = catalog.warnings;
        let pending = read_pending(locations);
        let profiles = read_agents(locations, &mut ignored, &mut warnings);
        ignored.extend(pending.ignored);
        warnings.extend(pending.warning);
        ignored.extend(lock_problems(locations));
        Self {
            catalog: catalog.runtimes,
            ignored,
            warnings,
            pending: pending.entries,
            profiles,
        }
    }
}

impl PendingEntry {
    fn view(&self, approvals: &ApprovalBoard) -> PendingView {
        let (state, message) = approvals
            .state_of(&self.profile)
            .unwrap_or(if self.submitted {
                (PendingState::Waiting, None)
            } else {
                (PendingState::Unsubmitted, None)
            });
        PendingView::new(
            self.profile.clone(),
            self.client_type.clone(),
            state,
            self.created_at.clone(),
            self.updated_at.clone(),
            message,
        )
    }
}

/// The name a runtime is shown by, everywhere: its agent's name (the receipt's, else its
/// catalog entry's), else the name the runtime gave itself, else its Canon profile, else its id.
/// A runtime linked to its catalog entry so looks the same running (receipt and entry) or
/// stopped (entry only); a caller with only the receipt at hand passes no entry.
pub(crate) fn display_name(
    record: Option<&LiveRuntimeRecord>,
    entry: Option<&CatalogRuntime>,
) -> String {
    let meta = record.map(|r| &r.metadata);
    meta.and_then(|m| m.agent_name.clone())
        .or_else(|| entry.and_then(|e| e.agent_name.clone()))
        .or_else(|| meta.and_then(|m| m.display_name.clone()))
        .or_else(|| meta.and_then(|m| m.profile.clone()))
        .or_else(|| entry.and_then(|e| e.profile.clone()))
        .or_else(|| record.map(|r| r.runtime_id.clone()))
        .or_else(|| entry.map(|e| e.id.clone()))
        .unwrap_or_default()
}

fn merge(
    locations: &Locations,
    live: Vec<&LiveRuntimeRecord>,
    catalog: &[CatalogRuntime],
) -> Vec<RuntimeView> {
    enum ViewOf<'a> {
        Receipt(&'a LiveRuntimeRecord, Option<&'a CatalogRuntime>),
        Catalog(&'a CatalogRuntime),
    }
    fn key<'a>(of: &ViewOf<'a>) -> (RuntimeStatus, Option<&'a str>) {
        match of {
            ViewOf::Receipt(record, _) => (live_status(record), Some(&record.registered_at)),
            ViewOf::Catalog(entry) => (catalog_status(entry), entry.since.as_deref()),
        }
    }
    let mut linked: HashSet<&str> = HashSet::new();
    let mut order = Vec::with_capacity(live.len() + catalog.len());
    for record in live {
        let entry = record
            .metadata
            .canon_runtime_id
            .as_ref()
            .and_then(|id| catalog.iter().find(|c| &c.id == id));
        if let Some(entry) = entry {
            linked.insert(&entry.id);
        }
        order.push(ViewOf::Receipt(record, entry));
    }
    for entry in catalog.iter().filter(|c| !linked.contains(c.id.as_str())) {
        order.push(ViewOf::Catalog(entry));
    }
    // Running first, then newest first (a stable sort: ties keep the order above). Sorted before
    // the views are built, by the status and `since` each view will have: a view is hundreds of
    // bytes, and the watcher builds them all on every change.
    order.sort_by(|a, b| {
        let ((a_status, a_since), (b_status, b_since)) = (key(a), key(b));
        let rank = |status: RuntimeStatus| u8::from(status != RuntimeStatus::Running);
        rank(a_status)
            .cmp(&rank(b_status))
            .then_with(|| b_since.cmp(&a_since))
    });
    // The catalog id is the id of the first view (in this order: running, then newest) its
    // entry backs, so a Canon runtime keeps one id from running to stale to revived; a second
    // receipt naming the same entry (an old stale one beside its revived successor) keeps its
    // endpoint, so ids stay unique.
    let mut claimed: HashSet<&str> = HashSet::new();
    order
        .into_iter()
        .map(|of| match of {
            ViewOf::Receipt(record, entry) => {
                let owns = entry.is_some_and(|e| claimed.insert(e.id.as_str()));
                live_view(locations, record, entry, owns)
            }
            ViewOf::Catalog(entry) => catalog_view(locations, entry),
        })
        .collect()
}

fn live_status(record: &LiveRuntimeRecord) -> RuntimeStatus {
    match record.status {
        LiveRuntimeStatus::Running => RuntimeStatus::Running,
        LiveRuntimeStatus::Stale { .. } => RuntimeStatus::Stale,
    }
}

fn catalog_status(entry: &CatalogRuntime) -> RuntimeStatus {
    match entry.status {
        LocalRuntimeStatus::Running => RuntimeStatus::Running,
        LocalRuntimeStatus::Stale => RuntimeStatus::Stale,
        LocalRuntimeStatus::Manual => RuntimeStatus::Manual,
        LocalRuntimeStatus::Embedded => RuntimeStatus::Embedded,
        LocalRuntimeStatus::Offline | LocalRuntimeStatus::Other(_) => RuntimeStatus::Offline,
    }
}

/// The view of a live receipt; `owns_catalog_id` gives it its catalog entry's id as its own
/// (see [`merge`]), otherwise its id is its endpoint.
fn live_view(
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
    let revive = revive::availability_of_receipt(locations, record, entry);
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

fn catalog_view(locations: &Locations, entry: &CatalogRuntime) -> RuntimeView {
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
    let revive = revive::availability(locations, entry);
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

/// Catalog entries with the package's derived state, and the files that were skipped.
pub fn catalog_runtimes(locations: &Locations) -> (Vec<CatalogRuntime>, Vec<IgnoredFile>) {
    let catalog = read_catalog(locations);
    (catalog.runtimes, catalog.ignored)
}

/// What reading the catalog found: entries, skipped files, and files used with a warning.
struct CatalogRead {
    runtimes: Vec<CatalogRuntime>,
    ignored: Vec<IgnoredFile>,
    warnings: Vec<FileWarning>,
}

fn read_catalog(locations: &Locations) -> CatalogRead {
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

/// A problem's file, relative to `$CANON_HOME`.
fn canon_file(locations: &Locations, problem: &canon_local::FileProblem) -> String {
    problem
        .path
        .strip_prefix(locations.canon.root())
        .unwrap_or(&problem.path)
        .display()
        .to_string()
}

fn canon_problem(locations: &Locations, problem: &canon_local::FileProblem) -> IgnoredFile {
    IgnoredFile {
        location: IgnoredLocation::Canon,
        file: canon_file(locations, problem),
        reason: problem.reason.clone(),
    }
}

fn canon_warning(locations: &Locations, problem: &canon_local::FileProblem) -> FileWarning {
    FileWarning {
        location: IgnoredLocation::Canon,
        file: canon_file(locations, problem),
        reason: problem.reason.clone(),
    }
}

/// Reads `agents.json` for its own sake: the catalog listing reads it only to derive
/// `missing-profile`, and not at all without a catalog, but a bad `agents.json` must be reported
/// either way (once). Returns how many profiles it holds.
fn read_agents(
    locations: &Locations,
    ignored: &mut Vec<IgnoredFile>,
    warnings: &mut Vec<FileWarning>,
) -> usize {
    match canon_local::load_profiles(&locations.canon) {
        Ok(profiles) => {
            if let Some(reason) = profiles.file_warning() {
                let warning = FileWarning {
                    location: IgnoredLocation::Canon,
                    file: "agents.json".into(),
                    reason: reason.to_owned(),
                };
                if !warnings.contains(&warning) {
                    warnings.push(warning);
                }
            }
            profiles.len()
        }
        Err(e) => {
            let problem = canon_problem(locations, &canon_local::FileProblem::from(&e));
            if !ignored.contains(&problem) {
                ignored.push(problem);
            }
            0
        }
    }
}

/// Lock files that are not read (links, FIFOs, other users' files...): the package's own files,
/// so never deleted here, but listed so the user learns why a revive is refused.
fn lock_problems(locations: &Locations) -> Vec<IgnoredFile> {
    canon_local::locks::untrusted_lock_files(&locations.canon)
        .iter()
        .map(|p| canon_problem(locations, p))
        .collect()
}

/// Pending registrations as views, and the problems reading them.
pub fn pending(
    locations: &Locations,
    approvals: &ApprovalBoard,
) -> (Vec<PendingView>, Vec<IgnoredFile>) {
    let read = read_pending(locations);
    (
        read.entries.iter().map(|p| p.view(approvals)).collect(),
        read.ignored,
    )
}

/// What reading `pending-registrations.json` found.
struct PendingRead {
    entries: Vec<PendingEntry>,
    ignored: Vec<IgnoredFile>,
    warning: Option<FileWarning>,
}

fn read_pending(locations: &Locations) -> PendingRead {
    let records = match canon_local::load_pending_registrations(&locations.canon) {
        Ok(records) => records,
        Err(e) => {
            return PendingRead {
                entries: Vec::new(),
                ignored: vec![canon_problem(
                    locations,
                    &canon_local::FileProblem::from(&e),
                )],
                warning: None,
            }
        }
    };
    let warning = records.file_warning().map(|reason| FileWarning {
        location: IgnoredLocation::Canon,
        file: "pending-registrations.json".into(),
        reason: reason.to_owned(),
    });
    let ignored = records
        .unrecognized()
        .map(|(name, reason)| IgnoredFile {
            location: IgnoredLocation::Canon,
            file: format!("pending-registrations.json ({name})"),
            reason: reason.to_owned(),
        })
        .collect();
    let entries = records
        .iter()
        .map(|(name, p)| PendingEntry {
            profile: name.to_owned(),
            client_type: p.client_type.clone(),
            submitted: p.request_id.is_some(),
            created_at: p.created_at.clone(),
            updated_at: p.updated_at.clone(),
        })
        .collect();
    PendingRead {
        entries,
        ignored,
        warning,
    }
}

/// Removes a stale receipt (by endpoint, or the id of a runtime it backs) and its keychain
/// entry, or a stale catalog entry (by catalog id) as `removeLocalRuntimeEntry` does: its one
/// file under `runtimes/`. Nothing else: profiles, locks and other entries stay.
pub fn forget(locations: &Locations, id: &str) -> Result<(), CoreError> {
    let record = match crate::attach::find_record(locations, id, RuntimeAction::Forget) {
        Err(CoreError::UnknownRuntime { .. }) => return forget_catalog_entry(locations, id),
        other => other?,
    };
    live_runtime::forget_live_runtime(&locations.receipts, &record.endpoint)?;
    Ok(())
}

/// What forget removes, shown before it runs: the CLI asks about exactly this, and runs forget
/// on `target`, so what goes is what was shown (refused if it is no longer forgettable then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForgetPlan {
    /// What forget is run on: a receipt's endpoint, or a catalog id.
    pub target: String,
    /// The runtime's display name.
    pub name: String,
    /// Each thing removed, for people (paths and the secret store; nothing secret).
    pub removes: Vec<String>,
}

/// What forgetting `runtime` removes, or why it cannot be forgotten (the view's rule).
pub fn forget_plan(locations: &Locations, runtime: &RuntimeView) -> Result<ForgetPlan, CoreError> {
    let target = runtime.target_for(RuntimeAction::Forget)?;
    let removes = match target.parse::<live_runtime::LiveRuntimeEndpoint>() {
        Ok(endpoint) => vec![
            format!(
                "its stale receipt {}",
                locations.receipts.receipt_path(&endpoint).display()
            ),
            format!(
                "its token, if the {} holds it",
                locations.receipts.secret_store().describe()
            ),
        ],
        Err(_) => vec![format!(
            "its Canon catalog entry {} (as @canonmsg/core's removeLocalRuntimeEntry does)",
            locations.canon.runtime_path(target).display()
        )],
    };
    Ok(ForgetPlan {
        target: target.to_owned(),
        name: runtime.name.clone(),
        removes,
    })
}

/// Whether a catalog entry can be forgotten: only one whose process went away without saying so
/// (stale). One that stopped cleanly can be revived, and the package itself keeps it.
pub fn catalog_forget(entry: &CatalogRuntime) -> ActionAvailability {
    match catalog_status(entry) {
        RuntimeStatus::Stale => ActionAvailability::yes(),
        RuntimeStatus::Running => ActionAvailability::never(
            "It is running; only a runtime whose process has gone can be forgotten.",
        ),
        _ => ActionAvailability::never(
            "It stopped normally and can be started again; only a runtime whose process has gone without stopping can be forgotten.",
        ),
    }
}

fn forget_catalog_entry(locations: &Locations, id: &str) -> Result<(), CoreError> {
    let (runtimes, _) = catalog_runtimes(locations);
    let Some(entry) = runtimes.into_iter().find(|e| e.id == id) else {
        return Err(CoreError::UnknownRuntime {
            query: id.to_owned(),
        });
    };
    let name = display_name(None, Some(&entry));
    let refused = |reason: String| {
        CoreError::from(crate::error::Refusal::NotAvailable {
            action: "forgotten",
            name: name.clone(),
            reason,
        })
    };
    let availability = catalog_forget(&entry);
    if !availability.available {
        return Err(refused(availability.reason.unwrap_or_default()));
    }
    // Removed only if the file still holds what was checked: a runtime that came back (new pid
    // or heartbeat) in between is not forgotten.
    let still = |now: &canon_local::LocalRuntimeCatalogEntry| {
        now.pid.and_then(|p| u32::try_from(p).ok()) == entry.pid
            && now
                .last_heartbeat_at
                .clone()
                .or_else(|| now.last_started_at.clone())
                .or_else(|| now.last_stopped_at.clone())
                == entry.since
    };
    if canon_local::remove_local_runtime_entry_checked(&locations.canon, id, still)? {
        Ok(())
    } else {
        Err(refused(
            "It changed since it was checked; look at it again.".to_owned(),
        ))
    }
}

/// A one-line summary of `$CANON_HOME` for doctor ([`Sources::canon_summary`]).
pub struct CanonSummary {
    /// "2 profiles, 3 catalog entries, 1 pending registration".
    pub text: String,
    /// How many of its files were not read (doctor lists each, from [`Sources::ignored`]).
    pub ignored: usize,
    /// One line per file that was used but should be fixed (its mode lets others read it).
    pub warnings: Vec<String>,
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
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
