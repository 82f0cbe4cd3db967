//! Revive: relaunch a stopped runtime from its recorded launch command, and wait until it is up.
//!
//! Revive runs exactly what it showed, and nothing else (issue 13):
//! - [`plan`] reads the record once and resolves it into a [`RevivePlan`]: the program as an
//!   absolute path (looked up on `PATH` now, the way the spawn would), its arguments, its working
//!   directory and every environment variable it sets. [`plan_view`] is what the window and the
//!   CLI show, with the plan's [digest](RevivePlan::digest).
//! - [`revive`] takes that digest back, plans again, and refuses when the two differ ("the launch
//!   command changed; review it again"), so a record rewritten between showing and confirming
//!   never runs. It then spawns that plan's absolute program, no shell, no added arguments.
//! - Every variable the record sets is refused unless the user allowed that exact value for that
//!   runtime, except a few harmless ones with plain values (`LANG`, `TZ`, ...; see
//!   [`allowed_env`]); a variable whose name is not `[A-Za-z_][A-Za-z0-9_]*` refuses the plan.
//!
//! The process is detached from the app (its own session, so it survives the app quitting),
//! inherits the app's environment plus the plan's variables, writes to a per-runtime log in the
//! app's log directory, and counts as up once a live receipt or a fresh catalog heartbeat shows it.

pub mod allowed_env;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use live_runtime::{LiveRuntimeStatus, LiveRuntimeSupervisor};
use sha2::{Digest, Sha256};

use crate::inventory::{self, display_name, revivable, ReviveBlocker};
use crate::view::{ActionAvailability, PlanEnvVar, ReviveOutcome, RevivePlanView};
use crate::{CoreError, Locations, Refusal};
use allowed_env::{allow_reason, is_valid_name, AllowedEnv};

/// How long a revived runtime may take to show up. Agent runtimes load models and tools before
/// they register; half a minute covers a cold start without leaving the user waiting forever.
pub const REVIVE_READY_TIMEOUT: Duration = Duration::from_secs(30);

/// How often readiness is checked while waiting: only during a revive, and fast enough that the
/// user sees success within a fraction of a second of it happening.
const READY_CHECK_INTERVAL: Duration = Duration::from_millis(100);

/// How much of the runtime's log a failure shows.
const LOG_TAIL_BYTES: u64 = 2048;

/// The variable that tells a `@canonmsg/core` runtime which profile to run as.
const PROFILE_VARIABLE: &str = "CANON_AGENT";

/// Why a revived runtime did not come up.
#[derive(Debug, thiserror::Error)]
pub enum ReviveFailure {
    /// The program could not be started.
    #[error("could not start {} in {}: {source}", .program.display(), .cwd.display())]
    Spawn {
        /// The absolute program.
        program: PathBuf,
        /// Its working directory.
        cwd: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// It exited before a receipt or heartbeat showed it up.
    #[error("{name} exited before it came up ({status}). Its log ({}) ends with:\n{log_tail}", .log.display())]
    ExitedEarly {
        /// The runtime's display name.
        name: String,
        /// How it exited.
        status: std::process::ExitStatus,
        /// Its log file.
        log: PathBuf,
        /// The end of its log.
        log_tail: String,
    },
    /// It is still running but did not show up within [`REVIVE_READY_TIMEOUT`].
    #[error("{name} did not come up within {}s (it is still running as PID {pid}). Its log ({}) ends with:\n{log_tail}", REVIVE_READY_TIMEOUT.as_secs(), .log.display())]
    NotUp {
        /// The runtime's display name.
        name: String,
        /// Its process id.
        pid: u32,
        /// Its log file.
        log: PathBuf,
        /// The end of its log.
        log_tail: String,
    },
}

/// What revive will run, resolved from the record once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevivePlan {
    /// The inventory id.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The program, as an absolute path: exactly what is spawned.
    pub program: PathBuf,
    /// The program as the record names it (before the `PATH` lookup).
    pub recorded_program: String,
    /// Its arguments (the launch command after the program).
    pub args: Vec<String>,
    /// Its working directory (absolute).
    pub cwd: PathBuf,
    /// Every variable it sets on top of the app's environment: the recorded ones and
    /// `CANON_AGENT` for its profile.
    pub env: BTreeMap<String, String>,
    /// The Canon profile it runs as (`CANON_AGENT`).
    pub profile: Option<String>,
    /// The catalog id, when revived from the catalog.
    pub catalog_id: Option<String>,
    /// The live-runtime id, when revived from a receipt's supervisor.
    pub runtime_id: Option<String>,
}

