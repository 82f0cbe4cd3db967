//! Receipts written by runtimes in other languages: inline token adoption, missing start time,
//! unknown fields preserved, and a store failure that must not lose the token.

use std::os::unix::fs::PermissionsExt;

use live_runtime::{
    list_live_runtimes, read_receipt, resolve_live_runtime, secret_account, LiveRuntimeEndpoint,
    LiveRuntimeStatus, ProcessIdentity, ReceiptDir, ReceiptScan, SecretStore,
};
use serde_json::{json, Value};

use crate::common::{file_store_scratch, foreign_receipt, source, write_receipt};

/// Writes a foreign receipt for this process, with inline token, no start time and extra fields;
/// lists; checks it was adopted. Shared with the keychain tests.
pub fn inline_token_is_adopted(dir: &ReceiptDir, token_value: &str) {
    let endpoint = LiveRuntimeEndpoint::generate();
    let src = source("foreign");
    let mut receipt = foreign_receipt(
        &endpoint,
        "rt-node",
        &src,
        std::process::id(),
        None,
        "127.0.0.1:40200",
        Some(token_value),
    );
    receipt["writtenBy"] = json!({ "name": "node-sdk", "version": "0.13.0" });
    receipt["metadata"]["futureField"] = json!([1, 2, 3]);
    let path = write_receipt(dir, &endpoint, &receipt);

    let list = list_live_runtimes(dir).unwrap();
    assert!(list.ignored.is_empty(), "{:?}", list.ignored);
    assert_eq!(list.runtimes.len(), 1);
    assert_eq!(list.runtimes[0].status, LiveRuntimeStatus::Running);
    assert_eq!(list.runtimes[0].metadata.runtime_kind, "sdk");

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(token_value),
        "token still inline after adoption"
    );
    let rewritten: Value = serde_json::from_str(&text).unwrap();
    assert!(rewritten.get("token").is_none());
    assert_eq!(
        rewritten["process"]["startTime"],
        ProcessIdentity::current().start_time
    );
    assert_eq!(
        rewritten["writtenBy"], receipt["writtenBy"],
        "unknown top-level field lost"
    );
    assert_eq!(
        rewritten["metadata"]["futureField"],
        json!([1, 2, 3]),
        "unknown metadata field lost"
    );
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let stored = dir
        .secret_store()
        .get(&secret_account(&endpoint))
        .unwrap()
        .unwrap();
    assert_eq!(stored.expose(), token_value);
    let resolved = resolve_live_runtime(dir, &endpoint, &src).unwrap();
    assert_eq!(resolved.token.expose(), token_value);
    std::fs::remove_file(&path).unwrap();
    dir.secret_store()
        .delete(&secret_account(&endpoint))
        .unwrap();
}

#[test]
fn foreign_receipt_with_inline_token_is_adopted_into_the_file_store() {
    let scratch = file_store_scratch();
    inline_token_is_adopted(&scratch.dir, "node-inline-token-42");
}

#[test]
fn foreign_receipt_whose_token_cannot_be_stored_is_ignored_and_left_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    // The secret "directory" sits under a regular file, so every write to the store fails.
    std::fs::write(tmp.path().join("not-a-dir"), b"").unwrap();
    let dir = ReceiptDir::new(
        tmp.path().join("receipts"),
        SecretStore::file(tmp.path().join("not-a-dir/secrets")),
    );
    let endpoint = LiveRuntimeEndpoint::generate();
    let receipt = foreign_receipt(
        &endpoint,
        "rt",
        &source("s"),
        std::process::id(),
        None,
        "127.0.0.1:40201",
        Some("keep-me-token"),
    );
    let path = write_receipt(&dir, &endpoint, &receipt);
    let before = std::fs::read(&path).unwrap();

    let list = list_live_runtimes(&dir).unwrap();
    assert!(list.runtimes.is_empty());
    assert_eq!(list.ignored.len(), 1);
    assert_eq!(list.ignored[0].file, format!("{endpoint}.json"));
    assert!(
        list.ignored[0]
            .reason
            .contains("inline token could not be moved"),
        "{}",
        list.ignored[0].reason
    );
    assert!(!list.ignored[0].reason.contains("keep-me-token"));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the token was lost or the file changed"
    );
}

#[test]
fn read_receipt_rescans_one_file_and_skips_temp_files() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let endpoint = LiveRuntimeEndpoint::generate();
    let name = format!("{endpoint}.json");
    write_receipt(
        dir,
        &endpoint,
        &foreign_receipt(
            &endpoint,
            "rt",
            &source("s"),
            std::process::id(),
            None,
            "127.0.0.1:40202",
            Some("t"),
        ),
    );
    match read_receipt(dir, &name).unwrap() {
        ReceiptScan::Listed(record) => assert_eq!(record.endpoint, endpoint),
        other => panic!("expected Listed, got {other:?}"),
    }
    assert!(matches!(
        read_receipt(dir, &format!(".{name}.1234.tmp")).unwrap(),
        ReceiptScan::NotAReceipt
    ));
    assert!(matches!(
        read_receipt(dir, "notes.txt").unwrap(),
        ReceiptScan::NotAReceipt
    ));
    std::fs::remove_file(dir.receipt_path(&endpoint)).unwrap();
    assert!(matches!(
        read_receipt(dir, &name).unwrap(),
        ReceiptScan::Gone
    ));
    assert!(read_receipt(dir, "../etc/passwd").is_err());
}
