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
use supercode_core::text::{json_safe, visible};
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

/// `list --json` as rendered for one snapshot, kept so that the next render copies the text of
/// every runtime whose view did not change: at 10,000 runtimes the document is 10 MB, and a
/// change touches one runtime. What the app answers `list` with (`control`).
pub struct JsonList {
    snapshot: std::sync::Arc<Snapshot>,
    /// The document, as [`render_list`] renders it.
    pub text: std::sync::Arc<String>,
    /// Where each of `snapshot.runtimes` is in `text`.
    spans: Vec<std::ops::Range<usize>>,
}

/// How far `to_string_pretty` indents a runtime of `list --json`: two levels deep (the
/// document, then its `runtimes` array).
const RUNTIME_INDENT: &str = "    ";
/// A newline inside a runtime's text, followed by that indent.
const RUNTIME_NEWLINE: &str = "\n    ";

impl JsonList {
    /// The document for `snapshot`, the same bytes as `render_list(snapshot, true)`, reusing the
    /// text of `previous` for every runtime whose view is unchanged.
    pub fn render(snapshot: std::sync::Arc<Snapshot>, previous: Option<&JsonList>) -> Self {
        let (head, tail) = match serde_json::to_string_pretty(&list_json(&snapshot, &[])) {
            Ok(text) => match json_safe(&text).split_once(EMPTY_RUNTIMES) {
                Some((head, tail)) => (head.to_owned(), tail.to_owned()),
                None => unreachable!("the document always has its runtimes"),
            },
            Err(e) => {
                eprintln!("error: could not encode JSON: {e}");
                return Self {
                    snapshot,
                    text: std::sync::Arc::default(),
                    spans: Vec::new(),
                };
            }
        };
        let reusable: std::collections::HashMap<&str, usize> = previous
            .map(|p| {
                p.snapshot
                    .runtimes
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (r.id.as_str(), i))
                    .collect()
            })
            .unwrap_or_default();
        let mut out = String::with_capacity(previous.map_or(0, |p| p.text.len()) + 4096);
        let mut spans = Vec::with_capacity(snapshot.runtimes.len());
        out.push_str(&head);
        if snapshot.runtimes.is_empty() {
            out.push_str(EMPTY_RUNTIMES);
        } else {
            out.push_str(RUNTIMES_OPEN);
            for (i, runtime) in snapshot.runtimes.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                out.push_str(RUNTIME_INDENT);
                let start = out.len();
                let kept = previous
                    .zip(reusable.get(runtime.id.as_str()))
                    .filter(|(previous, &at)| previous.snapshot.runtimes[at] == *runtime);
                match kept {
                    Some((previous, &at)) => {
                        out.push_str(&previous.text[previous.spans[at].clone()])
                    }
                    // JSON strings hold no raw newline, so every newline starts a line.
                    None => match serde_json::to_string_pretty(runtime) {
                        Ok(text) => out.push_str(&json_safe(&text).replace('\n', RUNTIME_NEWLINE)),
                        Err(e) => eprintln!("error: could not encode JSON: {e}"),
                    },
                }
                spans.push(start..out.len());
            }
            out.push_str(RUNTIMES_CLOSE);
        }
        out.push_str(&tail);
        out.push('\n');
        Self {
            snapshot,
            text: std::sync::Arc::new(out),
            spans,
        }
    }

    /// The snapshot it was rendered for.
    pub fn snapshot(&self) -> &std::sync::Arc<Snapshot> {
        &self.snapshot
    }
}

/// The document's `runtimes` when empty, as `to_string_pretty` writes it; it is found after a
/// newline, which no JSON string holds, so nowhere else.
const EMPTY_RUNTIMES: &str = "\n  \"runtimes\": []";
const RUNTIMES_OPEN: &str = "\n  \"runtimes\": [\n";
const RUNTIMES_CLOSE: &str = "\n  ]";

