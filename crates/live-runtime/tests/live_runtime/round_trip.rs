//! Register / list / resolve / discover / find / forget through the public API, with each store.

use std::collections::BTreeMap;
use std::path::PathBuf;

use live_runtime::{
    discover_live_runtime, find_live_runtime, forget_live_runtime, list_live_runtimes,
    register_live_runtime, register_live_runtime_with_metadata, resolve_live_runtime,
    secret_account, LiveRuntimeMetadata, LiveRuntimeReceiptError, LiveRuntimeStatus,
    LiveRuntimeSupervisor, ProcessIdentity, ReceiptDir,
};
use serde_json::Value;

use crate::common::{file_store_scratch, loopback, source, token};

fn metadata() -> LiveRuntimeMetadata {
    LiveRuntimeMetadata {
        runtime_kind: "demo".into(),
        display_name: Some("Demo runtime".into()),
        profile: Some("default".into()),
        agent_name: Some("ada".into()),
        cwd: Some(PathBuf::from("/work/projects/demo")),
        workspace_roots: vec![PathBuf::from("/work/projects/demo")],
        canon_runtime_id: Some("canon-rt-1".into()),
        supervisor: LiveRuntimeSupervisor::LaunchCommand {
            argv: vec!["demo-runtime".into(), "--port".into(), "0".into()],
            cwd: PathBuf::from("/work/projects/demo"),
            env: BTreeMap::from([("RUST_LOG".into(), "info".into())]),
        },
    }
}

/// The whole lifecycle of one registration against whatever store `dir` uses.
pub fn full_round_trip(dir: &ReceiptDir) {
    let src = source("session-round-trip");
    let registration = register_live_runtime_with_metadata(
        dir,
        "rt-round-trip",
        src.clone(),
        loopback(40001),
        token("round-trip-token"),
        metadata(),
    )
    .unwrap();
    let endpoint = registration.endpoint().clone();
    assert!(dir.receipt_path(&endpoint).is_file());

    let list = list_live_runtimes(dir).unwrap();
    assert!(list.ignored.is_empty(), "{:?}", list.ignored);
    assert_eq!(list.runtimes.len(), 1);
    let record = &list.runtimes[0];
    assert_eq!(record.endpoint, endpoint);
    assert_eq!(record.runtime_id, "rt-round-trip");
    assert_eq!(record.source, src);
    assert_eq!(record.metadata, metadata());
    assert_eq!(record.pid, std::process::id());
    assert_eq!(record.status, LiveRuntimeStatus::Running);
    assert!(
        record.registered_at.ends_with('Z'),
        "{}",
        record.registered_at
    );

    let resolved = resolve_live_runtime(dir, &endpoint, &src).unwrap();
    assert_eq!(*resolved.address.expose(), loopback(40001));
    assert_eq!(resolved.token.expose(), "round-trip-token");
    assert_eq!(resolved.record.endpoint, endpoint);

    assert_eq!(
        discover_live_runtime(dir, &src)
            .unwrap()
            .map(|r| r.endpoint),
        Some(endpoint.clone())
    );
    assert!(discover_live_runtime(dir, &source("some-other-session"))
        .unwrap()
        .is_none());
    assert_eq!(
        find_live_runtime(dir, "rt-round-trip").unwrap().endpoint,
        endpoint
    );
    assert!(matches!(
        find_live_runtime(dir, "no-such-runtime"),
        Err(LiveRuntimeReceiptError::NotFound { .. })
    ));

    let refused = forget_live_runtime(dir, &endpoint).unwrap_err();
    assert!(
        matches!(refused, LiveRuntimeReceiptError::StillRunning { pid } if pid == std::process::id())
    );
    assert!(refused.to_string().contains("stop it first"));
    assert!(
        dir.receipt_path(&endpoint).is_file(),
        "forget refused but removed the receipt"
    );

    registration.unregister().unwrap();
    assert!(!dir.receipt_path(&endpoint).exists());
    assert!(list_live_runtimes(dir).unwrap().runtimes.is_empty());
    assert!(dir
        .secret_store()
        .get(&secret_account(&endpoint))
        .unwrap()
        .is_none());
    assert!(matches!(
        resolve_live_runtime(dir, &endpoint, &src),
        Err(LiveRuntimeReceiptError::NotFound { .. })
    ));
}

#[test]
fn register_list_resolve_discover_find_forget_round_trip_with_file_store() {
    let scratch = file_store_scratch();
    full_round_trip(&scratch.dir);
}

#[test]
fn receipt_on_disk_is_version_1_camel_case_without_token() {
    let scratch = file_store_scratch();
    let registration = register_live_runtime(
        &scratch.dir,
        "rt-format",
        source("s"),
        loopback(40002),
        token("format-token"),
    )
    .unwrap();
    let path = scratch.dir.receipt_path(registration.endpoint());
    let receipt: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(receipt["version"], 1);
    assert_eq!(receipt["endpoint"], registration.endpoint().as_str());
    assert_eq!(receipt["runtimeId"], "rt-format");
    assert_eq!(receipt["source"]["sessionId"], "s");
    assert_eq!(receipt["process"]["pid"], std::process::id());
    assert_eq!(
        receipt["process"]["startTime"],
        ProcessIdentity::current().start_time
    );
    assert_eq!(receipt["address"], "127.0.0.1:40002");
    assert_eq!(receipt["metadata"]["supervisor"]["kind"], "manual");
    assert!(receipt.get("token").is_none());
    assert!(!std::fs::read_to_string(&path)
        .unwrap()
        .contains("format-token"));
}

