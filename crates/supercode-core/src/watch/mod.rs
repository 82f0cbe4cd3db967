//! Watching: the receipt directory and `$CANON_HOME` (via `notify`), and process exits.
//!
//! File events are only a cue to re-read, never the truth: watches are lost when a directory is
//! deleted, overflow happens, and a process that dies changes no file. So the watcher pairs them
//! with process-exit detection (a pidfd per listed runtime on Linux, no polling) and a slow
//! reconcile tick as a backstop, and it re-establishes its watches before every pass.
//!
//! A pass is incremental: the watcher keeps what it last read ([`Sources`]), re-reads
//! only the receipt files the events name (or the receipts of a process that exited, or
//! `$CANON_HOME` when something in it changed), and rebuilds the snapshot from memory. So a change
//! to one receipt costs one receipt's read whatever the directory holds. It reads everything again
//! at start, on the tick, when events may have been lost, and when a watched directory itself
//! was created, deleted or replaced.
//!
//! Reading changes nothing on disk. Each pass then reconciles what it read
//! ([`Sources::reconcile`]): the one place in the app where the receipts of processes that exited
//! are removed and foreign receipts adopted. What it removed is how the pass learns of deaths.
//!
//! - [`start`], the run loop and [`WatchHandle`] (here): what wakes a pass, and what it tells.
//! - `pass`: one pass: what to re-read, re-reading, reconciling, who died.
//! - `dirs`: the directory watches.
//! - `exits`: the process-exit waiters.
mod dirs;
mod exits;
mod pass;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::unbounded_channel;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::agents::Agents;
use crate::approvals::ApprovalBoard;
use crate::background::Enlisted;
use crate::inventory::Sources;
use crate::view::{PendingState, RuntimeStatus, Snapshot};
use crate::{CoreEvent, EventSink, Locations};
use dirs::DirWatch;
use exits::ExitWatch;
use pass::{pass, Changes};

/// How long a burst of file events is coalesced into one pass. Writers do temp-file + rename,
/// which is two or three events within a millisecond; 15 ms absorbs that and keeps the UI well
/// inside its 100 ms budget.
pub const DEBOUNCE: Duration = Duration::from_millis(15);

/// The backstop rescan interval. On Linux every running pid has a pidfd and every directory a
/// watch, so this only catches the rare lost event; elsewhere there is no pidfd, so process
/// exits rely on it and it is shorter.
#[cfg(target_os = "linux")]
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(10);
/// The backstop rescan interval (no pidfds on this platform, so exits are noticed by it).
#[cfg(not(target_os = "linux"))]
pub const RECONCILE_INTERVAL: Duration = Duration::from_secs(2);

/// Stops the watcher when dropped (and waits for its thread). [`crate::Supercode::shutdown`]
/// stops it too, and waits for it, wherever the handle is.
pub struct WatchHandle {
    cancel: CancellationToken,
    thread: Option<JoinHandle<()>>,
}

impl WatchHandle {
    /// Stops the watcher and waits for it to finish.
    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        self.cancel.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for WatchHandle {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

/// Why the watcher wakes up.
#[derive(Debug)]
enum Cue {
    /// These paths, under the receipt directory or `$CANON_HOME`, changed.
    Paths(Vec<PathBuf>),
    /// Events may have been lost (overflow, an error from the watch): only a full read is safe.
    Rescan,
    /// A watched process exited.
    Exited(u32),
}

/// Called with every snapshot the watcher takes, including the many that change nothing and so
/// are not published.
pub type PassObserver = Box<dyn Fn(&Snapshot) + Send>;

/// Asks a running watcher for a full pass as soon as it can take one. An action that changed
/// the inventory asks for one instead of publishing a snapshot of its own: the watcher stays the
/// one publisher, so snapshots reach the shells in the order they were read. (A snapshot read by
/// the action's thread could reach them after a newer one of the watcher's, which would then
/// show the past until the next change.) A request made during a pass is kept for the next one.
#[derive(Clone, Debug, Default)]
pub struct PassRequests(Arc<Notify>);

impl PassRequests {
    /// Asks for a full pass (requests before it is taken count as one).
    pub fn request(&self) {
        self.0.notify_one();
    }

    async fn requested(&self) {
        self.0.notified().await;
    }
}

/// Starts the watcher on its own thread; it publishes a snapshot at once and on every change, and
/// hands every snapshot it takes to `on_pass`. It stops when `part.stop` is cancelled (by the
/// handle's drop or the core's shutdown) and drops `part.running` once it has stopped.
pub fn start(
    locations: Locations,
    approvals: ApprovalBoard,
    sink: EventSink,
    on_pass: PassObserver,
    part: Enlisted,
) -> WatchHandle {
    start_with_agents(
        locations,
        approvals,
        sink,
        on_pass,
        part,
        PassRequests::default(),
        None,
    )
}

/// [`start`], taking a full pass whenever `requests` asks for one, and with the agent-state
/// subscriptions: every pass starts and stops them ([`Agents::sync`]), fills in the running
/// runtimes' states before the snapshot is compared and published, and sends the alerts due
/// just before it; a subscription whose shown state changed, or that has an alert due, wakes a pass. The subscriptions run on the watcher's thread and end
/// with it.
pub fn start_with_agents(
    locations: Locations,
    approvals: ApprovalBoard,
    sink: EventSink,
    on_pass: PassObserver,
    part: Enlisted,
    requests: PassRequests,
    agents: Option<Arc<Agents>>,
) -> WatchHandle {
    let Enlisted { stop, running } = part;
    let token = stop.clone();
    let thread = std::thread::Builder::new()
        .name("supercode-watch".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    tracing::error!("the watcher could not start its runtime: {e}");
                    return;
                }
            };
            runtime.block_on(run(
                locations,
                approvals,
                sink,
                on_pass,
                requests,
                agents.clone(),
                token,
            ));
            if let Some(agents) = agents {
                agents.stop();
            }
            // Its exit waiters and watches go with the runtime; only then has it stopped.
            drop(runtime);
            drop(running);
        })
        .map_err(|e| tracing::error!("the watcher thread could not start: {e}"))
        .ok();
    WatchHandle {
        cancel: stop,
        thread,
    }
}

