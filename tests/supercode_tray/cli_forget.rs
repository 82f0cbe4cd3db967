//! `forget` and `dismiss` as a user runs them: what forget removes is shown and asked first,
//! an exited runtime stays listed until dismissed, and a stale catalog entry is forgotten by
//! name and nothing else with it.

use std::path::Path;
use std::process::Command;

use live_runtime::test_support::{self, ChildGuard};
use serde_json::Value;

use crate::cli::{assert_clean, run_on_a_terminal, stale_receipt_named, Home, TOKEN_CANARY};

/// Issue 31: `forget` shows exactly what it removes (the receipt's path, the token's store),
/// then removes nothing without `--yes` when stdin is not a terminal, nothing when the terminal
/// answers no, and exactly that receipt when it answers yes.
#[test]
fn issue_31_forget_shows_what_it_removes_and_asks_first() {
    let home = Home::new();
    let receipt = stale_receipt_named(&home, "leftover", &["/bin/true"], serde_json::json!({}));
    let file = home
        .path("receipts")
        .join(format!("{}.json", receipt.endpoint));
    let mut printed = String::new();

    let refused = home.run(&["forget", "leftover"], &mut printed);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let shown = String::from_utf8_lossy(&refused.stdout).into_owned();
    assert!(
        shown.contains("Forget \"leftover\" will remove:"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("its stale receipt {}", file.display())),
        "{shown}"
    );
    assert!(
        shown.contains("its token, if the plaintext file store"),
        "{shown}"
    );
    let message = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(message.contains("stdin is not a terminal"), "{message}");
    assert!(message.contains("--yes"), "{message}");
    assert!(file.exists(), "nothing is removed without a confirmation");

    let (code, terminal) = run_on_a_terminal(&home, &["forget", "leftover"], "n\n");
    assert_eq!(code, Some(1), "{terminal}");
    assert!(
        terminal.contains("Forget \"leftover\"? [y/N]"),
        "{terminal}"
    );
    assert!(terminal.contains("was not forgotten"), "{terminal}");
    assert!(file.exists(), "answered no, yet it was removed");

    let (code, terminal) = run_on_a_terminal(&home, &["forget", "leftover"], "y\n");
    assert_eq!(code, Some(0), "{terminal}");
    assert!(terminal.contains("Forgot \"leftover\""), "{terminal}");
    assert!(!file.exists(), "answered yes: the receipt shown is gone");
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}

/// Issue 31, item 8: a runtime whose process died without unregistering, and that nothing can
/// relaunch, stays in `list` as exited (with why) after `list` reconciled its receipt away;
/// forget refuses it saying to dismiss it, dismiss refuses a runtime that has not exited, and
/// `dismiss` takes it off, once. Its record holds nothing secret (no token, no address).
#[test]
fn issue_31_an_exited_runtime_is_listed_until_dismissed() {
    let home = Home::new();
    let holder = ChildGuard::sleep();
    let identity = holder.identity();
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let mut receipt = test_support::foreign_receipt(
        &endpoint,
        "crashed-bot",
        identity.pid,
        Some(identity.start_time),
    );
    receipt["token"] = serde_json::json!(TOKEN_CANARY);
    let file = test_support::write_receipt_file(
        &home.path("receipts"),
        &format!("{endpoint}.json"),
        &receipt,
    );
    drop(holder); // SIGKILL, reaped: it died without unregistering.
    let _stale = stale_receipt_named(&home, "leftover", &["/bin/true"], serde_json::json!({}));
    let mut printed = String::new();

    let listed = home.run(&["list"], &mut printed);
    assert!(listed.status.success(), "{listed:?}");
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    let row = text
        .lines()
        .position(|l| l.starts_with(endpoint.as_str()))
        .unwrap_or_else(|| panic!("{text}"));
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[row].contains(" exited ") && lines[row].contains("crashed-bot"),
        "{text}"
    );
    assert!(lines[row + 1].contains("stopped unexpectedly"), "{text}");
    assert!(!file.exists(), "list reconciled the dead receipt");
    // Its record is in the state directory, and holds nothing secret.
    let state = home.files_text("state");
    assert!(state.contains("crashed-bot"), "{state}");
    assert_clean(
        "the state directory",
        &state,
        &[TOKEN_CANARY, "127.0.0.1:9"],
    );
    let json: Value =
        serde_json::from_slice(&home.run(&["list", "--json"], &mut printed).stdout).unwrap();
    let view = json["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == endpoint.as_str())
        .unwrap();
    assert_eq!(view["status"], "exited");
    assert_eq!(view["dismiss"]["available"], true);
    assert_eq!(json["runtimes"].as_array().unwrap().len(), 2, "{json:#}");

    let forget = home.run(&["forget", "crashed-bot", "--yes"], &mut printed);
    assert_eq!(forget.status.code(), Some(1), "{forget:?}");
    assert!(
        String::from_utf8_lossy(&forget.stderr).contains("dismiss it instead"),
        "{forget:?}"
    );
    let not_exited = home.run(&["dismiss", "leftover"], &mut printed);
    assert_eq!(not_exited.status.code(), Some(1), "{not_exited:?}");
    assert!(
        String::from_utf8_lossy(&not_exited.stderr)
            .contains("Only a runtime that has exited can be dismissed"),
        "{not_exited:?}"
    );

    let dismissed = home.run(&["dismiss", "crashed-bot"], &mut printed);
    assert!(dismissed.status.success(), "{dismissed:?}");
    assert!(
        String::from_utf8_lossy(&dismissed.stdout).contains("Dismissed \"crashed-bot\"."),
        "{dismissed:?}"
    );
    let text = String::from_utf8_lossy(&home.run(&["list"], &mut printed).stdout).into_owned();
    assert!(!text.contains("crashed-bot"), "{text}");
    assert!(text.contains("leftover"), "{text}");
    let again = home.run(&["dismiss", endpoint.as_str()], &mut printed);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY, "127.0.0.1:9"]);
}

