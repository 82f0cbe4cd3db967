//! `runtimes/`: ids and file names, merge semantics, derived state and the listing, all checked
//! against the reference implementation.

use canon_local::{
    build_local_runtime_id, heartbeat_local_runtime_entry, list_local_runtime_entries,
    mark_local_runtime_stopped, read_local_runtime_entry, remove_local_runtime_entry,
    upsert_local_runtime_entry, LocalRuntimeCatalogEntry, LocalRuntimeStatus, ReviveCapability,
};
use serde_json::{json, Map, Value};

use crate::support::{assert_js_pretty, node_ok, temp_home};

fn dead_pid() -> i64 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap(); // reaped: the pid is free now
    i64::from(pid)
}

fn entry(id: &str, profile: Option<&str>) -> LocalRuntimeCatalogEntry {
    let mut e = LocalRuntimeCatalogEntry::new(
        id,
        "codex",
        profile.map(str::to_owned),
        "/work/project",
        vec!["codex".into(), "--profile".into(), "a b".into()],
        LocalRuntimeStatus::Running,
        ReviveCapability::Revivable,
    );
    e.last_started_at = Some("2026-01-01T00:00:00.000Z".into());
    e
}

#[test]
fn runtime_ids_match_node_for_tricky_cwds_and_commands() {
    crate::require_node!();
    let t = temp_home();
    let cwds = [
        ".",
        "..",
        "./",
        "/tmp/x/",
        "/tmp//x/./y/../z",
        "sub dir/with spaces",
        "ünïcødé/目录/😀",
        "/",
        "",
        "/..",
        "a/../../b",
    ];
    let commands: [&[&str]; 3] = [
        &[],
        &["node", "server.js", "--name", "my agent"],
        &["a\u{0}b", ""],
    ];
    let mut inputs = Vec::new();
    let mut ours = Vec::new();
    for cwd in cwds {
        for command in commands {
            let command: Vec<String> = command.iter().map(|s| (*s).to_owned()).collect();
            for profile in [None, Some("alice")] {
                ours.push(build_local_runtime_id("codex", profile, cwd, &command).unwrap());
                inputs.push(json!({"runtime": "codex", "profile": profile, "cwd": cwd, "launchCommand": command}));
            }
        }
    }
    let theirs = node_ok(&t.home, "buildLocalRuntimeIds", json!([inputs]));
    assert_eq!(json!(ours), theirs);
    assert_eq!(ours.len(), 66);
    // The file name is the package's too: read back through Node by id.
    let id = &ours[1];
    upsert_local_runtime_entry(&t.home, &entry(id, Some("alice"))).unwrap();
    assert_eq!(
        node_ok(&t.home, "readLocalRuntimeEntry", json!([id]))["id"],
        json!(id)
    );
}

#[test]
fn rust_written_entries_are_read_by_node_under_the_same_file_name() {
    crate::require_node!();
    let t = temp_home();
    let id = build_local_runtime_id("codex", Some("alice"), "/work/project", &[]).unwrap();
    let mut e = entry(&id, Some("alice"));
    e.sessions = Some(
        json!({"k1": {"conversationId": "c1", "baseCwd": "/w", "updatedAt": "t"}})
            .as_object()
            .unwrap()
            .clone(),
    );
    e.extra.insert("futureField".into(), json!({"a": 1}));
    upsert_local_runtime_entry(&t.home, &e).unwrap();
    assert_js_pretty(&t.home, &t.home.runtime_path(&id));
    let read = node_ok(&t.home, "readLocalRuntimeEntry", json!([id]));
    assert_eq!(read["id"], json!(id));
    assert_eq!(read["launchCommand"], json!(["codex", "--profile", "a b"]));
    assert_eq!(read["futureField"], json!({"a": 1}));
    assert_eq!(read["sessions"]["k1"]["conversationId"], json!("c1"));
    assert_eq!(read["profile"], json!("alice"));
}

