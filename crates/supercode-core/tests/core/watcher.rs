//! The watcher (issues 4 and 6): file changes and process exits reach the sink promptly, without
//! waiting for the reconcile tick; deaths are told apart from clean exits.

use std::fs::OpenOptions;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use canon_local::PendingPatch;
use live_runtime::Sensitive;
use supercode_core::approvals::ApprovalBoard;
use supercode_core::view::{PendingState, RuntimeStatus};
use supercode_core::watch::RECONCILE_INTERVAL;
use supercode_core::CoreEvent;

use crate::support::{find, recorder, register, wait_until, Fixture, RuntimeProcess, TIMEOUT};

/// Whether `snapshot` shows `id` as no longer running: a runtime that died stays, as exited,
/// until dismissed (issue 31).
fn exited(snapshot: &supercode_core::view::Snapshot, id: &str) -> bool {
    find(snapshot, id).is_some_and(|r| r.status == RuntimeStatus::Exited)
}

/// What "promptly" means here: well inside the reconcile tick, so only the file watch or the
/// pidfd can explain it, yet loose enough for a loaded CI machine.
fn prompt() -> Duration {
    RECONCILE_INTERVAL / 4
}

#[test]
fn watch_publishes_the_inventory_at_start() {
    let fx = Fixture::new();
    let (registration, _listener) = register(fx.receipts(), "early", "tok", None);
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);

    let _watch = core.watch();

    let (_, first) = events.wait_for("the first event", TIMEOUT, |_| true);
    let CoreEvent::Snapshot(snapshot) = first else {
        panic!("the first event is not a snapshot: {first:?}");
    };
    assert!(find(&snapshot, registration.endpoint().as_str()).is_some());
}

#[test]
fn a_registered_receipt_reaches_the_sink_as_a_snapshot_promptly() {
    let fx = Fixture::new();
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    events.wait_for_snapshot("the initial snapshot", TIMEOUT, |_| true);

    let mut latencies = Vec::new();
    for round in 0..5 {
        let start = Instant::now();
        let (registration, _listener) = register(fx.receipts(), &format!("r{round}"), "tok", None);
        let id = registration.endpoint().to_string();
        let (at, _) = events.wait_for_snapshot("the new receipt", TIMEOUT, |s| {
            find(s, &id).is_some_and(|r| r.status == RuntimeStatus::Running)
        });
        latencies.push(at - start);
        let start = Instant::now();
        drop(registration);
        let (at, _) =
            events.wait_for_snapshot("the receipt's removal", TIMEOUT, |s| find(s, &id).is_none());
        latencies.push(at - start);
    }
    eprintln!("receipt change -> snapshot latencies: {latencies:?}");
    let worst = latencies.iter().max().unwrap();
    assert!(*worst < prompt(), "worst latency {worst:?}");
}

/// The kill happens while the watcher is idle (after a file change it has already answered), so
/// only the pidfd can explain a prompt removal.
#[test]
fn a_sigkilled_runtime_leaves_the_inventory_via_its_pidfd_before_the_tick_and_is_reported_dead() {
    let fx = Fixture::new();
    let mut runtime = RuntimeProcess::start(&fx, "doomed");
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    events.wait_for_snapshot("the runtime listed running", TIMEOUT, |s| {
        find(s, &runtime.endpoint).is_some_and(|r| r.status == RuntimeStatus::Running)
    });
    // Past the watcher's start-up rescans: answer one file change, then it is idle.
    let (marker, _marker_listener) = register(fx.receipts(), "marker", "tok", None);
    events.wait_for_snapshot("the marker runtime", TIMEOUT, |s| {
        find(s, marker.endpoint().as_str()).is_some()
    });

    let start = Instant::now();
    runtime.kill();
    let (at, _) = events.wait_for_snapshot("the dead runtime to leave", TIMEOUT, |s| {
        exited(s, &runtime.endpoint)
    });

    let latency = at - start;
    eprintln!("SIGKILL -> gone from the inventory: {latency:?}");
    assert!(
        latency < prompt(),
        "{latency:?}: noticed by the tick, not the pidfd"
    );
    assert_eq!(
        events.died(),
        vec!["doomed".to_owned()],
        "events: {}",
        events.summary()
    );
    // The death is told before the snapshot without it, so a notification never trails the list.
    let died_at = events
        .seen
        .iter()
        .position(|(_, e)| matches!(e, CoreEvent::RuntimeDied { .. }))
        .unwrap();
    assert_eq!(died_at, events.seen.len() - 2);
    assert!(
        !fx.receipts()
            .receipt_path(&runtime.endpoint.parse().unwrap())
            .exists(),
        "the dead runtime's receipt is removed"
    );
}

