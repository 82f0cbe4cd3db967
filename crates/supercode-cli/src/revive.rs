//! `revive ID [--yes] [--allow-env NAME]...`: prints the plan the window would show (absolute
//! program, arguments, working directory, every variable it sets), asks before running it (`y/N`
//! on a terminal; `--yes` otherwise), and runs exactly that plan: the revive carries the plan's
//! digest, so a record rewritten in between is refused.
//!
//! Everything in the plan comes from a record, so all of it goes through the core's one rule for
//! terminals ([`supercode_core::text`]): values quoted (an argument with spaces stays one
//! argument), the name and the reasons inline, each control or bidirectional character as a
//! visible `\u{..}` escape, so a record cannot repaint the terminal or forge a line of the plan
//! (issue 29). Each variable that needs allowing says so, with the reason.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

use supercode_core::resolve::RuntimeAction;
use supercode_core::revive::ReviveRequest;
use supercode_core::text::{quoted, visible};
use supercode_core::view::RevivePlanView;
use supercode_core::Supercode;

use crate::CliError;

/// Shows the plan for the runtime `name_or_id` means (the core's rule), confirms it, and
/// revives it: plan and revive both name it by the id it resolved to.
pub async fn run(
    core: &Supercode,
    name_or_id: &str,
    yes: bool,
    allow_env: Vec<String>,
) -> Result<(), CliError> {
    let runtime = core.resolve(name_or_id).await?;
    let id = runtime.target_for(RuntimeAction::Revive)?;
    let plan = core.revive_plan(id).await?;
    print!("{}", plan_text(&plan, &allow_env));
    let _ = std::io::stdout().flush();
    let still_refused: Vec<String> = plan
        .env
        .iter()
        .filter(|v| v.needs_allow && !v.allowed && !allow_env.contains(&v.name))
        .map(|v| v.name.clone())
        .collect();
    if !still_refused.is_empty() {
        return Err(CliError::NeedsAllowEnv {
            reason: plan
                .run
                .reason
                .clone()
                .unwrap_or_else(|| "Some variables are refused.".into()),
            id: visible(id).into_owned(),
            names: still_refused,
        });
    }
    if !yes && !confirmed_on_terminal(&plan)? {
        return Err(CliError::NotConfirmed { name: plan.name });
    }
    let outcome = core
        .revive(ReviveRequest {
            id: id.to_owned(),
            plan_digest: plan.digest.clone(),
            allow_env,
        })
        .await?;
    println!("{}", outcome.message);
    Ok(())
}

/// `y/N` on a terminal; without one, the plan cannot have been read, so `--yes` is required.
fn confirmed_on_terminal(plan: &RevivePlanView) -> Result<bool, CliError> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(CliError::NoTerminal {
            name: plan.name.clone(),
        });
    }
    eprint!("Revive {}? [y/N] ", visible(&plan.name));
    let _ = std::io::stderr().flush();
    super::output::read_yes()
}

/// The plan as text: one item per line, every value quoted.
fn plan_text(plan: &RevivePlanView, allow_env: &[String]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Revive {} will run:", visible(&plan.name));
    let _ = writeln!(out, "  program:           {}", quoted(&plan.program));
    if plan.recorded_program != plan.program {
        let _ = writeln!(
            out,
            "    (recorded as {}, found on PATH)",
            quoted(&plan.recorded_program)
        );
    }
    if plan.args.is_empty() {
        let _ = writeln!(out, "  arguments:         (none)");
    } else {
        let _ = writeln!(out, "  arguments:");
        for (i, arg) in plan.args.iter().enumerate() {
            let _ = writeln!(out, "    {:>2}. {}", i + 1, quoted(arg));
        }
    }
    let _ = writeln!(out, "  working directory: {}", quoted(&plan.cwd));
    if plan.env.is_empty() {
        let _ = writeln!(
            out,
            "  environment:       Supercode Tray's own, nothing added"
        );
    } else {
        let _ = writeln!(out, "  environment:       Supercode Tray's own, plus:");
        for var in &plan.env {
            let note = match (&var.reason, var.allowed || allow_env.contains(&var.name)) {
                (Some(_), true) => "  (allowed for this runtime)".to_owned(),
                (Some(reason), false) => format!("  NEEDS --allow-env: {}", visible(reason)),
                (None, _) => String::new(),
            };
            let (name, value) = (visible(&var.name), quoted(&var.value));
            let _ = writeln!(out, "    {name}={value}{note}");
        }
    }
    out
}
