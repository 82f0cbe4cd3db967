//! One running runtime's subscription: a task that reads its status stream, reconnects with
//! backoff, says when it stops answering, coalesces what it shows and rate-limits its alerts.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use live_runtime::{LiveRuntimeEndpoint, LiveRuntimeSource, ReceiptDir};
use rand::Rng;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::answering::{Answering, Failure};
use super::client::{self, AttemptError, Fetched, Target};
use super::document::Document;
use super::{not_answering, AgentOptions, Generation, Inner, Latest};
use crate::view::{AgentActionView, AgentState, AgentStateView};
use crate::CoreEvent;

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
pub(super) struct Subscription {
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
    pub(super) baseline: bool,
    /// The evidence of whether the runtime answers, and the backoff (the rule of
    /// `agents::answering`).
    answering: Answering,
}

impl Subscription {
    pub(super) fn new(
        inner: Arc<Inner>,
        endpoint: String,
        task: u64,
        generation: &Generation,
        cancel: CancellationToken,
    ) -> Self {
        let options = inner.options.clone();
        Self {
            answering: Answering::new(options.backoff_initial, options.backoff_max),
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
        }
    }

    pub(super) async fn run(mut self) {
        loop {
            let started = Instant::now();
            let outcome = self.attempt().await;
            let error = match outcome {
                None => return,
                Some(Ok(())) => {
                    // 404: not served. Shown as today, not asked again until the receipt
                    // changes (which restarts this subscription).
                    self.answering.answered();
                    self.show(AgentStateView::unknown());
                    self.flush_now();
                    self.wait(std::future::pending::<()>()).await;
                    return;
                }
                Some(Err(error)) => error,
            };
            tracing::debug!(runtime = %self.name, "status stream attempt failed: {error}");
            let verdict = self.answering.failed(Failure::of(&error));
            if verdict.not_answering && self.view.value != AgentState::NotAnswering {
                tracing::info!(runtime = %self.name, "not answering: {error}");
                self.show(not_answering(&error));
            }
            // The time the attempt took counts toward its backoff: a stream that went silent is
            // reconnected at once, and so is an attempt that waited as long as its backoff.
            let delay = jittered(verdict.retry_after).saturating_sub(started.elapsed());
            if self.wait(tokio::time::sleep(delay)).await.is_none() {
                return;
            }
        }
    }

    /// One attempt: resolve, open the stream, read documents until it fails. `Some(Ok(()))`
    /// is a `404`; `None` is cancellation.
    async fn attempt(&mut self) -> Option<Result<(), AttemptError>> {
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
        if self.answering.is_not_answering() {
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
                    self.answering.answered();
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
        self.inner.alert(CoreEvent::AgentAlert {
            id: self.id.clone(),
            name: self.name.clone(),
            state,
            title: self.view.title.clone(),
            detail: self.view.detail.clone(),
            actions: self.view.actions.clone(),
            revision,
        });
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

/// The receipt's address and token (a keychain read: call it off the async workers).
fn resolve(
    receipts: &ReceiptDir,
    endpoint: &str,
    source: &LiveRuntimeSource,
) -> Result<Target, AttemptError> {
    let endpoint: LiveRuntimeEndpoint = endpoint.parse().map_err(|_| AttemptError::Unresolved)?;
    Ok(live_runtime::resolve_live_runtime(receipts, &endpoint, source)?.into())
}
