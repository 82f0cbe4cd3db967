//! The command line of Supercode Tray: `clap` definitions, the display-free subcommands
//! (`list`, `attach`, `doctor`, `demo-runtime`...), logging, and starting the tray app.
//!
//! This crate knows nothing of Tauri and links no display library, so the `supercode-tray`
//! command, which is only this crate, starts in a few milliseconds. With no subcommand it
//! starts the tray app by replacing itself with the app's binary ([`launch`]); the app's binary
//! parses the same command line with [`run`] and runs the tray where this one would exec.
//!
//! Output contract: results go to stdout (`--json` output is documented in `docs/cli.md` and
//! stable), errors go to stderr with exit code 1, usage errors exit 2 (clap's convention).
//! No secret is ever printed: every value printed comes from a browser-safe view type. Text
//! from records and runtimes is printed through the core's one rule for terminals
//! ([`supercode_core::text`]): a control or bidirectional character shows as a `\u{..}` escape.
//!
//! # Layout
//! - this module: [`Cli`], [`Command`], [`CliError`] (the one place exit codes are decided) and
//!   the dispatch of each subcommand to the core.
//! - `output`, `revive`, `agents`, `demo`, `hooks`: how subcommands print, `revive`'s plan and
//!   confirmation, `act` and `events`, the demo runtime, connecting agents through their hooks.
//! - [`launch`]: `supercode-tray` alone: exec the tray app's binary installed beside this one.
//! - [`logging`]: the rolling log file and `RUST_LOG`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use supercode_core::resolve::RuntimeAction;
use supercode_core::text::{quoted, visible};
use supercode_core::view::{PendingState, PendingView};
use supercode_core::{CoreError, Supercode};

mod agents;
mod demo;
mod hooks;
pub mod launch;
pub mod logging;
mod output;
mod revive;

/// Parses the command line and runs a subcommand, or `start_app` when there is none: the
/// `supercode-tray` command passes [`launch::exec_app`], the tray app's own binary the app.
pub fn run(start_app: impl FnOnce() -> ExitCode) -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version are not errors: clap prints them and exits 0.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => return CliError::Usage(e).report(),
    };
    match cli.command {
        None => start_app(),
        // The agent's hook runs for every event of every session: no logging set-up, no
        // multi-threaded runtime, nothing but the event's way to its host.
        Some(Command::Hook { agent }) => hooks::hook(agent),
        Some(Command::HookHost(args)) => {
            let log_dir = supercode_core::Locations::from_env()
                .map(|l| l.log_dir)
                .unwrap_or_else(|_| std::env::temp_dir().join("supercode-tray-logs"));
            let _guard = crate::logging::init(&log_dir, false, logging::CLI_BUFFERED_LINES);
            hooks::host(args)
        }
        Some(command) => run_subcommand(command),
    }
}

