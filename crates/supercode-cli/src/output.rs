//! How subcommands print: human tables, or the documented JSON (`docs/cli.md`); and how they
//! read the answer to a `[y/N]` question.
//!
//! Everything printed here comes from browser-safe view types, which hold no secret. Their text
//! comes from records and runtimes, so every such string is rendered with the core's one rule
//! for terminals ([`supercode_core::text`]): in tables each field through `visible` (a control
//! or bidirectional character shows as a `\u{..}` escape, a newline cannot forge a row), and
//! every JSON document through `json_safe` (JSON escapes C0 itself; C1 and bidirectional
//! characters are written as `\uXXXX`, which parses to the same string).

use std::fmt::Write as _;
use std::io::Write as _;

use std::io::BufRead as _;

use serde::Serialize;
use supercode_core::doctor::{CheckStatus, DoctorReport};
use supercode_core::text::{json_safe, quoted, visible};
use supercode_core::view::{PendingState, PendingView, RuntimeView, Snapshot};

use super::CliError;

/// The version of the `list --json` document; bumped only on incompatible changes.
pub const LIST_JSON_VERSION: u32 = 1;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListJson<'a> {
    version: u32,
    receipt_dir: &'a str,
    canon_home: &'a str,
    secret_store: &'a supercode_core::view::SecretStoreView,
    runtimes: &'a [RuntimeView],
    ignored: &'a [supercode_core::view::IgnoredFile],
    warnings: &'a [supercode_core::view::FileWarning],
}

/// `list`: a table, or `{version, receiptDir, canonHome, secretStore, runtimes: [...], ignored: [...],
/// warnings: [...]}`.
pub fn print_list(snapshot: &Snapshot, json: bool) {
    emit(&render_list(snapshot, json));
}

fn list_json(snapshot: &Snapshot) -> ListJson<'_> {
    ListJson {
        version: LIST_JSON_VERSION,
        receipt_dir: &snapshot.receipt_dir,
        canon_home: &snapshot.canon_home,
        secret_store: &snapshot.secret_store,
        runtimes: &snapshot.runtimes,
        ignored: &snapshot.ignored,
        warnings: &snapshot.warnings,
    }
}

/// What [`print_list`] prints.
fn render_list(snapshot: &Snapshot, json: bool) -> String {
    let mut out = String::new();
    if json {
        print_json(&mut out, &list_json(snapshot));
        return out;
    }
    if snapshot.runtimes.is_empty() {
        let _ = writeln!(
            out,
            "No runtimes. Start one with: supercode-tray demo-runtime --name demo"
        );
    } else {
        let _ = writeln!(
            out,
            "{:<38} {:<9} {:<14} {:<12} {:<20} WORKSPACE",
            "ID", "STATUS", "STATE", "KIND", "NAME"
        );
        for r in &snapshot.runtimes {
            let _ = writeln!(
                out,
                "{:<38} {:<9} {:<14} {:<12} {:<20} {}",
                visible(&r.id),
                status_text(r),
                agent_state_text(r),
                visible(&r.kind),
                visible(&r.name),
                visible(r.workspace.as_deref().unwrap_or("-"))
            );
            if let Some(reason) = &r.status_reason {
                let _ = writeln!(out, "{:<38} {}", "", visible(reason));
            }
            if let Some(asks) = agent_asks(r) {
                let _ = writeln!(out, "{:<38} {asks}", "");
            }
            if let Some(last) = last_state(r) {
                let _ = writeln!(out, "{:<38} {last}", "");
            }
        }
    }
    for ignored in &snapshot.ignored {
        let (file, reason) = (visible(&ignored.file), visible(&ignored.reason));
        let _ = writeln!(out, "ignored {file}: {reason}");
    }
    for warning in &snapshot.warnings {
        let (file, reason) = (visible(&warning.file), visible(&warning.reason));
        let _ = writeln!(out, "warning {file}: {reason}");
    }
    let _ = writeln!(
        out,
        "Secret store: {}",
        visible(&snapshot.secret_store.description)
    );
    out
}

/// The agent's state as the API names it (`needs-approval`...), `-` for a runtime not running.
fn agent_state_text(r: &RuntimeView) -> String {
    r.state
        .as_ref()
        .and_then(|s| serde_json::to_value(s.value).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "-".to_owned())
}

