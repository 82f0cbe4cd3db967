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

#[cfg(unix)]
#[allow(unsafe_code)]
fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 sends nothing; it only performs the existence/permission check.
    let rc = unsafe { libc::kill(pid, 0) };
    if rc == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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
