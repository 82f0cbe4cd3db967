//! The one-shot read of every running runtime's state, for a process without subscriptions
//! (the CLI's `list`).

use live_runtime::{LiveRuntimeEndpoint, LocatedLiveRuntime, ReceiptDir, ReceiptFiles};
use runtime_link::owner::{ListenerLookup, SocketTable};

use super::answering::{Answering, Failure};
use super::client::{self, AttemptError, Fetched, Target};
use super::{document, not_answering, AgentOptions, Agents};
use crate::view::{AgentStateView, RuntimeOrigin, RuntimeStatus, Snapshot};

impl Agents {
    /// Every running runtime's state read once, for a process without subscriptions (the CLI).
    /// `files` is the receipt directory as the snapshot was built from it, so no receipt is read
    /// again: one blocking pass checks who listens at each runtime's address (one netlink socket
    /// for all of them) and asks the secret store only for runtimes whose own process listens
    /// there. Those get a concurrent `GET` each, bounded by
    /// [`super::AgentOptions::one_shot_timeout`]. A failed attempt is judged by the one rule the
    /// subscriptions follow ([`judged`]).
    pub(crate) async fn read_once(&self, snapshot: &mut Snapshot, files: Option<ReceiptFiles>) {
        let options = self.inner.options.clone();
        let receipts = self.inner.receipts.clone();
        let wanted: Vec<Option<LiveRuntimeEndpoint>> = snapshot
            .runtimes
            .iter()
            .map(|runtime| {
                let receipt_backed = runtime.status == RuntimeStatus::Running
                    && runtime.origin != RuntimeOrigin::Catalog;
                receipt_backed
                    .then(|| runtime.endpoint.as_deref()?.parse().ok())
                    .flatten()
            })
            .collect();
        let targets = tokio::task::spawn_blocking(move || {
            // One read of every listener instead of a kernel query per runtime; should it fail,
            // the queries answer (and fail, each with its reason, if the kernel cannot be asked).
            let mut queries = SocketTable::new();
            let mut table = queries.listening();
            let table: &mut dyn ListenerLookup = match &mut table {
                Ok(listeners) => listeners,
                Err(_) => &mut queries,
            };
            wanted
                .into_iter()
                .map(|endpoint| {
                    let endpoint = endpoint?;
                    let located = files.as_ref()?.located(&endpoint);
                    Some(located_target(&receipts, located, table))
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
        let reads = targets.into_iter().map(|target| {
            let options = options.clone();
            async move {
                let target = match target? {
                    Ok(target) => target,
                    Err(error) => return Some(judged(&options, &error)),
                };
                let read = client::get_status(&target, options.timeouts());
                Some(
                    match tokio::time::timeout(options.one_shot_timeout, read).await {
                        Ok(Ok(Fetched::Served(document))) => document.view,
                        Ok(Ok(Fetched::NotServed)) => AgentStateView::unknown(),
                        Ok(Err(error)) => judged(&options, &error),
                        Err(_) => {
                            judged(&options, &AttemptError::NoAnswer(options.one_shot_timeout))
                        }
                    },
                )
            }
        });
        let states = futures_util::future::join_all(reads).await;
        for (runtime, state) in snapshot.runtimes.iter_mut().zip(states) {
            if runtime.status == RuntimeStatus::Running {
                runtime.state = Some(state.unwrap_or_else(AgentStateView::unknown));
            }
        }
        snapshot.order();
    }
}

/// A located runtime's target, its listener checked first (in `table`) so that the secret store
/// is asked only for a runtime whose own process listens at its address.
fn located_target(
    receipts: &ReceiptDir,
    located: Option<LocatedLiveRuntime>,
    table: &mut dyn ListenerLookup,
) -> Result<Target, AttemptError> {
    let located = located.ok_or(AttemptError::Unresolved)?;
    runtime_link::verify_listener_in(table, &located.address, Some(located.record.listener_pid()))?;
    Ok(located.resolve(receipts)?.into())
}

/// A one-shot read's failed attempt, as the one rule (`answering`) judges a runtime's first
/// failure: left unanswered, it is `not-answering`; turned away (nothing listening, refused), it
/// may be restarting its server, which one attempt cannot tell, so its state is unknown, with
/// why. A subscription that keeps being turned away says `not-answering` after the rule's
/// further attempts; `list`, which makes one, does not wait for them.
fn judged(options: &AgentOptions, error: &AttemptError) -> AgentStateView {
    let mut answering = Answering::new(options.backoff_initial, options.backoff_max);
    if answering.failed(Failure::of(error)).not_answering {
        return not_answering(error);
    }
    AgentStateView {
        detail: Some(document::clean(
            &format!("{error} (once: it may be restarting)"),
            false,
            document::MESSAGE_CAP,
        )),
        ..AgentStateView::unknown()
    }
}
