//! Pending registrations (`pending-registrations.json`), before and after the approval board's
//! view of them is applied.

use super::problems::canon_problem;
use crate::approvals::ApprovalBoard;
use crate::view::{FileWarning, IgnoredFile, IgnoredLocation, PendingState, PendingView};
use crate::Locations;

/// A pending registration before the approval board's view of it is applied: the board changes
/// without any file changing, so it is applied at every build, never cached. Holds no poll token.
#[derive(Clone, Debug)]
pub(super) struct PendingEntry {
    profile: String,
    client_type: Option<String>,
    submitted: bool,
    created_at: String,
    updated_at: String,
}

impl PendingEntry {
    pub(super) fn view(&self, approvals: &ApprovalBoard) -> PendingView {
        let (state, message) = approvals
            .state_of(&self.profile)
            .unwrap_or(if self.submitted {
                (PendingState::Waiting, None)
            } else {
                (PendingState::Unsubmitted, None)
            });
        PendingView::new(
            self.profile.clone(),
            self.client_type.clone(),
            state,
            self.created_at.clone(),
            self.updated_at.clone(),
            message,
        )
    }
}

/// Pending registrations as views, and the problems reading them.
pub fn pending(
    locations: &Locations,
    approvals: &ApprovalBoard,
) -> (Vec<PendingView>, Vec<IgnoredFile>) {
    let read = read_pending(locations);
    (
        read.entries.iter().map(|p| p.view(approvals)).collect(),
        read.ignored,
    )
}

/// What reading `pending-registrations.json` found.
pub(super) struct PendingRead {
    pub(super) entries: Vec<PendingEntry>,
    pub(super) ignored: Vec<IgnoredFile>,
    pub(super) warning: Option<FileWarning>,
}

pub(super) fn read_pending(locations: &Locations) -> PendingRead {
    let records = match canon_local::load_pending_registrations(&locations.canon) {
        Ok(records) => records,
        Err(e) => {
            return PendingRead {
                entries: Vec::new(),
                ignored: vec![canon_problem(
                    locations,
                    &canon_local::FileProblem::from(&e),
                )],
                warning: None,
            }
        }
    };
    let warning = records.file_warning().map(|reason| FileWarning {
        location: IgnoredLocation::Canon,
        file: "pending-registrations.json".into(),
        reason: reason.to_owned(),
    });
    let ignored = records
        .unrecognized()
        .map(|(name, reason)| IgnoredFile {
            location: IgnoredLocation::Canon,
            file: format!("pending-registrations.json ({name})"),
            reason: reason.to_owned(),
        })
        .collect();
    let entries = records
        .iter()
        .map(|(name, p)| PendingEntry {
            profile: name.to_owned(),
            client_type: p.client_type.clone(),
            submitted: p.request_id.is_some(),
            created_at: p.created_at.clone(),
            updated_at: p.updated_at.clone(),
        })
        .collect();
    PendingRead {
        entries,
        ignored,
        warning,
    }
}
