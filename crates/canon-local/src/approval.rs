//! The approval workflow: drive a pending registration to an API key in `agents.json` and the
//! secret store, resumable across restarts.
//!
//! 1. Load the pending entry for the profile (it must exist).
//! 2. If it has no `requestId`, record which Canon API it goes to ([`RegistrationOrigins`]),
//!    submit it (with its `localRegistrationId`, so a retry after a crash returns the same
//!    request) and save `requestId`/`pollToken` *before* polling. If it has one, refuse to
//!    resume against any API but the one that issued its poll token.
//! 3. Poll until approved, rejected, or the deadline: the server's interval if it gives one,
//!    exponential backoff on transient errors.
//! 4. On approval with a key: store it in the secret store, merge the profile into
//!    `agents.json` (unknown fields kept), acknowledge, clear the pending entry.

use std::time::Duration;

use tokio::time::Instant;

use crate::client::{
    is_tls, resolve_base_url, CanonClient, ClientError, RegistrationPhase, RegistrationRequest,
    RegistrationStatus, SubmittedRegistration, DEFAULT_BASE_URL,
};
use crate::error::CanonFileError;
use crate::home::CanonHome;
use crate::json::iso_now;
use crate::origins::RegistrationOrigins;
use crate::pending::{
    clear_pending_registration, load_pending_registrations, update_pending_registration,
    PendingPatch, PendingRegistration,
};
use crate::profiles::{load_profiles, merge_agent_profile, AgentProfile};
use live_runtime::{SecretStore, SecretStoreError, Sensitive};

/// Default wait between polls (the package's `POLL_INTERVAL_MS`): an owner approves on a phone
/// within seconds, and a 2 s cadence keeps the tray responsive without loading Canon.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// How long one `approve` call polls before giving up (the package's `POLL_TIMEOUT_MS`, 5 min).
/// The pending entry is kept, so a later call resumes the same request.
pub const APPROVAL_DEADLINE: Duration = Duration::from_secs(5 * 60);

/// Ceiling of the exponential backoff after errors: long enough to ride out a Canon outage
/// without hammering it, short enough that recovery is noticed within half a minute.
pub const MAX_POLL_BACKOFF: Duration = Duration::from_secs(30);

/// Floor under a server-given interval, so a buggy `Retry-After: 0` cannot make us spin.
pub const MIN_POLL_INTERVAL: Duration = Duration::from_millis(250);

/// How many times an acknowledgement is attempted: the key is already stored by then, so a
/// few quick retries are enough and the rest is left to the next `approve`.
const ACK_ATTEMPTS: u32 = 3;

/// The secret-store account holding a profile's API key: `canon-api-key:<profile>`.
pub fn api_key_account(profile: &str) -> String {
    format!("canon-api-key:{profile}")
}

/// Tuning for [`approve`]; `Default` gives the production values.
#[derive(Debug, Clone)]
pub struct ApprovalOptions {
    /// Overrides the base URL (else profile `baseUrl`, `CANON_BASE_URL`, [`DEFAULT_BASE_URL`]).
    pub base_url: Option<String>,
    /// Overall deadline of this call ([`APPROVAL_DEADLINE`]).
    pub deadline: Duration,
    /// Interval between polls when the server gives none ([`POLL_INTERVAL`]).
    pub poll_interval: Duration,
    /// Floor under any interval, the server's included ([`MIN_POLL_INTERVAL`]).
    pub min_poll_interval: Duration,
    /// Backoff ceiling after errors ([`MAX_POLL_BACKOFF`]).
    pub max_backoff: Duration,
}

impl Default for ApprovalOptions {
    fn default() -> Self {
        Self {
            base_url: None,
            deadline: APPROVAL_DEADLINE,
            poll_interval: POLL_INTERVAL,
            min_poll_interval: MIN_POLL_INTERVAL,
            max_backoff: MAX_POLL_BACKOFF,
        }
    }
}

