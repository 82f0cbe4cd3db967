//! A session's status, from its hook events: the one place its status document (the runtime
//! status API v1, `docs/runtime-api.md`) changes, and the pending permission request the tray
//! may answer.
//!
//! The rules, from the events alone (never guessed from a screen):
//! - a new session is `idle`; a prompt, a tool starting or finishing make it `working`;
//! - a permission request makes it `needs-approval` with Approve, Deny and, when the agent
//!   suggests permission updates, "Always allow …" (naming every update it sends); only a
//!   request whose hook waits for the tray offers them (an unattended session's is shown
//!   without actions);
//! - the end of a turn, or the agent asking the user, makes it `needs-input`; a failed turn
//!   makes it `error`; a turn that ends while its subagents still work in the background keeps
//!   it `working` (they report back to the agent, which goes on by itself);
//! - a subagent's events never make the session `idle` or `needs-input` (the session is still
//!   working while its subagent is);
//! - while a request waits for the user, only the agent that asked (the session's own agent or
//!   one subagent; they run at the same time) moves the session on: another one's events change
//!   neither the state nor the request.
//!
//! The terminal answering first: any later event of the agent that asked (the tool's
//! `PostToolUse`, a new prompt, the end of the turn) or the waiting hook ending (Claude Code stops
//! it when the user says no) means the request was answered there; the pending request is
//! dropped, the hook is told "no decision", and a late answer from the tray is refused with
//! "already answered in the terminal". A decision is only ever sent for the request the tray was
//! shown.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::sync::{broadcast, oneshot};

use crate::claude_code::Decision;
use crate::event::{EventKind, HookEvent};

/// How many published documents a stream may fall behind before it skips ahead: every document
/// is whole, so a lagging reader loses only intermediate states.
const STREAM_BACKLOG: usize = 64;

/// The title while a request the terminal answered first is the latest news: the reason a late
/// answer from the tray is refused, which `act` quotes from the document.
pub const ANSWERED_IN_TERMINAL: &str = "Already answered in the terminal";

/// The state a session reports (`state` in the document).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentState {
    /// Working on a turn.
    Working,
    /// Waiting for the user to allow a tool.
    NeedsApproval,
    /// Waiting for the user's next message.
    NeedsInput,
    /// Nothing to do.
    Idle,
    /// The last turn failed.
    Error,
}

/// An action offered now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Action {
    /// Its id (`approve`, `deny`, `always`).
    pub id: &'static str,
    /// Its label.
    pub label: String,
    /// True when it cannot be undone in the session (deny stops the tool).
    pub destructive: bool,
}

/// Everything in the document that is not bookkeeping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// The state.
    pub state: AgentState,
    /// The title.
    pub title: String,
    /// The detail.
    pub detail: Option<String>,
    /// The actions offered.
    pub actions: Vec<Action>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    version: u32,
    revision: u64,
    state: AgentState,
    title: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    since: &'a str,
    actions: &'a [Action],
    controller: serde_json::Value,
    observers: u32,
}

/// A rendered document and its revision.
#[derive(Debug, Clone)]
pub struct Published {
    /// Its revision.
    pub revision: u64,
    /// The document as JSON.
    pub json: Arc<str>,
}

/// Why an action call was refused (a `409`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The current document does not offer this action.
    NotOffered,
    /// The request it answered was already answered in the terminal.
    AnsweredInTerminal,
    /// The caller acted on an older prompt.
    StaleRevision,
}

struct Pending {
    /// Which request this is, so a hook that ends late cannot clear a newer one.
    seq: u64,
    /// The subagent that asked, or `None` for the session's own agent: only its events settle it.
    agent: Option<String>,
    tool: String,
    responder: oneshot::Sender<Decision>,
    suggestions: Option<serde_json::Value>,
}

struct Inner {
    content: Content,
    since: String,
    revision: u64,
    prompt_revision: u64,
    observers: u32,
    published: Published,
    pending: Option<Pending>,
    next_seq: u64,
    /// Set when the last request was answered in the terminal, until the next request.
    answered_in_terminal: bool,
    /// The session's transcript, as its latest own event named it.
    transcript: Option<std::path::PathBuf>,
}

/// One session's status and its subscribers.
pub struct Board {
    // std Mutex: never held across an `.await`.
    inner: Mutex<Inner>,
    changes: broadcast::Sender<Published>,
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
    pub fn new() -> Arc<Self> {
        let content = Content {
            state: AgentState::Idle,
            title: "Waiting for a prompt".to_owned(),
            detail: None,
            actions: Vec::new(),
        };
        let since = now_rfc3339();
        let published = render(&content, &since, 1, 0);
        Arc::new(Self {
            inner: Mutex::new(Inner {
                content,
                since,
                revision: 1,
                prompt_revision: 1,
                observers: 0,
                published,
                pending: None,
                next_seq: 1,
                answered_in_terminal: false,
                transcript: None,
            }),
            changes: broadcast::channel(STREAM_BACKLOG).0,
        })
    }

