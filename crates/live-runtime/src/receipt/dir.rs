//! The receipt directory: where it is ([`ReceiptDir`]), the private-directory rule every use
//! checks first (a real directory of our own, tightened to 0700 if wider; the secret file store
//! keeps its directory by the same rule), and the cleanup of temp files left by writers that died
//! mid-write. The writes themselves go through [`crate::owned_file`]'s atomic writer.

use std::fmt;
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

    /// What the next list, read or registration will find the directory to be, without changing
    /// anything. They all make this check first; then a list or read treats
    /// [`PrivateDir::Missing`] as empty, a registration creates it, and both tighten a
    /// [`PrivateDir::TooOpen`] one to 0700. A [`PrivateDir::Refused`] directory makes them fail
    /// with [`LiveRuntimeReceiptError::Invalid`], the refusal's sentence as its reason; an error
    /// here is the error they would fail with.
    pub fn check(&self) -> Result<PrivateDir> {
        inspect_private_dir(&self.path).map_err(dir_error(&self.path))
    }

    /// Where the receipt for `endpoint` lives: `<dir>/<endpoint>.json`.
    pub fn receipt_path(&self, endpoint: &LiveRuntimeEndpoint) -> PathBuf {
        self.path.join(receipt_file_name(endpoint))
    }
}

pub(super) fn receipt_file_name(endpoint: &LiveRuntimeEndpoint) -> String {
    format!("{}.json", endpoint.as_str())
}

/// What a use of a private directory (the receipt directory, the secret file store's) finds there
/// before it reads or writes anything: the one rule, which [`ReceiptDir::check`] exposes so that
/// `doctor` reports what the next list or registration will do rather than a rule of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivateDir {
    /// Nothing is there yet. A list reads it as empty; a registration creates it with mode 0700.
    Missing,
    /// A directory of the user's own that no other user may enter: used as it is.
    Private {
        /// Its permission bits (`0o700`, or narrower).
        mode: u32,
    },
    /// A directory of the user's own whose permissions let other users in: the next use tightens
    /// it to 0700 before reading or writing anything in it.
    TooOpen {
        /// Its permission bits now (`0o755`, say).
        mode: u32,
    },
    /// Refused: nothing in it is read or written, and every use fails with this reason.
    Refused(DirRefused),
}

/// Why a path is refused as a private directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirRefused {
    /// Something other than a directory is there: a file, or a symbolic link (never followed,
    /// even to a directory of the user's own).
    NotADirectory,
    /// The directory belongs to another user.
    NotYours {
        /// Its owner.
        uid: u32,
    },
}

impl DirRefused {
    /// What is wrong, for people.
    pub fn problem(&self) -> String {
        match self {
            DirRefused::NotADirectory => {
                "it is not a directory (symbolic links are refused)".to_string()
            }
            DirRefused::NotYours { uid } => format!("it is owned by uid {uid}, not by you"),
        }
    }

    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            DirRefused::NotADirectory => "remove it or point SUPERCODE_RUNTIME_DIR elsewhere",
            DirRefused::NotYours { .. } => "use a directory of your own",
        }
    }
}

/// The reason a refused operation gives: the problem, then the fix.
impl fmt::Display for DirRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; {}", self.problem(), self.fix())
    }
}

impl From<DirRefused> for io::Error {
    fn from(refused: DirRefused) -> Self {
        // Both kinds become `LiveRuntimeReceiptError::Invalid` in `dir_error`, this sentence its
        // reason; the secret file store passes them on inside its own I/O error.
        let kind = match refused {
            DirRefused::NotADirectory => io::ErrorKind::Other,
            DirRefused::NotYours { .. } => io::ErrorKind::PermissionDenied,
        };
        io::Error::new(kind, refused.to_string())
    }
}

/// Looks at `dir` without changing anything: the first step of every use, which then creates a
/// missing directory (when it is about to write) or tightens a too open one. Public so that the
/// other private directories (the agent hooks' socket directory) follow the same rule.
pub fn inspect_private_dir(dir: &Path) -> io::Result<PrivateDir> {
    let meta = match fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(PrivateDir::Missing),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return Ok(PrivateDir::Refused(DirRefused::NotADirectory));
    }
    if meta.uid() != effective_uid() {
        return Ok(PrivateDir::Refused(DirRefused::NotYours {
            uid: meta.uid(),
        }));
    }
    let mode = meta.mode() & 0o777;
    Ok(if mode & 0o077 != 0 {
        PrivateDir::TooOpen { mode }
    } else {
        PrivateDir::Private { mode }
    })
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

/// Checks an existing directory, tightening it if it is too open: `Ok(false)` if it does not
/// exist.
fn check_private_dir(dir: &Path) -> io::Result<bool> {
    match inspect_private_dir(dir)? {
        PrivateDir::Missing => Ok(false),
        PrivateDir::Private { .. } => Ok(true),
        PrivateDir::TooOpen { .. } => {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
            Ok(true)
        }
        PrivateDir::Refused(refused) => Err(refused.into()),
    }
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

/// Checks the receipt directory before a read, tightening it if it is too open: `Ok(false)` if it
/// does not exist.
pub(super) fn check_dir(dir: &ReceiptDir) -> Result<bool> {
    check_private_dir(&dir.path).map_err(dir_error(&dir.path))
}

/// The error a use of the receipt directory fails with: a refusal, or a permission the system
/// denied, is [`LiveRuntimeReceiptError::Invalid`] with the sentence as its reason; anything else
/// is [`LiveRuntimeReceiptError::Io`].
pub(super) fn dir_error(dir: &Path) -> impl FnOnce(io::Error) -> LiveRuntimeReceiptError + '_ {
    move |e| match e.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::Other => {
            LiveRuntimeReceiptError::Invalid {
                what: format!("receipt directory {}", dir.display()),
                reason: e.to_string(),
            }
        }
        _ => io_error(dir)(e),
    }
}
