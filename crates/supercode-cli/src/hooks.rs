//! `hooks install|remove|status`: connecting coding agents to the tray through their own hooks;
//! and the two commands the agent runs, `hook <agent>` (each event) and `hook-host <agent>` (a
//! session's host). The rules (what goes into the settings file, how ours are recognised) are
//! `agent_hooks::settings`; this module shows the preview, asks, and prints.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use agent_hooks::agent::Agent;
use agent_hooks::settings::{HooksStatus, Plan};
use agent_hooks::{claude_code, codex};
use supercode_core::view::{AgentConnection, CodingAgentView, HooksChange};

use crate::CliError;

/// The agents whose hooks we install.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HookAgent {
    /// Claude Code (`~/.claude/settings.json`, or `$CLAUDE_CONFIG_DIR/settings.json`).
    ClaudeCode,
    /// OpenAI's Codex CLI (`~/.codex/hooks.json`, or `$CODEX_HOME/hooks.json`).
    Codex,
}

impl HookAgent {
    fn agent(self) -> Agent {
        match self {
            HookAgent::ClaudeCode => Agent::ClaudeCode,
            HookAgent::Codex => Agent::Codex,
        }
    }
}

/// On or off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
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
    /// Answer Codex's approvals from the tray (on), or in Codex's terminal only (off, the
    /// default). On, Codex waits for the tray before showing its own prompt.
    CodexApprovals {
        /// On or off.
        switch: Switch,
    },
    /// Answer from the tray the Claude Code permission requests no terminal asks while our hook
    /// waits (on): unattended sessions' (`claude -p`, sessions other tools run) and background
    /// subagents'. Off (the default), Claude Code denies an unattended session's at once and asks
    /// a subagent's in its terminal at once, as without the hooks (a script would otherwise wait
    /// for a human, and a subagent's dialog for the tray).
    ClaudeCodeUnattended {
        /// On or off.
        switch: Switch,
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
            let agent = agent.agent();
            let path = agent.settings_path()?;
            let program = supercode_core::connect::hook_program()?;
            let hooks = agent.hooks();
            let plan = hooks.plan_install(&path, &program)?;
            let done = supercode_core::connect::done_message(agent, HooksChange::Connect);
            change(
                &plan,
                yes,
                &format!("Connect {}", hooks.display_name),
                &done,
            )
        }
        HooksCommand::Remove { agent, yes } => {
            let agent = agent.agent();
            let path = agent.settings_path()?;
            let hooks = agent.hooks();
            let plan = hooks.plan_remove(&path)?;
            change(
                &plan,
                yes,
                &format!("Disconnect {}", hooks.display_name),
                &supercode_core::connect::done_message(agent, HooksChange::Disconnect),
            )
        }
        HooksCommand::CodexApprovals { switch } => {
            let on = switch == Switch::On;
            let path = codex::set_approvals_from_tray(on).map_err(|source| CliError::Io {
                what: "could not change the setting",
                source,
            })?;
            if on {
                println!(
                    "Codex approvals wait for your answer in the tray while it runs ({}); Codex's terminal says \"{}\" meanwhile.",
                    path.display(),
                    codex::PERMISSION_STATUS
                );
            } else {
                println!("Codex asks for approvals in its terminal; the tray shows them without Approve.");
            }
            Ok(())
        }
        HooksCommand::ClaudeCodeUnattended { switch } => {
            let on = switch == Switch::On;
            let path = claude_code::UNATTENDED_FROM_TRAY
                .set(on)
                .map_err(|source| CliError::Io {
                    what: "could not change the setting",
                    source,
                })?;
            if on {
                println!(
                    "Permission requests of unattended Claude Code sessions (claude -p) and of background subagents wait for your answer in the tray while it runs ({}); a script, or a subagent's dialog in the terminal, waits meanwhile.",
                    path.display()
                );
            } else {
                println!("Unattended Claude Code sessions (claude -p) and background subagents get no answer from the tray: Claude Code denies an unattended session's permission requests at once and asks a subagent's in its terminal, as without the hooks.");
            }
            Ok(())
        }
        HooksCommand::Status { json } => {
            let mut statuses = Vec::new();
            for agent in Agent::ALL {
                let path = agent.settings_path()?;
                let status = agent.hooks().status(&path);
                let view = supercode_core::connect::agent_view(agent, &path);
                statuses.push((status, agent.trust(&path), view));
            }
            print_status(&statuses, json);
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

/// Each agent's state in the window's words (`connect::agent_view`), with what to run.
fn print_status(statuses: &[(HooksStatus, Option<codex::Trust>, CodingAgentView)], json: bool) {
    if json {
        let agents: Vec<serde_json::Value> = statuses
            .iter()
            .map(|(status, trust, view)| {
                let mut value = serde_json::to_value(status).expect("status serializes");
                value["view"] = serde_json::to_value(view).expect("a view serializes");
                if status.agent == claude_code::AGENT {
                    value["unattendedFromTray"] = claude_code::UNATTENDED_FROM_TRAY.is_on().into();
                }
                if let Some(trust) = trust {
                    value["trust"] = serde_json::to_value(trust).expect("trust serializes");
                    value["approvalsFromTray"] = codex::approvals_from_tray().into();
                }
                value
            })
            .collect();
        let list = serde_json::json!({ "agents": agents });
        println!(
            "{}",
            serde_json::to_string_pretty(&list).expect("status serializes")
        );
        return;
    }
    for (status, trust, view) in statuses {
        let agent = status.agent;
        let mut state = view.summary.clone();
        if view.connect.available {
            state.push_str(&format!(": run `supercode-tray hooks install {agent}`"));
        }
        if let Some(note) = &view.trust {
            state.push_str(&format!("; {note}"));
        }
        if trust.is_some()
            && view.connection != AgentConnection::NotConnected
            && codex::approvals_from_tray()
        {
            state.push_str("; approvals answered from the tray");
        }
        if status.agent == claude_code::AGENT
            && view.connection != AgentConnection::NotConnected
            && claude_code::UNATTENDED_FROM_TRAY.is_on()
        {
            state.push_str(
                "; unattended sessions (claude -p) and background subagents answered from the tray",
            );
        }
        println!("{agent:<12} {state}  ({})", status.settings.display());
    }
}

/// `hook <agent>`: what hook entries installed before the hook program existed run; the same
/// hook as `supercode-tray-hook <agent>`, so they keep working until `hooks install` points
/// them at the hook program.
pub fn hook(agent: HookAgent) -> ExitCode {
    agent_hooks::hook::run(agent.agent());
    ExitCode::SUCCESS
}

/// `hook-host <agent> ...`: a session's host, until the agent's process exits or the session
/// ends. Detached by the hook; prints nothing.
pub fn host(args: HostArgs) -> ExitCode {
    let agent = args.agent.agent();
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
        agent,
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
            tracing::warn!(
                "the {} session's host could not run: {e}",
                agent.hooks().display_name
            );
            ExitCode::FAILURE
        }
    }
}
