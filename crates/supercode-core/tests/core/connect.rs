//! Connecting coding agents as the window does it (issue 32 item 1): the plan shown first, the
//! change made only from that plan (its digest), on real settings files.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agent_hooks::agent::Agent;
use serde_json::Value;
use supercode_core::connect;
use supercode_core::view::{AgentConnection, CommandError, ErrorCode, HooksChange};

/// The hook program (`supercode-tray-hook`) in the test's directory, executable, as the installed one is.
fn program(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let program = bin.join("supercode-tray-hook");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    program
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn code(error: supercode_core::CoreError) -> CommandError {
    error.into()
}

const USERS_OWN: &str = r#"{
  "model": "opus",
  "hooks": {
    "PreToolUse": [ { "matcher": "Bash", "hooks": [ { "type": "command", "command": "my-linter" } ] } ]
  }
}"#;

/// Connect shows what it adds, then writes exactly that: the user's own hook and keys stay, a
/// backup of the file as it was is kept, and connecting again has nothing to do.
#[test]
fn connect_keeps_the_users_hooks_and_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let program = program(dir.path());
    let path = dir.path().join("settings.json");
    write_private(&path, USERS_OWN);
    let agent = Agent::ClaudeCode;

    let before = connect::agent_view(agent, &path);
    assert_eq!(before.connection, AgentConnection::NotConnected);
    assert!(before.connect.available && !before.disconnect.applies);

    let plan = connect::plan_view(agent, &path, &program, HooksChange::Connect).unwrap();
    assert!(!plan.nothing_to_do);
    assert!(
        plan.preview.contains(&path.display().to_string()),
        "{}",
        plan.preview
    );
    assert!(
        plan.preview.contains("supercode-tray-hook claude-code"),
        "{}",
        plan.preview
    );
    let backup = plan.backup.clone().expect("a backup of the existing file");
    connect::apply(agent, &path, &program, HooksChange::Connect, &plan.digest).unwrap();

    let after = read_json(&path);
    assert_eq!(after["model"], "opus");
    let pre = after["hooks"]["PreToolUse"].as_array().unwrap();
    assert_eq!(
        pre[0]["hooks"][0]["command"], "my-linter",
        "the user's hook comes first, kept"
    );
    assert_eq!(pre.len(), 2);
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), USERS_OWN);
    let view = connect::agent_view(agent, &path);
    assert_eq!(
        view.connection,
        AgentConnection::Connected,
        "{}",
        view.summary
    );
    assert!(!view.connect.applies && view.disconnect.available);

    let again = connect::plan_view(agent, &path, &program, HooksChange::Connect).unwrap();
    assert!(
        again.nothing_to_do && again.backup.is_none(),
        "{}",
        again.preview
    );
    let written = std::fs::read(&path).unwrap();
    connect::apply(agent, &path, &program, HooksChange::Connect, &again.digest).unwrap();
    assert_eq!(
        std::fs::read(&path).unwrap(),
        written,
        "connecting twice changes nothing"
    );

    // Disconnect takes out exactly what Connect added.
    let remove = connect::plan_view(agent, &path, &program, HooksChange::Disconnect).unwrap();
    assert!(
        remove.preview.starts_with("Removes from"),
        "{}",
        remove.preview
    );
    connect::apply(
        agent,
        &path,
        &program,
        HooksChange::Disconnect,
        &remove.digest,
    )
    .unwrap();
    assert_eq!(
        read_json(&path),
        serde_json::from_str::<Value>(USERS_OWN).unwrap()
    );
    assert_eq!(
        connect::agent_view(agent, &path).connection,
        AgentConnection::NotConnected
    );
}

/// A file changed after its preview was shown is not written: the change is refused as
/// `planChanged` and the file keeps what the other writer put there.
#[test]
fn a_change_to_the_file_since_the_preview_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let program = program(dir.path());
    let path = dir.path().join("settings.json");
    write_private(&path, USERS_OWN);
    let plan =
        connect::plan_view(Agent::ClaudeCode, &path, &program, HooksChange::Connect).unwrap();
    let changed = r#"{ "model": "sonnet" }"#;
    write_private(&path, changed);
    let error = code(
        connect::apply(
            Agent::ClaudeCode,
            &path,
            &program,
            HooksChange::Connect,
            &plan.digest,
        )
        .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::PlanChanged, "{}", error.message);
    assert!(
        error.message.contains("review it again"),
        "{}",
        error.message
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), changed);
    assert!(!dir.path().join("settings.json.supercode-backup").exists());

    // A new program path is another plan too: what was shown is what runs.
    let other = program
        .with_file_name("elsewhere")
        .join("supercode-tray-hook");
    let fresh =
        connect::plan_view(Agent::ClaudeCode, &path, &program, HooksChange::Connect).unwrap();
    let error = code(
        connect::apply(
            Agent::ClaudeCode,
            &path,
            &other,
            HooksChange::Connect,
            &fresh.digest,
        )
        .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::PlanChanged);
}

