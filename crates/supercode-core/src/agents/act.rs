//! Acting on what a runtime asks: finding what it offers now ([`Agents::offered`], for a
//! process without subscriptions) and invoking an action, bound to the revision of the document
//! it was chosen from ([`Agents::act`]).

use live_runtime::{LiveRuntimeRecord, ReceiptDir};

use super::client::{self, ActAnswer, ActError, Fetched, Target};
use super::document;
use super::{Agents, Latest};
use crate::inventory::display_name;
use crate::view::{ActOutcome, AgentActionView, AgentStateView};
use crate::{CoreError, Refusal};

/// The API's refusal code for an action chosen from a document whose prompt has changed since.
const STALE_REVISION: &str = "stale-revision";

/// The names an action is told by in its errors: the runtime's display name and the action as
/// the user may read it (sanitized, since a shell may pass any text).
struct Asked {
    name: String,
    action: String,
}

impl Asked {
    fn new(record: &LiveRuntimeRecord, action: &str) -> Self {
        Self {
            name: display_name(Some(record), None),
            action: document::clean(action, false, document::LABEL_CAP),
        }
    }

    /// Not offered by the runtime whose latest document says `says` (its title), if one was read.
    fn not_offered(&self, says: Option<&AgentStateView>) -> CoreError {
        CoreError::ActionNotOffered {
            name: self.name.clone(),
            action: self.action.clone(),
            says: says.and_then(|view| view.title.clone()),
            offers: says.map(|view| view.actions.iter().map(|a| a.id.clone()).collect()),
        }
    }

    fn failed(&self, reason: String) -> CoreError {
        CoreError::ActionFailed {
            name: self.name.clone(),
            action: self.action.clone(),
            reason,
        }
    }

    fn prompt_changed(&self) -> CoreError {
        Refusal::PromptChanged {
            name: self.name.clone(),
            action: self.action.clone(),
        }
        .into()
    }
}

impl Agents {
    /// The runtime's latest document: its subscription's, or without one a fresh `GET`, read
    /// as following the last look at it ([`Agents::offered`]) if there was one.
    async fn latest_of(
        &self,
        record: &LiveRuntimeRecord,
        target: &Target,
        asked: &Asked,
    ) -> Result<Latest, CoreError> {
        let endpoint = record.endpoint.as_str();
        if let Some(latest) = self.latest(endpoint) {
            return Ok(latest);
        }
        match client::get_status(target, self.inner.options.timeouts()).await {
            Ok(Fetched::Served(document)) => {
                let looked = self.inner.looked().get(endpoint).cloned();
                let looked = looked
                    .filter(|looked| looked.revision <= document.revision)
                    .map(|looked| Latest::after(None, looked));
                Ok(Latest::after(looked.as_ref(), document))
            }
            Ok(Fetched::NotServed) => Err(CoreError::NoStatusApi {
                name: asked.name.clone(),
            }),
            Err(error) => Err(asked.failed(error.to_string())),
        }
    }

    /// What the runtime `record` offers as `action` in its latest document, and that document's
    /// revision, which [`Agents::act`] takes back: a process without subscriptions (the CLI)
    /// decides whether to ask from this one document and acts on it.
    pub(crate) async fn offered(
        &self,
        record: &LiveRuntimeRecord,
        action: &str,
    ) -> Result<(AgentActionView, u64), CoreError> {
        // An action id no document can hold is still looked up, so that the refusal lists what
        // the runtime does offer.
        let asked = Asked::new(record, action);
        let target = resolve_off_thread(&self.inner.receipts, record).await?;
        let latest = self.latest_of(record, &target, &asked).await?;
        let revision = latest.document.revision;
        self.inner
            .looked()
            .insert(record.endpoint.as_str().to_owned(), latest.document.clone());
        let view = &latest.document.view;
        let offered = view.actions.iter().find(|a| a.id == action).cloned();
        Ok((
            offered.ok_or_else(|| asked.not_offered(Some(view)))?,
            revision,
        ))
    }

    /// Invokes `action` on the running runtime `record`, chosen from its document of revision
    /// `seen` (the one the user was shown): only if the runtime's latest document still asks what
    /// that one asked ([`Refusal::PromptChanged`] otherwise) and offers `action`, and with `seen`,
    /// so the runtime refuses it too (`stale-revision`) should its prompt have changed since.
    /// Nothing reaches the runtime for an action it does not offer, or from a prompt it no longer
    /// shows.
    pub(crate) async fn act(
        &self,
        record: &LiveRuntimeRecord,
        action: &str,
        seen: u64,
    ) -> Result<ActOutcome, CoreError> {
        let asked = Asked::new(record, action);
        if !document::is_valid_action_id(action) {
            return Err(asked.not_offered(None));
        }
        let target = resolve_off_thread(&self.inner.receipts, record).await?;
        let latest = self.latest_of(record, &target, &asked).await?;
        if !latest.shows(seen) {
            tracing::info!(runtime = %asked.name, action, seen, latest = latest.document.revision, "action refused: the prompt changed");
            return Err(asked.prompt_changed());
        }
        let Some(offered) = latest.document.view.actions.iter().find(|a| a.id == action) else {
            return Err(asked.not_offered(Some(&latest.document.view)));
        };
        let label = offered.label.clone();
        let timeout = self.inner.options.action_timeout;
        match client::post_action(&target, action, seen, timeout).await {
            Ok(ActAnswer::Accepted) => {
                tracing::info!(runtime = %asked.name, action, "action accepted");
                Ok(ActOutcome {
                    id: record.endpoint.as_str().to_owned(),
                    action: action.to_owned(),
                    message: format!("{} accepted {label}", asked.name),
                })
            }
            Ok(ActAnswer::Refused { code, .. }) if code.as_deref() == Some(STALE_REVISION) => {
                Err(asked.prompt_changed())
            }
            Ok(ActAnswer::Refused {
                status,
                code,
                message,
            }) => Err(CoreError::ActionRefused {
                name: asked.name.clone(),
                action: asked.action.clone(),
                code: code.unwrap_or_else(|| format!("http-{status}")),
                reason: message.unwrap_or_else(|| "it gave no reason".to_owned()),
            }),
            Err(ActError::Timeout(after)) => Err(CoreError::ActionTimedOut {
                name: asked.name,
                action: asked.action,
                after,
            }),
            Err(ActError::Attempt(error)) => Err(asked.failed(error.to_string())),
        }
    }
}

async fn resolve_off_thread(
    receipts: &ReceiptDir,
    record: &LiveRuntimeRecord,
) -> Result<Target, CoreError> {
    let (receipts, endpoint, source) = (
        receipts.clone(),
        record.endpoint.clone(),
        record.source.clone(),
    );
    tokio::task::spawn_blocking(move || {
        live_runtime::resolve_live_runtime(&receipts, &endpoint, &source)
    })
    .await
    .map_err(|e| CoreError::ActionFailed {
        name: String::new(),
        action: String::new(),
        reason: format!("resolving the runtime was interrupted: {e}"),
    })?
    .map(Target::from)
    .map_err(CoreError::from)
}
