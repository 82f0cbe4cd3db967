//! The per-file cache a watcher keeps ([`ReceiptFiles`]): the directory as last read, file by
//! file, so a change to one file costs one read while the listing stays exactly what a full scan
//! gives; and its reconciliation ([`ReceiptFiles::reconcile`]), which acts on what the reads found
//! without reading the directory again.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::net::SocketAddr;

use time::OffsetDateTime;

use super::dir::{check_dir, clean_stale_temp, receipt_file_name};
use super::read::{check_file_name, read_named, scan_file, Scan, ValidReceipt};
use super::reconcile::reconcile_scan;
use super::types::{io_error, Result};
use super::{
    IgnoredReceipt, LiveRuntimeEndpoint, LiveRuntimeList, LiveRuntimeRecord, LiveRuntimeStatus,
    LocatedLiveRuntime, ReceiptDir, ReceiptScan,
};
use crate::process::ProcessIdentity;
use crate::secret::Sensitive;

/// The receipt directory as last read, file by file: what a watcher keeps so that a change to
/// one file costs one read ([`ReceiptFiles::refresh`]), while [`ReceiptFiles::list`] still gives
/// exactly what [`list_live_runtimes`] would for the same files once reconciled. The checks that
/// span files (a duplicate endpoint, the newest-first order) are made by `list`, over every file,
/// because no read of one file can see them.
///
/// Reading ([`ReceiptFiles::scan`], [`ReceiptFiles::refresh`]) changes nothing on disk: a dead
/// process's receipt is kept as such (and not listed), a foreign receipt is listed as it is.
/// [`ReceiptFiles::reconcile`] is the explicit step that removes the one and adopts the other.
///
/// [`list_live_runtimes`]: super::list_live_runtimes
#[derive(Clone, Debug, Default)]
pub struct ReceiptFiles {
    /// By file name: the order a scan visits them in, which fixes the order of `ignored`.
    files: BTreeMap<String, FileState>,
    /// Names that are not UTF-8. A file event cannot name them as a `&str`, so only a full scan
    /// finds them (and forgets them).
    unnamed: Vec<IgnoredReceipt>,
    /// Temp files (`.*.tmp`) the last full scan saw, for reconciliation to clean up if their
    /// writer died long ago.
    temp_files: Vec<String>,
}

// Nearly every file is a listed receipt, so boxing that variant would add an allocation per
// receipt to save space only on the few refused ones.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
enum FileState {
    Listed {
        record: LiveRuntimeRecord,
        /// Kept parsed because the listing sorts by it on every call.
        registered: OffsetDateTime,
        /// Where it serves and which process it is: what [`ReceiptFiles::located`] gives.
        address: SocketAddr,
        process: ProcessIdentity,
        /// A foreign receipt reconciliation has still to adopt.
        foreign: bool,
    },
    Ignored(IgnoredReceipt),
    /// A receipt whose process has exited, for reconciliation to remove. Not listed.
    Exited {
        endpoint: LiveRuntimeEndpoint,
        pid: u32,
        record: Box<LiveRuntimeRecord>,
    },
}

impl ReceiptFiles {
    /// Reads the whole directory as [`list_live_runtimes`] does, changing nothing. A missing
    /// directory holds no files.
    ///
    /// [`list_live_runtimes`]: super::list_live_runtimes
    pub fn scan(dir: &ReceiptDir) -> Result<Self> {
        let mut files = Self::default();
        if !check_dir(dir)? {
            return Ok(files);
        }
        let mut names = Vec::new();
        for entry in fs::read_dir(&dir.path).map_err(io_error(&dir.path))? {
            let entry = entry.map_err(io_error(&dir.path))?;
            // The entry's type comes with the listing (d_type), so the look before each open is free.
            let looked = entry.file_type().ok();
            match entry.file_name().into_string() {
                Ok(name) => names.push((name, looked)),
                Err(raw) => {
                    let lossy = raw.to_string_lossy().into_owned();
                    if lossy.ends_with(".json") && !lossy.starts_with('.') {
                        files.unnamed.push(IgnoredReceipt {
                            file: lossy,
                            reason: "its file name is not valid UTF-8, so it cannot be an endpoint"
                                .into(),
                        });
                    }
                }
            }
        }
        // Sorted so that removals of dead receipts, and so what reconciliation reports, come in a
        // stable order.
        names.sort_unstable_by(|(a, _), (b, _)| a.cmp(b));
        for (name, looked) in names {
            if name.starts_with('.') {
                if name.ends_with(".tmp") {
                    files.temp_files.push(name);
                }
                continue;
            }
            let scan = scan_file(dir, &name, looked);
            files.store(name, scan);
        }
        Ok(files)
    }

