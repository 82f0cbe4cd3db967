//! `hooks install|remove|status`: connecting coding agents to the tray through their own hooks;
//! and the two commands the agent runs, `hook <agent>` (each event) and `hook-host <agent>` (a
//! session's host). The rules (what goes into the settings file, how ours are recognised) are
//! `agent_hooks::settings`; this module shows the preview, asks, and prints.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use agent_hooks::claude_code;
use agent_hooks::settings::{HooksStatus, Installed, Plan};

use crate::CliError;

/// The agents whose hooks we install.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HookAgent {
    /// Claude Code (`~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR/settings.json`).
    ClaudeCode,
}

/// `hooks ...`.
#[derive(Debug, clap::Subcommand)]
pub enum HooksCommand {
    /// Add our hooks to the agent's user settings, after showing exactly what is added.
    Install {
        /// The agent.
        agent: HookAgent,
        /// Make the change without asking (required when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Take out exactly the hooks `install` added; every other setting and hook stays.
    Remove {
        /// The agent.
        agent: HookAgent,
        /// Make the change without asking (required when stdin is not a terminal).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Say whether each agent is connected, and whether its hook's program still exists.
    Status {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `hook-host <agent> ...`: the arguments the hook starts a session's host with.
#[derive(Debug, clap::Args)]
pub struct HostArgs {
    /// The agent.
    pub agent: HookAgent,
    /// The session id.
    #[arg(long)]
    pub session: String,
    /// The session's working directory.
    #[arg(long)]
    pub cwd: PathBuf,
    /// The agent's process id.
    #[arg(long)]
    pub pid: u32,
    /// The agent's process start time (as `/proc/<pid>/stat` gives it).
    #[arg(long)]
    pub start_time: u64,
}

/// Runs `hooks ...`.
pub fn run(command: HooksCommand) -> Result<(), CliError> {
    match command {
        HooksCommand::Install { agent, yes } => {
            let HookAgent::ClaudeCode = agent;
            let path = claude_code::settings_path()?;
            let program = agent_hooks::hook::hook_program().ok_or(CliError::Io {
                what: "could not find this program's path",
                source: std::io::Error::other("no /proc/self/exe"),
            })?;
            let plan = claude_code::HOOKS.plan_install(&path, &program)?;
            change(&plan, yes, "Connect Claude Code", "Claude Code is connected: its sessions appear in the tray from their next hook event.")
        }
        HooksCommand::Remove { agent, yes } => {
            let HookAgent::ClaudeCode = agent;
            let path = claude_code::settings_path()?;
            let plan = claude_code::HOOKS.plan_remove(&path)?;
            change(
                &plan,
                yes,
                "Disconnect Claude Code",
                "Claude Code is disconnected.",
            )
        }
        HooksCommand::Status { json } => {
            let status =
                claude_code::settings_path().map(|path| claude_code::HOOKS.status(&path))?;
            print_status(&status, json);
            Ok(())
        }
    }
}

fn change(plan: &Plan, yes: bool, question: &str, done: &str) -> Result<(), CliError> {
    println!("{}", plan.preview);
    if plan.nothing_to_do {
        return Ok(());
    }
    if !yes {
        if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
            return Err(CliError::HooksNeedConfirmation {
                question: question.to_owned(),
            });
        }
        eprint!("{question}? [y/N] ");
        let _ = std::io::stderr().flush();
        if !crate::output::read_yes()? {
            return Err(CliError::NotInvoked {
                label: question.to_owned(),
            });
        }
    }
    plan.apply()?;
    if let Some(backup) = plan.backup_path() {
        println!("The previous file is kept as {}.", backup.display());
    }
    println!("{done}");
    Ok(())
}

fn print_status(status: &HooksStatus, json: bool) {
    if json {
        let list = serde_json::json!({ "agents": [status] });
        println!(
            "{}",
            serde_json::to_string_pretty(&list).expect("status serializes")
        );
        return;
    }
    let state = match (&status.problem, &status.installed) {
        (Some(problem), _) => format!("cannot tell: {problem}"),
        (None, Installed::Yes) if status.binary_exists => "connected".to_owned(),
        (None, Installed::Yes) => format!(
            "installed, but the hook's program is missing ({}): run `supercode-tray hooks install claude-code` again",
            status.commands.join(", ")
        ),
        (None, Installed::Partly) => format!(
            "partly installed (missing: {}): run `supercode-tray hooks install claude-code`",
            status.missing_events.join(", ")
        ),
        (None, Installed::No) => {
            "not connected: run `supercode-tray hooks install claude-code`".to_owned()
        }
    };
    println!("claude-code  {}  ({})", state, status.settings.display());
}

/// `hook <agent>`: the agent's hook. Never fails and never prints anything but a decision.
pub fn hook(agent: HookAgent) -> ExitCode {
    let HookAgent::ClaudeCode = agent;
    if let Some(program) = agent_hooks::hook::hook_program() {
        agent_hooks::hook::run_claude_code(&program);
    }
    ExitCode::SUCCESS
}

/// `hook-host <agent> ...`: a session's host, until the agent's process exits or the session
/// ends. Detached by the hook; prints nothing.
pub fn host(args: HostArgs) -> ExitCode {
    let HookAgent::ClaudeCode = args.agent;
    // Its own session: no signal to the hook's process group or terminal reaches it.
    let _ = rustix::process::setsid();
    if !agent_hooks::event::valid_session_id(&args.session) || !args.cwd.is_absolute() {
        return ExitCode::FAILURE;
    }
    let Ok(receipts) = live_runtime::ReceiptDir::from_env() else {
        return ExitCode::FAILURE;
    };
    let config = agent_hooks::host::HostConfig {
        receipts,
        agent: claude_code::AGENT,
        display_name: claude_code::HOOKS.display_name,
        session_id: args.session,
        cwd: args.cwd,
        process: live_runtime::ProcessIdentity {
            pid: args.pid,
            start_time: args.start_time,
        },
        socket_dir: agent_hooks::channel::socket_dir(),
        keep_alive: demo_runtime::KEEP_ALIVE_INTERVAL,
    };
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    match runtime.block_on(agent_hooks::host::run(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(agent_hooks::host::HostError::AlreadyServed) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::warn!("the Claude Code session's host could not run: {e}");
            ExitCode::FAILURE
        }
    }
}
