//! Secret values and where they are kept.
//!
//! [`Sensitive`] wraps a secret so it cannot be printed (`Debug` is redacted, there is no
//! `Display`) or serialized (there is no `Serialize`): sending a token to the webview is a compile
//! error rather than a review finding.
//!
//! [`SecretStore`] keeps bearer tokens out of receipt files. The default is the OS keychain
//! (Secret Service on Linux, Keychain on macOS, Credential Manager on Windows) through `keyring`.
//! Keychain calls can block for a long time (a locked collection waiting on a hidden unlock prompt,
//! a wedged D-Bus peer), so they run on one dedicated worker thread, one at a time, and the caller
//! waits at most [`KEYCHAIN_TIMEOUT`]. A plaintext file store exists for headless machines but is
//! only ever used when the user opts in with `SUPERCODE_SECRET_STORE=file`: there is no silent
//! fallback from the keychain to plaintext.

use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::owned_file::{read_owned_file, write_atomically, FileRules, ModeRule};

/// How long a caller waits for one keychain operation before giving up with
/// [`SecretStoreError::TimedOut`].
///
/// A healthy Secret Service answers in milliseconds; 5 s leaves room for a slow D-Bus activation of
/// the keyring daemon on a loaded machine while still bounding the worst case (a locked keyring
/// whose unlock prompt nobody sees) to something a user will tolerate once. Override it with
/// `SUPERCODE_KEYCHAIN_TIMEOUT_MS` (tests use a short bound to prove the timeout path).
pub const KEYCHAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// Environment variable overriding [`KEYCHAIN_TIMEOUT`], in milliseconds.
const KEYCHAIN_TIMEOUT_ENV: &str = "SUPERCODE_KEYCHAIN_TIMEOUT_MS";

/// Largest secret the file store will read back; tokens are tens of bytes, so anything bigger is
/// not one of ours.
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// A secret value: redacted in `Debug`, no `Display`, no `Serialize`.
///
/// Get at the value only where it is really used (an `Authorization` header, the keychain) with
/// [`Sensitive::expose`] or [`Sensitive::into_inner`].
#[derive(Clone, PartialEq, Eq)]
pub struct Sensitive<T>(T);

impl<T> Sensitive<T> {
    /// Wraps a secret value.
    pub fn new(v: T) -> Self {
        Sensitive(v)
    }

    /// Borrows the secret value. Never log or serialize what this returns.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// Unwraps the secret value. Never log or serialize what this returns.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for Sensitive<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sensitive(<redacted>)")
    }
}

/// The HTTP bearer token a runtime requires on every request.
pub type BearerToken = Sensitive<String>;

/// Which backend a [`SecretStore`] uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SecretStoreKind {
    /// The OS keychain through `keyring` (the default).
    Keychain,
    /// One plaintext file per secret in a private directory (opt-in only).
    File,
}

/// Why a secret could not be stored, read or deleted.
#[derive(Debug, thiserror::Error)]
pub enum SecretStoreError {
    /// The keychain exists but refused access, usually because the collection is locked.
    #[error("the OS keychain is locked or refused access ({detail}): unlock your keyring (log in to the desktop session or run your keyring's unlock command) and retry")]
    Locked {
        /// What the platform reported.
        detail: String,
    },
    /// No keychain could be reached at all.
    #[error("no OS keychain is reachable ({detail}): start a Secret Service provider such as gnome-keyring, or opt in to SUPERCODE_SECRET_STORE=file")]
    Unavailable {
        /// What the platform reported.
        detail: String,
    },
    /// The keychain did not answer within the bound.
    #[error("the OS keychain did not answer within {after:?}: check that your keyring is unlocked and responsive (an unlock prompt may be waiting), then retry")]
    TimedOut {
        /// The bound that was exceeded.
        after: Duration,
    },
    /// The file store could not read or write its directory.
    #[error("secret file store I/O failed at {path}: {source}; check that the directory exists, belongs to you and has mode 0700")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The environment asks for a store that cannot be built.
    #[error("invalid secret store configuration: {message}")]
    InvalidConfig {
        /// What is wrong and how to fix it.
        message: String,
    },
    /// Anything else the backend reported.
    #[error(
        "the secret store failed: {detail}; retry, and run `supercode-tray doctor` if it persists"
    )]
    Other {
        /// What went wrong (never contains a secret).
        detail: String,
    },
}

#[derive(Clone)]
enum Backend {
    Keychain { timeout: Duration },
    File { dir: PathBuf },
}

/// Where bearer tokens are kept: the OS keychain (default) or an opt-in plaintext file store.
///
/// Cheap to clone. `Debug` shows the kind and, for the file store, its directory; never a secret.
#[derive(Clone)]
pub struct SecretStore {
    backend: Backend,
}