/// Progress reported while [`approve`] runs. Carries no secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalState {
    /// A new registration request was submitted and saved.
    Submitted {
        /// Canon's request id.
        request_id: String,
    },
    /// The saved request is being polled again (after a restart or an earlier expiry).
    Resumed {
        /// Canon's request id.
        request_id: String,
    },
    /// Canon answered a poll: `pending`, `approving`, or an unknown phase.
    Waiting {
        /// What Canon said.
        phase: RegistrationPhase,
    },
    /// A transient error; the next attempt comes after `delay`.
    Retrying {
        /// Consecutive failures so far.
        attempt: u32,
        /// Wait before the next attempt.
        delay: Duration,
        /// What failed (secret-free).
        reason: String,
    },
    /// Approved: the key is stored, `agents.json` updated, Canon acknowledged.
    Approved {
        /// `agentId`.
        agent_id: String,
        /// `agentName`.
        agent_name: String,
    },
    /// The owner rejected the registration; the pending entry stays until [`reject`].
    Rejected,
    /// The deadline passed; the pending entry stays, so a later call resumes.
    Expired,
}

/// How an [`approve`] call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalOutcome {
    /// The profile is registered and usable.
    Approved {
        /// `agentId`.
        agent_id: String,
        /// `agentName`.
        agent_name: String,
    },
    /// The owner rejected it.
    Rejected {
        /// `agentName`, if Canon sent one.
        agent_name: Option<String>,
    },
    /// The package's `timeout` result: the deadline passed, or Canon reported `approved` without
    /// a key (it was already delivered elsewhere). The pending entry is kept.
    Expired {
        /// The request that was being polled.
        request_id: String,
        /// Canon said `approved` but sent no API key.
        approved_without_key: bool,
    },
}

/// The approval workflow failed.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// Nothing to approve.
    #[error("no pending registration for profile \"{profile}\"; start the registration from the runtime first")]
    NoPendingRegistration {
        /// The profile.
        profile: String,
    },
    /// A Canon file could not be read or written.
    #[error(transparent)]
    File(#[from] CanonFileError),
    /// Canon refused or could not be reached.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The API key could not be stored.
    #[error(
        "cannot store the API key in the secret store ({0}); unlock the keychain and approve again"
    )]
    SecretStore(#[from] SecretStoreError),
    /// The runtime shut down while the key was being stored; nothing was acknowledged.
    #[error("the approval was interrupted while storing the API key; approve again")]
    Interrupted,
    /// Everything is stored, but Canon was not told; the pending entry is kept.
    #[error("the agent is registered, but Canon could not be told the key was received ({0}); approve again later to finish")]
    AckFailed(ClientError),
    /// The registration was submitted to another Canon API than the one configured now; its
    /// poll token is not sent anywhere else.
    #[error("the registration for \"{profile}\" was submitted to {issued_by}, but the Canon base URL is now {configured}; its poll token is only sent to the API that issued it: set CANON_BASE_URL back to {issued_by} to finish it, or dismiss it and register again")]
    OtherCanon {
        /// The profile.
        profile: String,
        /// The API that issued the poll token.
        issued_by: String,
        /// The API configured now.
        configured: String,
    },
}

/// The `description` sent with a registration submitted by the tray.
pub const REGISTRATION_DESCRIPTION: &str = "Registered from Supercode Tray";

