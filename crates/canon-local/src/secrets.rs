//! TEMPORARY stand-in for `live_runtime::{Sensitive, SecretStore, SecretStoreError}` while the
//! `live-runtime` crate is being written in parallel. Deleted (replaced by a re-export) before
//! this crate is finished.

use std::fmt;
use std::path::PathBuf;

/// A secret value: redacted `Debug`, no `Display`, no `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct Sensitive<T>(T);

impl<T> Sensitive<T> {
    /// Wraps a secret.
    pub fn new(value: T) -> Self {
        Self(value)
    }
    /// The secret itself; keep the borrow short.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Sensitive<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sensitive(<redacted>)")
    }
}

/// Secret store failure.
#[derive(Debug, thiserror::Error)]
pub enum SecretStoreError {
    /// I/O failure.
    #[error("secret store I/O failed: {0}")]
    Io(#[from] std::io::Error),
}

/// A place to keep secrets.
#[derive(Debug, Clone)]
pub struct SecretStore {
    dir: PathBuf,
}

impl SecretStore {
    /// The opt-in plaintext file store.
    pub fn file(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }
    /// Stores `value` under `account`.
    pub fn set(&self, account: &str, value: &Sensitive<String>) -> Result<(), SecretStoreError> {
        std::fs::create_dir_all(&self.dir)?;
        std::fs::write(self.dir.join(account), value.expose())?;
        Ok(())
    }
    /// Reads `account`.
    pub fn get(&self, account: &str) -> Result<Option<Sensitive<String>>, SecretStoreError> {
        match std::fs::read_to_string(self.dir.join(account)) {
            Ok(v) => Ok(Some(Sensitive::new(v))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
    /// Deletes `account`.
    pub fn delete(&self, account: &str) -> Result<(), SecretStoreError> {
        match std::fs::remove_file(self.dir.join(account)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}
