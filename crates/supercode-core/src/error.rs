//! The core's errors, and their mapping to the one wire format (`view::CommandError`).
//!
//! Every kind of failure is its own variant, so the code the UI branches on is decided by the
//! compiler from the variant (see [`CoreError::code`]), never by reading a message; the messages
//! are for people and say what to do next.

use crate::inventory::ReviveBlocker;
use crate::revive::ReviveFailure;
use crate::text::{quoted, visible};
use crate::view::{CommandError, ErrorCode};

/// Why a core operation failed; every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// No home directory to put logs and state in.
    #[error("no home directory found; set HOME (or SUPERCODE_LOG_DIR and SUPERCODE_STATE_DIR)")]
    NoHome,
    /// No runtime in the inventory has that name or id: the one wording for "no such runtime"
    /// (it may never have existed, or be gone; nothing is said of a runtime it cannot see).
    #[error("no runtime is named {} or has that id; `supercode-tray list` shows each runtime's NAME and ID", quoted(.query))]
    UnknownRuntime {
        /// The name or id that was asked for.
        query: String,
    },
    /// Several runtimes have that name (or runtime id): none is picked.
    #[error("{} names {} runtimes, so none was picked; use one of their ids:{}", quoted(.query), .candidates.len(), candidate_lines(.candidates))]
    AmbiguousRuntime {
        /// The name that was asked for.
        query: String,
        /// Every runtime it could mean, in the inventory's order.
        candidates: Vec<crate::resolve::Candidate>,
    },
    /// No pending registration has that profile (dismissing it did nothing).
    #[error("no pending registration for {}; `supercode-tray pending` lists them", quoted(.profile))]
    NoSuchRegistration {
        /// The profile that was asked for.
        profile: String,
    },
    /// The action does not apply to this runtime or registration now.
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The launch command is no longer what the user was shown.
    #[error("The launch command of {name} changed since it was shown; review it again.")]
    PlanChanged {
        /// The runtime's display name.
        name: String,
    },
    /// A revive confirmation allowed a variable the launch command does not set.
    #[error("the launch command of {name} sets no variable {variable:?} to allow")]
    NoSuchVariable {
        /// The runtime's display name.
        name: String,
        /// The variable the confirmation named.
        variable: String,
    },
    /// No coding agent has that name.
    #[error("no coding agent is named {agent:?}; the agents are claude-code and codex")]
    UnknownAgent {
        /// The name that was asked for.
        agent: String,
    },
    /// Installing, removing or reading an agent's hooks failed (a refused settings file says
    /// why; it was not changed).
    #[error(transparent)]
    Hooks(#[from] agent_hooks::settings::HooksError),
    /// The agent's settings file changed since the Connect or Disconnect was shown.
    #[error("{path} changed since the change was shown, so nothing was written; review it again.")]
    HooksPlanChanged {
        /// The settings file.
        path: String,
    },
    /// There is no hook program (`supercode-tray-hook`) beside the running one for the hooks to
    /// run.
    #[error("there is no supercode-tray-hook beside this program (in {beside}), so there is nothing for the hooks to run; reinstall Supercode Tray's package")]
    NoHookProgram {
        /// The directory it was looked for in.
        beside: String,
    },
    /// A receipt operation failed. (A receipt that is not there is [`CoreError::UnknownRuntime`]:
    /// see the `From` below.)
    #[error(transparent)]
    Receipt(live_runtime::LiveRuntimeReceiptError),
    /// A `$CANON_HOME` file operation failed.
    #[error(transparent)]
    Canon(#[from] canon_local::CanonFileError),
    /// The approval workflow failed.
    #[error(transparent)]
    Approval(#[from] canon_local::ApprovalError),
    /// The attach proxy failed.
    #[error(transparent)]
    Attach(#[from] attach_proxy::AttachError),
    /// Starting or waiting for a revived runtime failed.
    #[error(transparent)]
    Revive(#[from] ReviveFailure),
    /// Work moved off the async workers (keychain, file and `PATH` reads) did not finish: it
    /// panicked, or the app is shutting down.
    #[error("{what} was interrupted: {source}")]
    Interrupted {
        /// What was being done ("attach", "revive", ...).
        what: &'static str,
        /// Why the blocking task did not finish.
        source: tokio::task::JoinError,
    },
    /// The runtime's latest status document does not offer that action; nothing was sent. What
    /// the document says instead is part of the message, so the reason reaches the user
    /// ("Already answered in the terminal" when a session's terminal answered first).
    #[error(
        "{name} does not offer \"{action}\" now{}; {}",
        it_says(.says.as_deref()),
        it_offers(.offers.as_deref())
    )]
    ActionNotOffered {
        /// The runtime's display name.
        name: String,
        /// The action asked for (sanitized).
        action: String,
        /// The latest document's title (sanitized), when there was a document.
        says: Option<String>,
        /// The ids of the actions that document offers, in order (valid action ids, plain
        /// text), when there was a document.
        offers: Option<Vec<String>>,
    },
    /// The runtime does not serve the status API, so it offers no action.
    #[error("{name} does not serve the status API, so it offers no actions")]
    NoStatusApi {
        /// The runtime's display name.
        name: String,
    },
    /// The runtime refused the action (`409` or `400`), with its reason.
    #[error("{name} refused \"{action}\" ({code}): {reason}")]
    ActionRefused {
        /// The runtime's display name.
        name: String,
        /// The action (sanitized).
        action: String,
        /// The refusal's code (`not-offered`, `stale-revision`, ...).
        code: String,
        /// The runtime's message, sanitized and capped.
        reason: String,
    },
    /// The runtime did not answer the action call in time; it may still run it.
    #[error("{name} did not answer \"{action}\" within {after:?}; it may still run it, so check its state before trying again")]
    ActionTimedOut {
        /// The runtime's display name.
        name: String,
        /// The action (sanitized).
        action: String,
        /// How long the tray waited.
        after: std::time::Duration,
    },
    /// The action call could not reach the runtime.
    #[error("could not ask {name} to \"{action}\": {reason}")]
    ActionFailed {
        /// The runtime's display name.
        name: String,
        /// The action (sanitized).
        action: String,
        /// What failed (never the token or the address).
        reason: String,
    },
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Why an action does not apply now: each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The core is shutting down, so an action did not run or finish.
    #[error("Supercode Tray is quitting, so it did not {what}.")]
    Quitting {
        /// What did not happen ("approve \"agent-a\"").
        what: String,
    },
    /// Revive of a runtime whose process is alive.
    #[error("{name} is already running.")]
    AlreadyRunning {
        /// The runtime's display name (or runtime id).
        name: String,
    },
    /// Revive of a runtime whose record says it cannot be revived, or cannot be run as recorded.
    #[error("Cannot revive {name}: {why}")]
    CannotRevive {
        /// The runtime's display name.
        name: String,
        /// What stands in the way.
        why: ReviveBlocker,
    },
    /// Revive of a live receipt that records no launch command.
    #[error("{runtime_id} was started by hand; start it again the same way.")]
    StartedByHand {
        /// The receipt's runtime id.
        runtime_id: String,
    },
    /// The launch command sets variables the user has not allowed for it.
    #[error(
        "Not reviving {name}: its launch command sets {}. {}. A variable can make the program run other code, read other files or send its requests elsewhere: allow {} for this runtime only if you trust the value shown.",
        names(.variables),
        reasons(.variables),
        it_or_them(.variables)
    )]
    UnallowedVariables {
        /// The runtime's display name.
        name: String,
        /// Each refused variable, with why it needs allowing.
        variables: Vec<(String, String)>,
    },
    /// Attach to a runtime whose receipt is stale.
    #[error(
        "{runtime_id} cannot be attached: {reason}. Forget it, or revive it if it is revivable."
    )]
    StaleReceipt {
        /// The receipt's runtime id.
        runtime_id: String,
        /// Why the receipt is stale.
        reason: String,
    },
    /// Approve of a registration whose approval is already running.
    #[error("The registration for \"{profile}\" is already being approved.")]
    ApprovalRunning {
        /// The registration's profile.
        profile: String,
    },
    /// Reject of a registration whose approval is running.
    #[error(
        "The registration for \"{profile}\" is being approved right now; wait for it to finish."
    )]
    RejectWhileApproving {
        /// The registration's profile.
        profile: String,
    },
    /// An agent action chosen from a status document whose prompt is no longer the runtime's:
    /// nothing was sent, and the shells show the new one.
    #[error(
        "The prompt of {name} changed since it was shown, so \"{action}\" did not run; look again."
    )]
    PromptChanged {
        /// The runtime's display name.
        name: String,
        /// The action (sanitized).
        action: String,
    },
    /// An action asked of a runtime it does not apply to now, with the inventory's reason (the
    /// one the window shows beside the disabled button).
    #[error("{} cannot be {action}: {}", quoted(.name), visible(.reason))]
    NotAvailable {
        /// What would have been done to it ("attached", "forgotten"...).
        action: &'static str,
        /// The runtime's display name.
        name: String,
        /// The view's reason.
        reason: String,
    },
    /// An agent action asked of a runtime whose process is gone.
    #[error("{name} is not running ({reason}), so it offers no actions")]
    NotRunning {
        /// The runtime's display name.
        name: String,
        /// Why its receipt is stale.
        reason: String,
    },
}