/// Runs the approval workflow for `profile` (see the module docs). `progress` sees every state
/// change. Rejection and expiry are outcomes, not errors. `origins` is where the tray remembers
/// which Canon API each registration belongs to.
pub async fn approve(
    home: &CanonHome,
    origins: &RegistrationOrigins,
    profile: &str,
    secrets: &SecretStore,
    options: &ApprovalOptions,
    mut progress: impl FnMut(ApprovalState),
) -> Result<ApprovalOutcome, ApprovalError> {
    let deadline = Instant::now() + options.deadline;
    let entry = pending_entry(home, profile)?;
    // Read agents.json now: a corrupt file must stop us before Canon issues a key.
    let existing = load_profiles(home)?.get(profile).cloned();
    let client = CanonClient::new(base_url_to_use(options, existing.as_ref()))?;
    let approval = Approval {
        home,
        origins,
        profile,
        secrets,
        options,
        deadline,
        profile_base_url: base_url_to_keep(existing.as_ref(), &client),
        client,
        entry,
    };
    let (request_id, poll_token) = match approval.entry.request_id.clone() {
        Some(request_id) => approval.resume(request_id, &mut progress)?,
        None => approval.submit(&mut progress).await?,
    };
    match approval
        .wait_for_decision(&request_id, poll_token.as_ref(), &mut progress)
        .await?
    {
        Decision::Rejected { agent_name } => {
            progress(ApprovalState::Rejected);
            Ok(ApprovalOutcome::Rejected { agent_name })
        }
        Decision::Approved(status) => {
            approval
                .accept(status, &request_id, poll_token.as_ref(), &mut progress)
                .await
        }
        Decision::DeadlinePassed => {
            progress(ApprovalState::Expired);
            Ok(ApprovalOutcome::Expired {
                request_id,
                approved_without_key: false,
            })
        }
    }
}

/// The pending entry for `profile`; there must be one.
fn pending_entry(home: &CanonHome, profile: &str) -> Result<PendingRegistration, ApprovalError> {
    load_pending_registrations(home)?
        .get(profile)
        .cloned()
        .ok_or_else(|| ApprovalError::NoPendingRegistration {
            profile: profile.to_owned(),
        })
}

/// The Canon API this approval talks to: the caller's override, else the profile's own.
fn base_url_to_use(options: &ApprovalOptions, existing: Option<&AgentProfile>) -> String {
    options
        .base_url
        .clone()
        .unwrap_or_else(|| resolve_base_url(existing.and_then(|p| p.base_url.as_deref())))
}

/// The `baseUrl` written into the approved profile. Keep the profile's own spelling when it
/// names this API (the tray did not put it there); record a non-default API only when it is
/// https, so a plain-http (loopback) API used for this exchange never becomes the one the
/// package keeps using.
fn base_url_to_keep(existing: Option<&AgentProfile>, client: &CanonClient) -> Option<String> {
    match existing.and_then(|p| p.base_url.clone()) {
        Some(b) if b.trim_end_matches('/') == client.base_url() => Some(b),
        _ if client.base_url() != DEFAULT_BASE_URL && is_tls(client.base_url()) => {
            Some(client.base_url().to_owned())
        }
        _ => None,
    }
}

/// What Canon decided about the request, or that the deadline came first.
enum Decision {
    Rejected {
        agent_name: Option<String>,
    },
    /// The status that said `approved`, with the key if Canon sent one.
    Approved(RegistrationStatus),
    DeadlinePassed,
}

/// One approval in progress: the registration, the Canon API it goes to, and where its result
/// is written.
struct Approval<'a> {
    home: &'a CanonHome,
    origins: &'a RegistrationOrigins,
    profile: &'a str,
    secrets: &'a SecretStore,
    options: &'a ApprovalOptions,
    deadline: Instant,
    client: CanonClient,
    profile_base_url: Option<String>,
    entry: PendingRegistration,
}

