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
    stat_field(pid, START_TIME)
}

/// The parent of the live process `pid`, or `None` if there is no such process.
#[cfg(target_os = "linux")]
pub fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, PARENT)
}

/// Where a field of `/proc/<pid>/stat` is among those after the state (field 3), which start at
/// field 4: the parent is field 4.
#[cfg(target_os = "linux")]
const PARENT: usize = 0;
/// The start time (clock ticks since boot) is field 22 (see [`PARENT`]).
#[cfg(target_os = "linux")]
const START_TIME: usize = 22 - 4;

/// Field `index` (see [`PARENT`]) of the live process `pid`'s `/proc/<pid>/stat`, parsed.
#[cfg(target_os = "linux")]
fn stat_field<T: std::str::FromStr>(pid: u32, index: usize) -> Option<T> {
    if pid == 0 {
        return None;
    }
    use std::io::Read;
    // One open, one read, one close. `read_to_end` would first ask the file's size and position
    // (a `statx` and an `lseek`, for procfs's size of 0); the line is well under the buffer (the
    // command name is at most 64 bytes) and ends with a newline, which ends the loop.
    let mut file = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
    let mut buffer = [0u8; 1024];
    let mut len = 0;
    while len < buffer.len() {
        match file.read(&mut buffer[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
        if buffer[len - 1] == b'\n' {
            break;
        }
    }
    field_of(&buffer[..len], index)
}

/// Field `index` (see [`PARENT`]) of a `/proc/<pid>/stat` line, parsed, or `None` for a zombie /
/// dead process. The command name (field 2) is in parentheses and may itself contain spaces and
/// parentheses, so fields are counted after the LAST `)`. It is also any bytes at all (a program
/// named in Latin-1 has a non-UTF-8 name), so only what follows it is read as text.
#[cfg(target_os = "linux")]
fn field_of<T: std::str::FromStr>(stat: &[u8], index: usize) -> Option<T> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let after_comm = std::str::from_utf8(&stat[close + 1..]).ok()?;
    let mut fields = after_comm.split_ascii_whitespace();
    // Field 3 is the state.
    let state = fields.next()?;
    if state == "Z" || state == "X" || state == "x" {
        return None;
    }
    fields.nth(index)?.parse().ok()
}

#[cfg(not(target_os = "linux"))]
fn start_time_of(pid: u32) -> Option<u64> {
    live_process(pid, |process| Some(process.start_time()))
}

/// The parent of the live process `pid`, or `None` if there is no such process.
#[cfg(not(target_os = "linux"))]
pub fn parent_of(pid: u32) -> Option<u32> {
    live_process(pid, |process| Some(process.parent()?.as_u32()))
}

/// What `read` takes from the live (not zombie) process `pid`, as `sysinfo` reports it.
#[cfg(not(target_os = "linux"))]
fn live_process<T>(pid: u32, read: impl FnOnce(&sysinfo::Process) -> Option<T>) -> Option<T> {
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
    read(process)
}

/// The uid that owns process `pid` (the owner of its `/proc` entry), or `None` if there is no such
/// process.
#[cfg(target_os = "linux")]
pub fn owner_of(pid: u32) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|m| m.uid())
}

/// The effective uid of this process: receipts and secret files must belong to it. Asked of the
/// kernel once: nothing in this crate's users changes its uid, and a scan asks once per file.
pub fn effective_uid() -> u32 {
    static EUID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *EUID.get_or_init(|| rustix::process::geteuid().as_raw())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn start_time_in(stat: &[u8]) -> Option<u64> {
        field_of(stat, START_TIME)
    }

    #[test]
    fn stat_parsing_counts_fields_after_the_last_parenthesis() {
        let stat = "4242 (evil) name) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615";
        assert_eq!(start_time_in(stat.as_bytes()), Some(987654));
    }

    #[test]
    fn a_command_name_that_is_not_utf8_does_not_hide_the_process() {
        let stat =
            b"4242 (caf\xe9) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(start_time_in(stat), Some(987654));
    }

    // Proves: a live process whose name is not UTF-8 (its program file is named in Latin-1) is
    // alive, so a receipt of it is not removed as dead.
    #[test]
    fn a_live_process_with_a_latin1_name_is_alive() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join(std::ffi::OsStr::from_bytes(b"sl\xe9eper"));
        std::fs::copy("/bin/sleep", &program).unwrap();
        let mut child = std::process::Command::new(&program)
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        let named = (0..200).any(|_| {
            std::thread::sleep(std::time::Duration::from_millis(10));
            std::fs::read(format!("/proc/{pid}/comm")).is_ok_and(|c| c.starts_with(b"sl\xe9"))
        });
        let alive = ProcessIdentity::of(pid);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(named, "the child runs under its Latin-1 name");
        assert!(alive.is_some(), "a process with a non-UTF-8 name is alive");
    }

    #[test]
    fn the_parent_is_read_after_the_command_name() {
        assert_eq!(
            parent_of(std::process::id()),
            Some(std::os::unix::process::parent_id())
        );
        let stat = b"4242 (a) S 7 (b) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654";
        assert_eq!(field_of::<u32>(stat, PARENT), Some(1));
        assert_eq!(parent_of(0), None);
    }

    #[test]
    fn zombie_processes_have_no_identity() {
        let stat = "77 (sleep) Z 1 77 77 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 5555 0 0 0";
        assert_eq!(start_time_in(stat.as_bytes()), None);
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