#[test]
fn node_written_entries_survive_our_heartbeat_with_unknown_fields_and_sessions() {
    crate::require_node!();
    let t = temp_home();
    let id = "codex:bob:feedfacefeedface";
    node_ok(
        &t.home,
        "upsertLocalRuntimeEntry",
        json!([{"id": id, "runtime": "codex", "profile": "bob", "cwd": "/w", "launchCommand": ["codex"],
                "status": "offline", "reviveCapability": "revivable", "newerField": [1, 2],
                "sessions": {"s": {"conversationId": "c", "baseCwd": "/w", "updatedAt": "t"}}}]),
    );
    let read = read_local_runtime_entry(&t.home, id).unwrap().unwrap();
    assert_eq!(read.status, LocalRuntimeStatus::Offline);
    assert_eq!(read.extra["newerField"], json!([1, 2]));

    let mut patch = Map::new();
    patch.insert("pid".into(), json!(4242));
    let beat = heartbeat_local_runtime_entry(&t.home, id, patch)
        .unwrap()
        .unwrap();
    assert_eq!(
        (beat.status.clone(), beat.pid),
        (LocalRuntimeStatus::Running, Some(4242))
    );
    assert!(beat.last_heartbeat_at.is_some());
    assert_js_pretty(&t.home, &t.home.runtime_path(id));
    let seen = node_ok(&t.home, "readLocalRuntimeEntry", json!([id]));
    assert_eq!(seen["newerField"], json!([1, 2]));
    assert_eq!(seen["sessions"]["s"]["conversationId"], json!("c"));
    assert_eq!(seen["pid"], json!(4242));

    // Node's heartbeat over our file gives the same key order as ours did.
    let ours: Vec<String> = beat_keys(&t.home, id);
    node_ok(
        &t.home,
        "heartbeatLocalRuntimeEntry",
        json!([id, {"pid": 4242}]),
    );
    assert_eq!(beat_keys(&t.home, id), ours);
}