impl RevivePlan {
    /// A digest of everything the plan runs (program, arguments, working directory, environment,
    /// and which runtime): the window and the CLI send it back with the revive, which is refused
    /// when the plan made then differs.
    pub fn digest(&self) -> String {
        let canonical = serde_json::json!({
            "id": self.id,
            "program": self.program.to_string_lossy(),
            "args": self.args,
            "cwd": self.cwd.to_string_lossy(),
            "env": self.env,
        });
        let bytes = serde_json::to_vec(&canonical).unwrap_or_default();
        hex::encode(Sha256::digest(bytes))
    }

    /// Which runtime an allowed variable belongs to: its catalog id, else its runtime id.
    pub fn allow_key(&self) -> &str {
        self.catalog_id
            .as_deref()
            .or(self.runtime_id.as_deref())
            .unwrap_or(&self.id)
    }

    /// The variables it sets that must be allowed first and are not, with the reason.
    fn refused_env(&self, allowed: &AllowedEnv) -> Vec<(String, String)> {
        self.env
            .iter()
            .filter(|(name, value)| !allowed.allows(self.allow_key(), name, value))
            .filter_map(|(name, value)| {
                allow_reason(name, value).map(|reason| (name.clone(), reason))
            })
            .collect()
    }

    /// The refusal for running it while `allowed` leaves variables refused, if it does.
    fn env_refusal(&self, allowed: &AllowedEnv) -> Option<Refusal> {
        let variables = self.refused_env(allowed);
        (!variables.is_empty()).then(|| Refusal::UnallowedVariables {
            name: self.name.clone(),
            variables,
        })
    }
}

/// What the user confirms: the id, the digest of the plan they were shown, and the variables
/// they allowed in that confirmation (recorded for this runtime, see [`allowed_env`]).
#[derive(Clone, Debug, Default)]
pub struct ReviveRequest {
    /// The inventory id.
    pub id: String,
    /// [`RevivePlan::digest`] of the plan that was shown.
    pub plan_digest: String,
    /// Variables the user allowed for this runtime now (with the values the plan shows).
    pub allow_env: Vec<String>,
}

/// Works out what revive would run for `id`, refusing with a clear message when it must not.
pub fn plan(locations: &Locations, id: &str) -> Result<RevivePlan, CoreError> {
    let snapshot_entries = inventory::catalog_runtimes(locations).0;
    // A read: planning changes nothing on disk.
    let list = live_runtime::ReceiptFiles::scan(&locations.receipts)?.list();
    // By endpoint, or (the inventory id of a Canon runtime) a running receipt of the catalog
    // entry `id`: that one is already running.
    let record = list
        .runtimes
        .iter()
        .find(|r| r.endpoint.as_str() == id)
        .or_else(|| {
            list.runtimes.iter().find(|r| {
                r.status == LiveRuntimeStatus::Running
                    && r.metadata.canon_runtime_id.as_deref() == Some(id)
            })
        });
    let catalog_id = record
        .and_then(|r| r.metadata.canon_runtime_id.clone())
        .unwrap_or_else(|| id.to_owned());
    if let Some(entry) = snapshot_entries.iter().find(|c| c.id == catalog_id) {
        if record.is_some_and(|r| r.status == LiveRuntimeStatus::Running) {
            return Err(Refusal::AlreadyRunning {
                name: display_name(None, Some(entry)),
            }
            .into());
        }
        if let Err(why) = revivable::check(locations, entry) {
            return Err(Refusal::CannotRevive {
                name: display_name(None, Some(entry)),
                why,
            }
            .into());
        }
        return resolve(Recorded {
            id,
            name: display_name(None, Some(entry)),
            argv: &entry.launch_command,
            cwd: Path::new(&entry.cwd),
            env: &BTreeMap::new(),
            profile: entry.profile.clone(),
            catalog_id: Some(entry.id.clone()),
            runtime_id: None,
        });
    }
    let Some(record) = record else {
        return Err(CoreError::UnknownRuntime {
            query: id.to_owned(),
        });
    };
    if record.status == LiveRuntimeStatus::Running {
        return Err(Refusal::AlreadyRunning {
            name: display_name(Some(record), None),
        }
        .into());
    }
    match &record.metadata.supervisor {
        LiveRuntimeSupervisor::LaunchCommand { argv, cwd, env } if !argv.is_empty() => {
            resolve(Recorded {
                id,
                name: display_name(Some(record), None),
                argv,
                cwd,
                env,
                profile: record.metadata.profile.clone(),
                catalog_id: None,
                runtime_id: Some(record.runtime_id.clone()),
            })
        }
        _ => Err(Refusal::StartedByHand {
            runtime_id: record.runtime_id.clone(),
        }
        .into()),
    }
}