/// Issue 32: a runtime served by a host process (a Claude Code session's host, the receipt's
/// `server`) ends when the host is SIGKILLed while the agent's process runs on; the watcher waits
/// on the host's pidfd too, so the death is told well before the reconcile tick.
#[test]
fn a_sigkilled_host_ends_its_runtime_via_its_pidfd_before_the_tick() {
    use crate::support::Sleeper;
    let fx = Fixture::new();
    let agent = Sleeper::sleep();
    let mut host = Sleeper::sleep();
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let mut receipt = live_runtime::test_support::foreign_receipt(
        &endpoint,
        "hosted",
        agent.pid(),
        Some(agent.identity().start_time),
    );
    receipt["server"] =
        serde_json::json!({ "pid": host.pid(), "startTime": host.identity().start_time });
    live_runtime::test_support::write_receipt_file(
        fx.receipts().path(),
        &format!("{endpoint}.json"),
        &receipt,
    );
    let id = endpoint.to_string();
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    events.wait_for_snapshot("the hosted runtime listed running", TIMEOUT, |s| {
        find(s, &id).is_some_and(|r| r.status == RuntimeStatus::Running)
    });
    // Past the watcher's start-up rescans: answer one file change, then it is idle.
    let (marker, _marker_listener) = register(fx.receipts(), "marker", "tok", None);
    events.wait_for_snapshot("the marker runtime", TIMEOUT, |s| {
        find(s, marker.endpoint().as_str()).is_some()
    });

    let start = Instant::now();
    host.kill();
    // A hosted session ends with its host or its agent and is not kept as exited: the next hook
    // of the session starts a new host.
    let (at, _) = events.wait_for_snapshot("the hosted runtime to leave", TIMEOUT, |s| {
        find(s, &id).is_none()
    });
    let latency = at - start;
    eprintln!("host SIGKILL -> gone from the inventory: {latency:?}");
    assert!(
        latency < prompt(),
        "{latency:?}: noticed by the tick, not the host's pidfd"
    );
    assert!(live_runtime::pid_exists(agent.pid()), "the agent runs on");
    assert_eq!(
        events.died(),
        vec!["hosted".to_owned()],
        "events: {}",
        events.summary()
    );
}

/// Issue 30: a read is a read. A read in the app (what an agent subscription retrying its
/// runtime, an attach or the window's snapshot does) right after a kill, inside the watcher's
/// 15 ms debounce, does not list the dead runtime and leaves its receipt alone; the watcher's own
/// reconciliation removes it and tells the death, once. (Before, any read removed the receipt,
/// and a side channel told the watcher who removed what.)
#[test]
fn a_read_leaves_a_dead_runtimes_receipt_to_the_watcher_which_tells_the_death_once() {
    let fx = Fixture::new();
    let mut runtime = RuntimeProcess::start(&fx, "doomed");
    let endpoint: live_runtime::LiveRuntimeEndpoint = runtime.endpoint.parse().unwrap();
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    events.wait_for_snapshot("the runtime listed running", TIMEOUT, |s| {
        find(s, &runtime.endpoint).is_some_and(|r| r.status == RuntimeStatus::Running)
    });

    runtime.kill();
    let read = core.snapshot();
    assert!(
        find(&read, &runtime.endpoint).is_none(),
        "the read lists the dead runtime"
    );
    events.wait_for_snapshot("the dead runtime to leave", TIMEOUT, |s| {
        exited(s, &runtime.endpoint)
    });
    events.drain();
    assert_eq!(
        events.died(),
        vec!["doomed".to_owned()],
        "events: {}",
        events.summary()
    );
    assert!(
        !fx.receipts().receipt_path(&endpoint).exists(),
        "the watcher's reconciliation removed the dead runtime's receipt"
    );
}

#[test]
fn a_runtime_that_unregisters_cleanly_is_not_reported_dead() {
    let fx = Fixture::new();
    let runtime = RuntimeProcess::start(&fx, "polite");
    let endpoint = runtime.endpoint.clone();
    let pid = runtime.pid();
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    events.wait_for_snapshot("the runtime listed running", TIMEOUT, |s| {
        find(s, &endpoint).is_some_and(|r| r.status == RuntimeStatus::Running)
    });

    runtime.stop_cleanly();
    assert!(!live_runtime::pid_exists(pid));
    events.wait_for_snapshot("the runtime to leave", TIMEOUT, |s| {
        find(s, &endpoint).is_none()
    });

    // A death is always sent before the snapshot that drops the runtime, and no later rescan can
    // report it (it is no longer in the last snapshot): so nothing more can arrive.
    events.drain();
    assert!(events.died().is_empty(), "{:?}", events.died());
}

