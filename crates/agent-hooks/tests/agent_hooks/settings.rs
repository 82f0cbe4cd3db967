//! Installing and removing our hook entries in a real settings file (issue 32, item 1).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agent_hooks::claude_code::HOOKS;
use agent_hooks::settings::{HooksError, Installed};
use serde_json::{json, Value};

fn program(dir: &Path) -> PathBuf {
    executable(dir, "supercode-tray-hook")
}

fn executable(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join("bin").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn users_own() -> Value {
    json!({
        "model": "opus",
        "permissions": { "allow": ["Bash(ls:*)"] },
        "hooks": {
            "PreToolUse": [
                { "matcher": "Bash", "hooks": [{ "type": "command", "command": "/home/me/audit.sh" }] }
            ],
            "Stop": [ { "hooks": [{ "type": "command", "command": "notify-send done" }] } ]
        },
        "statusLine": { "type": "command", "command": "echo hi" }
    })
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

// Proves: install keeps every other key and every hook of the user's own, adds one entry per
// event, is idempotent, keeps a backup, and remove takes out exactly what it added.
#[test]
fn install_merges_and_remove_restores_the_users_settings_exactly() {
    let temp = tempfile::tempdir().unwrap();
    let program = program(temp.path());
    let path = temp.path().join("settings.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&users_own()).unwrap()).unwrap();

    let plan = HOOKS.plan_install(&path, &program).unwrap();
    assert!(!plan.nothing_to_do);
    assert!(
        plan.preview.contains("PermissionRequest"),
        "{}",
        plan.preview
    );
    assert!(plan.preview.contains(&program.display().to_string()));
    plan.apply().unwrap();
    let installed = read(&path);
    assert_eq!(installed["model"], "opus");
    assert_eq!(installed["statusLine"], users_own()["statusLine"]);
    assert_eq!(
        installed["hooks"]["PreToolUse"][0],
        users_own()["hooks"]["PreToolUse"][0]
    );
    assert_eq!(
        installed["hooks"]["PreToolUse"].as_array().unwrap().len(),
        2
    );
    assert_eq!(
        installed["hooks"]["Stop"][0],
        users_own()["hooks"]["Stop"][0]
    );
    let ours = &installed["hooks"]["PermissionRequest"][0]["hooks"][0];
    assert_eq!(
        ours["command"],
        format!("{} claude-code", program.display())
    );
    assert_eq!(
        read(&plan.backup_path().unwrap()),
        users_own(),
        "the backup is the file before"
    );
    assert_eq!(
        ours.get("async"),
        None,
        "Claude Code waits for a permission hook"
    );
    assert_eq!(
        installed["hooks"]["PreToolUse"][1]["hooks"][0]["async"], true,
        "a tool's start and end run in the background"
    );
    assert_eq!(
        installed["hooks"]["PostToolUse"][0]["hooks"][0]["async"],
        true
    );
    let status = HOOKS.status(&path);
    assert_eq!(status.installed, Installed::Yes, "{status:?}");
    assert!(status.binary_exists);
    assert!(status.outdated_events.is_empty(), "{status:?}");

    let again = HOOKS.plan_install(&path, &program).unwrap();
    assert!(again.nothing_to_do, "installing twice adds nothing");
    again.apply().unwrap();
    assert_eq!(read(&path), installed);

    let removal = HOOKS.plan_remove(&path).unwrap();
    assert!(removal.preview.contains("Removes"));
    removal.apply().unwrap();
    assert_eq!(
        read(&path),
        users_own(),
        "remove leaves exactly the user's own settings"
    );
    assert_eq!(HOOKS.status(&path).installed, Installed::No);
    assert!(HOOKS.plan_remove(&path).unwrap().nothing_to_do);
}

// Proves: with no settings file at all, install creates one with only our hooks, and remove
// leaves an empty object rather than a "hooks" we emptied.
#[test]
fn install_creates_a_missing_file_and_status_notices_a_missing_program() {
    let temp = tempfile::tempdir().unwrap();
    let program = program(temp.path());
    let path = temp.path().join("claude").join("settings.json");
    let plan = HOOKS.plan_install(&path, &program).unwrap();
    assert!(plan.backup_path().is_none());
    plan.apply().unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    std::fs::remove_file(&program).unwrap();
    let status = HOOKS.status(&path);
    assert_eq!(status.installed, Installed::Yes);
    assert!(!status.binary_exists, "the hook's program is gone");
    HOOKS.plan_remove(&path).unwrap().apply().unwrap();
    assert_eq!(read(&path), json!({}));
}

// Proves: entries installed by earlier versions (the `supercode-tray hook claude-code`
// command, every event waited for) are ours: status counts them and says they are outdated,
// install brings them up to date in place (the hook program; a tool's start and end in the
// background; nothing added beside them, the user's own hooks untouched), and remove takes
// them out.
#[test]
fn install_points_entries_of_the_old_command_at_the_hook_program() {
    let temp = tempfile::tempdir().unwrap();
    let program = program(temp.path());
    let old = executable(temp.path(), "supercode-tray");
    let path = temp.path().join("settings.json");
    let mut settings = users_own();
    let old_entry = |command: String| json!({"hooks": [{"type": "command", "command": command, "timeout": 10}]});
    for entry in HOOKS.entries {
        let groups = settings["hooks"]
            .as_object_mut()
            .unwrap()
            .entry(entry.event)
            .or_insert_with(|| json!([]));
        groups
            .as_array_mut()
            .unwrap()
            .push(old_entry(format!("{} hook claude-code", old.display())));
    }
    std::fs::write(&path, settings.to_string()).unwrap();
    let before = HOOKS.status(&path);
    assert_eq!(before.installed, Installed::Yes, "{before:?}");
    assert!(before.binary_exists);
    let every_event: Vec<&str> = HOOKS.entries.iter().map(|e| e.event).collect();
    assert_eq!(before.outdated_events, every_event);

    let plan = HOOKS.plan_install(&path, &program).unwrap();
    assert!(!plan.nothing_to_do);
    plan.apply().unwrap();
    let upgraded = read(&path);
    for entry in HOOKS.entries {
        let groups = upgraded["hooks"][entry.event].as_array().unwrap();
        let ours: Vec<&Value> = groups
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| HOOKS.is_ours(h["command"].as_str().unwrap()))
            .collect();
        assert_eq!(ours.len(), 1, "{}: {groups:?}", entry.event);
        assert_eq!(
            ours[0]["command"],
            format!("{} claude-code", program.display())
        );
        assert_eq!(
            ours[0].get("async").is_some_and(|a| a == true),
            entry.background,
            "{}",
            entry.event
        );
    }
    assert!(HOOKS.status(&path).outdated_events.is_empty());
    // An entry of the current program that is waited for where it should run in the background
    // (as the previous version wrote it) is outdated too, and install fixes just that.
    let mut waited = upgraded.clone();
    waited["hooks"]["PostToolUse"][0]["hooks"][0]
        .as_object_mut()
        .unwrap()
        .remove("async");
    std::fs::write(&path, waited.to_string()).unwrap();
    assert_eq!(HOOKS.status(&path).outdated_events, ["PostToolUse"]);
    HOOKS
        .plan_install(&path, &program)
        .unwrap()
        .apply()
        .unwrap();
    assert_eq!(read(&path), upgraded);
    assert_eq!(
        upgraded["hooks"]["PreToolUse"][0],
        users_own()["hooks"]["PreToolUse"][0]
    );
    HOOKS.plan_remove(&path).unwrap().apply().unwrap();
    let mut expected = users_own();
    expected["hooks"]
        .as_object_mut()
        .unwrap()
        .retain(|event, _| ["PreToolUse", "Stop"].contains(&event.as_str()));
    assert_eq!(read(&path), expected);
}

// Proves: a file that is a symlink, not JSON, not an object, or writable by others is refused
// with the reason and never changed.
#[test]
fn bad_settings_files_are_refused_and_left_alone() {
    let temp = tempfile::tempdir().unwrap();
    let program = program(temp.path());
    let real = temp.path().join("real.json");
    std::fs::write(&real, "{}").unwrap();
    let link = temp.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let refused = HOOKS.plan_install(&link, &program).unwrap_err();
    assert!(matches!(refused, HooksError::Refused { .. }), "{refused}");
    assert!(refused.to_string().contains("symbolic link"), "{refused}");

    for (name, text) in [
        ("broken.json", "{ \"hooks\": "),
        ("array.json", "[1, 2]"),
        ("hooks.json", "{\"hooks\": 3}"),
    ] {
        let path = temp.path().join(name);
        std::fs::write(&path, text).unwrap();
        let error = HOOKS.plan_install(&path, &program).unwrap_err();
        assert!(
            matches!(error, HooksError::NotSettings { .. }),
            "{name}: {error}"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "{name} unchanged"
        );
        assert!(HOOKS.status(&path).problem.is_some());
    }

    let open = temp.path().join("open.json");
    std::fs::write(&open, "{}").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).unwrap();
    let error = HOOKS.plan_install(&open, &program).unwrap_err();
    assert!(error.to_string().contains("write"), "{error}");
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "{}");
}
