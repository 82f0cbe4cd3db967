//! Carrying pending agent registrations through approval, and remembering how each one stands.
//!
//! The files (`pending-registrations.json`, `agents.json`) and the Canon API calls are
//! `canon-local`'s; this module tracks which approvals are running, what they last reported,
//! and makes sure one profile is never approved twice at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::view::{PendingState, PendingView};
use crate::{CoreError, Locations, Refusal};

/// How each profile's approval stands in this process.
#[derive(Clone, Default)]
pub struct ApprovalBoard {
    states: Arc<Mutex<HashMap<String, Tracked>>>,
    /// Polling cadence, deadline and Canon base URL; the production values unless a caller
    /// (tests, benchmarks) sets others with [`ApprovalBoard::set_options`].
    options: Arc<Mutex<canon_local::ApprovalOptions>>,
}

#[derive(Clone, Debug)]
struct Tracked {
    state: PendingState,
    message: Option<String>,
    running: bool,
}

impl ApprovalBoard {
    /// The state this process knows for `profile`, if it has tried to approve it.
    pub fn state_of(&self, profile: &str) -> Option<(PendingState, Option<String>)> {
        self.lock()
            .get(profile)
            .map(|t| (t.state, t.message.clone()))
    }

    /// Replaces the options every later [`ApprovalBoard::approve`] uses.
    pub fn set_options(&self, options: canon_local::ApprovalOptions) {
        *self.options.lock().unwrap_or_else(|e| e.into_inner()) = options;
    }

    fn set(&self, profile: &str, state: PendingState, message: Option<String>, running: bool) {
        self.lock().insert(
            profile.to_owned(),
            Tracked {
                state,
                message,
                running,
            },
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tracked>> {
        self.states.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Submits (or resumes) `profile`'s registration and polls Canon until it is decided or the
    /// deadline passes. `progress` sees every state change; `publish` refreshes the UI.
    pub async fn approve(
        &self,
        locations: &Locations,
        profile: &str,
        mut progress: impl FnMut(&PendingView) + Send,
        publish: &(dyn Fn() + Sync),
    ) -> Result<PendingView, CoreError> {
        let pending = canon_local::load_pending_registrations(&locations.canon)?;
        let Some(entry) = pending.get(profile).cloned() else {
            return Err(canon_local::ApprovalError::NoPendingRegistration {
                profile: profile.to_owned(),
            }
            .into());
        };
        {
            let mut states = self.lock();
            if states.get(profile).is_some_and(|t| t.running) {
                return Err(Refusal::ApprovalRunning {
                    profile: profile.to_owned(),
                }
                .into());
            }
            states.insert(
                profile.to_owned(),
                Tracked {
                    state: if entry.request_id.is_some() {
                        PendingState::Waiting
                    } else {
                        PendingState::Unsubmitted
                    },
                    message: None,
                    running: true,
                },
            );
        }
        let _running = RunningGuard {
            board: self,
            profile,
        };
        let view = |state: PendingState, message: Option<String>| {
            PendingView::new(
                profile.to_owned(),
                entry.client_type.clone(),
                state,
                entry.created_at.clone(),
                canon_local::json::iso_now(),
                message,
            )
        };
        let options = self
            .options
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let outcome = canon_local::approve(
            &locations.canon,
            &locations.registration_origins(),
            profile,
            locations.receipts.secret_store(),
            &options,
            |state: canon_local::ApprovalState| {
                let (s, message) = map_state(&state);
                self.set(profile, s, message.clone(), true);
                progress(&view(s, message));
                publish();
            },
        )
        .await;
        let (state, message, result) = match outcome {
            Ok(outcome) => {
                let (s, m) = map_outcome(&outcome);
                (s, m.clone(), Ok(view(s, m)))
            }
            Err(e) => {
                let message = e.to_string();
                (
                    PendingState::Error,
                    Some(message.clone()),
                    Err(CoreError::from(e)),
                )
            }
        };
        if state == PendingState::Approved {
            self.lock().remove(profile);
        } else {
            self.set(profile, state, message, false);
        }
        publish();
        result
    }

    /// Dismisses `profile`'s pending registration locally (the package's `clearPendingRegistration`).
    pub fn reject(&self, locations: &Locations, profile: &str) -> Result<(), CoreError> {
        if self.lock().get(profile).is_some_and(|t| t.running) {
            return Err(Refusal::RejectWhileApproving {
                profile: profile.to_owned(),
            }
            .into());
        }
        let dismissed =
            canon_local::reject(&locations.canon, &locations.registration_origins(), profile)?;
        self.lock().remove(profile);
        if !dismissed {
            return Err(CoreError::NoSuchRegistration {
                profile: profile.to_owned(),
            });
        }
        Ok(())
    }
}

/// Marks an approval as no longer running when its future ends, also when it is dropped before
/// finishing (the core's shutdown cancels approvals): the profile would otherwise count as being
/// approved, refusing approve and dismiss, for as long as the process lives.
struct RunningGuard<'a> {
    board: &'a ApprovalBoard,
    profile: &'a str,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        if let Some(tracked) = self.board.lock().get_mut(self.profile) {
            tracked.running = false;
        }
    }
}

const REJECTED_MESSAGE: &str =
    "The owner rejected this registration in Canon; dismiss it to clear it.";

fn map_state(state: &canon_local::ApprovalState) -> (PendingState, Option<String>) {
    use canon_local::{ApprovalState as A, RegistrationPhase};
    match state {
        A::Submitted { .. } | A::Resumed { .. } => (PendingState::Waiting, None),
        A::Waiting {
            phase: RegistrationPhase::Approving,
        } => (PendingState::Approving, None),
        A::Waiting { .. } => (PendingState::Waiting, None),
        A::Retrying { delay, reason, .. } => (
            PendingState::Waiting,
            Some(format!(
                "Canon did not answer ({reason}); retrying in {}s.",
                delay.as_secs().max(1)
            )),
        ),
        A::Approved { agent_name, .. } => (
            PendingState::Approved,
            Some(format!("Registered as {agent_name}.")),
        ),
        A::Rejected => (PendingState::Rejected, Some(REJECTED_MESSAGE.into())),
        A::Expired => (
            PendingState::Expired,
            Some("Stopped waiting for approval; approve again to resume the same request.".into()),
        ),
    }
}

fn map_outcome(outcome: &canon_local::ApprovalOutcome) -> (PendingState, Option<String>) {
    use canon_local::ApprovalOutcome as O;
    match outcome {
        O::Approved { agent_name, .. } => (
            PendingState::Approved,
            Some(format!("Registered as {agent_name}.")),
        ),
        O::Rejected { .. } => (PendingState::Rejected, Some(REJECTED_MESSAGE.into())),
        O::Expired {
            approved_without_key: true,
            ..
        } => (
            PendingState::Expired,
            Some(
                "Canon says it is approved but sent no API key here; it was delivered elsewhere."
                    .into(),
            ),
        ),
        O::Expired { .. } => (
            PendingState::Expired,
            Some("Stopped waiting for approval; approve again to resume the same request.".into()),
        ),
    }
}

/// Profiles whose registration was submitted (it has a request id) and is not finished.
pub fn submitted_profiles(locations: &Locations) -> Vec<String> {
    canon_local::load_pending_registrations(&locations.canon)
        .map(|records| {
            records
                .iter()
                .filter(|(_, p)| p.request_id.is_some())
                .map(|(name, _)| name.to_owned())
                .collect()
        })
        .unwrap_or_default()
}
