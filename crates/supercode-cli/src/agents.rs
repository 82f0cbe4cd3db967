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
use supercode_core::{CoreEvent, Supercode};

use crate::CliError;

/// `act ID ACTION [--yes]`: exit 0 when the runtime accepted it, 1 (with the reason) otherwise.
/// Looks once (one status document), asks the question the core decided for that document on a
/// terminal (without one it needs `--yes`), and acts on that same document: should the runtime's
/// prompt change in between, the core refuses and nothing runs.
pub async fn act(core: &Supercode, id: &str, action: &str, yes: bool) -> Result<(), CliError> {
    let (offered, revision) = core.offered(id, action).await?;
    if let Some(question) = &offered.confirm {
        if !yes && !confirmed(question)? {
            return Err(CliError::NotInvoked {
                label: offered.label,
            });
        }
    }
    let outcome = core.act(id, action, revision).await?;
    println!("{}", supercode_core::text::visible_lines(&outcome.message));
    Ok(())
}

fn confirmed(question: &str) -> Result<bool, CliError> {
    if !std::io::stdin().is_terminal() {
        return Err(CliError::ActNeedsConfirmation {
            question: question.to_owned(),
        });
    }
    print!("{} [y/N] ", supercode_core::text::quoted(question));
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
