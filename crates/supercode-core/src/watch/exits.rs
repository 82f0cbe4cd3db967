//! The watcher's exit waiters: a pidfd per process a runtime is listed with (Linux), so a
//! process that dies, which changes no file, still cues a pass.

use std::collections::{HashMap, HashSet};

use tokio::sync::mpsc::UnboundedSender;

use super::Cue;
use crate::view::{RuntimeStatus, Snapshot};

/// One exit waiter per pid a runtime is listed with: running ones, the live pid of a stale
/// receipt (whose exit a full read would answer by removing the receipt; an incremental pass only
/// re-reads that receipt when told), and the servers of running runtimes served by another
/// process (a session's host, whose exit ends the runtime while the agent's process lives on).
#[derive(Default)]
pub(super) struct ExitWatch {
    waiting: HashMap<u32, tokio::task::JoinHandle<()>>,
}

impl ExitWatch {
    pub(super) fn track(
        &mut self,
        snapshot: &Snapshot,
        servers: Vec<u32>,
        tx: &UnboundedSender<Cue>,
    ) {
        let mut running: HashSet<u32> = snapshot
            .runtimes
            .iter()
            .filter(|r| {
                r.status == RuntimeStatus::Running
                    || (r.status == RuntimeStatus::Stale && r.endpoint.is_some())
            })
            .filter_map(|r| r.pid)
            .collect();
        running.extend(servers);
        self.waiting.retain(|pid, task| {
            let keep = running.contains(pid) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        for pid in running {
            if let std::collections::hash_map::Entry::Vacant(slot) = self.waiting.entry(pid) {
                if let Some(task) = wait_for_exit(pid, tx.clone()) {
                    slot.insert(task);
                }
            }
        }
    }
}

impl Drop for ExitWatch {
    fn drop(&mut self) {
        for task in self.waiting.values() {
            task.abort();
        }
    }
}

/// Waits for `pid` to exit without polling: a pidfd becomes readable when its process exits.
#[cfg(target_os = "linux")]
fn wait_for_exit(pid: u32, tx: UnboundedSender<Cue>) -> Option<tokio::task::JoinHandle<()>> {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    use tokio::io::unix::AsyncFd;
    let raw = i32::try_from(pid).ok()?;
    let pid_handle = Pid::from_raw(raw)?;
    match pidfd_open(pid_handle, PidfdFlags::NONBLOCK) {
        Ok(fd) => {
            // `AsyncFd::new` is deprecated because a borrowed fd could be closed while registered;
            // here the AsyncFd owns the OwnedFd, so it stays open exactly as long as it is watched.
            #[allow(deprecated)]
            let fd = AsyncFd::new(fd).ok()?;
            Some(tokio::spawn(async move {
                if fd.readable().await.is_ok() {
                    let _ = tx.send(Cue::Exited(pid));
                }
            }))
        }
        // Already gone: re-read its receipts now.
        Err(rustix::io::Errno::SRCH) => {
            let _ = tx.send(Cue::Exited(pid));
            None
        }
        // No pidfd support (old kernel, sandbox): the reconcile tick notices the exit instead.
        Err(e) => {
            tracing::debug!("no pidfd for PID {pid}: {e}");
            None
        }
    }
}

/// No pidfd here: exits are noticed by the reconcile tick.
#[cfg(not(target_os = "linux"))]
fn wait_for_exit(_pid: u32, _tx: UnboundedSender<Cue>) -> Option<tokio::task::JoinHandle<()>> {
    None
}
