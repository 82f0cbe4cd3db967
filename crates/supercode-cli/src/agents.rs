//! The agent-state subcommands (issue 15): `act ID ACTION [--yes]` invokes an action the
//! runtime's latest status document offers, and `events --json` streams inventory and state
//! changes as JSON lines until interrupted.
//!
//! Everything printed comes from browser-safe view types (no token, no address); runtime text is
//! already sanitized by the core, and is printed escaped (`{:?}`) in questions so that nothing a
//! runtime sends can rewrite the terminal; outcomes and JSON lines go through the core's rule for
//! terminals ([`supercode_core::text`]), since they carry a receipt's name too.

use std::io::{IsTerminal, Write};

use serde_json::json;
use supercode_core::view::AgentActionView;
use supercode_core::{CoreEvent, Supercode};

use crate::CliError;

/// `act ID ACTION [--yes]`: exit 0 when the runtime accepted it, 1 (with the reason) otherwise.
/// A destructive action, or one with a confirmation text, asks y/N on a terminal and needs
/// `--yes` without one.
pub async fn act(core: &Supercode, id: &str, action: &str, yes: bool) -> Result<(), CliError> {
    let snapshot = core.snapshot_with_states().await;
    let offered: Option<AgentActionView> = snapshot
        .runtimes
        .iter()
        .find(|r| r.id == id || r.runtime_id == id)
        .and_then(|r| r.state.as_ref())
        .and_then(|s| s.actions.iter().find(|a| a.id == action).cloned());
    if let Some(offered) = offered.filter(|a| a.destructive || a.confirm.is_some()) {
        if !yes && !confirmed(&offered)? {
            return Err(CliError::NotInvoked {
                label: offered.label,
            });
        }
    }
    // The core checks again against the document it acts on: only an offered action is sent.
    let outcome = core.act(id, action).await?;
    println!("{}", supercode_core::text::visible_lines(&outcome.message));
    Ok(())
}

fn confirmed(action: &AgentActionView) -> Result<bool, CliError> {
    let question = action.confirm.clone().unwrap_or_else(|| {
        format!(
            "{} is destructive (it discards work or refuses the agent). Invoke it?",
            action.label
        )
    });
    if !std::io::stdin().is_terminal() {
        return Err(CliError::ActNeedsConfirmation { question });
    }
    print!("{question:?} [y/N] ");
    let _ = std::io::stdout().flush();
    super::output::read_yes()
}

/// `events --json`: one JSON object per line, flushed as it happens, until Ctrl-C.
///
/// `{"type":"snapshot","snapshot":{...}}` whenever the inventory or a shown state changes (the
/// snapshot as `list --json` describes its runtimes), `{"type":"agent-alert","id","name","state",
/// "title"}` when a runtime enters a state that needs the user or is in trouble,
/// `{"type":"runtime-died","name"}` and `{"type":"registration-waiting","profile"}`.
pub async fn events(core: &Supercode) -> Result<(), CliError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The CLI's core shows no events; this one sends them down the channel.
    let core = Supercode::new(core.locations().clone(), move |event| {
        let _ = tx.send(event);
    });
    let watch = core.watch();
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            event = rx.recv() => {
                let Some(event) = event else { break };
                let line = match event {
                    CoreEvent::Snapshot(snapshot) => json!({ "type": "snapshot", "snapshot": &*snapshot }),
                    CoreEvent::AgentAlert { id, name, state, title, .. } => json!({
                        "type": "agent-alert", "id": id, "name": name, "state": state, "title": title,
                    }),
                    CoreEvent::RuntimeDied { name, .. } => json!({ "type": "runtime-died", "name": name }),
                    CoreEvent::RegistrationWaiting { profile } => {
                        json!({ "type": "registration-waiting", "profile": profile })
                    }
                };
                let mut out = std::io::stdout().lock();
                // A closed pipe (`| head`) ends the stream like Ctrl-C.
                let line = supercode_core::text::json_safe(&line.to_string()).into_owned();
                if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
                    break;
                }
            }
        }
    }
    drop(watch);
    core.shutdown().await;
    Ok(())
}