    /// The current document.
    pub fn current(&self) -> Published {
        self.lock().published.clone()
    }

    /// The current content (for tests and the host's log-free checks).
    pub fn content(&self) -> Content {
        self.lock().content.clone()
    }

    /// The session's transcript, once an event of the session named it.
    pub fn transcript(&self) -> Option<std::path::PathBuf> {
        self.lock().transcript.clone()
    }

    /// Takes in one event that is not a permission request the tray may answer.
    pub fn apply(&self, event: &HookEvent) {
        let mut inner = self.lock();
        note_transcript(&mut inner, event);
        let settles = inner
            .pending
            .as_ref()
            .is_some_and(|p| p.agent == event.subagent)
            && !matches!(
                event.kind,
                EventKind::Other | EventKind::SessionStart | EventKind::PermissionRequest { .. }
            );
        let mut settled = false;
        if settles {
            // Dropping the responder tells the waiting hook: no decision from us.
            inner.pending = None;
            inner.answered_in_terminal = true;
            settled = true;
        }
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
            EventKind::ToolDone if settled => Some(working(ANSWERED_IN_TERMINAL, None)),
            EventKind::ToolDone if !subagent => Some(working("Thinking", None)),
            EventKind::ToolDone => None,
            EventKind::PermissionRequest { tool, detail, .. } => Some(Content {
                state: AgentState::NeedsApproval,
                title: format!("Run {tool}?"),
                detail: detail.clone(),
                actions: Vec::new(),
            }),
            EventKind::NeedsInput { .. }
            | EventKind::Failed { .. }
            | EventKind::Delegated { .. }
                if subagent =>
            {
                None
            }
            EventKind::Delegated { title } => Some(working(title, None)),
            EventKind::NeedsInput { title } => Some(Content {
                state: AgentState::NeedsInput,
                title: title
                    .clone()
                    .or_else(|| {
                        (inner.content.state == AgentState::NeedsInput)
                            .then(|| inner.content.title.clone())
                    })
                    .unwrap_or_else(|| "Waiting for your reply".to_owned()),
                detail: None,
                actions: Vec::new(),
            }),
            EventKind::Failed { reason } => Some(Content {
                state: AgentState::Error,
                title: reason.clone(),
                detail: None,
                actions: Vec::new(),
            }),
            EventKind::SessionEnd | EventKind::Other => None,
        };
        if let Some(next) = next {
            self.enter(&mut inner, next);
        }
    }

    /// A permission request whose hook waits for the tray: `needs-approval` with its actions.
    /// A request still pending (a parallel tool's) is replaced: its hook gets no decision and
    /// the terminal asks for it as usual.
    pub fn request_approval(&self, event: &HookEvent) -> Option<Waiting> {
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
        let (responder, decision) = oneshot::channel();
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.answered_in_terminal = false;
        inner.pending = Some(Pending {
            seq,
            agent: event.subagent.clone(),
            tool: tool.clone(),
            responder,
            suggestions: suggestions.clone(),
        });
        let mut actions = vec![Action {
            id: "approve",
            label: "Approve".to_owned(),
            destructive: false,
        }];
        if let Some(label) = always_label.clone().filter(|_| suggestions.is_some()) {
            actions.push(Action {
                id: "always",
                label,
                destructive: false,
            });
        }
        actions.push(Action {
            id: "deny",
            label: "Deny".to_owned(),
            destructive: true,
        });
        self.enter(
            &mut inner,
            Content {
                state: AgentState::NeedsApproval,
                title: format!("Run {tool}?"),
                detail: detail.clone(),
                actions,
            },
        );
        Some(Waiting { seq, decision })
    }

    /// The hook waiting on request `seq` ended without our answer: Claude Code stopped it
    /// because the user answered no (or pressed Esc) in the terminal.
    pub fn hook_gone(&self, seq: u64) {
        let mut inner = self.lock();
        if inner.pending.as_ref().is_some_and(|p| p.seq == seq) {
            inner.pending = None;
            inner.answered_in_terminal = true;
            self.enter(
                &mut inner,
                Content {
                    state: AgentState::NeedsInput,
                    title: ANSWERED_IN_TERMINAL.to_owned(),
                    detail: None,
                    actions: Vec::new(),
                },
            );
        }
    }

    /// Runs action `id` on the pending request if the current document offers it and `seen`
    /// (the revision the caller acted on) is not older than the request. Returns the revision
    /// that offered it.
    pub fn act(&self, id: &str, seen: Option<u64>) -> Result<u64, Refusal> {
        let mut inner = self.lock();
        if !inner.content.actions.iter().any(|action| action.id == id) {
            return Err(
                if inner.answered_in_terminal && matches!(id, "approve" | "deny" | "always") {
                    Refusal::AnsweredInTerminal
                } else {
                    Refusal::NotOffered
                },
            );
        }
        if let Some(seen) = seen {
            if seen < inner.prompt_revision || seen > inner.revision {
                return Err(Refusal::StaleRevision);
            }
        }
        let Some(pending) = inner.pending.take() else {
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
        if pending.responder.send(decision).is_err() {
            // The hook is gone: the terminal answered first.
            inner.answered_in_terminal = true;
            return Err(Refusal::AnsweredInTerminal);
        }
        let offered_at = inner.revision;
        let next = if denied {
            working("Denied; the agent goes on without it", None)
        } else {
            working(
                &format!("Running {}", pending.tool),
                inner.content.detail.clone(),
            )
        };
        self.enter(&mut inner, next);
        Ok(offered_at)
    }

    /// The current document and every later one; counts the caller as an observer until the
    /// guard is dropped.
    pub fn watch(self: &Arc<Self>) -> (Published, broadcast::Receiver<Published>, ObserverGuard) {
        let mut inner = self.lock();
        inner.observers += 1;
        self.publish(&mut inner);
        let first = inner.published.clone();
        let receiver = self.changes.subscribe();
        drop(inner);
        (
            first,
            receiver,
            ObserverGuard {
                board: Arc::clone(self),
            },
        )
    }

    fn enter(&self, inner: &mut Inner, next: Content) {
        if next == inner.content {
            return;
        }
        if next.state != inner.content.state {
            inner.since = now_rfc3339();
        }
        inner.content = next;
        self.publish(inner);
        inner.prompt_revision = inner.revision;
    }

    fn publish(&self, inner: &mut Inner) {
        inner.revision += 1;
        inner.published = render(
            &inner.content,
            &inner.since,
            inner.revision,
            inner.observers,
        );
        // No receiver is not an error: nobody is watching.
        let _ = self.changes.send(inner.published.clone());
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every field is replaced whole, so a poisoned lock still holds a consistent document.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counts one open stream in `observers`.
pub struct ObserverGuard {
    board: Arc<Board>,
}

impl Drop for ObserverGuard {
    fn drop(&mut self) {
        let mut inner = self.board.lock();
        inner.observers = inner.observers.saturating_sub(1);
        self.board.publish(&mut inner);
    }
}

/// A subagent's events may name the subagent's own transcript: only the session's count.
fn note_transcript(inner: &mut Inner, event: &HookEvent) {
    if event.subagent.is_none() && event.transcript.is_some() {
        inner.transcript.clone_from(&event.transcript);
    }
}

fn idle() -> Content {
    Content {
        state: AgentState::Idle,
        title: "Waiting for a prompt".to_owned(),
        detail: None,
        actions: Vec::new(),
    }
}

fn working(title: &str, detail: Option<String>) -> Content {
    Content {
        state: AgentState::Working,
        title: title.to_owned(),
        detail,
        actions: Vec::new(),
    }
}

fn render(content: &Content, since: &str, revision: u64, observers: u32) -> Published {
    let document = Document {
        version: demo_runtime::STATUS_API_VERSION,
        revision,
        state: content.state,
        title: &content.title,
        detail: content.detail.as_deref(),
        since,
        actions: &content.actions,
        controller: serde_json::json!({ "kind": "terminal" }),
        observers,
    };
    let json = serde_json::to_string(&document).expect("a status document always serializes");
    Published {
        revision,
        json: json.into(),
    }
}

fn now_rfc3339() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| String::from("1970-01-01T00:00:00Z"))
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
            kind,
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
        let board = Board::new();
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
        let board = Board::new();
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
        let ids: Vec<&str> = board.content().actions.iter().map(|a| a.id).collect();
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
        let board = Board::new();
        let mut waiting = board.request_approval(&permission()).unwrap();
        board.apply(&event(EventKind::ToolDone));
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
        let board = Board::new();
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
        let board = Board::new();
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
        let board = Board::new();
        let mut waiting = board
            .request_approval(&from("a1", permission().kind))
            .unwrap();
        // The main agent goes on meanwhile, and its turn ends while the subagent works.
        board.apply(&event(EventKind::ToolDone));
        board.apply(&event(EventKind::Delegated {
            title: "Subagent: Make it".into(),
        }));
        board.apply(&from("a2", EventKind::ToolDone));
        assert_eq!(board.content().state, AgentState::NeedsApproval);
        assert!(waiting.decision.try_recv().is_err(), "still waiting");
        // The subagent's own next event: the terminal answered it.
        board.apply(&from("a1", EventKind::ToolDone));
        assert!(matches!(
            waiting.decision.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert_eq!(board.content().state, AgentState::Working);
        assert_eq!(board.content().title, ANSWERED_IN_TERMINAL);
        assert_eq!(board.act("approve", None), Err(Refusal::AnsweredInTerminal));
        // The session's own request is settled by the session, not by a subagent.
        let mut main = board.request_approval(&permission()).unwrap();
        board.apply(&from("a1", EventKind::ToolDone));
        assert!(main.decision.try_recv().is_err());
        board.act("approve", None).unwrap();
        assert_eq!(main.decision.try_recv().unwrap(), Decision::Allow);
    }

    #[test]
    fn a_turn_that_ends_with_subagents_at_work_is_still_working() {
        let board = Board::new();
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
