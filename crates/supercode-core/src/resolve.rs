//! Which runtime the user means: the one rule by which a shell turns what was typed (the NAME
//! `list` shows, or one of the runtime's ids) into one runtime of the inventory, and what it
//! may ask of it (issue 31 item 6).
//!
//! Names come from records any local program can write, so two runtimes may share one, and a
//! name may even read like an id. The rule never guesses between candidates:
//!
//! 1. the inventory `id` (a catalog id when a catalog entry backs the runtime, otherwise its
//!    `lre_…` endpoint) or `endpoint`:
//!    these are what the ID column shows and are unique, so they come first and an id always
//!    reaches its runtime, whatever names other records take;
//! 2. otherwise the runtime id, the catalog id or the display name, all together: one runtime
//!    matching is the one; several are ambiguous, and every candidate is listed with its id.
//!
//! A read: it changes nothing on disk.

use crate::view::{RuntimeStatus, RuntimeView};
use crate::{CoreError, Refusal};

/// One runtime a name could mean, as an ambiguity lists it (plain text from records: the error
/// message renders each field for a terminal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// Its inventory id: what to type instead.
    pub id: String,
    /// Its display name.
    pub name: String,
    /// Its status, as `list` shows it (`running`, `stale`...).
    pub status: &'static str,
    /// Its workspace, when it has one.
    pub workspace: Option<String>,
}

impl Candidate {
    fn of(view: &RuntimeView) -> Self {
        Self {
            id: view.id.clone(),
            name: view.name.clone(),
            status: status_word(view.status),
            workspace: view.workspace.clone(),
        }
    }
}

/// The word `list` shows for a status.
pub fn status_word(status: RuntimeStatus) -> &'static str {
    match status {
        RuntimeStatus::Running => "running",
        RuntimeStatus::Stale => "stale",
        RuntimeStatus::Offline => "offline",
        RuntimeStatus::Manual => "manual",
        RuntimeStatus::Embedded => "embedded",
        RuntimeStatus::Exited => "exited",
    }
}

/// The runtime of `runtimes` that `query` means (see the module's rule):
/// [`CoreError::UnknownRuntime`] when none, [`CoreError::AmbiguousRuntime`] with every
/// candidate when several.
pub fn resolve<'a>(runtimes: &'a [RuntimeView], query: &str) -> Result<&'a RuntimeView, CoreError> {
    let by_id: Vec<&RuntimeView> = runtimes
        .iter()
        .filter(|r| r.id == query || r.endpoint.as_deref() == Some(query))
        .collect();
    let matches = if by_id.is_empty() {
        runtimes
            .iter()
            .filter(|r| {
                r.runtime_id == query || r.catalog_id.as_deref() == Some(query) || r.name == query
            })
            .collect()
    } else {
        by_id
    };
    match matches[..] {
        [] => Err(CoreError::UnknownRuntime {
            query: query.to_owned(),
        }),
        [one] => Ok(one),
        _ => Err(CoreError::AmbiguousRuntime {
            query: query.to_owned(),
            candidates: matches.into_iter().map(Candidate::of).collect(),
        }),
    }
}

/// What a shell asks of a runtime it found by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeAction {
    /// Open it in the browser.
    Attach,
    /// Remove its stale receipt, or its stale catalog entry.
    Forget,
    /// Invoke an action its agent offers.
    Act,
    /// Relaunch it (the plan decides whether it can be).
    Revive,
    /// Take an exited runtime off the list.
    Dismiss,
}

