//! The browser-safe views the UI and `list --json` show.
//!
//! These types cross to the webview, so none of them holds a `Sensitive` value: a token, poll token,
//! API key or loopback address cannot be put in one without a compile error. They are exported to
//! TypeScript with `ts-rs` into `ui/src/bindings/`; `tests/bindings.rs` fails when the committed
//! files drift from these definitions.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What state a runtime is in, as the user sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum RuntimeStatus {
    /// Its process is alive and its receipt verified (or the catalog saw a live pid).
    Running,
    /// Its record claims a process that is gone or now another process.
    Stale,
    /// Stopped cleanly; may be revivable.
    Offline,
    /// Started by hand; the tray cannot relaunch it.
    Manual,
    /// Runs inside another host process.
    Embedded,
    /// Stopped unexpectedly, and the tray cannot relaunch it: shown with its last state until
    /// the user dismisses it (see [`crate::exited`]).
    Exited,
}

/// Whether an action applies to a runtime, and why not when it does not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct ActionAvailability {
    /// True when the action can be run now.
    pub available: bool,
    /// Why the action is not available; `None` when it is.
    pub reason: Option<String>,
    /// False when the action can never apply to the thing as it is (revive on a running
    /// runtime, forget on a running one, attach on a stale one): the shells leave it out
    /// rather than show it disabled on every card (issue 31). True when it can run, or could
    /// once something changes (a profile in use, a lock to fix): then it is shown with `reason`.
    pub applies: bool,
}

impl ActionAvailability {
    /// The action can be run.
    pub fn yes() -> Self {
        Self {
            available: true,
            reason: None,
            applies: true,
        }
    }

    /// The action cannot be run now, for the given reason; it is shown, disabled, with it.
    pub fn no(reason: impl Into<String>) -> Self {
        Self {
            available: false,
            reason: Some(reason.into()),
            applies: true,
        }
    }

    /// The action can never apply to the thing as it is, for the given reason: it is not shown.
    pub fn never(reason: impl Into<String>) -> Self {
        Self {
            available: false,
            reason: Some(reason.into()),
            applies: false,
        }
    }
}

/// The source session a live runtime continues.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SourceView {
    /// The source session id.
    pub session_id: String,
    /// The source workspace.
    pub workspace: String,
}

/// Which record a runtime view was built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum RuntimeOrigin {
    /// A live-runtime receipt only.
    Receipt,
    /// A `@canonmsg/core` catalog entry only.
    Catalog,
    /// A live receipt linked to its catalog entry.
    Both,
    /// The tray's record of a runtime that stopped unexpectedly ([`crate::exited`]).
    Exited,
}

/// One runtime in the inventory.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeView {
    /// Inventory id, the same while the runtime is running, stale, revived or exited: its
    /// catalog id when a catalog entry backs it, otherwise its receipt's opaque endpoint (issue
    /// 31). Every action takes it; `endpoint` is the receipt it acts on now.
    pub id: String,
    /// The opaque live-runtime endpoint, when a receipt backs this runtime.
    pub endpoint: Option<String>,
    /// The runtime's stable id (live-runtime `runtime_id`, or the catalog id).
    pub runtime_id: String,
    /// The `@canonmsg/core` catalog id, when a catalog entry backs this runtime.
    pub catalog_id: Option<String>,
    /// The source session and workspace the receipt belongs to.
    pub source: Option<SourceView>,
    /// Display name: agent name, display name, profile or runtime id.
    pub name: String,
    /// Runtime kind (`claude-code`, `codex`, `sdk`, `demo`, ...).
    pub kind: String,
    /// The workspace it serves.
    pub workspace: Option<String>,
    /// Every workspace root it serves.
    pub workspace_roots: Vec<String>,
    /// The Canon profile it runs as, if any.
    pub profile: Option<String>,
    /// The agent's name, if it has one.
    pub agent_name: Option<String>,
    /// Current status.
    pub status: RuntimeStatus,
    /// Why the status is what it is, when that is not obvious (stale, missing profile...).
    pub status_reason: Option<String>,
    /// When it registered, last started or stopped (RFC 3339).
    pub since: Option<String>,
    /// Its process id, when known.
    pub pid: Option<u32>,
    /// Open it in the browser.
    pub attach: ActionAvailability,
    /// Remove its stale receipt.
    pub forget: ActionAvailability,
    /// Relaunch it from its recorded launch command.
    pub revive: ActionAvailability,
    /// Take an exited runtime off the list: applies only to one that has exited.
    pub dismiss: ActionAvailability,
    /// The command revive would run, shown to the user before it runs.
    pub launch_command: Option<Vec<String>>,
    /// The `status` of the catalog entry behind this runtime exactly as `@canonmsg/core`'s
    /// `listLocalRuntimeEntries` derives it (`running`, `offline`, `stale`, `manual`, `embedded`,
    /// or a newer value as written); `None` without a catalog entry. `status` above is the tray's
    /// own reading, which also weighs the live receipt.
    #[ts(type = "string | null")]
    pub catalog_status: Option<canon_local::LocalRuntimeStatus>,
    /// The catalog entry's `reviveCapability` exactly as the package derives it (`revivable`,
    /// `manual`, `embedded`, `missing-profile`, or a newer value as written); `None` without a
    /// catalog entry. Whether the tray can revive it now, and why not, is `revive`.
    #[ts(type = "string | null")]
    pub revive_capability: Option<canon_local::ReviveCapability>,
    /// Which record(s) this view was built from.
    pub origin: RuntimeOrigin,
    /// What its agent is doing, from the runtime's status API (`docs/runtime-api.md`); `None`
    /// for a runtime that is not running.
    pub state: Option<AgentStateView>,
    /// When it exited and what its agent last showed; `None` unless its status is `exited`.
    pub exited: Option<ExitedView>,
}

