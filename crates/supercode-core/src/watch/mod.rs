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

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::agents::Agents;
use crate::approvals::ApprovalBoard;
use crate::background::Enlisted;
use crate::inventory::{FullReadNeeded, Sources};
use crate::view::{PendingState, RuntimeOrigin, RuntimeStatus, RuntimeView, Snapshot};
use crate::{CoreEvent, EventSink, Locations};

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

/// What the next pass must re-read, gathered from the cues since the last one.
#[derive(Debug, Default)]
struct Changes {
    /// Everything.
    full: bool,
    /// Receipt files (bare names) that events named.
    receipts: BTreeSet<String>,
    /// Something under `$CANON_HOME`.
    canon: bool,
    /// Processes whose pidfd said they exited.
    exited: HashSet<u32>,
}

impl Changes {
    fn everything() -> Self {
        Self {
            full: true,
            ..Self::default()
        }
    }

    fn note(&mut self, cue: Cue, locations: &Locations) {
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
/// subscriptions: every pass starts and stops them ([`Agents::sync`]) and fills in the running
/// runtimes' states before the snapshot is compared and published, and a subscription whose
/// shown state changed wakes a pass. The subscriptions run on the watcher's thread and end
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
            // A shown agent state changed: a pass that re-reads nothing publishes it. Such
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

/// One pass: re-reads what `changes` names (everything, if it says so or nothing was read yet),
/// and returns the new snapshot, the runtimes that died since `last`, and the receipt files it
/// re-read (`None`: all of them).
fn pass(
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

/// The directory watches, kept in step with which directories exist.
struct DirWatch {
    watcher: notify::RecommendedWatcher,
    wanted: Vec<PathBuf>,
    /// What is watched now, with the inode it had, so a deleted-and-recreated directory is
    /// noticed and watched again.
    watched: HashMap<PathBuf, u64>,
}

impl DirWatch {
    fn new(locations: &Locations, tx: UnboundedSender<Cue>) -> Option<Self> {
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
    fn sync(&mut self, renew: bool) -> bool {
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

/// One exit waiter per pid a runtime is listed with: running ones, the live pid of a stale
/// receipt (whose exit a full read would answer by removing the receipt; an incremental pass only
/// re-reads that receipt when told), and the servers of running runtimes served by another
/// process (a session's host, whose exit ends the runtime while the agent's process lives on).
#[derive(Default)]
struct ExitWatch {
    waiting: HashMap<u32, tokio::task::JoinHandle<()>>,
}

impl ExitWatch {
    fn track(&mut self, snapshot: &Snapshot, servers: Vec<u32>, tx: &UnboundedSender<Cue>) {
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
