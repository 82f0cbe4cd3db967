//! The command line: the same binary runs the tray (no subcommand) or one display-free subcommand.
//!
//! Output contract: results go to stdout (`--json` output is documented in `docs/cli.md` and
//! stable), errors go to stderr with exit code 1, usage errors exit 2 (clap's convention).
//! No secret is ever printed: every value printed comes from a browser-safe view type.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use supercode_core::view::{PendingState, PendingView};
use supercode_core::Supercode;

mod agents;
mod demo;
mod output;
mod revive;

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
    /// Remove a stale runtime receipt (and its keychain entry); nothing else is touched.
    Forget {
        /// The runtime's id, as `list` shows it.
        id: String,
    },
    /// Open a live runtime in the browser through the authenticating loopback proxy.
    Attach {
        /// The runtime's id, as `list` shows it.
        id: String,
        /// Print the one-time URL without opening a browser.
        #[arg(long)]
        no_open: bool,
    },
    /// Relaunch a stopped runtime from its recorded launch command, after showing what will run.
    Revive {
        /// The catalog id (or live id) as `list` shows it.
        id: String,
        /// Run the plan shown without asking (required when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
        /// Allow a variable that changes how programs load (LD_PRELOAD, PATH, NODE_OPTIONS...)
        /// with the value shown, for this runtime; remembered for later revives.
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
        /// The runtime's id, as `list` shows it.
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
}

/// Runs one subcommand and maps its outcome to an exit code.
pub fn run(command: Command) -> ExitCode {
    let locations_log = supercode_core::Locations::from_env()
        .map(|l| l.log_dir)
        .unwrap_or_else(|_| std::env::temp_dir().join("supercode-tray-logs"));
    let _guard = crate::logging::init(&locations_log, false);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return fail(&format!("could not start the async runtime: {e}")),
    };
    match runtime.block_on(dispatch(command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}

fn fail(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}

async fn dispatch(command: Command) -> Result<(), String> {
    if let Command::DemoRuntime(args) = command {
        return demo::run(args).await.map_err(|e| e.to_string());
    }
    let core = Supercode::from_env().map_err(|e| e.to_string())?;
    match command {
        Command::List { json } => {
            let snapshot = core.snapshot_with_states().await;
            output::print_list(&snapshot, json);
        }
        Command::Forget { id } => {
            core.forget(&id).map_err(|e| e.to_string())?;
            println!("Forgot {id}.");
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
                        eprintln!("{}: {text}", view.profile);
                        last_progress = Some(text);
                    }
                })
                .await
                .map_err(|e| e.to_string())?;
            println!("{}: {}", view.profile, output::pending_state_text(&view));
            if view.state != PendingState::Approved {
                return Err(format!(
                    "the registration for {} was not approved",
                    view.profile
                ));
            }
        }
        Command::Reject { profile } => {
            core.reject(&profile).map_err(|e| e.to_string())?;
            println!("Dismissed the pending registration for {profile}.");
        }
        Command::Doctor { json } => {
            let report = core.doctor().await;
            output::print_doctor(&report, json);
            if !report.healthy() {
                return Err("doctor found problems (see above)".into());
            }
        }
        Command::Act { id, action, yes } => agents::act(&core, &id, &action, yes).await?,
        Command::Events { json: _ } => agents::events(&core).await?,
        Command::DemoRuntime(_) => unreachable!("handled above"),
    }
    Ok(())
}

/// `attach ID`: the one-time URL is the first line on stdout; the proxy serves until interrupted,
/// or until its runtime goes away (its receipt removed, or its process exited), as in the tray.
async fn attach(core: &Supercode, id: &str, no_open: bool) -> Result<(), String> {
    // Watching from before the attach, so a runtime that goes right after it is still seen.
    let _watch = core.watch(|_| {});
    let url = core.attach(id).await.map_err(|e| e.to_string())?;
    println!("{}", url.as_str());
    if !no_open {
        supercode_core::attach::open_in_browser(&url).map_err(|e| e.to_string())?;
    }
    eprintln!("Serving the attach proxy; press Ctrl-C to stop.");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {
            core.shutdown_proxies().await;
            Ok(())
        }
        () = core.proxies_stopped() => {
            Err(format!("{id} stopped, so its attach proxy is closed"))
        }
    }
}
