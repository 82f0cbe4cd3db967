//! [`Sources`]: everything a snapshot is built from, as last read from disk, and re-reading it
//! file by file.

use live_runtime::{LiveRuntimeRecord, ReceiptFiles};

use super::canon::{CanonSources, CanonSummary};
use crate::exited::{self, ExitedRuntime};
use crate::view::{IgnoredFile, IgnoredLocation};
use crate::Locations;

/// Everything a snapshot is built from, as last read from disk. [`snapshot`](fn@super::snapshot)
/// reads it all afresh each time; the watcher keeps one, re-reads only the files that changed and
/// builds each snapshot from memory ([`Sources::snapshot`]). Reading changes nothing; [`Sources::reconcile`] is the
/// explicit step that cleans the receipt directory up.
#[derive(Clone, Debug)]
pub struct Sources {
    /// The receipt directory file by file, or why it cannot be read at all.
    pub(super) receipts: Result<ReceiptFiles, IgnoredFile>,
    pub(super) canon: CanonSources,
    /// The runtimes that stopped unexpectedly ([`crate::exited`]), or why the record was not read.
    pub(super) exited: Result<Vec<ExitedRuntime>, IgnoredFile>,
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

    /// The files these sources did not read, each with its reason: the snapshot's `ignored`,
    /// without building the rest of it (doctor lists them).
    pub fn ignored(&self) -> Vec<IgnoredFile> {
        self.listed().1
    }

    /// The live receipts, and every ignored file (the receipt directory's, then `$CANON_HOME`'s).
    pub(super) fn listed(&self) -> (Vec<&LiveRuntimeRecord>, Vec<IgnoredFile>) {
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
        self.canon.summary()
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
