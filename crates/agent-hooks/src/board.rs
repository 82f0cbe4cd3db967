//! A session's status, from its hook events: the one place its status document (the runtime
//! status API v1, `docs/runtime-api.md`) changes, and the pending permission request the tray
//! may answer.
//!
//! The rules, from the events alone (never guessed from a screen):
//! - a new session is `idle`; a prompt, a tool starting or finishing make it `working`;
//! - a permission request makes it `needs-approval` with Approve, Deny and, when the agent
//!   suggests permission updates, "Always allow …" (naming every update it sends); only a
//!   request whose hook waits for the tray offers them (an unattended session's is shown
//!   without actions, and so is one the terminal asks once the hook is done, a background
//!   subagent's, which stands like a waiting one until that agent moves on);
//! - the end of a turn, or the agent asking the user, makes it `needs-input`; a failed turn
//!   makes it `error`; a turn that ends while its subagents still work in the background keeps
//!   it `working` (they report back to the agent, which goes on by itself);
//! - a subagent's events never make the session `idle` or `needs-input` (the session is still
//!   working while its subagent is);
//! - while a request waits for the user, only the agent that asked (the session's own agent or
//!   one subagent; they run at the same time) moves the session on: another one's events change
//!   neither the state nor the request.
//!
//! The terminal answering first: the end of the tool that was asked for, or any later event of
//! the agent that asked that moves its turn on (a new prompt, the end of the turn), or the
//! waiting hook ending (Claude Code stops it when the user says no) means the request was
//! answered there; the pending request is dropped, the hook is told "no decision", and a late
//! answer from the tray is refused with "already answered in the terminal". A decision is only
//! ever sent for the request the tray was shown.
//!
//! Order: the agent waits for every hook but those it runs in the background
//! ([`Agent::runs_in_background`]: a tool's start and end, so that they cost a tool call
//! nothing, docs/BENCHMARKS.md). Those can therefore reach the host after events that
//! came later. Each event carries when the agent started its hook ([`HookEvent::spawned`]):
//! such an event started before the latest event taken in is old news and changes nothing,
//! except that the end of the very tool a pending request asked for still settles it. The end of
//! a tool never leaves `needs-input`, `idle` or `error` either: a tool ends before the turn does.

use std::sync::{Arc, Mutex, MutexGuard};

pub use demo_runtime::feed::{Action, AgentState, Content, Published, Refusal};
use demo_runtime::feed::{Controller, StatusFeed};
use tokio::sync::oneshot;

use crate::agent::Agent;
use crate::claude_code::Decision;
use crate::event::{EventKind, HookEvent, Spawned};

/// How many published documents a stream may fall behind before it skips ahead: every document
/// is whole, so a lagging reader loses only intermediate states.
const STREAM_BACKLOG: usize = 64;

/// The title while a request the terminal answered first is the latest news: the reason a late
/// answer from the tray is refused, which `act` quotes from the document.
pub const ANSWERED_IN_TERMINAL: &str = "Already answered in the terminal";

struct Pending {
    /// Which request this is, so a hook that ends late cannot clear a newer one.
    seq: u64,
    /// The subagent that asked, or `None` for the session's own agent: only its events settle it.
    agent: Option<String>,
    tool: String,
    /// What the tool works on, to know its end among parallel tools' ends.
    detail: Option<String>,
    /// Where the tray's answer goes; `None` for a request only the terminal can answer.
    responder: Option<oneshot::Sender<Decision>>,
    suggestions: Option<serde_json::Value>,
}

struct Inner {
    pending: Option<Pending>,
    next_seq: u64,
    /// Set when the last request was answered in the terminal, until the next request.
    answered_in_terminal: bool,
    /// The session's transcript, as its latest own event named it.
    transcript: Option<std::path::PathBuf>,
    /// When the hook of the latest event taken in was started ([`HookEvent::spawned`]).
    latest: Option<Spawned>,
}

impl Inner {
    /// True when `event`'s hook was started before the latest event's taken in (either unknown:
    /// not old).
    fn is_old(&self, event: &HookEvent) -> bool {
        matches!((event.spawned, self.latest), (Some(spawned), Some(latest)) if spawned < latest)
    }

