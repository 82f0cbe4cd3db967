//! `demo-runtime`: a real runtime for demos and tests.
//!
//! It serves the demo page, API and live stream on an ephemeral loopback port, registers itself
//! through the live-runtime library exactly as a real runtime does, prints its opaque endpoint
//! as the first line on stdout, and removes its receipt on SIGINT/SIGTERM. After that line, each
//! call of its status API's action route and each cue (SIGUSR1, which moves the `switch`
//! scenario on, and a timed step on at once) is a JSON line on stdout, so a test sees exactly what reached the runtime. With
//! `--canon-profile` it also behaves like a `@canonmsg/core` runtime: it holds the profile's lock
//! and keeps a catalog entry with its launch command, which is what makes it revivable.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use live_runtime::{
    BearerToken, LiveRuntimeMetadata, LiveRuntimeSource, LiveRuntimeSupervisor, ReceiptDir,
    Sensitive,
};

/// How often a canon-backed demo runtime refreshes its catalog heartbeat; the package's runtimes
/// heartbeat on activity, and half a minute keeps `lastHeartbeatAt` meaningfully fresh.
const CANON_HEARTBEAT_INTERVAL: Duration = Duration::from_secs(30);

/// Arguments of `demo-runtime`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// The runtime's name, shown on its page and in the tray.
    #[arg(long)]
    pub name: String,
    /// Read the bearer token from this file instead of generating one (it never goes on a command line).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// The workspace it serves (default: the current directory).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Also act as a `@canonmsg/core` runtime of this profile: hold its lock and keep a catalog
    /// entry, so the tray can revive it after it stops.
    #[arg(long)]
    pub canon_profile: Option<String>,
    /// What its status API shows (docs/runtime-api.md): steady (the default, idle), approval,
    /// error, switch (its question changes on SIGUSR1), no-api (the API is not served), or the
    /// hostile flood, huge, html, stall, blank-lines.
    #[arg(long, value_name = "NAME")]
    pub scenario: Option<demo_runtime::Scenario>,
    /// How long each step of the approval and error scenarios lasts, in milliseconds (default
    /// 1000): tests and demos that want to look at every step lengthen it.
    #[arg(long, value_name = "MS")]
    pub phase_delay_ms: Option<u64>,
}

