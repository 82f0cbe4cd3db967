//! The receipt directory: where it is ([`ReceiptDir`]), the private-directory rule every use
//! checks first (a real directory of our own, tightened to 0700 if wider; the secret file store
//! keeps its directory by the same rule), and the cleanup of temp files left by writers that died
//! mid-write. The writes themselves go through [`crate::owned_file`]'s atomic writer.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::types::{io_error, Result};
use super::{secret_account, LiveRuntimeEndpoint, LiveRuntimeReceiptError};
use crate::process::{effective_uid, pid_exists};
use crate::secret::SecretStore;

/// How old a leftover temp file (`.*.tmp`) must be, with its writer pid gone, before a scan deletes
/// it. Writers hold a temp file for milliseconds; ten minutes is far beyond any live write (even a
/// writer paused in a debugger for a while) yet still cleans crash leftovers within a session.
pub const STALE_TEMP_FILE_AGE: Duration = Duration::from_secs(10 * 60);

/// The directory holding receipts, together with the secret store holding their tokens.
#[derive(Clone, Debug)]
pub struct ReceiptDir {
    pub(super) path: PathBuf,
    pub(super) secrets: SecretStore,
}

impl ReceiptDir {
    /// The directory the environment selects: `$SUPERCODE_RUNTIME_DIR`; else on Linux
    /// `$XDG_RUNTIME_DIR/supercode/live-runtimes`; else the platform runtime dir from `directories`;
    /// else `<temp dir>/supercode-<uid>-live-runtimes`. The secret store is [`SecretStore::from_env`].
    pub fn from_env() -> Result<Self> {
        let secrets = SecretStore::from_env()?;
        let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let path = if let Some(dir) = non_empty("SUPERCODE_RUNTIME_DIR") {
            PathBuf::from(dir)
        } else if let Some(xdg) = non_empty("XDG_RUNTIME_DIR").filter(|_| cfg!(target_os = "linux"))
        {
            PathBuf::from(xdg).join("supercode").join("live-runtimes")
        } else if let Some(runtime) =
            directories::BaseDirs::new().and_then(|b| b.runtime_dir().map(Path::to_path_buf))
        {
            runtime.join("supercode").join("live-runtimes")
        } else {
            // One level only: the temp dir is shared, and a parent directory someone else
            // created could be used to swap ours out. The one directory we use is checked for
            // ownership and mode before every use.
            std::env::temp_dir().join(format!("supercode-{}-live-runtimes", effective_uid()))
        };
        Ok(Self::new(path, secrets))
    }

    /// A receipt directory at `path` (created 0700 on first registration) using `secrets`.
    pub fn new(path: impl Into<PathBuf>, secrets: SecretStore) -> Self {
        ReceiptDir {
            path: path.into(),
            secrets,
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The store holding the receipts' tokens.
    pub fn secret_store(&self) -> &SecretStore {
        &self.secrets
    }

    /// Where the receipt for `endpoint` lives: `<dir>/<endpoint>.json`.
    pub fn receipt_path(&self, endpoint: &LiveRuntimeEndpoint) -> PathBuf {
        self.path.join(receipt_file_name(endpoint))
    }
}

pub(super) fn receipt_file_name(endpoint: &LiveRuntimeEndpoint) -> String {
    format!("{}.json", endpoint.as_str())
}

/// Creates `dir` (and missing parents) with mode 0700; an existing directory must be a real
/// directory owned by us, and is tightened to 0700 if it is wider.
pub(crate) fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    check_private_dir(dir).map(|_| ())
}

/// Checks an existing directory: `Ok(false)` if it does not exist.
fn check_private_dir(dir: &Path) -> io::Result<bool> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return Err(io::Error::other(
            "it is not a directory (symbolic links are refused); remove it or point SUPERCODE_RUNTIME_DIR elsewhere",
        ));
    }
    if meta.uid() != effective_uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "it is owned by uid {}, not by you; use a directory of your own",
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
    }
    Ok(true)
}

/// Deletes a leftover `.*.tmp` file once it is older than [`STALE_TEMP_FILE_AGE`] and its writer
/// (the pid before `.tmp`) is gone. A staged receipt whose receipt never appeared belonged to a
/// registration killed between storing its token and publishing: that token is deleted too.
pub(super) fn clean_stale_temp(receipts: &ReceiptDir, name: &str) {
    let dir = receipts.path.as_path();
    let path = dir.join(name);
    let Ok(meta) = fs::symlink_metadata(&path) else {
        return;
    };
    if meta.uid() != effective_uid() || meta.is_dir() {
        return;
    }
    let old = meta
        .modified()
        .ok()
        .and_then(|m| SystemTime::now().duration_since(m).ok())
        .is_some_and(|age| age > STALE_TEMP_FILE_AGE);
    let writer_alive = name
        .strip_suffix(".tmp")
        .and_then(|stem| stem.rsplit('.').next())
        .and_then(|pid| pid.parse::<u32>().ok())
        .is_some_and(pid_exists);
    if old && !writer_alive && fs::remove_file(&path).is_ok() {
        let staged_for = name
            .strip_prefix('.')
            .and_then(|rest| rest.split_once(".json."))
            .and_then(|(endpoint, _)| endpoint.parse::<LiveRuntimeEndpoint>().ok());
        if let Some(endpoint) = staged_for {
            if !receipts.receipt_path(&endpoint).exists() {
                let _ = receipts.secrets.delete(&secret_account(&endpoint));
            }
        }
    }
}

pub(super) fn check_dir(dir: &ReceiptDir) -> Result<bool> {
    check_private_dir(&dir.path).map_err(|e| match e.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::Other => {
            LiveRuntimeReceiptError::Invalid {
                what: format!("receipt directory {}", dir.path.display()),
                reason: e.to_string(),
            }
        }
        _ => io_error(&dir.path)(e),
    })
}
