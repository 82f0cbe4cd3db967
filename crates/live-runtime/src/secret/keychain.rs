//! The OS keychain backend of [`SecretStore`], through `keyring`.
//!
//! Keychain calls can block for a long time (a locked collection waiting on a hidden unlock
//! prompt, a wedged D-Bus peer), so they run on one dedicated worker thread, one at a time, and
//! the caller waits at most [`KEYCHAIN_TIMEOUT`]. A worker whose call timed out is retired, so
//! later calls do not queue behind it. `NoEntry` is `Ok(None)` on read and success on delete.
//!
//! On Linux and the BSDs the calls go to `secret_service`, which keeps the worker's Secret Service
//! session open between calls; elsewhere to `keyring::Entry`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[cfg(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd"))]
use super::secret_service as platform;
use super::{SecretStore, SecretStoreError, Sensitive};

/// How long a caller waits for one keychain operation before giving up with
/// [`SecretStoreError::TimedOut`].
///
/// A healthy Secret Service answers in milliseconds; 5 s leaves room for a slow D-Bus activation of
/// the keyring daemon on a loaded machine while still bounding the worst case (a locked keyring
/// whose unlock prompt nobody sees) to something a user will tolerate once. Override it with
/// `SUPERCODE_KEYCHAIN_TIMEOUT_MS` (tests use a short bound to prove the timeout path).
pub const KEYCHAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Environment variable overriding [`KEYCHAIN_TIMEOUT`], in milliseconds.
pub(super) const KEYCHAIN_TIMEOUT_ENV: &str = "SUPERCODE_KEYCHAIN_TIMEOUT_MS";

/// Stores (or replaces) the secret for `account`.
pub(super) fn set(
    timeout: Duration,
    account: &str,
    secret: &Sensitive<String>,
) -> Result<(), SecretStoreError> {
    let account = account.to_string();
    let secret = secret.clone();
    on_keychain_thread(timeout, move || {
        platform::set(SecretStore::SERVICE, &account, &secret).map_err(keyring_error)
    })?
}

/// Reads the secret for `account`; `Ok(None)` when there is none.
pub(super) fn get(
    timeout: Duration,
    account: &str,
) -> Result<Option<Sensitive<String>>, SecretStoreError> {
    let account = account.to_string();
    on_keychain_thread(timeout, move || {
        match platform::get(SecretStore::SERVICE, &account) {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(keyring_error(e)),
        }
    })?
}

/// Deletes the secret for `account`; deleting a missing one is `Ok(())`.
pub(super) fn delete(timeout: Duration, account: &str) -> Result<(), SecretStoreError> {
    let account = account.to_string();
    on_keychain_thread(timeout, move || {
        match platform::delete(SecretStore::SERVICE, &account) {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(keyring_error(e)),
        }
    })?
}

/// Where macOS Keychain and Windows Credential Manager calls go: `keyring`'s entries as they are.
#[cfg(not(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd")))]
mod platform {
    use super::Sensitive;

    pub(super) fn set(
        service: &str,
        user: &str,
        secret: &Sensitive<String>,
    ) -> keyring::Result<()> {
        keyring::Entry::new(service, user)?.set_password(secret.expose())
    }

    pub(super) fn get(service: &str, user: &str) -> keyring::Result<Sensitive<String>> {
        keyring::Entry::new(service, user)?
            .get_password()
            .map(Sensitive::new)
    }

    pub(super) fn delete(service: &str, user: &str) -> keyring::Result<()> {
        keyring::Entry::new(service, user)?.delete_credential()
    }
}

fn keyring_error(e: keyring::Error) -> SecretStoreError {
    match e {
        keyring::Error::NoStorageAccess(inner) => SecretStoreError::Locked {
            detail: inner.to_string(),
        },
        keyring::Error::PlatformFailure(inner) => {
            let detail = inner.to_string();
            // Secret Service reports a locked collection as a plain D-Bus error
            // ("Cannot create an item in a locked collection"), not as NoStorageAccess.
            if detail.to_ascii_lowercase().contains("locked") {
                SecretStoreError::Locked { detail }
            } else {
                SecretStoreError::Unavailable { detail }
            }
        }
        // The bad bytes may be a secret: never put them in the message.
        keyring::Error::BadEncoding(_) => SecretStoreError::Other {
            detail: "the stored secret is not valid UTF-8".into(),
        },
        keyring::Error::NoEntry => SecretStoreError::Other {
            detail: "no such keychain entry".into(),
        },
        other => SecretStoreError::Other {
            detail: other.to_string(),
        },
    }
}

