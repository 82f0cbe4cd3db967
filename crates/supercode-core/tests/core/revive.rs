//! Revive (issue 3): a stopped canon runtime is relaunched from its catalog's launch command,
//! detached, logged, and reported up once it registers; it is refused while it runs or while
//! another process holds its profile.
//!
//! The main flow runs in a re-executed copy of this binary whose environment points at the
//! fixture: a revived runtime inherits the tray's environment, exactly as in the app, so it
//! registers where this "tray" looks.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use canon_local::LocalRuntimeStatus;
use supercode_core::view::{CommandError, ErrorCode, RuntimeOrigin, RuntimeStatus};
use supercode_core::CoreError;

use crate::support::{
    find, first_line_with, is_child_for, kill_pid, run_child, session_of, tray_binary, wait_until,
    Fixture, Sleeper, TIMEOUT,
};

const FLOW_CHILD: &str = "revive::revive_flow_child";

/// Where the child records the pids it started, so the parent can kill leftovers if it fails.
const PIDS_FILE: &str = "started-pids";

#[test]
fn revive_relaunches_a_sigkilled_canon_runtime_detached_logged_and_refuses_while_it_runs_or_is_locked(
) {
    let Some(bin) = tray_binary("revive_relaunches_a_sigkilled_canon_runtime") else {
        return;
    };
    let fx = Fixture::new();
    let mut env = fx.child_env();
    env.push(("SUPERCODE_TRAY_BIN", bin.into_os_string()));
    let outcome = std::panic::catch_unwind(|| run_child(FLOW_CHILD, &env));
    // Whatever happened, no runtime outlives the test.
    if let Ok(pids) = std::fs::read_to_string(fx.root.join(PIDS_FILE)) {
        for pid in pids.lines().filter_map(|l| l.trim().parse().ok()) {
            kill_pid(pid);
        }
    }
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

fn record_pid(fx: &Fixture, pid: u32) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(fx.root.join(PIDS_FILE))
        .unwrap();
    writeln!(file, "{pid}").unwrap();
}

fn start_demo(fx: &Fixture, bin: &PathBuf, name: &str, profile: &str) -> (Child, String) {
    let mut child = Command::new(bin)
        .args(["demo-runtime", "--name", name, "--canon-profile", profile])
        .current_dir(fx.workspace())
        .envs(fx.child_env())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    record_pid(fx, child.id());
    let endpoint = first_line_with(&mut child, "lre_");
    (child, format!("lre_{endpoint}"))
}

fn refused_message(error: CoreError) -> String {
    let error = CommandError::from(error);
    assert_eq!(error.code, ErrorCode::Refused, "{error:?}");
    error.message
}

/// The whole revive flow, in a child process whose environment points at the fixture.
#[test]
#[ignore = "helper: runs only in a child process started by the revive test"]
fn revive_flow_child() {
    if !is_child_for(FLOW_CHILD) {
        return;
    }
    let fx = Fixture::at(PathBuf::from(
        std::env::var_os(crate::support::ROOT_ENV).unwrap(),
    ));
    let bin = PathBuf::from(std::env::var_os("SUPERCODE_TRAY_BIN").unwrap());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let core = fx.core();
    fx.add_profile("p", "api-key-p");

    // A real canon runtime: holds p's lock and keeps a catalog entry.
    let (mut demo, endpoint) = start_demo(&fx, &bin, "x", "p");
    let running = wait_until("the demo runtime to be listed running", TIMEOUT, || {
        find(&core.snapshot(), &endpoint)
            .filter(|r| r.status == RuntimeStatus::Running)
            .cloned()
    });
    assert_eq!(running.origin, RuntimeOrigin::Both);
    assert_eq!(running.pid, Some(demo.id()));
    let catalog_id = running.catalog_id.clone().unwrap();
    assert!(!running.revive.available);

    // Refused while it runs, by either id.
    for id in [&endpoint, &catalog_id] {
        let message = refused_message(rt.block_on(core.revive(id)).unwrap_err());
        assert!(message.contains("already running"), "{message}");
    }

    // SIGKILL: the receipt goes, the catalog entry turns stale and becomes revivable.
    let old_pid = demo.id();
    demo.kill().unwrap();
    demo.wait().unwrap();
    let stale = wait_until("the catalog entry to turn stale", TIMEOUT, || {
        let snapshot = core.snapshot();
        find(&snapshot, &catalog_id)
            .filter(|r| r.status == RuntimeStatus::Stale)
            .cloned()
    });
    assert_eq!(
        stale.origin,
        RuntimeOrigin::Catalog,
        "the dead receipt is gone"
    );
    assert!(stale.revive.available, "{:?}", stale.revive);
    assert!(stale
        .status_reason
        .as_deref()
        .is_some_and(|r| r.contains(&format!("PID {old_pid}"))));

    // Another live process holding p's lock blocks revive, and the refusal names it.
    let mut holder = Sleeper::spawn();
    fx.hold_lock_as("p", holder.pid());
    let message = refused_message(rt.block_on(core.revive(&catalog_id)).unwrap_err());
    assert!(
        message.contains(&format!("PID {}", holder.pid())),
        "{message}"
    );
    let blocked = find(&core.snapshot(), &catalog_id).unwrap().clone();
    assert!(!blocked.revive.available);
    holder.kill();

    // Revive: relaunched from the catalog's launch command, reported once it registers.
    let outcome = rt.block_on(core.revive(&catalog_id)).unwrap();
    let revived = find(&core.snapshot(), &catalog_id)
        .filter(|r| r.status == RuntimeStatus::Running)
        .cloned()
        .expect("revive reports success only once the runtime is listed running");
    let new_pid = revived.pid.unwrap();
    record_pid(&fx, new_pid);
    assert_ne!(new_pid, old_pid);
    assert_eq!(revived.origin, RuntimeOrigin::Both);
    assert!(
        outcome.message.contains(&format!("PID {new_pid}")),
        "{outcome:?}"
    );
    // Detached: its own session, not ours.
    let ours = session_of(std::process::id());
    assert_ne!(session_of(new_pid), ours);
    assert_eq!(session_of(new_pid), new_pid, "it leads its own session");
    // Started as the profile, from the recorded command.
    let environ = std::fs::read(format!("/proc/{new_pid}/environ")).unwrap();
    assert!(environ
        .split(|b| *b == 0)
        .any(|var| var == b"CANON_AGENT=p"));
    let cmdline = std::fs::read(format!("/proc/{new_pid}/cmdline")).unwrap();
    let argv: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    assert_eq!(Some(&argv), revived.launch_command.as_ref());
    // Its output goes to the per-runtime log under log_dir.
    let log = fx.locations.revive_log(&catalog_id);
    assert!(log.starts_with(&fx.locations.log_dir));
    let text = wait_until("the revived runtime's log line", TIMEOUT, || {
        std::fs::read_to_string(&log)
            .ok()
            .filter(|t| t.contains("demo runtime x is live"))
    });
    assert!(!text.is_empty());
    // It survives the core that revived it.
    drop(core);
    assert!(live_runtime::pid_exists(new_pid));
    let core = fx.core();
    assert_eq!(
        find(&core.snapshot(), &catalog_id).unwrap().status,
        RuntimeStatus::Running
    );

    kill_pid(new_pid);
    wait_until("the revived runtime to exit", TIMEOUT, || {
        (!live_runtime::pid_exists(new_pid)).then_some(())
    });
    println!("CHILD_OK");
}