async fn run(
    locations: Locations,
    approvals: ApprovalBoard,
    sink: EventSink,
    on_pass: PassObserver,
    requests: PassRequests,
    agents: Option<Arc<Agents>>,
    cancel: CancellationToken,
) {
    let (tx, mut rx) = unbounded_channel();
    let mut dirs = DirWatch::new(&locations, tx.clone());
    let mut exits = ExitWatch::default();
    let mut sources: Option<Sources> = None;
    let mut last: Option<Arc<Snapshot>> = None;
    let mut changes = Changes::everything();
    // The first pass reads everything already, so the first tick is one interval away (a tick
    // at once would read it all again).
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + RECONCILE_INTERVAL,
        RECONCILE_INTERVAL,
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let started = tokio::time::Instant::now();
        // Watch first, then read: a file created after the read is then always cued, even in a
        // directory that was just (re)created, which a full read then covers.
        let renew = changes.full;
        if dirs.as_mut().is_some_and(|dirs| dirs.sync(renew)) {
            changes.full = true;
        }
        let (mut snapshot, died, reread) = pass(
            &locations,
            &approvals,
            &mut sources,
            last.as_deref(),
            std::mem::take(&mut changes),
        );
        if let Some(agents) = &agents {
            let reread: Option<HashSet<&str>> = reread.as_ref().map(|files| {
                files
                    .iter()
                    .filter_map(|name| name.strip_suffix(".json"))
                    .collect()
            });
            agents.sync(&snapshot, |endpoint| {
                reread.as_ref().is_none_or(|files| files.contains(endpoint))
            });
            agents.apply(&mut snapshot);
        }
        // Taken with the states they tell of (the subscriptions run on this thread, so none
        // moves in between).
        let alerts = agents
            .as_deref()
            .map(Agents::take_alerts)
            .unwrap_or_default();
        on_pass(&snapshot);
        for name in died {
            let revivable = snapshot.runtimes.iter().any(|r| {
                r.name == name && r.status != RuntimeStatus::Running && r.revive.available
            });
            sink(CoreEvent::RuntimeDied { name, revivable });
        }
        for profile in newly_waiting(last.as_deref(), &snapshot) {
            sink(CoreEvent::RegistrationWaiting { profile });
        }
        let servers = sources
            .as_ref()
            .map(Sources::server_pids)
            .unwrap_or_default();
        exits.track(&snapshot, servers, &tx);
        // Published shared, and only when it changed: an unchanged pass keeps the copy everyone
        // holds, so "the same inventory as before" stays one pointer comparison.
        // The agents' alerts just before the snapshot that shows their states: the app then
        // replaces the notification it shows for a runtime, rather than first withdrawing it
        // for a state it has not been told of.
        for alert in alerts {
            sink(alert);
        }
        if last.as_deref() != Some(&snapshot) {
            let snapshot = Arc::new(snapshot);
            sink(CoreEvent::Snapshot(snapshot.clone()));
            last = Some(snapshot);
        }
        // When the next pass woken by an agent state may begin (see that arm below).
        let agent_pass_at = tokio::time::Instant::now() + started.elapsed();

        tokio::select! {
            () = cancel.cancelled() => break,
            _ = tick.tick() => changes.full = true,
            () = requests.requested() => changes.full = true,
            // A shown agent state changed, or an alert is due: a pass that re-reads nothing
            // publishes it. Such
            // passes take at most half of this thread, which the subscriptions run on too: when
            // thousands of runtimes change at once (all of them starting, or not answering) the
            // subscriptions still get on, and the shells get fewer, larger updates. With few
            // runtimes a pass takes a millisecond, so this waits next to nothing.
            () = agent_state_changed(agents.as_deref()) => {
                tokio::time::sleep_until(agent_pass_at).await;
            }
            cue = rx.recv() => {
                if let Some(cue) = cue {
                    changes.note(cue, &locations);
                }
                tokio::time::sleep(DEBOUNCE).await;
                while let Ok(cue) = rx.try_recv() {
                    changes.note(cue, &locations);
                }
            }
        }
    }
}

async fn agent_state_changed(agents: Option<&Agents>) {
    match agents {
        Some(agents) => agents.changed().await,
        None => std::future::pending().await,
    }
}

fn newly_waiting(last: Option<&Snapshot>, now: &Snapshot) -> Vec<String> {
    let was_waiting = |profile: &str| {
        last.is_some_and(|l| {
            l.pending
                .iter()
                .any(|p| p.profile == profile && p.state == PendingState::Waiting)
        })
    };
    now.pending
        .iter()
        .filter(|p| p.state == PendingState::Waiting && !was_waiting(&p.profile))
        .map(|p| p.profile.clone())
        .collect()
}
