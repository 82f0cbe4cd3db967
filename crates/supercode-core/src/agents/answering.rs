//! When a live runtime is `not-answering`: the one rule, fed with each attempt's outcome by both
//! readers of the status API, the subscription (the tray, the window, `events`) and the one-shot
//! read (`list`), so that they never judge the same runtime differently.
//!
//! What an attempt's failure says depends on how it failed:
//!
//! - **Turned away** (nothing listening, refused, reset, a status other than `200` and `404`, an
//!   invalid document, a stream that ended or broke a cap): the runtime may be restarting its
//!   HTTP server, so one is not enough. [`FAILURES_BEFORE_NOT_ANSWERING`] in a row are a stuck
//!   runtime, retried after a backoff from [`super::BACKOFF_INITIAL`] doubling to
//!   [`super::BACKOFF_MAX`]: about a second and a half, time for a restart to finish.
//! - **Unanswered** (the runtime took the request and said nothing for as long as the reader
//!   waits: no headers, no first document, or the one-shot read's deadline): the API's own
//!   figure says a runtime answers on loopback in milliseconds and one that has not in five
//!   seconds is stuck, so this is `not-answering` at once. Waiting for two more such attempts
//!   would only make the tray say it 10 s later, and `list` could never say it.
//! - **Silent** (an open stream sent nothing for [`super::SILENCE_TIMEOUT`]): the limit is set
//!   from the runtime's keep-alive interval and a keep-alive can be late, so the reconnection
//!   decides: if it fails too, however, the runtime is `not-answering`.
//!
//! Any answer (a document, or a `404`: it does not serve the API) ends the run of failures and
//! `not-answering`, and restarts the backoff.

use std::time::Duration;

use super::client::AttemptError;
use super::FAILURES_BEFORE_NOT_ANSWERING;

/// How one failed attempt failed, as the rule weighs it (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Failure {
    /// Turned away or broken: maybe a restart.
    TurnedAway,
    /// Held without a word for the reader's whole wait.
    Unanswered,
    /// An open stream went silent.
    Silent,
}

impl Failure {
    pub(super) fn of(error: &AttemptError) -> Self {
        match error {
            AttemptError::HeadersTimeout(_)
            | AttemptError::FirstDocumentTimeout(_)
            | AttemptError::NoAnswer(_) => Failure::Unanswered,
            AttemptError::Silent(_) => Failure::Silent,
            AttemptError::Listener(_)
            | AttemptError::Connect(_)
            | AttemptError::Http(_)
            | AttemptError::Status(_)
            | AttemptError::Stream(_)
            | AttemptError::Invalid(_)
            | AttemptError::Ended
            | AttemptError::Receipt(_)
            | AttemptError::Unresolved => Failure::TurnedAway,
        }
    }
}

/// What the rule says after a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Verdict {
    /// Whether the runtime is `not-answering` now.
    pub(super) not_answering: bool,
    /// How long after the failed attempt began the next one is due (before jitter).
    pub(super) retry_after: Duration,
}

/// One runtime's evidence: the failures since it last answered.
#[derive(Clone, Debug)]
pub(super) struct Answering {
    backoff_initial: Duration,
    backoff_max: Duration,
    /// Failed attempts since the last answer.
    failures: u32,
    /// Whether the last failure was a silent stream.
    after_silence: bool,
    not_answering: bool,
    backoff: Duration,
}

impl Answering {
    /// No evidence yet: the runtime is not (yet) `not-answering`.
    pub(super) fn new(backoff_initial: Duration, backoff_max: Duration) -> Self {
        Self {
            backoff_initial,
            backoff_max,
            failures: 0,
            after_silence: false,
            not_answering: false,
            backoff: backoff_initial,
        }
    }

    /// The runtime answered (a valid document, or a `404`).
    pub(super) fn answered(&mut self) {
        *self = Self::new(self.backoff_initial, self.backoff_max);
    }

    /// An attempt failed: whether the runtime is `not-answering` now, and when to try again.
    pub(super) fn failed(&mut self, failure: Failure) -> Verdict {
        self.failures = self.failures.saturating_add(1);
        self.not_answering |= self.failures >= FAILURES_BEFORE_NOT_ANSWERING
            || self.after_silence
            || failure == Failure::Unanswered;
        self.after_silence = failure == Failure::Silent;
        let retry_after = self.backoff;
        self.backoff = (self.backoff * 2).min(self.backoff_max);
        Verdict {
            not_answering: self.not_answering,
            retry_after,
        }
    }

