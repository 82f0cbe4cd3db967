//! A receipt directory full of hostile or broken files: each is ignored with a reason, nothing
//! hangs or panics, and a valid receipt next to them stays listed.

use std::fs::{self, File};
use std::os::unix::fs::symlink;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use live_runtime::test_support::{mkfifo, sparse_file};
use live_runtime::{
    list_live_runtimes, read_receipt, register_live_runtime, resolve_live_runtime,
    LiveRuntimeEndpoint, LiveRuntimeList, LiveRuntimeReceiptError, ReceiptDir, ReceiptScan,
};
use serde_json::json;

use crate::common::{
    entries, file_store_scratch, foreign_receipt, loopback, make_receipt_dir, source, token,
    write_file, write_receipt, ChildGuard,
};

/// Generous bound for a scan that must not block (e.g. on a FIFO).
const SCAN_DEADLINE: Duration = Duration::from_secs(60);

/// Lists on another thread so a blocking open fails the test instead of hanging it.
fn list_within_deadline(dir: &ReceiptDir) -> LiveRuntimeList {
    let (tx, rx) = mpsc::channel();
    let dir = dir.clone();
    std::thread::spawn(move || {
        let _ = tx.send(list_live_runtimes(&dir));
    });
    rx.recv_timeout(SCAN_DEADLINE)
        .expect("list_live_runtimes blocked (FIFO opened without O_NONBLOCK?)")
        .unwrap()
}

fn name_for(endpoint: &LiveRuntimeEndpoint) -> String {
    format!("{endpoint}.json")
}

fn valid_receipt_for(endpoint: &LiveRuntimeEndpoint) -> serde_json::Value {
    foreign_receipt(
        endpoint,
        "rt-hostile",
        &source("hostile"),
        std::process::id(),
        None,
        "127.0.0.1:40300",
        None,
    )
}