fn list_json<'a>(snapshot: &'a Snapshot, runtimes: &'a [RuntimeView]) -> ListJson<'a> {
    ListJson {
        version: LIST_JSON_VERSION,
        receipt_dir: &snapshot.receipt_dir,
        canon_home: &snapshot.canon_home,
        secret_store: &snapshot.secret_store,
        runtimes,
        ignored: &snapshot.ignored,
        warnings: &snapshot.warnings,
    }
}

/// What [`print_list`] prints (the app renders it too, to answer `list`: `control`).
pub fn render_list(snapshot: &Snapshot, json: bool) -> String {
    let mut out = String::new();
    if json {
        print_json(&mut out, &list_json(snapshot, &snapshot.runtimes));
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

/// Prints text another process rendered with [`render_list`].
pub fn print_rendered(text: &str) {
    emit(text);
}

/// The agent's state as the API names it (`needs-approval`...), `-` for a runtime not running.
fn agent_state_text(r: &RuntimeView) -> String {
    r.state
        .as_ref()
        .and_then(|s| serde_json::to_value(s.value).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "-".to_owned())
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use supercode_core::view::{
        ActionAvailability, IgnoredFile, IgnoredLocation, RuntimeOrigin, RuntimeStatus,
        SecretStoreKindView, SecretStoreView, SnapshotCounts, SourceView,
    };

    use super::*;

    fn runtime(name: &str) -> RuntimeView {
        RuntimeView {
            id: format!("lre_{name}"),
            endpoint: Some(format!("lre_{name}")),
            runtime_id: format!("demo:{name}"),
            catalog_id: None,
            source: Some(SourceView {
                session_id: "s".into(),
                workspace: "/w/\"quoted\"\n\u{1b}[31m\\".into(),
            }),
            name: name.into(),
            kind: "demo".into(),
            workspace: None,
            workspace_roots: vec!["/a".into(), "/b".into()],
            profile: None,
            agent_name: None,
            status: RuntimeStatus::Running,
            status_reason: None,
            since: Some("2026-12-02T19:00:00.000Z".into()),
            pid: Some(4242),
            attach: ActionAvailability::yes(),
            forget: ActionAvailability::no("it is running"),
            revive: ActionAvailability::no("it is running"),
            launch_command: Some(Vec::new()),
            origin: RuntimeOrigin::Receipt,
            catalog_status: None,
            revive_capability: None,
            state: None,
        }
    }

    fn snapshot(runtimes: Vec<RuntimeView>) -> Arc<Snapshot> {
        Arc::new(Snapshot {
            counts: SnapshotCounts::of(&runtimes, &[]),
            runtimes,
            ignored: vec![IgnoredFile {
                location: IgnoredLocation::Receipts,
                file: "x.json".into(),
                reason: "\"runtimes\": [] is not a receipt".into(),
            }],
            warnings: Vec::new(),
            pending: Vec::new(),
            secret_store: SecretStoreView {
                kind: SecretStoreKindView::File,
                description: "a file".into(),
            },
            first_run: false,
            receipt_dir: "/r/\n  \"runtimes\": []".into(),
            canon_home: "/c".into(),
        })
    }

    /// The answer the app renders piecewise is, byte for byte, what the command prints itself,
    /// after any change: runtimes changed, added, removed, reordered, none.
    #[test]
    fn a_json_list_rendered_from_the_last_one_is_the_same_document() {
        let names = |names: &[&str]| names.iter().map(|n| runtime(n)).collect::<Vec<_>>();
        let mut changed = names(&["a", "b", "c"]);
        changed[1].name = "b renamed".into();
        changed[2].state = None;
        changed[2].pid = Some(7);
        let steps = [
            snapshot(Vec::new()),
            snapshot(names(&["a", "b", "c"])),
            snapshot(changed),
            snapshot(names(&["c", "a", "d"])),
            snapshot(names(&["c"])),
            snapshot(Vec::new()),
            snapshot(names(&["e", "f"])),
        ];
        let mut last: Option<JsonList> = None;
        for step in steps {
            let list = JsonList::render(step.clone(), last.as_ref());
            assert_eq!(*list.text, render_list(&step, true));
            last = Some(list);
        }
    }
}
