//! Revive: relaunch a stopped runtime from its recorded launch command, and wait until it is up.
//!
//! Revive never runs anything but the recorded command: no shell, no added arguments. The
//! process is detached from the app (its own session, so it survives the app quitting), writes to
//! a per-runtime log in the app's log directory, and counts as up once a live receipt or a fresh
//! catalog heartbeat shows it.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use live_runtime::{LiveRuntimeStatus, LiveRuntimeSupervisor};

use crate::inventory::{self, CatalogRuntime};
use crate::view::ReviveOutcome;
use crate::{CoreError, Locations};

/// How long a revived runtime may take to show up. Agent runtimes load models and tools before
/// they register; half a minute covers a cold start without leaving the user waiting forever.
pub const REVIVE_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How often readiness is checked while waiting: only during a revive, and fast enough that the
/// user sees success within a fraction of a second of it happening.
const READY_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// How much of the runtime's log a failure shows.
const LOG_TAIL_BYTES: u64 = 2048;

/// What revive will run, taken from the record.
#[derive(Clone, Debug)]
pub struct RevivePlan {
    /// The inventory id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The recorded launch command.
    pub argv: Vec<String>,
    /// Its working directory.
    pub cwd: PathBuf,
    /// Extra environment it was recorded with.
    pub env: BTreeMap<String, String>,
    /// The Canon profile it runs as (`CANON_AGENT`).
    pub profile: Option<String>,
    /// The catalog id, when revived from the catalog.
    pub catalog_id: Option<String>,
    /// The live-runtime id, when revived from a receipt's supervisor.
    pub runtime_id: Option<String>,
}

/// Works out what revive would run for `id`, refusing with a clear message when it must not.
pub fn plan(locations: &Locations, id: &str) -> Result<RevivePlan, CoreError> {
    let snapshot_entries = inventory::catalog_runtimes(locations).0;
    let list = live_runtime::list_live_runtimes(&locations.receipts)?;
    let record = list.runtimes.iter().find(|r| r.endpoint.as_str() == id);
    let catalog_id = record
        .and_then(|r| r.metadata.canon_runtime_id.clone())
        .unwrap_or_else(|| id.to_owned());
    if let Some(entry) = snapshot_entries.iter().find(|c| c.id == catalog_id) {
        if record.is_some_and(|r| r.status == LiveRuntimeStatus::Running) {
            return Err(CoreError::Refused(format!(
                "{} is already running.",
                display_name(entry)
            )));
        }
        let availability = inventory::revive_availability(locations, entry);
        if let Some(reason) = availability.reason {
            return Err(CoreError::Refused(format!(
                "Cannot revive {}: {reason}",
                display_name(entry)
            )));
        }
        return Ok(RevivePlan {
            id: id.to_owned(),
            name: display_name(entry),
            argv: entry.launch_command.clone(),
            cwd: PathBuf::from(&entry.cwd),
            env: BTreeMap::new(),
            profile: entry.profile.clone(),
            catalog_id: Some(entry.id.clone()),
            runtime_id: None,
        });
    }
    let Some(record) = record else {
        return Err(CoreError::UnknownRuntime { id: id.to_owned() });
    };
    if record.status == LiveRuntimeStatus::Running {
        return Err(CoreError::Refused(format!(
            "{} is already running.",
            record.runtime_id
        )));
    }
    match &record.metadata.supervisor {
        LiveRuntimeSupervisor::LaunchCommand { argv, cwd, env } if !argv.is_empty() => {
            Ok(RevivePlan {
                id: id.to_owned(),
                name: record
                    .metadata
                    .display_name
                    .clone()
                    .unwrap_or_else(|| record.runtime_id.clone()),
                argv: argv.clone(),
                cwd: cwd.clone(),
                env: env.clone(),
                profile: record.metadata.profile.clone(),
                catalog_id: None,
                runtime_id: Some(record.runtime_id.clone()),
            })
        }
        _ => Err(CoreError::Refused(format!(
            "{} was started by hand; start it again the same way.",
            record.runtime_id
        ))),
    }
}

fn display_name(entry: &CatalogRuntime) -> String {
    entry
        .agent_name
        .clone()
        .or_else(|| entry.profile.clone())
        .unwrap_or_else(|| entry.id.clone())
}

/// Plans, spawns and waits for a revive.
pub async fn revive(locations: &Locations, id: &str) -> Result<ReviveOutcome, CoreError> {
    let locations = locations.clone();
    let id = id.to_owned();
    tokio::task::spawn_blocking(move || {
        let plan = plan(&locations, &id)?;
        let log = locations.revive_log(
            plan.catalog_id
                .as_deref()
                .or(plan.runtime_id.as_deref())
                .unwrap_or(&id),
        );
        let started_at = time::OffsetDateTime::now_utc();
        let child = spawn_detached(&plan, &log)?;
        tracing::info!(id = %plan.id, pid = child.pid, "revive started");
        wait_until_up(&locations, &plan, &child, &log, started_at)
    })
    .await
    .map_err(|e| CoreError::Revive {
        message: format!("revive was interrupted: {e}"),
    })?
}