/// What the agent says it is doing or asks (its title, quoted) and the ids of the actions it
/// offers (what `act` takes), for the line under its row; `None` when it says nothing.
fn agent_asks(r: &RuntimeView) -> Option<String> {
    let state = r.state.as_ref()?;
    let title = state.title.as_deref().map(quoted);
    let actions: Vec<&str> = state.actions.iter().map(|a| a.id.as_str()).collect();
    let actions = (!actions.is_empty()).then(|| format!("act: {}", visible(&actions.join(", "))));
    match (title, actions) {
        (None, None) => None,
        (Some(title), None) => Some(title),
        (None, Some(actions)) => Some(actions),
        (Some(title), Some(actions)) => Some(format!("{title}  {actions}")),
    }
}

/// What the agent of an exited runtime last showed (its state, and its title quoted), for the
/// line under its row; `None` when the tray never saw a state of it.
fn last_state(r: &RuntimeView) -> Option<String> {
    let last = r.exited.as_ref()?.last_state.as_ref()?;
    let state = serde_json::to_value(last.value).ok()?;
    let mut text = format!("last state: {}", state.as_str()?);
    if let Some(title) = &last.title {
        text.push_str(&format!(" {}", quoted(title)));
    }
    Some(text)
}

fn status_text(r: &RuntimeView) -> String {
    serde_json::to_value(r.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// `pending`: a table, or a JSON array of pending registrations.
pub fn print_pending(pending: &[PendingView], json: bool) {
    let mut out = String::new();
    if json {
        print_json(&mut out, &pending);
        emit(&out);
        return;
    }
    if pending.is_empty() {
        emit("No pending registrations.\n");
        return;
    }
    let _ = writeln!(
        out,
        "{:<24} {:<14} {:<12} CREATED",
        "PROFILE", "CLIENT", "STATE"
    );
    for p in pending {
        let _ = writeln!(
            out,
            "{:<24} {:<14} {:<12} {}",
            visible(&p.profile),
            visible(p.client_type.as_deref().unwrap_or("-")),
            pending_state_text(p),
            visible(&p.created_at)
        );
    }
    emit(&out);
}

/// A pending registration's state in words, terminal-safe.
pub fn pending_state_text(view: &PendingView) -> String {
    let state = match view.state {
        PendingState::Unsubmitted => "not submitted",
        PendingState::Waiting => "waiting for approval",
        PendingState::Approving => "approving",
        PendingState::Approved => "approved",
        PendingState::Rejected => "rejected",
        PendingState::Expired => "expired",
        PendingState::Error => "error",
    };
    match &view.message {
        Some(message) => format!("{state} ({})", visible(message)),
        None => state.to_owned(),
    }
}

/// `doctor`: one line per check with its fix, or JSON.
pub fn print_doctor(report: &DoctorReport, json: bool) {
    let mut out = String::new();
    if json {
        print_json(&mut out, report);
        emit(&out);
        return;
    }
    for check in &report.checks {
        let mark = match check.status {
            CheckStatus::Ok => "ok  ",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "FAIL",
        };
        let _ = writeln!(
            out,
            "[{mark}] {}: {}",
            visible(&check.name),
            visible(&check.detail)
        );
        if let Some(fix) = &check.fix {
            let _ = writeln!(out, "       fix: {}", visible(fix));
        }
    }
    emit(&out);
}

fn print_json<T: Serialize + ?Sized>(out: &mut String, value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => {
            out.push_str(&json_safe(&text));
            out.push('\n');
        }
        Err(e) => eprintln!("error: could not encode JSON: {e}"),
    }
}

/// Writes to stdout; a closed pipe (`list --json | head`) ends the output quietly, not in a panic.
fn emit(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("error: could not write the output: {e}");
        }
    }
}

/// Reads the answer to a `[y/N]` question from stdin: yes for `y` or `yes` in any case, no for
/// anything else (an empty line included). The caller has checked that stdin is a terminal.
pub fn read_yes() -> Result<bool, CliError> {
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|source| CliError::Io {
            what: "could not read the answer",
            source,
        })?;
    let answer = answer.trim();
    Ok(answer.eq_ignore_ascii_case("y") || answer.eq_ignore_ascii_case("yes"))
}