    /// Re-reads one file after a change to it, with every check of [`read_receipt`], changing
    /// nothing, and keeps what it found. A temp file or any other name that is not a receipt's is
    /// never read. A missing directory empties the cache, as a full scan would.
    ///
    /// [`read_receipt`]: super::read_receipt
    pub fn refresh(&mut self, dir: &ReceiptDir, file_name: &str) -> Result<ReceiptScan> {
        check_file_name(file_name)?;
        if !check_dir(dir)? {
            *self = Self::default();
            return Ok(ReceiptScan::Gone);
        }
        let scan = scan_file(dir, file_name, None);
        let outcome = scan.outcome();
        self.store(file_name.to_owned(), scan);
        Ok(outcome)
    }

    /// Reconciles what the reads found, without reading the directory again: removes each receipt
    /// whose process had exited (with its token), adopts each foreign receipt (re-read for it),
    /// and deletes temp files their writers left long ago. Returns the endpoints whose receipts
    /// it removed, in file-name order: those runtimes died without unregistering (a runtime that
    /// stops cleanly removes its own receipt first). A file it could not reconcile is listed as
    /// ignored, with the reason, and is tried again once it is read again.
    pub fn reconcile(&mut self, dir: &ReceiptDir) -> Vec<LiveRuntimeEndpoint> {
        let mut removed = Vec::new();
        let pending: Vec<(String, Option<Scan>)> = self
            .files
            .iter()
            .filter_map(|(name, state)| match state {
                FileState::Exited {
                    endpoint,
                    pid,
                    record,
                } => Some((
                    name.clone(),
                    Some(Scan::Exited {
                        endpoint: endpoint.clone(),
                        pid: *pid,
                        record: record.clone(),
                    }),
                )),
                // Adopting needs the document, which the cache does not keep: read it again
                // (once per foreign receipt).
                FileState::Listed { foreign: true, .. } => Some((name.clone(), None)),
                _ => None,
            })
            .collect();
        for (name, scan) in pending {
            let scan = match scan {
                Some(scan) => scan,
                None => match read_named(dir, &name) {
                    Ok(scan) => scan,
                    Err(_) => continue,
                },
            };
            let (scan, reaped) = reconcile_scan(dir, &name, scan);
            removed.extend(reaped);
            self.store(name, scan);
        }
        for name in std::mem::take(&mut self.temp_files) {
            clean_stale_temp(dir, &name);
        }
        removed
    }

    fn store(&mut self, name: String, scan: Scan) {
        match scan {
            Scan::Valid(valid) => {
                let ValidReceipt {
                    record,
                    registered,
                    address,
                    process,
                    adoption,
                } = *valid;
                self.files.insert(
                    name,
                    FileState::Listed {
                        record,
                        registered,
                        address,
                        process,
                        foreign: adoption.is_some(),
                    },
                );
            }
            Scan::Ignored(ignored) => {
                self.files.insert(name, FileState::Ignored(ignored));
            }
            Scan::Exited {
                endpoint,
                pid,
                record,
            } => {
                self.files.insert(
                    name,
                    FileState::Exited {
                        endpoint,
                        pid,
                        record,
                    },
                );
            }
            Scan::Gone { .. } | Scan::NotAReceipt => {
                self.files.remove(&name);
            }
        }
    }