    /// Whether the runtime is `not-answering` (until it answers again).
    pub(super) fn is_not_answering(&self) -> bool {
        self.not_answering
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{BACKOFF_INITIAL, BACKOFF_MAX};

    fn rule() -> Answering {
        Answering::new(BACKOFF_INITIAL, BACKOFF_MAX)
    }

    fn verdicts(answering: &mut Answering, failures: &[Failure]) -> Vec<bool> {
        failures
            .iter()
            .map(|f| answering.failed(*f).not_answering)
            .collect()
    }

    #[test]
    fn three_turned_away_attempts_in_a_row_are_not_answering_two_are_not() {
        let mut answering = rule();
        assert_eq!(
            verdicts(&mut answering, &[Failure::TurnedAway; 4]),
            [false, false, true, true]
        );
    }

    #[test]
    fn an_attempt_left_unanswered_is_not_answering_at_once() {
        assert_eq!(verdicts(&mut rule(), &[Failure::Unanswered]), [true]);
        // After restarts too.
        assert_eq!(
            verdicts(&mut rule(), &[Failure::TurnedAway, Failure::Unanswered]),
            [false, true]
        );
    }

    #[test]
    fn a_silent_stream_is_not_answering_only_once_its_reconnection_fails() {
        assert_eq!(verdicts(&mut rule(), &[Failure::Silent]), [false]);
        assert_eq!(
            verdicts(&mut rule(), &[Failure::Silent, Failure::TurnedAway]),
            [false, true]
        );
        // A reconnection that answers ends the silence's weight.
        let mut answering = rule();
        answering.failed(Failure::Silent);
        answering.answered();
        assert_eq!(verdicts(&mut answering, &[Failure::TurnedAway]), [false]);
    }

    #[test]
    fn an_answer_ends_not_answering_and_the_run_of_failures() {
        let mut answering = rule();
        verdicts(&mut answering, &[Failure::TurnedAway; 3]);
        assert!(answering.is_not_answering());
        answering.answered();
        assert!(!answering.is_not_answering());
        assert_eq!(
            verdicts(&mut answering, &[Failure::TurnedAway; 2]),
            [false, false]
        );
    }

    #[test]
    fn not_answering_lasts_until_an_answer_whatever_fails_next() {
        let mut answering = rule();
        answering.failed(Failure::Unanswered);
        answering.answered();
        answering.failed(Failure::Unanswered);
        assert_eq!(
            verdicts(&mut answering, &[Failure::Silent, Failure::TurnedAway]),
            [true, true]
        );
    }

    #[test]
    fn the_backoff_doubles_to_its_cap_and_restarts_after_an_answer() {
        let mut answering = rule();
        let delays: Vec<_> = (0..8)
            .map(|_| answering.failed(Failure::TurnedAway).retry_after)
            .collect();
        assert_eq!(delays[0], BACKOFF_INITIAL);
        assert_eq!(delays[1], BACKOFF_INITIAL * 2);
        assert_eq!(delays[7], BACKOFF_MAX);
        assert!(delays.windows(2).all(|d| d[1] >= d[0]));
        answering.answered();
        assert_eq!(
            answering.failed(Failure::TurnedAway).retry_after,
            BACKOFF_INITIAL
        );
    }

    #[test]
    fn each_attempt_error_is_weighed_by_how_it_failed() {
        use std::time::Duration as D;
        assert_eq!(
            Failure::of(&AttemptError::HeadersTimeout(D::ZERO)),
            Failure::Unanswered
        );
        assert_eq!(
            Failure::of(&AttemptError::FirstDocumentTimeout(D::ZERO)),
            Failure::Unanswered
        );
        assert_eq!(
            Failure::of(&AttemptError::NoAnswer(D::ZERO)),
            Failure::Unanswered
        );
        assert_eq!(Failure::of(&AttemptError::Silent(D::ZERO)), Failure::Silent);
        for turned_away in [
            AttemptError::Status(500),
            AttemptError::Ended,
            AttemptError::Unresolved,
        ] {
            assert_eq!(Failure::of(&turned_away), Failure::TurnedAway);
        }
    }
}
