//! The core's errors, and their mapping to the one wire format (`view::CommandError`).

use crate::view::{CommandError, ErrorCode};

/// Why a core operation failed; every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// No home directory to put logs and state in.
    #[error("no home directory found; set HOME (or SUPERCODE_LOG_DIR and SUPERCODE_STATE_DIR)")]
    NoHome,
    /// No runtime in the inventory has that id.
    #[error("no runtime with id {id}; run `supercode-tray list` to see the ids")]
    UnknownRuntime {
        /// The id that was asked for.
        id: String,
    },
    /// The action does not apply to this runtime now.
    #[error("{0}")]
    Refused(String),
    /// The launch command is no longer what the user was shown.
    #[error("The launch command of {name} changed since it was shown; review it again.")]
    PlanChanged {
        /// The runtime's display name.
        name: String,
    },
    /// The request does not fit what it acts on.
    #[error("{0}")]
    InvalidRequest(String),
    /// A receipt operation failed.
    #[error(transparent)]
    Receipt(#[from] live_runtime::LiveRuntimeReceiptError),
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
    #[error("{message}")]
    Revive {
        /// What happened, with the tail of the runtime's log when there is one.
        message: String,
    },
    /// The runtime's latest status document does not offer that action; nothing was sent.
    #[error(
        "{name} does not offer \"{action}\" now; run `supercode-tray list` to see what it offers"
    )]
    ActionNotOffered {
        /// The runtime's display name.
        name: String,
        /// The action asked for (sanitized).
        action: String,
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

impl CoreError {
    /// The code the UI branches on.
    pub fn code(&self) -> ErrorCode {
        use live_runtime::LiveRuntimeReceiptError as R;
        match self {
            CoreError::UnknownRuntime { .. } => ErrorCode::NotFound,
            CoreError::Refused(_) => ErrorCode::Refused,
            CoreError::PlanChanged { .. } => ErrorCode::PlanChanged,
            CoreError::InvalidRequest(_) => ErrorCode::InvalidInput,
            CoreError::Receipt(R::NotFound { .. }) => ErrorCode::NotFound,
            CoreError::Receipt(R::StillRunning { .. })
            | CoreError::Receipt(R::Ambiguous { .. }) => ErrorCode::Refused,
            CoreError::Receipt(R::ProcessGone { .. } | R::ProcessMismatch { .. }) => {
                ErrorCode::RuntimeUnavailable
            }
            CoreError::Receipt(R::Secret(_) | R::MissingToken { .. }) => ErrorCode::SecretStore,
            CoreError::Attach(_) => ErrorCode::RuntimeUnavailable,
            CoreError::Approval(canon_local::ApprovalError::NoPendingRegistration { .. }) => {
                ErrorCode::NotFound
            }
            CoreError::Approval(canon_local::ApprovalError::SecretStore(_)) => {
                ErrorCode::SecretStore
            }
            CoreError::Approval(canon_local::ApprovalError::File(_)) => ErrorCode::Internal,
            CoreError::Approval(
                canon_local::ApprovalError::OtherCanon { .. }
                | canon_local::ApprovalError::Client(canon_local::ClientError::InsecureBaseUrl {
                    ..
                }),
            ) => ErrorCode::Refused,
            CoreError::Approval(_) => ErrorCode::Network,
            CoreError::Revive { .. } => ErrorCode::RuntimeUnavailable,
            CoreError::ActionNotOffered { .. }
            | CoreError::NoStatusApi { .. }
            | CoreError::ActionRefused { .. } => ErrorCode::Refused,
            CoreError::ActionTimedOut { .. } | CoreError::ActionFailed { .. } => {
                ErrorCode::RuntimeUnavailable
            }
            _ => ErrorCode::Internal,
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
