//! `agents.json`: seed-format fixtures, byte-exact rewrites, unknown fields, Node cross-reads.

use canon_local::{
    load_profiles, merge_agent_profile, save_profiles, upsert_agent_profile, AgentProfile,
    CanonFileError, Sensitive,
};
use serde_json::json;

use crate::support::{assert_js_pretty, assert_saved_as, node_ok, temp_home};

/// What `saveProfiles` writes for two profiles, one with every optional field, one with fields
/// from a newer package, plus a top-level entry that is not a profile at all.
const FIXTURE: &str = r#"{
  "alice": {
    "apiKey": "sk-fixture-alice",
    "agentId": "agent-1",
    "agentName": "Alice",
    "registeredAt": "2026-01-02T03:04:05.678Z",
    "clientType": "claude-code",
    "baseUrl": "https://staging.example",
    "streamUrl": "https://stream.example",
    "rtdbUrl": "https://rtdb.example",
    "runtimeId": "claude-code:alice:0123456789abcdef"
  },
  "bob": {
    "futureFlag": true,
    "apiKey": "sk-fixture-bob",
    "agentId": "agent-2",
    "nested": {
      "x": [
        1,
        2
      ]
    },
    "agentName": "Bob",
    "registeredAt": "2026-01-02T03:04:05.678Z",
    "baseUrl": null
  },
  "broken": "not-a-profile"
}"#;

fn write_fixture(home: &canon_local::CanonHome) {
    std::fs::create_dir_all(home.root()).unwrap();
    std::fs::write(home.agents_path(), FIXTURE).unwrap();
}

#[test]
fn seed_format_fixture_parses_with_every_field() {
    let t = temp_home();
    write_fixture(&t.home);
    let profiles = load_profiles(&t.home).unwrap();
    let alice = profiles.get("alice").unwrap();
    assert_eq!(alice.api_key.expose(), "sk-fixture-alice");
    assert_eq!(alice.agent_id, "agent-1");
    assert_eq!(alice.agent_name, "Alice");
    assert_eq!(alice.registered_at, "2026-01-02T03:04:05.678Z");
    assert_eq!(alice.client_type.as_deref(), Some("claude-code"));
    assert_eq!(alice.base_url.as_deref(), Some("https://staging.example"));
    assert_eq!(alice.stream_url.as_deref(), Some("https://stream.example"));
    assert_eq!(alice.rtdb_url.as_deref(), Some("https://rtdb.example"));
    assert_eq!(
        alice.runtime_id.as_deref(),
        Some("claude-code:alice:0123456789abcdef")
    );
    let bob = profiles.get("bob").unwrap();
    assert_eq!(bob.base_url, None, "a null baseUrl is not a URL");
    assert!(bob.extra.contains_key("futureFlag") && bob.extra.contains_key("nested"));
    assert_eq!(profiles.get("broken").map(|_| ()), None);
    let unrecognized: Vec<_> = profiles.unrecognized().collect();
    assert_eq!(
        unrecognized,
        vec![("broken", "expected an object, found a string")]
    );
    assert!(
        profiles.is_present("broken"),
        "a non-empty string is truthy in JS"
    );
}

#[test]
fn rewrite_without_changes_is_byte_identical() {
    let t = temp_home();
    write_fixture(&t.home);
    let profiles = load_profiles(&t.home).unwrap();
    save_profiles(&t.home, &profiles).unwrap();
    assert_saved_as(&t.home.agents_path(), FIXTURE);
}

#[test]
fn upsert_keeps_other_entries_verbatim_and_node_reads_the_result() {
    let t = temp_home();
    write_fixture(&t.home);
    let mut carol = AgentProfile::new(
        Sensitive::new("sk-carol".to_owned()),
        "agent-3",
        "Carol",
        "2026-02-03T04:05:06.789Z",
    );
    carol.client_type = Some("codex".into());
    upsert_agent_profile(&t.home, "  carol ", carol).unwrap();
    let written = std::fs::read_to_string(t.home.agents_path()).unwrap();
    let fixture_without_close = FIXTURE.strip_suffix("\n}").unwrap();
    assert!(
        written.starts_with(fixture_without_close),
        "existing entries moved or changed"
    );

    crate::require_node!();
    assert_js_pretty(&t.home, &t.home.agents_path());
    let loaded = node_ok(&t.home, "loadProfiles", json!([]));
    assert_eq!(
        loaded["carol"],
        json!({"apiKey": "sk-carol", "agentId": "agent-3", "agentName": "Carol",
               "registeredAt": "2026-02-03T04:05:06.789Z", "clientType": "codex"})
    );
    assert_eq!(loaded["bob"]["futureFlag"], json!(true));
    assert_eq!(loaded["broken"], json!("not-a-profile"));
}

