//! The UI's TypeScript types are generated from the Rust view types and committed in
//! `ui/src/bindings/`. This test fails when they drift; run it with `UPDATE_BINDINGS=1` to
//! regenerate them after changing a view type.

use std::path::{Path, PathBuf};

use supercode_core::view::*;
use ts_rs::TS;

const HEADER: &str = "// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.\n";

fn bindings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ui/src/bindings")
}

/// Every exported type's TypeScript, by file name.
fn generated() -> Vec<(String, String)> {
    fn one<T: TS + 'static>() -> (String, String) {
        let mut deps: Vec<String> = T::dependencies().into_iter().map(|d| d.ts_name).collect();
        deps.sort();
        deps.dedup();
        let imports: String = deps
            .iter()
            .filter(|d| **d != T::name())
            .map(|d| format!("import type {{ {d} }} from \"./{d}\";\n"))
            .collect();
        let body = format!("export {}\n", T::decl());
        let sep = if imports.is_empty() { "" } else { "\n" };
        (
            format!("{}.ts", T::name()),
            format!("{HEADER}{imports}{sep}{body}"),
        )
    }
    vec![
        one::<ActOutcome>(),
        one::<ActionAvailability>(),
        one::<AgentActionView>(),
        one::<AgentConnection>(),
        one::<AgentState>(),
        one::<AgentStateView>(),
        one::<CodingAgentView>(),
        one::<CommandError>(),
        one::<ControllerKind>(),
        one::<ControllerView>(),
        one::<ErrorCode>(),
        one::<ExitedView>(),
        one::<FileWarning>(),
        one::<HooksChange>(),
        one::<HooksOutcome>(),
        one::<HooksPlanView>(),
        one::<IgnoredFile>(),
        one::<IgnoredLocation>(),
        one::<PendingState>(),
        one::<PendingView>(),
        one::<PlanEnvVar>(),
        one::<ReviveOutcome>(),
        one::<RevivePlanView>(),
        one::<RuntimeOrigin>(),
        one::<RuntimeStatus>(),
        one::<RuntimeView>(),
        one::<SecretStoreKindView>(),
        one::<SecretStoreView>(),
        one::<Snapshot>(),
        one::<SnapshotCounts>(),
        one::<DesktopNotice>(),
        one::<SourceView>(),
    ]
}

/// What the core decides for each registration state, as a TypeScript table: the mock backend
/// and the UI's tests render from it, so the rule is written once, in Rust.
fn pending_rules() -> (String, String) {
    let mut rows = String::new();
    for state in PendingState::ALL {
        let view = PendingView::new(
            String::new(),
            None,
            state,
            String::new(),
            String::new(),
            None,
        );
        let value = serde_json::json!({
            "approve": view.approve,
            "dismiss": view.dismiss,
            "over": view.over,
        });
        let key = serde_json::to_value(state).unwrap();
        rows.push_str(&format!("  {}: {},\n", key, value));
    }
    (
        "pendingRules.ts".into(),
        format!(
            "{HEADER}import type {{ PendingState }} from \"./PendingState\";\nimport type {{ PendingView }} from \"./PendingView\";\n\n/** What the core decides for a registration in each state (`PendingView::new`). */\nexport const PENDING_RULES: Record<PendingState, Pick<PendingView, \"approve\" | \"dismiss\" | \"over\">> = {{\n{rows}}};\n"
        ),
    )
}

/// What the core decides for each agent state, as a TypeScript table, for the same reason.
fn agent_rules() -> (String, String) {
    let mut rows = String::new();
    for state in AgentState::ALL {
        let value = serde_json::json!({
            "needsYou": state.needs_you(),
            "trouble": state.is_trouble(),
            "urgency": state.urgency(),
        });
        let key = serde_json::to_value(state).unwrap();
        rows.push_str(&format!("  {}: {},\n", key, value));
    }
    (
        "agentRules.ts".into(),
        format!(
            "{HEADER}import type {{ AgentState }} from \"./AgentState\";\n\n/** What the core decides for an agent in each state (`AgentState::needs_you`, `is_trouble`, `urgency`: lower sorts first). */\nexport const AGENT_RULES: Record<AgentState, {{ needsYou: boolean, trouble: boolean, urgency: number }}> = {{\n{rows}}};\n"
        ),
    )
}

