//! The inventory: receipts and catalog entries merged into one list, with each action's
//! availability and the files that were ignored.

use canon_local::LocalRuntimeStatus;
use supercode_core::view::{IgnoredLocation, RuntimeOrigin, RuntimeStatus};

use crate::support::{find, register, Fixture, Sleeper};

#[test]
fn a_live_receipt_linked_to_its_catalog_entry_is_one_view_with_origin_both() {
    let fx = Fixture::new();
    fx.add_profile("ada", "key-ada");
    let me = std::process::id();
    let catalog_id = fx.add_catalog_entry(
        Some("ada"),
        &["claude", "--resume"],
        LocalRuntimeStatus::Running,
        Some(me),
    );
    let (registration, _listener) = register(fx.receipts(), "ada-live", "tok", Some(&catalog_id));

    let snapshot = fx.core().snapshot();

    assert_eq!(snapshot.runtimes.len(), 1, "{:#?}", snapshot.runtimes);
    let view = &snapshot.runtimes[0];
    assert_eq!(view.origin, RuntimeOrigin::Both);
    // Issue 31: its id is the catalog's, which it keeps once stale or revived.
    assert_eq!(view.id, catalog_id);
    assert_eq!(
        view.endpoint.as_deref(),
        Some(registration.endpoint().as_str())
    );
    assert_eq!(view.catalog_id.as_deref(), Some(catalog_id.as_str()));
    assert_eq!(view.status, RuntimeStatus::Running);
    assert_eq!(view.profile.as_deref(), Some("ada"));
    assert!(view.attach.available);
    assert!(!view.revive.available);
    assert_eq!(
        view.launch_command.as_deref(),
        Some(&["claude".to_owned(), "--resume".to_owned()][..])
    );
}

#[test]
fn catalog_only_entries_are_listed_with_their_derived_status_and_revive_availability() {
    let fx = Fixture::new();
    fx.add_profile("bob", "key-bob");
    let offline =
        fx.add_catalog_entry(Some("bob"), &["run-bob"], LocalRuntimeStatus::Offline, None);
    let mut dead = Sleeper::sleep();
    let dead_pid = dead.pid();
    dead.kill();
    let stale = fx.add_catalog_entry(
        Some("bob"),
        &["run-bob", "--other"],
        LocalRuntimeStatus::Running,
        Some(dead_pid),
    );

    let snapshot = fx.core().snapshot();

    assert_eq!(snapshot.runtimes.len(), 2, "{:#?}", snapshot.runtimes);
    let offline = find(&snapshot, &offline).unwrap();
    assert_eq!(offline.origin, RuntimeOrigin::Catalog);
    assert_eq!(offline.status, RuntimeStatus::Offline);
    assert!(offline.revive.available, "{:?}", offline.revive);
    assert!(!offline.attach.available);
    assert!(!offline.forget.available);
    let stale = find(&snapshot, &stale).unwrap();
    assert_eq!(stale.status, RuntimeStatus::Stale);
    assert!(
        stale
            .status_reason
            .as_deref()
            .is_some_and(|r| r.contains(&format!("PID {dead_pid}"))),
        "{:?}",
        stale.status_reason
    );
    assert!(stale.revive.available, "{:?}", stale.revive);
}

#[test]
fn a_catalog_entry_whose_profile_is_missing_from_agents_json_cannot_be_revived() {
    let fx = Fixture::new();
    fx.add_profile("someone-else", "k");
    let id = fx.add_catalog_entry(Some("ghost"), &["run"], LocalRuntimeStatus::Offline, None);

    let snapshot = fx.core().snapshot();

    let view = find(&snapshot, &id).unwrap();
    assert!(!view.revive.available);
    let reason = view.revive.reason.clone().unwrap();
    assert!(
        reason.contains("\"ghost\"") && reason.contains("agents.json"),
        "{reason}"
    );
}

#[test]
fn a_manual_or_unknown_revive_capability_is_not_revivable_and_says_which() {
    let fx = Fixture::new();
    fx.add_profile("m", "k");
    let ids = [
        canon_local::ReviveCapability::Manual,
        canon_local::ReviveCapability::Other("resume".into()),
    ]
    .map(|capability| {
        let launch = format!("run-{}", capability.as_str());
        fx.add_catalog_entry_with(
            Some("m"),
            &[&launch],
            LocalRuntimeStatus::Offline,
            None,
            capability,
        )
    });

    let snapshot = fx.core().snapshot();

    let reason = |id: &str| {
        let view = find(&snapshot, id).unwrap();
        assert!(!view.revive.available, "{view:?}");
        view.revive.reason.clone().unwrap()
    };
    let manual = reason(&ids[0]);
    assert!(manual.contains("started by hand"), "{manual}");
    let unknown = reason(&ids[1]);
    assert!(
        unknown.contains("\"resume\"") && unknown.contains("does not know"),
        "{unknown}"
    );
    assert!(!unknown.to_lowercase().contains("catalog"), "{unknown}");
}