#[test]
fn profiles_written_by_node_are_read() {
    crate::require_node!();
    let t = temp_home();
    node_ok(
        &t.home,
        "upsertAgentProfile",
        json!(["dave", {"apiKey": "sk-dave", "agentId": "agent-4", "agentName": "Dave",
                        "registeredAt": "2026-03-04T05:06:07.890Z", "rtdbUrl": "https://r", "extra": [1]}]),
    );
    let profiles = load_profiles(&t.home).unwrap();
    let dave = profiles.get("dave").unwrap();
    assert_eq!(dave.api_key.expose(), "sk-dave");
    assert_eq!(dave.rtdb_url.as_deref(), Some("https://r"));
    assert_eq!(dave.extra["extra"], json!([1]));
    // And our rewrite of a node-written file changes nothing.
    let before = std::fs::read_to_string(t.home.agents_path()).unwrap();
    save_profiles(&t.home, &profiles).unwrap();
    assert_eq!(
        std::fs::read_to_string(t.home.agents_path()).unwrap(),
        before
    );
}

#[test]
fn merge_keeps_unknown_fields_and_key_order_of_an_existing_profile() {
    let t = temp_home();
    write_fixture(&t.home);
    let update = AgentProfile::new(
        Sensitive::new("sk-new".to_owned()),
        "agent-9",
        "Bob2",
        "now",
    );
    merge_agent_profile(&t.home, "bob", update).unwrap();
    let profiles = load_profiles(&t.home).unwrap();
    let bob = profiles.get("bob").unwrap();
    assert_eq!(bob.api_key.expose(), "sk-new");
    assert_eq!(bob.agent_id, "agent-9");
    assert_eq!(bob.extra["futureFlag"], json!(true));
    let text = std::fs::read_to_string(t.home.agents_path()).unwrap();
    let order: Vec<usize> = [
        "\"futureFlag\"",
        "\"apiKey\": \"sk-new\"",
        "\"nested\"",
        "\"agentName\": \"Bob2\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap())
    .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "key order changed: {text}"
    );
}

#[test]
fn corrupt_agents_json_is_reported_and_never_overwritten() {
    let t = temp_home();
    std::fs::create_dir_all(t.home.root()).unwrap();
    std::fs::write(
        t.home.agents_path(),
        "{\"alice\": {\"apiKey\": \"sk-secret-in-corrupt\"",
    )
    .unwrap();
    let err = load_profiles(&t.home).unwrap_err();
    assert!(matches!(err, CanonFileError::Corrupt { .. }), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("agents.json") && message.contains("move it aside"),
        "{message}"
    );
    assert!(
        !message.contains("sk-secret-in-corrupt")
            && !format!("{err:?}").contains("sk-secret-in-corrupt")
    );
    let update = AgentProfile::new(Sensitive::new("k".to_owned()), "a", "b", "c");
    assert!(upsert_agent_profile(&t.home, "x", update).is_err());
    assert!(std::fs::read_to_string(t.home.agents_path())
        .unwrap()
        .contains("sk-secret-in-corrupt"));
}

#[test]
fn blank_profile_name_is_refused_like_the_package() {
    let t = temp_home();
    let update = AgentProfile::new(Sensitive::new("k".to_owned()), "a", "b", "c");
    let err = upsert_agent_profile(&t.home, "   ", update).unwrap_err();
    assert_eq!(err.to_string(), "Profile name is required");
}

#[test]
fn debug_output_never_shows_the_api_key_or_unknown_values() {
    let t = temp_home();
    write_fixture(&t.home);
    let profiles = load_profiles(&t.home).unwrap();
    let debug = format!("{profiles:?} {:?}", profiles.get("alice").unwrap());
    for secret in ["sk-fixture-alice", "sk-fixture-bob", "not-a-profile"] {
        assert!(!debug.contains(secret), "{secret} leaked: {debug}");
    }
    assert!(
        debug.contains("agent-1"),
        "Debug should still be useful: {debug}"
    );
}
