//! Errors of the file layer (`agents.json`, `pending-registrations.json`, `runtimes/`, `locks/`).
//!
//! Messages say what the user can do next. No message ever contains a file's content, so a
//! secret inside a corrupt file cannot leak through an error.

use std::io;
use std::path::PathBuf;

/// A `$CANON_HOME` file could not be read, parsed or written.
#[derive(Debug, thiserror::Error)]
pub enum CanonFileError {
    /// Neither `CANON_HOME` nor a home directory is available.
    #[error("cannot locate the Canon home: {0}; set CANON_HOME to a directory")]
    NoHome(String),
    /// The file exists but is not what `@canonmsg/core` writes.
    #[error("{path} is not a valid Canon file ({reason}); fix it or move it aside, then retry")]
    Corrupt {
        /// The offending file.
        path: PathBuf,
        /// What is wrong with it (never its content).
        reason: String,
    },
    /// The file was not read because it cannot be trusted: a symbolic link, not a regular file
    /// (a FIFO, a device, a directory), owned by another user, writable by other users, or over
    /// the size cap. It is left exactly as it is.
    #[error("{path} was not read: {reason}")]
    Refused {
        /// The offending file.
        path: PathBuf,
        /// Why, and what to do (never its content).
        reason: String,
    },
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}; check its permissions")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O failure.
        source: io::Error,
    },
    /// The file could not be written.
    #[error(
        "cannot write {path}: {source}; check free space and the permissions of the Canon home"
    )]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The I/O failure.
        source: io::Error,
    },
    /// A relative path had to be resolved but the current directory is unavailable.
    #[error("cannot resolve a relative path: the current directory is unavailable ({0}); pass an absolute path")]
    CurrentDir(io::Error),
    /// `upsertAgentProfile` requires a non-blank profile name.
    #[error("Profile name is required")]
    EmptyProfileName,
}

/// A file that was skipped while reading a directory or a record file, with the reason, so the
/// UI can show it instead of silently dropping it; or, in a `warnings` list, a file that was used
/// but that the user should fix (its mode lets other users read it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The skipped file.
    pub path: PathBuf,
    /// Why it was skipped (never its content).
    pub reason: String,
}

impl From<&CanonFileError> for FileProblem {
    fn from(error: &CanonFileError) -> Self {
        let path = match error {
            CanonFileError::Corrupt { path, .. }
            | CanonFileError::Refused { path, .. }
            | CanonFileError::Read { path, .. }
            | CanonFileError::Write { path, .. } => path.clone(),
            _ => PathBuf::new(),
        };
        let reason = match error {
            // Its reason is a whole sentence already; the path is in `path`.
            CanonFileError::Refused { reason, .. } => reason.clone(),
            other => other.to_string(),
        };
        FileProblem { path, reason }
    }
}
