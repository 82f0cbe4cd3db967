//! Issue 31, item 8: a runtime that stopped unexpectedly and cannot be revived stays in the
//! inventory as `exited`, with its agent's last state, until the user dismisses it, whoever
//! reconciled its receipt (the app's watcher or the CLI's `list`) and across restarts.

use std::process::{Child, Command, Stdio};

use supercode_core::exited::EXITED_FILE;
use supercode_core::view::{AgentState, IgnoredLocation, RuntimeOrigin, RuntimeStatus, Snapshot};
use supercode_core::{CoreError, CoreEvent};

use crate::support::{find, first_line_with, recorder, tray_binary, Fixture, TIMEOUT};

/// A real demo runtime process (the app binary's `demo-runtime`) and its endpoint; SIGKILLed
/// however the test ends.
struct Demo {
    child: Child,
    endpoint: String,
}

impl Demo {
    fn start(bin: &std::path::Path, fixture: &Fixture, name: &str, scenario: &str) -> Self {
        let mut child = Command::new(bin)
            .args(["demo-runtime", "--name", name, "--scenario", scenario])
            .current_dir(fixture.workspace())
            .envs(fixture.child_env())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let endpoint = format!("lre_{}", first_line_with(&mut child, "lre_"));
        Self { child, endpoint }
    }

    /// SIGKILL and reap: its receipt stays behind, as after a crash.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.kill();
    }
}

fn exited<'a>(snapshot: &'a Snapshot, id: &str) -> Option<&'a supercode_core::view::RuntimeView> {
    find(snapshot, id).filter(|r| r.status == RuntimeStatus::Exited)
}

// Proves: a SIGKILLed runtime whose agent needed approval is shown as exited (not running, not
// needing anyone, only Dismiss to do) with that last state, is told as a death that cannot be
// revived, stays so in a core started afresh, and is gone once dismissed, for good.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigkilled_runtime_stays_exited_with_its_last_state_until_dismissed_issue_31() {
    let Some(bin) = tray_binary("a_sigkilled_runtime_stays_exited") else {
        return;
    };
    let fixture = Fixture::new();
    let (sink, mut events) = recorder();
    let core = fixture.core_with(sink);
    let watch = core.watch();
    let mut demo = Demo::start(&bin, &fixture, "gone-bot", "approval");
    let id = demo.endpoint.clone();
    tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the agent asking for approval", TIMEOUT, |s| {
            find(s, &id).is_some_and(|r| {
                r.state
                    .as_ref()
                    .is_some_and(|s| s.value == AgentState::NeedsApproval)
            })
        })
    });

    demo.kill();
    let (_, shown) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the runtime shown as exited", TIMEOUT, |s| {
            exited(s, &id).is_some()
        })
    });
    let view = exited(&shown, &id).unwrap();
    assert_eq!(view.name, "gone-bot");
    assert_eq!(view.origin, RuntimeOrigin::Exited);
    assert!(
        view.status_reason
            .as_deref()
            .is_some_and(|r| r.contains("stopped unexpectedly")),
        "{:?}",
        view.status_reason
    );
    let last = view.exited.as_ref().unwrap().last_state.as_ref().unwrap();
    assert_eq!(last.value, AgentState::NeedsApproval);
    assert!(last.title.is_some(), "{last:?}");
    assert!(view.state.is_none(), "an exited runtime asks nothing now");
    assert!(view.dismiss.available);
    for (action, availability) in [
        ("attach", &view.attach),
        ("forget", &view.forget),
        ("revive", &view.revive),
    ] {
        assert!(!availability.applies, "{action}: {availability:?}");
    }
    assert_eq!(shown.counts.exited, 1);
    assert_eq!(shown.counts.running, 0);
    assert_eq!(shown.counts.needs_you, 0, "an exited runtime needs no one");
    let died: Vec<(String, bool)> = events
        .seen
        .iter()
        .filter_map(|(_, e)| match e {
            CoreEvent::RuntimeDied { name, revivable } => Some((name.clone(), *revivable)),
            _ => None,
        })
        .collect();
    assert_eq!(died, vec![("gone-bot".to_owned(), false)]);
    assert!(
        !fixture
            .receipts()
            .receipt_path(&id.parse().unwrap())
            .exists(),
        "its receipt was reconciled away"
    );
    // By its name, as the CLI and the window resolve it: every other action is refused.
    assert!(core.attach("gone-bot").await.is_err());
    assert!(core.forget("gone-bot").is_err());
    drop(watch);
    drop(core);

    // A core started afresh (the app restarted) still shows it, with its last state.
    let restarted = fixture.core();
    let again = restarted.snapshot();
    let view = exited(&again, &id).expect("shown after a restart");
    assert_eq!(
        view.exited
            .as_ref()
            .unwrap()
            .last_state
            .as_ref()
            .map(|s| s.value),
        Some(AgentState::NeedsApproval)
    );

    assert_eq!(restarted.dismiss("gone-bot").await.unwrap(), "gone-bot");
    assert!(find(&restarted.snapshot(), &id).is_none(), "dismissed");
    assert!(
        find(&fixture.core().snapshot(), &id).is_none(),
        "dismissed for good"
    );
    assert!(matches!(
        restarted.dismiss(&id).await,
        Err(CoreError::UnknownRuntime { .. })
    ));
}