#[test]
fn a_receipt_dir_deleted_and_recreated_while_watching_is_watched_again() {
    let fx = Fixture::new();
    let (first, _l1) = register(fx.receipts(), "before", "tok", None);
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    let mut previous = first.endpoint().to_string();
    events.wait_for_snapshot("the first runtime", TIMEOUT, |s| {
        find(s, &previous).is_some()
    });
    let mut keep = vec![first];

    for round in 0..3 {
        std::fs::remove_dir_all(fx.receipts().path()).unwrap();
        events.wait_for_snapshot("the deleted directory to empty the list", TIMEOUT, |s| {
            find(s, &previous).is_none()
        });

        let start = Instant::now();
        let (again, _listener) = register(fx.receipts(), &format!("after{round}"), "tok", None);
        let id = again.endpoint().to_string();
        let (at, _) =
            events.wait_for_snapshot("a receipt in the recreated directory", TIMEOUT, |s| {
                find(s, &id).is_some()
            });
        let latency = at - start;
        eprintln!("round {round}: receipt in a recreated dir -> snapshot: {latency:?}");
        assert!(latency < prompt(), "{latency:?}: only the tick noticed it");
        previous = id;
        keep.push(again);
    }
}

#[test]
fn a_pending_registration_is_announced_once_when_it_is_submitted_not_when_it_is_recorded() {
    let fx = Fixture::new();
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    events.wait_for_snapshot("the initial snapshot", TIMEOUT, |_| true);

    canon_local::get_or_create_pending_registration(fx.canon(), "newbie", Some("claude-code"))
        .unwrap();
    events.wait_for_snapshot("the unsubmitted registration", TIMEOUT, |s| {
        s.pending
            .iter()
            .any(|p| p.profile == "newbie" && p.state == PendingState::Unsubmitted)
    });
    assert!(events.waiting().is_empty(), "recorded is not yet waiting");

    canon_local::update_pending_registration(
        fx.canon(),
        "newbie",
        PendingPatch {
            request_id: Some("req-42".into()),
            poll_token: Some(Sensitive::new("poll-token-newbie".into())),
            client_type: None,
        },
    )
    .unwrap();
    events.wait_for(
        "RegistrationWaiting for newbie",
        TIMEOUT,
        |e| matches!(e, CoreEvent::RegistrationWaiting { profile } if profile == "newbie"),
    );
    events.wait_for_snapshot("the waiting registration", TIMEOUT, |s| {
        s.pending
            .iter()
            .any(|p| p.profile == "newbie" && p.state == PendingState::Waiting)
    });

    // A later change to the same registration does not announce it again.
    canon_local::update_pending_registration(
        fx.canon(),
        "newbie",
        PendingPatch {
            client_type: Some("codex".into()),
            ..PendingPatch::default()
        },
    )
    .unwrap();
    events.wait_for_snapshot("the updated registration", TIMEOUT, |s| {
        s.pending
            .iter()
            .any(|p| p.profile == "newbie" && p.client_type.as_deref() == Some("codex"))
    });
    events.drain();
    assert_eq!(events.waiting(), vec!["newbie".to_owned()]);
}

/// Regression test (issue 6, idle CPU): notify reports opens and read-only closes, and the
/// watcher's own scans open every receipt, so each scan cued the next and an idle tray rescanned
/// forever (~25 scans a second with 10 runtimes; 15% of a core with 50, debug build). Idle now
/// means no scan at all until the reconcile tick.
#[test]
fn an_idle_watcher_does_not_rescan_because_of_its_own_reads() {
    use notify::Watcher as _;
    let fx = Fixture::new();
    let (registration, _listener) = register(fx.receipts(), "quiet", "tok", None);
    let receipt = fx.receipts().receipt_path(registration.endpoint());
    let (sink, mut events) = recorder();
    let core = fx.core_with(sink);
    let _watch = core.watch();
    events.wait_for_snapshot("the runtime listed", TIMEOUT, |s| {
        find(s, registration.endpoint().as_str()).is_some()
    });

    // Count every time anyone opens the receipt during an idle window well inside the tick.
    let (tx, rx) = std::sync::mpsc::channel();
    let target = receipt.clone();
    let mut spy = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            if matches!(
                event.kind,
                notify::EventKind::Access(notify::event::AccessKind::Open(_))
            ) && event.paths.contains(&target)
            {
                let _ = tx.send(());
            }
        }
    })
    .unwrap();
    spy.watch(fx.receipts().path(), notify::RecursiveMode::NonRecursive)
        .unwrap();
    let window = Duration::from_secs(2);
    assert!(window < RECONCILE_INTERVAL / 2);
    // Observing idleness for a while is the measurement itself, not a stand-in for a signal.
    std::thread::sleep(window);
    drop(spy);
    let opens = rx.try_iter().count();

    // At most one tick can fall inside the window, and it opens the receipt once.
    assert!(
        opens <= 1,
        "the idle watcher opened the receipt {opens} times in {window:?}"
    );
}