/// A spawned runtime and, once it has exited, its exit status.
struct Spawned {
    pid: u32,
    exit: Arc<Mutex<Option<std::process::ExitStatus>>>,
}

fn spawn_detached(plan: &RevivePlan, log: &Path) -> Result<Spawned, CoreError> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| CoreError::Io { what, source }
    };
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent)
            .map_err(io("could not create the runtime log directory"))?;
    }
    let out = open_log(log).map_err(io("could not open the runtime's log file"))?;
    let err = out
        .try_clone()
        .map_err(io("could not open the runtime's log file"))?;
    let mut command = Command::new(&plan.argv[0]);
    command
        .args(&plan.argv[1..])
        .current_dir(&plan.cwd)
        .envs(&plan.env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    if let Some(profile) = &plan.profile {
        command.env("CANON_AGENT", profile);
    }
    detach(&mut command);
    let mut child = command.spawn().map_err(|source| CoreError::Revive {
        message: format!(
            "could not start `{}` in {}: {source}",
            plan.argv[0],
            plan.cwd.display()
        ),
    })?;
    let pid = child.id();
    let exit = Arc::new(Mutex::new(None));
    let reaped = exit.clone();
    // Reap it when it exits (no zombie while the app runs) and let the wait loop see early exits.
    std::thread::Builder::new()
        .name(format!("revive-reaper-{pid}"))
        .spawn(move || {
            if let Ok(status) = child.wait() {
                *reaped.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
            }
        })
        .map_err(io("could not start the revive reaper thread"))?;
    Ok(Spawned { pid, exit })
}

fn open_log(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// Puts the child in its own session, so it outlives the app and its terminal.
#[cfg(unix)]
fn detach(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent; it is the only
    // thing run between fork and exec.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid().map_err(std::io::Error::from)?;
            Ok(())
        });
    }
}

#[cfg(windows)]
fn detach(command: &mut Command) {
    use std::os::windows::process::CommandExt;
    const DETACHED_PROCESS: u32 = 0x0000_0008;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    command.creation_flags(DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP);
}

fn wait_until_up(
    locations: &Locations,
    plan: &RevivePlan,
    child: &Spawned,
    log: &Path,
    started_at: time::OffsetDateTime,
) -> Result<ReviveOutcome, CoreError> {
    let deadline = Instant::now() + REVIVE_READY_TIMEOUT;
    loop {
        if is_up(locations, plan, child.pid, started_at) {
            return Ok(ReviveOutcome {
                id: plan.id.clone(),
                message: format!("{} is running again (PID {}).", plan.name, child.pid),
            });
        }
        let exited = *child.exit.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(status) = exited {
            return Err(CoreError::Revive {
                message: format!(
                    "{} exited before it came up ({status}). Its log ({}) ends with:\n{}",
                    plan.name,
                    log.display(),
                    log_tail(log)
                ),
            });
        }
        if Instant::now() >= deadline {
            return Err(CoreError::Revive {
                message: format!(
                    "{} did not come up within {}s (it is still running as PID {}). Its log ({}) ends with:\n{}",
                    plan.name,
                    REVIVE_READY_TIMEOUT.as_secs(),
                    child.pid,
                    log.display(),
                    log_tail(log)
                ),
            });
        }
        std::thread::sleep(READY_CHECK_INTERVAL);
    }
}

/// Up means: a running receipt for it or from the process it started, or its catalog entry
/// running with a heartbeat (or start) newer than the revive.
///
/// The spawned process's own receipt counts even when it names another catalog id: a runtime
/// may resolve its command or cwd differently from what the catalog recorded (a symlinked cwd,
/// a relative argv[0]), and it is up all the same.
fn is_up(
    locations: &Locations,
    plan: &RevivePlan,
    spawned_pid: u32,
    started_at: time::OffsetDateTime,
) -> bool {
    if let Ok(list) = live_runtime::list_live_runtimes(&locations.receipts) {
        let found = list.runtimes.iter().any(|r| {
            r.status == LiveRuntimeStatus::Running
                && (r.pid == spawned_pid
                    || plan.catalog_id.is_some() && r.metadata.canon_runtime_id == plan.catalog_id
                    || plan.runtime_id.as_deref() == Some(r.runtime_id.as_str()))
        });
        if found {
            return true;
        }
    }
    let Some(catalog_id) = &plan.catalog_id else {
        return false;
    };
    inventory::catalog_runtimes(locations)
        .0
        .iter()
        .any(|entry| {
            &entry.id == catalog_id
                && entry.status == canon_local::LocalRuntimeStatus::Running
                && entry
                    .since
                    .as_deref()
                    .and_then(|s| {
                        time::OffsetDateTime::parse(
                            s,
                            &time::format_description::well_known::Rfc3339,
                        )
                        .ok()
                    })
                    .is_some_and(|t| t >= started_at - time::Duration::seconds(1))
        })
}

fn log_tail(log: &Path) -> String {
    let Ok(mut file) = File::open(log) else {
        return "(no log)".into();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(LOG_TAIL_BYTES)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).trim().to_owned();
    if text.is_empty() {
        "(the log is empty)".into()
    } else {
        text
    }
}
