//! `$CANON_HOME` as the inventory reads it: the catalog, pending registrations, `agents.json`
//! and untrusted lock files, with every problem found reading them.

use live_runtime::LiveRuntimeRecord;

use super::catalog::{read_catalog, CatalogRuntime};
use super::pending::{read_pending, PendingEntry};
use super::problems::canon_problem;
#[cfg(doc)]
use super::Sources;
use crate::view::{FileWarning, IgnoredFile, IgnoredLocation};
use crate::Locations;

/// `$CANON_HOME` as the inventory uses it. Small (a file per catalog entry, two record files), so
/// a change anywhere in it re-reads all of it.
#[derive(Clone, Debug)]
pub(super) struct CanonSources {
    pub(super) catalog: Vec<CatalogRuntime>,
    /// Catalog problems, then pending-registration problems, then untrusted lock files: the order
    /// a full read reports them.
    pub(super) ignored: Vec<IgnoredFile>,
    /// Files that were used but that the user should fix (their mode lets other users read them).
    pub(super) warnings: Vec<FileWarning>,
    pub(super) pending: Vec<PendingEntry>,
    /// How many profiles `agents.json` holds (0 when it cannot be read).
    profiles: usize,
}

impl CanonSources {
    /// Whether a catalog entry backs `record`'s runtime, so the inventory shows it as that entry
    /// once its receipt is gone.
    pub(super) fn backs(&self, record: &LiveRuntimeRecord) -> bool {
        record
            .metadata
            .canon_runtime_id
            .as_ref()
            .is_some_and(|id| self.catalog.iter().any(|c| &c.id == id))
    }

    pub(super) fn read(locations: &Locations) -> Self {
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

    /// A one-line summary for doctor, with its files to fix.
    pub(super) fn summary(&self) -> CanonSummary {
        CanonSummary {
            text: format!(
                "{} profile(s), {} catalog entr{}, {} pending registration(s)",
                self.profiles,
                self.catalog.len(),
                if self.catalog.len() == 1 { "y" } else { "ies" },
                self.pending.len()
            ),
            ignored: self.ignored.len(),
            warnings: self
                .warnings
                .iter()
                .map(|w| format!("{}: {}", w.file, w.reason))
                .collect(),
        }
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

/// A one-line summary of `$CANON_HOME` for doctor ([`Sources::canon_summary`]).
pub struct CanonSummary {
    /// "2 profiles, 3 catalog entries, 1 pending registration".
    pub text: String,
    /// How many of its files were not read (doctor lists each, from [`Sources::ignored`]).
    pub ignored: usize,
    /// One line per file that was used but should be fixed (its mode lets others read it).
    pub warnings: Vec<String>,
}