/// What is known of a runtime that stopped unexpectedly (status `exited`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ExitedView {
    /// When its death was seen (RFC 3339).
    pub at: String,
    /// What its agent last showed (state, title, detail, since; no actions), when the tray was
    /// watching it then. Shown for the record: it needs no one now.
    pub last_state: Option<AgentStateView>,
}

impl ActionAvailability {
    /// Dismiss, on a runtime that has not exited.
    pub fn dismiss_not_exited() -> Self {
        Self::never("Only a runtime that has exited can be dismissed.")
    }
}

/// What an agent is doing: one of the API's five states, or one the tray derives itself. Its
/// names are serde's, for reading a runtime's document as for the bindings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, TS)]
#[serde(rename_all = "kebab-case")]
pub enum AgentState {
    /// Busy; nothing is asked of the user.
    Working,
    /// Blocked on a permission or tool approval.
    NeedsApproval,
    /// Its turn is over or it asked a question: it waits for the user.
    NeedsInput,
    /// Nothing to do and nothing asked.
    Idle,
    /// It failed and cannot go on by itself.
    Error,
    /// Derived: the runtime does not serve the status API (or has not answered yet).
    Unknown,
    /// Derived: its process is alive but its endpoint does not answer.
    NotAnswering,
}

impl AgentState {
    /// Every state, for tests that walk all of them through each shell.
    pub const ALL: [AgentState; 7] = [
        AgentState::Working,
        AgentState::NeedsApproval,
        AgentState::NeedsInput,
        AgentState::Idle,
        AgentState::Error,
        AgentState::Unknown,
        AgentState::NotAnswering,
    ];

    /// The agent waits for the user: notify, sort first, count it in "N need you", mark its card
    /// and change the tray icon. An agent in `error` cannot go on by itself either, so it needs
    /// the user as much as a question does (issue 31).
    pub fn needs_you(self) -> bool {
        matches!(
            self,
            AgentState::NeedsApproval | AgentState::NeedsInput | AgentState::Error
        )
    }

    /// The tray's own conclusion (`unknown`, `not-answering`), never a state a runtime reports.
    pub fn is_derived(self) -> bool {
        matches!(self, AgentState::Unknown | AgentState::NotAnswering)
    }

    /// Something went wrong that the user should hear about (a notification, not an icon).
    pub fn is_trouble(self) -> bool {
        matches!(self, AgentState::Error | AgentState::NotAnswering)
    }

    /// Where a runtime in this state sorts: lower first. Every state that [needs
    /// you](AgentState::needs_you) sorts before every one that does not, then trouble, then the
    /// rest.
    pub fn urgency(self) -> u8 {
        match self {
            AgentState::NeedsApproval => 0,
            AgentState::NeedsInput => 1,
            AgentState::Error => 2,
            AgentState::NotAnswering => 3,
            AgentState::Working => 4,
            AgentState::Idle => 5,
            AgentState::Unknown => 6,
        }
    }
}