#[test]
fn a_profile_lock_held_by_a_live_process_makes_revive_unavailable_naming_the_pid() {
    let fx = Fixture::new();
    fx.add_profile("carol", "k");
    let id = fx.add_catalog_entry(Some("carol"), &["run"], LocalRuntimeStatus::Offline, None);
    let holder = Sleeper::sleep();
    fx.hold_lock_as("carol", holder.pid());

    let view = find(&fx.core().snapshot(), &id).unwrap().clone();
    assert!(!view.revive.available);
    let reason = view.revive.reason.unwrap();
    assert!(
        reason.contains(&format!("PID {}", holder.pid())),
        "{reason}"
    );

    // Once the holder is gone its lock is stale, and revive is available again.
    drop(holder);
    let view = find(&fx.core().snapshot(), &id).unwrap().clone();
    assert!(view.revive.available, "{:?}", view.revive);
}

#[test]
fn ignored_receipts_and_corrupt_canon_files_are_listed_with_reasons_without_hiding_the_rest() {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let fx = Fixture::new();
    fx.add_profile("dan", "k");
    let good = fx.add_catalog_entry(Some("dan"), &["run"], LocalRuntimeStatus::Offline, None);
    let (_live, _listener) = register(fx.receipts(), "alive", "tok", None);
    // A receipt-named file that is not JSON.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(fx.receipts().path())
        .unwrap();
    let bad_receipt = "lre_00000000000000000000000000000000.json";
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(fx.receipts().path().join(bad_receipt))
        .unwrap();
    std::io::Write::write_all(&mut file, b"{ not json").unwrap();
    // A corrupt catalog entry and a corrupt pending-registrations.json.
    std::fs::write(fx.canon().runtimes_dir().join("broken.json"), "[1,").unwrap();
    std::fs::write(fx.canon().pending_registrations_path(), "nope").unwrap();

    let snapshot = fx.core().snapshot();

    let ignored = |location: IgnoredLocation, file: &str| {
        snapshot
            .ignored
            .iter()
            .find(|i| i.location == location && i.file.contains(file))
    };
    let receipt = ignored(IgnoredLocation::Receipts, bad_receipt)
        .unwrap_or_else(|| panic!("{:#?}", snapshot.ignored));
    assert!(!receipt.reason.is_empty());
    assert!(
        ignored(IgnoredLocation::Canon, "broken.json").is_some(),
        "{:#?}",
        snapshot.ignored
    );
    assert!(
        ignored(IgnoredLocation::Canon, "pending-registrations.json").is_some(),
        "{:#?}",
        snapshot.ignored
    );
    // The readable records are all still there.
    assert!(find(&snapshot, &good).is_some());
    assert!(snapshot.runtimes.iter().any(|r| r.name == "alive"));
}

#[test]
fn first_run_is_on_until_a_runtime_is_seen_and_stays_off_after_it_is_gone() {
    let fx = Fixture::new();
    let core = fx.core();
    assert!(core.snapshot().first_run);
    assert!(
        core.snapshot().first_run,
        "reading alone must not end first run"
    );

    let (registration, _listener) = register(fx.receipts(), "first", "tok", None);
    let seen = core.snapshot();
    assert!(!seen.first_run);
    assert_eq!(seen.runtimes.len(), 1);

    registration.unregister().unwrap();
    let after = core.snapshot();
    assert!(after.runtimes.is_empty());
    assert!(
        !after.first_run,
        "first run must stay off once a runtime was seen"
    );
    // A fresh core over the same state directory remembers it too.
    assert!(!fx.core().snapshot().first_run);
}