/// A settings file that is a symbolic link, or not JSON, is refused with the reason, in the
/// state and in the plan, and never written.
#[test]
fn a_link_or_a_file_that_is_not_json_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let program = program(dir.path());
    let target = dir.path().join("real.json");
    write_private(&target, USERS_OWN);
    let link = dir.path().join("settings.json");
    std::os::unix::fs::symlink(&target, &link).unwrap();

    let view = connect::agent_view(Agent::Codex, &link);
    assert_eq!(view.connection, AgentConnection::Problem);
    assert!(view.summary.contains("link"), "{}", view.summary);
    assert!(!view.connect.available && view.connect.reason.is_some());
    let error =
        code(connect::plan_view(Agent::Codex, &link, &program, HooksChange::Connect).unwrap_err());
    assert_eq!(error.code, ErrorCode::Refused);
    assert!(error.message.contains("link"), "{}", error.message);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), USERS_OWN);

    let broken = dir.path().join("broken.json");
    write_private(&broken, "{ not json");
    let error = code(
        connect::plan_view(
            Agent::ClaudeCode,
            &broken,
            &program,
            HooksChange::Disconnect,
        )
        .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::Refused);
    assert!(error.message.contains("not changed"), "{}", error.message);
    assert_eq!(std::fs::read_to_string(&broken).unwrap(), "{ not json");
}

/// Codex: installed but not yet trusted in Codex says what is left to do there.
#[test]
fn codex_installed_but_untrusted_says_to_trust_them_in_codex() {
    let dir = tempfile::tempdir().unwrap();
    let program = program(dir.path());
    let path = dir.path().join("hooks.json");
    let plan = connect::plan_view(Agent::Codex, &path, &program, HooksChange::Connect).unwrap();
    assert!(plan.backup.is_none(), "no file yet, so no backup");
    let outcome = connect::apply(
        Agent::Codex,
        &path,
        &program,
        HooksChange::Connect,
        &plan.digest,
    )
    .unwrap();
    assert!(
        outcome.message.contains("Hooks need review"),
        "{}",
        outcome.message
    );
    assert!(read_json(&path)["hooks"].is_object());
    // Agent::trust reads $CODEX_HOME/config.toml, which this test leaves alone: whatever it
    // finds, an installed entry that is not trusted there is told as what is left to do.
    let view = connect::agent_view(Agent::Codex, &path);
    let trust = view
        .trust
        .expect("Codex's trust is told once its hooks are installed");
    assert!(
        trust.contains("Hooks need review") || trust.contains("cannot tell"),
        "{trust}"
    );
}

/// Codex entries an earlier version wrote (a tool's start and end waited for) are told as such,
/// and connecting again makes them run in the background, in place.
#[test]
fn codex_entries_of_an_earlier_version_are_told_and_brought_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let program = program(dir.path());
    let path = dir.path().join("hooks.json");
    connect_codex(&path, &program);
    let mut earlier = read_json(&path);
    for event in ["PreToolUse", "PostToolUse"] {
        let hook = &mut earlier["hooks"][event][0]["hooks"][0];
        assert_eq!(hook["async"], true, "{event} runs in the background");
        hook.as_object_mut().unwrap().remove("async");
    }
    write_private(&path, &serde_json::to_string_pretty(&earlier).unwrap());

    let view = connect::agent_view(Agent::Codex, &path);
    assert_eq!(view.connection, AgentConnection::Partly, "{}", view.summary);
    assert_eq!(
        view.summary,
        "connected by an earlier version; connecting again updates its entries for PreToolUse, PostToolUse"
    );
    assert!(view.connect.applies, "connecting again is offered");

    connect_codex(&path, &program);
    let after = read_json(&path);
    for event in ["PreToolUse", "PostToolUse"] {
        let entries = after["hooks"][event].as_array().unwrap();
        assert_eq!(
            entries.len(),
            1,
            "{event}: updated in place, not added twice"
        );
        assert_eq!(entries[0]["hooks"][0]["async"], true, "{event}");
    }
    let view = connect::agent_view(Agent::Codex, &path);
    assert_eq!(
        view.connection,
        AgentConnection::Connected,
        "{}",
        view.summary
    );
}

/// Connects Codex as the window does: the plan, then the change it shows.
fn connect_codex(path: &Path, program: &Path) {
    let plan = connect::plan_view(Agent::Codex, path, program, HooksChange::Connect).unwrap();
    connect::apply(
        Agent::Codex,
        path,
        program,
        HooksChange::Connect,
        &plan.digest,
    )
    .unwrap();
}