/// An action the runtime's latest status document offers, sanitized (`docs/runtime-api.md`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AgentActionView {
    /// Its machine name, validated (`^[a-z0-9][a-z0-9._-]{0,63}$`).
    pub id: String,
    /// The button or menu text (plain text, capped).
    pub label: String,
    /// It discards work or refuses the agent: styled apart.
    pub destructive: bool,
    /// The question every shell asks before invoking it, or `None` to invoke it at once: decided
    /// here, once ([`AgentActionView::new`]), never by a shell (plain text, capped).
    pub confirm: Option<String>,
}

impl AgentActionView {
    /// An offered action, with the one rule of whether to ask before acting: ask the runtime's
    /// own question (`question`) when it gave one, a generic one for a destructive action
    /// without one, and nothing otherwise.
    pub fn new(id: String, label: String, destructive: bool, question: Option<String>) -> Self {
        let confirm = question.or_else(|| {
            destructive.then(|| {
                format!(
                    "\"{label}\" discards the agent's work or refuses what it asked, and cannot be undone. Go ahead?"
                )
            })
        });
        Self {
            id,
            label,
            destructive,
            confirm,
        }
    }
}

/// Which kind of client drives an agent (serde's names are the API's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ControllerKind {
    /// A terminal.
    Terminal,
    /// An IDE.
    Ide,
    /// A browser.
    Browser,
    /// Nobody drives it now, or the runtime cannot tell.
    None,
}

/// Which client drives an agent, as the runtime reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ControllerView {
    /// The kind of client.
    pub kind: ControllerKind,
    /// Which one, for people ("VS Code"), when the runtime said.
    pub label: Option<String>,
}

/// A running runtime's live agent state, sanitized: every string is plain text, capped and free
/// of control characters, so the shells render it as text and nothing else.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct AgentStateView {
    /// The state.
    pub value: AgentState,
    /// What it is doing or asking, for people; `None` while `unknown`.
    pub title: Option<String>,
    /// More about it (e.g. the command it wants to run); may contain line breaks.
    pub detail: Option<String>,
    /// When it entered this state (RFC 3339), as the runtime said or the tray saw.
    pub since: Option<String>,
    /// The actions it offers now, in order; empty unless the runtime answers.
    pub actions: Vec<AgentActionView>,
    /// Which client drives it; `None` while `unknown` or `not-answering`.
    pub controller: Option<ControllerView>,
    /// How many clients other than this tray watch it; `None` while `unknown` or
    /// `not-answering`. The runtime counts every open status stream, the tray's own included
    /// (`docs/runtime-api.md`); a document read over that stream is counted without it, so no
    /// shell shows "1 watching" for the tray itself (issue 31).
    pub observers: Option<u32>,
    /// The `revision` of the status document this view shows; `None` without one. A shell that
    /// invokes one of `actions` sends it back, and the core refuses the action
    /// ([`Refusal::PromptChanged`](crate::Refusal::PromptChanged)) once the runtime's prompt
    /// changed after it: what the user acts on is what they were shown.
    #[ts(type = "number | null")]
    pub revision: Option<u64>,
}

impl AgentStateView {
    /// The state of a runtime the tray has not heard from (or that does not serve the API).
    pub fn unknown() -> Self {
        Self {
            value: AgentState::Unknown,
            title: None,
            detail: None,
            since: None,
            actions: Vec::new(),
            controller: None,
            observers: None,
            revision: None,
        }
    }
}

/// Where an ignored file was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum IgnoredLocation {
    /// The live-runtime receipt directory.
    Receipts,
    /// `$CANON_HOME`.
    Canon,
    /// The tray's own state directory.
    State,
}

/// A file the inventory ignored, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct IgnoredFile {
    /// Where it was found.
    pub location: IgnoredLocation,
    /// Its file name (or path relative to the location).
    pub file: String,
    /// Why it was ignored, for people.
    pub reason: String,
}

/// A file that was read and used, but that the user should fix: its mode lets other users read
/// it (`@canonmsg/core` writes 0600). It is left as it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct FileWarning {
    /// Where it was found.
    pub location: IgnoredLocation,
    /// Its file name (or path relative to the location).
    pub file: String,
    /// What is wrong and what to do, for people.
    pub reason: String,
}

/// Where a pending registration stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum PendingState {
    /// Recorded locally, not yet sent to Canon.
    Unsubmitted,
    /// Sent; waiting for the owner to approve it in Canon.
    Waiting,
    /// Canon is finishing the approval.
    Approving,
    /// Approved; the profile was saved.
    Approved,
    /// The owner rejected it; dismiss it to clear it.
    Rejected,
    /// Polling stopped at its deadline; approve again to resume.
    Expired,
    /// The last attempt failed; see the message.
    Error,
}

