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
use supercode_core::agents::AgentOptions;
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
///
/// It starts from the current state: the first snapshot waits (at most [`SETTLE_TIMEOUT`]) for
/// the agents' states, the states runtimes are found in are not alerted (they began before it
/// started), and a snapshot that prints as the one before it is not printed again.
pub async fn events(core: &Supercode) -> Result<(), CliError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The CLI's core shows no events; this one sends them down the channel.
    let core = Supercode::new(core.locations().clone(), move |event| {
        let _ = tx.send(event);
    })
    .with_agent_options(AgentOptions {
        alert_states_found_at_start: false,
        ..AgentOptions::default()
    });
    let watch = core.watch();
    let settle_by = tokio::time::Instant::now() + SETTLE_TIMEOUT;
    // The first snapshot, held until the agents' states are in it (or the time is up).
    let mut held: Option<String> = None;
    let mut settled = false;
    let mut last_snapshot: Option<String> = None;
    loop {
        let event = tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            () = tokio::time::sleep_until(settle_by), if !settled => {
                settled = true;
                if let Some(line) = held.take() {
                    if !write_snapshot(line, &mut last_snapshot) {
                        break;
                    }
                }
                continue;
            }
            event = rx.recv() => event,
        };
        let Some(event) = event else { break };
        let line = match event {
            CoreEvent::Snapshot(snapshot) => {
                let line = json!({ "type": "snapshot", "snapshot": &*snapshot }).to_string();
                if !settled {
                    if !snapshot.agent_states_known() {
                        held = Some(line);
                        continue;
                    }
                    settled = true;
                    held = None;
                }
                if !write_snapshot(line, &mut last_snapshot) {
                    break;
                }
                continue;
            }
            CoreEvent::AgentAlert {
                id,
                name,
                state,
                title,
                ..
            } => json!({
                "type": "agent-alert", "id": id, "name": name, "state": state, "title": title,
            }),
            CoreEvent::RuntimeDied { name, .. } => json!({ "type": "runtime-died", "name": name }),
            CoreEvent::RegistrationWaiting { profile } => {
                json!({ "type": "registration-waiting", "profile": profile })
            }
        };
        // Nothing goes out before the first snapshot it follows.
        if let Some(first) = held.take() {
            settled = true;
            if !write_snapshot(first, &mut last_snapshot) {
                break;
            }
        }
        if !write_line(&line.to_string()) {
            break;
        }
    }
    drop(watch);
    core.shutdown().await;
    Ok(())
}

/// How long `events --json` holds its first snapshot for the running runtimes' agent states:
/// what `list` waits for each runtime's answer ([`supercode_core::agents::ONE_SHOT_TIMEOUT`]),
/// so a runtime that does not serve the status API delays the start by no more than that.
const SETTLE_TIMEOUT: std::time::Duration = supercode_core::agents::ONE_SHOT_TIMEOUT;

/// Writes a snapshot line unless it is the one written last; `false` once stdout is closed.
fn write_snapshot(line: String, last: &mut Option<String>) -> bool {
    if last.as_ref() == Some(&line) {
        return true;
    }
    let written = write_line(&line);
    *last = Some(line);
    written
}

/// Writes `line` (a JSON document) terminal-safe and flushed; `false` once stdout is closed
/// (`| head` ends the stream like Ctrl-C).
fn write_line(line: &str) -> bool {
    let mut out = std::io::stdout().lock();
    let line = supercode_core::text::json_safe(line);
    writeln!(out, "{line}").and_then(|()| out.flush()).is_ok()
}
