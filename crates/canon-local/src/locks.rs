//! `locks/<profile>.lock`: which process is using a profile (`isProfileLocked`, `acquireLock`,
//! `releaseLock`, `describeProfileLock`), including the legacy bare-pid format.

use std::fs;
use std::io::{ErrorKind, Write};

use serde_json::{json, Value};

use crate::error::{CanonFileError, FileProblem};
use crate::home::CanonHome;
use crate::json::{iso_now, js_number, to_js_json_compact, CANON_FILE_RULES};
use live_runtime::owned_file::{read_owned_file, OwnedFile};

use crate::home::check_canon_dir;

/// Whether a profile is in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockStatus {
    /// No lock, or a stale one (which was deleted while checking).
    Available,
    /// A live process holds the lock.
    Locked {
        /// The holder.
        pid: i64,
    },
    /// The lock file is not a regular file of ours within the size cap (a symbolic link, a FIFO,
    /// another user's file...): it was not read and is left as it is, so whether the profile is
    /// in use is unknown until the user removes it.
    Untrusted {
        /// Why, for people (never the file's content).
        reason: String,
    },
}

impl LockStatus {
    /// `isProfileLocked(profile).locked`: only a live holder counts ([`LockStatus::Untrusted`]
    /// is not locked, but nor is it available; callers that start a runtime must refuse both).
    pub fn is_locked(&self) -> bool {
        matches!(self, LockStatus::Locked { .. })
    }
}

/// A parsed lock file (`parseLock`).
#[derive(Debug, Clone, PartialEq)]
pub struct LockFile {
    /// The holder's pid (a JS number: may be fractional or negative in a hand-edited file).
    pub pid: f64,
    /// The holder's token; absent in legacy bare-pid files.
    pub token: Option<String>,
}

/// Lock acquisition failure.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds the profile (the package's exact message).
    #[error("Agent \"{profile}\" is in use by another session (PID {pid})")]
    InUse {
        /// The profile.
        profile: String,
        /// The holder.
        pid: i64,
    },
    /// The lock file is not one we read (see [`LockStatus::Untrusted`]).
    #[error("Agent \"{profile}\" cannot be locked: its lock file {reason}")]
    Untrusted {
        /// The profile.
        profile: String,
        /// Why the lock file was not read.
        reason: String,
    },
    /// Two attempts raced with other processes and both lost (the package's exact message).
    #[error("Agent \"{profile}\" lock could not be acquired")]
    NotAcquired {
        /// The profile.
        profile: String,
    },
    /// The lock file could not be created.
    #[error(transparent)]
    File(#[from] CanonFileError),
}

/// `parseLock(raw)`: a legacy bare pid (only if it prints back identically, as
/// `String(parseInt(t, 10)) === t`), or JSON with a numeric `pid` and optional string `token`.
pub fn parse_lock(raw: &str) -> Option<LockFile> {
    let trimmed = js_trim(raw);
    if trimmed.is_empty() {
        return None;
    }
    let digits = trimmed.strip_prefix('-').unwrap_or(trimmed);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(pid) = trimmed.parse::<f64>() {
            if js_number(pid) == trimmed {
                return Some(LockFile { pid, token: None });
            }
        }
    }
    let data: Value = serde_json::from_str(trimmed).ok()?;
    let pid = data.get("pid")?.as_f64()?;
    let token = data.get("token").and_then(Value::as_str).map(str::to_owned);
    Some(LockFile { pid, token })
}

/// JavaScript's `String.prototype.trim` (whitespace, line terminators and the BOM).
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// `isProfileLocked(profile)`: a lock whose pid is falsy or dead is stale and is deleted —
/// unless the profile name (with `/` or `..`) points outside `locks/`, where we never delete.
///
/// The file is read the receipt way (no link followed, no blocking open, a regular file of ours
/// within the size cap): anything else is [`LockStatus::Untrusted`], and is never deleted. A lock
/// readable by others is read all the same (the package's older versions wrote bare pids 0644).
pub fn is_profile_locked(home: &CanonHome, profile: &str) -> LockStatus {
    let path = home.lock_path(profile);
    if let Err(refused) = check_locks_dir(home) {
        return LockStatus::Untrusted { reason: refused };
    }
    let raw = match read_owned_file(&path, &CANON_FILE_RULES) {
        Ok(Some(file)) => file.bytes,
        Ok(None) => return LockStatus::Available,
        Err(refused) => {
            return LockStatus::Untrusted {
                reason: refused.reason,
            }
        }
    };
    let lock = parse_lock(&String::from_utf8_lossy(&raw));
    if let Some(pid) = lock.map(|l| l.pid) {
        if pid != 0.0 && !pid.is_nan() && crate::process::is_process_alive(pid) {
            #[allow(clippy::cast_possible_truncation)]
            return LockStatus::Locked { pid: pid as i64 };
        }
    }
    if path.parent() == Some(home.locks_dir().as_path()) {
        let _ = fs::remove_file(&path);
    }
    LockStatus::Available
}

