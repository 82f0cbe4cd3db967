//! Process identity: a pid plus the process start time.
//!
//! A pid alone is not an identity: pids are reused, so a receipt whose runtime died could later
//! point at an unrelated process. A receipt therefore records the start time too, and a runtime is
//! only considered alive when both match ([`ProcessIdentity::is_alive`]).
//!
//! On Linux the start time is field 22 of `/proc/<pid>/stat` (clock ticks since boot), read
//! directly. Elsewhere it comes from `sysinfo` (seconds since the epoch).

use serde::{Deserialize, Serialize};

/// A process, identified by pid and start time so that a reused pid is not mistaken for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessIdentity {
    /// The operating-system process id.
    pub pid: u32,
    /// When the process started: clock ticks since boot on Linux, seconds since the epoch elsewhere.
    pub start_time: u64,
}

impl ProcessIdentity {
    /// The identity of the calling process.
    ///
    /// If the start time cannot be read (no `/proc`), it is recorded as 0, which will never match a
    /// live process: the receipt then shows as stale rather than being trusted blindly.
    pub fn current() -> Self {
        let pid = std::process::id();
        Self::of(pid).unwrap_or(ProcessIdentity { pid, start_time: 0 })
    }

    /// The identity of the live process `pid`, or `None` if there is no such process (zombies,
    /// which have exited but not been reaped, count as gone).
    pub fn of(pid: u32) -> Option<Self> {
        start_time_of(pid).map(|start_time| ProcessIdentity { pid, start_time })
    }

    /// True when a process with this pid is running AND it started at the recorded time. A pid that
    /// has been reused by another process is not alive.
    pub fn is_alive(&self) -> bool {
        Self::of(self.pid).is_some_and(|now| now.start_time == self.start_time)
    }
}

/// True when a live (not zombie) process with this pid exists, whoever owns it.
pub fn pid_exists(pid: u32) -> bool {
    start_time_of(pid).is_some()
}

#[cfg(target_os = "linux")]
fn start_time_of(pid: u32) -> Option<u64> {
    if pid == 0 {
        return None;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_linux_stat(&stat)
}

/// Extracts starttime (field 22) from a `/proc/<pid>/stat` line, or `None` for a zombie / dead
/// process. The command name (field 2) is in parentheses and may itself contain spaces and
/// parentheses, so fields are counted after the LAST `)`.
#[cfg(target_os = "linux")]
fn parse_linux_stat(stat: &str) -> Option<u64> {
    let after_comm = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_comm.split_ascii_whitespace();
    // Field 3 is the state.
    let state = fields.next()?;
    if state == "Z" || state == "X" || state == "x" {
        return None;
    }
    // Fields 4..=21 come next; field 22 is starttime.
    fields.nth(22 - 4)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn start_time_of(pid: u32) -> Option<u64> {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};
    if pid == 0 {
        return None;
    }
    let target = Pid::from_u32(pid);
    let mut system = System::new();
    system.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[target]),
        true,
        ProcessRefreshKind::nothing(),
    );
    let process = system.process(target)?;
    if matches!(
        process.status(),
        ProcessStatus::Zombie | ProcessStatus::Dead
    ) {
        return None;
    }
    Some(process.start_time())
}

/// The effective uid of this process: receipts and secret files must belong to it.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions, cannot fail and touches no memory we own.
    #[allow(unsafe_code)]
    unsafe {
        libc::geteuid()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing_counts_fields_after_the_last_parenthesis() {
        let stat = "4242 (evil) name) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615";
        assert_eq!(parse_linux_stat(stat), Some(987654));
    }

    #[test]
    fn zombie_processes_have_no_identity() {
        let stat = "77 (sleep) Z 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5555 0 0 0";
        assert_eq!(parse_linux_stat(stat), None);
    }

    #[test]
    fn current_process_is_alive_and_a_shifted_start_time_is_not() {
        let me = ProcessIdentity::current();
        assert!(me.start_time > 0);
        assert!(me.is_alive());
        let impostor = ProcessIdentity {
            start_time: me.start_time + 1,
            ..me
        };
        assert!(!impostor.is_alive());
        assert!(pid_exists(me.pid));
        assert!(!pid_exists(0));
    }
}
