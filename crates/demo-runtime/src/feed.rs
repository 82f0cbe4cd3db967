//! A runtime's status document (the runtime status API v1, `docs/runtime-api.md`) and the
//! changes pushed to every open stream: the one implementation every runtime of this project
//! serves, the demo's scenarios and the coding agents' sessions (`agent-hooks`) alike.
//!
//! [`StatusFeed`] is the one place a document changes. Each change bumps `revision`, renders the
//! document once, and publishes the rendered JSON to every stream. A stream subscribes and takes
//! the current document under the same lock the writers hold, so it sees every change after its
//! first document, with no gap and no duplicate. What the document shows, and when it changes,
//! is the runtime's business: it calls [`StatusFeed::show`] with each new [`Content`], from one
//! place that serializes its own changes (so a check made on [`StatusFeed::offered`] still holds
//! when the runtime shows what the action led to).

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use tokio::sync::{broadcast, watch};

/// The status API version this project's runtimes serve (`version` in the document, `v1` in the
/// paths).
pub const STATUS_API_VERSION: u32 = 1;

/// One of the states a runtime reports (`state` in the document).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentState {
    /// Working on something.
    Working,
    /// Waiting for the user to allow something.
    NeedsApproval,
    /// Waiting for the user's next message.
    NeedsInput,
    /// Nothing to do.
    Idle,
    /// The last piece of work failed.
    Error,
}

/// An action the runtime offers now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Action {
    /// Its id, matching [`crate::is_valid_action_id`].
    pub id: String,
    /// Its label.
    pub label: String,
    /// True when it cannot be undone.
    pub destructive: bool,
    /// The question to ask before running it, if the runtime wants one asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirm: Option<String>,
}

/// Which client drives the runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Controller {
    /// What kind of client (`terminal`, `browser`...).
    pub kind: &'static str,
    /// Its name, if it has one worth showing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
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
    /// Who drives the runtime.
    pub controller: Controller,
}

/// The status document exactly as it goes on the wire.
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
    controller: &'a Controller,
    observers: u32,
}

/// A rendered document and its revision, as streams receive it.
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
    /// The caller's `revision` is older than the current prompt (or newer than any revision).
    StaleRevision,
    /// The prompt it answers was answered in the agent's own terminal first (a coding agent's
    /// session): not offered, and the caller is told why.
    AnsweredInTerminal,
}

struct Inner {
    content: Content,
    since: String,
    revision: u64,
    /// The revision at which state, title, detail or actions last changed: a click made on a
    /// document older than this was made on another prompt.
    prompt_revision: u64,
    published: Published,
}

/// A runtime's current status document and its subscribers.
pub struct StatusFeed {
    // std Mutex: it is never held across an `.await`.
    inner: Mutex<Inner>,
    changes: broadcast::Sender<Published>,
    /// How many streams are open (`observers` in the document), also for a runtime that acts
    /// on whether anyone watches. Changed only while `inner` is locked, so documents count in
    /// order.
    observers: watch::Sender<u32>,
}

/// What a new stream gets from [`StatusFeed::watch`].
pub struct Watch {
    /// The current document, which already counts the stream as an observer.
    pub first: Published,
    /// Every later document.
    pub changes: broadcast::Receiver<Published>,
    /// Counts the stream as an observer until dropped.
    pub guard: ObserverGuard,
}

impl StatusFeed {
    /// A feed showing `content` at revision 1; a stream may fall `backlog` documents behind
    /// before it skips ahead (every document is whole, so it loses only intermediate states).
    pub fn new(content: Content, backlog: usize) -> Arc<Self> {
        let since = now_rfc3339();
        let published = render(&content, &since, 1, 0);
        Arc::new(Self {
            inner: Mutex::new(Inner {
                content,
                since,
                revision: 1,
                prompt_revision: 1,
                published,
            }),
            changes: broadcast::channel(backlog).0,
            observers: watch::Sender::new(0),
        })
    }

    /// How many streams are open now, and every change of that number.
    pub fn observers(&self) -> watch::Receiver<u32> {
        self.observers.subscribe()
    }

    /// The current document.
    pub fn current(&self) -> Published {
        self.lock().published.clone()
    }

    /// What the current document shows.
    pub fn content(&self) -> Content {
        self.lock().content.clone()
    }

    /// The current document and a receiver of every later one; counts the caller as an
    /// observer until the returned guard is dropped. The first document already counts it.
    pub fn watch(self: &Arc<Self>) -> Watch {
        let mut inner = self.lock();
        self.observers.send_modify(|count| *count += 1);
        self.publish(&mut inner);
        let first = inner.published.clone();
        let changes = self.changes.subscribe();
        drop(inner);
        Watch {
            first,
            changes,
            guard: ObserverGuard {
                feed: Arc::clone(self),
            },
        }
    }

    /// Publishes a new document showing `content`; returns its revision. `since` moves when the
    /// state changes; the prompt (what a click acts on) changes when the state, title, detail or
    /// actions do.
    pub fn show(&self, content: Content) -> u64 {
        let mut inner = self.lock();
        if content.state != inner.content.state {
            inner.since = now_rfc3339();
        }
        let prompt_changed = content.state != inner.content.state
            || content.title != inner.content.title
            || content.detail != inner.content.detail
            || content.actions != inner.content.actions;
        inner.content = content;
        self.publish(&mut inner);
        if prompt_changed {
            inner.prompt_revision = inner.revision;
        }
        inner.revision
    }

    /// Whether a call of action `id` may run now: the current document offers it, and `seen`
    /// (the revision the caller acted on, if it sent one) is not older than the current prompt.
    /// Returns the revision that offers it.
    pub fn offered(&self, id: &str, seen: Option<u64>) -> Result<u64, Refusal> {
        let inner = self.lock();
        if !inner.content.actions.iter().any(|action| action.id == id) {
            return Err(Refusal::NotOffered);
        }
        if let Some(seen) = seen {
            if seen < inner.prompt_revision || seen > inner.revision {
                return Err(Refusal::StaleRevision);
            }
        }
        Ok(inner.revision)
    }

    fn publish(&self, inner: &mut Inner) {
        inner.revision += 1;
        inner.published = render(
            &inner.content,
            &inner.since,
            inner.revision,
            *self.observers.borrow(),
        );
        // No receiver is not an error: nobody is watching.
        let _ = self.changes.send(inner.published.clone());
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves a consistent document (every field is replaced
        // whole), so a poisoned lock is still safe to use.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Counts one open stream in `observers`; dropping it (the stream closed) counts it out.
pub struct ObserverGuard {
    feed: Arc<StatusFeed>,
}

impl Drop for ObserverGuard {
    fn drop(&mut self) {
        let mut inner = self.feed.lock();
        self.feed
            .observers
            .send_modify(|count| *count = count.saturating_sub(1));
        self.feed.publish(&mut inner);
    }
}

fn render(content: &Content, since: &str, revision: u64, observers: u32) -> Published {
    let document = Document {
        version: STATUS_API_VERSION,
        revision,
        state: content.state,
        title: &content.title,
        detail: content.detail.as_deref(),
        since,
        actions: &content.actions,
        controller: &content.controller,
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