impl RuntimeView {
    /// The id to run `action` on (its endpoint for what needs a receipt), or why it does not
    /// apply now, as the view's own availability says: the shells do not re-derive it.
    pub fn target_for(&self, action: RuntimeAction) -> Result<&str, CoreError> {
        let refused = |reason: Option<&str>| {
            CoreError::from(Refusal::NotAvailable {
                action: match action {
                    RuntimeAction::Attach => "attached",
                    RuntimeAction::Forget => "forgotten",
                    RuntimeAction::Act => "acted on",
                    RuntimeAction::Revive => "revived",
                    RuntimeAction::Dismiss => "dismissed",
                },
                name: self.name.clone(),
                reason: reason.unwrap_or("It is not running.").to_owned(),
            })
        };
        let availability = match action {
            RuntimeAction::Attach => Some(&self.attach),
            RuntimeAction::Forget => Some(&self.forget),
            RuntimeAction::Act if self.status == RuntimeStatus::Running => None,
            RuntimeAction::Act => return Err(refused(self.status_reason.as_deref())),
            // What can never be revived is refused as the view says; otherwise the plan says
            // what runs or why nothing can, in more detail than the view.
            RuntimeAction::Revive if !self.revive.applies => Some(&self.revive),
            RuntimeAction::Revive => return Ok(&self.id),
            RuntimeAction::Dismiss if self.dismiss.available => return Ok(&self.id),
            RuntimeAction::Dismiss => Some(&self.dismiss),
        };
        if let Some(availability) = availability.filter(|a| !a.available) {
            return Err(refused(availability.reason.as_deref()));
        }
        // A catalog entry without a receipt is forgotten by its catalog id.
        if action == RuntimeAction::Forget && self.endpoint.is_none() {
            return Ok(&self.id);
        }
        // Running without a receipt (a catalog entry's pid): attach's reason says why not.
        self.endpoint
            .as_deref()
            .ok_or_else(|| refused(self.attach.reason.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::{ActionAvailability, RuntimeOrigin};

    fn view(id: &str, runtime_id: &str, name: &str, status: RuntimeStatus) -> RuntimeView {
        let live = id.starts_with("lre_");
        RuntimeView {
            id: id.into(),
            endpoint: live.then(|| id.into()),
            runtime_id: runtime_id.into(),
            catalog_id: (!live).then(|| id.into()),
            source: None,
            name: name.into(),
            kind: "demo".into(),
            workspace: None,
            workspace_roots: Vec::new(),
            profile: None,
            agent_name: None,
            status,
            status_reason: None,
            since: None,
            pid: None,
            attach: ActionAvailability::yes(),
            forget: ActionAvailability::never("It is running."),
            revive: ActionAvailability::never("It is already running."),
            dismiss: ActionAvailability::dismiss_not_exited(),
            launch_command: None,
            origin: if live {
                RuntimeOrigin::Receipt
            } else {
                RuntimeOrigin::Catalog
            },
            catalog_status: None,
            revive_capability: None,
            state: None,
            exited: None,
        }
    }

    fn ids(error: CoreError) -> Vec<String> {
        match error {
            CoreError::AmbiguousRuntime { candidates, .. } => {
                candidates.into_iter().map(|c| c.id).collect()
            }
            other => panic!("not ambiguous: {other}"),
        }
    }

    #[test]
    fn a_unique_name_runtime_id_or_id_finds_its_runtime() {
        let runtimes = [
            view("lre_a", "demo:alpha", "alpha", RuntimeStatus::Running),
            view("sdk:beta:1", "sdk:beta:1", "beta", RuntimeStatus::Offline),
        ];
        for query in ["alpha", "demo:alpha", "lre_a"] {
            assert_eq!(resolve(&runtimes, query).unwrap().id, "lre_a", "{query}");
        }
        assert_eq!(resolve(&runtimes, "beta").unwrap().id, "sdk:beta:1");
        assert!(matches!(
            resolve(&runtimes, "gamma"),
            Err(CoreError::UnknownRuntime { .. })
        ));
    }

    #[test]
    fn a_shared_name_picks_none_and_lists_every_candidate() {
        let runtimes = [
            view("lre_a", "demo:one", "twin", RuntimeStatus::Running),
            view("lre_b", "demo:two", "twin", RuntimeStatus::Stale),
            // Its runtime id is another's name: it is a candidate for that name too.
            view("lre_c", "twin", "other", RuntimeStatus::Running),
        ];
        assert_eq!(
            ids(resolve(&runtimes, "twin").unwrap_err()),
            ["lre_a", "lre_b", "lre_c"]
        );
        assert_eq!(resolve(&runtimes, "lre_b").unwrap().id, "lre_b");
    }

    #[test]
    fn an_id_wins_over_a_name_that_copies_it() {
        let runtimes = [
            view("lre_a", "demo:a", "alpha", RuntimeStatus::Running),
            view("lre_b", "demo:b", "lre_a", RuntimeStatus::Running),
        ];
        assert_eq!(resolve(&runtimes, "lre_a").unwrap().id, "lre_a");
    }

    #[test]
    fn an_action_that_does_not_apply_is_refused_with_the_views_reason() {
        let running = view("lre_a", "demo:a", "alpha", RuntimeStatus::Running);
        assert_eq!(running.target_for(RuntimeAction::Attach).unwrap(), "lre_a");
        assert_eq!(running.target_for(RuntimeAction::Act).unwrap(), "lre_a");
        let refused = running.target_for(RuntimeAction::Forget).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "\"alpha\" cannot be forgotten: It is running."
        );
        assert!(running.target_for(RuntimeAction::Revive).is_err());
        let mut stopped = view("sdk:b:1", "sdk:b:1", "beta", RuntimeStatus::Offline);
        stopped.revive = ActionAvailability::yes();
        assert_eq!(
            stopped.target_for(RuntimeAction::Revive).unwrap(),
            "sdk:b:1"
        );
        assert!(stopped.target_for(RuntimeAction::Act).is_err());
    }
}