impl PendingState {
    /// Whether asking Canon for approval can be done in this state, and why not: the one rule
    /// the window, the tray menu and the CLI render.
    pub fn approve(self) -> ActionAvailability {
        match self {
            PendingState::Unsubmitted | PendingState::Waiting | PendingState::Error => {
                ActionAvailability::yes()
            }
            // Polling stopped at its deadline; approving again resumes it.
            PendingState::Expired => ActionAvailability::yes(),
            PendingState::Approving => ActionAvailability::no("Canon is finishing the approval."),
            PendingState::Approved => {
                ActionAvailability::no("It is already approved; the profile was saved.")
            }
            PendingState::Rejected => ActionAvailability::no(
                "It was rejected in Canon; dismiss it, and register the agent again if you still want it.",
            ),
        }
    }

    /// True once the registration has ended (approved or rejected): only dismissing is left.
    pub fn is_over(self) -> bool {
        matches!(self, PendingState::Approved | PendingState::Rejected)
    }

    /// Every state, for tests that walk all of them through each shell.
    pub const ALL: [PendingState; 7] = [
        PendingState::Unsubmitted,
        PendingState::Waiting,
        PendingState::Approving,
        PendingState::Approved,
        PendingState::Rejected,
        PendingState::Expired,
        PendingState::Error,
    ];
}

/// A pending agent registration, without its poll token.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct PendingView {
    /// The profile it will be saved as.
    pub profile: String,
    /// The runtime kind it is for.
    pub client_type: Option<String>,
    /// Where it stands.
    pub state: PendingState,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339).
    pub updated_at: String,
    /// A human explanation of the state, when there is one.
    pub message: Option<String>,
    /// Whether it can be approved (or the approval resumed or retried) now, and why not.
    pub approve: ActionAvailability,
    /// Whether it can be dismissed now: always, since dismissing a registration that has not
    /// ended rejects it, and one in flight is cancelled first.
    pub dismiss: ActionAvailability,
    /// True once it has ended (approved or rejected): dismissing only clears it, where
    /// otherwise dismissing it rejects it.
    pub over: bool,
}

impl PendingView {
    /// The view of a registration in `state`; the availabilities follow from the state.
    pub fn new(
        profile: String,
        client_type: Option<String>,
        state: PendingState,
        created_at: String,
        updated_at: String,
        message: Option<String>,
    ) -> Self {
        Self {
            profile,
            client_type,
            state,
            created_at,
            updated_at,
            message,
            approve: state.approve(),
            dismiss: ActionAvailability::yes(),
            over: state.is_over(),
        }
    }
}

/// Which kind of secret store holds the tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum SecretStoreKindView {
    /// The OS keychain.
    Keychain,
    /// The opt-in plaintext file store.
    File,
}

/// Which secret store is in use, always visible to the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct SecretStoreView {
    /// Keychain or file.
    pub kind: SecretStoreKindView,
    /// A sentence for people.
    pub description: String,
}

/// Everything the window shows, in one value.
#[derive(Clone, Debug, PartialEq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    /// Every runtime, live ones first, newest first.
    pub runtimes: Vec<RuntimeView>,
    /// Files that were ignored, with reasons.
    pub ignored: Vec<IgnoredFile>,
    /// Files that were used, but should be fixed, with reasons.
    pub warnings: Vec<FileWarning>,
    /// Pending agent registrations.
    pub pending: Vec<PendingView>,
    /// The secret store in use.
    pub secret_store: SecretStoreView,
    /// True until the tray has seen its first runtime.
    pub first_run: bool,
    /// The receipt directory being watched.
    pub receipt_dir: String,
    /// The Canon home being watched.
    pub canon_home: String,
    /// What the shells count, counted once here.
    pub counts: SnapshotCounts,
}

impl Snapshot {
    /// Puts the runtimes in the order every shell shows them, and counts them (once, here):
    /// running ones first, and among them the ones whose agent needs you first, most urgent
    /// first ([`AgentState::urgency`]); ties keep the inventory's order (newest first).
    pub fn order(&mut self) {
        self.runtimes.sort_by_key(|r| {
            (
                r.status != RuntimeStatus::Running,
                r.state.as_ref().map_or(u8::MAX, |s| s.value.urgency()),
            )
        });
        self.counts = SnapshotCounts::of(&self.runtimes, &self.pending);
    }