// Proves: every pass the watcher takes reaches its pass observer, the passes that change nothing
// (and so publish nothing) too. `Supercode::watch` stops attach proxies there, which is what
// stops the proxy of a runtime that came, was attached and went between two passes: its going
// changes no snapshot the watcher had published.
#[test]
fn every_pass_reaches_the_pass_observer_even_when_it_publishes_nothing() {
    let fx = Fixture::new();
    let (registration, _listener) = register(fx.receipts(), "steady", "tok", None);
    let log: Arc<Mutex<Vec<&'static str>>> = Arc::default();
    let (sink_log, pass_log) = (log.clone(), log.clone());
    let entries = || log.lock().unwrap().clone();
    let _watch = supercode_core::watch::start(
        fx.locations.clone(),
        ApprovalBoard::default(),
        Arc::new(move |event| {
            if matches!(event, CoreEvent::Snapshot(_)) {
                sink_log.lock().unwrap().push("published");
            }
        }),
        Box::new(move |_| pass_log.lock().unwrap().push("pass")),
        supercode_core::background::Background::default().enlist(),
    );
    wait_until("the first snapshot", TIMEOUT, || {
        entries().contains(&"published").then_some(())
    });

    // Writes that change nothing: the watcher re-reads the receipt and finds it the same.
    let receipt = fx.receipts().receipt_path(registration.endpoint());
    let start = entries().len();
    for round in 1..=2 {
        drop(OpenOptions::new().append(true).open(&receipt).unwrap());
        wait_until("a pass after the write", TIMEOUT, || {
            let passes = entries()[start..].iter().filter(|&&e| e == "pass").count();
            (passes >= round).then_some(())
        });
    }
    // The watcher publishes right after the pass it publishes for, so whatever the first of
    // these passes published is in the log by the time the second pass is.
    let after = entries()[start..].to_vec();
    assert!(
        !after.contains(&"published"),
        "an unchanged pass published a snapshot: {after:?}"
    );
    assert!(after.len() >= 2, "{after:?}");
}

// Regression test (CI, the e2e secrets test): revive published a snapshot read on its own
// thread. Read before the revived runtime's receipt existed, it could reach the window after the
// watcher's newer one, and the window then showed the catalog entry without the new receipt
// until the next change. While a watcher runs it is the one publisher: an action asks it for a
// pass, and `current()` gives what it published last.
#[test]
fn while_watching_actions_are_published_by_the_watcher_and_current_gives_its_last_one() {
    let fx = Fixture::new();
    canon_local::get_or_create_pending_registration(fx.canon(), "newbie", Some("claude-code"))
        .unwrap();
    let threads: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let (record, mut events) = recorder();
    let seen_on = threads.clone();
    let core = fx.core_with(move |event| {
        if matches!(event, CoreEvent::Snapshot(_)) {
            let thread = std::thread::current().name().map(str::to_owned);
            seen_on.lock().unwrap().push(thread);
        }
        record(event);
    });
    let watch = core.watch();
    events.wait_for_snapshot("the registration", TIMEOUT, |s| {
        s.pending.iter().any(|p| p.profile == "newbie")
    });

    core.reject("newbie").unwrap();
    let (_, after) = events.wait_for_snapshot("the dismissal", TIMEOUT, |s| s.pending.is_empty());
    assert_eq!(
        core.current(),
        after,
        "current() gives what the watcher published last"
    );
    {
        let threads = threads.lock().unwrap();
        assert!(
            threads.len() >= 2
                && threads
                    .iter()
                    .all(|t| t.as_deref() == Some("supercode-watch")),
            "every snapshot came from the watcher's thread: {threads:?}"
        );
    }

    // Without a watcher, current() reads afresh (what it published last is no longer current).
    watch.stop();
    let (registration, _listener) = register(fx.receipts(), "later", "tok", None);
    assert!(
        find(&core.current(), registration.endpoint().as_str()).is_some(),
        "a receipt registered after the watcher stopped is listed"
    );
}
