//! Attach: one loopback proxy per live runtime and its one-time URLs (opening one in the
//! browser is [`crate::desktop`]'s).
//!
//! The proxy holds the runtime's token; the browser only ever gets a one-time code that it trades
//! for an HttpOnly session cookie (see `attach-proxy`). Proxies stop when their runtime's receipt
//! goes away.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use attach_proxy::{AttachProxy, AttachUrl};
use live_runtime::{LiveRuntimeEndpoint, LiveRuntimeRecord, LiveRuntimeStatus};

use crate::view::{RuntimeStatus, Snapshot};
use crate::{CoreError, Locations, Refusal};

/// The attach proxies this process runs, by runtime endpoint.
#[derive(Default)]
pub struct AttachSessions {
    proxies: Mutex<HashMap<LiveRuntimeEndpoint, Arc<AttachProxy>>>,
    /// Woken whenever [`AttachSessions::retain_live`] stops a proxy.
    stopped: tokio::sync::Notify,
}

impl AttachSessions {
    /// Resolves the runtime (source and process identity), health-checks it with its token,
    /// starts or reuses its proxy, and mints a one-time URL.
    pub async fn attach(&self, locations: &Locations, id: &str) -> Result<AttachUrl, CoreError> {
        let receipts = locations.receipts.clone();
        let id = id.to_owned();
        // Listing and resolving read the keychain, which may block for seconds: keep it off the
        // async workers.
        let resolved = tokio::task::spawn_blocking(move || {
            let record = find_record(&receipts, &id)?;
            if let LiveRuntimeStatus::Stale { reason } = &record.status {
                return Err(CoreError::from(Refusal::StaleReceipt {
                    runtime_id: record.runtime_id.clone(),
                    reason: reason.clone(),
                }));
            }
            Ok(live_runtime::resolve_live_runtime(
                &receipts,
                &record.endpoint,
                &record.source,
            )?)
        })
        .await
        .map_err(|source| CoreError::Interrupted {
            what: "attach",
            source,
        })??;
        // The token goes only to a listener of this user held by the receipt's own process.
        let pid = Some(resolved.record.pid);
        attach_proxy::check_health(&resolved.address, &resolved.token, pid).await?;

        let endpoint = resolved.record.endpoint.clone();
        if let Some(proxy) = self.running_proxy(&endpoint) {
            return Ok(proxy.mint_code());
        }
        let started = Arc::new(AttachProxy::start(resolved.address, resolved.token).await?);
        let proxy = {
            let mut proxies = self.lock();
            // Another attach may have started one meanwhile: keep the first, drop ours.
            match proxies.get(&endpoint) {
                Some(existing) if !existing.is_closed() => existing.clone(),
                _ => {
                    proxies.insert(endpoint, started.clone());
                    started
                }
            }
        };
        Ok(proxy.mint_code())
    }

    fn running_proxy(&self, endpoint: &LiveRuntimeEndpoint) -> Option<Arc<AttachProxy>> {
        self.lock()
            .get(endpoint)
            .filter(|proxy| !proxy.is_closed())
            .cloned()
    }

    /// Stops the proxies of runtimes that are no longer running.
    pub fn retain_live(&self, snapshot: &Snapshot) {
        let stopped = {
            let mut proxies = self.lock();
            let before = proxies.len();
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
            if self.lock().is_empty() {
                return;
            }
            stopped.await;
        }
    }

    /// Stops every proxy.
    pub async fn shutdown_all(&self) {
        let proxies: Vec<_> = self.lock().drain().map(|(_, proxy)| proxy).collect();
        for proxy in proxies {
            if let Ok(proxy) = Arc::try_unwrap(proxy) {
                proxy.shutdown().await;
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<LiveRuntimeEndpoint, Arc<AttachProxy>>> {
        self.proxies.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Finds a live record by its endpoint, or by its runtime id when that is unambiguous.
pub(crate) fn find_record(
    receipts: &live_runtime::ReceiptDir,
    id: &str,
) -> Result<LiveRuntimeRecord, CoreError> {
    if let Ok(endpoint) = id.parse::<LiveRuntimeEndpoint>() {
        let list = live_runtime::list_live_runtimes(receipts)?;
        return list
            .runtimes
            .into_iter()
            .find(|r| r.endpoint == endpoint)
            .ok_or_else(|| CoreError::UnknownRuntime { id: id.to_owned() });
    }
    Ok(live_runtime::find_live_runtime(receipts, id)?)
}