type Job = Box<dyn FnOnce() + Send>;

struct KeychainWorker {
    jobs: mpsc::Sender<Job>,
    generation: u64,
}

/// The one thread that talks to the keychain; replaced after a timeout so later calls do not queue
/// behind a hung one.
static KEYCHAIN_WORKER: Mutex<Option<KeychainWorker>> = Mutex::new(None);
static KEYCHAIN_GENERATION: AtomicU64 = AtomicU64::new(0);

fn spawn_keychain_worker() -> Result<KeychainWorker, SecretStoreError> {
    let (jobs, queue) = mpsc::channel::<Job>();
    let generation = KEYCHAIN_GENERATION.fetch_add(1, Ordering::SeqCst) + 1;
    std::thread::Builder::new()
        .name(format!("keychain-{generation}"))
        .spawn(move || {
            for job in queue {
                job();
            }
        })
        .map_err(|e| SecretStoreError::Other {
            detail: format!("cannot start the keychain worker thread: {e}"),
        })?;
    Ok(KeychainWorker { jobs, generation })
}

/// Queues `job` on the keychain worker, starting (or restarting) it if needed; returns the
/// generation of the worker that took it.
fn submit_keychain_job(mut job: Job) -> Result<u64, SecretStoreError> {
    let mut slot = KEYCHAIN_WORKER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Two attempts: if the worker died (a panic inside keyring), its queue is closed; start a new one.
    for _ in 0..2 {
        if slot.is_none() {
            *slot = Some(spawn_keychain_worker()?);
        }
        let worker = slot.as_ref().expect("worker was just ensured");
        match worker.jobs.send(job) {
            Ok(()) => return Ok(worker.generation),
            Err(mpsc::SendError(returned)) => {
                job = returned;
                *slot = None;
            }
        }
    }
    Err(SecretStoreError::Other {
        detail: "the keychain worker thread keeps stopping".into(),
    })
}

/// Drops the worker of `generation` (if it is still current) so the next call gets a fresh one.
/// The old thread finishes its hung call whenever it returns, then exits.
fn retire_keychain_worker(generation: u64) {
    let mut slot = KEYCHAIN_WORKER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if slot.as_ref().map(|w| w.generation) == Some(generation) {
        *slot = None;
    }
}

fn on_keychain_thread<R: Send + 'static>(
    timeout: Duration,
    call: impl FnOnce() -> R + Send + 'static,
) -> Result<R, SecretStoreError> {
    let (reply, answer) = mpsc::sync_channel::<R>(1);
    let abandoned = Arc::new(AtomicBool::new(false));
    let job_abandoned = Arc::clone(&abandoned);
    let generation = submit_keychain_job(Box::new(move || {
        // A caller that already timed out must not have its write land later behind its back.
        if job_abandoned.load(Ordering::SeqCst) {
            return;
        }
        let _ = reply.send(call());
    }))?;
    match answer.recv_timeout(timeout) {
        Ok(result) => Ok(result),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            abandoned.store(true, Ordering::SeqCst);
            retire_keychain_worker(generation);
            Err(SecretStoreError::TimedOut { after: timeout })
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            retire_keychain_worker(generation);
            Err(SecretStoreError::Other {
                detail: "the keychain call panicked".into(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hung_keychain_call_times_out_and_later_calls_do_not_queue_behind_it() {
        let bound = Duration::from_millis(300);
        let (release, hung) = mpsc::channel::<()>();
        let started = std::time::Instant::now();
        let first = on_keychain_thread(bound, move || {
            // Blocks until the test releases it, like a keychain call that never answers.
            let _ = hung.recv();
            "late"
        });
        assert!(matches!(first, Err(SecretStoreError::TimedOut { after }) if after == bound));
        assert!(started.elapsed() < bound * 10);

        // The hung call still holds the old worker; a new call must be served by a fresh one.
        let second = on_keychain_thread(Duration::from_secs(30), || "served");
        assert_eq!(second.unwrap(), "served");
        release.send(()).unwrap();
    }

    #[test]
    fn keyring_errors_never_carry_undecodable_secret_bytes() {
        let e = keyring_error(keyring::Error::BadEncoding(b"hunter2\xff".to_vec()));
        assert!(!format!("{e} {e:?}").contains("hunter2"));
    }
}