fn beat_keys(home: &canon_local::CanonHome, id: &str) -> Vec<String> {
    let text = std::fs::read_to_string(home.runtime_path(id)).unwrap();
    serde_json::from_str::<Value>(&text)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn mark_stopped_drops_the_pid_exactly_like_node() {
    crate::require_node!();
    let (rust, js) = (temp_home(), temp_home());
    for home in [&rust.home, &js.home] {
        let mut e = entry("codex:alice:1", Some("alice"));
        e.pid = Some(99);
        upsert_local_runtime_entry(home, &e).unwrap();
        let mut embedded = entry("codex:alice:2", Some("alice"));
        embedded.revive_capability = ReviveCapability::Embedded;
        upsert_local_runtime_entry(home, &embedded).unwrap();
    }
    let stopped = mark_local_runtime_stopped(&rust.home, "codex:alice:1", Map::new())
        .unwrap()
        .unwrap();
    let embedded = mark_local_runtime_stopped(&rust.home, "codex:alice:2", Map::new())
        .unwrap()
        .unwrap();
    node_ok(
        &js.home,
        "markLocalRuntimeStopped",
        json!(["codex:alice:1"]),
    );
    node_ok(
        &js.home,
        "markLocalRuntimeStopped",
        json!(["codex:alice:2"]),
    );
    assert_eq!(
        (stopped.status, stopped.pid),
        (LocalRuntimeStatus::Offline, None)
    );
    assert_eq!(embedded.status, LocalRuntimeStatus::Embedded);
    for id in ["codex:alice:1", "codex:alice:2"] {
        assert_eq!(beat_keys(&rust.home, id), beat_keys(&js.home, id));
    }
    assert!(
        mark_local_runtime_stopped(&rust.home, "codex:nobody:3", Map::new())
            .unwrap()
            .is_none()
    );
}

#[test]
fn listing_derives_state_reports_bad_files_and_sorts_like_node() {
    crate::require_node!();
    let t = temp_home();
    node_ok(
        &t.home,
        "upsertAgentProfile",
        json!(["alice", {"apiKey": "k", "agentId": "a", "agentName": "A", "registeredAt": "t"}]),
    );
    let mut stale = entry("codex:alice:stale", Some("alice"));
    stale.pid = Some(dead_pid());
    stale.last_heartbeat_at = Some("2026-01-03T00:00:00.000Z".into());
    let mut alive = entry("codex:alice:alive", Some("alice"));
    alive.pid = Some(i64::from(std::process::id()));
    alive.last_heartbeat_at = Some("2026-01-02T00:00:00.000Z".into());
    let mut orphan = entry("codex:gone:x", Some("gone"));
    orphan.status = LocalRuntimeStatus::Offline;
    orphan.last_started_at = None;
    orphan.last_stopped_at = Some("2026-01-04T00:00:00.000Z".into());
    let mut other_kind = entry("sdk:manual:y", None);
    other_kind.runtime = "sdk".into();
    for e in [&stale, &alive, &orphan, &other_kind] {
        upsert_local_runtime_entry(&t.home, e).unwrap();
    }
    let dir = t.home.runtimes_dir();
    std::fs::write(dir.join("corrupt.json"), "{not json").unwrap();
    std::fs::write(dir.join("shape.json"), r#"{"id": 5}"#).unwrap();
    std::fs::write(dir.join("notes.txt"), "ignored: not *.json").unwrap();

    let listing = list_local_runtime_entries(&t.home, None).unwrap();
    let ids: Vec<&str> = listing.entries.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "codex:gone:x",
            "codex:alice:stale",
            "codex:alice:alive",
            "sdk:manual:y"
        ]
    );
    let state = |id: &str| {
        let e = listing.entries.iter().find(|e| e.id == id).unwrap();
        (
            e.status.as_str().to_owned(),
            e.revive_capability.as_str().to_owned(),
        )
    };
    assert_eq!(
        state("codex:alice:stale"),
        ("stale".into(), "revivable".into())
    );
    assert_eq!(
        state("codex:alice:alive"),
        ("running".into(), "revivable".into())
    );
    assert_eq!(
        state("codex:gone:x"),
        ("offline".into(), "missing-profile".into())
    );
    let mut problems: Vec<String> = listing
        .problems
        .iter()
        .map(|p| p.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    problems.sort();
    assert_eq!(problems, ["corrupt.json", "shape.json"]);
    assert!(listing.problems.iter().all(|p| !p.reason.is_empty()));

    // Node (minus the shape-less file, which it would list as garbage) agrees on order and state.
    std::fs::remove_file(dir.join("shape.json")).unwrap();
    let theirs = node_ok(&t.home, "listLocalRuntimeEntries", json!([]));
    let theirs: Vec<(String, String, String)> = theirs
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().to_owned(),
                e["status"].as_str().unwrap().to_owned(),
                e["reviveCapability"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let ours: Vec<(String, String, String)> = listing
        .entries
        .iter()
        .map(|e| {
            (
                e.id.clone(),
                e.status.as_str().to_owned(),
                e.revive_capability.as_str().to_owned(),
            )
        })
        .collect();
    assert_eq!(ours, theirs);

    let sdk_only = list_local_runtime_entries(&t.home, Some("sdk")).unwrap();
    assert_eq!(sdk_only.entries.len(), 1);
}

#[test]
fn read_requires_a_matching_id_and_remove_is_idempotent() {
    let t = temp_home();
    let e = entry("codex:alice:z", Some("alice"));
    upsert_local_runtime_entry(&t.home, &e).unwrap();
    // Same file name, different id inside: not this entry.
    let path = t.home.runtime_path("codex:alice:z");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("codex:alice:z", "codex:alice:other");
    std::fs::write(&path, text).unwrap();
    assert!(read_local_runtime_entry(&t.home, "codex:alice:z")
        .unwrap()
        .is_none());
    remove_local_runtime_entry(&t.home, "codex:alice:z").unwrap();
    remove_local_runtime_entry(&t.home, "codex:alice:z").unwrap();
    assert!(!path.exists());
    assert!(list_local_runtime_entries(&t.home, None)
        .unwrap()
        .entries
        .is_empty());
}

#[test]
fn missing_runtimes_dir_lists_nothing() {
    let t = temp_home();
    let listing = list_local_runtime_entries(&t.home, None).unwrap();
    assert!(listing.entries.is_empty() && listing.problems.is_empty());
}

/// Every file under `dir` with its bytes (links as their target).
fn tree(dir: &std::path::Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if meta.is_symlink() {
                out.insert(
                    rel,
                    std::fs::read_link(&path)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                );
            } else if meta.is_dir() {
                stack.push(path);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Two entries, a profile and a lock, written the same way into `home`.
fn forget_fixture(home: &canon_local::CanonHome) {
    let mut stale = entry("codex:alice:stale", Some("alice"));
    stale.pid = Some(dead_pid());
    upsert_local_runtime_entry(home, &stale).unwrap();
    upsert_local_runtime_entry(home, &entry("codex:bob:other", Some("bob"))).unwrap();
    std::fs::write(
        home.agents_path(),
        "{\n  \"alice\": {\n    \"apiKey\": \"k\"\n  }\n}",
    )
    .unwrap();
    std::fs::create_dir_all(home.locks_dir()).unwrap();
    std::fs::write(home.lock_path("alice"), "{\"pid\":1}").unwrap();
}

#[test]
fn forgetting_an_entry_leaves_canon_home_as_remove_local_runtime_entry_does() {
    crate::require_node!();
    let theirs = temp_home();
    let ours = temp_home();
    forget_fixture(&theirs.home);
    forget_fixture(&ours.home);
    node_ok(
        &theirs.home,
        "removeLocalRuntimeEntry",
        json!(["codex:alice:stale"]),
    );
    let removed =
        canon_local::remove_local_runtime_entry_checked(&ours.home, "codex:alice:stale", |_| true)
            .unwrap();
    assert!(removed);
    let (theirs_tree, ours_tree) = (tree(theirs.home.root()), tree(ours.home.root()));
    // Only the stale entry's file went; the other entry, agents.json and the lock are as they were.
    assert_eq!(
        ours_tree.keys().collect::<Vec<_>>(),
        theirs_tree.keys().collect::<Vec<_>>()
    );
    assert!(!ours.home.runtime_path("codex:alice:stale").exists());
    assert!(ours.home.runtime_path("codex:bob:other").exists());
    for (name, bytes) in &theirs_tree {
        if !name.starts_with("runtimes/") {
            assert_eq!(&ours_tree[name], bytes, "{name}");
        }
    }
}

#[test]
fn forgetting_an_entry_that_changed_since_the_check_keeps_it() {
    let t = temp_home();
    forget_fixture(&t.home);
    let before = tree(t.home.root());
    let removed =
        canon_local::remove_local_runtime_entry_checked(&t.home, "codex:alice:stale", |e| {
            e.pid.is_none()
        })
        .unwrap();
    assert!(!removed);
    assert_eq!(tree(t.home.root()), before);
    // No such entry: nothing to do, nothing touched.
    assert!(
        !canon_local::remove_local_runtime_entry_checked(&t.home, "codex:nobody:x", |_| true)
            .unwrap()
    );
    assert_eq!(tree(t.home.root()), before);
}

#[test]
fn forgetting_refuses_a_linked_or_broken_entry_file_with_a_reason_and_leaves_it() {
    let t = temp_home();
    forget_fixture(&t.home);
    let linked = t.home.runtime_path("codex:alice:linked");
    std::os::unix::fs::symlink(t.home.runtime_path("codex:bob:other"), &linked).unwrap();
    let broken = t.home.runtime_path("codex:alice:broken");
    std::fs::write(&broken, "{ \"id\": \"codex:alice:broken\", ").unwrap();
    let before = tree(t.home.root());
    for id in ["codex:alice:linked", "codex:alice:broken"] {
        let error =
            canon_local::remove_local_runtime_entry_checked(&t.home, id, |_| true).unwrap_err();
        assert!(!error.to_string().is_empty(), "{id}: {error}");
    }
    assert_eq!(tree(t.home.root()), before);
}