/// The characters the shells show as visible escapes (`text::HIDDEN_CONTROLS`), so the window
/// renders what a user confirms (a revive plan) by the rule the CLI prints it with.
fn text_rules() -> (String, String) {
    let ranges: Vec<String> = supercode_core::text::HIDDEN_CONTROLS
        .iter()
        .map(|&(first, last)| format!("[0x{:x}, 0x{:x}]", u32::from(first), u32::from(last)))
        .collect();
    (
        "textRules.ts".into(),
        format!(
            "{HEADER}/** The code points, as inclusive ranges, that would act rather than show (controls, line separators, bidirectional overrides): rendered as visible `\\u{{..}}` escapes (`text::HIDDEN_CONTROLS`). */\nexport const HIDDEN_CONTROLS: readonly (readonly [number, number])[] = [{}];\n",
            ranges.join(", ")
        ),
    )
}

/// The event names and the error codes the UI recognizes, from the Rust constants, so the
/// window and the app cannot spell them differently.
fn wire() -> (String, String) {
    let codes: Vec<String> = ErrorCode::ALL
        .iter()
        .map(|c| serde_json::to_value(c).unwrap().to_string())
        .collect();
    (
        "wire.ts".into(),
        format!(
            "{HEADER}import type {{ ErrorCode }} from \"./ErrorCode\";\n\n/** The Tauri event carrying a fresh `Snapshot` whenever the inventory changes (`view::events::SNAPSHOT`). */\nexport const SNAPSHOT_EVENT = {};\n\n/** The Tauri event asking the window to show one runtime's revive confirmation, payload its id (`view::events::CONFIRM_REVIVE`). */\nexport const CONFIRM_REVIVE_EVENT = {};\n\n/** The Tauri event asking the window to confirm one agent action, payload `{{ id, action }}` (`view::events::CONFIRM_ACT`). */\nexport const CONFIRM_ACT_EVENT = {};\n\n/** Every error code the backend sends (`ErrorCode::ALL`). */\nexport const ERROR_CODES: readonly ErrorCode[] = [{}];\n",
            serde_json::to_string(events::SNAPSHOT).unwrap(),
            serde_json::to_string(events::CONFIRM_REVIVE).unwrap(),
            serde_json::to_string(events::CONFIRM_ACT).unwrap(),
            codes.join(", "),
        ),
    )
}

fn index(files: &[(String, String)]) -> String {
    let mut out = String::from(HEADER);
    for (name, _) in files {
        let stem = name.trim_end_matches(".ts");
        out.push_str(&format!("export type {{ {stem} }} from \"./{stem}\";\n"));
    }
    out
}

/// Every type in view.rs that derives `TS`, read from its source: ts-rs cannot list them, so
/// this is what makes a type missing from [`generated`] fail the test instead of going unexported.
fn ts_types_in_view_rs() -> Vec<String> {
    let source = include_str!("../src/view.rs");
    let mut names = Vec::new();
    let mut derives_ts = false;
    for line in source.lines().map(str::trim) {
        if line.starts_with("#[derive(") {
            derives_ts = line.contains(" TS") || line.contains("(TS");
        } else if let Some(rest) = line
            .strip_prefix("pub struct ")
            .or_else(|| line.strip_prefix("pub enum "))
        {
            if derives_ts {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                names.push(name);
            }
            derives_ts = false;
        }
    }
    names
}

#[test]
fn every_ts_type_in_view_rs_is_exported() {
    let exported: Vec<String> = generated()
        .into_iter()
        .map(|(file, _)| file.trim_end_matches(".ts").to_owned())
        .collect();
    let found = ts_types_in_view_rs();
    assert!(
        found.len() >= exported.len(),
        "the scan found too few: {found:?}"
    );
    let missing: Vec<&String> = found.iter().filter(|n| !exported.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "view.rs types derive TS but are not in `generated()` in tests/bindings.rs: {missing:?}"
    );
}

#[test]
fn committed_typescript_bindings_match_the_rust_view_types() {
    let dir = bindings_dir();
    let mut files = generated();
    files.push(("index.ts".into(), index(&files)));
    files.push(pending_rules());
    files.push(agent_rules());
    files.push(text_rules());
    files.push(wire());
    if std::env::var_os("UPDATE_BINDINGS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "ts") {
                std::fs::remove_file(path).unwrap();
            }
        }
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        return;
    }
    let mut drifted = Vec::new();
    for (name, text) in &files {
        let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        if &committed != text {
            drifted.push(name.clone());
        }
    }
    assert!(
        drifted.is_empty(),
        "ui/src/bindings drifted from crates/supercode-core/src/view.rs: {drifted:?}; regenerate with UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings"
    );
}