/// Issue 13: the package's derived `status` and `reviveCapability` reach the view typed; a lock
/// file that is a FIFO is listed with its reason and makes revive unavailable with it (it is never
/// opened for a blocking read, nor deleted); an `agents.json` other users can read is used, and
/// listed as a warning.
#[test]
fn issue_13_untrusted_locks_and_readable_canon_files_are_reported_and_derived_state_is_typed() {
    use canon_local::ReviveCapability;
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    fx.add_profile("eve", "k");
    let eve = fx.add_catalog_entry(Some("eve"), &["run-eve"], LocalRuntimeStatus::Offline, None);
    let nobody = fx.add_catalog_entry(
        Some("nobody"),
        &["run-nobody"],
        LocalRuntimeStatus::Offline,
        None,
    );
    std::fs::create_dir_all(fx.canon().locks_dir()).unwrap();
    let lock = fx.canon().lock_path("eve");
    live_runtime::test_support::mkfifo(&lock);
    let agents = fx.canon().agents_path();
    std::fs::set_permissions(&agents, std::fs::Permissions::from_mode(0o644)).unwrap();

    let snapshot = fx.core().snapshot();

    let eve = find(&snapshot, &eve).unwrap();
    assert_eq!(eve.catalog_status, Some(LocalRuntimeStatus::Offline));
    assert_eq!(eve.revive_capability, Some(ReviveCapability::Revivable));
    assert!(!eve.revive.available);
    let reason = eve.revive.reason.as_deref().unwrap();
    assert!(
        reason.contains("locks/eve.lock") && reason.contains("FIFO"),
        "{reason}"
    );
    let nobody = find(&snapshot, &nobody).unwrap();
    assert_eq!(
        nobody.revive_capability,
        Some(ReviveCapability::MissingProfile)
    );
    assert!(
        snapshot
            .ignored
            .iter()
            .any(|i| i.location == IgnoredLocation::Canon
                && i.file == "locks/eve.lock"
                && i.reason.contains("FIFO")),
        "{:#?}",
        snapshot.ignored
    );
    assert!(lock.exists(), "an untrusted lock is not deleted");
    let warning = snapshot
        .warnings
        .iter()
        .find(|w| w.file == "agents.json")
        .unwrap_or_else(|| panic!("{:#?}", snapshot.warnings));
    assert!(warning.reason.contains("permissions (644)"), "{warning:?}");
    assert_eq!(
        std::fs::metadata(&agents).unwrap().permissions().mode() & 0o777,
        0o644,
        "reported, not changed"
    );
    // A receipt-only runtime has no catalog state.
    let (_live, _listener) = register(fx.receipts(), "solo", "tok", None);
    let snapshot = fx.core().snapshot();
    let solo = snapshot.runtimes.iter().find(|r| r.name == "solo").unwrap();
    assert_eq!(
        (solo.catalog_status.clone(), solo.revive_capability.clone()),
        (None, None)
    );
}

/// Issue 30: a read is a read. Attach, act, the snapshot and the one-shot read of states leave a
/// dead process's receipt on disk (none of them lists it); only the explicit reconciliation
/// `list` takes removes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_30_resolving_and_reading_leave_a_dead_receipt_and_list_reconciles_it() {
    let fx = Fixture::new();
    let sleeper = Sleeper::sleep();
    let identity = live_runtime::ProcessIdentity::of(sleeper.pid()).unwrap();
    let endpoint =
        crate::support::write_receipt(fx.receipts(), identity.pid, identity.start_time, "doomed");
    drop(sleeper); // SIGKILL, reaped
    let path = fx.receipts().receipt_path(&endpoint.parse().unwrap());
    let core = fx.core();

    assert!(find(&core.snapshot(), &endpoint).is_none());
    assert!(find(&core.snapshot_with_states().await, &endpoint).is_none());
    assert!(core.attach(&endpoint).await.is_err());
    assert!(core.act(&endpoint, "approve", 1).await.is_err());
    assert!(path.exists(), "a read removed the dead runtime's receipt");

    let listed = core.reconcile_and_snapshot_with_states().await;
    // Issue 31: what list reconciled away is shown as exited until dismissed.
    assert_eq!(
        find(&listed, &endpoint).map(|r| r.status),
        Some(RuntimeStatus::Exited)
    );
    assert!(
        !path.exists(),
        "list's reconciliation left the dead receipt"
    );
}

#[test]
fn issue_31_reasons_about_runtimes_canon_alone_knows_are_in_plain_words() {
    let fx = Fixture::new();
    fx.add_profile("bob", "key-bob");
    let mut dead = Sleeper::sleep();
    let dead_pid = dead.pid();
    dead.kill();
    let alive = Sleeper::sleep();
    let ids = [
        fx.add_catalog_entry(Some("bob"), &["a"], LocalRuntimeStatus::Offline, None),
        fx.add_catalog_entry(
            Some("bob"),
            &["b"],
            LocalRuntimeStatus::Running,
            Some(dead_pid),
        ),
        fx.add_catalog_entry(
            Some("bob"),
            &["c"],
            LocalRuntimeStatus::Running,
            Some(alive.pid()),
        ),
        fx.add_catalog_entry(Some("gone"), &["d"], LocalRuntimeStatus::Offline, None),
        fx.add_catalog_entry_with(
            Some("bob"),
            &["e"],
            LocalRuntimeStatus::Offline,
            None,
            canon_local::ReviveCapability::Other("resume".into()),
        ),
    ];

    let snapshot = fx.core().snapshot();

    let mut reasons = Vec::new();
    for id in &ids {
        let view = find(&snapshot, id).unwrap();
        reasons.extend(view.status_reason.clone());
        for action in [&view.attach, &view.forget, &view.revive] {
            reasons.extend(action.reason.clone());
        }
    }
    assert!(reasons.len() >= 10, "{reasons:#?}");
    for reason in &reasons {
        assert!(!reason.to_lowercase().contains("catalog"), "{reason}");
        assert!(!reason.contains("receipt"), "{reason}");
    }
}
