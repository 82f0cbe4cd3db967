//! The watcher's directory watches (`notify`) on the receipt directory, `$CANON_HOME` and
//! their parents, kept in step with which of them exist; their events become cues.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc::UnboundedSender;

use super::Cue;
use crate::Locations;

/// The directory watches, kept in step with which directories exist.
pub(super) struct DirWatch {
    watcher: notify::RecommendedWatcher,
    wanted: Vec<PathBuf>,
    /// What is watched now, with the inode it had, so a deleted-and-recreated directory is
    /// noticed and watched again.
    watched: HashMap<PathBuf, u64>,
}

impl DirWatch {
    pub(super) fn new(locations: &Locations, tx: UnboundedSender<Cue>) -> Option<Self> {
        let receipts = locations.receipts.path().to_path_buf();
        let canon = locations.canon.root().to_path_buf();
        let interesting: Arc<[PathBuf]> = Arc::from(vec![receipts.clone(), canon.clone()]);
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let cue = match event {
                // An error (e.g. overflow) may mean lost events.
                Err(_) => Some(Cue::Rescan),
                Ok(event) if event.need_rescan() => Some(Cue::Rescan),
                Ok(event) if changes_something(&event.kind) => {
                    let paths: Vec<PathBuf> = event
                        .paths
                        .into_iter()
                        .filter(|p| interesting.iter().any(|root| p.starts_with(root)))
                        .collect();
                    (!paths.is_empty()).then_some(Cue::Paths(paths))
                }
                Ok(_) => None,
            };
            if let Some(cue) = cue {
                let _ = tx.send(cue);
            }
        })
        .map_err(|e| {
            tracing::warn!("file watching is unavailable, relying on the reconcile tick: {e}")
        })
        .ok()?;
        let mut wanted = vec![
            receipts.clone(),
            canon.join("runtimes"),
            canon.join("locks"),
            canon.clone(),
        ];
        // Parents, so that a directory created (or recreated) later is noticed at once.
        for dir in [&receipts, &canon] {
            if let Some(parent) = dir.parent() {
                wanted.push(parent.to_path_buf());
            }
        }
        Some(Self {
            watcher,
            wanted,
            watched: HashMap::new(),
        })
    }

    /// Returns whether a watched directory appeared, disappeared or was replaced since the last
    /// call: its content may then have changed unseen, so the caller reads everything.
    ///
    /// With `renew` (before every full read) every watch is established again, whatever the
    /// inodes say: a directory deleted and recreated between two calls can come back with the
    /// same inode number, and its old watch died with the old directory.
    pub(super) fn sync(&mut self, renew: bool) -> bool {
        let mut changed = false;
        for dir in &self.wanted {
            let inode = dir_inode(dir);
            match (self.watched.get(dir).copied(), inode) {
                (Some(old), Some(new)) if old == new && !renew => {}
                (Some(_), None) => {
                    let _ = self.watcher.unwatch(dir);
                    self.watched.remove(dir);
                    changed = true;
                }
                (previous, Some(new)) => {
                    if previous.is_some() {
                        let _ = self.watcher.unwatch(dir);
                        self.watched.remove(dir);
                        changed = true;
                    }
                    match self.watcher.watch(dir, RecursiveMode::NonRecursive) {
                        Ok(()) => {
                            self.watched.insert(dir.clone(), new);
                            changed = true;
                        }
                        Err(e) => tracing::debug!("cannot watch {}: {e}", dir.display()),
                    }
                }
                (None, None) => {}
            }
        }
        changed
    }
}

/// Whether an event can mean a changed file. Opens and read-only closes cannot, and the
/// watcher's own scans cause them (it opens every receipt and Canon file it reads): counting
/// them made each scan cue the next, so an idle tray rescanned forever. A close after writing
/// still counts, for writers that write in place instead of renaming.
fn changes_something(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        notify::EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        notify::EventKind::Access(_) => false,
        _ => true,
    }
}

fn dir_inode(path: &Path) -> Option<u64> {
    let meta = std::fs::metadata(path).ok().filter(|m| m.is_dir())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(meta.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some(0)
    }
}