/// A launch command as a record holds it, before it is resolved.
struct Recorded<'a> {
    id: &'a str,
    name: String,
    argv: &'a [String],
    cwd: &'a Path,
    env: &'a BTreeMap<String, String>,
    profile: Option<String>,
    catalog_id: Option<String>,
    runtime_id: Option<String>,
}

fn resolve(recorded: Recorded<'_>) -> Result<RevivePlan, CoreError> {
    let refuse = |why: ReviveBlocker| -> CoreError {
        Refusal::CannotRevive {
            name: recorded.name.clone(),
            why,
        }
        .into()
    };
    let Some((program, args)) = recorded.argv.split_first() else {
        return Err(refuse(ReviveBlocker::NoLaunchCommand));
    };
    if !recorded.cwd.is_absolute() {
        return Err(refuse(ReviveBlocker::RelativeCwd {
            cwd: recorded.cwd.display().to_string(),
        }));
    }
    let mut env = recorded.env.clone();
    for name in env.keys() {
        if !is_valid_name(name) {
            return Err(refuse(ReviveBlocker::InvalidVariableName {
                name: name.clone(),
            }));
        }
    }
    if let Some(profile) = &recorded.profile {
        env.insert(PROFILE_VARIABLE.to_owned(), profile.clone());
    }
    let search_path = env
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("PATH"))
        .map(|(_, value)| std::ffi::OsString::from(value))
        .or_else(|| std::env::var_os("PATH"));
    let resolved =
        resolve_program(program, recorded.cwd, search_path.as_deref()).map_err(refuse)?;
    Ok(RevivePlan {
        id: recorded.id.to_owned(),
        name: recorded.name,
        program: resolved,
        recorded_program: program.clone(),
        args: args.to_vec(),
        cwd: lexically_clean(recorded.cwd),
        env,
        profile: recorded.profile,
        catalog_id: recorded.catalog_id,
        runtime_id: recorded.runtime_id,
    })
}

/// Finds the program the way `execvp` would in the child, but once, now: a name with a `/` is a
/// path (relative to the working directory), a bare name is looked up in the absolute
/// directories of `PATH` (the plan's own `PATH` if it sets one, else the app's). Relative and
/// empty `PATH` entries, which would depend on the working directory, are skipped.
pub(crate) fn resolve_program(
    recorded: &str,
    cwd: &Path,
    search_path: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, ReviveBlocker> {
    if recorded.is_empty() {
        return Err(ReviveBlocker::EmptyProgram);
    }
    if recorded.contains('\0') {
        return Err(ReviveBlocker::NulInProgram);
    }
    let has_separator = recorded.contains('/') || (cfg!(windows) && recorded.contains('\\'));
    if has_separator {
        let path = lexically_clean(&cwd.join(recorded));
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(ReviveBlocker::NotExecutable {
                path: path.display().to_string(),
            })
        };
    }
    let found = search_path
        .map(std::env::split_paths)
        .into_iter()
        .flatten()
        .filter(|dir| dir.is_absolute() && dir.to_str().is_some())
        .map(|dir| lexically_clean(&dir.join(recorded)))
        .find(|candidate| is_executable(candidate));
    found.ok_or_else(|| ReviveBlocker::NotOnPath {
        program: recorded.to_owned(),
    })
}

