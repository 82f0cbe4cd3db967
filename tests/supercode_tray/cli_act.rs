//! `act` and `events` as a user runs them: an agent's state in `list`, `act` approving what it
//! offers (and refusing a destructive action unconfirmed), `events` streaming the change, and
//! an action sending nothing once the prompt changed after its look.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::cli::{agent_state, assert_clean, Home, START_TIMEOUT, TOKEN_CANARY};

/// Issue 15: `list --json` gives a running runtime its `state` (and the table a STATE column),
/// `act` refuses a destructive action without `--yes` off a terminal, approves with exit 0 and
/// refuses what is no longer offered with exit 1, and `events --json` prints the change as JSON
/// lines; the canary token is in none of it.
#[test]
fn list_shows_agent_state_act_approves_and_events_streams_the_change() {
    let home = Home::new();
    let token_file = home.canary_token_file();
    let demo = home.start_demo_with("agent", &token_file, &["--scenario", "approval"]);
    let endpoint = demo.endpoint.clone();
    let mut printed = String::new();
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    let list = loop {
        let list = home.list_json(&mut printed);
        if agent_state(&list, &endpoint).is_some_and(|s| s["value"] == "needs-approval") {
            break list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never needs-approval: {list}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let state = agent_state(&list, &endpoint).unwrap();
    assert_eq!(state["title"], "Run the test suite?");
    assert_eq!(state["actions"][0]["id"], "approve");
    assert_eq!(state["actions"][1]["destructive"], true);
    assert_eq!(state["controller"]["kind"], "none");
    let table = home.run(&["list"], &mut printed);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.contains("STATE"), "{table}");
    assert!(table.contains("needs-approval"), "{table}");

    // Destructive, stdin not a terminal, no --yes: refused before anything is sent.
    let deny = home.run(&["act", &endpoint, "deny"], &mut printed);
    assert_eq!(deny.status.code(), Some(1), "{deny:?}");
    assert!(String::from_utf8_lossy(&deny.stderr).contains("--yes"));

    let mut events = home
        .command(&["events", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = events.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let next_line = |lines: &mut Vec<String>| {
        let line = rx
            .recv_timeout(START_TIMEOUT)
            .expect("events printed a line");
        lines.push(line.clone());
        serde_json::from_str::<Value>(&line).expect("every line is JSON")
    };
    // The first snapshot says where it is now; then the approval moves it on.
    loop {
        let event = next_line(&mut lines);
        if event["type"] == "snapshot" {
            break;
        }
    }
    let approve = home.run(&["act", &endpoint, "approve"], &mut printed);
    assert!(approve.status.success(), "{approve:?}");
    assert!(String::from_utf8_lossy(&approve.stdout).contains("accepted Approve"));
    loop {
        let event = next_line(&mut lines);
        let state = event["snapshot"]["runtimes"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["endpoint"] == endpoint))
            .map(|r| r["state"]["value"].clone());
        if state.as_ref().is_some_and(|v| v == "needs-input") {
            break;
        }
    }
    let _ = events.kill();
    let _ = events.wait();

    let again = home.run(&["act", &endpoint, "approve"], &mut printed);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("does not offer"));

    printed.push_str(&lines.join("\n"));
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
    assert_clean("the log", &home.files_text("logs"), &[TOKEN_CANARY]);
}

/// Issue 29, reproduced as reported: a runtime (a raw-socket one that takes every action
/// posted, whatever its revision) answers the first look with "Run the unit tests?" (nothing to
/// ask) and every later one with "Drop the production database?" (destructive, asked).
/// `act ID approve </dev/null` decides and sends from one look: the prompt changed after it, so
/// it exits 1 saying so and nothing reaches the runtime. Looking again, the question needs a
/// terminal or `--yes`; with `--yes` the revision of that look is what is sent.
#[test]
fn issue_29_act_sends_nothing_when_the_prompt_changed_after_its_look() {
    use live_runtime::test_support::prompt_runtime::{bait_and_switch, Posted, PromptRuntime};
    use live_runtime::{LiveRuntimeMetadata, LiveRuntimeSource, ReceiptDir, SecretStore};

    let home = Home::new();
    let receipts = ReceiptDir::new(
        home.path("receipts"),
        SecretStore::file(home.path("secrets")),
    );
    let runtime = PromptRuntime::start(TOKEN_CANARY, bait_and_switch());
    let registration = live_runtime::register_live_runtime_with_metadata(
        &receipts,
        "test:switcher",
        LiveRuntimeSource {
            session_id: "session-switcher".into(),
            workspace: home.path("workspace"),
        },
        runtime.address(),
        live_runtime::Sensitive::new(TOKEN_CANARY.to_owned()),
        LiveRuntimeMetadata {
            runtime_kind: "sdk".into(),
            display_name: Some("switcher".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let endpoint = registration.endpoint().to_string();
    runtime.advance_after_gets(1);
    let mut printed = String::new();

    let act = home.run(&["act", &endpoint, "approve"], &mut printed);
    let stderr = String::from_utf8_lossy(&act.stderr);
    assert_eq!(act.status.code(), Some(1), "{act:?}");
    assert!(stderr.contains("changed since it was shown"), "{stderr}");
    assert!(stderr.contains("look again"), "{stderr}");
    assert_eq!(runtime.posted(), [], "nothing reached the runtime");

    let asked = home.run(&["act", &endpoint, "approve"], &mut printed);
    let stderr = String::from_utf8_lossy(&asked.stderr);
    assert_eq!(asked.status.code(), Some(1), "{asked:?}");
    assert!(stderr.contains("Drop the production database?"), "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(runtime.posted(), [], "nothing reached the runtime");

    let yes = home.run(&["act", &endpoint, "approve", "--yes"], &mut printed);
    assert!(yes.status.success(), "{yes:?}");
    assert_eq!(
        runtime.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(2)
        }],
        "the revision of the look it decided from"
    );
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}
