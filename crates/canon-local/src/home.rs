//! Where the Canon files live: `$CANON_HOME` resolved like Node's `path.resolve`, else `~/.canon`,
//! and the Node path arithmetic (`resolve`, `join`) the package uses to name its files.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::CanonFileError;

/// Environment variable that relocates the Canon home (`@canonmsg/core` 0.13 `CANON_DIR`).
pub const CANON_HOME_ENV: &str = "CANON_HOME";

/// The `$CANON_HOME` directory (absolute, lexically normalized) and the paths inside it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CanonHome {
    root: PathBuf,
}

impl CanonHome {
    /// `CANON_HOME` if set and non-empty (resolved against the current directory), else
    /// `$HOME/.canon` — exactly the package's `CANON_DIR`.
    pub fn from_env() -> Result<Self, CanonFileError> {
        match std::env::var(CANON_HOME_ENV) {
            Ok(dir) if !dir.is_empty() => Self::at(dir),
            _ => {
                let home = std::env::var_os("HOME")
                    .or_else(|| std::env::var_os("USERPROFILE"))
                    .filter(|h| !h.is_empty())
                    .ok_or_else(|| CanonFileError::NoHome("HOME is not set".into()))?;
                Ok(Self {
                    root: PathBuf::from(node_join(
                        &PathBuf::from(home).to_string_lossy(),
                        ".canon",
                    )),
                })
            }
        }
    }

    /// A Canon home at `dir` (resolved like `path.resolve(dir)`: absolute, `.`/`..` removed
    /// lexically, symlinks untouched).
    pub fn at(dir: impl AsRef<Path>) -> Result<Self, CanonFileError> {
        let resolved = node_resolve(&dir.as_ref().to_string_lossy())?;
        Ok(Self {
            root: PathBuf::from(resolved),
        })
    }

    /// The directory itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `agents.json`.
    pub fn agents_path(&self) -> PathBuf {
        self.root.join("agents.json")
    }

    /// `locks/`.
    pub fn locks_dir(&self) -> PathBuf {
        self.root.join("locks")
    }

    /// `locks/<profile>.lock`, joined the way Node's `path.join` does.
    pub fn lock_path(&self, profile: &str) -> PathBuf {
        PathBuf::from(node_join(
            &self.locks_dir().to_string_lossy(),
            &format!("{profile}.lock"),
        ))
    }

    /// `pending-registrations.json`.
    pub fn pending_registrations_path(&self) -> PathBuf {
        self.root.join("pending-registrations.json")
    }

    /// `runtimes/`.
    pub fn runtimes_dir(&self) -> PathBuf {
        self.root.join("runtimes")
    }

    /// `runtimes/<first 16 hex of sha256(id)>.json`.
    pub fn runtime_path(&self, id: &str) -> PathBuf {
        self.runtimes_dir().join(format!("{}.json", short_hash(id)))
    }
}

/// `shortHash(value)`: the first 16 hex digits of SHA-256 over the UTF-8 bytes. It names each
/// runtime's catalog file ([`CanonHome::runtime_path`]) and ends every local runtime id.
pub fn short_hash(value: &str) -> String {
    let digest = Sha256::digest(value.as_bytes());
    hex::encode(&digest[..8])
}

/// Node's `path.resolve(p)` on POSIX: relative paths are taken from the current directory, then
/// the result is normalized lexically (no symlink resolution, no trailing slash).
pub fn node_resolve(p: &str) -> Result<String, CanonFileError> {
    if p.starts_with('/') {
        return Ok(normalize_absolute(p));
    }
    let cwd = std::env::current_dir().map_err(CanonFileError::CurrentDir)?;
    Ok(normalize_absolute(&format!(
        "{}/{p}",
        cwd.to_string_lossy()
    )))
}

/// Node's `path.join(base, rest)` for an absolute `base`.
pub(crate) fn node_join(base: &str, rest: &str) -> String {
    normalize_absolute(&format!("{base}/{rest}"))
}

fn normalize_absolute(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// A directory under `$CANON_HOME` whose entries decide what we trust (`runtimes/`, `locks/`)
/// must be a real directory of ours: through a link or in another user's directory, every entry
/// in it would be someone else's to write. `Ok(false)` when it does not exist. `what` names it
/// in the message ("catalog", "locks").
pub(crate) fn check_canon_dir(dir: &Path, what: &str) -> Result<bool, CanonFileError> {
    use std::os::unix::fs::MetadataExt;
    let refused = |reason: String| CanonFileError::Refused {
        path: dir.to_path_buf(),
        reason,
    };
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(source) => {
            return Err(CanonFileError::Read {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    if meta.file_type().is_symlink() {
        return Err(refused(format!(
            "it is a symbolic link; the {what} directory must be a real directory, and links are never followed"
        )));
    }
    if !meta.is_dir() {
        return Err(refused(format!(
            "it is not a directory ({}); remove it",
            live_runtime::owned_file::file_kind(meta.file_type())
        )));
    }
    let me = live_runtime::effective_uid();
    if meta.uid() != me {
        return Err(refused(format!(
            "it is owned by uid {}, not by you (uid {me}); only your own {what} directory is trusted",
            meta.uid()
        )));
    }
    Ok(true)
}
