//! Live agent state (issue 15): what each running runtime's agent is doing, read from the
//! runtime's own status API (`docs/runtime-api.md`), and invoking the actions it offers.
//!
//! [`Agents`] keeps one push subscription (a task reading the SSE stream) per running
//! receipt-backed runtime. The watcher hands it every snapshot it takes ([`Agents::sync`] starts
//! and stops subscriptions as runtimes come and go, or as a receipt is rewritten) and lets it fill
//! in each running runtime's `state` ([`Agents::apply`]); a subscription that accepts a document
//! wakes the watcher to publish. Nothing polls: a subscription waits on its stream, its backoff
//! or its rate-limit timer, and a runtime that does not serve the API is not asked again until
//! its receipt changes.
//!
//! A runtime is untrusted: every document goes through [`document`], and each subscription
//! coalesces what it shows ([`AgentOptions::publish_interval`]) and rate-limits the alerts it
//! sends ([`AgentOptions::alert_interval`]), so a runtime flooding changes floods nothing. Every
//! subscription runs on the watcher's one thread, beside the inventory: its stream is parsed in
//! linear time, a slice per turn ([`client::READ_SLICE_BYTES`]), and failed past
//! [`client::MAX_BYTES_WITHOUT_DOCUMENT`], so a runtime flooding its stream holds up no other.
//!
//! An action is bound to the document it was chosen from (issue 29): every shell sends back the
//! `revision` of the state it showed, and `Agents::act` refuses it once the runtime's prompt
//! changed after that revision, before anything is sent.
//!
//! - [`document`]: parsing, validating and sanitizing one status document.
//! - [`client`]: the HTTP client of the API (status, stream, actions) over a checked connection.
pub mod client;
pub mod document;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use live_runtime::{
    LiveRuntimeEndpoint, LiveRuntimeRecord, LiveRuntimeSource, LocatedLiveRuntime, ReceiptDir,
    ReceiptFiles,
};
use rand::Rng;
use runtime_link::owner::{ListenerLookup, SocketTable};
use time::format_description::well_known::Rfc3339;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::inventory::display_name;
use crate::view::{
    ActOutcome, AgentActionView, AgentState, AgentStateView, RuntimeOrigin, RuntimeStatus,
    RuntimeView, Snapshot,
};
use crate::{CoreError, CoreEvent, EventSink, Refusal};
use client::{ActAnswer, ActError, AttemptError, Fetched, Target, Timeouts};
use document::Document;

/// How long to wait for a runtime's response headers (connect included). The API's figure: a
/// runtime answers on loopback in milliseconds, five seconds is a runtime that is stuck.
pub const HEADERS_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the first document may take after the stream's headers (the API says at once;
/// five seconds is the API's figure for "it never will").
pub const FIRST_DOCUMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an open stream may be silent before it is reconnected: one of the runtime's 15 s
/// keep-alive intervals and five seconds (the API's figure for a stuck answer), so a missed
/// keep-alive is noticed at once while a late one is not taken for a stuck runtime. The
/// reconnection tells them apart: a runtime that does not answer it either is `not-answering`
/// ([`FAILURES_BEFORE_NOT_ANSWERING`]). Waiting the API's full 45 s (three intervals) made a
/// stopped runtime show `not-answering` only 34 s after it stopped (issue 31).
pub const SILENCE_TIMEOUT: Duration = Duration::from_secs(20);
/// The first reconnection delay (the API's figure); it doubles with each failed attempt.
pub const BACKOFF_INITIAL: Duration = Duration::from_millis(500);
/// The longest reconnection delay (the API's figure): a runtime that is down for long is still
/// picked up within half a minute of coming back, at a cost of two connections a minute.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Consecutive failed attempts after which a live runtime is `not-answering` (the API's figure:
/// one failure can be a restart of its HTTP server, three are a stuck runtime). A stream that
/// went silent ([`SILENCE_TIMEOUT`]) and whose reconnection failed too is one sooner: a silent
/// stream was already a failure to answer, for 20 s.
pub const FAILURES_BEFORE_NOT_ANSWERING: u32 = 3;
/// Least time between two states one runtime shows (latest wins): ten a second is as fast as a
/// person can follow and keeps a runtime sending 10,000 changes a second from costing more than
/// ten snapshots a second, while a single change still shows at once, and so does the moment an
/// agent comes to need you (see `Subscription::show`).
pub const PUBLISH_INTERVAL: Duration = Duration::from_millis(100);
/// Least time between two alerts (notifications) for one runtime. An entry into a state that
/// needs the user inside it is told when it ends, if the runtime is still in such a state: a
/// burst gives one notification, and a real approve → needs-input walk still gets both.
pub const ALERT_INTERVAL: Duration = Duration::from_secs(3);
/// The API's refusal code for an action chosen from a document whose prompt has changed since.
const STALE_REVISION: &str = "stale-revision";
/// How long the runtime has to answer an action (the API's figure); actions are not retried.
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a one-shot read of every runtime's state may take (the CLI's `list`, which has no
/// subscriptions): short, since a runtime that does not answer within it is shown as such.
pub const ONE_SHOT_TIMEOUT: Duration = Duration::from_secs(2);