    fn note_spawned(&mut self, event: &HookEvent) {
        self.latest = self.latest.max(event.spawned);
    }
}

impl Pending {
    /// True when `event` says the request was answered in the terminal: the asking agent's
    /// end of the tool asked for, or its turn moving on.
    fn settled_by(&self, event: &HookEvent) -> bool {
        self.agent == event.subagent
            && match &event.kind {
                EventKind::ToolDone { tool, detail } => {
                    *tool == self.tool && *detail == self.detail
                }
                EventKind::Prompt
                | EventKind::Delegated { .. }
                | EventKind::NeedsInput { .. }
                | EventKind::Failed { .. }
                | EventKind::SessionEnd => true,
                EventKind::SessionStart
                | EventKind::ToolStart { .. }
                | EventKind::PermissionRequest { .. }
                | EventKind::Other => false,
            }
    }
}

/// One session's status and its subscribers.
pub struct Board {
    /// The agent, whose entries say which events it does not wait for.
    agent: Agent,
    // std Mutex: never held across an `.await`. Every change of the feed's content is made
    // while it is held, so what `act` checked on the feed still holds when it answers.
    inner: Mutex<Inner>,
    feed: Arc<StatusFeed>,
}

/// What a waiting permission hook gets: its request's number and the answer, if the tray gives one.
pub struct Waiting {
    /// The request's number (for [`Board::hook_gone`]).
    pub seq: u64,
    /// Resolves with the tray's decision; closes without one when the request is answered
    /// elsewhere or replaced.
    pub decision: oneshot::Receiver<Decision>,
}

impl Board {
    /// A new session's board: `idle`.
    pub fn new(agent: Agent) -> Arc<Self> {
        Arc::new(Self {
            agent,
            inner: Mutex::new(Inner {
                pending: None,
                next_seq: 1,
                answered_in_terminal: false,
                transcript: None,
                latest: None,
            }),
            feed: StatusFeed::new(idle(), STREAM_BACKLOG),
        })
    }

    /// The session's document and its streams.
    pub fn feed(&self) -> &Arc<StatusFeed> {
        &self.feed
    }

    /// The current document.
    pub fn current(&self) -> Published {
        self.feed.current()
    }

    /// The current content (for tests and the host's log-free checks).
    pub fn content(&self) -> Content {
        self.feed.content()
    }

    /// The session's transcript, once an event of the session named it.
    pub fn transcript(&self) -> Option<std::path::PathBuf> {
        self.lock().transcript.clone()
    }

    /// Takes in one event that is not a permission request the tray may answer.
    pub fn apply(&self, event: &HookEvent) {
        let mut inner = self.lock();
        note_transcript(&mut inner, event);
        let settled = inner.pending.as_ref().is_some_and(|p| p.settled_by(event));
        if settled {
            // Dropping the responder tells the waiting hook: no decision from us.
            inner.pending = None;
            inner.answered_in_terminal = true;
        } else if self.agent.runs_in_background(&event.kind) && inner.is_old(event) {
            return;
        }
        inner.note_spawned(event);
        if inner.pending.is_some() {
            // The session still waits for the user: another agent's work does not hide the
            // prompt (and its end does not answer it).
            return;
        }
        let subagent = event.subagent.is_some();
        let next = match &event.kind {
            EventKind::SessionStart => Some(idle()),
            EventKind::Prompt => Some(working("Thinking", None)),
            EventKind::ToolStart { title, detail, .. } => Some(working(title, detail.clone())),
            // The tool the terminal allowed has run: say who answered, so a late answer from
            // the tray is told why it is not offered any more.
            EventKind::ToolDone { .. } if settled => Some(working(ANSWERED_IN_TERMINAL, None)),
            // From `needs-approval` too: an unattended session's request, answered by its agent.
            EventKind::ToolDone { .. }
                if !subagent
                    && matches!(
                        self.feed.content().state,
                        AgentState::Working | AgentState::NeedsApproval
                    ) =>
            {
                Some(working("Thinking", None))
            }
            EventKind::ToolDone { .. } => None,
            EventKind::PermissionRequest { tool, detail, .. } => Some(shown(
                AgentState::NeedsApproval,
                format!("Run {tool}?"),
                detail.clone(),
                Vec::new(),
            )),
            EventKind::NeedsInput { .. }
            | EventKind::Failed { .. }
            | EventKind::Delegated { .. }
                if subagent =>
            {
                None
            }
            EventKind::Delegated { title } => Some(working(title, None)),
            EventKind::NeedsInput { title } => Some(shown(
                AgentState::NeedsInput,
                title
                    .clone()
                    .or_else(|| {
                        let current = self.feed.content();
                        (current.state == AgentState::NeedsInput).then_some(current.title)
                    })
                    .unwrap_or_else(|| "Waiting for your reply".to_owned()),
                None,
                Vec::new(),
            )),
            EventKind::Failed { reason } => {
                Some(shown(AgentState::Error, reason.clone(), None, Vec::new()))
            }
            EventKind::SessionEnd | EventKind::Other => None,
        };
        if let Some(next) = next {
            self.enter(next);
        }
    }

