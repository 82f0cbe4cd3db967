//! The runtime's live status (docs/runtime-api.md): the current document, its revision, and the
//! changes pushed to every open stream.
//!
//! [`StatusBoard`] is the one place the document changes. Each change bumps `revision`, renders
//! the document once, and publishes the rendered JSON to every stream. A stream subscribes and
//! takes the current document under the same lock the writers hold, so it sees every change
//! after its first document, with no gap and no duplicate. What changes the document (timers,
//! actions, floods) is the scenario's business (`crate::scenario`).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::scenario::{Phase, Scenario};

/// The status API version this runtime serves (`version` in the document, `v1` in the paths).
pub const STATUS_API_VERSION: u32 = 1;

/// How many published documents a stream may fall behind before it skips ahead.
///
/// Every document is whole, so a reader that lags loses nothing but intermediate states; 256
/// covers any burst a person could cause and keeps a flooding scenario's memory bounded.
const STREAM_BACKLOG: usize = 256;

/// One of the states a runtime reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum AgentState {
    Working,
    NeedsApproval,
    NeedsInput,
    Idle,
    Error,
}

/// An action the runtime offers now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Action {
    pub id: String,
    pub label: String,
    pub destructive: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
}

/// What a phase of a scenario shows: everything in the document that is not bookkeeping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Content {
    pub state: AgentState,
    pub title: String,
    pub detail: Option<String>,
    pub actions: Vec<Action>,
    pub controller: Controller,
}

/// Which client drives the runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Controller {
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// The status document exactly as it goes on the wire.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    version: u32,
    revision: u64,
    state: AgentState,
    title: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    since: &'a str,
    actions: &'a [Action],
    controller: &'a Controller,
    observers: u32,
}

/// A rendered document and its revision, as streams receive it.
#[derive(Debug, Clone)]
pub(crate) struct Published {
    pub revision: u64,
    pub json: Arc<str>,
}

/// Why an action call was refused (a `409`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The current document does not offer this action.
    NotOffered,
    /// The caller's `revision` is older than the current prompt (or newer than any revision).
    StaleRevision,
}

struct Inner {
    phase: Phase,
    content: Content,
    since: String,
    revision: u64,
    /// The revision at which state, title, detail or actions last changed: a click made on a
    /// document older than this was made on another prompt.
    prompt_revision: u64,
    /// Bumped on every phase change, so a timer set for one phase cannot advance a later one.
    phase_seq: u64,
    observers: u32,
    published: Published,
}

/// The current status and its subscribers.
pub(crate) struct StatusBoard {
    scenario: Scenario,
    /// How long a phase that moves on by itself lasts.
    phase_delay: Duration,
    // std Mutex: it is never held across an `.await`.
    inner: Mutex<Inner>,
    changes: broadcast::Sender<Published>,
    stop: CancellationToken,
}

impl StatusBoard {
    /// A board in the scenario's first phase; its timers start once [`StatusBoard::start`] runs.
    pub(crate) fn new(
        scenario: Scenario,
        phase_delay: Duration,
        stop: CancellationToken,
    ) -> Arc<Self> {
        let phase = scenario.first_phase();
        let content = phase.content();
        let since = now_rfc3339();
        let published = render(&content, &since, 1, 0);
        Arc::new(Self {
            scenario,
            phase_delay,
            inner: Mutex::new(Inner {
                phase,
                content,
                since,
                revision: 1,
                prompt_revision: 1,
                phase_seq: 0,
                observers: 0,
                published,
            }),
            changes: broadcast::channel(STREAM_BACKLOG).0,
            stop,
        })
    }

    /// Starts the first phase's timer and the scenario's background work, if any.
    pub(crate) fn start(self: &Arc<Self>) {
        let (phase, seq) = {
            let inner = self.lock();
            (inner.phase.clone(), inner.phase_seq)
        };
        self.arm_timer(&phase, seq);
        self.scenario.spawn_background(self);
    }

    pub(crate) fn scenario(&self) -> Scenario {
        self.scenario
    }

    pub(crate) fn stop_token(&self) -> &CancellationToken {
        &self.stop
    }

    /// The current document.
    pub(crate) fn current(&self) -> Published {
        self.lock().published.clone()
    }

    /// The current document and a receiver of every later one; counts the caller as an
    /// observer until the returned guard is dropped. The first document already counts it.
    pub(crate) fn watch(
        self: &Arc<Self>,
    ) -> (Published, broadcast::Receiver<Published>, ObserverGuard) {
        let mut inner = self.lock();
        inner.observers += 1;
        self.publish(&mut inner);
        let first = inner.published.clone();
        let receiver = self.changes.subscribe();
        drop(inner);
        (
            first,
            receiver,
            ObserverGuard {
                board: Arc::clone(self),
            },
        )
    }

