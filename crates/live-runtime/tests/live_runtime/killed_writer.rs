//! A runtime SIGKILLed at random points while it writes receipts through the library: its temp
//! files are never read as receipts, its complete receipts are removed once its pid is dead, and
//! its leftover temp files are deleted by a later list once they are older than
//! `STALE_TEMP_FILE_AGE` (and kept while younger), together with any token a writer killed
//! between storing it and publishing its receipt left behind.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use live_runtime::{
    list_live_runtimes, register_live_runtime_with_metadata, secret_account, LiveRuntimeEndpoint,
    LiveRuntimeMetadata, ReceiptDir, SecretStore, STALE_TEMP_FILE_AGE,
};
use rand::Rng;

use crate::common::{entries, is_child_for, loopback, source, token, ChildGuard};

/// How many writer processes are killed. Each is killed after a random number of completed
/// writes plus a random delay, so the kill lands anywhere in the write sequence.
const KILLS: usize = 12;
/// Upper bound of the random delay between the writer's "ready" line and the SIGKILL. A receipt
/// write (with two fsyncs) takes about a millisecond here, so this spreads kills over many writes.
const MAX_KILL_DELAY: Duration = Duration::from_millis(40);
/// Environment variable telling the writer child where to write.
const WRITER_DIR_ENV: &str = "LIVE_RUNTIME_TEST_WRITER_DIR";
/// Padding that makes each receipt ~60 KiB (under the 64 KiB cap), so a write takes long enough
/// for a kill to land inside it.
const PADDING_BYTES: usize = 60 * 1024;

/// The writer: registers and drops runtimes in a loop, keeping a few registrations alive, and
/// prints one line per completed registration. Runs only when re-invoked by the test below.
#[test]
#[ignore = "helper: runs only as the child of sigkilled_writers_leave_no_readable_partial_receipt"]
fn receipt_writer_child() {
    if !is_child_for("receipt_writer_child") {
        return;
    }
    let root = PathBuf::from(std::env::var_os(WRITER_DIR_ENV).expect("writer dir"));
    let dir = ReceiptDir::new(
        root.join("receipts"),
        SecretStore::file(root.join("secrets")),
    );
    let metadata = LiveRuntimeMetadata {
        runtime_kind: "killed-writer".into(),
        display_name: Some("x".repeat(PADDING_BYTES)),
        ..LiveRuntimeMetadata::default()
    };
    let mut kept = Vec::new();
    for n in 0u64.. {
        let registration = register_live_runtime_with_metadata(
            &dir,
            &format!("rt-writer-{n}"),
            source(&format!("writer-{n}")),
            loopback(41_000),
            token(&format!("writer-token-{n}")),
            metadata.clone(),
        )
        .unwrap();
        // Keep every third registration alive so the dead writer leaves complete receipts too.
        if n % 3 == 0 {
            kept.push(registration);
        }
        println!("wrote {n}");
    }
}