    /// A permission request whose hook waits for the tray: `needs-approval` with its actions.
    /// A request still pending (a parallel tool's) is replaced: its hook gets no decision and
    /// the terminal asks for it as usual.
    pub fn request_approval(&self, event: &HookEvent) -> Option<Waiting> {
        let (responder, decision) = oneshot::channel();
        let seq = self.open_request(event, Some(responder))?;
        Some(Waiting { seq, decision })
    }

    /// A permission request the agent asks in its terminal once its hook is done (the hook does
    /// not wait for the tray): `needs-approval` without actions, standing like a waiting one
    /// until the asking agent moves on, so that another agent's events do not hide it.
    pub fn request_in_terminal(&self, event: &HookEvent) {
        self.open_request(event, None);
    }

    /// Makes `event`'s request the pending one, answered through `responder` (and offering the
    /// tray's actions) if there is one; returns its number.
    fn open_request(
        &self,
        event: &HookEvent,
        responder: Option<oneshot::Sender<Decision>>,
    ) -> Option<u64> {
        let EventKind::PermissionRequest {
            tool,
            detail,
            suggestions,
            always_label,
        } = &event.kind
        else {
            return None;
        };
        let mut inner = self.lock();
        note_transcript(&mut inner, event);
        inner.note_spawned(event);
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.answered_in_terminal = false;
        let mut actions = Vec::new();
        if responder.is_some() {
            actions.push(action("approve", "Approve".to_owned(), false));
            if let Some(label) = always_label.clone().filter(|_| suggestions.is_some()) {
                actions.push(action("always", label, false));
            }
            actions.push(action("deny", "Deny".to_owned(), true));
        }
        inner.pending = Some(Pending {
            seq,
            agent: event.subagent.clone(),
            tool: tool.clone(),
            detail: detail.clone(),
            responder,
            suggestions: suggestions.clone(),
        });
        self.enter(shown(
            AgentState::NeedsApproval,
            format!("Run {tool}?"),
            detail.clone(),
            actions,
        ));
        Some(seq)
    }

    /// How many clients watch the session's status stream now (the tray, `events`), and every
    /// change of that number.
    pub fn watchers(&self) -> tokio::sync::watch::Receiver<u32> {
        self.feed.observers()
    }

    /// Stops holding request `seq` for the tray (its hook gets no decision): shown without
    /// actions, as if its hook had not waited, and standing until the asking agent moves on
    /// where the agent asks it in its terminal (`in_terminal`).
    pub fn unhold(&self, seq: u64, in_terminal: bool) {
        let mut inner = self.lock();
        let Some(pending) = inner.pending.take_if(|p| p.seq == seq) else {
            return;
        };
        if in_terminal {
            inner.pending = Some(Pending {
                responder: None,
                ..pending
            });
        }
        self.enter(Content {
            actions: Vec::new(),
            ..self.feed.content()
        });
    }

