//! [`verify_listener`]: is the socket at a runtime's address still the runtime's, so that its
//! token may go there?

use std::net::SocketAddr;

use live_runtime::Sensitive;

use crate::owner::{self, ListenerLookup, Platform, SocketTable};

/// Why the socket at a runtime's address may not be given its token. Never carries the address.
#[derive(Debug, thiserror::Error)]
pub enum ListenerError {
    /// The socket belongs to another OS user (a port grabbed after the runtime closed it).
    #[error("the runtime is not answering: the program now listening on its port belongs to another user (uid {uid}), so its token was not sent; the runtime has probably exited, revive or forget it")]
    Foreign {
        /// The uid that owns the socket.
        uid: u32,
    },
    /// The socket is the user's, but not held by the runtime's process.
    #[error("the runtime is not answering: its port is held by another program than its process (PID {pid}), so its token was not sent; revive or forget it")]
    NotTheRuntime {
        /// The receipt's process.
        pid: u32,
    },
    /// Nothing listens at the address any more.
    #[error("the runtime is not answering: nothing listens on its port any more; check that it is still running, or revive it from the tray")]
    NotListening,
    /// The kernel could not be asked who owns the socket.
    #[error("could not check who listens on the runtime's port ({source}), so its token was not sent; try again")]
    OwnerUnknown {
        /// The error from the socket table.
        source: std::io::Error,
    },
}

/// Checks that the socket listening at `address` belongs to this user and, when `pid` is given,
/// is held by that process (the receipt's). A port that another user, or another program, took
/// over after the runtime closed its listener fails, so no token is ever sent to it.
///
/// Where the platform cannot tell (see [`owner::Platform`]) this passes.
pub fn verify_listener(
    address: &Sensitive<SocketAddr>,
    pid: Option<u32>,
) -> Result<(), ListenerError> {
    verify_listener_in(&mut SocketTable::new(), address, pid)
}

/// [`verify_listener`] asking `table`, for a caller that checks many runtimes in a row: a
/// [`SocketTable`] keeps one netlink socket for all of them, a [`owner::Listeners`] read once
/// answers them all without asking the kernel again.
pub fn verify_listener_in(
    table: &mut dyn ListenerLookup,
    address: &Sensitive<SocketAddr>,
    pid: Option<u32>,
) -> Result<(), ListenerError> {
    if Platform::check() == Platform::Unchecked {
        return Ok(());
    }
    let found = table
        .listener(*address.expose())
        .map_err(|source| ListenerError::OwnerUnknown { source })?;
    let Some(listener) = found else {
        return Err(ListenerError::NotListening);
    };
    if listener.uid != owner::own_uid() {
        return Err(ListenerError::Foreign { uid: listener.uid });
    }
    if let Some(pid) = pid {
        if owner::process_holds_socket(pid, listener.inode) == Some(false) {
            return Err(ListenerError::NotTheRuntime { pid });
        }
    }
    Ok(())
}
