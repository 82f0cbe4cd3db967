//! `isProcessAlive(pid)`: `process.kill(pid, 0)`.

/// Whether `pid` names a live process, as `process.kill(pid, 0)` sees it. Node throws (→ `false`)
/// for non-integers and values outside the 32-bit range. One deliberate difference: `EPERM`
/// (the process exists but belongs to another user) counts as alive here, so we never delete a
/// lock held by someone else; Node reports it dead.
pub fn is_process_alive(pid: f64) -> bool {
    if pid.fract() != 0.0 || pid < f64::from(i32::MIN) || pid > f64::from(i32::MAX) {
        return false;
    }
    #[allow(clippy::cast_possible_truncation)]
    let pid = pid as i32;
    alive(pid)
}

/// `kill(pid, 0)` as Node calls it: a positive pid names a process, 0 the caller's process group
/// and a negative pid the process group `-pid`.
#[cfg(unix)]
fn alive(pid: i32) -> bool {
    use rustix::process::{
        test_kill_current_process_group, test_kill_process, test_kill_process_group, Pid,
    };
    let answer = match pid {
        0 => test_kill_current_process_group(),
        // `kill(INT_MIN, 0)` names no group (its negation overflows): ESRCH, as Linux answers.
        i32::MIN => return false,
        _ => match Pid::from_raw(pid.abs()) {
            Some(target) if pid > 0 => test_kill_process(target),
            Some(group) => test_kill_process_group(group),
            None => return false,
        },
    };
    matches!(answer, Ok(()) | Err(rustix::io::Errno::PERM))
}

#[cfg(not(unix))]
fn alive(pid: i32) -> bool {
    let Ok(pid) = u32::try_from(pid) else {
        return false;
    };
    let mut system = sysinfo::System::new();
    let pid = sysinfo::Pid::from_u32(pid);
    system.refresh_processes(sysinfo::ProcessesToUpdate::Some(&[pid]), true);
    system.process(pid).is_some()
}

#[cfg(all(test, unix))]
mod tests {
    use super::is_process_alive;

    #[test]
    fn this_process_and_its_group_are_alive() {
        let me = f64::from(std::process::id());
        assert!(is_process_alive(me));
        assert!(
            is_process_alive(0.0),
            "pid 0 is the caller's own process group"
        );
        let group = rustix::process::getpgrp().as_raw_nonzero().get();
        assert!(
            is_process_alive(f64::from(-group)),
            "-pgid names our own group"
        );
    }

    #[test]
    fn a_reaped_child_is_dead() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = f64::from(child.id());
        child.wait().unwrap();
        assert!(!is_process_alive(pid));
    }

    #[test]
    fn values_node_would_throw_on_are_dead() {
        for pid in [
            1.5,
            f64::NAN,
            f64::INFINITY,
            2f64.powi(31),
            f64::from(i32::MIN),
        ] {
            assert!(!is_process_alive(pid), "{pid}");
        }
    }
}
