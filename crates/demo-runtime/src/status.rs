//! The demo runtime's live status: which phase of its scenario it is in, and the document that
//! phase shows, published through the one [`StatusFeed`] every runtime of this project uses.
//!
//! [`StatusBoard`] is the one place the phase changes; each change shows the phase's content on
//! the feed. What changes the phase (timers, actions, floods) is the scenario's business
//! (`crate::scenario`).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::feed::{Refusal, StatusFeed};
use crate::scenario::{Phase, Scenario};

/// How many published documents a stream may fall behind before it skips ahead.
///
/// Every document is whole, so a reader that lags loses nothing but intermediate states; 256
/// covers any burst a person could cause and keeps a flooding scenario's memory bounded.
const STREAM_BACKLOG: usize = 256;

struct Inner {
    phase: Phase,
    /// Bumped on every phase change, so a timer set for one phase cannot advance a later one.
    phase_seq: u64,
}

/// The scenario's current phase and the feed that shows it.
pub(crate) struct StatusBoard {
    scenario: Scenario,
    /// How long a phase that moves on by itself lasts.
    phase_delay: Duration,
    // std Mutex: it is never held across an `.await`. Every change of the feed's content is
    // made while it is held, so what an action checked on the feed still holds when it runs.
    inner: Mutex<Inner>,
    feed: Arc<StatusFeed>,
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
        let feed = StatusFeed::new(phase.content(), STREAM_BACKLOG);
        Arc::new(Self {
            scenario,
            phase_delay,
            inner: Mutex::new(Inner {
                phase,
                phase_seq: 0,
            }),
            feed,
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

    /// The document and its streams.
    pub(crate) fn feed(&self) -> &Arc<StatusFeed> {
        &self.feed
    }

    /// Runs action `id` if the current document offers it and `seen` (the revision the caller
    /// acted on, if it sent one) is not older than the current prompt. Returns the revision
    /// that offered it; the action's effect is published as a new document before this returns.
    pub(crate) fn act(self: &Arc<Self>, id: &str, seen: Option<u64>) -> Result<u64, Refusal> {
        let mut inner = self.lock();
        let offered_at = self.feed.offered(id, seen)?;
        let Some(next) = inner.phase.on_action(id) else {
            return Err(Refusal::NotOffered);
        };
        self.enter_locked(&mut inner, next);
        Ok(offered_at)
    }

    /// Moves to the phase a cue leads to from the current one, if any; returns the revision of
    /// the document that shows it.
    pub(crate) fn cue(self: &Arc<Self>) -> Option<u64> {
        let mut inner = self.lock();
        let next = inner.phase.on_cue()?;
        Some(self.enter_locked(&mut inner, next))
    }

    /// Moves to `next` unconditionally (used by scenarios that drive themselves).
    pub(crate) fn enter(self: &Arc<Self>, next: Phase) {
        let mut inner = self.lock();
        self.enter_locked(&mut inner, next);
    }

    /// Shows `next`; returns the revision of the document that shows it.
    fn enter_locked(self: &Arc<Self>, inner: &mut Inner, next: Phase) -> u64 {
        let revision = self.feed.show(next.content());
        inner.phase = next.clone();
        inner.phase_seq += 1;
        self.arm_timer(&next, inner.phase_seq);
        revision
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

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Both fields are replaced whole, so a poisoned lock still holds a consistent phase.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
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