    /// What the receipts of processes that exited said, as last read: the receipts
    /// [`ReceiptFiles::reconcile`] removes, for whoever tells the user of those deaths.
    pub fn exited_records(&self) -> Vec<&LiveRuntimeRecord> {
        self.files
            .values()
            .filter_map(|state| match state {
                FileState::Exited { record, .. } => Some(&**record),
                _ => None,
            })
            .collect()
    }

    /// The names of the listed receipts that record process `pid`, as the runtime's process or
    /// as its server: what to re-read when it exits (either ends the runtime).
    pub fn names_with_pid(&self, pid: u32) -> Vec<String> {
        self.files
            .iter()
            .filter(|(_, state)| {
                matches!(state, FileState::Listed { record, .. }
                    if record.pid == pid || record.server_pid == Some(pid))
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The servers of the listed running receipts (hosts serving another process's runtime):
    /// processes whose exit ends a runtime as its own process's does.
    pub fn server_pids(&self) -> Vec<u32> {
        self.files
            .values()
            .filter_map(|state| match state {
                FileState::Listed { record, .. } if record.status == LiveRuntimeStatus::Running => {
                    record.server_pid
                }
                _ => None,
            })
            .collect()
    }

    /// The running runtime `endpoint` as last read (its address and process, not its token), to
    /// check who listens at the address before [`LocatedLiveRuntime::resolve`] asks the secret
    /// store. `None` unless its receipt was listed as running. Touches no file.
    pub fn located(&self, endpoint: &LiveRuntimeEndpoint) -> Option<LocatedLiveRuntime> {
        match self.files.get(&receipt_file_name(endpoint))? {
            FileState::Listed {
                record,
                address,
                process,
                ..
            } if record.status == LiveRuntimeStatus::Running => Some(LocatedLiveRuntime {
                record: record.clone(),
                address: Sensitive::new(*address),
                process: *process,
            }),
            _ => None,
        }
    }

    /// The listing these files make, exactly as [`list_live_runtimes`] gives it: valid receipts
    /// newest first, refused files with their reasons (a dead process's receipt not yet removed
    /// is not listed). `exited` is empty: a removal is reported by the reconciliation that made
    /// it. Costs memory work only, no file is touched.
    ///
    /// [`list_live_runtimes`]: super::list_live_runtimes
    pub fn list(&self) -> LiveRuntimeList {
        let (runtimes, ignored) = self.list_borrowed();
        LiveRuntimeList {
            runtimes: runtimes.into_iter().cloned().collect(),
            ignored,
            exited: Vec::new(),
        }
    }

    /// [`ReceiptFiles::list`] with the records borrowed from the cache instead of copied, for a
    /// caller that builds something else from them on every change (copying 10,000 records costs
    /// more than the rest of such a rebuild).
    pub fn list_borrowed(&self) -> (Vec<&LiveRuntimeRecord>, Vec<IgnoredReceipt>) {
        let mut seen = HashSet::with_capacity(self.files.len());
        let mut valid = Vec::with_capacity(self.files.len());
        let mut ignored = self.unnamed.clone();
        for (name, state) in &self.files {
            match state {
                FileState::Listed {
                    record, registered, ..
                } => {
                    if seen.insert(&record.endpoint) {
                        valid.push((record, registered));
                    } else {
                        ignored.push(IgnoredReceipt {
                            file: name.clone(),
                            reason: format!(
                                "duplicate endpoint {}: another receipt already uses it",
                                record.endpoint
                            ),
                        });
                    }
                }
                FileState::Ignored(refused) => ignored.push(refused.clone()),
                FileState::Exited { .. } => {}
            }
        }
        valid.sort_by(|(a, a_at), (b, b_at)| {
            b_at.cmp(a_at)
                .then_with(|| a.endpoint.as_str().cmp(b.endpoint.as_str()))
        });
        (
            valid.into_iter().map(|(record, _)| record).collect(),
            ignored,
        )
    }
}