/// Every timing the subscriptions use; [`Default`] is the API's figures. Tests shorten them.
#[derive(Clone, Debug)]
pub struct AgentOptions {
    /// See [`HEADERS_TIMEOUT`].
    pub headers_timeout: Duration,
    /// See [`FIRST_DOCUMENT_TIMEOUT`].
    pub first_document_timeout: Duration,
    /// See [`SILENCE_TIMEOUT`].
    pub silence_timeout: Duration,
    /// See [`BACKOFF_INITIAL`].
    pub backoff_initial: Duration,
    /// See [`BACKOFF_MAX`].
    pub backoff_max: Duration,
    /// See [`PUBLISH_INTERVAL`].
    pub publish_interval: Duration,
    /// See [`ALERT_INTERVAL`].
    pub alert_interval: Duration,
    /// See [`ACTION_TIMEOUT`].
    pub action_timeout: Duration,
    /// See [`ONE_SHOT_TIMEOUT`].
    pub one_shot_timeout: Duration,
    /// Whether the states the runtimes already running when watching starts are found in are
    /// alerted (the tray: they need the user all the same). `false` for a stream of changes
    /// (`events --json`): those states began before it, so they are its starting point, and
    /// only what changes after is alerted.
    pub alert_states_found_at_start: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            headers_timeout: HEADERS_TIMEOUT,
            first_document_timeout: FIRST_DOCUMENT_TIMEOUT,
            silence_timeout: SILENCE_TIMEOUT,
            backoff_initial: BACKOFF_INITIAL,
            backoff_max: BACKOFF_MAX,
            publish_interval: PUBLISH_INTERVAL,
            alert_interval: ALERT_INTERVAL,
            action_timeout: ACTION_TIMEOUT,
            one_shot_timeout: ONE_SHOT_TIMEOUT,
            alert_states_found_at_start: true,
        }
    }
}

impl AgentOptions {
    fn timeouts(&self) -> Timeouts {
        Timeouts {
            headers: self.headers_timeout,
            first_document: self.first_document_timeout,
            silence: self.silence_timeout,
        }
    }
}

/// The subscriptions and the latest state of every running runtime. Dropping it (or
/// [`Agents::stop`]) ends every subscription.
pub struct Agents {
    inner: Arc<Inner>,
}

struct Inner {
    options: AgentOptions,
    receipts: ReceiptDir,
    /// By endpoint. A std mutex: never held across an await.
    entries: Mutex<HashMap<String, Entry>>,
    /// Woken (at most once per runtime per publish interval) when a shown state changed.
    changed: Notify,
    sink: Mutex<Option<EventSink>>,
    next_task: AtomicU64,
    /// The document of each runtime's last look without a subscription ([`Agents::offered`],
    /// the CLI's), by endpoint: the act that follows is checked against it, so a change that
    /// asks nothing new in between (another client starting to watch) does not refuse it.
    looked: Mutex<HashMap<String, Document>>,
    /// Whether [`Agents::sync`] has run: the runtimes of its first call were running when
    /// watching started.
    synced: std::sync::atomic::AtomicBool,
}

/// One running runtime's subscription and what it last showed.
struct Entry {
    /// What the subscription was started for; a change restarts it.
    generation: Generation,
    /// Which subscription task may write here (an old one being cancelled may not).
    task: u64,
    cancel: CancellationToken,
    /// What snapshots show (coalesced).
    shown: AgentStateView,
    /// The latest accepted document: the only one actions are taken from.
    latest: Option<Latest>,
}

/// The latest accepted document, and since which revision it has asked the same of the user.
#[derive(Clone, Debug)]
struct Latest {
    document: Document,
    /// The first revision of the run of documents, read in a row on one connection, that ask
    /// what this one asks ([`Document::same_prompt`]): an action chosen from any revision from
    /// here to this document's acts on what the user was shown (the API's `stale-revision`
    /// rule, kept by the client too, so that a runtime that does not keep it is not trusted to).
    prompt_since: u64,
}

impl Latest {
    /// `document` read after `previous` (`None`: the first of a connection, whose prompt may
    /// have changed and changed back while nothing was read).
    fn after(previous: Option<&Latest>, document: Document) -> Self {
        let prompt_since = match previous {
            Some(previous) if previous.document.same_prompt(&document) => previous.prompt_since,
            _ => document.revision,
        };
        Self {
            document,
            prompt_since,
        }
    }

    /// Whether an action chosen from the document of revision `seen` acts on this prompt.
    fn shows(&self, seen: u64) -> bool {
        (self.prompt_since..=self.document.revision).contains(&seen)
    }
}

