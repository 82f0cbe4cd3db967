//! `locks/`: legacy and JSON formats, stale cleanup, token-guarded release, and real processes
//! (Node and us) holding a lock against each other.

use canon_local::locks::parse_lock;
use canon_local::{
    acquire_lock, describe_profile_lock, is_profile_locked, release_lock, LockError, LockStatus,
};
use serde_json::json;

use crate::support::{mode, node, node_hold_lock, node_ok, temp_home};

fn write_lock(home: &canon_local::CanonHome, profile: &str, content: &str) {
    std::fs::create_dir_all(home.locks_dir()).unwrap();
    std::fs::write(home.lock_path(profile), content).unwrap();
}

#[test]
fn parse_lock_follows_the_package_quirks() {
    assert_eq!(parse_lock(" 42 \n").map(|l| l.pid), Some(42.0));
    assert_eq!(parse_lock("-7").map(|l| l.pid), Some(-7.0));
    // Not canonical integers: not legacy, and not JSON either.
    assert_eq!(parse_lock("007"), None);
    assert_eq!(parse_lock("12abc"), None);
    assert_eq!(parse_lock("+5"), None);
    assert_eq!(parse_lock(""), None);
    let json_lock = parse_lock(r#"{"pid":12,"token":"t","acquiredAt":"x"}"#).unwrap();
    assert_eq!(
        (json_lock.pid, json_lock.token.as_deref()),
        (12.0, Some("t"))
    );
    assert_eq!(parse_lock(r#"{"pid":"12"}"#), None, "pid must be a number");
    assert_eq!(parse_lock(r#"{"pid":3,"token":7}"#).unwrap().token, None);
    assert_eq!(parse_lock("[1]"), None);
}

#[test]
fn live_legacy_lock_is_locked_and_garbage_or_dead_locks_are_cleared() {
    let t = temp_home();
    let me = i64::from(std::process::id());
    write_lock(&t.home, "legacy", &format!("{me}\n"));
    assert_eq!(
        is_profile_locked(&t.home, "legacy"),
        LockStatus::Locked { pid: me }
    );
    assert_eq!(
        describe_profile_lock(&t.home, "legacy"),
        format!("locked by PID {me}")
    );

    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    for (profile, content) in [
        ("dead", format!(r#"{{"pid":{dead},"token":"x"}}"#)),
        ("zero", r#"{"pid":0}"#.to_owned()),
        ("garbage", "not a lock".to_owned()),
        ("padded", "007".to_owned()),
    ] {
        write_lock(&t.home, profile, &content);
        assert_eq!(
            is_profile_locked(&t.home, profile),
            LockStatus::Available,
            "{profile}"
        );
        assert!(
            !t.home.lock_path(profile).exists(),
            "stale {profile} lock not deleted"
        );
    }
    assert_eq!(describe_profile_lock(&t.home, "never"), "available");
}

#[test]
fn release_is_token_guarded() {
    let t = temp_home();
    let me = std::process::id();
    write_lock(&t.home, "p", &format!(r#"{{"pid":{me},"token":"theirs"}}"#));
    release_lock(&t.home, "p", Some("mine"));
    assert!(
        t.home.lock_path("p").exists(),
        "released someone else's lock"
    );
    release_lock(&t.home, "p", Some("theirs"));
    assert!(!t.home.lock_path("p").exists());

    write_lock(&t.home, "legacy", &me.to_string());
    release_lock(&t.home, "legacy", Some("mine"));
    assert!(
        !t.home.lock_path("legacy").exists(),
        "a token-less lock is released by anyone"
    );
}

#[test]
fn our_lock_is_exclusive_compact_json_and_seen_by_node() {
    let t = temp_home();
    let handle = acquire_lock(&t.home, "alice").unwrap();
    let path = t.home.lock_path("alice");
    assert_eq!(mode(&path), 0o600);
    let raw = std::fs::read_to_string(&path).unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(parsed["pid"], json!(std::process::id()));
    assert_eq!(parsed["token"], json!(handle.token));
    let again = acquire_lock(&t.home, "alice").unwrap_err();
    assert_eq!(
        again.to_string(),
        format!(
            "Agent \"alice\" is in use by another session (PID {})",
            std::process::id()
        )
    );

    crate::require_node!();
    let compact = node_ok(&t.home, "stringifyCompactFile", json!([path]));
    assert_eq!(
        compact.as_str(),
        Some(raw.as_str()),
        "not JSON.stringify's compact form"
    );
    let seen = node_ok(&t.home, "isProfileLocked", json!(["alice"]));
    assert_eq!(seen, json!({"locked": true, "pid": std::process::id()}));
    let err = node(&t.home, "acquireLock", json!(["alice"])).unwrap_err();
    assert_eq!(
        err,
        again.to_string(),
        "node and Rust disagree on the message"
    );
    // Node releasing with a wrong token leaves our lock alone.
    node_ok(&t.home, "releaseLock", json!(["alice", "wrong-token"]));
    assert!(path.exists());
    handle.release();
    assert!(!path.exists());
    assert_eq!(
        node_ok(&t.home, "isProfileLocked", json!(["alice"])),
        json!({"locked": false})
    );
}

#[test]
fn a_live_node_process_holding_the_lock_blocks_us_until_it_releases() {
    crate::require_node!();
    let t = temp_home();
    let held = node_hold_lock(&t.home, "bob");
    assert_eq!(
        is_profile_locked(&t.home, "bob"),
        LockStatus::Locked { pid: held.pid }
    );
    match acquire_lock(&t.home, "bob") {
        Err(LockError::InUse { pid, .. }) => assert_eq!(pid, held.pid),
        other => panic!("expected InUse, got {other:?}"),
    }
    // Our token-guarded release must not remove Node's lock.
    release_lock(&t.home, "bob", Some("not-nodes-token"));
    assert!(t.home.lock_path("bob").exists());
    held.release();
    assert_eq!(is_profile_locked(&t.home, "bob"), LockStatus::Available);
    let ours = acquire_lock(&t.home, "bob").unwrap();
    drop(ours);
    assert!(
        !t.home.lock_path("bob").exists(),
        "dropping the handle releases the lock"
    );
}

#[test]
fn a_lock_left_by_a_dead_node_process_is_taken_over() {
    crate::require_node!();
    let t = temp_home();
    // `acquireLock` without release: the Node process exits and leaves its lock behind.
    let reply = node_ok(&t.home, "acquireLock", json!(["carol"]));
    assert!(t.home.lock_path("carol").exists());
    let handle = acquire_lock(&t.home, "carol").unwrap();
    assert_ne!(json!(handle.token), reply["token"]);
}

#[test]
fn a_profile_name_escaping_locks_dir_never_deletes_files_outside_it() {
    let t = temp_home();
    std::fs::create_dir_all(t.home.locks_dir()).unwrap();
    let outside = t.home.root().join("precious.lock");
    std::fs::write(&outside, "not a lock").unwrap();
    assert_eq!(
        is_profile_locked(&t.home, "../precious"),
        LockStatus::Available
    );
    assert!(outside.exists(), "deleted a file outside locks/");
}
