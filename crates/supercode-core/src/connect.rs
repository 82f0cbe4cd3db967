//! Connecting coding agents from the window: each agent's state as `hooks status` computes it,
//! and Connect/Disconnect as a plan shown first and a change that makes exactly that plan.
//!
//! The rules of what goes into an agent's settings file are `agent_hooks::settings`, shared
//! with the CLI's `hooks install|remove`; this module adds what the window needs on top: the
//! state and the actions that apply as one view, and the digest that ties a confirmation to the
//! file it was computed from. A change whose file changed since its preview is refused
//! (`planChanged`) instead of applied, so what the user confirmed is what is written.

use std::path::Path;

use agent_hooks::agent::Agent;
use agent_hooks::settings::{HooksStatus, Installed, Plan};

use crate::error::CoreError;
use crate::view::{
    ActionAvailability, AgentConnection, CodingAgentView, HooksChange, HooksOutcome, HooksPlanView,
};

/// The agent named `name` (`claude-code`, `codex`).
pub fn agent(name: &str) -> Result<Agent, CoreError> {
    Agent::named(name).ok_or_else(|| CoreError::UnknownAgent {
        agent: name.to_owned(),
    })
}

/// The program the installed hooks run: the hook program beside the running binary, as
/// `hooks install` chooses it; without one beside it nothing is installed.
pub fn hook_program() -> Result<std::path::PathBuf, CoreError> {
    agent_hooks::hook::hook_program().ok_or_else(|| CoreError::NoHookProgram {
        beside: std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.display().to_string()))
            .unwrap_or_default(),
    })
}

/// The settings file `change` of `agent` writes, and the program installed hooks run (only
/// Connect needs one; Disconnect recognises ours wherever they point).
pub fn target(
    agent: Agent,
    change: HooksChange,
) -> Result<(std::path::PathBuf, std::path::PathBuf), CoreError> {
    let path = agent.settings_path()?;
    let program = match change {
        HooksChange::Connect => hook_program()?,
        HooksChange::Disconnect => std::path::PathBuf::new(),
    };
    Ok((path, program))
}

/// Every agent's state in the window, read from the user's files.
pub fn agents() -> Vec<CodingAgentView> {
    Agent::ALL
        .into_iter()
        .map(|agent| match agent.settings_path() {
            Ok(path) => agent_view(agent, &path),
            Err(e) => CodingAgentView {
                agent: agent.name().to_owned(),
                title: agent.title().to_owned(),
                settings: String::new(),
                connection: AgentConnection::Problem,
                summary: e.to_string(),
                trust: None,
                connect: ActionAvailability::no(e.to_string()),
                disconnect: ActionAvailability::no(e.to_string()),
            },
        })
        .collect()
}

/// One agent's state from its settings file at `path`: what the window, `hooks status` and
/// `doctor` say of it, in these words.
pub fn agent_view(agent: Agent, path: &Path) -> CodingAgentView {
    let status = agent.hooks().status(path);
    let (connection, summary) = connection(&status);
    let trust = trust_note(agent, &status, path);
    let (connect, disconnect) = match connection {
        AgentConnection::Problem => {
            let reason = format!("{summary}; fix the file first");
            (
                ActionAvailability::no(reason.clone()),
                ActionAvailability::no(reason),
            )
        }
        AgentConnection::Connected => (
            ActionAvailability::never("already connected"),
            ActionAvailability::yes(),
        ),
        AgentConnection::Partly => (ActionAvailability::yes(), ActionAvailability::yes()),
        AgentConnection::NotConnected => (
            ActionAvailability::yes(),
            ActionAvailability::never("not connected"),
        ),
    };
    CodingAgentView {
        agent: agent.name().to_owned(),
        title: agent.title().to_owned(),
        settings: path.display().to_string(),
        connection,
        summary,
        trust,
        connect,
        disconnect,
    }
}

/// What is still to do in `agent` itself before it runs our installed entries (Codex runs only
/// the hooks the user trusted in it), for people; `None` when nothing is, or when nothing of ours
/// is installed to trust. The window and `doctor` say it in these words.
pub fn trust_note(agent: Agent, status: &HooksStatus, path: &Path) -> Option<String> {
    if status.installed == Installed::No || status.problem.is_some() {
        return None;
    }
    let trust = agent.trust(path)?;
    match (&trust.problem, trust.needs_review.is_empty()) {
        (Some(problem), _) => Some(format!(
            "cannot tell whether {} trusts them: {problem}",
            agent.title()
        )),
        (None, false) => Some(format!(
            "not trusted in {0} yet ({1}), so {0} does not run them: start {0} and trust them when it says \"Hooks need review\"",
            agent.title(),
            trust.needs_review.join(", ")
        )),
        (None, true) => None,
    }
}