/// Supercode Tray: the local control centre for your AI coding-agent runtimes.
#[derive(Debug, Parser)]
#[command(name = "supercode-tray", version, about, long_about = None)]
pub struct Cli {
    /// What to do; with no subcommand the tray app starts.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The subcommands; none of them needs a display.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List live runtimes, Canon catalog entries and ignored receipts.
    List {
        /// Print the documented JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Remove a stale runtime receipt (and its keychain entry), or a stale Canon runtime entry
    /// (its one file under $CANON_HOME/runtimes/); profiles, locks and the rest stay.
    Forget {
        /// The runtime's NAME or ID, as `list` shows them.
        #[arg(value_name = "NAME|ID")]
        id: String,
        /// Remove what is shown without asking (required when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Take a runtime that stopped unexpectedly (status `exited`) off the list: it is already
    /// gone, so this removes only the tray's record of it.
    Dismiss {
        /// The runtime's NAME or ID, as `list` shows them.
        #[arg(value_name = "NAME|ID")]
        id: String,
    },
    /// Open a live runtime in the browser through the authenticating loopback proxy.
    Attach {
        /// The runtime's NAME or ID, as `list` shows them.
        #[arg(value_name = "NAME|ID")]
        id: String,
        /// Print the one-time URL (it works once, within 30 s) without opening a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Relaunch a stopped runtime from its recorded launch command, after showing what will run.
    Revive {
        /// The runtime's NAME or ID, as `list` shows them.
        #[arg(value_name = "NAME|ID")]
        id: String,
        /// Run the plan shown without asking (required when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Allow a variable the plan sets (every one but a few harmless ones, such as LANG and
        /// TZ, needs allowing) with the value shown, for this runtime; remembered for later
        /// revives.
        #[arg(long = "allow-env", value_name = "NAME")]
        allow_env: Vec<String>,
    },
    /// List pending Canon agent registrations (never their poll tokens).
    Pending {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Submit (or resume) a pending registration and wait for its approval in Canon.
    Approve {
        /// The profile name of the pending registration.
        profile: String,
    },
    /// Dismiss a pending registration locally.
    Reject {
        /// The profile name of the pending registration.
        profile: String,
    },
    /// Check the set-up: versions, directories, secret store, tray host; with a fix for each problem.
    Doctor {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Invoke an action a running runtime's agent offers now (`list` shows them), e.g. approve.
    Act {
        /// The runtime's NAME or ID, as `list` shows them.
        #[arg(value_name = "NAME|ID")]
        id: String,
        /// The action's id, as `list --json` shows it (`approve`, `deny`, ...).
        action: String,
        /// Invoke a destructive or confirm-asking action without asking (required when stdin
        /// is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Stream inventory and agent-state changes as JSON lines until interrupted.
    Events {
        /// Print JSON lines (the only format).
        #[arg(long)]
        json: bool,
    },
    /// Run a real demo runtime: an authenticated page, JSON API and live stream on loopback.
    DemoRuntime(demo::DemoArgs),
    /// Connect coding agents (Claude Code, Codex) to the tray through their own hooks.
    Hooks {
        /// install, remove or status.
        #[command(subcommand)]
        command: hooks::HooksCommand,
    },
    /// The agent's hook as entries installed before `supercode-tray-hook` existed run it (that
    /// program is the hook now); reads the event on stdin, prints only a decision the user made
    /// in the tray.
    #[command(hide = true)]
    Hook {
        /// The agent.
        agent: hooks::HookAgent,
    },
    /// A session's host, started by its first hook (serves its status, registers its runtime).
    #[command(hide = true)]
    HookHost(hooks::HostArgs),
}

/// Why a subcommand failed. [`CliError::exit_code`] is the one place the exit code is decided.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The command line does not parse (clap renders the message and the usage).
    #[error("{0}")]
    Usage(clap::Error),
    /// The core refused or failed.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The demo runtime could not run.
    #[error(transparent)]
    Demo(#[from] demo::DemoRunError),
    /// A terminal or process operation of the CLI itself failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The user answered no to the revive confirmation.
    #[error("{name} was not revived")]
    NotConfirmed {
        /// The runtime's display name.
        name: String,
    },
    /// Revive without `--yes` where no confirmation can be asked.
    #[error("not reviving {name} without a confirmation: stdin is not a terminal; read the plan above and run again with --yes to run it")]
    NoTerminal {
        /// The runtime's display name.
        name: String,
    },
    /// Revive whose plan sets variables that still need `--allow-env`.
    #[error("{reason} To run it anyway, allow {} for this runtime: supercode-tray revive {id} {}", if .names.len() == 1 { "it" } else { "them" }, allow_flags(.names))]
    NeedsAllowEnv {
        /// The core's reason, naming each variable.
        reason: String,
        /// The runtime's id as given.
        id: String,
        /// The variables to allow.
        names: Vec<String>,
    },
    /// `approve` ended without the registration approved (its state is on stdout).
    #[error("the registration for {profile} was not approved")]
    NotApproved {
        /// The registration's profile.
        profile: String,
    },
    /// The user answered no to an action's confirmation.
    #[error("{label} was not invoked")]
    NotInvoked {
        /// The action's label.
        label: String,
    },
    /// A destructive action (or one with a confirmation) without `--yes` and no terminal.
    #[error("{question:?} needs confirming: run it on a terminal, or pass --yes")]
    ActNeedsConfirmation {
        /// The question that would have been asked.
        question: String,
    },
    /// Installing or removing hooks failed (the settings file was refused or not written).
    #[error(transparent)]
    Hooks(#[from] agent_hooks::settings::HooksError),
    /// The user answered no to the forget confirmation.
    #[error("{} was not forgotten", quoted(.name))]
    NotForgotten {
        /// The runtime's display name.
        name: String,
    },
    /// `forget` without `--yes` and no terminal to ask on.
    #[error("{what} without a confirmation: stdin is not a terminal; read what is shown above and run again with --yes ({question})")]
    NeedsConfirmation {
        /// What was not done ("not forgetting").
        what: &'static str,
        /// The question that would have been asked (record text, escaped when printed).
        question: String,
    },
    /// `hooks install|remove` without `--yes` and no terminal to ask on.
    #[error("not changing the settings without a confirmation: stdin is not a terminal; read the change above and run again with --yes ({question})")]
    HooksNeedConfirmation {
        /// The question that would have been asked.
        question: String,
    },
    /// `doctor` found problems (listed on stdout).
    #[error("doctor found problems (see above)")]
    DoctorFailed,
    /// The tray app's binary could not be started.
    #[error("could not start the tray app {}: {source}; reinstall Supercode Tray, or build both binaries with `cargo build --bins`", .path.display())]
    StartApp {
        /// The app binary that was looked for beside this one.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `attach`'s runtime went away, so its proxy closed.
    #[error("{} stopped, so its attach proxy is closed", quoted(.name))]
    ProxyClosed {
        /// The runtime's display name.
        name: String,
    },
}

fn allow_flags(names: &[String]) -> String {
    let flags: Vec<String> = names.iter().map(|n| format!("--allow-env {n}")).collect();
    flags.join(" ")
}

impl CliError {
    /// The documented contract (`docs/cli.md`): 2 for usage errors (clap's convention), 1 for
    /// every other error.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }

    /// Prints the error to stderr and returns its exit code.
    pub fn report(&self) -> ExitCode {
        match self {
            // clap's message already says "error: " and shows the usage.
            CliError::Usage(e) => {
                let _ = e.print();
            }
            // Its message carries record and runtime text (names, reasons, a log tail).
            _ => eprintln!(
                "error: {}",
                supercode_core::text::visible_lines(&self.to_string())
            ),
        }
        ExitCode::from(self.exit_code())
    }
}

/// Runs one subcommand and maps its outcome to an exit code.
fn run_subcommand(command: Command) -> ExitCode {
    let locations_log = supercode_core::Locations::from_env()
        .map(|l| l.log_dir)
        .unwrap_or_else(|_| std::env::temp_dir().join("supercode-tray-logs"));
    let _guard = crate::logging::init(&locations_log, false, logging::CLI_BUFFERED_LINES);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(source) => {
            return CliError::Io {
                what: "could not start the async runtime",
                source,
            }
            .report()
        }
    };
    match runtime.block_on(dispatch(command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => error.report(),
    }
}

async fn dispatch(command: Command) -> Result<(), CliError> {
    if let Command::DemoRuntime(args) = command {
        return Ok(demo::run(args).await?);
    }
    if let Command::Hooks { command } = command {
        return hooks::run(command);
    }
    let locations = supercode_core::Locations::from_env()?;
    let core = Supercode::without_events(locations);
    match command {
        Command::List { json } => {
            output::print_list(&core.reconcile_and_snapshot_with_states().await, json)
        }
        Command::Forget { id, yes } => forget(&core, &id, yes).await?,
        Command::Dismiss { id } => {
            let name = core.dismiss(&id).await?;
            println!("Dismissed {}.", quoted(&name));
        }
        Command::Attach { id, no_open } => attach(&core, &id, no_open).await?,
        Command::Revive { id, yes, allow_env } => revive::run(&core, &id, yes, allow_env).await?,
        Command::Pending { json } => output::print_pending(&core.pending(), json),
        Command::Approve { profile } => {
            // Progress goes to stderr once per change of state; the outcome is the one line on
            // stdout, so it is not also printed as progress.
            let mut last_progress = None;
            let view = core
                .approve(&profile, |view: &PendingView| {
                    let text = output::pending_state_text(view);
                    let settled = matches!(
                        view.state,
                        PendingState::Approved | PendingState::Rejected | PendingState::Expired
                    );
                    if !settled && last_progress.as_ref() != Some(&text) {
                        eprintln!("{}: {text}", visible(&view.profile));
                        last_progress = Some(text);
                    }
                })
                .await?;
            println!(
                "{}: {}",
                visible(&view.profile),
                output::pending_state_text(&view)
            );
            if view.state != PendingState::Approved {
                return Err(CliError::NotApproved {
                    profile: view.profile,
                });
            }
        }
        Command::Reject { profile } => {
            core.reject(&profile)?;
            println!(
                "Dismissed the pending registration for {}.",
                visible(&profile)
            );
        }
        Command::Doctor { json } => {
            let report = core.doctor().await;
            output::print_doctor(&report, json);
            if !report.healthy() {
                return Err(CliError::DoctorFailed);
            }
        }
        Command::Act { id, action, yes } => {
            let runtime = core.resolve(&id).await?;
            agents::act(&core, runtime.target_for(RuntimeAction::Act)?, &action, yes).await?
        }
        Command::Events { json: _ } => agents::events(&core).await?,
        Command::DemoRuntime(_)
        | Command::Hooks { .. }
        | Command::Hook { .. }
        | Command::HookHost(_) => {
            unreachable!("handled above")
        }
    }
    Ok(())
}

/// `forget NAME|ID [--yes]`: shows what will be removed, asks (`y/N` on a terminal; `--yes`
/// otherwise), and forgets exactly that receipt or catalog entry.
async fn forget(core: &Supercode, name_or_id: &str, yes: bool) -> Result<(), CliError> {
    let plan = core.forget_plan(name_or_id).await?;
    println!("Forget {} will remove:", quoted(&plan.name));
    for item in &plan.removes {
        println!("  - {}", visible(item));
    }
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let question = format!("Forget {}", quoted(&plan.name));
    if !yes {
        use std::io::IsTerminal as _;
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Err(CliError::NeedsConfirmation {
                what: "not forgetting",
                question,
            });
        }
        eprint!("{question}? [y/N] ");
        let _ = std::io::Write::flush(&mut std::io::stderr());
        if !output::read_yes()? {
            return Err(CliError::NotForgotten { name: plan.name });
        }
    }
    core.forget(&plan.target)?;
    println!("Forgot {} ({}).", quoted(&plan.name), visible(&plan.target));
    Ok(())
}

/// `attach NAME|ID`: the one-time URL is the first line on stdout; the proxy serves until
/// interrupted, or until its runtime goes away (its receipt removed, or its process exited), as
/// in the tray. Either way it ends as the tray does, with the core's awaited shutdown.
async fn attach(core: &Supercode, name_or_id: &str, no_open: bool) -> Result<(), CliError> {
    let outcome = serve_attach(core, name_or_id, no_open).await;
    core.shutdown().await;
    outcome
}

async fn serve_attach(core: &Supercode, name_or_id: &str, no_open: bool) -> Result<(), CliError> {
    let runtime = core.resolve(name_or_id).await?;
    let endpoint = runtime.target_for(RuntimeAction::Attach)?;
    // Watching from before the attach, so a runtime that goes right after it is still seen.
    let _watch = core.watch();
    let url = core.attach(endpoint).await?;
    println!("{}", url.as_str());
    let once = format!(
        "The link works once, within {} s of now: open it in a browser.",
        supercode_core::attach::LINK_TTL.as_secs()
    );
    if no_open {
        eprintln!("{once}");
    } else if let Err(error) = supercode_core::desktop::open_in_browser(&url).await {
        // The link is served all the same: the user can open it by hand.
        eprintln!("warning: {}. {once}", visible(&error.to_string()));
    }
    eprintln!("Serving the attach proxy; press Ctrl-C to stop.");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => Ok(()),
        () = core.proxies_stopped() => {
            Err(CliError::ProxyClosed { name: runtime.name })
        }
    }
}
