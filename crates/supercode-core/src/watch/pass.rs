//! One pass of the watcher: what the cues since the last one say to re-read, re-reading it
//! (everything, or only the receipts and `$CANON_HOME` they name), reconciling, and which
//! runtimes died since the last pass.

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsStr;
use std::path::Path;

use super::Cue;
use crate::approvals::ApprovalBoard;
use crate::inventory::{FullReadNeeded, Sources};
use crate::view::{RuntimeOrigin, RuntimeStatus, RuntimeView, Snapshot};
use crate::Locations;

/// What the next pass must re-read, gathered from the cues since the last one.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// Everything.
    pub(super) full: bool,
    /// Receipt files (bare names) that events named.
    receipts: BTreeSet<String>,
    /// Something under `$CANON_HOME`.
    canon: bool,
    /// Processes whose pidfd said they exited.
    exited: HashSet<u32>,
}

impl Changes {
    pub(super) fn everything() -> Self {
        Self {
            full: true,
            ..Self::default()
        }
    }

    pub(super) fn note(&mut self, cue: Cue, locations: &Locations) {
        match cue {
            Cue::Rescan => self.full = true,
            Cue::Exited(pid) => {
                self.exited.insert(pid);
            }
            Cue::Paths(paths) => {
                for path in paths {
                    self.note_path(&path, locations);
                }
            }
        }
    }

    fn note_path(&mut self, path: &Path, locations: &Locations) {
        let receipts = locations.receipts.path();
        // The receipt directory itself (created, deleted, moved, its mode changed) or a directory
        // above it: what it holds now is only known by reading it all.
        if receipts.starts_with(path) {
            self.full = true;
            return;
        }
        let mut known = false;
        if path.parent() == Some(receipts) {
            match path.file_name().and_then(OsStr::to_str) {
                Some(name) => {
                    self.receipts.insert(name.to_owned());
                }
                // A name that is not UTF-8 is reported by a full read only.
                None => self.full = true,
            }
            known = true;
        }
        if path.starts_with(locations.canon.root()) {
            self.canon = true;
            known = true;
        }
        if !known {
            self.full = true;
        }
    }
}

/// One pass: re-reads what `changes` names (everything, if it says so or nothing was read yet),
/// and returns the new snapshot, the runtimes that died since `last`, and the receipt files it
/// re-read (`None`: all of them).
pub(super) fn pass(
    locations: &Locations,
    approvals: &ApprovalBoard,
    sources: &mut Option<Sources>,
    last: Option<&Snapshot>,
    changes: Changes,
) -> (Snapshot, Vec<String>, Option<BTreeSet<String>>) {
    let mut died;
    let mut reread = None;
    let mut current = match sources.take() {
        Some(mut current) if !changes.full => {
            let plan = Plan::new(&current, changes.receipts, changes.canon, &changes.exited);
            died = died_before_rescan(locations, last, &changes.exited, |r| plan.touches(r));
            match plan.apply(locations, &mut current) {
                Ok(()) => {
                    reread = Some(plan.files);
                    // The CLI may have recorded or dismissed exited runtimes: one small file.
                    current.reread_exited(locations);
                    current
                }
                Err(FullReadNeeded) => {
                    // The rest is judged as a full read would be.
                    died.extend(died_before_rescan(locations, last, &changes.exited, |r| {
                        !plan.touches(r)
                    }));
                    Sources::read(locations)
                }
            }
        }
        _ => {
            died = died_before_rescan(locations, last, &changes.exited, |_| true);
            Sources::read(locations)
        }
    };
    // The explicit cleanup step: reads change nothing, so this is where the receipts of
    // processes that exited go, the only place in the app that removes them unasked (an attach,
    // an action or a subscription only reads; forget removes the one it is asked to). What it
    // removed is how the watcher learns of deaths.
    let removed = current.reconcile(locations, last);
    let snapshot = current.snapshot(locations, approvals);
    *sources = Some(current);
    // A runtime seen running whose receipt this pass removed because its process had exited
    // also died, even if its pidfd has not cued yet (it raced the pass).
    if let Some(last) = last {
        let removed: HashSet<&str> = removed.iter().map(String::as_str).collect();
        for runtime in &last.runtimes {
            let removed_now = runtime
                .endpoint
                .as_deref()
                .is_some_and(|e| removed.contains(e));
            if runtime.status == RuntimeStatus::Running
                && removed_now
                && !died.contains(&runtime.name)
            {
                died.push(runtime.name.clone());
            }
        }
    }
    (snapshot, died, reread)
}

/// What an incremental pass re-reads.
struct Plan {
    /// Receipt files, by bare name.
    files: BTreeSet<String>,
    /// All of `$CANON_HOME`.
    canon: bool,
}

impl Plan {
    /// The files events named, plus every receipt of a process that exited; `$CANON_HOME` if
    /// something in it changed or a catalog entry's process exited (its derived status changes).
    fn new(
        sources: &Sources,
        mut files: BTreeSet<String>,
        mut canon: bool,
        exited: &HashSet<u32>,
    ) -> Self {
        for &pid in exited {
            files.extend(sources.receipts_of_pid(pid));
            canon |= sources.catalog_has_pid(pid);
        }
        Self { files, canon }
    }

    /// Whether this pass re-reads what `runtime` was built from. One it does not re-read keeps its
    /// last state, so its death (if any) is told by the pass its own exit cue starts.
    fn touches(&self, runtime: &RuntimeView) -> bool {
        match (&runtime.endpoint, runtime.origin) {
            (Some(endpoint), RuntimeOrigin::Receipt | RuntimeOrigin::Both) => self
                .files
                .iter()
                .any(|name| name.strip_suffix(".json") == Some(endpoint.as_str())),
            _ => self.canon,
        }
    }

    fn apply(&self, locations: &Locations, sources: &mut Sources) -> Result<(), FullReadNeeded> {
        for name in &self.files {
            sources.refresh_receipt(locations, name)?;
        }
        if self.canon {
            sources.reread_canon(locations);
        }
        Ok(())
    }
}

/// Runtimes whose process exited while their record still said running: they died rather than
/// unregistering. Checked before the pass reconciles, as reconciling removes dead receipts, and
/// only for the runtimes `judged` picks (those the pass re-reads). A process counts as exited
/// when its pidfd said so or when it is gone now: a pass started for another reason (a file
/// event, the tick) may read the receipt before the exit cue arrives. This also tells the death
/// of a runtime whose pid another process took (its receipt is then stale, not removed) and of a
/// catalog entry's process.
fn died_before_rescan(
    locations: &Locations,
    last: Option<&Snapshot>,
    exited: &HashSet<u32>,
    judged: impl Fn(&RuntimeView) -> bool,
) -> Vec<String> {
    let Some(last) = last else {
        return Vec::new();
    };
    last.runtimes
        .iter()
        .filter(|r| r.status == RuntimeStatus::Running)
        .filter(|r| judged(r))
        .filter(|r| {
            r.pid
                .is_some_and(|pid| exited.contains(&pid) || !live_runtime::pid_exists(pid))
        })
        .filter(|r| still_recorded(locations, r))
        .map(|r| r.name.clone())
        .collect()
}

fn still_recorded(locations: &Locations, runtime: &RuntimeView) -> bool {
    match (&runtime.endpoint, runtime.origin) {
        (Some(endpoint), RuntimeOrigin::Receipt | RuntimeOrigin::Both) => endpoint
            .parse()
            .map(|e| locations.receipts.receipt_path(&e).exists())
            .unwrap_or(false),
        // A catalog entry that still says running for a dead pid is one that did not stop cleanly.
        _ => true,
    }
}
