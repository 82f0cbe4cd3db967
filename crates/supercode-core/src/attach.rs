//! Attach: one loopback proxy per live runtime and its one-time URLs (opening one in the
//! browser is [`crate::desktop`]'s).
//!
//! The proxy holds the runtime's token; the browser only ever gets a one-time code that it trades
//! for an HttpOnly session cookie (see `attach-proxy`). Proxies stop when their runtime's receipt
//! goes away, and all of them, awaited, at the core's shutdown.
//!
//! Each step of an attach runs in a `debug` span (`attach_find`, `attach_resolve`,
//! `attach_health`, `attach_proxy_start`), so a subscriber can tell where an attach spends its
//! time (`examples/attach_latency.rs` does); at the app's default log level they are disabled.

use std::collections::HashMap;
use std::sync::Mutex;

use attach_proxy::{AttachProxy, AttachUrl};
use live_runtime::{LiveRuntimeEndpoint, LiveRuntimeStatus};
use tracing::{debug_span, Instrument};

use crate::inventory::find_record;
use crate::resolve::RuntimeAction;
use crate::view::{RuntimeStatus, Snapshot};
use crate::{CoreError, Locations, Refusal};

/// How long a one-time attach link can be redeemed (once), from when it is minted: what the
/// shells tell a user who opens the link themselves.
pub const LINK_TTL: std::time::Duration = attach_proxy::ATTACH_CODE_TTL;

/// The attach proxies this process runs, by runtime endpoint.
#[derive(Default)]
pub struct AttachSessions {
    /// Owned here and nowhere else (codes are minted under the lock), so shutdown can take each
    /// one and wait for it to stop.
    proxies: Mutex<Proxies>,
    /// Woken whenever [`AttachSessions::retain_live`] stops a proxy.
    stopped: tokio::sync::Notify,
}

#[derive(Default)]
struct Proxies {
    running: HashMap<LiveRuntimeEndpoint, AttachProxy>,
    /// Set by [`AttachSessions::shutdown_all`]: no proxy starts after it.
    closed: bool,
}

impl AttachSessions {
    /// Finds the runtime (its receipt, its process alive), health-checks it, and mints a
    /// one-time URL on its proxy. A running proxy already holds the token, so attaching again
    /// checks the runtime through it; only the first attach reads the keychain (resolving the
    /// receipt once more with it) and starts the proxy.
    pub async fn attach(&self, locations: &Locations, id: &str) -> Result<AttachUrl, CoreError> {
        let (found_in, owned) = (locations.clone(), id.to_owned());
        // Reading receipts touches the disk and /proc: keep it off the async workers.
        let record = tokio::task::spawn_blocking(move || {
            let record = debug_span!("attach_find")
                .in_scope(|| find_record(&found_in, &owned, RuntimeAction::Attach))?;
            if let LiveRuntimeStatus::Stale { reason } = &record.status {
                return Err(CoreError::from(Refusal::StaleReceipt {
                    runtime_id: record.runtime_id.clone(),
                    reason: reason.clone(),
                }));
            }
            Ok(record)
        })
        .await
        .map_err(interrupted)??;
        // The token goes only to a listener of this user held by the receipt's own process (or
        // the host that serves it, for a hosted session).
        let pid = Some(record.listener_pid());
        if let Some(check) = self.on_running(&record.endpoint, |proxy| proxy.check_runtime(pid))? {
            check.instrument(debug_span!("attach_health")).await?;
            if let Some(url) = self.on_running(&record.endpoint, AttachProxy::mint_code)? {
                return Ok(url);
            }
            // Its runtime went away meanwhile and the proxy stopped: start afresh below, which
            // refuses if the runtime is really gone.
        }

        let receipts = locations.receipts.clone();
        // Resolving reads the keychain, which may block for seconds.
        let resolved = tokio::task::spawn_blocking(move || {
            let _resolving = debug_span!("attach_resolve").entered();
            live_runtime::resolve_live_runtime(&receipts, &record.endpoint, &record.source)
        })
        .await
        .map_err(interrupted)??;
        attach_proxy::check_health(&resolved.address, &resolved.token, pid)
            .instrument(debug_span!("attach_health"))
            .await?;

        let endpoint = resolved.record.endpoint.clone();
        if let Some(url) = self.on_running(&endpoint, AttachProxy::mint_code)? {
            return Ok(url);
        }
        let started = AttachProxy::start(resolved.address, resolved.token)
            .instrument(debug_span!("attach_proxy_start"))
            .await?;
        let mut proxies = self.lock();
        if proxies.closed {
            // Shut down while it started: it served nobody, so dropping it stops it unawaited.
            return Err(shut_down());
        }
        match proxies.running.get(&endpoint) {
            // Another attach started one meanwhile: keep the first, drop (stop) ours.
            Some(existing) if !existing.is_closed() => Ok(existing.mint_code()),
            _ => {
                let url = started.mint_code();
                proxies.running.insert(endpoint, started);
                Ok(url)
            }
        }
    }

    /// `use_it` applied to the runtime's running proxy, if it has one; refused after shutdown.
    fn on_running<T>(
        &self,
        endpoint: &LiveRuntimeEndpoint,
        use_it: impl FnOnce(&AttachProxy) -> T,
    ) -> Result<Option<T>, CoreError> {
        let proxies = self.lock();
        if proxies.closed {
            return Err(shut_down());
        }
        Ok(proxies
            .running
            .get(endpoint)
            .filter(|proxy| !proxy.is_closed())
            .map(use_it))
    }

    /// Stops the proxies of runtimes that are no longer running.
    pub fn retain_live(&self, snapshot: &Snapshot) {
        let stopped = {
            let proxies = &mut self.lock().running;
            let before = proxies.len();
            // A proxy dropped here stops at once; its runtime is gone, so nobody waits for it.
            proxies.retain(|endpoint, _| {
                snapshot.runtimes.iter().any(|r| {
                    r.status == RuntimeStatus::Running
                        && r.endpoint.as_deref() == Some(endpoint.as_str())
                })
            });
            proxies.len() < before
        };
        if stopped {
            self.stopped.notify_waiters();
        }
    }

    /// Resolves once no proxy runs any more because their runtimes went away (at once if none
    /// runs). Only [`AttachSessions::retain_live`] wakes it.
    pub async fn all_stopped(&self) {
        loop {
            // Registered before the check, so a stop between the check and the wait still wakes.
            let stopped = self.stopped.notified();
            if self.lock().running.is_empty() {
                return;
            }
            stopped.await;
        }
    }

    /// Stops every proxy and waits until each has closed its connections and its port (all at
    /// once, so the wait is one proxy's `attach_proxy::SHUTDOWN_GRACE`, not one per proxy).
    /// No proxy starts afterwards.
    pub async fn shutdown_all(&self) {
        let proxies: Vec<AttachProxy> = {
            let mut proxies = self.lock();
            proxies.closed = true;
            proxies.running.drain().map(|(_, proxy)| proxy).collect()
        };
        futures_util::future::join_all(proxies.into_iter().map(AttachProxy::shutdown)).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Proxies> {
        self.proxies.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn interrupted(source: tokio::task::JoinError) -> CoreError {
    CoreError::Interrupted {
        what: "attach",
        source,
    }
}

fn shut_down() -> CoreError {
    crate::quitting("start an attach proxy")
}