/// What a subscription depends on: the receipt's process, its registration and the receipt file
/// itself, so that a rewritten receipt (after a `404`, the only way to be asked again) restarts it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Generation {
    /// The runtime's inventory id, which its alerts carry.
    id: String,
    pid: u32,
    registered_at: Option<String>,
    /// The receipt file's inode and modification time.
    file: Option<(u64, i128)>,
    name: String,
    source: (String, String),
}

impl Generation {
    /// Whether `runtime`, whose receipt file was not re-read, still has this generation: what
    /// [`Agents::generation`] would give for it, its file's identity aside, without a copy.
    fn is_of(&self, runtime: &RuntimeView) -> bool {
        runtime.status == RuntimeStatus::Running
            && runtime.origin != RuntimeOrigin::Catalog
            && runtime.id == self.id
            && runtime.pid == Some(self.pid)
            && runtime.since == self.registered_at
            && runtime.name == self.name
            && runtime.source.as_ref().is_some_and(|source| {
                source.session_id == self.source.0 && source.workspace == self.source.1
            })
    }
}

impl Agents {
    /// No subscriptions yet; `receipts` is where tokens and addresses are resolved.
    pub fn new(receipts: ReceiptDir, options: AgentOptions) -> Self {
        Self {
            inner: Arc::new(Inner {
                options,
                receipts,
                entries: Mutex::default(),
                changed: Notify::new(),
                sink: Mutex::default(),
                next_task: AtomicU64::new(0),
                looked: Mutex::default(),
                synced: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// Where alerts go (the watcher's sink).
    pub fn set_sink(&self, sink: EventSink) {
        *self.inner.sink.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    /// Resolves when a subscription changed what it shows: time for a snapshot.
    pub async fn changed(&self) {
        self.inner.changed.notified().await;
    }

    /// Starts a subscription for every running receipt-backed runtime of `snapshot` that has
    /// none (or whose receipt changed), and ends those of runtimes it no longer lists as
    /// running. Must run inside a tokio runtime, which runs the subscriptions.
    ///
    /// `reread` says whether the pass that made `snapshot` re-read an endpoint's receipt file:
    /// only then can the file have been rewritten, so only then is it looked at again (a
    /// `statx` per runtime per pass was 15-20 ms of every pass at 7,000 runtimes). The rest of
    /// what a subscription depends on is compared with the view each time.
    pub fn sync(&self, snapshot: &Snapshot, reread: impl Fn(&str) -> bool) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let found_at_start = !self.inner.synced.swap(true, Ordering::SeqCst);
        let baseline = found_at_start && !self.inner.options.alert_states_found_at_start;
        let mut entries = self.inner.lock();
        let mut unchanged: HashSet<&str> = HashSet::with_capacity(entries.len());
        let mut wanted: HashMap<&str, Generation> = HashMap::new();
        for r in &snapshot.runtimes {
            let Some(endpoint) = r.endpoint.as_deref() else {
                continue;
            };
            let same = !reread(endpoint)
                && entries
                    .get(endpoint)
                    .is_some_and(|entry| entry.generation.is_of(r));
            if same {
                unchanged.insert(endpoint);
            } else if let Some(generation) = self.generation(r) {
                wanted.insert(endpoint, generation);
            }
        }
        entries.retain(|endpoint, entry| {
            let keep = unchanged.contains(endpoint.as_str())
                || wanted.get(endpoint.as_str()) == Some(&entry.generation);
            if !keep {
                entry.cancel.cancel();
            }
            keep
        });
        for (endpoint, generation) in wanted {
            if entries.contains_key(endpoint) {
                continue;
            }
            let task = self.inner.next_task.fetch_add(1, Ordering::Relaxed);
            let cancel = CancellationToken::new();
            let mut subscription = Subscription::new(
                self.inner.clone(),
                endpoint.to_owned(),
                task,
                &generation,
                cancel.clone(),
            );
            subscription.baseline = baseline;
            entries.insert(
                endpoint.to_owned(),
                Entry {
                    generation,
                    task,
                    cancel,
                    shown: AgentStateView::unknown(),
                    latest: None,
                },
            );
            runtime.spawn(subscription.run());
        }
    }

    fn generation(&self, runtime: &RuntimeView) -> Option<Generation> {
        if runtime.status != RuntimeStatus::Running || runtime.origin == RuntimeOrigin::Catalog {
            return None;
        }
        let endpoint: LiveRuntimeEndpoint = runtime.endpoint.as_deref()?.parse().ok()?;
        let source = runtime.source.as_ref()?;
        let file = std::fs::symlink_metadata(self.inner.receipts.receipt_path(&endpoint))
            .ok()
            .map(|meta| {
                use std::os::unix::fs::MetadataExt;
                (
                    meta.ino(),
                    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                )
            });
        Some(Generation {
            id: runtime.id.clone(),
            pid: runtime.pid?,
            registered_at: runtime.since.clone(),
            file,
            name: runtime.name.clone(),
            source: (source.session_id.clone(), source.workspace.clone()),
        })
    }

    /// Fills in every running runtime's `state` (`unknown` until heard from) and sorts running
    /// runtimes by [`AgentState::urgency`], keeping today's order otherwise; recounts.
    pub fn apply(&self, snapshot: &mut Snapshot) {
        {
            let entries = self.inner.lock();
            for runtime in &mut snapshot.runtimes {
                runtime.state = (runtime.status == RuntimeStatus::Running).then(|| {
                    runtime
                        .endpoint
                        .as_deref()
                        .and_then(|e| entries.get(e))
                        .map_or_else(AgentStateView::unknown, |e| e.shown.clone())
                });
            }
        }
        snapshot.order();
    }

    /// The latest accepted document of a subscribed runtime.
    fn latest(&self, endpoint: &str) -> Option<Latest> {
        self.inner
            .lock()
            .get(endpoint)
            .and_then(|e| e.latest.clone())
    }

    /// Ends every subscription (what a core shutdown calls); later snapshots show `unknown`.
    pub fn stop(&self) {
        let mut entries = self.inner.lock();
        for entry in entries.values() {
            entry.cancel.cancel();
        }
        entries.clear();
    }
}

impl Drop for Agents {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the entry of `endpoint` if subscription `task` still owns it.
    fn update<R>(&self, endpoint: &str, task: u64, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        match self.lock().get_mut(endpoint) {
            Some(entry) if entry.task == task => Some(f(entry)),
            _ => None,
        }
    }

    fn looked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Document>> {
        self.looked.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn sink(&self) -> Option<EventSink> {
        self.sink.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// A document read over this tray's own status stream, with the tray taken out of its
/// `observers`: the runtime counts every open stream, ours included (`docs/runtime-api.md`),
/// and the views say how many *other* clients watch. A one-shot `GET` (`read_once`) holds no
/// stream, so its count is already without us.
fn without_us(mut document: Document) -> Document {
    if let Some(observers) = document.view.observers.as_mut() {
        *observers = observers.saturating_sub(1);
    }
    document
}

fn now_rfc3339() -> Option<String> {
    time::OffsetDateTime::now_utc().format(&Rfc3339).ok()
}

fn not_answering(reason: &AttemptError) -> AgentStateView {
    AgentStateView {
        value: AgentState::NotAnswering,
        title: None,
        detail: Some(document::clean(
            &reason.to_string(),
            false,
            document::MESSAGE_CAP,
        )),
        since: now_rfc3339(),
        actions: Vec::new(),
        controller: None,
        observers: None,
        revision: None,
    }
}

/// What makes a question the same question: what the agent asks and offers, and since when.
/// Not the revision, which also moves when only the observers change (another client watching).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Prompt {
    state: AgentState,
    title: Option<String>,
    detail: Option<String>,
    since: Option<String>,
    actions: Vec<AgentActionView>,
}

impl Prompt {
    fn of(view: &AgentStateView) -> Self {
        Self {
            state: view.value,
            title: view.title.clone(),
            detail: view.detail.clone(),
            since: view.since.clone(),
            actions: view.actions.clone(),
        }
    }
}

/// One runtime's subscription task.
struct Subscription {
    inner: Arc<Inner>,
    options: AgentOptions,
    endpoint: String,
    /// The runtime's inventory id, which its alerts carry.
    id: String,
    task: u64,
    name: String,
    source: LiveRuntimeSource,
    cancel: CancellationToken,
    /// The latest accepted document.
    latest: Option<Latest>,
    /// What to show (maybe not shown yet: see `flush_at`).
    view: AgentStateView,
    /// When the pending `view` is shown, if it is not yet.
    flush_at: Option<Instant>,
    /// When the next showing is due by the publish interval: each showing moves it one interval
    /// past the later of itself and the showing's time.
    due: Option<Instant>,
    /// The state shown last (to tell an entry into a state from a change within it).
    shown_state: AgentState,
    /// An entry into a needs-you or trouble state (or a new question) not yet alerted.
    alert_pending: bool,
    /// The question last alerted, until the agent shows another state of its own: the same
    /// question shown again after a brief stall (`not-answering` and back) is not news.
    alerted: Option<Prompt>,
    last_alert: Option<Instant>,
    /// The runtime was running when watching started and its first state is not shown yet:
    /// that state began before, so it is the starting point, not news (see
    /// [`AgentOptions::alert_states_found_at_start`]).
    baseline: bool,
    failures: u32,
    /// Whether the last attempt ended in a silent stream: a failed reconnection after it is a
    /// runtime that does not answer.
    after_silence: bool,
    backoff: Duration,
}

impl Subscription {
    fn new(
        inner: Arc<Inner>,
        endpoint: String,
        task: u64,
        generation: &Generation,
        cancel: CancellationToken,
    ) -> Self {
        let options = inner.options.clone();
        Self {
            backoff: options.backoff_initial,
            options,
            inner,
            endpoint,
            id: generation.id.clone(),
            task,
            name: generation.name.clone(),
            source: LiveRuntimeSource {
                session_id: generation.source.0.clone(),
                workspace: PathBuf::from(&generation.source.1),
            },
            cancel,
            latest: None,
            view: AgentStateView::unknown(),
            flush_at: None,
            due: None,
            shown_state: AgentState::Unknown,
            alert_pending: false,
            alerted: None,
            last_alert: None,
            baseline: false,
            failures: 0,
            after_silence: false,
        }
    }

    async fn run(mut self) {
        loop {
            let mut heard = false;
            let started = Instant::now();
            let outcome = self.attempt(&mut heard).await;
            let error = match outcome {
                None => return,
                Some(Ok(())) => {
                    // 404: not served. Shown as today, not asked again until the receipt
                    // changes (which restarts this subscription).
                    self.show(AgentStateView::unknown());
                    self.flush_now();
                    self.wait(std::future::pending::<()>()).await;
                    return;
                }
                Some(Err(error)) => error,
            };
            self.failures = if heard { 1 } else { self.failures + 1 };
            tracing::debug!(runtime = %self.name, failures = self.failures, "status stream attempt failed: {error}");
            let stuck =
                self.failures >= FAILURES_BEFORE_NOT_ANSWERING || (self.after_silence && !heard);
            self.after_silence = matches!(error, AttemptError::Silent(_));
            if stuck && self.view.value != AgentState::NotAnswering {
                tracing::info!(runtime = %self.name, "not answering: {error}");
                self.show(not_answering(&error));
            }
            // The time the attempt took counts toward its backoff: a stream that went silent is
            // reconnected at once, and so is an attempt that waited as long as its backoff.
            let delay = jittered(self.backoff).saturating_sub(started.elapsed());
            self.backoff = (self.backoff * 2).min(self.options.backoff_max);
            if self.wait(tokio::time::sleep(delay)).await.is_none() {
                return;
            }
        }
    }

    /// One attempt: resolve, open the stream, read documents until it fails. `Some(Ok(()))`
    /// is a `404`; `None` is cancellation.
    async fn attempt(&mut self, heard: &mut bool) -> Option<Result<(), AttemptError>> {
        let (receipts, endpoint, source) = (
            self.inner.receipts.clone(),
            self.endpoint.clone(),
            self.source.clone(),
        );
        let resolved = self
            .wait(tokio::task::spawn_blocking(move || {
                resolve(&receipts, &endpoint, &source)
            }))
            .await?;
        let target = match resolved {
            Ok(Ok(target)) => target,
            Ok(Err(error)) => return Some(Err(error)),
            Err(_) => return Some(Err(AttemptError::Unresolved)),
        };
        let mut timeouts = self.options.timeouts();
        if self.view.value == AgentState::NotAnswering {
            // A stopped runtime's kernel still queues the connection: waiting on it for as long
            // as the longest backoff (instead of giving up at 5 s and sleeping) hears the
            // runtime the moment it resumes, as quick as the reconnection itself (issue 31).
            timeouts.headers = timeouts.headers.max(self.options.backoff_max);
        }
        let mut stream = match self.wait(client::open_stream(&target, timeouts)).await? {
            Ok(Fetched::NotServed) => return Some(Ok(())),
            Ok(Fetched::Served(stream)) => stream,
            Err(error) => return Some(Err(error)),
        };
        // Nothing else is sent with the token on this connection.
        drop(target);
        let mut first = Some(Instant::now() + timeouts.first_document);
        loop {
            match self.wait(stream.next_document(first)).await? {
                Ok(document) => {
                    let continues = first.is_none();
                    first = None;
                    *heard = true;
                    self.failures = 0;
                    self.backoff = self.options.backoff_initial;
                    self.accept(without_us(document), continues);
                }
                Err(error) => return Some(Err(error)),
            }
        }
    }

    /// A valid document: shown if newer than the last accepted one. An older or equal one still
    /// says the runtime answers, so it ends `not-answering`. `continues` says it came after
    /// another on the same connection.
    fn accept(&mut self, document: Document, continues: bool) {
        let newer = self
            .latest
            .as_ref()
            .is_none_or(|latest| document.revision > latest.document.revision);
        if !newer {
            if self.view.value == AgentState::NotAnswering {
                if let Some(latest) = &self.latest {
                    self.show(latest.document.view.clone());
                }
            }
            return;
        }
        let latest = Latest::after(self.latest.as_ref().filter(|_| continues), document);
        let stored = latest.clone();
        self.inner.update(&self.endpoint, self.task, |entry| {
            entry.latest = Some(stored)
        });
        self.show(latest.document.view.clone());
        self.latest = Some(latest);
    }

    /// Sets what to show: at once if the next showing is due, else when it is (latest wins).
    /// An agent that has just come to need you may be shown up to one interval early (a tool's
    /// start is often followed within milliseconds by its approval prompt, which must not
    /// wait); the showing after it waits that much longer, so over any stretch of time a runtime
    /// is still shown at most once an interval, and one more.
    fn show(&mut self, view: AgentStateView) {
        let asks = view.value.needs_you() && !self.shown_state.needs_you();
        self.view = view;
        let early = if asks {
            self.options.publish_interval
        } else {
            Duration::ZERO
        };
        match self.due {
            Some(due) if due.saturating_duration_since(Instant::now()) > early => {
                self.flush_at = Some(due);
            }
            _ => self.flush_now(),
        }
    }

    fn flush_now(&mut self) {
        self.flush_at = None;
        let now = Instant::now();
        self.due = Some(self.due.map_or(now, |due| due.max(now)) + self.options.publish_interval);
        let view = self.view.clone();
        let changed = self.inner.update(&self.endpoint, self.task, |entry| {
            let changed = entry.shown != view;
            entry.shown = view;
            changed
        });
        if changed == Some(true) {
            self.inner.changed.notify_one();
        }
        let state = self.view.value;
        let entered = state != self.shown_state;
        self.shown_state = state;
        if self.baseline && state != AgentState::Unknown {
            // The state it was found in: a question in it counts as told.
            self.baseline = false;
            self.alert_pending = false;
            self.alerted = state.needs_you().then(|| Prompt::of(&self.view));
            return;
        }
        if state.needs_you() {
            // A question not alerted yet is due, whether the state was entered or the agent
            // asks another one within it; the one already alerted is not, however it returns.
            let prompt = Prompt::of(&self.view);
            self.alert_pending = self.alerted.as_ref() != Some(&prompt);
        } else {
            if entered {
                self.alert_pending = state.is_trouble();
            }
            // The agent's own other state ends the question; the tray's derived ones
            // (`not-answering`, `unknown`) say nothing about it.
            if !state.is_derived() {
                self.alerted = None;
            }
        }
        self.try_alert();
    }

    fn alert_at(&self) -> Option<Instant> {
        match (self.alert_pending, self.last_alert) {
            (true, Some(last)) => Some(last + self.options.alert_interval),
            (true, None) => Some(Instant::now()),
            _ => None,
        }
    }

    fn try_alert(&mut self) {
        if self.alert_at().is_none_or(|at| at > Instant::now()) {
            return;
        }
        if self.view.value != self.shown_state {
            // The runtime moved on since the entry was shown, and that is not shown yet (a
            // burst inside the publish interval): show it first, which re-decides whether an
            // alert is due (and sends it, through this function, if it still is), so an alert
            // never names a state the user is not told about.
            self.flush_now();
            return;
        }
        self.alert_pending = false;
        self.last_alert = Some(Instant::now());
        let state = self.view.value;
        if state.needs_you() {
            self.alerted = Some(Prompt::of(&self.view));
        }
        // Only a state the runtime sent has a document (and so actions) to act on: the view
        // carries its revision, as the menu's and the window's do.
        let revision = self.view.revision;
        if let Some(sink) = self.inner.sink() {
            sink(CoreEvent::AgentAlert {
                id: self.id.clone(),
                name: self.name.clone(),
                state,
                title: self.view.title.clone(),
                detail: self.view.detail.clone(),
                actions: self.view.actions.clone(),
                revision,
            });
        }
    }

    /// Runs `future` while keeping the coalescing and alert timers; `None` when cancelled.
    async fn wait<F: Future>(&mut self, future: F) -> Option<F::Output> {
        tokio::pin!(future);
        loop {
            let due = [self.flush_at, self.alert_at()].into_iter().flatten().min();
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => return None,
                () = sleep_until(due) => {
                    if self.flush_at.is_some_and(|at| at <= Instant::now()) {
                        self.flush_now();
                    } else {
                        self.try_alert();
                    }
                }
                output = &mut future => return Some(output),
            }
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// `delay` with jitter (between half and all of it), so runtimes that failed together (a
/// suspended laptop waking) do not all reconnect in the same instant.
fn jittered(delay: Duration) -> Duration {
    delay.mul_f64(rand::thread_rng().gen_range(0.5..=1.0))
}

/// A located runtime's target, its listener checked first (in `table`) so that the secret store
/// is asked only for a runtime whose own process listens at its address.
fn located_target(
    receipts: &ReceiptDir,
    located: Option<LocatedLiveRuntime>,
    table: &mut dyn ListenerLookup,
) -> Result<Target, AttemptError> {
    let located = located.ok_or(AttemptError::Unresolved)?;
    runtime_link::verify_listener_in(table, &located.address, Some(located.record.listener_pid()))?;
    Ok(located.resolve(receipts)?.into())
}

/// The receipt's address and token (a keychain read: call it off the async workers).
fn resolve(
    receipts: &ReceiptDir,
    endpoint: &str,
    source: &LiveRuntimeSource,
) -> Result<Target, AttemptError> {
    let endpoint: LiveRuntimeEndpoint = endpoint.parse().map_err(|_| AttemptError::Unresolved)?;
    Ok(live_runtime::resolve_live_runtime(receipts, &endpoint, source)?.into())
}

async fn resolve_off_thread(
    receipts: &ReceiptDir,
    record: &LiveRuntimeRecord,
) -> Result<Target, CoreError> {
    let (receipts, endpoint, source) = (
        receipts.clone(),
        record.endpoint.clone(),
        record.source.clone(),
    );
    tokio::task::spawn_blocking(move || {
        live_runtime::resolve_live_runtime(&receipts, &endpoint, &source)
    })
    .await
    .map_err(|e| CoreError::ActionFailed {
        name: String::new(),
        action: String::new(),
        reason: format!("resolving the runtime was interrupted: {e}"),
    })?
    .map(Target::from)
    .map_err(CoreError::from)
}

/// The names an action is told by in its errors: the runtime's display name and the action as
/// the user may read it (sanitized, since a shell may pass any text).
struct Asked {
    name: String,
    action: String,
}

impl Asked {
    fn new(record: &LiveRuntimeRecord, action: &str) -> Self {
        Self {
            name: display_name(Some(record), None),
            action: document::clean(action, false, document::LABEL_CAP),
        }
    }

    /// Not offered by the runtime whose latest document says `says` (its title), if one was read.
    fn not_offered(&self, says: Option<&AgentStateView>) -> CoreError {
        CoreError::ActionNotOffered {
            name: self.name.clone(),
            action: self.action.clone(),
            says: says.and_then(|view| view.title.clone()),
            offers: says.map(|view| view.actions.iter().map(|a| a.id.clone()).collect()),
        }
    }

    fn failed(&self, reason: String) -> CoreError {
        CoreError::ActionFailed {
            name: self.name.clone(),
            action: self.action.clone(),
            reason,
        }
    }

    fn prompt_changed(&self) -> CoreError {
        Refusal::PromptChanged {
            name: self.name.clone(),
            action: self.action.clone(),
        }
        .into()
    }
}

impl Agents {
    /// The runtime's latest document: its subscription's, or without one a fresh `GET`, read
    /// as following the last look at it ([`Agents::offered`]) if there was one.
    async fn latest_of(
        &self,
        record: &LiveRuntimeRecord,
        target: &Target,
        asked: &Asked,
    ) -> Result<Latest, CoreError> {
        let endpoint = record.endpoint.as_str();
        if let Some(latest) = self.latest(endpoint) {
            return Ok(latest);
        }
        match client::get_status(target, self.inner.options.timeouts()).await {
            Ok(Fetched::Served(document)) => {
                let looked = self.inner.looked().get(endpoint).cloned();
                let looked = looked
                    .filter(|looked| looked.revision <= document.revision)
                    .map(|looked| Latest::after(None, looked));
                Ok(Latest::after(looked.as_ref(), document))
            }
            Ok(Fetched::NotServed) => Err(CoreError::NoStatusApi {
                name: asked.name.clone(),
            }),
            Err(error) => Err(asked.failed(error.to_string())),
        }
    }

    /// What the runtime `record` offers as `action` in its latest document, and that document's
    /// revision, which [`Agents::act`] takes back: a process without subscriptions (the CLI)
    /// decides whether to ask from this one document and acts on it.
    pub(crate) async fn offered(
        &self,
        record: &LiveRuntimeRecord,
        action: &str,
    ) -> Result<(AgentActionView, u64), CoreError> {
        // An action id no document can hold is still looked up, so that the refusal lists what
        // the runtime does offer.
        let asked = Asked::new(record, action);
        let target = resolve_off_thread(&self.inner.receipts, record).await?;
        let latest = self.latest_of(record, &target, &asked).await?;
        let revision = latest.document.revision;
        self.inner
            .looked()
            .insert(record.endpoint.as_str().to_owned(), latest.document.clone());
        let view = &latest.document.view;
        let offered = view.actions.iter().find(|a| a.id == action).cloned();
        Ok((
            offered.ok_or_else(|| asked.not_offered(Some(view)))?,
            revision,
        ))
    }

    /// Invokes `action` on the running runtime `record`, chosen from its document of revision
    /// `seen` (the one the user was shown): only if the runtime's latest document still asks what
    /// that one asked ([`Refusal::PromptChanged`] otherwise) and offers `action`, and with `seen`,
    /// so the runtime refuses it too (`stale-revision`) should its prompt have changed since.
    /// Nothing reaches the runtime for an action it does not offer, or from a prompt it no longer
    /// shows.
    pub(crate) async fn act(
        &self,
        record: &LiveRuntimeRecord,
        action: &str,
        seen: u64,
    ) -> Result<ActOutcome, CoreError> {
        let asked = Asked::new(record, action);
        if !document::is_valid_action_id(action) {
            return Err(asked.not_offered(None));
        }
        let target = resolve_off_thread(&self.inner.receipts, record).await?;
        let latest = self.latest_of(record, &target, &asked).await?;
        if !latest.shows(seen) {
            tracing::info!(runtime = %asked.name, action, seen, latest = latest.document.revision, "action refused: the prompt changed");
            return Err(asked.prompt_changed());
        }
        let Some(offered) = latest.document.view.actions.iter().find(|a| a.id == action) else {
            return Err(asked.not_offered(Some(&latest.document.view)));
        };
        let label = offered.label.clone();
        let timeout = self.inner.options.action_timeout;
        match client::post_action(&target, action, seen, timeout).await {
            Ok(ActAnswer::Accepted) => {
                tracing::info!(runtime = %asked.name, action, "action accepted");
                Ok(ActOutcome {
                    id: record.endpoint.as_str().to_owned(),
                    action: action.to_owned(),
                    message: format!("{} accepted {label}", asked.name),
                })
            }
            Ok(ActAnswer::Refused { code, .. }) if code.as_deref() == Some(STALE_REVISION) => {
                Err(asked.prompt_changed())
            }
            Ok(ActAnswer::Refused {
                status,
                code,
                message,
            }) => Err(CoreError::ActionRefused {
                name: asked.name.clone(),
                action: asked.action.clone(),
                code: code.unwrap_or_else(|| format!("http-{status}")),
                reason: message.unwrap_or_else(|| "it gave no reason".to_owned()),
            }),
            Err(ActError::Timeout(after)) => Err(CoreError::ActionTimedOut {
                name: asked.name,
                action: asked.action,
                after,
            }),
            Err(ActError::Attempt(error)) => Err(asked.failed(error.to_string())),
        }
    }
}

impl Agents {
    /// Every running runtime's state read once, for a process without subscriptions (the CLI).
    /// `files` is the receipt directory as the snapshot was built from it, so no receipt is read
    /// again: one blocking pass checks who listens at each runtime's address (one netlink socket
    /// for all of them) and asks the secret store only for runtimes whose own process listens
    /// there; a runtime with nothing listening is `not-answering` at once. Those that serve get
    /// a concurrent `GET` each, bounded by [`AgentOptions::one_shot_timeout`].
    pub(crate) async fn read_once(&self, snapshot: &mut Snapshot, files: Option<ReceiptFiles>) {
        let options = self.inner.options.clone();
        let receipts = self.inner.receipts.clone();
        let wanted: Vec<Option<LiveRuntimeEndpoint>> = snapshot
            .runtimes
            .iter()
            .map(|runtime| {
                let receipt_backed = runtime.status == RuntimeStatus::Running
                    && runtime.origin != RuntimeOrigin::Catalog;
                receipt_backed
                    .then(|| runtime.endpoint.as_deref()?.parse().ok())
                    .flatten()
            })
            .collect();
        let targets = tokio::task::spawn_blocking(move || {
            // One read of every listener instead of a kernel query per runtime; should it fail,
            // the queries answer (and fail, each with its reason, if the kernel cannot be asked).
            let mut queries = SocketTable::new();
            let mut table = queries.listening();
            let table: &mut dyn ListenerLookup = match &mut table {
                Ok(listeners) => listeners,
                Err(_) => &mut queries,
            };
            wanted
                .into_iter()
                .map(|endpoint| {
                    let endpoint = endpoint?;
                    let located = files.as_ref()?.located(&endpoint);
                    Some(located_target(&receipts, located, table))
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let reads = targets.into_iter().map(|target| {
            let options = options.clone();
            async move {
                let target = match target? {
                    Ok(target) => target,
                    Err(error) => return Some(not_answering(&error)),
                };
                let read = client::get_status(&target, options.timeouts());
                Some(
                    match tokio::time::timeout(options.one_shot_timeout, read).await {
                        Ok(Ok(Fetched::Served(document))) => document.view,
                        Ok(Ok(Fetched::NotServed)) => AgentStateView::unknown(),
                        Ok(Err(error)) => not_answering(&error),
                        Err(_) => {
                            not_answering(&AttemptError::HeadersTimeout(options.one_shot_timeout))
                        }
                    },
                )
            }
        });
        let states = futures_util::future::join_all(reads).await;
        for (runtime, state) in snapshot.runtimes.iter_mut().zip(states) {
            if runtime.status == RuntimeStatus::Running {
                runtime.state = Some(state.unwrap_or_else(AgentStateView::unknown));
            }
        }
        snapshot.order();
    }
}