impl Approval<'_> {
    /// Step 2, already submitted: poll the saved request, but only at the API that issued its
    /// poll token.
    fn resume(
        &self,
        request_id: String,
        progress: &mut impl FnMut(ApprovalState),
    ) -> Result<(String, Option<Sensitive<String>>), ApprovalError> {
        let local_id = &self.entry.local_registration_id;
        match self.origins.base_url_of(local_id)? {
            Some(issued_by) if issued_by != self.client.base_url() => {
                return Err(ApprovalError::OtherCanon {
                    profile: self.profile.to_owned(),
                    issued_by,
                    configured: self.client.base_url().to_owned(),
                });
            }
            Some(_) => {}
            // Submitted by a runtime through the package, so its API is unknown: the first
            // API polled is the one it stays with.
            None => self.origins.record(local_id, self.client.base_url())?,
        }
        progress(ApprovalState::Resumed {
            request_id: request_id.clone(),
        });
        Ok((request_id, self.entry.poll_token.clone()))
    }

    /// Step 2, not yet submitted: record the API, submit, and save the request before polling.
    async fn submit(
        &self,
        progress: &mut impl FnMut(ApprovalState),
    ) -> Result<(String, Option<Sensitive<String>>), ApprovalError> {
        let request = RegistrationRequest {
            name: self.profile.to_owned(),
            description: REGISTRATION_DESCRIPTION.to_owned(),
            client_type: self.entry.client_type.clone(),
            local_registration_id: self.entry.local_registration_id.clone(),
        };
        self.origins
            .record(&self.entry.local_registration_id, self.client.base_url())?;
        let submitted = self.register(&request, progress).await?;
        update_pending_registration(
            self.home,
            self.profile,
            PendingPatch {
                request_id: Some(submitted.request_id.clone()),
                poll_token: submitted.poll_token.clone(),
                client_type: None,
            },
        )?;
        progress(ApprovalState::Submitted {
            request_id: submitted.request_id.clone(),
        });
        Ok((submitted.request_id, submitted.poll_token))
    }

    /// Submits `request`, retrying transient errors with backoff while the deadline allows.
    async fn register(
        &self,
        request: &RegistrationRequest,
        progress: &mut impl FnMut(ApprovalState),
    ) -> Result<SubmittedRegistration, ApprovalError> {
        let mut failures = 0;
        loop {
            match self.client.register(request).await {
                Ok(s) => return Ok(s),
                Err(e) if e.is_transient() => {
                    failures += 1;
                    let delay = backoff(self.options, failures);
                    if Instant::now() + delay >= self.deadline {
                        return Err(e.into());
                    }
                    progress(ApprovalState::Retrying {
                        attempt: failures,
                        delay,
                        reason: e.to_string(),
                    });
                    tokio::time::sleep(delay).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Step 3: polls until Canon approves or rejects, or the deadline passes.
    async fn wait_for_decision(
        &self,
        request_id: &str,
        poll_token: Option<&Sensitive<String>>,
        progress: &mut impl FnMut(ApprovalState),
    ) -> Result<Decision, ApprovalError> {
        let options = self.options;
        let mut delay = options.poll_interval.max(options.min_poll_interval);
        let mut failures = 0;
        while Instant::now() < self.deadline {
            tokio::time::sleep_until((Instant::now() + delay).min(self.deadline)).await;
            let remaining = self.deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                break;
            }
            let polled =
                tokio::time::timeout(remaining, self.client.check_status(request_id, poll_token))
                    .await;
            let status = match polled {
                Err(_elapsed) => break,
                Ok(Ok(status)) => status,
                Ok(Err(e)) if e.is_transient() => {
                    failures += 1;
                    delay = backoff(options, failures);
                    progress(ApprovalState::Retrying {
                        attempt: failures,
                        delay,
                        reason: e.to_string(),
                    });
                    continue;
                }
                Ok(Err(e)) => return Err(e.into()),
            };
            failures = 0;
            delay = status
                .retry_after
                .unwrap_or(options.poll_interval)
                .max(options.min_poll_interval);
            match status.phase {
                RegistrationPhase::Rejected => {
                    return Ok(Decision::Rejected {
                        agent_name: status.agent_name,
                    })
                }
                RegistrationPhase::Approved => return Ok(Decision::Approved(status)),
                phase => progress(ApprovalState::Waiting { phase }),
            }
        }
        Ok(Decision::DeadlinePassed)
    }

    /// Step 4: takes the key Canon sent and makes the profile usable: store the key, record the
    /// profile, acknowledge, clear the pending entry.
    async fn accept(
        &self,
        status: RegistrationStatus,
        request_id: &str,
        poll_token: Option<&Sensitive<String>>,
        progress: &mut impl FnMut(ApprovalState),
    ) -> Result<ApprovalOutcome, ApprovalError> {
        let Some(api_key) = status.api_key else {
            progress(ApprovalState::Expired);
            return Ok(ApprovalOutcome::Expired {
                request_id: request_id.to_owned(),
                approved_without_key: true,
            });
        };
        let agent_id = status
            .agent_id
            .ok_or_else(|| ClientError::InvalidResponse("approved without agentId".into()))?;
        let agent_name = status.agent_name.unwrap_or_else(|| self.profile.to_owned());
        self.store_key(&api_key).await?;
        self.record_profile(api_key, &agent_id, &agent_name)?;
        self.acknowledge(request_id, poll_token).await?;
        self.clear_pending()?;
        progress(ApprovalState::Approved {
            agent_id: agent_id.clone(),
            agent_name: agent_name.clone(),
        });
        Ok(ApprovalOutcome::Approved {
            agent_id,
            agent_name,
        })
    }

    /// Puts the API key in the secret store.
    async fn store_key(&self, api_key: &Sensitive<String>) -> Result<(), ApprovalError> {
        // Keychain calls block (D-Bus, a possible unlock prompt): keep them off the async workers.
        let store = self.secrets.clone();
        let (account, key) = (api_key_account(self.profile), api_key.clone());
        match tokio::task::spawn_blocking(move || store.set(&account, &key)).await {
            Ok(result) => Ok(result?),
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(ApprovalError::Interrupted),
        }
    }

    /// Merges the approved profile into `agents.json`.
    fn record_profile(
        &self,
        api_key: Sensitive<String>,
        agent_id: &str,
        agent_name: &str,
    ) -> Result<(), ApprovalError> {
        let mut update = AgentProfile::new(api_key, agent_id, agent_name, iso_now());
        update.client_type = self.entry.client_type.clone();
        update.base_url = self.profile_base_url.clone();
        merge_agent_profile(self.home, self.profile, update)?;
        Ok(())
    }

    /// Tells Canon the key was received, with a few quick retries.
    async fn acknowledge(
        &self,
        request_id: &str,
        poll_token: Option<&Sensitive<String>>,
    ) -> Result<(), ApprovalError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self
                .client
                .ack_registration_status(request_id, poll_token)
                .await
            {
                Ok(()) => return Ok(()),
                Err(e) if e.is_transient() && attempt < ACK_ATTEMPTS => {
                    tokio::time::sleep(backoff(self.options, attempt)).await;
                }
                Err(e) => return Err(ApprovalError::AckFailed(e)),
            }
        }
    }

    /// Removes the pending entry and the tray's record of its API: the registration is done.
    fn clear_pending(&self) -> Result<(), ApprovalError> {
        clear_pending_registration(self.home, self.profile)?;
        self.origins.forget(&self.entry.local_registration_id)?;
        Ok(())
    }
}

fn backoff(options: &ApprovalOptions, failures: u32) -> Duration {
    let base = options.poll_interval.max(options.min_poll_interval);
    base.saturating_mul(2u32.saturating_pow(failures.min(16)))
        .min(options.max_backoff.max(base))
}

/// Dismisses a registration locally (after Canon rejected it, or when the user gives up):
/// clears the pending entry and the tray's record of its API. Canon is not contacted. Returns
/// whether there was a registration for `profile` to dismiss.
pub fn reject(
    home: &CanonHome,
    origins: &RegistrationOrigins,
    profile: &str,
) -> Result<bool, CanonFileError> {
    let entry = load_pending_registrations(home)?.get(profile).cloned();
    let dismissed = clear_pending_registration(home, profile)?;
    if let Some(entry) = entry {
        origins.forget(&entry.local_registration_id)?;
    }
    Ok(dismissed)
}
