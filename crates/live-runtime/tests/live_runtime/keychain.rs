//! The real OS keychain (Secret Service): round trips, adoption, and a hung service that must time
//! out within the bound instead of hanging the caller.

use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use live_runtime::{
    register_live_runtime, LiveRuntimeReceiptError, ReceiptDir, SecretStore, SecretStoreError,
    SecretStoreKind, Sensitive,
};

use crate::common::{
    entries, is_child_for, keychain_or_skip, loopback, run_child_test, scratch_with, source, token,
};

#[test]
fn register_list_resolve_discover_find_forget_round_trip_with_keychain() {
    let Some(store) = keychain_or_skip("round_trip_with_keychain") else {
        return;
    };
    assert_eq!(store.kind(), SecretStoreKind::Keychain);
    let (_tmp, dir) = scratch_with(store);
    crate::round_trip::full_round_trip(&dir);
}

#[test]
fn foreign_inline_token_is_adopted_into_the_keychain() {
    let Some(store) = keychain_or_skip("foreign_inline_token_is_adopted_into_the_keychain") else {
        return;
    };
    let (_tmp, dir) = scratch_with(store);
    crate::foreign::inline_token_is_adopted(&dir, "python-inline-token-7");
}

#[test]
fn keychain_get_of_a_missing_entry_is_none_and_deleting_it_is_ok() {
    let Some(store) = keychain_or_skip("keychain_missing_entry") else {
        return;
    };
    let account = format!("test-missing:{:x}", std::process::id());
    assert!(store.get(&account).unwrap().is_none());
    store.delete(&account).unwrap();
    store.set(&account, &Sensitive::new("v1".into())).unwrap();
    store.set(&account, &Sensitive::new("v2".into())).unwrap();
    assert_eq!(store.get(&account).unwrap().unwrap().expose(), "v2");
    store.delete(&account).unwrap();
    assert!(store.get(&account).unwrap().is_none());
}

/// The bound the child uses; short so the test is quick, the assertion allows generous slack.
const HUNG_TIMEOUT_MS: u64 = 1000;