impl fmt::Debug for SecretStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.backend {
            Backend::Keychain { timeout } => f
                .debug_struct("SecretStore")
                .field("kind", &SecretStoreKind::Keychain)
                .field("timeout", timeout)
                .finish(),
            Backend::File { dir } => f
                .debug_struct("SecretStore")
                .field("kind", &SecretStoreKind::File)
                .field("dir", dir)
                .finish(),
        }
    }
}

impl SecretStore {
    /// Keychain service name under which every entry is stored.
    pub const SERVICE: &'static str = "supercode-tray";

    /// Builds the store the environment asks for.
    ///
    /// `SUPERCODE_SECRET_STORE` unset, empty or `keychain` selects the OS keychain; `file` selects
    /// the plaintext file store at `$SUPERCODE_SECRET_DIR`, or `<data_local_dir>/supercode-tray/secrets`.
    /// Anything else is an error naming the valid values.
    pub fn from_env() -> Result<Self, SecretStoreError> {
        let choice = std::env::var("SUPERCODE_SECRET_STORE").unwrap_or_default();
        match choice.trim() {
            "" | "keychain" => Ok(Self::keychain()),
            "file" => {
                let dir = match std::env::var_os("SUPERCODE_SECRET_DIR") {
                    Some(dir) if !dir.is_empty() => PathBuf::from(dir),
                    _ => directories::BaseDirs::new()
                        .map(|b| b.data_local_dir().join("supercode-tray").join("secrets"))
                        .ok_or_else(|| SecretStoreError::InvalidConfig {
                            message: "cannot find your local data directory for the file store; set SUPERCODE_SECRET_DIR to a private directory".into(),
                        })?,
                };
                Ok(Self::file(dir))
            }
            other => Err(SecretStoreError::InvalidConfig {
                message: format!(
                    "SUPERCODE_SECRET_STORE={other:?} is not supported; use \"keychain\" (default) or \"file\""
                ),
            }),
        }
    }

    /// The OS keychain, with the timeout from `SUPERCODE_KEYCHAIN_TIMEOUT_MS` or [`KEYCHAIN_TIMEOUT`].
    pub fn keychain() -> Self {
        let timeout = std::env::var(KEYCHAIN_TIMEOUT_ENV)
            .ok()
            .and_then(|ms| ms.trim().parse::<u64>().ok())
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis)
            .unwrap_or(KEYCHAIN_TIMEOUT);
        Self::keychain_with_timeout(timeout)
    }

    /// The OS keychain with an explicit per-operation timeout.
    pub fn keychain_with_timeout(timeout: Duration) -> Self {
        SecretStore {
            backend: Backend::Keychain { timeout },
        }
    }

    /// The plaintext file store in `dir` (created 0700; one file per account, 0600, written
    /// atomically). Only for users who opt in: the secrets are readable by anything running as you.
    pub fn file(dir: impl Into<PathBuf>) -> Self {
        SecretStore {
            backend: Backend::File { dir: dir.into() },
        }
    }

    /// Which backend this is.
    pub fn kind(&self) -> SecretStoreKind {
        match self.backend {
            Backend::Keychain { .. } => SecretStoreKind::Keychain,
            Backend::File { .. } => SecretStoreKind::File,
        }
    }

    /// A one-line description for people (`doctor`, error messages).
    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Keychain { .. } => {
                if cfg!(target_os = "macos") {
                    "OS keychain (macOS Keychain)".to_string()
                } else if cfg!(windows) {
                    "OS keychain (Windows Credential Manager)".to_string()
                } else {
                    "OS keychain (Secret Service)".to_string()
                }
            }
            Backend::File { dir } => format!(
                "plaintext file store at {} (opt-in via SUPERCODE_SECRET_STORE=file)",
                dir.display()
            ),
        }
    }

    /// Stores (or replaces) the secret for `account`.
    pub fn set(&self, account: &str, secret: &Sensitive<String>) -> Result<(), SecretStoreError> {
        check_account(account)?;
        match &self.backend {
            Backend::Keychain { timeout } => {
                let account = account.to_string();
                let secret = secret.clone();
                on_keychain_thread(*timeout, move || {
                    keyring::Entry::new(Self::SERVICE, &account)
                        .and_then(|e| e.set_password(secret.expose()))
                        .map_err(keyring_error)
                })?
            }
            Backend::File { dir } => file_set(dir, account, secret),
        }
    }

    /// Reads the secret for `account`; `Ok(None)` when there is none.
    pub fn get(&self, account: &str) -> Result<Option<Sensitive<String>>, SecretStoreError> {
        check_account(account)?;
        match &self.backend {
            Backend::Keychain { timeout } => {
                let account = account.to_string();
                on_keychain_thread(*timeout, move || {
                    match keyring::Entry::new(Self::SERVICE, &account)
                        .and_then(|e| e.get_password())
                    {
                        Ok(secret) => Ok(Some(Sensitive::new(secret))),
                        Err(keyring::Error::NoEntry) => Ok(None),
                        Err(e) => Err(keyring_error(e)),
                    }
                })?
            }
            Backend::File { dir } => file_get(dir, account),
        }
    }

    /// Deletes the secret for `account`; deleting a missing one is `Ok(())`.
    pub fn delete(&self, account: &str) -> Result<(), SecretStoreError> {
        check_account(account)?;
        match &self.backend {
            Backend::Keychain { timeout } => {
                let account = account.to_string();
                on_keychain_thread(*timeout, move || {
                    match keyring::Entry::new(Self::SERVICE, &account)
                        .and_then(|e| e.delete_credential())
                    {
                        Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
                        Err(e) => Err(keyring_error(e)),
                    }
                })?
            }
            Backend::File { dir } => file_delete(dir, account),
        }
    }

    /// Proves the store works by writing, reading back and deleting a throwaway entry.
    pub fn probe(&self) -> Result<(), SecretStoreError> {
        let account = format!("probe:{:032x}", rand::random::<u128>());
        let value = Sensitive::new(format!("{:032x}", rand::random::<u128>()));
        self.set(&account, &value)?;
        let read = self.get(&account);
        let deleted = self.delete(&account);
        match read? {
            Some(back) if back == value => {}
            Some(_) => {
                return Err(SecretStoreError::Other {
                    detail: "the probe entry read back differently from what was written".into(),
                })
            }
            None => {
                return Err(SecretStoreError::Other {
                    detail: "the probe entry vanished right after it was written".into(),
                })
            }
        }
        deleted
    }
}