#[test]
fn non_loopback_address_is_refused_at_registration_and_leaves_nothing_behind() {
    let scratch = file_store_scratch();
    let outside = "192.168.1.10:8080".parse().unwrap();
    let refused = register_live_runtime(
        &scratch.dir,
        "rt",
        source("s"),
        outside,
        token("never-stored"),
    )
    .unwrap_err();
    assert!(matches!(refused, LiveRuntimeReceiptError::NotLoopback));
    assert!(!refused.to_string().contains("192.168"));
    assert!(crate::common::entries(scratch.dir.path())
        .iter()
        .all(|n| !n.ends_with(".json")));
    assert!(crate::common::entries(&scratch.secrets_path).is_empty());
    // IPv6 loopback is fine.
    let v6 = register_live_runtime(
        &scratch.dir,
        "rt",
        source("s"),
        "[::1]:8080".parse().unwrap(),
        token("v6"),
    )
    .unwrap();
    assert_eq!(list_live_runtimes(&scratch.dir).unwrap().runtimes.len(), 1);
    drop(v6);
}

#[test]
fn every_registration_gets_a_fresh_endpoint() {
    let scratch = file_store_scratch();
    let a =
        register_live_runtime(&scratch.dir, "rt", source("s"), loopback(1), token("a")).unwrap();
    let b =
        register_live_runtime(&scratch.dir, "rt", source("s"), loopback(1), token("b")).unwrap();
    assert_ne!(a.endpoint(), b.endpoint());
}

#[test]
fn dropping_an_older_registration_leaves_the_newer_one_of_the_same_runtime_alone() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let src = source("session-twice");
    let older =
        register_live_runtime(dir, "rt-twice", src.clone(), loopback(40010), token("old")).unwrap();
    let newer =
        register_live_runtime(dir, "rt-twice", src.clone(), loopback(40011), token("new")).unwrap();

    // Two concurrent registrations of one id: find must ask for an explicit endpoint.
    match find_live_runtime(dir, "rt-twice") {
        Err(LiveRuntimeReceiptError::Ambiguous {
            runtime_id,
            candidates,
        }) => {
            assert_eq!(runtime_id, "rt-twice");
            assert_eq!(candidates.len(), 2);
            assert!(candidates
                .iter()
                .any(|c| c.contains(older.endpoint().as_str())));
            assert!(candidates
                .iter()
                .any(|c| c.contains(newer.endpoint().as_str())));
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    // Newest first.
    let list = list_live_runtimes(dir).unwrap();
    assert_eq!(&list.runtimes[0].endpoint, newer.endpoint());
    assert_eq!(
        discover_live_runtime(dir, &src).unwrap().unwrap().endpoint,
        *newer.endpoint()
    );

    let newer_endpoint = newer.endpoint().clone();
    drop(older);
    let list = list_live_runtimes(dir).unwrap();
    assert_eq!(list.runtimes.len(), 1);
    assert_eq!(list.runtimes[0].endpoint, newer_endpoint);
    let resolved = resolve_live_runtime(dir, &newer_endpoint, &src).unwrap();
    assert_eq!(resolved.token.expose(), "new");
    assert_eq!(
        find_live_runtime(dir, "rt-twice").unwrap().endpoint,
        newer_endpoint
    );
    drop(newer);
}

#[test]
fn drop_does_not_remove_a_receipt_file_that_is_no_longer_its_own() {
    let scratch = file_store_scratch();
    let registration =
        register_live_runtime(&scratch.dir, "rt", source("s"), loopback(40020), token("t"))
            .unwrap();
    let path = scratch.dir.receipt_path(registration.endpoint());
    // Someone replaced the file with a receipt for another process identity.
    let mut receipt: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    receipt["process"]["startTime"] = Value::from(1u64);
    crate::common::write_file(
        scratch.dir.path(),
        path.file_name().unwrap().to_str().unwrap(),
        serde_json::to_vec(&receipt).unwrap().as_slice(),
        0o600,
    );
    drop(registration);
    assert!(path.exists(), "Drop removed a receipt it did not write");
}

#[test]
fn resolve_without_a_stored_token_reports_missing_token() {
    let scratch = file_store_scratch();
    let registration =
        register_live_runtime(&scratch.dir, "rt", source("s"), loopback(40030), token("t"))
            .unwrap();
    scratch
        .dir
        .secret_store()
        .delete(&secret_account(registration.endpoint()))
        .unwrap();
    let err =
        resolve_live_runtime(&scratch.dir, registration.endpoint(), &source("s")).unwrap_err();
    assert!(
        matches!(err, LiveRuntimeReceiptError::MissingToken { .. }),
        "{err:?}"
    );
}

#[test]
fn listing_a_directory_that_does_not_exist_is_empty_not_an_error() {
    let scratch = file_store_scratch();
    let list = list_live_runtimes(&scratch.dir).unwrap();
    assert!(list.runtimes.is_empty() && list.ignored.is_empty());
}
