//! Receipts pointing at real child processes: death, pid reuse (a wrong start time), identity.

use live_runtime::{
    find_live_runtime, forget_live_runtime, list_live_runtimes, pid_exists, read_receipt,
    register_live_runtime, resolve_live_runtime, secret_account, LiveRuntimeEndpoint,
    LiveRuntimeReceiptError, LiveRuntimeStatus, ProcessIdentity, ReceiptFiles, ReceiptScan,
};

use crate::common::{
    file_store_scratch, foreign_receipt, loopback, source, token, write_receipt, ChildGuard,
};

#[test]
fn process_identity_of_a_child_is_alive_until_it_is_killed() {
    let mut child = ChildGuard::sleep();
    let identity = ProcessIdentity::of(child.pid()).expect("child has an identity");
    assert_eq!(identity.pid, child.pid());
    assert!(identity.is_alive());
    assert!(pid_exists(child.pid()));
    child.kill();
    assert!(ProcessIdentity::of(child.pid()).is_none());
    assert!(!identity.is_alive());
    assert!(!pid_exists(child.pid()));
}

#[test]
fn receipt_of_a_sigkilled_process_is_removed_with_its_secret_on_next_list() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let mut child = ChildGuard::sleep();
    let identity = ProcessIdentity::of(child.pid()).unwrap();
    let endpoint = LiveRuntimeEndpoint::generate();
    let account = secret_account(&endpoint);
    dir.secret_store()
        .set(&account, &token("child-token"))
        .unwrap();
    let path = write_receipt(
        dir,
        &endpoint,
        &foreign_receipt(
            &endpoint,
            "rt-child",
            &source("child"),
            identity.pid,
            Some(identity.start_time),
            "127.0.0.1:40100",
            None,
        ),
    );

    let list = list_live_runtimes(dir).unwrap();
    assert_eq!(list.runtimes.len(), 1, "{:?}", list.ignored);
    assert_eq!(list.runtimes[0].status, LiveRuntimeStatus::Running);
    assert_eq!(list.runtimes[0].pid, identity.pid);

    assert!(list.exited.is_empty(), "nothing has exited yet");

    child.kill(); // SIGKILL + reap

    let list = list_live_runtimes(dir).unwrap();
    assert!(list.runtimes.is_empty(), "{:?}", list.runtimes);
    assert!(list.ignored.is_empty(), "{:?}", list.ignored);
    assert_eq!(
        list.exited,
        std::slice::from_ref(&endpoint),
        "the read reports the receipt it removed for a dead process"
    );
    assert!(!path.exists(), "dead-process receipt was not removed");
    assert!(
        list_live_runtimes(dir).unwrap().exited.is_empty(),
        "each removal is reported once"
    );
    assert!(
        dir.secret_store().get(&account).unwrap().is_none(),
        "its secret survived"
    );
}

#[test]
fn resolving_a_receipt_whose_process_died_reports_process_gone() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let mut child = ChildGuard::sleep();
    let identity = ProcessIdentity::of(child.pid()).unwrap();
    let endpoint = LiveRuntimeEndpoint::generate();
    dir.secret_store()
        .set(&secret_account(&endpoint), &token("t"))
        .unwrap();
    let src = source("child");
    write_receipt(
        dir,
        &endpoint,
        &foreign_receipt(
            &endpoint,
            "rt",
            &src,
            identity.pid,
            Some(identity.start_time),
            "127.0.0.1:40101",
            None,
        ),
    );
    child.kill();
    let err = resolve_live_runtime(dir, &endpoint, &src).unwrap_err();
    assert!(
        matches!(err, LiveRuntimeReceiptError::ProcessGone { pid } if pid == identity.pid),
        "{err:?}"
    );
    // Resolving is a read (issue 30): the dead receipt is left for reconciliation.
    assert!(dir.receipt_path(&endpoint).exists());
    assert_eq!(
        list_live_runtimes(dir).unwrap().exited,
        vec![endpoint.clone()]
    );
    assert!(!dir.receipt_path(&endpoint).exists());
}