// Proves: `forget NAME` removes a stale Canon runtime entry's one file, as the package's
// `removeLocalRuntimeEntry` does, and leaves agents.json, locks and the other entries as they were;
// an entry that stopped normally is refused with a reason in plain words.
#[test]
fn issue_31_forget_removes_a_stale_canon_entry_by_name_and_nothing_else() {
    let home = Home::new();
    let mut printed = String::new();
    let canon = home.path("canon");
    let home_canon = canon_local::CanonHome::at(canon.clone()).unwrap();
    let dead_pid = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let entry = |name: &str, status: &str, pid: Option<u32>| {
        let id = format!("sdk:{name}:0123456789abcdef");
        let mut value = serde_json::json!({
            "id": id, "runtime": "sdk", "profile": name, "agentName": name,
            "cwd": canon.display().to_string(), "launchCommand": ["/bin/true", name],
            "status": status, "reviveCapability": "revivable",
            "lastStartedAt": "2026-12-01T10:00:00.000Z"
        });
        if let Some(pid) = pid {
            value["pid"] = pid.into();
        }
        let path = home_canon.runtime_path(&id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
        path
    };
    let crashed = entry("crashed", "running", Some(dead_pid));
    let stopped = entry("stopped", "offline", None);
    std::fs::write(
        canon.join("agents.json"),
        r#"{"crashed": {"apiKey": "k"}, "stopped": {"apiKey": "k"}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(canon.join("locks")).unwrap();
    // Held by a live process (a dead holder's lock is cleared by any reader, as the package does).
    std::fs::write(
        canon.join("locks/stopped.lock"),
        format!("{{\"pid\":{}}}", std::process::id()),
    )
    .unwrap();
    let read = |p: &Path| std::fs::read(p).unwrap();
    let kept = [
        (canon.join("agents.json"), read(&canon.join("agents.json"))),
        (
            canon.join("locks/stopped.lock"),
            read(&canon.join("locks/stopped.lock")),
        ),
        (stopped.clone(), read(&stopped)),
    ];

    let refused = home.run(&["forget", "stopped"], &mut printed);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let message = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(message.contains("stopped normally"), "{message}");
    assert!(!message.contains("catalog"), "{message}");

    let forgot = home.run(&["forget", "crashed", "--yes"], &mut printed);
    assert!(forgot.status.success(), "{forgot:?}");
    assert!(
        String::from_utf8_lossy(&forgot.stdout).contains("Forgot \"crashed\""),
        "{forgot:?}"
    );
    assert!(!crashed.exists());
    for (path, bytes) in &kept {
        assert_eq!(&read(path), bytes, "{}", path.display());
    }
    assert_eq!(
        std::fs::read_dir(canon.join("runtimes")).unwrap().count(),
        1
    );
}