    /// The hook waiting on request `seq` ended without our answer: Claude Code stopped it
    /// because the user answered no (or pressed Esc) in the terminal.
    pub fn hook_gone(&self, seq: u64) {
        let mut inner = self.lock();
        if inner.pending.as_ref().is_some_and(|p| p.seq == seq) {
            inner.pending = None;
            inner.answered_in_terminal = true;
            self.enter(shown(
                AgentState::NeedsInput,
                ANSWERED_IN_TERMINAL.to_owned(),
                None,
                Vec::new(),
            ));
        }
    }

    /// Runs action `id` on the pending request if the current document offers it and `seen`
    /// (the revision the caller acted on) is not older than the request. Returns the revision
    /// that offered it.
    pub fn act(&self, id: &str, seen: Option<u64>) -> Result<u64, Refusal> {
        let mut inner = self.lock();
        let offered_at = self.feed.offered(id, seen).map_err(|refusal| {
            if refusal == Refusal::NotOffered
                && inner.answered_in_terminal
                && matches!(id, "approve" | "deny" | "always")
            {
                Refusal::AnsweredInTerminal
            } else {
                refusal
            }
        })?;
        let Some(pending) = inner.pending.take_if(|p| p.responder.is_some()) else {
            return Err(Refusal::NotOffered);
        };
        let decision = match (id, pending.suggestions) {
            ("approve", _) => Decision::Allow,
            ("always", Some(updated_permissions)) => Decision::AllowAlways {
                updated_permissions,
            },
            ("deny", _) => Decision::Deny,
            _ => return Err(Refusal::NotOffered),
        };
        let denied = decision == Decision::Deny;
        let answered = pending
            .responder
            .is_some_and(|responder| responder.send(decision).is_ok());
        if !answered {
            // The hook is gone: the terminal answered first.
            inner.answered_in_terminal = true;
            return Err(Refusal::AnsweredInTerminal);
        }
        let next = if denied {
            working("Denied; the agent goes on without it", None)
        } else {
            working(
                &format!("Running {}", pending.tool),
                self.feed.content().detail,
            )
        };
        self.enter(next);
        Ok(offered_at)
    }