/// Issue 30: a read is a read. Resolving, finding, discovering, reading one file and scanning the
/// directory leave a dead process's receipt and a foreign receipt (inline token, no start time)
/// byte for byte as they are, and the dead one's token in the store; reconciliation removes the
/// one with its token, reports it, and adopts the other.
#[test]
fn issue_30_reads_change_nothing_and_reconciliation_removes_and_adopts() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let mut doomed = ChildGuard::sleep();
    let dead = ProcessIdentity::of(doomed.pid()).unwrap();
    let dead_endpoint = LiveRuntimeEndpoint::generate();
    dir.secret_store()
        .set(&secret_account(&dead_endpoint), &token("dead-token"))
        .unwrap();
    let dead_source = source("dead");
    let dead_path = write_receipt(
        dir,
        &dead_endpoint,
        &foreign_receipt(
            &dead_endpoint,
            "dead",
            &dead_source,
            dead.pid,
            Some(dead.start_time),
            "127.0.0.1:40102",
            None,
        ),
    );
    doomed.kill();
    let alive = ChildGuard::sleep();
    let foreign_endpoint = LiveRuntimeEndpoint::generate();
    let foreign_source = source("foreign");
    let foreign_path = write_receipt(
        dir,
        &foreign_endpoint,
        &foreign_receipt(
            &foreign_endpoint,
            "foreign",
            &foreign_source,
            alive.pid(),
            None,
            "127.0.0.1:40103",
            Some("inline-token"),
        ),
    );
    let on_disk = || {
        (
            std::fs::read(&dead_path).ok(),
            std::fs::read(&foreign_path).ok(),
            dir.secret_store()
                .get(&secret_account(&dead_endpoint))
                .unwrap()
                .is_some(),
            dir.secret_store()
                .get(&secret_account(&foreign_endpoint))
                .unwrap()
                .is_some(),
        )
    };
    let before = on_disk();
    assert!(before.0.is_some() && before.1.is_some() && before.2 && !before.3);

    let err = resolve_live_runtime(dir, &dead_endpoint, &dead_source).unwrap_err();
    assert!(
        matches!(err, LiveRuntimeReceiptError::ProcessGone { .. }),
        "{err:?}"
    );
    // A foreign receipt not yet adopted resolves with the token it carries.
    let resolved = resolve_live_runtime(dir, &foreign_endpoint, &foreign_source).unwrap();
    assert_eq!(resolved.token.expose(), "inline-token");
    assert!(
        find_live_runtime(dir, "dead").is_err(),
        "a dead receipt is not listed"
    );
    assert!(find_live_runtime(dir, "foreign").is_ok());
    assert!(live_runtime::discover_live_runtime(dir, &foreign_source)
        .unwrap()
        .is_some());
    assert!(matches!(
        read_receipt(dir, &format!("{dead_endpoint}.json")).unwrap(),
        ReceiptScan::Exited { pid } if pid == dead.pid
    ));
    assert!(matches!(
        read_receipt(dir, &format!("{foreign_endpoint}.json")).unwrap(),
        ReceiptScan::Listed(_)
    ));
    let scanned = ReceiptFiles::scan(dir).unwrap().list();
    assert_eq!(scanned.runtimes.len(), 1, "{scanned:?}");
    assert_eq!(on_disk(), before, "a read changed something on disk");

    let list = list_live_runtimes(dir).unwrap();
    assert_eq!(list.exited, vec![dead_endpoint.clone()]);
    assert_eq!(list.runtimes.len(), 1);
    let after = on_disk();
    assert!(after.0.is_none(), "the dead receipt is removed");
    assert!(!after.2, "with its token");
    assert!(after.3, "the foreign token is adopted into the store");
    let rewritten = String::from_utf8(after.1.unwrap()).unwrap();
    assert!(!rewritten.contains("inline-token"), "{rewritten}");
    assert!(rewritten.contains("startTime"), "{rewritten}");
}

#[test]
fn a_live_pid_with_the_wrong_start_time_is_stale_unresolvable_and_forgettable() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let child = ChildGuard::sleep();
    let identity = ProcessIdentity::of(child.pid()).unwrap();
    let endpoint = LiveRuntimeEndpoint::generate();
    let account = secret_account(&endpoint);
    dir.secret_store()
        .set(&account, &token("stale-token"))
        .unwrap();
    let src = source("reused");
    // As if the runtime died and its pid was handed to `sleep`.
    let path = write_receipt(
        dir,
        &endpoint,
        &foreign_receipt(
            &endpoint,
            "rt-reused",
            &src,
            identity.pid,
            Some(identity.start_time + 1),
            "127.0.0.1:40102",
            None,
        ),
    );
    let running = register_live_runtime(
        dir,
        "rt-reused",
        src.clone(),
        loopback(40103),
        token("live"),
    )
    .unwrap();

    let list = list_live_runtimes(dir).unwrap();
    let stale = list
        .runtimes
        .iter()
        .find(|r| r.endpoint == endpoint)
        .expect("stale receipt listed");
    assert_eq!(
        stale.status,
        LiveRuntimeStatus::Stale {
            reason: format!("PID {} now belongs to another process", identity.pid)
        }
    );

    let err = resolve_live_runtime(dir, &endpoint, &src).unwrap_err();
    assert!(
        matches!(err, LiveRuntimeReceiptError::ProcessMismatch { pid } if pid == identity.pid),
        "{err:?}"
    );

    // A stale and a running registration of one id: find must not pick one silently.
    match find_live_runtime(dir, "rt-reused") {
        Err(LiveRuntimeReceiptError::Ambiguous { candidates, .. }) => {
            assert!(candidates
                .iter()
                .any(|c| c.contains(endpoint.as_str()) && c.contains("stale")));
            assert!(candidates
                .iter()
                .any(|c| c.contains(running.endpoint().as_str()) && c.contains("running")));
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }

    forget_live_runtime(dir, &endpoint).unwrap();
    assert!(!path.exists());
    assert!(dir.secret_store().get(&account).unwrap().is_none());
    // Nothing else was touched: the running registration and the process are still there.
    assert!(dir.receipt_path(running.endpoint()).exists());
    assert!(identity.is_alive());
    assert_eq!(
        find_live_runtime(dir, "rt-reused").unwrap().endpoint,
        *running.endpoint()
    );
}