/// `Err(reason)` when `locks/` itself is not trusted (a link, or another user's directory): then
/// no lock in it is read, created or deleted. The reason is worded like a lock file's own.
fn check_locks_dir(home: &CanonHome) -> Result<(), String> {
    match check_canon_dir(&home.locks_dir(), "locks") {
        Ok(_) => Ok(()),
        Err(CanonFileError::Refused { reason, .. }) => Err(format!(
            "it is in a locks directory that is not trusted ({reason})"
        )),
        Err(other) => Err(format!(
            "it is in a locks directory that cannot be inspected ({other})"
        )),
    }
}

/// `describeProfileLock(profile)`: `locked by PID <n>` or `available`.
pub fn describe_profile_lock(home: &CanonHome, profile: &str) -> String {
    match is_profile_locked(home, profile) {
        LockStatus::Locked { pid } => format!("locked by PID {pid}"),
        LockStatus::Available => "available".into(),
        LockStatus::Untrusted { reason } => format!("unknown: its lock file {reason}"),
    }
}

/// A lock this process holds. Dropping it releases the lock (only if the file still carries
/// this handle's token).
#[derive(Debug)]
pub struct ProfileLockHandle {
    home: CanonHome,
    /// The locked profile.
    pub profile: String,
    /// This process.
    pub pid: u32,
    /// The random token written into the lock file.
    pub token: String,
    released: bool,
}

impl ProfileLockHandle {
    /// `handle.release()`.
    pub fn release(mut self) {
        self.released = true;
        release_lock(&self.home, &self.profile, Some(&self.token));
    }
}

impl Drop for ProfileLockHandle {
    fn drop(&mut self) {
        if !self.released {
            release_lock(&self.home, &self.profile, Some(&self.token));
        }
    }
}

/// `acquireLock(profile)`: exclusive create (mode 0600) of `{"pid":…,"token":…,"acquiredAt":…}`,
/// two attempts, clearing a stale lock in between.
pub fn acquire_lock(home: &CanonHome, profile: &str) -> Result<ProfileLockHandle, LockError> {
    let dir = home.locks_dir();
    fs::create_dir_all(&dir).map_err(|source| CanonFileError::Write { path: dir, source })?;
    check_locks_dir(home).map_err(|reason| LockError::Untrusted {
        profile: profile.to_owned(),
        reason,
    })?;
    let path = home.lock_path(profile);
    let token = uuid::Uuid::new_v4().to_string();
    let pid = std::process::id();
    let payload = to_js_json_compact(&json!({
        "pid": pid,
        "token": token,
        "acquiredAt": iso_now(),
    }));
    for _attempt in 0..2 {
        let mut options = fs::OpenOptions::new();
        // Exclusive create (O_CREAT | O_EXCL) never follows a link at the name: POSIX makes an
        // existing link, dangling or not, an EEXIST like any other existing file.
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&path) {
            Ok(mut file) => {
                file.write_all(payload.as_bytes())
                    .map_err(|source| CanonFileError::Write {
                        path: path.clone(),
                        source,
                    })?;
                return Ok(ProfileLockHandle {
                    home: home.clone(),
                    profile: profile.to_owned(),
                    pid,
                    token,
                    released: false,
                });
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                match is_profile_locked(home, profile) {
                    LockStatus::Locked { pid } => {
                        return Err(LockError::InUse {
                            profile: profile.to_owned(),
                            pid,
                        })
                    }
                    LockStatus::Untrusted { reason } => {
                        return Err(LockError::Untrusted {
                            profile: profile.to_owned(),
                            reason,
                        })
                    }
                    LockStatus::Available => {}
                }
            }
            Err(source) => return Err(CanonFileError::Write { path, source }.into()),
        }
    }
    Err(LockError::NotAcquired {
        profile: profile.to_owned(),
    })
}

/// `releaseLock(profile, token?)`: with a token, the lock is removed only if it has no token or
/// the same one; errors are ignored as in the package.
pub fn release_lock(home: &CanonHome, profile: &str, token: Option<&str>) {
    let path = home.lock_path(profile);
    if let Some(token) = token.filter(|t| !t.is_empty()) {
        // A lock file we do not read is not ours to remove either.
        let Ok(Some(OwnedFile { bytes: raw, .. })) = read_owned_file(&path, &CANON_FILE_RULES)
        else {
            return;
        };
        if let Some(LockFile {
            token: Some(held), ..
        }) = parse_lock(&String::from_utf8_lossy(&raw))
        {
            if !held.is_empty() && held != token {
                return;
            }
        }
    }
    let _ = fs::remove_file(&path);
}

/// The lock files in `locks/` that are not read (a symbolic link, a FIFO, another user's file,
/// over the cap...), each with the reason. Nothing is parsed, deleted or changed: this only says
/// which locks [`is_profile_locked`] will call [`LockStatus::Untrusted`], so they can be shown.
pub fn untrusted_lock_files(home: &CanonHome) -> Vec<FileProblem> {
    let dir = home.locks_dir();
    if let Err(CanonFileError::Refused { path, reason }) = check_canon_dir(&dir, "locks") {
        return vec![FileProblem { path, reason }];
    }
    let Ok(entries) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut names: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".lock"))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|name| {
            let path = dir.join(name);
            match read_owned_file(&path, &CANON_FILE_RULES) {
                Err(refused) => Some(FileProblem {
                    path,
                    reason: refused.reason,
                }),
                Ok(_) => None,
            }
        })
        .collect()
}
