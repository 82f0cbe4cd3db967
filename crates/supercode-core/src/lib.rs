//! Supercode Tray's domain logic, free of any UI toolkit.
//!
//! [`Supercode`] is the one API surface the CLI and the Tauri shell call: it merges live-runtime
//! receipts and `@canonmsg/core` catalog entries into one inventory ([`view::Snapshot`]), and runs
//! attach, forget, revive and registration approval on it. Background work (the watcher, running
//! approvals) reports through the event sink given at construction, so the shell decides how to
//! show it, and ends when [`Supercode::shutdown`] is awaited (or, unawaited, when its handles drop).
//!
//! # Layout
//! - [`CoreEvent`], [`EventSink`] (module `events`): what background work and actions tell the shell.
//! - [`view`]: the browser-safe types the UI and `list --json` show (exported to TypeScript).
//! - [`inventory`]: building the snapshot from receipts, the catalog and pending registrations.
//! - [`watch`]: the receipt/Canon watcher and process-exit detection.
//! - [`attach`]: proxies per runtime, one-time URLs.
//! - [`desktop`]: handing a URL to the browser or a folder to the file manager.
//! - [`revive`]: relaunching a stopped runtime from its recorded launch command.
//! - [`exited`]: the record of runtimes that stopped unexpectedly, shown until dismissed.
//! - [`resolve`]: which runtime a name or id means, and what may be asked of it.
//! - [`approvals`]: carrying pending registrations through approval.
//! - [`doctor`]: the set-up checks behind `supercode-tray doctor`.
//! - [`background`]: what runs in the background, and its cancellation and awaited shutdown.
//! - [`agents`]: live agent state from each runtime's status API, and its actions.
//! - [`text`]: how record- and runtime-derived text is shown on a terminal, in a notification
//!   or a menu (control and bidirectional characters made visible), for every shell.
#![deny(missing_docs)]

pub mod agents;
pub mod approvals;
pub mod attach;
pub mod background;
pub mod connect;
pub mod desktop;
pub mod doctor;
mod error;
mod events;
pub mod exited;
pub mod inventory;
mod locations;
pub mod resolve;
pub mod revive;
pub mod text;
pub mod view;
pub mod watch;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

pub use error::{CoreError, Refusal};
pub use events::{CoreEvent, EventSink};
pub use locations::Locations;
pub use watch::WatchHandle;

use view::{ActOutcome, PendingView, ReviveOutcome, RevivePlanView, Snapshot};

/// The tray's core: every location, the attach proxies, the approvals in flight and the
/// background work, which [`Supercode::shutdown`] ends.
pub struct Supercode {
    locations: Locations,
    proxies: Arc<attach::AttachSessions>,
    approvals: approvals::ApprovalBoard,
    /// Where events go; `None` for a caller that shows none, so no snapshot is taken for it.
    sink: Option<EventSink>,
    background: background::Background,
    agents: Arc<agents::Agents>,
    watching: Arc<Watching>,
}

/// The running watcher as the core's other calls see it. While one runs it is the core's one
/// source of snapshots (see [`watch::PassRequests`]): [`Supercode::current`] gives what it
/// published last, and an action asks it for a pass instead of publishing a snapshot of its own.
#[derive(Default)]
struct Watching {
    /// How many watchers run (the app runs one).
    running: AtomicUsize,
    /// What a watcher read last, agent states included; `None` until its first pass.
    latest: Mutex<Option<Arc<Snapshot>>>,
    requests: watch::PassRequests,
}

impl Watching {
    fn latest(&self) -> std::sync::MutexGuard<'_, Option<Arc<Snapshot>>> {
        self.latest.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Held by a running watcher (in its sink): while it lives the core defers to that watcher, and
/// when the watcher ends, its last read is no longer given out as current.
struct WatchingGuard(Arc<Watching>);

impl WatchingGuard {
    fn start(watching: &Arc<Watching>) -> Self {
        watching.running.fetch_add(1, Ordering::SeqCst);
        Self(watching.clone())
    }

    fn record(&self, snapshot: &Arc<Snapshot>) {
        *self.0.latest() = Some(snapshot.clone());
    }
}

impl Drop for WatchingGuard {
    fn drop(&mut self) {
        let mut latest = self.0.latest();
        if self.0.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            *latest = None;
        }
    }
}

impl Supercode {
    /// Builds the core over `locations`; every event (from the watcher, and the inventory after
    /// each action) goes to `sink`.
    pub fn new(locations: Locations, sink: impl Fn(CoreEvent) + Send + Sync + 'static) -> Self {
        Self::build(locations, Some(Arc::new(sink)))
    }

