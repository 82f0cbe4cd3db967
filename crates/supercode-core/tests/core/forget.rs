//! Forget: only a stale receipt (and its secret) goes; a running runtime is refused.

use std::collections::BTreeMap;
use std::path::Path;

use canon_local::LocalRuntimeStatus;
use live_runtime::{secret_account, ProcessIdentity, Sensitive};
use supercode_core::view::{CommandError, ErrorCode, RuntimeStatus};

use crate::support::{find, keychain_or_skip, register, write_receipt, Fixture, Sleeper};

/// Every file under `dir` with its bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

#[test]
fn forget_refuses_a_running_runtime_with_code_refused_and_keeps_its_receipt() {
    let fx = Fixture::new();
    let (registration, _listener) = register(fx.receipts(), "busy", "tok", None);
    let id = registration.endpoint().to_string();
    let core = fx.core();

    let error = CommandError::from(core.forget(&id).unwrap_err());

    assert_eq!(error.code, ErrorCode::Refused, "{error:?}");
    assert!(fx.receipts().receipt_path(registration.endpoint()).exists());
    assert!(fx
        .store()
        .get(&secret_account(registration.endpoint()))
        .unwrap()
        .is_some());
    assert_eq!(
        find(&core.snapshot(), &id).unwrap().status,
        RuntimeStatus::Running
    );
}

#[test]
fn forget_removes_the_stale_receipt_of_a_reused_pid_and_its_secret_and_nothing_else() {
    forget_removes_only_the_stale_receipt(&Fixture::new());
}

#[test]
fn forget_removes_the_stale_runtimes_token_from_the_os_keychain_and_no_other() {
    let Some(store) =
        keychain_or_skip("forget_removes_the_stale_runtimes_token_from_the_os_keychain")
    else {
        return;
    };
    forget_removes_only_the_stale_receipt(&Fixture::with_store(store));
}

fn forget_removes_only_the_stale_receipt(fx: &Fixture) {
    // Everything else that must survive: a running receipt, a catalog entry, agents.json.
    fx.add_profile("erin", "key-erin");
    fx.add_catalog_entry(Some("erin"), &["run"], LocalRuntimeStatus::Offline, None);
    let (other, _listener) = register(fx.receipts(), "bystander", "tok", None);
    // A live pid whose start time does not match the receipt: the pid was "reused".
    let sleeper = Sleeper::sleep();
    let ProcessIdentity { pid, start_time } = sleeper.identity();
    let stale = write_receipt(fx.receipts(), pid, start_time + 1, "reused");
    let endpoint = stale.parse().unwrap();
    fx.store()
        .set(
            &secret_account(&endpoint),
            &Sensitive::new("stale-token".into()),
        )
        .unwrap();
    let core = fx.core();
    let view = find(&core.snapshot(), &stale).unwrap().clone();
    assert_eq!(view.status, RuntimeStatus::Stale);
    assert!(view.forget.available);
    let canon_before = tree(fx.canon().root());
    let receipts_before = tree(fx.receipts().path());
    let file_secrets = fx.root.join("secrets");
    let secrets_before = file_secrets.exists().then(|| tree(&file_secrets));

    core.forget(&stale).unwrap();

    let mut receipts_expected = receipts_before;
    receipts_expected.remove(&format!("{stale}.json")).unwrap();
    assert_eq!(tree(fx.receipts().path()), receipts_expected);
    assert_eq!(fx.store().get(&secret_account(&endpoint)).unwrap(), None);
    if let Some(before) = secrets_before {
        assert_eq!(
            tree(&file_secrets).len(),
            before.len() - 1,
            "only the stale runtime's secret goes"
        );
    }
    assert!(fx
        .store()
        .get(&secret_account(other.endpoint()))
        .unwrap()
        .is_some());
    assert_eq!(tree(fx.canon().root()), canon_before);
    assert!(
        live_runtime::pid_exists(pid),
        "forget never touches the process"
    );
    let after = core.snapshot();
    assert!(find(&after, &stale).is_none());
    assert_eq!(after.runtimes.len(), 2);
}

#[test]
fn forget_removes_a_stale_catalog_entry_file_and_keeps_profiles_locks_and_other_entries() {
    let fx = Fixture::new();
    fx.add_profile("erin", "key-erin");
    let offline = fx.add_catalog_entry(Some("erin"), &["run"], LocalRuntimeStatus::Offline, None);
    let mut dead = Sleeper::sleep();
    let dead_pid = dead.pid();
    dead.kill();
    let stale = fx.add_catalog_entry(
        Some("erin"),
        &["run", "--crashed"],
        LocalRuntimeStatus::Running,
        Some(dead_pid),
    );
    fx.hold_lock_as("erin", dead_pid);
    let core = fx.core();
    let view = find(&core.snapshot(), &stale).unwrap().clone();
    assert!(view.forget.available, "{:?}", view.forget);
    assert_eq!(
        view.target_for(supercode_core::resolve::RuntimeAction::Forget)
            .unwrap(),
        stale
    );
    // One that stopped normally is kept, with a reason in plain words.
    let kept = find(&core.snapshot(), &offline).unwrap().clone();
    let reason = kept.forget.reason.clone().unwrap();
    assert!(
        !kept.forget.available && !reason.contains("catalog"),
        "{reason}"
    );
    let refused = CommandError::from(core.forget(&offline).unwrap_err());
    assert_eq!(refused.code, ErrorCode::Refused, "{refused:?}");

    let mut expected = tree(fx.canon().root());
    let file = fx
        .canon()
        .runtime_path(&stale)
        .strip_prefix(fx.canon().root())
        .unwrap()
        .display()
        .to_string();
    expected.remove(&file).unwrap();

    core.forget(&stale).unwrap();

    assert_eq!(tree(fx.canon().root()), expected);
    let after = core.snapshot();
    assert!(find(&after, &stale).is_none());
    assert!(find(&after, &offline).is_some());
    // Gone now: a second forget says so.
    let error = CommandError::from(core.forget(&stale).unwrap_err());
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
}