/// Why the demo runtime could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoRunError {
    /// The token file could not be read or was empty.
    #[error("could not read the token file {path}: {reason}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The workspace directory does not exist.
    #[error("the workspace {path} does not exist: {source}")]
    Workspace {
        /// The path given.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The server could not start.
    #[error(transparent)]
    Serve(#[from] demo_runtime::DemoError),
    /// Registering the receipt failed.
    #[error(transparent)]
    Receipt(#[from] live_runtime::LiveRuntimeReceiptError),
    /// Working with `$CANON_HOME` failed.
    #[error(transparent)]
    Canon(#[from] canon_local::CanonFileError),
    /// Anything else about the process.
    #[error("{0}")]
    Process(String),
}

/// Runs the demo runtime until SIGINT or SIGTERM.
pub async fn run(args: DemoArgs) -> Result<(), DemoRunError> {
    let token = match &args.token_file {
        Some(path) => read_token(path)?,
        None => generate_token(),
    };
    let workspace = args
        .workspace
        .clone()
        .map_or_else(std::env::current_dir, Ok)
        .and_then(std::fs::canonicalize)
        .map_err(|source| DemoRunError::Workspace {
            path: args.workspace.clone().unwrap_or_default(),
            source,
        })?;
    let mut config = demo_runtime::DemoConfig::new(args.name.clone(), token.clone());
    config.scenario = args.scenario.unwrap_or_default();
    if let Some(ms) = args.phase_delay_ms {
        config.phase_delay = Duration::from_millis(ms);
    }
    config.on_action = Some(std::sync::Arc::new(|call: &demo_runtime::ActionCall| {
        print_event("action", call);
    }));
    let signals = Signals::listen()?;
    let server = demo_runtime::serve(config).await?;
    let receipts = ReceiptDir::from_env()?;
    let launch = launch_command();
    let canon = match &args.canon_profile {
        Some(profile) => Some(canon::CanonRuntime::start(
            profile, &args.name, &workspace, &launch,
        )?),
        None => None,
    };

    let metadata = LiveRuntimeMetadata {
        runtime_kind: "demo".into(),
        display_name: Some(args.name.clone()),
        profile: args.canon_profile.clone(),
        agent_name: None,
        cwd: Some(workspace.clone()),
        workspace_roots: vec![workspace.clone()],
        canon_runtime_id: canon.as_ref().map(|c| c.id().to_owned()),
        supervisor: LiveRuntimeSupervisor::LaunchCommand {
            argv: launch.clone(),
            cwd: workspace.clone(),
            env: Default::default(),
        },
    };
    let source = LiveRuntimeSource {
        session_id: format!("demo:{}", args.name),
        workspace: workspace.clone(),
    };
    let address: Sensitive<SocketAddr> = server.local_addr();
    let registration = live_runtime::register_live_runtime_with_metadata(
        &receipts,
        &format!("demo:{}", args.name),
        source,
        *address.expose(),
        token,
        metadata,
    )?;
    println!("{}", registration.endpoint());
    eprintln!(
        "demo runtime {} is live; attach with: supercode-tray attach {}",
        args.name,
        registration.endpoint()
    );

    signals.wait_for_stop(&server, canon.as_ref()).await?;
    drop(registration);
    if let Some(canon) = canon {
        canon.stop();
    }
    server.shutdown().await;
    Ok(())
}

fn read_token(path: &Path) -> Result<BearerToken, DemoRunError> {
    let text = std::fs::read_to_string(path).map_err(|e| DemoRunError::TokenFile {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    let token = text.trim();
    if token.is_empty() {
        return Err(DemoRunError::TokenFile {
            path: path.to_path_buf(),
            reason: "it is empty".into(),
        });
    }
    Ok(Sensitive::new(token.to_owned()))
}

/// 256 random bits, hex-encoded.
fn generate_token() -> BearerToken {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    Sensitive::new(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The command that starts this runtime again: this executable with the same arguments. It holds
/// no secret: the token, if given, is only named by its file.
fn launch_command() -> Vec<String> {
    let exe = std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "supercode-tray".into());
    std::iter::once(exe)
        .chain(std::env::args().skip(1))
        .collect()
}

/// One line on stdout after the endpoint: `{"event": EVENT, ...what}`. It names no secret: an
/// action call is its id, revision and answer; a cue the revision it led to. A reader that went
/// away costs the line, never the action (`println!` would panic in the request's task).
fn print_event(event: &str, what: &impl serde::Serialize) {
    #[derive(serde::Serialize)]
    struct Line<'a, T: serde::Serialize> {
        event: &'a str,
        #[serde(flatten)]
        what: &'a T,
    }
    if let Ok(line) = serde_json::to_string(&Line { event, what }) {
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

/// What a cue did: the revision of the document it led to, or `null` when the scenario was not
/// waiting for one.
#[derive(serde::Serialize)]
struct Cued {
    revision: Option<u64>,
}

/// The signals the demo runtime answers, listened for before it announces itself: a SIGUSR1
/// that came before its handler would end the process (the signal's default).
#[cfg(unix)]
struct Signals {
    term: tokio::signal::unix::Signal,
    cue: tokio::signal::unix::Signal,
}

#[cfg(unix)]
impl Signals {
    fn listen() -> Result<Self, DemoRunError> {
        use tokio::signal::unix::{signal, SignalKind};
        let listen = |kind| signal(kind).map_err(|e| DemoRunError::Process(e.to_string()));
        Ok(Self {
            term: listen(SignalKind::terminate())?,
            cue: listen(SignalKind::user_defined1())?,
        })
    }

    /// Runs until SIGINT or SIGTERM, giving the scenario its cue on each SIGUSR1.
    async fn wait_for_stop(
        mut self,
        server: &demo_runtime::DemoServer,
        canon: Option<&canon::CanonRuntime>,
    ) -> Result<(), DemoRunError> {
        let mut heartbeat = tokio::time::interval(CANON_HEARTBEAT_INTERVAL);
        heartbeat.tick().await;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = self.term.recv() => return Ok(()),
                _ = self.cue.recv() => print_event("cued", &Cued { revision: server.cue() }),
                _ = heartbeat.tick() => {
                    if let Some(canon) = canon {
                        canon.heartbeat();
                    }
                }
            }
        }
    }
}

/// Ctrl-C only: there is no SIGTERM or SIGUSR1 here.
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn listen() -> Result<Self, DemoRunError> {
        Ok(Self)
    }

    async fn wait_for_stop(
        self,
        _server: &demo_runtime::DemoServer,
        _canon: Option<&canon::CanonRuntime>,
    ) -> Result<(), DemoRunError> {
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| DemoRunError::Process(e.to_string()))
    }
}

mod canon {
    //! The demo runtime's `@canonmsg/core` side: lock, catalog entry, heartbeat, stop, done the
    //! way the package's runtimes do it.
    use std::path::Path;

    use canon_local::{
        CanonHome, LocalRuntimeCatalogEntry, LocalRuntimeStatus, ProfileLockHandle,
        ReviveCapability,
    };
    use serde_json::{Map, Value};

    use super::DemoRunError;

    /// The catalog's runtime kind for SDK-built runtimes such as this one.
    const RUNTIME_KIND: &str = "sdk";

    /// A held profile lock and the catalog entry this runtime keeps.
    pub struct CanonRuntime {
        home: CanonHome,
        id: String,
        lock: ProfileLockHandle,
    }

    impl CanonRuntime {
        /// Takes the profile's lock and records a running catalog entry, as a canon runtime does.
        pub fn start(
            profile: &str,
            name: &str,
            cwd: &Path,
            launch: &[String],
        ) -> Result<Self, DemoRunError> {
            let home = CanonHome::from_env()?;
            let lock = canon_local::acquire_lock(&home, profile)
                .map_err(|e| DemoRunError::Process(e.to_string()))?;
            let cwd = cwd.to_string_lossy().into_owned();
            let id =
                canon_local::build_local_runtime_id(RUNTIME_KIND, Some(profile), &cwd, launch)?;
            let mut entry = LocalRuntimeCatalogEntry::new(
                id.clone(),
                RUNTIME_KIND,
                Some(profile.to_owned()),
                cwd.clone(),
                launch.to_vec(),
                LocalRuntimeStatus::Running,
                ReviveCapability::Revivable,
            );
            let now = canon_local::json::iso_now();
            entry.pid = Some(i64::from(std::process::id()));
            entry.agent_name = Some(name.to_owned());
            entry.workspace_roots = Some(vec![cwd]);
            entry.surface_mode = Some("host".into());
            entry.last_started_at = Some(now.clone());
            entry.last_heartbeat_at = Some(now);
            canon_local::upsert_local_runtime_entry(&home, &entry)?;
            Ok(Self { home, id, lock })
        }

        /// The catalog id.
        pub fn id(&self) -> &str {
            &self.id
        }

        /// Refreshes `lastHeartbeatAt`.
        pub fn heartbeat(&self) {
            if let Err(e) =
                canon_local::heartbeat_local_runtime_entry(&self.home, &self.id, Map::new())
            {
                eprintln!("warning: catalog heartbeat failed: {e}");
            }
        }

        /// Marks the entry stopped and releases the lock.
        pub fn stop(self) {
            if let Err(e) = canon_local::mark_local_runtime_stopped(
                &self.home,
                &self.id,
                Map::<String, Value>::new(),
            ) {
                eprintln!("warning: could not mark the catalog entry stopped: {e}");
            }
            self.lock.release();
        }
    }
}