    /// Builds the core for a caller that shows no events (the CLI): nothing is published.
    pub fn without_events(locations: Locations) -> Self {
        Self::build(locations, None)
    }

    fn build(locations: Locations, sink: Option<EventSink>) -> Self {
        Self {
            agents: Arc::new(agents::Agents::new(
                locations.receipts.clone(),
                agents::AgentOptions::default(),
            )),
            locations,
            proxies: Arc::default(),
            approvals: approvals::ApprovalBoard::default(),
            sink,
            background: background::Background::default(),
            watching: Arc::default(),
        }
    }

    /// Uses `options` (poll cadence, deadline, Canon base URL) for every later [`Supercode::approve`]
    /// instead of the production defaults, e.g. to run approvals against a local test Canon.
    pub fn with_approval_options(self, options: canon_local::ApprovalOptions) -> Self {
        self.approvals.set_options(options);
        self
    }

    /// Uses `options` (timeouts, backoff, coalescing and alert intervals) for the agent-state
    /// subscriptions and actions instead of the API's figures, e.g. to see `not-answering` in a
    /// test without waiting 20 seconds. Call it before [`Supercode::watch`].
    pub fn with_agent_options(mut self, options: agents::AgentOptions) -> Self {
        self.agents = Arc::new(agents::Agents::new(
            self.locations.receipts.clone(),
            options,
        ));
        self
    }

    /// Ends every agent-state subscription (the watcher's thread also ends them when it stops).
    /// A core shutdown calls this; later snapshots show running runtimes as `unknown`.
    pub fn stop_agents(&self) {
        self.agents.stop();
    }

    /// Where the core reads and writes.
    pub fn locations(&self) -> &Locations {
        &self.locations
    }

    /// The inventory the shells show now: while [`Supercode::watch`] runs, what the watcher
    /// published last (the one source of events, so this is never older than an event already
    /// sent); otherwise a fresh read ([`Supercode::snapshot`]).
    pub fn current(&self) -> Snapshot {
        if let Some(latest) = self.watching.latest().as_deref() {
            return latest.clone();
        }
        self.snapshot()
    }

