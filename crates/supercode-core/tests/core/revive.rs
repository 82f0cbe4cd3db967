//! Revive (issue 3): a stopped canon runtime is relaunched from its catalog's launch command,
//! detached, logged, and reported up once it registers; it is refused while it runs or while
//! another process holds its profile.
//!
//! The main flow runs in a re-executed copy of this binary whose environment points at the
//! fixture: a revived runtime inherits the tray's environment, exactly as in the app, so it
//! registers where this "tray" looks.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use canon_local::LocalRuntimeStatus;
use supercode_core::revive::ReviveRequest;
use supercode_core::view::{CommandError, ErrorCode, RevivePlanView, RuntimeOrigin, RuntimeStatus};
use supercode_core::{CoreError, Supercode};

use crate::support::{
    find, first_line_with, is_child_for, kill_pid, revive_confirmed, run_child, session_of,
    tray_binary, unplanned, wait_until, write_receipt_as, Fixture, Sleeper, TIMEOUT,
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
    // Issue 31: one id from running to stale to revived, the catalog's.
    assert_eq!(running.id, catalog_id);
    assert!(!running.revive.available);

    // Refused while it runs, by either id.
    for id in [&endpoint, &catalog_id] {
        let message = refused_message(rt.block_on(core.revive(unplanned(id))).unwrap_err());
        assert!(message.contains("already running"), "{message}");
        let message = refused_message(rt.block_on(core.revive_plan(id)).unwrap_err());
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
    assert_eq!(stale.id, catalog_id);
    assert!(stale.revive.available, "{:?}", stale.revive);
    assert!(stale
        .status_reason
        .as_deref()
        .is_some_and(|r| r.contains(&format!("PID {old_pid}"))));

    // Another live process holding p's lock blocks revive, and the refusal names it.
    let mut holder = Sleeper::sleep();
    fx.hold_lock_as("p", holder.pid());
    let message = refused_message(rt.block_on(core.revive_plan(&catalog_id)).unwrap_err());
    assert!(
        message.contains(&format!("PID {}", holder.pid())),
        "{message}"
    );
    let blocked = find(&core.snapshot(), &catalog_id).unwrap().clone();
    assert!(!blocked.revive.available);
    holder.kill();

    // Revive: relaunched from the catalog's launch command, reported once it registers.
    let outcome = rt.block_on(revive_confirmed(&core, &catalog_id)).unwrap();
    let revived = find(&core.snapshot(), &catalog_id)
        .filter(|r| r.status == RuntimeStatus::Running)
        .cloned()
        .expect("revive reports success only once the runtime is listed running");
    let new_pid = revived.pid.unwrap();
    record_pid(&fx, new_pid);
    assert_ne!(new_pid, old_pid);
    assert_eq!(revived.origin, RuntimeOrigin::Both);
    assert_eq!(revived.id, catalog_id, "the same id once revived");
    assert_ne!(revived.endpoint.as_deref(), Some(endpoint.as_str()));
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
    let error = tokio::time::timeout(TIMEOUT, revive_confirmed(&core, &id))
        .await
        .expect("revive gives up when the process exits, not at its timeout")
        .unwrap_err();

    assert!(
        started.elapsed() < supercode_core::revive::REVIVE_READY_TIMEOUT,
        "an early exit is reported at once, not after the ready timeout"
    );
    assert!(
        matches!(
            error,
            CoreError::Revive(supercode_core::revive::ReviveFailure::ExitedEarly { .. })
        ),
        "{error:?}"
    );
    let error = CommandError::from(error);
    assert_eq!(error.code, ErrorCode::Internal, "{error:?}");
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
    let core = fx.core();
    let error = CommandError::from(
        revive_confirmed(&core, "sdk:nobody:0000")
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
    let error = CommandError::from(core.revive(unplanned("sdk:nobody:0000")).await.unwrap_err());
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
    let outcome = tokio::time::timeout(TIMEOUT, revive_confirmed(&core, &id))
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

/// A stale receipt (its pid now belongs to `holder`, another process) whose supervisor records
/// `argv` in the workspace with `env`, running as profile `p`. Returns its endpoint.
fn stale_receipt_with(
    fx: &Fixture,
    holder: &Sleeper,
    endpoint: &live_runtime::LiveRuntimeEndpoint,
    argv: &[&str],
    env: serde_json::Value,
) -> String {
    let identity = holder.identity();
    let metadata = serde_json::json!({
        "runtimeKind": "sdk",
        "displayName": "planned",
        "profile": "p",
        "supervisor": {
            "kind": "launchCommand",
            "argv": argv,
            "cwd": fx.workspace(),
            "env": env,
        },
    });
    write_receipt_as(
        fx.receipts(),
        endpoint,
        identity.pid,
        identity.start_time + 1,
        "planned",
        metadata,
    );
    endpoint.to_string()
}

fn confirm(plan: &RevivePlanView, allow_env: &[&str]) -> ReviveRequest {
    ReviveRequest {
        id: plan.id.clone(),
        plan_digest: plan.digest.clone(),
        allow_env: allow_env.iter().map(|n| (*n).to_owned()).collect(),
    }
}

/// Confirms `plan` (allowing `allow_env`) and returns what the revived program wrote to
/// `marker`. The programs here write their marker and exit at once, so the revive itself
/// reports that the runtime exited before it came up: proof that it ran.
async fn run_confirmed(
    core: &Supercode,
    plan: &RevivePlanView,
    allow_env: &[&str],
    marker: &Path,
    what: &str,
) -> String {
    let error = tokio::time::timeout(TIMEOUT, core.revive(confirm(plan, allow_env)))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        error.to_string().contains("exited before it came up"),
        "it ran (and exited, as scripted): {error}"
    );
    wait_until(what, TIMEOUT, || std::fs::read_to_string(marker).ok())
}

/// Confirms a `shown` plan that no longer matches what would run: refused as changed.
async fn refused_as_changed(core: &Supercode, shown: &RevivePlanView) -> CommandError {
    let error = CommandError::from(core.revive(confirm(shown, &[])).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::PlanChanged, "{error:?}");
    error
}

// Issue 13: the confirmation shows the program resolved to an absolute path (looked up on PATH
// as the spawn would), its arguments, its working directory and every variable it sets.
#[tokio::test]
async fn the_revive_plan_shows_the_absolute_program_its_arguments_cwd_and_every_variable() {
    let fx = Fixture::new();
    let holder = Sleeper::sleep();
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let id = stale_receipt_with(
        &fx,
        &holder,
        &endpoint,
        &["sleep", "30", "two words"],
        serde_json::json!({ "TZ": "Europe/Paris" }),
    );
    let plan = fx.core().revive_plan(&id).await.unwrap();

    let program = std::path::Path::new(&plan.program);
    assert!(program.is_absolute(), "{plan:?}");
    assert_eq!(program.file_name().unwrap(), "sleep");
    let on_path = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("sleep"))
        .find(|p| p.is_file())
        .unwrap();
    assert_eq!(
        program, on_path,
        "the first sleep on PATH, as execvp would pick"
    );
    assert_eq!(plan.recorded_program, "sleep");
    assert_eq!(plan.args, ["30", "two words"]);
    assert_eq!(plan.cwd, fx.workspace().to_string_lossy());
    let env: Vec<(&str, &str)> = plan
        .env
        .iter()
        .map(|v| (v.name.as_str(), v.value.as_str()))
        .collect();
    assert_eq!(env, [("CANON_AGENT", "p"), ("TZ", "Europe/Paris")]);
    assert!(
        plan.env
            .iter()
            .all(|v| !v.needs_allow && v.reason.is_none()),
        "the profile and a time zone are harmless: {:?}",
        plan.env
    );
    assert!(plan.run.available, "{:?}", plan.run);
    assert_eq!(plan.digest.len(), 64);
}

// Issue 13: a variable that changes how programs load is refused with its reason, and runs once
// the user allowed that value for that runtime; the allow is remembered, for that value only.
#[tokio::test]
async fn a_launch_plan_with_ld_preload_is_refused_with_its_reason_until_it_is_allowed() {
    let fx = Fixture::new();
    let holder = Sleeper::sleep();
    let marker = fx.root.join("ran");
    let script = format!("printf %s \"$LD_PRELOAD\" > '{}'; exit 3", marker.display());
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let preload = fx.root.join("missing-preload.so");
    let id = stale_receipt_with(
        &fx,
        &holder,
        &endpoint,
        &["/bin/sh", "-c", &script],
        serde_json::json!({ "LD_PRELOAD": preload }),
    );
    let core = fx.core();

    let plan = core.revive_plan(&id).await.unwrap();
    let var = plan.env.iter().find(|v| v.name == "LD_PRELOAD").unwrap();
    assert!(var.needs_allow && !var.allowed, "{var:?}");
    let reason = var.reason.clone().unwrap();
    assert!(
        reason.contains("LD_PRELOAD is not one of the few harmless variables"),
        "{reason}"
    );
    assert!(!plan.run.available);
    assert!(
        plan.run.reason.as_deref().unwrap().contains("LD_PRELOAD"),
        "{:?}",
        plan.run
    );

    // Confirmed without the allow: refused with the reason, nothing ran.
    let error = CommandError::from(core.revive(confirm(&plan, &[])).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::Refused, "{error:?}");
    assert!(error.message.contains(&reason), "{}", error.message);
    assert!(!marker.exists(), "a refused plan ran");

    // Allowed in the confirmation: it runs, with exactly that value.
    let seen = run_confirmed(
        &core,
        &plan,
        &["LD_PRELOAD"],
        &marker,
        "the revived script to write its marker",
    )
    .await;
    assert_eq!(seen, preload.to_string_lossy());

    // Remembered for this runtime and this value...
    let again = core.revive_plan(&id).await.unwrap();
    let var = again.env.iter().find(|v| v.name == "LD_PRELOAD").unwrap();
    assert!(var.allowed, "{var:?}");
    assert!(again.run.available, "{:?}", again.run);
    // ...and not for another value.
    stale_receipt_with(
        &fx,
        &holder,
        &endpoint,
        &["/bin/sh", "-c", &script],
        serde_json::json!({ "LD_PRELOAD": "/elsewhere/other.so" }),
    );
    let changed = core.revive_plan(&id).await.unwrap();
    assert!(!changed.run.available, "a new value needs a new allow");
}

// Issue 13: what runs is what was shown. A catalog entry rewritten between showing and confirming
// is refused ("the launch command changed; review it again"); the new plan, once shown, runs.
#[tokio::test]
async fn a_revive_whose_catalog_entry_changed_since_it_was_shown_is_refused() {
    let fx = Fixture::new();
    fx.add_profile("q", "k");
    let marker = fx.root.join("ran");
    let launch = |word: &str| {
        vec![
            "/bin/sh".to_owned(),
            "-c".to_owned(),
            format!("echo {word} > '{}'; exit 3", marker.display()),
        ]
    };
    let first: Vec<String> = launch("first");
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let id = fx.add_catalog_entry(Some("q"), &first, LocalRuntimeStatus::Offline, None);
    let core = fx.core();
    let shown = core.revive_plan(&id).await.unwrap();
    assert_eq!(shown.args[1], first[2]);

    // Something rewrites the entry (same id, another command) while the user reads the plan.
    let mut entry = canon_local::read_local_runtime_entry(fx.canon(), &id)
        .unwrap()
        .unwrap();
    entry.launch_command = launch("second");
    canon_local::upsert_local_runtime_entry(fx.canon(), &entry).unwrap();

    let error = refused_as_changed(&core, &shown).await;
    assert!(
        error
            .message
            .contains("changed since it was shown; review it again"),
        "{}",
        error.message
    );
    assert!(!marker.exists(), "the changed command ran");

    let reviewed = core.revive_plan(&id).await.unwrap();
    assert_ne!(reviewed.digest, shown.digest);
    let text = run_confirmed(
        &core,
        &reviewed,
        &[],
        &marker,
        "the reviewed command to run",
    )
    .await;
    assert_eq!(text.trim(), "second");
}

// Issue 13: the same for a receipt's recorded command: its environment changed after it was shown.
#[tokio::test]
async fn a_revive_whose_receipt_changed_since_it_was_shown_is_refused() {
    let fx = Fixture::new();
    let holder = Sleeper::sleep();
    let marker = fx.root.join("ran");
    let script = format!("echo ran > '{}'; exit 3", marker.display());
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let argv = ["/bin/sh", "-c", script.as_str()];
    let id = stale_receipt_with(
        &fx,
        &holder,
        &endpoint,
        &argv,
        serde_json::json!({ "MODE": "a" }),
    );
    let core = fx.core();
    let shown = core.revive_plan(&id).await.unwrap();
    stale_receipt_with(
        &fx,
        &holder,
        &endpoint,
        &argv,
        serde_json::json!({ "MODE": "b" }),
    );
    refused_as_changed(&core, &shown).await;
    assert!(!marker.exists(), "the changed command ran");
}

// Issue 13: the program is looked up when the plan is made, the way the spawn would (the plan's
// own PATH once it is allowed), and that absolute path runs; a program of the same name that
// appears earlier on PATH after the plan was shown makes another plan, which is refused.
#[tokio::test]
async fn the_program_is_resolved_on_the_plans_path_and_that_absolute_path_runs() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    let holder = Sleeper::sleep();
    let (earlier, bin) = (fx.root.join("earlier-bin"), fx.root.join("private-bin"));
    std::fs::create_dir_all(&earlier).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let marker = fx.root.join("ran");
    let tool = bin.join("revive-test-tool");
    std::fs::write(
        &tool,
        format!("#!/bin/sh\necho \"$0\" > '{}'\nexit 3\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let search = format!("{}:{}:/usr/bin:/bin", earlier.display(), bin.display());
    let id = stale_receipt_with(
        &fx,
        &holder,
        &endpoint,
        &["revive-test-tool"],
        serde_json::json!({ "PATH": search }),
    );
    let core = fx.core();
    let plan = core.revive_plan(&id).await.unwrap();
    assert_eq!(plan.program, tool.to_string_lossy(), "{plan:?}");
    assert_eq!(plan.recorded_program, "revive-test-tool");
    let path = plan.env.iter().find(|v| v.name == "PATH").unwrap();
    assert!(
        path.needs_allow && !path.allowed,
        "PATH itself must be allowed"
    );

    let ran = run_confirmed(&core, &plan, &["PATH"], &marker, "the tool to run").await;
    assert_eq!(
        ran.trim(),
        tool.to_string_lossy(),
        "started as the absolute path shown"
    );

    std::fs::remove_file(&marker).unwrap();
    let shown = core.revive_plan(&id).await.unwrap();
    let shadow = earlier.join("revive-test-tool");
    std::fs::copy(&tool, &shadow).unwrap();
    refused_as_changed(&core, &shown).await;
    assert!(!marker.exists(), "neither program ran");
    let again = core.revive_plan(&id).await.unwrap();
    assert_eq!(
        again.program,
        shadow.to_string_lossy(),
        "the new plan shows the new program"
    );
}

// Issue 29: the deny-list let these through. Every variable a record sets needs the user's allow
// (and is named, with its reason, in the plan and in the refusal) except a few harmless ones with
// plain values; a name that is not `[A-Za-z_][A-Za-z0-9_]*` refuses the plan outright.
#[tokio::test]
async fn every_variable_a_record_sets_needs_an_allow_but_the_few_harmless_ones() {
    let fx = Fixture::new();
    let holder = Sleeper::sleep();
    let marker = fx.root.join("ran");
    let script = format!("echo ran > '{}'; exit 3", marker.display());
    let needing: &[(&str, &str)] = &[
        ("BASH_FUNC_x", "() { evil; }"),
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "core.sshCommand"),
        ("GIT_SSH_COMMAND", "/tmp/evil.sh"),
        ("HOME", "/tmp/evil-home"),
        ("XDG_CONFIG_HOME", "/tmp/evil"),
        ("CLAUDE_CONFIG_DIR", "/tmp/evil"),
        ("ANTHROPIC_BASE_URL", "https://evil.example"),
        ("HTTPS_PROXY", "http://evil.example:8080"),
        ("NODE_TLS_REJECT_UNAUTHORIZED", "0"),
        ("SSL_CERT_FILE", "/tmp/evil.pem"),
        ("NODE_EXTRA_CA_CERTS", "/tmp/evil.pem"),
        ("npm_config_script_shell", "/tmp/evil.sh"),
        ("ELECTRON_RUN_AS_NODE", "1"),
        ("NODE_REPL_EXTERNAL_MODULE", "/tmp/evil.js"),
        ("GLIBC_TUNABLES", "glibc.malloc.check=3"),
        ("LOCPATH", "/tmp/evil"),
        ("GEM_PATH", "/tmp/evil"),
        ("LANG", "/tmp/evil-locale"),
    ];
    let mut env = serde_json::Map::new();
    for (name, value) in needing {
        env.insert((*name).to_owned(), serde_json::json!(value));
    }
    env.insert("LC_ALL".into(), serde_json::json!("C.UTF-8"));
    env.insert("TERM".into(), serde_json::json!("xterm-256color"));
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let id = stale_receipt_with(
        &fx,
        &holder,
        &endpoint,
        &["/bin/sh", "-c", &script],
        serde_json::Value::Object(env),
    );
    let core = fx.core();
    let plan = core.revive_plan(&id).await.unwrap();
    for (name, _) in needing {
        let var = plan.env.iter().find(|v| v.name == *name).unwrap();
        assert!(var.needs_allow && !var.allowed, "{var:?}");
        assert!(
            var.reason.as_deref().is_some_and(|r| r.starts_with(name)),
            "{var:?}"
        );
    }
    for name in ["CANON_AGENT", "LC_ALL", "TERM"] {
        let var = plan.env.iter().find(|v| v.name == name).unwrap();
        assert!(!var.needs_allow && var.reason.is_none(), "{var:?}");
    }
    assert!(!plan.run.available);
    let error = CommandError::from(core.revive(confirm(&plan, &[])).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::Refused, "{error:?}");
    for (name, _) in needing {
        assert!(error.message.contains(name), "{name}: {}", error.message);
    }
    let all_but_one: Vec<&str> = needing.iter().skip(1).map(|(n, _)| *n).collect();
    let error = CommandError::from(core.revive(confirm(&plan, &all_but_one)).await.unwrap_err());
    assert_eq!(error.code, ErrorCode::Refused, "{error:?}");
    assert!(error.message.contains("BASH_FUNC_x"), "{}", error.message);
    assert!(!marker.exists(), "a plan with a variable not allowed ran");

    // A name outside [A-Za-z_][A-Za-z0-9_]* is never set: the plan itself is refused.
    for name in ["BASH_FUNC_x%%", "X\u{1b}[31m", "1X", "A-B"] {
        stale_receipt_with(
            &fx,
            &holder,
            &endpoint,
            &["/bin/sh", "-c", &script],
            serde_json::json!({ name: "v" }),
        );
        let refused = CommandError::from(core.revive_plan(&id).await.unwrap_err());
        assert!(
            refused.message.contains("which is not a plain name"),
            "{name:?}: {}",
            refused.message
        );
    }
    assert!(!marker.exists());
}
