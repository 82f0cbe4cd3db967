//! What the core tells its shell: the events of background work and actions, and the sink
//! the shell gives the core for them, so the shell decides how each is shown.

use std::sync::Arc;

use crate::view::{AgentActionView, AgentState, Snapshot};

/// Something the shell may want to show the user.
#[derive(Clone, Debug)]
pub enum CoreEvent {
    /// The inventory changed; here is all of it. Shared: the watcher, the tray and the window's
    /// event hold one copy (at 10,000 runtimes a copy is megabytes).
    Snapshot(Arc<Snapshot>),
    /// A live runtime's process exited without unregistering.
    RuntimeDied {
        /// Its display name.
        name: String,
        /// Whether the inventory now offers to revive it (a catalog entry the tray can
        /// relaunch), so what the user is told offers Revive only when it can be done.
        revivable: bool,
    },
    /// A registration started waiting for approval.
    RegistrationWaiting {
        /// The profile it will be saved as.
        profile: String,
    },
    /// A running runtime's agent entered a state the user should hear about
    /// ([`crate::view::AgentState::needs_you`] or [`crate::view::AgentState::is_trouble`]): sent once per entry
    /// into such a state, at most one per runtime for a burst of changes, and not again for the
    /// same unchanged question after a brief stall (`not-answering` and back). Carries nothing
    /// secret.
    AgentAlert {
        /// The runtime's inventory id.
        id: String,
        /// Its display name.
        name: String,
        /// The state it entered.
        state: AgentState,
        /// What it is doing or asking (sanitized plain text), when it said.
        title: Option<String>,
        /// More about it (sanitized plain text, may hold line breaks): the command an approval
        /// is for, or why a runtime is `not-answering`.
        detail: Option<String>,
        /// The actions it offers now, in order (empty unless the runtime answers).
        actions: Vec<AgentActionView>,
        /// The revision of the status document that offered them (`None` for a state the
        /// tray derives): an action taken from this alert is for this document only.
        revision: Option<u64>,
    },
}

/// Where core events go: a closure the shell provides.
pub type EventSink = Arc<dyn Fn(CoreEvent) + Send + Sync>;