    /// Whether every running runtime shows what its agent is doing: `false` while one's state is
    /// still `unknown`, as each is until its first status document arrives (and as a runtime
    /// that does not serve the status API stays).
    pub fn agent_states_known(&self) -> bool {
        self.runtimes
            .iter()
            .filter(|r| r.status == RuntimeStatus::Running && r.origin != RuntimeOrigin::Catalog)
            .all(|r| {
                r.state
                    .as_ref()
                    .is_some_and(|s| s.value != AgentState::Unknown)
            })
    }
}

/// Something about the desktop the window tells the user (the tray icon cannot show here),
/// decided by the core ([`crate::doctor::tray_host_notice`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct DesktopNotice {
    /// One line: what is wrong.
    pub title: String,
    /// What it means and what to do.
    pub detail: String,
}

/// How many runtimes and registrations are in the states the window's header and the tray's
/// tooltip and icon count: one definition for every shell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotCounts {
    /// Runtimes whose process is alive ([`RuntimeStatus::Running`]).
    pub running: u32,
    /// Runtimes whose record claims a process that is gone.
    pub stale: u32,
    /// Runtimes that stopped unexpectedly and are shown until dismissed ([`RuntimeStatus::Exited`]).
    pub exited: u32,
    /// Registrations that have not ended: they wait for the owner, for Canon or for the user
    /// to approve again.
    pub awaiting_approval: u32,
    /// Running runtimes whose agent waits for the user ([`AgentState::needs_you`]).
    pub needs_you: u32,
}

impl SnapshotCounts {
    /// The counts of `runtimes` and `pending`.
    pub fn of(runtimes: &[RuntimeView], pending: &[PendingView]) -> Self {
        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let with = |status| runtimes.iter().filter(|r| r.status == status).count();
        Self {
            running: count(with(RuntimeStatus::Running)),
            stale: count(with(RuntimeStatus::Stale)),
            exited: count(with(RuntimeStatus::Exited)),
            awaiting_approval: count(pending.iter().filter(|p| !p.over).count()),
            needs_you: count(
                runtimes
                    .iter()
                    .filter(|r| r.state.as_ref().is_some_and(|s| s.value.needs_you()))
                    .count(),
            ),
        }
    }
}

/// What invoking an agent's action did: the runtime accepted it (its effect arrives as the
/// next status documents).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct ActOutcome {
    /// The inventory id of the runtime.
    pub id: String,
    /// The action id that was accepted.
    pub action: String,
    /// A human summary ("demo-alpha accepted Approve").
    pub message: String,
}

/// What a revive did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct ReviveOutcome {
    /// The inventory id that was revived.
    pub id: String,
    /// A human summary ("demo-alpha is running again (PID 1234)").
    pub message: String,
}

/// One environment variable a revive sets, as the confirmation shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct PlanEnvVar {
    /// Its name.
    pub name: String,
    /// Its value, exactly as it will be set.
    pub value: String,
    /// It is not one of the few harmless variables (with a plain value), so it runs only once
    /// allowed for this runtime.
    pub needs_allow: bool,
    /// The user allowed this exact value for this runtime before.
    pub allowed: bool,
    /// Why it needs allowing, for people; `None` when it does not.
    pub reason: Option<String>,
}

/// Everything a revive will run, shown before it runs; the revive sends `digest` back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct RevivePlanView {
    /// The inventory id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The program as an absolute path, exactly what is started.
    pub program: String,
    /// The program as the record names it, before the `PATH` lookup.
    pub recorded_program: String,
    /// Its arguments, one per element.
    pub args: Vec<String>,
    /// Its working directory.
    pub cwd: String,
    /// Every variable it sets on top of the app's own environment, sorted by name.
    pub env: Vec<PlanEnvVar>,
    /// The Canon profile it runs as.
    pub profile: Option<String>,
    /// A digest of this plan; a revive carrying another one is refused (`planChanged`).
    pub digest: String,
    /// Whether it can run as shown; the reason names each variable still to be allowed.
    pub run: ActionAvailability,
}

/// Whether a coding agent's sessions reach the tray through our hooks, as `hooks status` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum AgentConnection {
    /// Every hook entry is in its settings and the program they run exists.
    Connected,
    /// Some entries are missing, or the program they run is gone.
    Partly,
    /// No entry of ours is in its settings.
    NotConnected,
    /// Its settings file was refused (a link, another user's, not JSON, too big...).
    Problem,
}