#[test]
fn hung_secret_service_times_out_within_the_bound() {
    let tmp = tempfile::tempdir().unwrap();
    let socket = tmp.path().join("bus.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    // Accepts every connection and never says a word.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let address = format!("unix:path={}", socket.display());
    let output = run_child_test(
        "keychain::hung_secret_service_child",
        &[
            ("DBUS_SESSION_BUS_ADDRESS", &address),
            (
                "SUPERCODE_KEYCHAIN_TIMEOUT_MS",
                &HUNG_TIMEOUT_MS.to_string(),
            ),
        ],
        &["SUPERCODE_SECRET_STORE"],
        Duration::from_secs(120),
    );
    let text = live_runtime::test_support::assert_child_ok("hung_secret_service_child", &output);
    eprintln!("hung-keychain child output:\n{text}");
}

#[test]
#[ignore = "helper: run in a child process by hung_secret_service_times_out_within_the_bound"]
fn hung_secret_service_child() {
    if !is_child_for("hung_secret_service_child") {
        eprintln!("helper test: only meaningful when started by its parent test");
        return;
    }
    let bound = Duration::from_millis(HUNG_TIMEOUT_MS);
    let store = SecretStore::keychain();
    // Repeated calls each time out within the bound: none queues behind the hung one.
    for attempt in 0..3 {
        let started = Instant::now();
        let err = store.get("live-runtime:hung").unwrap_err();
        let elapsed = started.elapsed();
        assert!(
            matches!(err, SecretStoreError::TimedOut { after } if after == bound),
            "{err:?}"
        );
        assert!(
            elapsed < bound * 4,
            "attempt {attempt} took {elapsed:?}, bound {bound:?}"
        );
        assert!(err.to_string().contains("unlocked"), "{err}");
        println!("attempt {attempt}: timed out after {elapsed:?}");
    }
    // Registration fails cleanly and publishes nothing.
    let tmp = tempfile::tempdir().unwrap();
    let dir = ReceiptDir::new(tmp.path().join("receipts"), store);
    let started = Instant::now();
    let err = register_live_runtime(&dir, "rt", source("s"), loopback(1), token("t")).unwrap_err();
    assert!(
        matches!(
            err,
            LiveRuntimeReceiptError::Secret(SecretStoreError::TimedOut { .. })
        ),
        "{err:?}"
    );
    assert!(started.elapsed() < bound * 4);
    assert!(entries(dir.path()).iter().all(|n| !n.ends_with(".json")));
    println!("CHILD_OK");
}

/// True when `program` can be found on PATH.
fn on_path(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs the ignored helper test `child` in a private D-Bus session and HOME whose keyring daemon
/// `start_keyring` (a shell command, given `$KEYRING_PASSWORD`) starts, and asserts it printed
/// CHILD_OK; returns its output. `None` (after saying so) when the tools are missing and the
/// keychain is not required.
fn run_in_private_keyring(child: &str, start_keyring: &str) -> Option<String> {
    if !(on_path("dbus-run-session") && on_path("gnome-keyring-daemon")) {
        if live_runtime::test_support::keychain_required() {
            panic!("SUPERCODE_REQUIRE_KEYCHAIN=1 but dbus-run-session / gnome-keyring-daemon are missing");
        }
        eprintln!("SKIPPED {child}: dbus-run-session or gnome-keyring-daemon not installed");
        return None;
    }
    let home = tempfile::tempdir().unwrap();
    let test = format!("keychain::{child}");
    let mut command = std::process::Command::new("dbus-run-session");
    command
        .args(["--", "sh", "-c"])
        .arg(format!("{start_keyring} >/dev/null && exec \"$@\""))
        .arg("sh")
        .arg(std::env::current_exe().unwrap())
        .args(crate::common::child_test_args(&test))
        .env("HOME", home.path())
        .env("XDG_DATA_HOME", home.path().join("data"))
        .env("KEYRING_PASSWORD", PRIVATE_KEYRING_PASSWORD)
        .env_remove("SUPERCODE_SECRET_STORE");
    let output = crate::common::run_with_deadline(command, &test, Duration::from_secs(120));
    Some(live_runtime::test_support::assert_child_ok(&test, &output))
}

/// The throwaway password of the private keyrings of [`run_in_private_keyring`].
const PRIVATE_KEYRING_PASSWORD: &str = "private-test-keyring";

#[test]
fn a_locked_keyring_reports_locked_and_never_falls_back_to_plaintext() {
    // A keyring daemon that is started but never unlocked.
    run_in_private_keyring(
        "locked_keyring_child",
        "gnome-keyring-daemon --start --components=secrets",
    );
}

#[test]
#[ignore = "helper: run in a private D-Bus session by a_locked_keyring_reports_locked_and_never_falls_back_to_plaintext"]
fn locked_keyring_child() {
    if !is_child_for("locked_keyring_child") {
        eprintln!("helper test: only meaningful when started by its parent test");
        return;
    }
    let store = SecretStore::keychain();
    let err = store
        .set("live-runtime:locked", &Sensitive::new("t".into()))
        .unwrap_err();
    assert!(matches!(err, SecretStoreError::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("unlock your keyring"), "{err}");

    let tmp = tempfile::tempdir().unwrap();
    let dir = ReceiptDir::new(tmp.path().join("receipts"), store);
    let err = register_live_runtime(&dir, "rt", source("s"), loopback(1), token("t")).unwrap_err();
    assert!(
        matches!(
            err,
            LiveRuntimeReceiptError::Secret(SecretStoreError::Locked { .. })
        ),
        "{err:?}"
    );
    // Nothing was published and nothing was written in plaintext anywhere under the temp dir.
    assert!(entries(dir.path()).iter().all(|n| !n.ends_with(".json")));
    println!("CHILD_OK");
}

#[test]
fn entries_written_by_keyring_and_by_the_store_are_the_same_entries() {
    let Some(store) = keychain_or_skip("entries_written_by_keyring_and_by_the_store") else {
        return;
    };
    let account = format!("test-interop:{:x}", std::process::id());
    let entry = keyring::Entry::new(SecretStore::SERVICE, &account).unwrap();

    entry.set_password("from-keyring").unwrap();
    assert_eq!(
        store.get(&account).unwrap().unwrap().expose(),
        "from-keyring"
    );

    store
        .set(&account, &Sensitive::new("from-store".into()))
        .unwrap();
    assert_eq!(entry.get_password().unwrap(), "from-store");
    // Replacing did not add a second item (keyring would then call the entry ambiguous).
    assert_eq!(entry.get_password().unwrap(), "from-store");

    store.delete(&account).unwrap();
    assert!(matches!(entry.get_password(), Err(keyring::Error::NoEntry)));
    assert!(store.get(&account).unwrap().is_none());
}

#[test]
fn an_item_without_a_target_attribute_is_found_as_keyring_finds_it() {
    let Some(store) = keychain_or_skip("an_item_without_a_target_attribute") else {
        return;
    };
    // How keyring v1 (and other tools) wrote entries: service and username, no `target`.
    let account = format!("test-legacy:{:x}", std::process::id());
    let stored = std::process::Command::new("sh")
        .args([
            "-c",
            "printf legacy-value | secret-tool store --label=legacy service \"$1\" username \"$2\"",
        ])
        .args(["sh", SecretStore::SERVICE, &account])
        .status()
        .unwrap();
    assert!(stored.success(), "secret-tool store failed");
    assert_eq!(
        store.get(&account).unwrap().unwrap().expose(),
        "legacy-value"
    );
    store
        .set(&account, &Sensitive::new("updated".into()))
        .unwrap();
    assert_eq!(store.get(&account).unwrap().unwrap().expose(), "updated");
    store.delete(&account).unwrap();
    assert!(store.get(&account).unwrap().is_none());
}

#[test]
fn a_restarted_keyring_daemon_is_reached_on_a_fresh_session() {
    // An unlocked keyring the child can restart.
    let started =
        "printf %s \"$KEYRING_PASSWORD\" | gnome-keyring-daemon --unlock --components=secrets";
    if let Some(text) = run_in_private_keyring("restarted_keyring_child", started) {
        eprintln!("restarted-keyring child output:\n{text}");
    }
}

#[test]
#[ignore = "helper: run in a private D-Bus session by a_restarted_keyring_daemon_is_reached_on_a_fresh_session"]
fn restarted_keyring_child() {
    if !is_child_for("restarted_keyring_child") {
        eprintln!("helper test: only meaningful when started by its parent test");
        return;
    }
    let store = SecretStore::keychain();
    store
        .set("live-runtime:restart", &Sensitive::new("kept".into()))
        .unwrap();
    assert_eq!(
        store.get("live-runtime:restart").unwrap().unwrap().expose(),
        "kept"
    );
    let old_daemon = keyring_daemon_pid();
    // A new daemon takes the bus name over and the old one exits: the session the store's
    // keychain thread holds now names an object nobody serves.
    let replaced = std::process::Command::new("sh")
        .args([
            "-c",
            "printf %s \"$KEYRING_PASSWORD\" | gnome-keyring-daemon --replace --unlock --components=secrets >/dev/null",
        ])
        .status()
        .unwrap();
    assert!(replaced.success(), "gnome-keyring-daemon --replace failed");
    let new_daemon = live_runtime::test_support::wait_until(
        "a new keyring daemon to own org.freedesktop.secrets",
        Duration::from_secs(30),
        || keyring_daemon_pid().filter(|pid| Some(*pid) != old_daemon),
    );
    println!("keyring daemon {old_daemon:?} replaced by {new_daemon}");
    assert_eq!(
        store.get("live-runtime:restart").unwrap().unwrap().expose(),
        "kept"
    );
    store.delete("live-runtime:restart").unwrap();
    assert!(store.get("live-runtime:restart").unwrap().is_none());
    println!("CHILD_OK");
}

/// The pid of the process owning `org.freedesktop.secrets` on the session bus, if any.
fn keyring_daemon_pid() -> Option<u32> {
    let output = std::process::Command::new("dbus-send")
        .args([
            "--session",
            "--print-reply",
            "--dest=org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus.GetConnectionUnixProcessID",
            "string:org.freedesktop.secrets",
        ])
        .output()
        .ok()?;
    let reply = String::from_utf8_lossy(&output.stdout);
    reply.split_whitespace().last()?.parse().ok()
}
