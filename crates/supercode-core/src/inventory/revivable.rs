//! Whether a runtime can be revived now, and why not: the one rule the inventory's views show
//! as the Revive button and a revive is refused with.

use canon_local::{LocalRuntimeStatus, LockStatus, ReviveCapability};
use live_runtime::{LiveRuntimeRecord, LiveRuntimeStatus, LiveRuntimeSupervisor};

use super::catalog::CatalogRuntime;
use crate::view::ActionAvailability;
use crate::Locations;

/// Why a runtime cannot be revived now: what its record says, or what resolving its launch
/// command found. The window shows it as the Revive button's reason; a revive asked for anyway is
/// refused with it ([`Refusal::CannotRevive`](crate::Refusal::CannotRevive)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReviveBlocker {
    /// Its process is alive.
    #[error("It is already running.")]
    AlreadyRunning,
    /// Its catalog entry names a profile `agents.json` does not have (`missing-profile`).
    #[error("Its profile \"{profile}\" is missing from agents.json; register it again first.")]
    MissingProfile {
        /// The profile the entry names.
        profile: String,
    },
    /// It runs inside another host process (`embedded`).
    #[error("It runs embedded in another host; restart that host.")]
    Embedded,
    /// It was started by hand (`manual`, or a receipt without a launch command).
    #[error("It was started by hand; start it again the same way.")]
    Manual,
    /// A revive capability this version does not know, kept as written.
    #[error("Canon records that it is restarted the \"{capability}\" way, which this version of Supercode Tray does not know, so it is not revived; start it the way it was started.")]
    UnknownCapability {
        /// The capability as the entry wrote it.
        capability: String,
    },
    /// Its record has no launch command.
    #[error("No launch command was recorded for it.")]
    NoLaunchCommand,
    /// Another session holds its profile's lock.
    #[error("Agent \"{profile}\" is in use by another session (PID {pid}).")]
    ProfileInUse {
        /// The profile.
        profile: String,
        /// The process holding the lock, as the lock file records it.
        pid: i64,
    },
    /// Its profile's lock file cannot be trusted, so whether the profile is free is unknown.
    #[error("Its profile's lock file (locks/{profile}.lock) was not read: {reason}.")]
    LockUnreadable {
        /// The profile.
        profile: String,
        /// Why the lock file was not read.
        reason: String,
    },
    /// Its working directory is not absolute, so what it names depends on the app's.
    #[error("its working directory {cwd:?} is not an absolute path.")]
    RelativeCwd {
        /// The working directory as recorded.
        cwd: String,
    },
    /// Its record sets a variable whose name is not `[A-Za-z_][A-Za-z0-9_]*`.
    #[error("its record sets an environment variable named {name:?}, which is not a plain name (letters, digits and _, not starting with a digit), so it is not set.")]
    InvalidVariableName {
        /// The name as recorded.
        name: String,
    },
    /// Its launch command's program is the empty string.
    #[error("its launch command's program is empty.")]
    EmptyProgram,
    /// Its launch command's program contains a NUL byte.
    #[error("its launch command's program contains a NUL byte.")]
    NulInProgram,
    /// The program path it names is not an executable file.
    #[error("its program {path:?} is not an executable file.")]
    NotExecutable {
        /// The path, resolved against the working directory.
        path: String,
    },
    /// The bare program name it names is on no absolute directory of `PATH`.
    #[error("its program {program:?} was not found on PATH.")]
    NotOnPath {
        /// The program as recorded.
        program: String,
    },
}

impl ReviveBlocker {
    /// The Revive button's state for `check`: available, or not with this reason.
    pub fn availability(check: Result<(), ReviveBlocker>) -> ActionAvailability {
        match check {
            Ok(()) => ActionAvailability::yes(),
            // What the runtime is, not what may change: no Revive button on these cards.
            Err(
                why @ (ReviveBlocker::AlreadyRunning
                | ReviveBlocker::Manual
                | ReviveBlocker::Embedded),
            ) => ActionAvailability::never(why.to_string()),
            Err(why) => ActionAvailability::no(why.to_string()),
        }
    }
}

/// Whether a catalog entry can be revived now, and why not, as the Revive button shows it.
pub(crate) fn availability(locations: &Locations, entry: &CatalogRuntime) -> ActionAvailability {
    ReviveBlocker::availability(check(locations, entry))
}

/// The same for a runtime with a receipt: a running one never; a stale one linked to its catalog
/// entry as that entry; a stale one without one from the launch command its receipt recorded.
pub(crate) fn availability_of_receipt(
    locations: &Locations,
    record: &LiveRuntimeRecord,
    entry: Option<&CatalogRuntime>,
) -> ActionAvailability {
    let check = match (&record.status, entry, &record.metadata.supervisor) {
        (LiveRuntimeStatus::Running, ..) => Err(ReviveBlocker::AlreadyRunning),
        (LiveRuntimeStatus::Stale { .. }, Some(entry), _) => return availability(locations, entry),
        (LiveRuntimeStatus::Stale { .. }, None, LiveRuntimeSupervisor::LaunchCommand { .. }) => {
            Ok(())
        }
        (LiveRuntimeStatus::Stale { .. }, None, LiveRuntimeSupervisor::Manual) => {
            Err(ReviveBlocker::Manual)
        }
    };
    ReviveBlocker::availability(check)
}

/// Whether a catalog entry can be revived now: its status and revive capability as the package
/// derives them, its launch command and its profile's lock. Revive refuses with the same reason.
pub(crate) fn check(locations: &Locations, entry: &CatalogRuntime) -> Result<(), ReviveBlocker> {
    if entry.status == LocalRuntimeStatus::Running {
        return Err(ReviveBlocker::AlreadyRunning);
    }
    match &entry.revive_capability {
        ReviveCapability::Revivable => {}
        ReviveCapability::MissingProfile => {
            return Err(ReviveBlocker::MissingProfile {
                profile: entry.profile.clone().unwrap_or_default(),
            })
        }
        ReviveCapability::Embedded => return Err(ReviveBlocker::Embedded),
        ReviveCapability::Manual => return Err(ReviveBlocker::Manual),
        ReviveCapability::Other(other) => {
            return Err(ReviveBlocker::UnknownCapability {
                capability: other.clone(),
            })
        }
    }
    if entry.launch_command.is_empty() {
        return Err(ReviveBlocker::NoLaunchCommand);
    }
    if let Some(profile) = &entry.profile {
        match canon_local::is_profile_locked(&locations.canon, profile) {
            LockStatus::Locked { pid } => {
                return Err(ReviveBlocker::ProfileInUse {
                    profile: profile.clone(),
                    pid,
                })
            }
            LockStatus::Untrusted { reason } => {
                return Err(ReviveBlocker::LockUnreadable {
                    profile: profile.clone(),
                    reason,
                })
            }
            LockStatus::Available => {}
        }
    }
    Ok(())
}