/// One coding agent in the window's "Coding agents" section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct CodingAgentView {
    /// Its name on the command line (`claude-code`), which the window sends back.
    pub agent: String,
    /// Its name for people ("Claude Code").
    pub title: String,
    /// The settings file our hooks go in.
    pub settings: String,
    /// Whether it is connected.
    pub connection: AgentConnection,
    /// The state for people ("connected", "partly connected (missing: Stop)", the problem...).
    pub summary: String,
    /// For an agent that runs only hooks the user trusted in it (Codex): what is still to do
    /// there, if anything; `None` when nothing is.
    pub trust: Option<String>,
    /// Whether Connect applies (it adds what is missing) and why not.
    pub connect: ActionAvailability,
    /// Whether Disconnect applies (it removes what Connect added) and why not.
    pub disconnect: ActionAvailability,
}

/// Connect or Disconnect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum HooksChange {
    /// Add our hook entries.
    Connect,
    /// Remove exactly our hook entries.
    Disconnect,
}

/// What a Connect or Disconnect changes, shown before it is made; the change sends `digest`
/// back and is refused (`planChanged`) when the file no longer makes this plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct HooksPlanView {
    /// The agent (`claude-code`).
    pub agent: String,
    /// Its name for people.
    pub title: String,
    /// Connect or Disconnect.
    pub change: HooksChange,
    /// The settings file changed.
    pub settings: String,
    /// Exactly what goes in or comes out, as `hooks install|remove` prints it.
    pub preview: String,
    /// Where the previous file is kept; `None` when there is no file yet.
    pub backup: Option<String>,
    /// True when there is nothing to change.
    pub nothing_to_do: bool,
    /// Something about the file the user should fix (its mode), if any.
    pub warning: Option<String>,
    /// A digest of the file as read and the file as it will be written.
    pub digest: String,
}

/// What a Connect or Disconnect did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct HooksOutcome {
    /// The agent (`claude-code`).
    pub agent: String,
    /// A human summary, with what is left to do (Codex: trust the hooks in Codex).
    pub message: String,
}

/// What kind of failure a command met: only the kinds the window branches on. Everything else
/// is [`ErrorCode::Internal`], and its message says what happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum ErrorCode {
    /// No runtime or registration with that id: the window's list is out of date and the thing
    /// is gone, so the window refreshes the list and says so at the top (the row goes away).
    NotFound,
    /// The action does not apply right now (e.g. forget on a running runtime): the window's list
    /// is out of date, so it refreshes the list and shows the message on the row.
    Refused,
    /// The revive plan, or a coding agent's Connect/Disconnect plan, changed since it was shown:
    /// the window shows the new one and asks again.
    PlanChanged,
    /// Anything else; the window only shows the message.
    Internal,
}

impl ErrorCode {
    /// Every code, written into the UI's bindings so it recognizes the wire format.
    pub const ALL: [ErrorCode; 4] = [
        ErrorCode::NotFound,
        ErrorCode::Refused,
        ErrorCode::PlanChanged,
        ErrorCode::Internal,
    ];
}

/// The one error format at the IPC boundary: a code to branch on and a message for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, TS)]
pub struct CommandError {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What happened and what to do next.
    pub message: String,
}

/// The names of the events the app sends the window (Tauri events), written into the UI's
/// bindings so both sides use the same strings.
pub mod events {
    /// Carries a fresh [`Snapshot`](super::Snapshot) whenever the inventory changes.
    pub const SNAPSHOT: &str = "supercode://snapshot";
    /// Asks the window to show one runtime's revive confirmation (payload: its id).
    pub const CONFIRM_REVIVE: &str = "supercode://confirm-revive";
    /// Asks the window to confirm one action of a runtime's agent (payload: `{ id, action }`):
    /// the tray menu cannot ask before a destructive action, the window can.
    pub const CONFIRM_ACT: &str = "supercode://confirm-act";
}

#[cfg(test)]
mod tests {
    use super::*;

    // The shells show the core's order and no other (issue 30): so an agent that needs you must
    // sort before every one that does not (`not-answering` once tied with `error`).
    #[test]
    fn every_state_that_needs_you_sorts_before_every_one_that_does_not() {
        for a in AgentState::ALL {
            for b in AgentState::ALL {
                if a.needs_you() && !b.needs_you() {
                    assert!(a.urgency() < b.urgency(), "{a:?} sorts before {b:?}");
                }
            }
        }
    }
}