    /// The whole inventory read now, whether or not a watcher runs. A pure read: nothing on disk
    /// changes (a dead process's receipt is not listed, and is left for reconciliation).
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = inventory::snapshot(&self.locations, &self.approvals);
        self.proxies.retain_live(&snapshot);
        self.agents.apply(&mut snapshot);
        snapshot
    }

    /// The whole inventory with every running runtime's agent state read once (a concurrent
    /// `GET` per runtime, bounded by [`agents::ONE_SHOT_TIMEOUT`]): for a process that does not
    /// [`Supercode::watch`], like the CLI's `act`. A pure read, like [`Supercode::snapshot`].
    pub async fn snapshot_with_states(&self) -> Snapshot {
        self.read_with_states(false).await
    }

    /// What the CLI's `list` shows: the receipt directory reconciled (the explicit step: receipts
    /// of exited processes removed with their tokens, foreign receipts adopted), then the
    /// inventory with every running runtime's agent state, as [`Supercode::snapshot_with_states`]
    /// gives it, from the same one read of the directory.
    pub async fn reconcile_and_snapshot_with_states(&self) -> Snapshot {
        self.read_with_states(true).await
    }

    async fn read_with_states(&self, reconcile: bool) -> Snapshot {
        let (locations, approvals) = (self.locations.clone(), self.approvals.clone());
        // Reads receipts, the catalog and (for the tokens) the keychain: off the async workers.
        let (mut snapshot, files) = tokio::task::spawn_blocking(move || {
            inventory::snapshot_with_receipts(&locations, &approvals, reconcile)
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        self.proxies.retain_live(&snapshot);
        self.agents.read_once(&mut snapshot, files).await;
        snapshot
    }

    /// The runtime `name_or_id` means: the NAME `list` shows, its id or runtime id, by the one
    /// rule of [`resolve`] (an id first; a name or runtime id several runtimes share picks none
    /// and lists them). A pure read of the inventory, as [`Supercode::snapshot`] gives it.
    pub async fn resolve(&self, name_or_id: &str) -> Result<view::RuntimeView, CoreError> {
        let (locations, approvals) = (self.locations.clone(), self.approvals.clone());
        // Reads receipts and the catalog: off the async workers.
        let snapshot =
            tokio::task::spawn_blocking(move || inventory::snapshot(&locations, &approvals))
                .await
                .map_err(|source| CoreError::Interrupted {
                    what: "finding the runtime",
                    source,
                })?;
        logged(
            "resolve",
            name_or_id,
            resolve::resolve(&snapshot.runtimes, name_or_id).cloned(),
        )
    }

    /// What the running runtime `id` (its inventory id, endpoint, or a name or runtime id that
    /// means one runtime) offers as `action` now, the question to ask before invoking it included, and the revision
    /// of the status document that says so, for [`Supercode::act`]: how a process without
    /// subscriptions (the CLI) looks before it acts.
    pub async fn offered(
        &self,
        id: &str,
        action: &str,
    ) -> Result<(view::AgentActionView, u64), CoreError> {
        let record = self.running_record("look", id).await?;
        logged("look", id, self.agents.offered(&record, action).await)
    }

    /// Invokes `action` on the running runtime `id` (its inventory id, endpoint, or a name or
    /// runtime id that means one runtime), chosen from its status document of revision `revision` (the view's
    /// `state.revision`, or [`Supercode::offered`]'s): only while the runtime's latest document
    /// asks what that one asked and offers `action`, and with that revision. An action it does
    /// not offer, or chosen from a prompt that has changed since ([`Refusal::PromptChanged`]),
    /// reaches nothing.
    pub async fn act(
        &self,
        id: &str,
        action: &str,
        revision: u64,
    ) -> Result<ActOutcome, CoreError> {
        let record = self.running_record("act", id).await?;
        logged("act", id, self.agents.act(&record, action, revision).await)
    }

    /// The receipt of the runtime `id`, refused when its process is gone.
    async fn running_record(
        &self,
        what: &'static str,
        id: &str,
    ) -> Result<live_runtime::LiveRuntimeRecord, CoreError> {
        let (locations, owned) = (self.locations.clone(), id.to_owned());
        let record = tokio::task::spawn_blocking(move || {
            inventory::find_record(&locations, &owned, resolve::RuntimeAction::Act)
        })
        .await
        .map_err(|source| CoreError::Interrupted { what, source });
        let record = logged(what, id, record.and_then(|r| r))?;
        if let live_runtime::LiveRuntimeStatus::Stale { reason } = &record.status {
            let name = inventory::display_name(Some(&record), None);
            return logged(
                what,
                id,
                Err(Refusal::NotRunning {
                    name,
                    reason: reason.to_string(),
                }
                .into()),
            );
        }
        Ok(record)
    }

    /// Pending registrations, without poll tokens.
    pub fn pending(&self) -> Vec<PendingView> {
        inventory::pending(&self.locations, &self.approvals).0
    }

    /// What forgetting the runtime `name_or_id` means would remove (by the one rule of
    /// [`resolve`]), to show before [`Supercode::forget`] runs on the plan's `target`.
    pub async fn forget_plan(&self, name_or_id: &str) -> Result<inventory::ForgetPlan, CoreError> {
        let runtime = self.resolve(name_or_id).await?;
        logged(
            "forget plan",
            name_or_id,
            inventory::forget_plan(&self.locations, &runtime),
        )
    }

    /// Takes the exited runtime `name_or_id` means (by the one rule of [`resolve`]) off the
    /// list, and returns its name: the user has seen it. Refused, with the view's reason, for
    /// one that has not exited.
    pub async fn dismiss(&self, name_or_id: &str) -> Result<String, CoreError> {
        let runtime = self.resolve(name_or_id).await?;
        let state_dir = self.locations.state_dir.clone();
        // Locks and rewrites a file: off the async workers.
        let dismissed = tokio::task::spawn_blocking(move || {
            let id = runtime.target_for(resolve::RuntimeAction::Dismiss)?;
            exited::dismiss(&state_dir, id).map(|()| runtime.name)
        })
        .await
        .map_err(|source| CoreError::Interrupted {
            what: "dismissing the runtime",
            source,
        });
        let name = logged("dismiss", name_or_id, dismissed.and_then(|r| r))?;
        self.publish();
        Ok(name)
    }

    /// Removes a stale receipt (and its keychain entry); refuses a running one.
    pub fn forget(&self, id: &str) -> Result<(), CoreError> {
        logged("forget", id, inventory::forget(&self.locations, id))?;
        self.publish();
        Ok(())
    }

    /// Resolves a live runtime, checks it answers, and mints a one-time URL on its proxy.
    /// Refused once [`Supercode::shutdown`] has begun.
    pub async fn attach(&self, id: &str) -> Result<attach_proxy::AttachUrl, CoreError> {
        let attached = self
            .background
            .track(self.proxies.attach(&self.locations, id))
            .await
            .unwrap_or_else(|| Err(quitting(&format!("attach {id}"))));
        logged("attach", id, attached)
    }

    /// Ends everything running in the background and waits for it: stops the watchers, shuts
    /// every attach proxy down (each closes its browser connections and its port), and cancels
    /// the approvals and the tasks started with [`Supercode::track`], each at its next `.await`.
    /// A registration interrupted this way loses nothing: a submitted one resumes at the next
    /// start (see [`Supercode::submitted_registrations`]), and Canon hands an API key out again
    /// until its receipt is acknowledged. Afterwards attach and approve are refused.
    ///
    /// The tray calls it on exit, the CLI's `attach` on Ctrl-C. Idempotent.
    pub async fn shutdown(&self) {
        tracing::info!("shutting down the background work");
        // Cancel first, so no approval or attach in flight starts anything new, then close the
        // proxies (their own wait is bounded by `attach_proxy::SHUTDOWN_GRACE`), then wait for
        // the rest to notice.
        self.background.cancel();
        self.agents.stop();
        self.proxies.shutdown_all().await;
        self.background.shutdown().await;
        tracing::info!("background work stopped");
    }

    /// Runs `task` as background work of this core: [`Supercode::shutdown`] cancels it (it is
    /// dropped at its next `.await`, giving `None`) and waits for it. Spawn what this returns
    /// (the tray spawns its menu actions on Tauri's runtime with it).
    pub fn track<F: std::future::Future>(
        &self,
        task: F,
    ) -> impl std::future::Future<Output = Option<F::Output>> {
        self.background.track(task)
    }

    /// Resolves once every attach proxy has stopped because its runtime went away, as a
    /// [`Supercode::watch`] or a snapshot saw it (at once if none runs).
    pub async fn proxies_stopped(&self) {
        self.proxies.all_stopped().await;
    }

    /// Every coding agent's state and the actions that apply, as the window shows them.
    pub async fn coding_agents(&self) -> Result<Vec<view::CodingAgentView>, CoreError> {
        // Reads the agents' settings files: off the async workers.
        tokio::task::spawn_blocking(connect::agents)
            .await
            .map_err(|source| CoreError::Interrupted {
                what: "reading the coding agents' settings",
                source,
            })
    }

    /// What Connect or Disconnect of `agent` would change, to show before it is made.
    pub async fn hooks_plan(
        &self,
        agent: &str,
        change: view::HooksChange,
    ) -> Result<view::HooksPlanView, CoreError> {
        let agent = connect::agent(agent)?;
        let plan = tokio::task::spawn_blocking(move || {
            let (path, program) = connect::target(agent, change)?;
            connect::plan_view(agent, &path, &program, change)
        })
        .await
        .map_err(|source| CoreError::Interrupted {
            what: "planning the change to the agent's settings",
            source,
        })?;
        logged("hooks plan", agent.name(), plan)
    }

    /// Makes the Connect or Disconnect of `agent` whose plan (its digest) the user confirmed;
    /// refused when the settings file changed since.
    pub async fn hooks_change(
        &self,
        agent: &str,
        change: view::HooksChange,
        digest: String,
    ) -> Result<view::HooksOutcome, CoreError> {
        let agent = connect::agent(agent)?;
        let outcome = tokio::task::spawn_blocking(move || {
            let (path, program) = connect::target(agent, change)?;
            connect::apply(agent, &path, &program, change, &digest)
        })
        .await
        .map_err(|source| CoreError::Interrupted {
            what: "changing the agent's settings",
            source,
        })?;
        logged("hooks change", agent.name(), outcome)
    }

    /// What a revive of `id` would run, to show before it runs (see [`revive`]).
    pub async fn revive_plan(&self, id: &str) -> Result<RevivePlanView, CoreError> {
        let (locations, owned) = (self.locations.clone(), id.to_owned());
        // Reads receipts and the catalog and searches PATH: off the async workers.
        let plan = tokio::task::spawn_blocking(move || revive::plan_view(&locations, &owned))
            .await
            .map_err(|source| CoreError::Interrupted {
                what: "planning the revive",
                source,
            })?;
        logged("revive plan", id, plan)
    }

    /// Relaunches a stopped runtime from the plan the user confirmed (refused when the record no
    /// longer makes that plan) and waits until it is up.
    pub async fn revive(&self, request: revive::ReviveRequest) -> Result<ReviveOutcome, CoreError> {
        let id = request.id.clone();
        let outcome = logged(
            "revive",
            &id,
            revive::revive(&self.locations, request).await,
        );
        self.publish();
        outcome
    }

    /// Submits (or resumes) a pending registration and waits for Canon's answer.
    pub async fn approve(
        &self,
        profile: &str,
        progress: impl FnMut(&PendingView) + Send,
    ) -> Result<PendingView, CoreError> {
        let publish = || self.publish();
        let outcome = self
            .background
            .track(
                self.approvals
                    .approve(&self.locations, profile, progress, &publish),
            )
            .await
            .unwrap_or_else(|| {
                Err(quitting(&format!(
                    "wait for the approval of \"{profile}\" (a submitted registration resumes when it starts again)"
                )))
            });
        if let Ok(view) = &outcome {
            tracing::info!(profile, state = ?view.state, "approval finished");
        }
        logged("approve", profile, outcome)
    }

    /// Profiles whose registration was submitted but not finished (for example before the app last
    /// stopped): the shell resumes each with [`Supercode::approve`], which polls without resubmitting.
    pub fn submitted_registrations(&self) -> Vec<String> {
        approvals::submitted_profiles(&self.locations)
    }

    /// Dismisses a pending registration locally.
    pub fn reject(&self, profile: &str) -> Result<(), CoreError> {
        logged(
            "reject",
            profile,
            self.approvals.reject(&self.locations, profile),
        )?;
        self.publish();
        Ok(())
    }

    /// Runs the set-up checks.
    pub async fn doctor(&self) -> doctor::DoctorReport {
        doctor::run(&self.locations).await
    }

    /// Starts watching receipts and `$CANON_HOME`; events go to the core's sink until the
    /// handle drops or [`Supercode::shutdown`] (which also waits for the watcher to end).
    /// Every snapshot the watcher takes, published or not, also stops the attach proxies of
    /// runtimes it does not list as running: a proxy then does not outlive its runtime while
    /// nobody asks for a list, even for a runtime that came and went between two scans (whose
    /// going changes nothing the watcher had published).
    ///
    /// While it runs it is the only publisher of snapshots, and [`Supercode::current`] gives
    /// what it published last.
    pub fn watch(&self) -> WatchHandle {
        let proxies = self.proxies.clone();
        // What the watcher publishes is recorded before it goes out, so `current()` never
        // answers an inventory older than an event already sent. Only published snapshots are
        // recorded: a pass that changes nothing leaves the record equal to it, and costs no copy.
        let watching = WatchingGuard::start(&self.watching);
        let sink = self.sink.clone();
        let published: EventSink = Arc::new(move |event| {
            if let CoreEvent::Snapshot(snapshot) = &event {
                watching.record(snapshot);
            }
            if let Some(sink) = &sink {
                sink(event);
            }
        });
        watch::start_with_agents(
            self.locations.clone(),
            self.approvals.clone(),
            published,
            Box::new(move |snapshot| proxies.retain_live(snapshot)),
            self.background.enlist(),
            self.watching.requests.clone(),
            Some(self.agents.clone()),
        )
    }

    /// Shows the effect of an action: a running watcher is asked for a pass (it publishes what
    /// changed), and without one a fresh snapshot goes to the sink, if there is one.
    fn publish(&self) {
        let Some(sink) = &self.sink else {
            return;
        };
        if self.watching.running.load(Ordering::SeqCst) > 0 {
            self.watching.requests.request();
        } else {
            sink(CoreEvent::Snapshot(Arc::new(self.snapshot())));
        }
    }
}

impl Drop for Supercode {
    /// The unawaited backstop of [`Supercode::shutdown`]: the proxies stop as they drop with
    /// the core, and every tracked task and watcher is told to stop.
    fn drop(&mut self) {
        self.background.cancel();
    }
}

/// Why an action did not run or finish: the core is shutting down.
pub(crate) fn quitting(what: &str) -> CoreError {
    CoreError::Refused(error::Refusal::Quitting {
        what: what.to_owned(),
    })
}

/// Logs what an action did. Only the id and the error are logged: ids are not secret, and core
/// errors are built never to carry a token, poll token, API key or loopback address (the attach
/// URL, which holds a one-time code, is not logged).
fn logged<T>(action: &str, id: &str, result: Result<T, CoreError>) -> Result<T, CoreError> {
    match &result {
        Ok(_) => tracing::info!(action, id, "done"),
        Err(e) => tracing::warn!(action, id, "failed: {e}"),
    }
    result
}