#[test]
fn hostile_files_are_each_ignored_with_a_reason_and_never_hide_a_valid_receipt() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let good = register_live_runtime(
        dir,
        "rt-good",
        source("good"),
        loopback(40301),
        token("good"),
    )
    .unwrap();
    let outside = tempfile::tempdir().unwrap();
    let mut expected: Vec<(String, &str)> = Vec::new();

    // A symlink to a perfectly valid receipt elsewhere.
    let e = LiveRuntimeEndpoint::generate();
    let target = write_file(
        outside.path(),
        "real.json",
        serde_json::to_vec(&valid_receipt_for(&e))
            .unwrap()
            .as_slice(),
        0o600,
    );
    symlink(&target, dir.path().join(name_for(&e))).unwrap();
    expected.push((name_for(&e), "symbolic link"));

    // A symlink to a directory.
    let e = LiveRuntimeEndpoint::generate();
    symlink(outside.path(), dir.path().join(name_for(&e))).unwrap();
    expected.push((name_for(&e), "symbolic link"));

    // A directory named like a receipt.
    let e = LiveRuntimeEndpoint::generate();
    fs::create_dir(dir.path().join(name_for(&e))).unwrap();
    expected.push((name_for(&e), "not a regular file (a directory)"));

    // A FIFO: opening it for reading would block forever without O_NONBLOCK.
    let e = LiveRuntimeEndpoint::generate();
    mkfifo(&dir.path().join(name_for(&e)));
    expected.push((name_for(&e), "not a regular file (a FIFO)"));

    // Readable by group and others.
    let e = LiveRuntimeEndpoint::generate();
    write_file(
        dir.path(),
        &name_for(&e),
        serde_json::to_vec(&valid_receipt_for(&e))
            .unwrap()
            .as_slice(),
        0o644,
    );
    expected.push((name_for(&e), "permissions (644)"));

    // 100 MB (sparse).
    let e = LiveRuntimeEndpoint::generate();
    sparse_file(&dir.path().join(name_for(&e)), b"{", 100 * 1024 * 1024);
    expected.push((name_for(&e), "over the 65536-byte receipt limit"));

    // Nested 100k deep (only the first 64 KiB are ever read, then the size cap refuses it; a
    // 60 KiB nest exercises the JSON depth limit itself).
    let e = LiveRuntimeEndpoint::generate();
    write_file(
        dir.path(),
        &name_for(&e),
        "[".repeat(100_000).as_bytes(),
        0o600,
    );
    expected.push((name_for(&e), "over the 65536-byte receipt limit"));
    let e = LiveRuntimeEndpoint::generate();
    write_file(
        dir.path(),
        &name_for(&e),
        "[".repeat(60_000).as_bytes(),
        0o600,
    );
    expected.push((name_for(&e), "nested too deeply"));

    // Not UTF-8.
    let e = LiveRuntimeEndpoint::generate();
    write_file(
        dir.path(),
        &name_for(&e),
        b"{\"version\":1,\"endpoint\":\"\xff\xfe\"}",
        0o600,
    );
    expected.push((name_for(&e), "not valid UTF-8"));

    // Not JSON at all.
    let e = LiveRuntimeEndpoint::generate();
    write_file(dir.path(), &name_for(&e), b"version=1", 0o600);
    expected.push((name_for(&e), "not valid JSON"));

    // A future format version.
    let e = LiveRuntimeEndpoint::generate();
    let mut future = valid_receipt_for(&e);
    future["version"] = json!(2);
    write_receipt(dir, &e, &future);
    expected.push((name_for(&e), "version 2"));

    // A copy of the good receipt under another endpoint's name (duplicate endpoint).
    let e = LiveRuntimeEndpoint::generate();
    fs::copy(
        dir.receipt_path(good.endpoint()),
        dir.path().join(name_for(&e)),
    )
    .unwrap();
    expected.push((name_for(&e), "does not match its endpoint"));

    // A non-loopback address.
    let e = LiveRuntimeEndpoint::generate();
    let mut remote = valid_receipt_for(&e);
    remote["address"] = json!("10.1.2.3:8080");
    write_receipt(dir, &e, &remote);
    expected.push((name_for(&e), "not on loopback"));

    // A token of the wrong type: the reason must not quote it.
    let e = LiveRuntimeEndpoint::generate();
    let mut typed = valid_receipt_for(&e);
    typed["token"] = json!(987654321987u64);
    write_receipt(dir, &e, &typed);
    expected.push((name_for(&e), "wrong type or value"));

    // A file owned by someone else (only possible to set up as root).
    let running_as_root = live_runtime_is_root();
    if running_as_root {
        let e = LiveRuntimeEndpoint::generate();
        let path = write_receipt(dir, &e, &valid_receipt_for(&e));
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        expected.push((name_for(&e), "owned by uid 65534"));
    } else {
        eprintln!("not root: the other-owner receipt case is not set up in this run");
    }

    // Files that are not receipts are neither listed nor reported.
    write_file(dir.path(), "README.txt", b"hello", 0o600);
    write_file(dir.path(), ".lre_partial.json.0.1.tmp", b"{\"vers", 0o600);

    let list = list_within_deadline(dir);
    assert_eq!(list.runtimes.len(), 1, "valid receipt hidden: {:#?}", list);
    assert_eq!(list.runtimes[0].endpoint, *good.endpoint());
    for (file, reason) in &expected {
        let ignored = list
            .ignored
            .iter()
            .find(|i| &i.file == file)
            .unwrap_or_else(|| {
                panic!(
                    "{file} (expected: {reason}) was not reported; ignored: {:#?}",
                    list.ignored
                )
            });
        assert!(
            ignored.reason.contains(reason),
            "{file}: reason {:?} lacks {reason:?}",
            ignored.reason
        );
    }
    assert_eq!(list.ignored.len(), expected.len(), "{:#?}", list.ignored);
    for ignored in &list.ignored {
        assert!(
            !ignored.reason.contains("10.1.2.3") && !ignored.reason.contains("987654321987"),
            "{ignored:?}"
        );
        assert!(!ignored.file.contains('/'));
    }

    // Nothing hostile was deleted or followed: the symlink target and the FIFO are still there.
    assert!(target.exists());
    for (file, _) in &expected {
        assert!(
            fs::symlink_metadata(dir.path().join(file)).is_ok(),
            "{file} was deleted"
        );
    }

    // A single-file rescan of the FIFO does not block either.
    let fifo = expected
        .iter()
        .find(|(_, r)| r.contains("FIFO"))
        .unwrap()
        .0
        .clone();
    let (tx, rx) = mpsc::channel();
    let dir2 = dir.clone();
    std::thread::spawn(move || {
        let _ = tx.send(read_receipt(&dir2, &fifo).map(|s| matches!(s, ReceiptScan::Ignored(_))));
    });
    assert!(rx
        .recv_timeout(SCAN_DEADLINE)
        .expect("read_receipt blocked on a FIFO")
        .unwrap());
}