fn check_account(account: &str) -> Result<(), SecretStoreError> {
    if account.is_empty() {
        return Err(SecretStoreError::InvalidConfig {
            message: "a secret account name cannot be empty".into(),
        });
    }
    Ok(())
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

// ---------------------------------------------------------------------------------------------
// The keychain worker thread.

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

// ---------------------------------------------------------------------------------------------
// The plaintext file store.

/// Maps an account name to a file name: ASCII letters, digits, `_` and `-` stay, every other byte
/// becomes `%XX`, so no account can name a path outside the directory or a hidden temp file.
fn account_file_name(account: &str) -> String {
    let mut name = String::with_capacity(account.len() + 8);
    for b in account.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            name.push(b as char);
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    name
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SecretStoreError + '_ {
    move |source| SecretStoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn ensure_private_dir(dir: &Path) -> Result<(), SecretStoreError> {
    crate::receipt::ensure_private_dir(dir).map_err(io_err(dir))
}

fn file_set(dir: &Path, account: &str, secret: &Sensitive<String>) -> Result<(), SecretStoreError> {
    ensure_private_dir(dir)?;
    let target = dir.join(account_file_name(account));
    write_atomically(dir, &account_file_name(account), secret.expose().as_bytes())
        .map_err(io_err(&target))
}

/// How secret files are read: owner only, at most [`MAX_SECRET_FILE_BYTES`].
const SECRET_FILE_RULES: FileRules = FileRules {
    singular: "secret file",
    plural: "secret files",
    max_bytes: MAX_SECRET_FILE_BYTES,
    mode: ModeRule::OwnerOnly,
};

fn file_get(dir: &Path, account: &str) -> Result<Option<Sensitive<String>>, SecretStoreError> {
    let path = dir.join(account_file_name(account));
    let file = match read_owned_file(&path, &SECRET_FILE_RULES) {
        Ok(Some(file)) => file,
        Ok(None) => return Ok(None),
        Err(refused) => {
            return Err(SecretStoreError::Other {
                detail: format!(
                    "{} was not read: {refused}; remove it and store the secret again",
                    path.display()
                ),
            })
        }
    };
    String::from_utf8(file.bytes)
        .map(|s| Some(Sensitive::new(s)))
        .map_err(|_| SecretStoreError::Other {
            detail: format!("{} is not valid UTF-8", path.display()),
        })
}

fn file_delete(dir: &Path, account: &str) -> Result<(), SecretStoreError> {
    let path = dir.join(account_file_name(account));
    match fs::remove_file(&path) {
        Ok(()) => {
            let _ = File::open(dir).and_then(|d| d.sync_all());
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(&path)(e)),
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

    #[test]
    fn secret_store_debug_names_the_kind_and_never_a_secret() {
        let store = SecretStore::file("/tmp/x");
        assert_eq!(
            format!("{store:?}"),
            "SecretStore { kind: File, dir: \"/tmp/x\" }"
        );
        assert!(
            format!("{:?}", SecretStore::keychain_with_timeout(KEYCHAIN_TIMEOUT))
                .contains("Keychain")
        );
    }
}
