//! The one-shot read of every running runtime's state, for a process without subscriptions
//! (the CLI's `list`).

use live_runtime::{LiveRuntimeEndpoint, LocatedLiveRuntime, ReceiptDir, ReceiptFiles};
use runtime_link::owner::{ListenerLookup, SocketTable};
use tokio::time::Instant;

use super::answering::{Answering, Failure};
use super::client::{self, AttemptError, Fetched, Target};
use super::{not_answering, AgentOptions, Agents};
use crate::view::{AgentStateView, RuntimeOrigin, RuntimeStatus, Snapshot};

/// One running runtime's one-shot read.
struct Read {
    /// Where its receipt says it is (`None`: its receipt was not found running).
    located: Option<LocatedLiveRuntime>,
    /// How to reach it, once its own process was found listening and its token read.
    target: Option<Target>,
    /// Why the last resolution gave no target; the next attempt fails with it.
    unresolved: Option<AttemptError>,
    answering: Answering,
    /// What to show, once an answer or the rule decided.
    state: Option<AgentStateView>,
}

impl Read {
    fn new(
        located: Option<LocatedLiveRuntime>,
        target: Result<Target, AttemptError>,
        options: &AgentOptions,
    ) -> Self {
        let (target, unresolved) = match target {
            Ok(target) => (Some(target), None),
            Err(error) => (None, Some(error)),
        };
        Self {
            located,
            target,
            unresolved,
            answering: Answering::new(options.backoff_initial, options.backoff_max),
            state: None,
        }
    }

    fn pending(&self) -> bool {
        self.state.is_none()
    }

    /// An attempt's outcome, weighed by the rule; `Some(retry_after)` while undecided.
    fn record(
        &mut self,
        outcome: Result<Fetched<AgentStateView>, AttemptError>,
    ) -> Option<std::time::Duration> {
        match outcome {
            Ok(fetched) => {
                self.answering.answered();
                self.state = Some(match fetched {
                    Fetched::Served(view) => view,
                    Fetched::NotServed => AgentStateView::unknown(),
                });
                None
            }
            Err(error) => {
                let verdict = self.answering.failed(Failure::of(&error));
                if verdict.not_answering {
                    self.state = Some(not_answering(&error));
                    return None;
                }
                Some(verdict.retry_after)
            }
        }
    }
}

impl Agents {
    /// Every running runtime's state read once, for a process without subscriptions (the CLI),
    /// judged by the same rule as a subscription's (`answering`): a runtime that answers is
    /// shown as it says, one that turns attempts away is tried again after the same backoff until
    /// the rule decides, and [`super::AgentOptions::one_shot_timeout`] is the read's whole wait
    /// for an answer, so a runtime still silent then is `not-answering` as one that leaves a
    /// subscription's request unanswered is. A healthy runtime answers the first attempt.
    ///
    /// `files` is the receipt directory as the snapshot was built from it, so no receipt is read
    /// again: one blocking pass per round of attempts checks who listens at each runtime's
    /// address (one netlink socket for all of them) and asks the secret store only for runtimes
    /// whose own process listens there. Those get a concurrent `GET` each; every runtime still
    /// undecided is tried again together, after the backoff, which the round's time counts
    /// toward.
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
        let located: Vec<Option<Option<LocatedLiveRuntime>>> = wanted
            .into_iter()
            .map(|endpoint| Some(files.as_ref()?.located(&endpoint?)))
            .collect();
        let first: Vec<Option<LocatedLiveRuntime>> = located.iter().flatten().cloned().collect();
        let mut targets = resolve(&receipts, first).await.into_iter();
        let mut reads: Vec<Option<Read>> = located
            .into_iter()
            .map(|located| {
                let located = located?;
                let target = targets.next()?;
                Some(Read::new(located, target, &options))
            })
            .collect();
        let deadline = Instant::now() + options.one_shot_timeout;
        let finished = tokio::time::timeout_at(deadline, rounds(&mut reads, &receipts, &options));
        if finished.await.is_err() {
            for read in reads.iter_mut().flatten().filter(|read| read.pending()) {
                read.record(Err(AttemptError::NoAnswer(options.one_shot_timeout)));
            }
        }
        for (runtime, read) in snapshot.runtimes.iter_mut().zip(reads) {
            if runtime.status == RuntimeStatus::Running {
                runtime.state = Some(
                    read.and_then(|read| read.state)
                        .unwrap_or_else(AgentStateView::unknown),
                );
            }
        }
        snapshot.order();
    }
}

/// Rounds of attempts at every read still undecided, until none is.
async fn rounds(reads: &mut [Option<Read>], receipts: &ReceiptDir, options: &AgentOptions) {
    loop {
        let started = Instant::now();
        let attempts = reads
            .iter_mut()
            .enumerate()
            .filter_map(|(index, read)| Some((index, read.as_mut().filter(|r| r.pending())?)))
            .map(|(index, read)| {
                let unresolved = read.unresolved.take();
                let target = read.target.as_ref();
                async move {
                    let outcome =
                        match target {
                            Some(target) => client::get_status(target, options.timeouts())
                                .await
                                .map(|fetched| match fetched {
                                    Fetched::Served(document) => Fetched::Served(document.view),
                                    Fetched::NotServed => Fetched::NotServed,
                                }),
                            None => Err(unresolved.unwrap_or(AttemptError::Unresolved)),
                        };
                    (index, outcome)
                }
            });
        let outcomes = futures_util::future::join_all(attempts).await;
        let mut retry_after = None;
        for (index, outcome) in outcomes {
            if let Some(read) = reads[index].as_mut() {
                retry_after = retry_after.max(read.record(outcome));
            }
        }
        let Some(retry_after) = retry_after else {
            return;
        };
        tokio::time::sleep(retry_after.saturating_sub(started.elapsed())).await;
        // Those that had no target (nothing of theirs listened) are looked up again, together.
        let again: Vec<usize> = reads
            .iter()
            .enumerate()
            .filter(|(_, read)| {
                read.as_ref()
                    .is_some_and(|read| read.pending() && read.target.is_none())
            })
            .map(|(index, _)| index)
            .collect();
        if again.is_empty() {
            continue;
        }
        let located = again
            .iter()
            .map(|&index| reads[index].as_ref().and_then(|read| read.located.clone()))
            .collect();
        for (index, target) in again.into_iter().zip(resolve(receipts, located).await) {
            if let Some(read) = reads[index].as_mut() {
                match target {
                    Ok(target) => read.target = Some(target),
                    Err(error) => read.unresolved = Some(error),
                }
            }
        }
    }
}

/// Each located runtime's target, in one blocking pass: one read of every listener instead of
/// a kernel query per runtime; should it fail, the queries answer (and fail, each with its
/// reason, if the kernel cannot be asked).
async fn resolve(
    receipts: &ReceiptDir,
    located: Vec<Option<LocatedLiveRuntime>>,
) -> Vec<Result<Target, AttemptError>> {
    let receipts = receipts.clone();
    tokio::task::spawn_blocking(move || {
        let mut queries = SocketTable::new();
        let mut table = queries.listening();
        let table: &mut dyn ListenerLookup = match &mut table {
            Ok(listeners) => listeners,
            Err(_) => &mut queries,
        };
        located
            .into_iter()
            .map(|located| located_target(&receipts, located, table))
            .collect()
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
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