#[tokio::test]
async fn revive_of_a_launch_command_that_exits_at_once_reports_failure_with_its_log_tail() {
    let fx = Fixture::new();
    fx.add_profile("q", "k");
    let id = fx.add_catalog_entry(
        Some("q"),
        &["/bin/sh", "-c", "echo quit-before-registering >&2; exit 3"],
        LocalRuntimeStatus::Offline,
        None,
    );
    let core = fx.core();

    let started = std::time::Instant::now();
    let error = tokio::time::timeout(TIMEOUT, core.revive(&id))
        .await
        .expect("revive gives up when the process exits, not at its timeout")
        .unwrap_err();

    assert!(
        started.elapsed() < supercode_core::revive::REVIVE_READY_TIMEOUT,
        "an early exit is reported at once, not after the ready timeout"
    );
    let error = CommandError::from(error);
    assert_eq!(error.code, ErrorCode::RuntimeUnavailable, "{error:?}");
    assert!(
        error.message.contains("exited before it came up"),
        "{}",
        error.message
    );
    assert!(
        error.message.contains("quit-before-registering"),
        "the log tail is shown: {}",
        error.message
    );
    assert!(std::fs::read_to_string(fx.locations.revive_log(&id))
        .unwrap()
        .contains("quit-before-registering"));
}

#[tokio::test]
async fn revive_of_an_unknown_id_is_not_found() {
    let fx = Fixture::new();
    let error = CommandError::from(fx.core().revive("sdk:nobody:0000").await.unwrap_err());
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
}

/// A runtime whose receipt names no catalog id (or another one, e.g. because it resolved its cwd
/// through a symlink) is still up once the process revive started has registered.
#[tokio::test]
async fn revive_counts_the_started_process_registering_itself_as_up() {
    let Some(bin) = tray_binary("revive_counts_the_started_process_registering_itself_as_up")
    else {
        return;
    };
    let fx = Fixture::new();
    fx.add_profile("r", "k");
    // `env` execs the runtime in place (same pid) with the fixture's directories, which a real
    // revive would inherit from the tray; the runtime registers a receipt and no catalog entry.
    let mut launch: Vec<String> = vec!["/usr/bin/env".into()];
    for (name, value) in fx.child_env() {
        launch.push(format!("{name}={}", value.to_string_lossy()));
    }
    let bin = bin.to_string_lossy().into_owned();
    launch.extend([bin, "demo-runtime".into(), "--name".into(), "r".into()]);
    let launch: Vec<&str> = launch.iter().map(String::as_str).collect();
    let id = fx.add_catalog_entry(Some("r"), &launch, LocalRuntimeStatus::Offline, None);
    let core = fx.core();

    let started = std::time::Instant::now();
    let outcome = tokio::time::timeout(TIMEOUT, core.revive(&id))
        .await
        .expect("revive answers within the test's bound");
    let elapsed = started.elapsed();
    let live = core
        .snapshot()
        .runtimes
        .iter()
        .find(|r| r.name == "r" && r.status == RuntimeStatus::Running)
        .cloned();
    if let Some(pid) = live.as_ref().and_then(|r| r.pid) {
        kill_pid(pid);
    }
    let outcome = outcome.unwrap();
    let live = live.expect("the revived runtime is listed running");
    assert!(
        outcome
            .message
            .contains(&format!("PID {}", live.pid.unwrap())),
        "{outcome:?}"
    );
    assert!(
        elapsed < supercode_core::revive::REVIVE_READY_TIMEOUT,
        "reported up when it registered, not after the ready timeout ({elapsed:?})"
    );
}