/// `a/./b` as `a/b`; `..` is kept (the file system decides what it means).
fn lexically_clean(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .collect()
}

fn is_executable(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// The plan for `id` as the window and the CLI show it, with what is refused and why.
pub fn plan_view(locations: &Locations, id: &str) -> Result<RevivePlanView, CoreError> {
    let plan = plan(locations, id)?;
    let allowed = AllowedEnv::load(&locations.state_dir);
    let env = plan
        .env
        .iter()
        .map(|(name, value)| {
            let reason = allow_reason(name, value);
            PlanEnvVar {
                name: name.clone(),
                value: value.clone(),
                allowed: reason.is_some() && allowed.allows(plan.allow_key(), name, value),
                needs_allow: reason.is_some(),
                reason,
            }
        })
        .collect();
    let run = match plan.env_refusal(&allowed) {
        None => ActionAvailability::yes(),
        Some(refusal) => ActionAvailability::no(refusal.to_string()),
    };
    Ok(RevivePlanView {
        id: plan.id.clone(),
        name: plan.name.clone(),
        program: plan.program.to_string_lossy().into_owned(),
        recorded_program: plan.recorded_program.clone(),
        args: plan.args.clone(),
        cwd: plan.cwd.to_string_lossy().into_owned(),
        env,
        profile: plan.profile.clone(),
        digest: plan.digest(),
        run,
    })
}

/// Checks the confirmed digest against a fresh plan, records the variables the user allowed,
/// spawns the plan and waits for it to come up.
pub async fn revive(
    locations: &Locations,
    request: ReviveRequest,
) -> Result<ReviveOutcome, CoreError> {
    let locations = locations.clone();
    tokio::task::spawn_blocking(move || {
        let plan = plan(&locations, &request.id)?;
        if plan.digest() != request.plan_digest {
            return Err(CoreError::PlanChanged { name: plan.name });
        }
        let mut allowed = AllowedEnv::load(&locations.state_dir);
        for name in &request.allow_env {
            let Some(value) = plan.env.get(name) else {
                return Err(CoreError::NoSuchVariable {
                    name: plan.name,
                    variable: name.clone(),
                });
            };
            allowed.allow(plan.allow_key(), name, value);
        }
        if !request.allow_env.is_empty() {
            allowed.save(&locations.state_dir)?;
            tracing::info!(id = %plan.id, names = ?request.allow_env, "revive: variables allowed for this runtime");
        }
        if let Some(refusal) = plan.env_refusal(&allowed) {
            return Err(refusal.into());
        }
        let log = locations.revive_log(plan.allow_key());
        let started_at = time::OffsetDateTime::now_utc();
        let child = spawn_detached(&plan, &log)?;
        tracing::info!(id = %plan.id, pid = child.pid, "revive started");
        wait_until_up(&locations, &plan, &child, &log, started_at)
    })
    .await
    .map_err(|source| CoreError::Interrupted {
        what: "revive",
        source,
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
    // The absolute program the plan resolved: no PATH lookup happens here.
    let mut command = Command::new(&plan.program);
    command
        .args(&plan.args)
        .current_dir(&plan.cwd)
        .envs(&plan.env)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    detach(&mut command);
    let mut child = command.spawn().map_err(|source| ReviveFailure::Spawn {
        program: plan.program.clone(),
        cwd: plan.cwd.clone(),
        source,
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
            return Err(ReviveFailure::ExitedEarly {
                name: plan.name.clone(),
                status,
                log: log.to_owned(),
                log_tail: log_tail(log),
            }
            .into());
        }
        if Instant::now() >= deadline {
            return Err(ReviveFailure::NotUp {
                name: plan.name.clone(),
                pid: child.pid,
                log: log.to_owned(),
                log_tail: log_tail(log),
            }
            .into());
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
    if let Ok(list) = live_runtime::ReceiptFiles::scan(&locations.receipts).map(|f| f.list()) {
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