    /// Shows `next` unless it is what the document shows already. Called with the lock held,
    /// so that changes of the document happen in the order of the events that made them.
    fn enter(&self, next: Content) {
        if next != self.feed.content() {
            self.feed.show(next);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every field is replaced whole, so a poisoned lock still holds a consistent state.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A subagent's events may name the subagent's own transcript: only the session's count.
fn note_transcript(inner: &mut Inner, event: &HookEvent) {
    if event.subagent.is_none() && event.transcript.is_some() {
        inner.transcript.clone_from(&event.transcript);
    }
}

/// Content as a session shows it: driven from its terminal.
fn shown(
    state: AgentState,
    title: String,
    detail: Option<String>,
    actions: Vec<Action>,
) -> Content {
    Content {
        state,
        title,
        detail,
        actions,
        controller: Controller {
            kind: "terminal",
            label: None,
        },
    }
}

fn action(id: &str, label: String, destructive: bool) -> Action {
    Action {
        id: id.to_owned(),
        label,
        destructive,
        confirm: None,
    }
}

fn idle() -> Content {
    shown(
        AgentState::Idle,
        "Waiting for a prompt".to_owned(),
        None,
        Vec::new(),
    )
}

fn working(title: &str, detail: Option<String>) -> Content {
    shown(AgentState::Working, title.to_owned(), detail, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn event(kind: EventKind) -> HookEvent {
        HookEvent {
            session_id: "s".into(),
            cwd: PathBuf::from("/w"),
            subagent: None,
            transcript: None,
            spawned: None,
            kind,
        }
    }

    /// The end of the tool [`permission`] asks for.
    fn done() -> EventKind {
        EventKind::ToolDone {
            tool: "Bash".into(),
            detail: Some("touch x".into()),
        }
    }

    fn permission() -> HookEvent {
        event(EventKind::PermissionRequest {
            tool: "Bash".into(),
            detail: Some("touch x".into()),
            suggestions: None,
            always_label: None,
        })
    }

    #[test]
    fn approve_from_the_tray_sends_allow_to_the_waiting_hook() {
        let board = Board::new(Agent::ClaudeCode);
        let mut waiting = board.request_approval(&permission()).unwrap();
        let content = board.content();
        assert_eq!(content.state, AgentState::NeedsApproval);
        assert_eq!(content.title, "Run Bash?");
        assert_eq!(content.detail.as_deref(), Some("touch x"));
        let revision = board.current().revision;
        board.act("approve", Some(revision)).unwrap();
        assert_eq!(waiting.decision.try_recv().unwrap(), Decision::Allow);
        assert_eq!(board.content().state, AgentState::Working);
    }

    #[test]
    fn always_allow_sends_claude_codes_own_suggestions_back_as_updated_permissions() {
        let board = Board::new(Agent::ClaudeCode);
        let suggestions = serde_json::json!([
            {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}],
             "behavior": "allow", "destination": "localSettings"}
        ]);
        let mut waiting = board
            .request_approval(&event(EventKind::PermissionRequest {
                tool: "Bash".into(),
                detail: Some("touch x".into()),
                suggestions: Some(suggestions.clone()),
                always_label: Some("Always allow Bash(touch:*)".into()),
            }))
            .unwrap();
        let ids: Vec<String> = board.content().actions.into_iter().map(|a| a.id).collect();
        assert_eq!(ids, ["approve", "always", "deny"]);
        board.act("always", None).unwrap();
        assert_eq!(
            waiting.decision.try_recv().unwrap(),
            Decision::AllowAlways {
                updated_permissions: suggestions
            }
        );
    }

    #[test]
    fn the_terminal_answering_first_clears_the_request_and_refuses_a_late_tray_answer() {
        let board = Board::new(Agent::ClaudeCode);
        let mut waiting = board.request_approval(&permission()).unwrap();
        board.apply(&event(done()));
        assert!(
            matches!(
                waiting.decision.try_recv(),
                Err(oneshot::error::TryRecvError::Closed)
            ),
            "the hook is told: no decision"
        );
        assert_eq!(board.content().state, AgentState::Working);
        assert_eq!(board.content().title, ANSWERED_IN_TERMINAL);
        assert_eq!(board.act("approve", None), Err(Refusal::AnsweredInTerminal));
    }

    #[test]
    fn a_hook_stopped_by_a_no_in_the_terminal_clears_only_its_own_request() {
        let board = Board::new(Agent::ClaudeCode);
        let first = board.request_approval(&permission()).unwrap();
        let second = board.request_approval(&permission()).unwrap();
        board.hook_gone(first.seq);
        assert_eq!(board.content().state, AgentState::NeedsApproval);
        board.hook_gone(second.seq);
        assert_eq!(board.content().state, AgentState::NeedsInput);
        assert_eq!(board.act("deny", None), Err(Refusal::AnsweredInTerminal));
    }

    #[test]
    fn a_subagent_neither_ends_the_turn_nor_settles_the_sessions_request() {
        let board = Board::new(Agent::ClaudeCode);
        let mut waiting = board.request_approval(&permission()).unwrap();
        let mut sub = event(EventKind::NeedsInput {
            title: Some("sub done".into()),
        });
        sub.subagent = Some("a1".into());
        board.apply(&sub);
        let mut sub_tool = event(EventKind::ToolStart {
            tool: "Read".into(),
            title: "Reading".into(),
            detail: None,
        });
        sub_tool.subagent = Some("a1".into());
        board.apply(&sub_tool);
        assert_eq!(board.content().state, AgentState::NeedsApproval);
        assert_eq!(
            board.content().actions.len(),
            2,
            "the prompt keeps its actions"
        );
        assert!(waiting.decision.try_recv().is_err());
        board.act("deny", None).unwrap();
        assert_eq!(waiting.decision.try_recv().unwrap(), Decision::Deny);
    }

    fn from(agent: &str, kind: EventKind) -> HookEvent {
        HookEvent {
            subagent: Some(agent.into()),
            ..event(kind)
        }
    }

    // Issue 32: a subagent runs beside the session's own agent; each settles only its own request.
    #[test]
    fn only_the_agent_that_asked_settles_its_request() {
        let board = Board::new(Agent::ClaudeCode);
        let mut waiting = board
            .request_approval(&from("a1", permission().kind))
            .unwrap();
        // The main agent goes on meanwhile, and its turn ends while the subagent works.
        board.apply(&event(done()));
        board.apply(&event(EventKind::Delegated {
            title: "Subagent: Make it".into(),
        }));
        board.apply(&from("a2", done()));
        assert_eq!(board.content().state, AgentState::NeedsApproval);
        assert!(waiting.decision.try_recv().is_err(), "still waiting");
        // The subagent's own next event: the terminal answered it.
        board.apply(&from("a1", done()));
        assert!(matches!(
            waiting.decision.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert_eq!(board.content().state, AgentState::Working);
        assert_eq!(board.content().title, ANSWERED_IN_TERMINAL);
        assert_eq!(board.act("approve", None), Err(Refusal::AnsweredInTerminal));
        // The session's own request is settled by the session, not by a subagent.
        let mut main = board.request_approval(&permission()).unwrap();
        board.apply(&from("a1", done()));
        assert!(main.decision.try_recv().is_err());
        board.act("approve", None).unwrap();
        assert_eq!(main.decision.try_recv().unwrap(), Decision::Allow);
    }

    // Claude Code shows a background subagent's dialog only once the hook is done, so that
    // hook does not wait: the request is shown without the tray's actions and stands until the
    // subagent moves on, whatever the main agent does meanwhile.
    #[test]
    fn a_request_the_terminal_asks_stands_until_the_asking_agent_moves_on() {
        let board = Board::new(Agent::ClaudeCode);
        board.request_in_terminal(&from("a1", permission().kind));
        let asking = board.content();
        assert_eq!(asking.state, AgentState::NeedsApproval);
        assert_eq!(asking.title, "Run Bash?");
        assert!(asking.actions.is_empty(), "{asking:?}");
        assert_eq!(board.act("approve", None), Err(Refusal::NotOffered));
        board.apply(&event(EventKind::Delegated {
            title: "Subagent: Make it".into(),
        }));
        board.apply(&event(EventKind::ToolStart {
            tool: "Read".into(),
            title: "Reading".into(),
            detail: None,
        }));
        assert_eq!(board.content(), asking, "the main agent does not hide it");
        // The subagent's tool ran: the terminal answered.
        board.apply(&from("a1", done()));
        assert_eq!(board.content().state, AgentState::Working);
        assert_eq!(board.content().title, ANSWERED_IN_TERMINAL);
        assert_eq!(board.act("approve", None), Err(Refusal::AnsweredInTerminal));
        // A request the tray may answer replaces it like any pending one.
        board.request_in_terminal(&from("a1", permission().kind));
        let mut waiting = board.request_approval(&permission()).unwrap();
        board.act("approve", None).unwrap();
        assert_eq!(waiting.decision.try_recv().unwrap(), Decision::Allow);
    }

    // The tray stopped watching while a subagent's request waited for it: the hook is let go
    // (the terminal's dialog opens) and the request stands, without actions, until the
    // subagent moves on.
    #[test]
    fn a_request_let_go_by_the_tray_stands_where_the_terminal_asks_it() {
        let board = Board::new(Agent::ClaudeCode);
        let mut waiting = board
            .request_approval(&from("a1", permission().kind))
            .unwrap();
        board.unhold(waiting.seq, true);
        assert!(matches!(
            waiting.decision.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        let asking = board.content();
        assert_eq!(asking.state, AgentState::NeedsApproval);
        assert!(asking.actions.is_empty(), "{asking:?}");
        board.apply(&event(EventKind::Delegated {
            title: "Subagent: Make it".into(),
        }));
        assert_eq!(board.content(), asking, "the main agent does not hide it");
        board.apply(&from("a1", done()));
        assert_eq!(board.content().state, AgentState::Working);
        // Let go where nothing asks (Codex, `claude -p`): shown as if it had not waited.
        let waiting = board.request_approval(&permission()).unwrap();
        board.unhold(waiting.seq, false);
        assert!(board.content().actions.is_empty());
        board.apply(&event(EventKind::ToolStart {
            tool: "Read".into(),
            title: "Reading".into(),
            detail: None,
        }));
        assert_eq!(board.content().state, AgentState::Working);
    }

    /// An event whose hook's shell started at tick `time`.
    fn at(time: u64, kind: EventKind) -> HookEvent {
        HookEvent {
            spawned: Some(Spawned {
                ticks: time,
                pid: 100,
            }),
            ..event(kind)
        }
    }

    fn start(tool: &str, detail: &str) -> EventKind {
        EventKind::ToolStart {
            tool: tool.into(),
            title: format!("Running {tool}"),
            detail: Some(detail.into()),
        }
    }

    // Issue 32: Claude Code runs the hooks of a tool's start and end in the background, so they
    // can arrive after the events that followed them.
    #[test]
    fn a_tools_start_arriving_after_its_permission_request_leaves_the_request_to_the_user() {
        let board = Board::new(Agent::ClaudeCode);
        board.apply(&at(10, EventKind::Prompt));
        let mut waiting = board
            .request_approval(&HookEvent {
                kind: permission().kind,
                ..at(30, EventKind::Other)
            })
            .unwrap();
        board.apply(&at(20, start("Bash", "touch x")));
        assert_eq!(board.content().state, AgentState::NeedsApproval);
        // Even one whose hook was slow to start (a later time) neither settles nor hides it.
        board.apply(&at(31, start("Bash", "touch x")));
        assert_eq!(board.content().state, AgentState::NeedsApproval);
        board.act("approve", None).unwrap();
        assert_eq!(waiting.decision.try_recv().unwrap(), Decision::Allow);
    }

    #[test]
    fn an_earlier_tools_end_neither_settles_a_request_nor_reopens_a_finished_turn() {
        let board = Board::new(Agent::ClaudeCode);
        board.apply(&at(10, start("Read", "/w/a")));
        let mut waiting = board
            .request_approval(&HookEvent {
                kind: permission().kind,
                ..at(30, EventKind::Other)
            })
            .unwrap();
        let read_done = EventKind::ToolDone {
            tool: "Read".into(),
            detail: Some("/w/a".into()),
        };
        board.apply(&at(20, read_done.clone()));
        board.apply(&at(31, read_done.clone()));
        assert_eq!(board.content().state, AgentState::NeedsApproval);
        assert!(waiting.decision.try_recv().is_err(), "still waiting");
        board.act("approve", None).unwrap();
        board.apply(&at(50, done()));
        board.apply(&at(
            60,
            EventKind::NeedsInput {
                title: Some("Done".into()),
            },
        ));
        // The tool's end, late: old news. And a late one that looks newer cannot leave
        // needs-input either (a tool ends before its turn does).
        board.apply(&at(55, done()));
        board.apply(&at(65, read_done));
        let content = board.content();
        assert_eq!(
            (content.state, content.title.as_str()),
            (AgentState::NeedsInput, "Done")
        );
    }

    #[test]
    fn the_end_of_the_tool_asked_for_settles_its_request_even_after_a_later_start() {
        let board = Board::new(Agent::ClaudeCode);
        let mut waiting = board
            .request_approval(&HookEvent {
                kind: permission().kind,
                ..at(10, EventKind::Other)
            })
            .unwrap();
        // The terminal allowed it; the next tool's start overtook this one's end.
        board.apply(&at(30, start("Read", "/w/b")));
        board.apply(&at(20, done()));
        assert!(matches!(
            waiting.decision.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert_eq!(board.act("approve", None), Err(Refusal::AnsweredInTerminal));
        assert_eq!(board.content().state, AgentState::Working);
    }

    #[test]
    fn a_turn_that_ends_with_subagents_at_work_is_still_working() {
        let board = Board::new(Agent::ClaudeCode);
        board.apply(&event(EventKind::Prompt));
        board.apply(&event(EventKind::Delegated {
            title: "Subagent: Make it".into(),
        }));
        assert_eq!(board.content().state, AgentState::Working);
        assert_eq!(board.content().title, "Subagent: Make it");
        // Their report comes back as a new turn, whose end waits for the user.
        board.apply(&event(EventKind::Prompt));
        board.apply(&event(EventKind::NeedsInput {
            title: Some("Done".into()),
        }));
        assert_eq!(board.content().state, AgentState::NeedsInput);
    }
}