fn connection(status: &HooksStatus) -> (AgentConnection, String) {
    match (&status.problem, &status.installed) {
        (Some(problem), _) => (AgentConnection::Problem, problem.clone()),
        (None, Installed::Yes) if status.binary_exists && status.outdated_events.is_empty() => {
            (AgentConnection::Connected, "connected".to_owned())
        }
        (None, Installed::Yes) if status.binary_exists => (
            AgentConnection::Partly,
            format!(
                "connected by an earlier version; connecting again updates its entries for {}",
                status.outdated_events.join(", ")
            ),
        ),
        (None, Installed::Yes) => (
            AgentConnection::Partly,
            format!(
                "installed, but the hook's program is missing ({})",
                status.commands.join(", ")
            ),
        ),
        (None, Installed::Partly) => (
            AgentConnection::Partly,
            format!(
                "partly connected (missing: {})",
                status.missing_events.join(", ")
            ),
        ),
        (None, Installed::No) => (AgentConnection::NotConnected, "not connected".to_owned()),
    }
}

fn make_plan(
    agent: Agent,
    path: &Path,
    program: &Path,
    change: HooksChange,
) -> Result<Plan, CoreError> {
    let hooks = agent.hooks();
    Ok(match change {
        HooksChange::Connect => hooks.plan_install(path, program)?,
        HooksChange::Disconnect => hooks.plan_remove(path)?,
    })
}

/// What `change` would do to `agent`'s settings at `path` (installing hooks that run
/// `program`), shown before it is made.
pub fn plan_view(
    agent: Agent,
    path: &Path,
    program: &Path,
    change: HooksChange,
) -> Result<HooksPlanView, CoreError> {
    let plan = make_plan(agent, path, program, change)?;
    Ok(HooksPlanView {
        agent: agent.name().to_owned(),
        title: agent.title().to_owned(),
        change,
        settings: path.display().to_string(),
        preview: plan.preview.clone(),
        backup: (!plan.nothing_to_do)
            .then(|| plan.backup_path())
            .flatten()
            .map(|p| p.display().to_string()),
        nothing_to_do: plan.nothing_to_do,
        warning: plan.warning.clone(),
        digest: plan.digest(),
    })
}

/// What a change made means for the user, and what is left to do (Codex: trust the entries in
/// Codex): the one wording of the window and `hooks install|remove`.
pub fn done_message(agent: Agent, change: HooksChange) -> String {
    let title = agent.title();
    match (change, agent) {
        (HooksChange::Connect, Agent::ClaudeCode) => format!(
            "{title} is connected: its sessions appear in the tray from their next hook event."
        ),
        (HooksChange::Connect, Agent::Codex) => format!(
            "{title}'s hooks are installed. {title} runs them only once you trust them: start {title}, choose to review the hooks when it says \"Hooks need review\", and trust the Supercode Tray entries. `supercode-tray hooks status` says when they are trusted."
        ),
        (HooksChange::Disconnect, _) => format!("{title} is disconnected."),
    }
}

/// Makes `change` as the plan whose digest is `digest` showed it: plans again from the file as
/// it is now and refuses (`planChanged`, nothing written) when that is not the plan shown.
pub fn apply(
    agent: Agent,
    path: &Path,
    program: &Path,
    change: HooksChange,
    digest: &str,
) -> Result<HooksOutcome, CoreError> {
    let plan = make_plan(agent, path, program, change)?;
    if plan.digest() != digest {
        return Err(CoreError::HooksPlanChanged {
            path: path.display().to_string(),
        });
    }
    plan.apply()?;
    let kept = plan
        .backup_path()
        .filter(|_| !plan.nothing_to_do)
        .map(|backup| format!(" The previous file is kept as {}.", backup.display()))
        .unwrap_or_default();
    let message = format!("{}{kept}", done_message(agent, change));
    Ok(HooksOutcome {
        agent: agent.name().to_owned(),
        message,
    })
}