fn live_runtime_is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    // A file we just created is owned by our effective uid.
    let probe = tempfile::NamedTempFile::new().unwrap();
    probe.as_file().metadata().unwrap().uid() == 0
}

#[test]
fn a_receipt_claiming_another_sessions_source_cannot_be_resolved_with_the_expected_one() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    let mine = source("my-session");
    let impostor = register_live_runtime(
        dir,
        "rt",
        source("someone-else"),
        loopback(40310),
        token("x"),
    )
    .unwrap();
    let err = resolve_live_runtime(dir, impostor.endpoint(), &mine).unwrap_err();
    assert!(
        matches!(err, LiveRuntimeReceiptError::SourceMismatch { .. }),
        "{err:?}"
    );
    // Same session id but another workspace is a different source too.
    let mut other_workspace = source("someone-else");
    other_workspace.workspace = "/elsewhere".into();
    assert!(matches!(
        resolve_live_runtime(dir, impostor.endpoint(), &other_workspace),
        Err(LiveRuntimeReceiptError::SourceMismatch { .. })
    ));
}

#[test]
fn a_group_writable_receipt_directory_is_tightened_to_0700() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = file_store_scratch();
    make_receipt_dir(&scratch.dir);
    fs::set_permissions(scratch.dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
    list_live_runtimes(&scratch.dir).unwrap();
    let mode = fs::metadata(scratch.dir.path())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
}

#[test]
fn stale_temp_files_of_dead_writers_are_cleaned_and_others_are_kept() {
    let scratch = file_store_scratch();
    let dir = &scratch.dir;
    make_receipt_dir(dir);
    let dead_pid = {
        let mut child = ChildGuard::sleep();
        let pid = child.pid();
        child.kill();
        pid
    };
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    let age = |name: &str, when: SystemTime| {
        let path = write_file(dir.path(), name, b"{\"partial", 0o600);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    };
    let old_dead = format!(".lre_a.json.00000001.{dead_pid}.tmp");
    let old_alive = format!(".lre_b.json.00000002.{}.tmp", std::process::id());
    let fresh_dead = format!(".lre_c.json.00000003.{dead_pid}.tmp");
    age(&old_dead, an_hour_ago);
    age(&old_alive, an_hour_ago);
    age(&fresh_dead, SystemTime::now());

    let list = list_live_runtimes(dir).unwrap();
    assert!(
        list.runtimes.is_empty() && list.ignored.is_empty(),
        "temp files must never be read: {list:?}"
    );
    let left = entries(dir.path());
    assert!(
        !left.contains(&old_dead),
        "old temp file of a dead writer survived"
    );
    assert!(
        left.contains(&old_alive),
        "temp file of a live writer was deleted"
    );
    assert!(left.contains(&fresh_dead), "fresh temp file was deleted");
}