// Proves: with no app running, the CLI's `list` (the real binary) is what reconciles a killed
// runtime's receipt; it shows it as exited (no last state: nothing watched it), and so does the
// app's core started afterwards, until `dismiss` (the real binary) takes it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clis_list_reaping_a_dead_receipt_records_it_for_the_app_issue_31() {
    let Some(bin) = tray_binary("the_clis_list_reaping_a_dead_receipt") else {
        return;
    };
    let fixture = Fixture::new();
    let mut demo = Demo::start(&bin, &fixture, "cli-gone", "steady");
    let id = demo.endpoint.clone();
    demo.kill();
    let path = fixture.receipts().receipt_path(&id.parse().unwrap());
    assert!(path.exists());

    let cli = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .envs(fixture.child_env())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let listed = cli(&["list"]);
    assert!(listed.status.success(), "{listed:?}");
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    let row = text
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains(" exited ") && row.contains("cli-gone"),
        "{text}"
    );
    assert!(!path.exists(), "list reconciled the dead receipt");

    let app = fixture.core().snapshot();
    let view = exited(&app, &id).expect("the app shows what the CLI recorded");
    assert!(view.exited.as_ref().unwrap().last_state.is_none());

    let dismissed = cli(&["dismiss", "cli-gone"]);
    assert!(dismissed.status.success(), "{dismissed:?}");
    assert!(String::from_utf8_lossy(&dismissed.stdout).contains("Dismissed \"cli-gone\""));
    assert!(find(&fixture.core().snapshot(), &id).is_none());
    let text = String::from_utf8_lossy(&cli(&["list"]).stdout).into_owned();
    assert!(!text.contains("cli-gone"), "{text}");
}

// Proves: when the CLI's `list` reconciles first a killed runtime the app was showing (so it
// records it without a state, which it never saw), the app's next pass (the inventory's
// reconciliation with the app's last snapshot, as the watcher runs it) fills in the state the
// app showed, and the record keeps it across a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_death_the_cli_reaped_first_gets_the_state_the_app_showed_issue_31() {
    let Some(bin) = tray_binary("a_death_the_cli_reaped_first") else {
        return;
    };
    let fixture = Fixture::new();
    let mut demo = Demo::start(&bin, &fixture, "raced", "approval");
    let id = demo.endpoint.clone();
    let core = fixture.core();
    let deadline = std::time::Instant::now() + TIMEOUT;
    let shown = loop {
        let snapshot = core.snapshot_with_states().await;
        let asking = find(&snapshot, &id)
            .and_then(|r| r.state.as_ref())
            .is_some_and(|s| s.value == AgentState::NeedsApproval);
        if asking {
            break snapshot;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never asked"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    demo.kill();

    let listed = Command::new(&bin)
        .arg("list")
        .envs(fixture.child_env())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(listed.status.success(), "{listed:?}");
    let recorded = fixture.core().snapshot();
    let view = exited(&recorded, &id).expect("list recorded it");
    assert!(view.exited.as_ref().unwrap().last_state.is_none());

    let mut sources = supercode_core::inventory::Sources::read(&fixture.locations);
    let removed = sources.reconcile(&fixture.locations, Some(&shown));
    assert!(removed.is_empty(), "list had removed the receipt already");
    let filled = fixture.core().snapshot();
    let last = exited(&filled, &id)
        .and_then(|v| v.exited.as_ref())
        .and_then(|e| e.last_state.as_ref())
        .expect("the app's pass filled in the state it showed");
    assert_eq!(last.value, AgentState::NeedsApproval);
}

// Proves: a broken or hostile record (not JSON; a link) is shown as an ignored file with its
// reason, is never overwritten (a death is then not recorded: nothing in the file is lost), and
// the rest of the inventory is listed as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_record_is_ignored_with_its_reason_and_left_as_it_is_issue_31() {
    let Some(bin) = tray_binary("a_broken_record_is_ignored") else {
        return;
    };
    let fixture = Fixture::new();
    let state = &fixture.locations.state_dir;
    std::fs::create_dir_all(state).unwrap();
    let file = state.join(EXITED_FILE);
    std::fs::write(&file, b"{ not json").unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();

    let mut demo = Demo::start(&bin, &fixture, "unrecorded", "steady");
    let id = demo.endpoint.clone();
    demo.kill();
    let listed = fixture.core().reconcile_and_snapshot_with_states().await;
    let ignored = listed
        .ignored
        .iter()
        .find(|i| i.file == EXITED_FILE)
        .unwrap_or_else(|| panic!("{:?}", listed.ignored));
    assert_eq!(ignored.location, IgnoredLocation::State);
    assert!(
        ignored.reason.contains("not recorded"),
        "{}",
        ignored.reason
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"{ not json",
        "left as it was"
    );
    assert!(find(&listed, &id).is_none());

    // A link in its place is refused, not followed.
    std::fs::remove_file(&file).unwrap();
    let target = fixture.root.join("elsewhere.json");
    std::fs::write(&target, br#"{"version":1,"runtimes":[]}"#).unwrap();
    std::os::unix::fs::symlink(&target, &file).unwrap();
    let listed = fixture.core().snapshot();
    assert!(
        listed.ignored.iter().any(|i| i.file == EXITED_FILE),
        "{:?}",
        listed.ignored
    );
}
