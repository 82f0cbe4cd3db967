//! Threads, CPU time and process status from `/proc` (Linux), for benchmarks that account for
//! the CPU each party spends or wait for a thread to go idle.
//!
//! Every reader returns `None` (or an empty list) for a process or thread that is gone: a
//! benchmark samples processes that may exit between two reads.

use std::time::Duration;

/// The thread ids of process `pid` (`/proc/PID/task`).
pub fn thread_ids(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|dir| {
            dir.filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// A thread's name as the kernel keeps it (`comm`: at most 15 bytes).
pub fn thread_name(pid: u32, tid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).ok()?;
    Some(comm.trim_end().to_owned())
}

/// CPU time a thread has run so far, user + kernel: the scheduler's nanosecond counter
/// (`schedstat`), not the tick-sampled `utime`/`stime`.
pub fn thread_cpu(pid: u32, tid: u32) -> Option<Duration> {
    let schedstat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    let ns = schedstat.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// The fields of `/proc/PID/stat` (or of one thread's `stat`) that benchmarks read. Times are in
/// clock ticks (`USER_HZ`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// `R`, `S`, `D`, `Z`, ...
    pub state: char,
    /// The parent process.
    pub ppid: u32,
    /// User time.
    pub utime: u64,
    /// Kernel time.
    pub stime: u64,
    /// User time of reaped children.
    pub cutime: u64,
    /// Kernel time of reaped children.
    pub cstime: u64,
}

/// `/proc/PID/stat`: for a process, the times of all its threads.
pub fn process_stat(pid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// `/proc/PID/task/TID/stat`: one thread.
pub fn thread_stat(pid: u32, tid: u32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?)
}

/// Parses a `stat` line. The command name (field 2) may contain spaces and parentheses, so the
/// fields are counted after its *last* `)`.
pub fn parse_stat(line: &str) -> Option<Stat> {
    let (_, rest) = line.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: number(&fields, 4)?,
        utime: number(&fields, 14)?,
        stime: number(&fields, 15)?,
        cutime: number(&fields, 16)?,
        cstime: number(&fields, 17)?,
    })
}

/// Field `field` as numbered in proc(5), of the fields after the command name (which start at
/// field 3, the state).
fn number<T: std::str::FromStr>(fields: &[&str], field: usize) -> Option<T> {
    fields.get(field - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let line = "4242 (evil) name) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 987654";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: 'S',
                ppid: 1,
                utime: 11,
                stime: 22,
                cutime: 33,
                cstime: 44,
            })
        );
        assert_eq!(parse_stat("4242 (cut short) S 1"), None);
    }

    #[test]
    fn this_process_and_its_threads_are_readable() {
        let me = std::process::id();
        let stat = process_stat(me).expect("our own stat");
        assert_eq!(stat.ppid, std::os::unix::process::parent_id());
        let threads = thread_ids(me);
        assert!(threads.contains(&me), "the main thread's id is the pid");
        assert!(thread_cpu(me, me).is_some());
        assert!(thread_name(me, me).is_some_and(|name| !name.is_empty()));
        assert_eq!(thread_stat(me, u32::MAX), None);
    }
}