    /// Runs action `id` if the current document offers it and `seen` (the revision the caller
    /// acted on, if it sent one) is not older than the current prompt. Returns the revision
    /// that offered it; the action's effect is published as a new document before this returns.
    pub(crate) fn act(self: &Arc<Self>, id: &str, seen: Option<u64>) -> Result<u64, Refusal> {
        let mut inner = self.lock();
        if !inner.content.actions.iter().any(|action| action.id == id) {
            return Err(Refusal::NotOffered);
        }
        if let Some(seen) = seen {
            if seen < inner.prompt_revision || seen > inner.revision {
                return Err(Refusal::StaleRevision);
            }
        }
        let Some(next) = inner.phase.on_action(id) else {
            return Err(Refusal::NotOffered);
        };
        let offered_at = inner.revision;
        self.enter_locked(&mut inner, next);
        Ok(offered_at)
    }

    /// Moves to the phase a cue leads to from the current one, if any; returns the revision of
    /// the document that shows it.
    pub(crate) fn cue(self: &Arc<Self>) -> Option<u64> {
        let mut inner = self.lock();
        let next = inner.phase.on_cue()?;
        self.enter_locked(&mut inner, next);
        Some(inner.revision)
    }

    /// Moves to `next` unconditionally (used by scenarios that drive themselves).
    pub(crate) fn enter(self: &Arc<Self>, next: Phase) {
        let mut inner = self.lock();
        self.enter_locked(&mut inner, next);
    }

    fn enter_locked(self: &Arc<Self>, inner: &mut Inner, next: Phase) {
        let content = next.content();
        if content.state != inner.content.state {
            inner.since = now_rfc3339();
        }
        let prompt_changed = content.state != inner.content.state
            || content.title != inner.content.title
            || content.detail != inner.content.detail
            || content.actions != inner.content.actions;
        inner.content = content;
        inner.phase = next.clone();
        inner.phase_seq += 1;
        self.publish(inner);
        if prompt_changed {
            inner.prompt_revision = inner.revision;
        }
        self.arm_timer(&next, inner.phase_seq);
    }

    /// If `phase` moves on by itself, moves the board on after its delay, unless something else
    /// changed the phase first.
    fn arm_timer(self: &Arc<Self>, phase: &Phase, seq: u64) {
        let Some(next) = phase.after() else {
            return;
        };
        let delay = self.phase_delay;
        let board = Arc::clone(self);
        tokio::spawn(async move {
            tokio::select! {
                _ = board.stop.cancelled() => {}
                _ = tokio::time::sleep(delay) => board.advance(seq, next),
            }
        });
    }

    fn advance(self: &Arc<Self>, seq: u64, next: Phase) {
        let mut inner = self.lock();
        if inner.phase_seq == seq {
            self.enter_locked(&mut inner, next);
        }
    }

    fn publish(&self, inner: &mut Inner) {
        inner.revision += 1;
        inner.published = render(
            &inner.content,
            &inner.since,
            inner.revision,
            inner.observers,
        );
        // No receiver is not an error: nobody is watching.
        let _ = self.changes.send(inner.published.clone());
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a consistent document (every field is replaced
        // whole), so a poisoned lock is still safe to use.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counts one open stream in `observers`; dropping it (the stream closed) counts it out.
pub(crate) struct ObserverGuard {
    board: Arc<StatusBoard>,
}

impl Drop for ObserverGuard {
    fn drop(&mut self) {
        let mut inner = self.board.lock();
        inner.observers = inner.observers.saturating_sub(1);
        self.board.publish(&mut inner);
    }
}

fn render(content: &Content, since: &str, revision: u64, observers: u32) -> Published {
    let document = Document {
        version: STATUS_API_VERSION,
        revision,
        state: content.state,
        title: &content.title,
        detail: content.detail.as_deref(),
        since,
        actions: &content.actions,
        controller: &content.controller,
        observers,
    };
    let json = serde_json::to_string(&document).expect("a status document always serializes");
    Published {
        revision,
        json: json.into(),
    }
}

/// True for ids matching `^[a-z0-9][a-z0-9._-]{0,63}$`, the only action ids the API allows.
pub fn is_valid_action_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    let lower_or_digit = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match bytes.split_first() {
        Some((first, rest)) => {
            lower_or_digit(first)
                && rest.len() <= 63
                && rest
                    .iter()
                    .all(|b| lower_or_digit(b) || matches!(b, b'.' | b'_' | b'-'))
        }
        None => false,
    }
}

/// Waits `delay` unless the board stops first; false when it stopped.
pub(crate) async fn pause(board: &StatusBoard, delay: Duration) -> bool {
    tokio::select! {
        _ = board.stop.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}

fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| String::from("1970-01-01T00:00:00Z"))
}

#[cfg(test)]
mod tests {
    use super::is_valid_action_id;

    #[test]
    fn action_ids_follow_the_documented_charset() {
        for good in ["approve", "0", "run-tests.v2_b", &"a".repeat(64)] {
            assert!(is_valid_action_id(good), "{good}");
        }
        for bad in [
            "",
            "Approve",
            "-approve",
            ".x",
            "a b",
            "a/b",
            "approve\n",
            "é",
            &"a".repeat(65),
        ] {
            assert!(!is_valid_action_id(bad), "{bad:?}");
        }
    }
}
