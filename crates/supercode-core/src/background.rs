//! The core's background work and its shutdown: every task and thread that the core, or a shell
//! on its behalf, runs in the background is tracked here, so [`crate::Supercode::shutdown`] can
//! cancel all of it and wait until it has ended.
//!
//! Each part also stops when its own handle drops, but dropping cannot wait, and a process that
//! exits runs no destructor of what lives in a global (Tauri's managed state, for one). So
//! shutdown is explicit and awaited; `Drop` is the backstop.
//!
//! A new background part joins with one line:
//! - a future (an approval, a task a tray-menu entry starts): `background.track(future)`, then
//!   spawn or await what it returns; it ends at shutdown, dropped at its next `.await`;
//! - a part with its own loop or thread (the watcher): `let part = background.enlist();` stop
//!   when `part.stop` is cancelled, and drop `part.running` once stopped.

use std::future::Future;

use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::TaskTrackerToken;
use tokio_util::task::TaskTracker;

/// Everything one [`crate::Supercode`] runs in the background. Clones share the same work.
#[derive(Clone, Debug, Default)]
pub struct Background {
    /// Cancelled once, at shutdown; every part watches it or a child of it.
    cancel: CancellationToken,
    /// Counts what is still running: tracked futures and enlisted parts.
    tracker: TaskTracker,
}

/// What a part that runs its own loop gets from [`Background::enlist`].
#[derive(Debug)]
pub struct Enlisted {
    /// Cancelled at shutdown (a child token: the part may also cancel it alone, as a handle's
    /// `Drop` does, without stopping anything else).
    pub stop: CancellationToken,
    /// Counts the part as running until dropped: drop it once the part has stopped.
    pub running: TaskTrackerToken,
}

impl Background {
    /// Wraps `future` so that it ends at shutdown (it is dropped at its next `.await`, giving
    /// `None`) and shutdown waits for it to end. It runs wherever the caller spawns or awaits
    /// it: the shell spawns on Tauri's runtime, the core awaits in place.
    pub fn track<F: Future>(&self, future: F) -> impl Future<Output = Option<F::Output>> {
        let cancel = self.cancel.clone();
        self.tracker
            .track_future(async move { cancel.run_until_cancelled(future).await })
    }

    /// Registers a part that runs its own loop (a thread, a task with its own clean-up): it
    /// stops when `stop` is cancelled and shutdown waits until it drops `running`.
    pub fn enlist(&self) -> Enlisted {
        Enlisted {
            stop: self.cancel.child_token(),
            running: self.tracker.token(),
        }
    }

    /// Tells every part to stop, without waiting (see [`Background::shutdown`]).
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Cancels every part and waits until each has ended. Idempotent; work started afterwards
    /// is cancelled at once, and a later call also waits for it.
    pub async fn shutdown(&self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}
