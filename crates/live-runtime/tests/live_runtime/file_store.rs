//! The opt-in plaintext file store, and how the environment selects stores and directories.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use live_runtime::{SecretStore, SecretStoreKind, Sensitive};

use crate::common::{entries, is_child_for, run_child_test};

fn mode(path: &std::path::Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn file_store_keeps_secrets_in_a_0700_dir_with_0600_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("nested/secrets");
    let store = SecretStore::file(&dir);
    assert_eq!(store.kind(), SecretStoreKind::File);
    assert!(store.describe().starts_with("plaintext file store at "));
    assert!(store.describe().contains("SUPERCODE_SECRET_STORE=file"));

    store
        .set("live-runtime:lre_x", &Sensitive::new("s3cret".into()))
        .unwrap();
    assert_eq!(mode(&dir), 0o700);
    let files = entries(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(mode(&dir.join(&files[0])), 0o600);
    assert_eq!(
        store.get("live-runtime:lre_x").unwrap().unwrap().expose(),
        "s3cret"
    );

    store
        .set("live-runtime:lre_x", &Sensitive::new("rotated".into()))
        .unwrap();
    assert_eq!(
        store.get("live-runtime:lre_x").unwrap().unwrap().expose(),
        "rotated"
    );
    assert_eq!(
        entries(&dir).len(),
        1,
        "temp files left behind: {:?}",
        entries(&dir)
    );

    store.delete("live-runtime:lre_x").unwrap();
    store.delete("live-runtime:lre_x").unwrap();
    assert!(store.get("live-runtime:lre_x").unwrap().is_none());
    assert!(entries(&dir).is_empty());
    store.probe().unwrap();
    assert!(entries(&dir).is_empty(), "probe left its entry behind");
}

#[test]
fn file_store_tightens_an_existing_wide_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("secrets");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    SecretStore::file(&dir)
        .set("a", &Sensitive::new("b".into()))
        .unwrap();
    assert_eq!(mode(&dir), 0o700);
}

#[test]
fn file_store_account_names_cannot_escape_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("secrets");
    let store = SecretStore::file(&dir);
    store
        .set("../../escape", &Sensitive::new("x".into()))
        .unwrap();
    store.set(".hidden", &Sensitive::new("y".into())).unwrap();
    assert_eq!(entries(tmp.path()), vec!["secrets".to_string()]);
    assert!(entries(&dir)
        .iter()
        .all(|n| !n.starts_with('.') && !n.contains('/')));
    assert_eq!(store.get("../../escape").unwrap().unwrap().expose(), "x");
    assert!(store.set("", &Sensitive::new("z".into())).is_err());
}

#[test]
fn environment_selects_the_secret_store_and_receipt_directory() {
    let deadline = Duration::from_secs(60);
    let run = |set: &[(&str, &str)], unset: &[&str]| {
        let out = run_child_test("file_store::from_env_child", set, unset, deadline);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let all = [
        "SUPERCODE_SECRET_STORE",
        "SUPERCODE_SECRET_DIR",
        "SUPERCODE_RUNTIME_DIR",
        "XDG_RUNTIME_DIR",
    ];

    let default = run(&[("XDG_RUNTIME_DIR", "/run/user/4242")], &all);
    assert!(default.contains("STORE=Keychain"), "{default}");
    assert!(
        default.contains("DIR=/run/user/4242/supercode/live-runtimes"),
        "{default}"
    );

    let file = run(
        &[
            ("SUPERCODE_SECRET_STORE", "file"),
            ("SUPERCODE_SECRET_DIR", "/tmp/sc-secrets"),
            ("SUPERCODE_RUNTIME_DIR", "/tmp/sc-receipts"),
        ],
        &all,
    );
    assert!(file.contains("STORE=File"), "{file}");
    assert!(file.contains("/tmp/sc-secrets"), "{file}");
    assert!(file.contains("DIR=/tmp/sc-receipts"), "{file}");

    let bogus = run(&[("SUPERCODE_SECRET_STORE", "plaintext-please")], &all);
    assert!(bogus.contains("STORE_ERROR="), "{bogus}");
    assert!(
        bogus.contains("\"keychain\"") && bogus.contains("\"file\""),
        "error must name the valid values: {bogus}"
    );
}

#[test]
#[ignore = "helper: run in a child process by environment_selects_the_secret_store_and_receipt_directory"]
fn from_env_child() {
    if !is_child_for("from_env_child") {
        eprintln!("helper test: only meaningful when started by its parent test");
        return;
    }
    match SecretStore::from_env() {
        Ok(store) => println!("STORE={:?} DESCRIBE={}", store.kind(), store.describe()),
        Err(e) => println!("STORE_ERROR={e}"),
    }
    match live_runtime::ReceiptDir::from_env() {
        Ok(dir) => println!("DIR={}", dir.path().display()),
        Err(e) => println!("DIR_ERROR={e}"),
    }
}