/// One line per candidate, each field shown for a terminal (records may hold anything, a line
/// break included): `  ID  STATUS  "NAME"  WORKSPACE`.
fn candidate_lines(candidates: &[crate::resolve::Candidate]) -> String {
    candidates
        .iter()
        .map(|c| {
            let workspace = c.workspace.as_deref().map(visible).unwrap_or_default();
            format!(
                "\n  {}  {}  {}  {workspace}",
                visible(&c.id),
                c.status,
                quoted(&c.name)
            )
            .trim_end()
            .to_owned()
        })
        .collect()
}

fn names(variables: &[(String, String)]) -> String {
    let names: Vec<&str> = variables.iter().map(|(n, _)| n.as_str()).collect();
    names.join(", ")
}

fn it_or_them(variables: &[(String, String)]) -> &'static str {
    if variables.len() == 1 {
        "it"
    } else {
        "them"
    }
}

fn reasons(variables: &[(String, String)]) -> String {
    let reasons: Vec<&str> = variables.iter().map(|(_, r)| r.as_str()).collect();
    reasons.join("; ")
}

impl CoreError {
    /// The code the UI branches on: `notFound` (the list is out of date and the thing is gone),
    /// `refused` (the list is out of date: what it showed as available is not), `planChanged`
    /// (show the new plan), and `internal` for everything the UI only shows.
    pub fn code(&self) -> ErrorCode {
        use canon_local::ApprovalError as A;
        use live_runtime::LiveRuntimeReceiptError as R;
        match self {
            CoreError::UnknownRuntime { .. }
            | CoreError::NoSuchRegistration { .. }
            | CoreError::Approval(A::NoPendingRegistration { .. }) => ErrorCode::NotFound,
            CoreError::Refused(_)
            | CoreError::AmbiguousRuntime { .. }
            | CoreError::Receipt(R::StillRunning { .. } | R::Ambiguous { .. })
            | CoreError::Approval(
                A::OtherCanon { .. } | A::Client(canon_local::ClientError::InsecureBaseUrl { .. }),
            ) => ErrorCode::Refused,
            CoreError::PlanChanged { .. } | CoreError::HooksPlanChanged { .. } => {
                ErrorCode::PlanChanged
            }
            CoreError::Hooks(
                agent_hooks::settings::HooksError::Refused { .. }
                | agent_hooks::settings::HooksError::NotSettings { .. },
            ) => ErrorCode::Refused,
            CoreError::UnknownAgent { .. }
            | CoreError::Hooks(_)
            | CoreError::NoHookProgram { .. } => ErrorCode::Internal,
            CoreError::NoHome
            | CoreError::NoSuchVariable { .. }
            | CoreError::Receipt(_)
            | CoreError::Canon(_)
            | CoreError::Approval(_)
            | CoreError::Attach(_)
            | CoreError::Revive(_)
            | CoreError::Interrupted { .. }
            | CoreError::Io { .. } => ErrorCode::Internal,
            CoreError::ActionNotOffered { .. }
            | CoreError::NoStatusApi { .. }
            | CoreError::ActionRefused { .. } => ErrorCode::Refused,
            CoreError::ActionTimedOut { .. } | CoreError::ActionFailed { .. } => {
                ErrorCode::Internal
            }
        }
    }
}

impl From<live_runtime::LiveRuntimeReceiptError> for CoreError {
    /// A receipt that is not there (gone between the list and the action, or never there) is
    /// told in the one wording for "no such runtime".
    fn from(error: live_runtime::LiveRuntimeReceiptError) -> Self {
        match error {
            live_runtime::LiveRuntimeReceiptError::NotFound { what } => {
                CoreError::UnknownRuntime { query: what }
            }
            other => CoreError::Receipt(other),
        }
    }
}

impl From<CoreError> for CommandError {
    fn from(error: CoreError) -> Self {
        CommandError {
            code: error.code(),
            message: error.to_string(),
        }
    }
}

fn it_offers(offers: Option<&[String]>) -> String {
    match offers {
        None => "run `supercode-tray list --json` to see what it offers".to_owned(),
        Some([]) => "it offers no action now".to_owned(),
        Some(ids) => format!("it offers: {}", ids.join(", ")),
    }
}

fn it_says(title: Option<&str>) -> String {
    title
        .map(|t| format!(": it says \"{t}\""))
        .unwrap_or_default()
}