#[test]
fn forgetting_an_unknown_endpoint_is_not_found() {
    let scratch = file_store_scratch();
    crate::common::make_receipt_dir(&scratch.dir);
    let err = forget_live_runtime(&scratch.dir, &LiveRuntimeEndpoint::generate()).unwrap_err();
    assert!(
        matches!(err, LiveRuntimeReceiptError::NotFound { .. }),
        "{err:?}"
    );
}

// Proves (issue 32): a host process can register a runtime on behalf of another process of the
// user (a Claude Code session): the receipt names that process, the runtime is listed while it
// runs and goes away with it, and a process that is not alive is refused.
#[test]
fn a_runtime_registered_for_another_process_lives_and_dies_with_that_process() {
    use live_runtime::{register_live_runtime_for_process, LiveRuntimeMetadata};
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let mut child = ChildGuard::sleep();
    let identity = ProcessIdentity::of(child.pid()).unwrap();
    let registration = register_live_runtime_for_process(
        dir,
        "rt-hosted",
        source("hosted"),
        loopback(40200),
        token("hosted-token"),
        LiveRuntimeMetadata::default(),
        identity,
    )
    .unwrap();
    let list = list_live_runtimes(dir).unwrap();
    assert_eq!(list.runtimes.len(), 1, "{:?}", list.ignored);
    assert_eq!(
        list.runtimes[0].pid,
        child.pid(),
        "the receipt names the hosted process"
    );
    assert_ne!(list.runtimes[0].pid, std::process::id());

    child.kill();
    let list = list_live_runtimes(dir).unwrap();
    assert!(
        list.runtimes.is_empty(),
        "the runtime ended with its process"
    );
    assert_eq!(list.exited, vec![registration.endpoint().clone()]);
    drop(registration);

    let gone = register_live_runtime_for_process(
        dir,
        "rt-hosted",
        source("hosted"),
        loopback(40200),
        token("hosted-token"),
        LiveRuntimeMetadata::default(),
        identity,
    );
    assert!(
        matches!(gone, Err(LiveRuntimeReceiptError::ProcessGone { .. })),
        "{gone:?}"
    );
    let shifted = ProcessIdentity {
        start_time: ProcessIdentity::current().start_time + 1,
        ..ProcessIdentity::current()
    };
    let wrong = register_live_runtime_for_process(
        dir,
        "rt-hosted",
        source("hosted"),
        loopback(40200),
        token("hosted-token"),
        LiveRuntimeMetadata::default(),
        shifted,
    );
    assert!(
        wrong.is_err(),
        "a pid with another start time is not that process"
    );
    assert!(list_live_runtimes(dir).unwrap().runtimes.is_empty());
}

// Proves (issue 32): a receipt served by a host process (its `server`) ends when that host
// exits, even while the runtime's own process (the agent) still runs.
#[test]
fn a_receipt_whose_server_exited_is_removed_although_its_process_runs() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let agent = ChildGuard::sleep();
    let mut server = ChildGuard::sleep();
    let endpoint = LiveRuntimeEndpoint::generate();
    dir.secret_store()
        .set(&secret_account(&endpoint), &token("hosted-token"))
        .unwrap();
    let mut receipt = foreign_receipt(
        &endpoint,
        "rt-served",
        &source("served"),
        agent.pid(),
        Some(agent.identity().start_time),
        "127.0.0.1:40300",
        None,
    );
    receipt["server"] = serde_json::json!({
        "pid": server.pid(), "startTime": server.identity().start_time
    });
    write_receipt(dir, &endpoint, &receipt);
    let list = list_live_runtimes(dir).unwrap();
    assert_eq!(list.runtimes.len(), 1, "{:?}", list.ignored);
    assert_eq!(list.runtimes[0].pid, agent.pid());
    assert_eq!(
        list.runtimes[0].listener_pid(),
        server.pid(),
        "the token goes to the server"
    );
    server.kill();
    let list = list_live_runtimes(dir).unwrap();
    assert!(
        list.runtimes.is_empty(),
        "the runtime ended with its server"
    );
    assert_eq!(list.exited, vec![endpoint]);
}