#[test]
fn sigkilled_writers_leave_no_readable_partial_receipt_and_their_leftovers_are_cleaned() {
    let tmp = tempfile::tempdir().unwrap();
    let receipts = tmp.path().join("receipts");
    let dir = ReceiptDir::new(&receipts, SecretStore::file(tmp.path().join("secrets")));
    let mut rng = rand::thread_rng();
    let mut writer_pids = Vec::new();

    for _ in 0..KILLS {
        let mut command =
            live_runtime::test_support::child_test_command("killed_writer::receipt_writer_child");
        command
            .env(WRITER_DIR_ENV, tmp.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = ChildGuard(command.spawn().unwrap());
        writer_pids.push(child.pid());
        let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
        // Wait (by reading its output, not by sleeping) until it has completed a random number
        // of writes, then let it run a random while longer and kill it mid-flight.
        let writes_before_kill = rng.gen_range(1..=6);
        let mut seen = 0;
        while seen < writes_before_kill {
            let line = lines.next().expect("writer exited before writing").unwrap();
            if line.starts_with("wrote ") {
                seen += 1;
            }
        }
        std::thread::sleep(rng.gen_range(Duration::ZERO..MAX_KILL_DELAY));
        child.kill();

        // The writer is dead: nothing it left may be read as a receipt, and its complete
        // receipts are removed by this very list.
        let list = list_live_runtimes(&dir).unwrap();
        assert!(
            list.ignored.is_empty(),
            "a killed writer's leftovers were read as receipts: {:?}",
            list.ignored
        );
        assert!(
            list.runtimes.is_empty(),
            "receipts of a dead writer survived a list: {:?}",
            list.runtimes
        );
    }

    let left = entries(&receipts);
    assert!(
        left.iter()
            .all(|name| name.starts_with('.') && name.ends_with(".tmp")),
        "only temp files may remain, found {left:?}"
    );
    let secrets = || -> Vec<String> {
        entries(&tmp.path().join("secrets"))
            .into_iter()
            .filter(|n| !n.starts_with('.'))
            .collect()
    };
    // A writer killed between storing its token and publishing its receipt leaves a token no
    // receipt points to; its staged temp file, written first, is what names it.
    eprintln!(
        "{} temp file(s) and {} orphaned token(s) left by {KILLS} killed writers",
        left.len(),
        secrets().len()
    );

    // Young leftovers stay (their writer might still be finishing on a slow disk)...
    list_live_runtimes(&dir).unwrap();
    assert_eq!(entries(&receipts), left, "a fresh temp file was deleted");

    // ...and once older than STALE_TEMP_FILE_AGE, with their writers dead, the next list deletes
    // them. A temp file we create ourselves (a live writer) is kept even when old.
    let older = SystemTime::now() - STALE_TEMP_FILE_AGE - Duration::from_secs(60);
    let own_temp = format!(
        ".lre_00000000000000000000000000000000.json.0000abcd.{}.tmp",
        std::process::id()
    );
    crate::common::write_file(&receipts, &own_temp, b"{\"partial", 0o600);
    for name in entries(&receipts) {
        File::options()
            .write(true)
            .open(receipts.join(&name))
            .unwrap()
            .set_modified(older)
            .unwrap();
    }
    for pid in &writer_pids {
        assert!(!live_runtime::pid_exists(*pid), "writer {pid} still alive");
    }
    let list = list_live_runtimes(&dir).unwrap();
    assert!(
        list.runtimes.is_empty() && list.ignored.is_empty(),
        "{list:?}"
    );
    assert_eq!(
        entries(&receipts),
        vec![own_temp],
        "old temp files of dead writers must be deleted, a live writer's kept"
    );
    assert_eq!(
        secrets(),
        Vec::<String>::new(),
        "every token of a dead writer is gone with its receipt or its staged temp file"
    );
}

/// The state a registration killed between storing its token and publishing leaves, built by
/// hand so it is certain: the staged receipt (named as the library names it, by a writer that is
/// gone, and old) and the token. A list deletes both; a staged rewrite of a receipt that exists
/// (an adopter killed mid-rewrite) goes without its receipt's token.
#[test]
fn a_registration_killed_before_publishing_leaves_no_token_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let receipts = tmp.path().join("receipts");
    let dir = ReceiptDir::new(&receipts, SecretStore::file(tmp.path().join("secrets")));
    crate::common::make_receipt_dir(&dir);
    let dead_pid = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let older = SystemTime::now() - STALE_TEMP_FILE_AGE - Duration::from_secs(60);
    let stage = |endpoint: &LiveRuntimeEndpoint| {
        let name = format!(".{endpoint}.json.0badf00d.{dead_pid}.tmp");
        let path = crate::common::write_file(&receipts, &name, b"{\"version\":1", 0o600);
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(older)
            .unwrap();
    };

    // Killed mid-registration: a staged receipt and its token, no receipt.
    let orphan = LiveRuntimeEndpoint::generate();
    let account = secret_account(&orphan);
    dir.secret_store()
        .set(&account, &token("orphaned-token"))
        .unwrap();
    stage(&orphan);

    // A live registration whose receipt a dead process was rewriting.
    let live = register_live_runtime_with_metadata(
        &dir,
        "rt-live",
        source("live"),
        loopback(41_001),
        token("live-token"),
        LiveRuntimeMetadata::default(),
    )
    .unwrap();
    stage(live.endpoint());

    let list = list_live_runtimes(&dir).unwrap();
    assert_eq!(list.runtimes.len(), 1, "{list:?}");
    assert!(list.ignored.is_empty(), "{list:?}");
    assert_eq!(
        entries(&receipts),
        vec![format!("{}.json", live.endpoint())],
        "both stale temp files deleted, the live receipt kept"
    );
    assert!(
        dir.secret_store().get(&account).unwrap().is_none(),
        "the orphaned token was deleted"
    );
    let kept = dir
        .secret_store()
        .get(&secret_account(live.endpoint()))
        .unwrap()
        .expect("the live runtime keeps its token");
    assert_eq!(kept.expose(), "live-token");
}
