//! How a hook reaches its session's host: a Unix socket per session in a directory of the
//! user's own that no one else may enter (`$XDG_RUNTIME_DIR/supercode/hooks/`, else
//! `/tmp/supercode-<uid>/hooks/`), and one line of JSON each way.
//!
//! The socket's name is a digest of the agent and session id, so a hostile session id can never
//! name a path; the directory is checked (a real directory of ours, mode 0700, never followed if
//! it is a link) by both sides, and each side asks the kernel who the other is (`SO_PEERCRED`)
//! and talks only to its own user, so another user can neither answer a prompt nor read one.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use live_runtime::receipt::{inspect_private_dir, PrivateDir};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::claude_code::Decision;
use crate::event::HookEvent;

/// The longest line either side reads: one capped event (a few KiB) or a decision carrying the
/// agent's suggested permission updates.
pub const MAX_LINE: u64 = 256 * 1024;

/// What a hook sends: its event, and for a permission request who is asked
/// ([`Agent::request`], the one rule).
///
/// [`Agent::request`]: crate::agent::Agent::request
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    /// The event.
    pub event: HookEvent,
    /// True when the hook waits for the tray's decision.
    pub wait: bool,
    /// True for a permission request the agent asks in its terminal once the hook is done (a
    /// background subagent's): where the host does not hold it for the tray, it stands until
    /// the asking agent moves on. Absent (false) from an earlier version's hook.
    #[serde(default)]
    pub in_terminal: bool,
    /// True when the hook waits and the agent's own prompt waits for it: the host holds the
    /// request only while a client (the tray) watches the session, since nobody else would
    /// answer it. Absent (false) from an earlier version's hook.
    #[serde(default)]
    pub while_watched: bool,
}

/// What the host answers: taken in, and for a waiting hook the user's decision, if any.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reply {
    /// The decision the user made in the tray; `None` when there is none to give (answered in
    /// the terminal, replaced, or the session is not waiting).
    pub decision: Option<Decision>,
}

/// The directory of the sessions' sockets.
pub fn socket_dir() -> PathBuf {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|d| !d.is_empty())
        .map(|d| PathBuf::from(d).join("supercode"))
        .unwrap_or_else(|| {
            PathBuf::from(format!("/tmp/supercode-{}", live_runtime::effective_uid()))
        });
    base.join("hooks")
}

/// The socket of `agent`'s session `session_id` in `dir`.
pub fn socket_path(dir: &Path, agent: &str, session_id: &str) -> PathBuf {
    let digest = Sha256::digest(format!("{agent}\0{session_id}").as_bytes());
    dir.join(format!("{}.sock", &hex::encode(digest)[..32]))
}

/// Creates `dir` (0700) if missing and checks it is a private directory of ours.
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    check_dir(dir)
}

/// Fails unless `dir` is a private directory of ours, and so is its parent when that is ours
/// too (`…/supercode`, `/tmp/supercode-<uid>`): a parent of the system's (`$XDG_RUNTIME_DIR`) is
/// the system's business.
pub fn check_dir(dir: &Path) -> io::Result<()> {
    require_private(dir)?;
    if let Some(parent) = dir.parent().filter(|p| is_ours(p)) {
        require_private(parent)?;
    }
    Ok(())
}

fn require_private(path: &Path) -> io::Result<()> {
    match inspect_private_dir(path)? {
        PrivateDir::Private { .. } => Ok(()),
        other => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of yours ({other:?})",
                path.display()
            ),
        )),
    }
}

fn is_ours(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "supercode" || n.starts_with("supercode-"))
}

/// True when the kernel says the other end of `stream` (a Unix socket, the hook's blocking one
/// or the host's) is a process of this user.
pub fn peer_is_own(stream: impl AsFd) -> bool {
    rustix::net::sockopt::socket_peercred(stream)
        .is_ok_and(|cred| cred.uid.as_raw() == live_runtime::effective_uid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostile_session_id_names_a_socket_inside_the_directory() {
        let dir = Path::new("/run/user/1000/supercode/hooks");
        let path = socket_path(dir, "claude-code", "../../../etc/passwd");
        assert_eq!(path.parent(), Some(dir));
        assert_ne!(
            socket_path(dir, "claude-code", "a"),
            socket_path(dir, "codex", "a")
        );
    }
}
