//! `doctor` judges the receipt directory by the library's own check (issue 14): for each kind of
//! directory, what doctor reports is what the next list of receipts then does with it.

use std::fs;
use std::os::unix::fs::{chown, symlink, DirBuilderExt, PermissionsExt};
use std::path::Path;

use live_runtime::{list_live_runtimes, LiveRuntimeList, LiveRuntimeReceiptError};
use supercode_core::doctor::{Check, CheckStatus};

use crate::support::Fixture;

/// Doctor's check called `name`, from a full `doctor` run.
async fn doctor_check(fixture: &Fixture, name: &str) -> Check {
    let report = fixture.core().doctor().await;
    report
        .checks
        .into_iter()
        .find(|check| check.name == name)
        .unwrap_or_else(|| panic!("doctor has a {name} check"))
}

/// Doctor's receipt-directory check, from a full `doctor` run.
async fn doctor_on_receipts(fixture: &Fixture) -> Check {
    doctor_check(fixture, "receipt directory").await
}

/// Doctor's receipt-directory check, which must have come out as `status`.
async fn doctor_reports(fixture: &Fixture, status: CheckStatus) -> Check {
    let check = doctor_on_receipts(fixture).await;
    assert_eq!(check.status, status, "{check:?}");
    check
}

/// What the library does next with the directory: a list, as the tray and the CLI make.
fn library_lists(fixture: &Fixture) -> Result<LiveRuntimeList, LiveRuntimeReceiptError> {
    list_live_runtimes(fixture.receipts())
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o777
}

fn make_dir(path: &Path, mode: u32) {
    fs::DirBuilder::new().mode(0o700).create(path).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Fresh locations whose receipt directory exists with `mode`.
fn receipts_with_mode(mode: u32) -> Fixture {
    let fixture = Fixture::new();
    make_dir(fixture.receipts().path(), mode);
    fixture
}

/// A refused directory: doctor fails, and its detail and fix are, word for word, the reason the
/// library's list fails with.
async fn assert_both_refuse(fixture: &Fixture) {
    let path = fixture.receipts().path().display().to_string();
    let check = doctor_reports(fixture, CheckStatus::Fail).await;
    let problem = check
        .detail
        .strip_prefix(&format!("{path}: "))
        .unwrap_or_else(|| panic!("doctor's detail does not start with the path: {check:?}"));
    match library_lists(fixture) {
        Err(LiveRuntimeReceiptError::Invalid { what, reason }) => {
            assert_eq!(what, format!("receipt directory {path}"));
            assert_eq!(reason, format!("{problem}; {}", check.fix.unwrap()));
        }
        other => panic!("the library did not refuse the directory doctor failed: {other:?}"),
    }
}

#[tokio::test]
async fn a_0700_receipt_directory_is_ok_for_doctor_and_used_as_it_is() {
    let fixture = receipts_with_mode(0o700);
    let check = doctor_reports(&fixture, CheckStatus::Ok).await;
    assert!(check.detail.contains("mode 700"), "{check:?}");
    library_lists(&fixture).unwrap();
    assert_eq!(mode(fixture.receipts().path()), 0o700);
}

#[tokio::test]
async fn a_0755_receipt_directory_is_a_warning_that_the_next_use_tightens_it() {
    let fixture = receipts_with_mode(0o755);
    let dir = fixture.receipts().path();
    let check = doctor_reports(&fixture, CheckStatus::Warn).await;
    let promise = "will be tightened to 0700 on next use";
    assert!(check.detail.contains(promise), "{check:?}");
    assert_eq!(mode(dir), 0o755, "doctor changed the directory");

    library_lists(&fixture).unwrap();
    assert_eq!(mode(dir), 0o700, "the library did not do what doctor said");
    doctor_reports(&fixture, CheckStatus::Ok).await;
}

#[tokio::test]
async fn a_symlinked_receipt_directory_is_refused_by_both_for_the_same_reason() {
    let fixture = Fixture::new();
    // A private directory of our own behind the link: only the link is wrong.
    let target = fixture.root.join("real-receipts");
    make_dir(&target, 0o700);
    symlink(&target, fixture.receipts().path()).unwrap();
    assert_both_refuse(&fixture).await;
}

#[tokio::test]
async fn another_users_receipt_directory_is_refused_by_both_for_the_same_reason() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("not root: cannot give a directory to another user, so this case is not set up");
        return;
    }
    let fixture = receipts_with_mode(0o700);
    chown(fixture.receipts().path(), Some(65534), Some(65534)).unwrap();
    assert_both_refuse(&fixture).await;
    let check = doctor_on_receipts(&fixture).await;
    assert!(check.detail.contains("owned by uid 65534"), "{check:?}");
}

#[tokio::test]
async fn a_missing_receipt_directory_is_ok_for_doctor_and_an_empty_list() {
    let fixture = Fixture::new();
    let check = doctor_reports(&fixture, CheckStatus::Ok).await;
    let promise = "created when the first runtime registers";
    assert!(check.detail.contains(promise), "{check:?}");
    let list = library_lists(&fixture).unwrap();
    assert!(list.runtimes.is_empty() && list.ignored.is_empty());
    assert!(
        !fixture.receipts().path().exists(),
        "a list created the directory"
    );
}

// Proves (issue 14): doctor names the platform and whether it is supported, so a user on one we
// do not test is told so; this suite runs on Linux, the supported one.
#[tokio::test]
async fn doctor_says_linux_is_the_supported_platform() {
    let fixture = Fixture::new();
    let check = doctor_check(&fixture, "platform").await;
    assert_eq!(check.status, CheckStatus::Ok, "{check:?}");
    assert!(check.detail.starts_with("linux on "), "{}", check.detail);
    assert!(check.detail.contains("supported"), "{}", check.detail);
}

// Proves (issue 31 item 7): each file the inventory ignored is a doctor warning of its own, with
// its path and the inventory's reason, and reading it does not block (a FIFO is never opened).
#[tokio::test]
async fn each_ignored_receipt_is_a_warning_with_its_reason() {
    let fixture = receipts_with_mode(0o700);
    let dir = fixture.receipts().path();
    live_runtime::test_support::mkfifo(&dir.join("fifo.json"));
    symlink("/etc/passwd", dir.join("link.json")).unwrap();
    let report = fixture.core().doctor().await;
    let ignored: Vec<&Check> = report
        .checks
        .iter()
        .filter(|c| c.name == "ignored file")
        .collect();
    assert_eq!(ignored.len(), 2, "{:#?}", report.checks);
    for (file, reason) in [("fifo.json", "a FIFO"), ("link.json", "symbolic link")] {
        let path = dir.join(file).display().to_string();
        let check = ignored
            .iter()
            .find(|c| c.detail.starts_with(&format!("{path}: ")))
            .unwrap_or_else(|| panic!("{file} not named: {ignored:#?}"));
        assert_eq!(check.status, CheckStatus::Warn, "{check:?}");
        assert!(check.detail.contains(reason), "{check:?}");
        assert!(check.fix.is_some(), "{check:?}");
    }
}
