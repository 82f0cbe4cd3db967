//! `pending-registrations.json`: the package's get-or-create/update/clear semantics, key order
//! and quirks, checked against Node.

use canon_local::{
    clear_pending_registration, get_or_create_pending_registration, load_pending_registrations,
    update_pending_registration, PendingPatch, Sensitive,
};
use serde_json::{json, Value};

use crate::support::{assert_js_pretty, assert_saved_as, node_ok, temp_home};

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

fn file_entry(home: &canon_local::CanonHome, profile: &str) -> Value {
    let text = std::fs::read_to_string(home.pending_registrations_path()).unwrap();
    serde_json::from_str::<Value>(&text).unwrap()[profile].clone()
}

#[test]
fn seed_format_fixture_parses_and_rewrites_byte_identically() {
    let t = temp_home();
    let fixture = r#"{
  "alice": {
    "profile": "alice",
    "clientType": "codex",
    "localRegistrationId": "6f1c1f5e-6a59-4f0e-9d59-0a6f5b1c2d3e",
    "createdAt": "2026-01-01T00:00:00.000Z",
    "updatedAt": "2026-01-01T00:00:01.000Z",
    "requestId": "req-1",
    "pollToken": "poll-fixture-secret",
    "unknown": 1
  }
}"#;
    std::fs::create_dir_all(t.home.root()).unwrap();
    std::fs::write(t.home.pending_registrations_path(), fixture).unwrap();
    let pending = load_pending_registrations(&t.home).unwrap();
    let alice = pending.get("alice").unwrap();
    assert_eq!(alice.request_id.as_deref(), Some("req-1"));
    assert_eq!(
        alice.poll_token.as_ref().map(|t| t.expose().as_str()),
        Some("poll-fixture-secret")
    );
    assert_eq!(alice.extra["unknown"], json!(1));
    assert!(!format!("{pending:?}").contains("poll-fixture-secret"));
    canon_local::save_pending_registrations(&t.home, &pending).unwrap();
    assert_saved_as(&t.home.pending_registrations_path(), fixture);
}

#[test]
fn get_or_create_matches_the_package_including_the_client_type_quirk() {
    crate::require_node!();
    let (rust, js) = (temp_home(), temp_home());
    let created = get_or_create_pending_registration(&rust.home, "p", Some("codex")).unwrap();
    node_ok(
        &js.home,
        "getOrCreatePendingRegistration",
        json!(["p", "codex"]),
    );
    assert_eq!(
        keys(&file_entry(&rust.home, "p")),
        keys(&file_entry(&js.home, "p"))
    );

    // Calling again without a client type drops it (the package spreads `clientType: undefined`).
    let again = get_or_create_pending_registration(&rust.home, "p", None).unwrap();
    node_ok(&js.home, "getOrCreatePendingRegistration", json!(["p"]));
    assert_eq!(again.local_registration_id, created.local_registration_id);
    assert_eq!(again.client_type, None);
    assert_eq!(
        keys(&file_entry(&rust.home, "p")),
        keys(&file_entry(&js.home, "p"))
    );

    // Setting it again appends the key at the end, as the spread does.
    get_or_create_pending_registration(&rust.home, "p", Some("claude-code")).unwrap();
    node_ok(
        &js.home,
        "getOrCreatePendingRegistration",
        json!(["p", "claude-code"]),
    );
    assert_eq!(
        keys(&file_entry(&rust.home, "p")),
        keys(&file_entry(&js.home, "p"))
    );
    assert_js_pretty(&rust.home, &rust.home.pending_registrations_path());

    let seen_by_node = node_ok(&rust.home, "loadPendingRegistrations", json!([]));
    assert_eq!(
        seen_by_node["p"]["localRegistrationId"],
        json!(created.local_registration_id)
    );
    assert_eq!(seen_by_node["p"]["clientType"], json!("claude-code"));
}

#[test]
fn update_creates_and_patches_in_the_package_key_order() {
    crate::require_node!();
    let (rust, js) = (temp_home(), temp_home());
    let patch = || PendingPatch {
        request_id: Some("req-7".into()),
        poll_token: Some(Sensitive::new("poll-7".into())),
        client_type: None,
    };
    update_pending_registration(&rust.home, "fresh", patch()).unwrap();
    node_ok(
        &js.home,
        "updatePendingRegistration",
        json!(["fresh", {"requestId": "req-7", "pollToken": "poll-7"}]),
    );
    assert_eq!(
        keys(&file_entry(&rust.home, "fresh")),
        keys(&file_entry(&js.home, "fresh"))
    );

    get_or_create_pending_registration(&rust.home, "q", Some("codex")).unwrap();
    node_ok(
        &js.home,
        "getOrCreatePendingRegistration",
        json!(["q", "codex"]),
    );
    update_pending_registration(&rust.home, "q", patch()).unwrap();
    node_ok(
        &js.home,
        "updatePendingRegistration",
        json!(["q", {"requestId": "req-7", "pollToken": "poll-7"}]),
    );
    assert_eq!(
        keys(&file_entry(&rust.home, "q")),
        keys(&file_entry(&js.home, "q"))
    );
    assert_eq!(file_entry(&rust.home, "q")["pollToken"], json!("poll-7"));
    assert_js_pretty(&rust.home, &rust.home.pending_registrations_path());
}

#[test]
fn entries_written_by_node_are_read_and_cleared() {
    crate::require_node!();
    let t = temp_home();
    node_ok(
        &t.home,
        "updatePendingRegistration",
        json!(["n", {"requestId": "req-n", "pollToken": "poll-n", "clientType": "codex"}]),
    );
    node_ok(&t.home, "getOrCreatePendingRegistration", json!(["m"]));
    let pending = load_pending_registrations(&t.home).unwrap();
    let n = pending.get("n").unwrap();
    assert_eq!(n.request_id.as_deref(), Some("req-n"));
    assert_eq!(n.client_type.as_deref(), Some("codex"));
    clear_pending_registration(&t.home, "n").unwrap();
    let seen = node_ok(&t.home, "loadPendingRegistrations", json!([]));
    assert_eq!(keys(&seen), vec!["m".to_owned()]);
}

#[test]
fn clearing_a_missing_entry_does_not_rewrite_the_file() {
    let t = temp_home();
    clear_pending_registration(&t.home, "nobody").unwrap();
    assert!(!t.home.pending_registrations_path().exists());
}
