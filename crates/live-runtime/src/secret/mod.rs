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
//!
//! # Layout
//! - `sensitive`: [`Sensitive`] and [`BearerToken`].
//! - `keychain`: the keychain backend and the one worker thread its calls run on.
//! - `secret_service`: on Linux and the BSDs, that thread's long-lived Secret Service session.
//! - `file_store`: the opt-in plaintext file store.
//! - here: [`SecretStore`], which picks a backend, and its error type.

mod file_store;
mod keychain;
#[cfg(any(target_os = "linux", target_os = "freebsd", target_os = "openbsd"))]
mod secret_service;
mod sensitive;

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

pub use keychain::KEYCHAIN_TIMEOUT;
pub use sensitive::{BearerToken, Sensitive};

use keychain::KEYCHAIN_TIMEOUT_ENV;

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
            Backend::Keychain { timeout } => keychain::set(*timeout, account, secret),
            Backend::File { dir } => file_store::set(dir, account, secret),
        }
    }

    /// Reads the secret for `account`; `Ok(None)` when there is none. Runs in a `debug` span,
    /// `secret_store_get`, so a subscriber can time the keychain's share of a caller's work.
    pub fn get(&self, account: &str) -> Result<Option<Sensitive<String>>, SecretStoreError> {
        let _span = tracing::debug_span!("secret_store_get").entered();
        check_account(account)?;
        match &self.backend {
            Backend::Keychain { timeout } => keychain::get(*timeout, account),
            Backend::File { dir } => file_store::get(dir, account),
        }
    }

    /// Deletes the secret for `account`; deleting a missing one is `Ok(())`.
    pub fn delete(&self, account: &str) -> Result<(), SecretStoreError> {
        check_account(account)?;
        match &self.backend {
            Backend::Keychain { timeout } => keychain::delete(*timeout, account),
            Backend::File { dir } => file_store::delete(dir, account),
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

#[cfg(test)]
mod tests {
    use super::*;

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
