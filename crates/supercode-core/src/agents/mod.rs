//! Live agent state (issue 15): what each running runtime's agent is doing, read from the
//! runtime's own status API (`docs/runtime-api.md`), and invoking the actions it offers.
//!
//! [`Agents`] keeps one push subscription (a task reading the SSE stream) per running
//! receipt-backed runtime. The watcher hands it every snapshot it takes ([`Agents::sync`] starts
//! and stops subscriptions as runtimes come and go, or as a receipt is rewritten) and lets it fill
//! in each running runtime's `state` ([`Agents::apply`]); a subscription that accepts a document
//! wakes the watcher to publish, and an alert it decides on waits for that pass too
//! ([`Agents::take_alerts`]): a state change reaches the shells one way. Nothing polls: a subscription waits on its stream, its backoff
//! or its rate-limit timer, and a runtime that does not serve the API is not asked again until
//! its receipt changes.
//!
//! A runtime is untrusted: every document goes through [`document`], and each subscription
//! coalesces what it shows ([`AgentOptions::publish_interval`]) and rate-limits the alerts it
//! decides on ([`AgentOptions::alert_interval`]), so a runtime flooding changes floods nothing. Every
//! subscription runs on the watcher's one thread, beside the inventory: its stream is parsed in
//! linear time, a slice per turn ([`client::READ_SLICE_BYTES`]), and failed past
//! [`sse::MAX_BYTES_WITHOUT_DOCUMENT`], so a runtime flooding its stream holds up no other.
//!
//! An action is bound to the document it was chosen from (issue 29): every shell sends back the
//! `revision` of the state it showed, and `Agents::act` refuses it once the runtime's prompt
//! changed after that revision, before anything is sent.
//!
//! - [`document`]: parsing, validating and sanitizing one status document.
//! - [`client`]: the HTTP client of the API (status, stream, actions) over a checked connection.
//! - [`sse`]: parsing the status stream's events into documents, within the API's caps.
//! - `answering`: when a live runtime is `not-answering`, the one rule both readers follow.
//! - `subscription`: one runtime's subscription task (reconnection, coalescing, alerts).
//! - `act`: what a runtime offers now, and acting on it.
//! - `read_once`: the one-shot read of every running runtime's state (the CLI's `list`).
mod act;
mod answering;
pub mod client;
pub mod document;
mod read_once;
pub mod sse;
mod subscription;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use live_runtime::{LiveRuntimeEndpoint, ReceiptDir};
use time::format_description::well_known::Rfc3339;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::view::{
    AgentState, AgentStateView, RuntimeOrigin, RuntimeStatus, RuntimeView, Snapshot,
};
use crate::CoreEvent;
use client::{AttemptError, Timeouts};
use document::Document;
use subscription::Subscription;

/// How long to wait for a runtime's response headers (connect included). The API's figure: a
/// runtime answers on loopback in milliseconds, five seconds is a runtime that is stuck, so an
/// attempt left unanswered this long makes it `not-answering` at once (`answering`).
pub const HEADERS_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the first document may take after the stream's headers (the API says at once;
/// five seconds is the API's figure for "it never will").
pub const FIRST_DOCUMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an open stream may be silent before it is reconnected: one of the runtime's 15 s
/// keep-alive intervals and five seconds (the API's figure for a stuck answer), so a missed
/// keep-alive is noticed at once while a late one is not taken for a stuck runtime. The
/// reconnection tells them apart: a runtime that does not answer it either is `not-answering`
/// (`answering`). Waiting the API's full 45 s (three intervals) made a
/// stopped runtime show `not-answering` only 34 s after it stopped (issue 31).
pub const SILENCE_TIMEOUT: Duration = Duration::from_secs(20);
/// The first reconnection delay (the API's figure); it doubles with each failed attempt.
pub const BACKOFF_INITIAL: Duration = Duration::from_millis(500);
/// The longest reconnection delay (the API's figure): a runtime that is down for long is still
/// picked up within half a minute of coming back, at a cost of two connections a minute.
pub const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// Consecutive attempts turned away (nothing listening, refused, a bad answer) after which a live
/// runtime is `not-answering` (the API's figure: one can be a restart of its HTTP server, three,
/// over about a second and a half of backoff, are a stuck runtime). An attempt left unanswered
/// for the reader's whole wait decides at once, and a silent stream's failed reconnection too:
/// the whole rule, for the subscriptions and `list` alike, is in `answering`.
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
/// How long the runtime has to answer an action (the API's figure); actions are not retried.
pub const ACTION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a one-shot read of every runtime's state may take (the CLI's `list`, which has no
/// subscriptions): a person waits on it. It is the read's whole wait for an answer, so a
/// runtime that has not answered by then is `not-answering` by the one rule (`answering`), as
/// one that leaves a subscription's request unanswered is.
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
    /// Woken (at most once per runtime per publish interval) when a shown state changed, and
    /// when an alert is due.
    changed: Notify,
    /// Alerts due, oldest first, for the watcher's next pass to send with the snapshot that
    /// shows their states ([`Agents::take_alerts`]).
    alerts: Mutex<Vec<CoreEvent>>,
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
                alerts: Mutex::default(),
                next_task: AtomicU64::new(0),
                looked: Mutex::default(),
                synced: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// The alerts due since the last call, oldest first. The watcher sends them just before the
    /// snapshot of the pass that took them, which shows their states: an agent's state change
    /// reaches the shells one way, through the watcher's pass, its alert and its snapshot
    /// together.
    pub fn take_alerts(&self) -> Vec<CoreEvent> {
        std::mem::take(&mut *self.inner.alerts.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Resolves when a subscription changed what it shows or has an alert due: time for a pass.
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

    /// Queues `alert` for the watcher's next pass, and wakes it.
    fn alert(&self, alert: CoreEvent) {
        self.alerts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(alert);
        self.changed.notify_one();
    }
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
