//! `list` as a user runs it, and the errors every command shares: demo runtimes listed
//! running, one killed with SIGKILL gone from the next list, the canary token nowhere; exit codes
//! and stderr; a hostile record's text and a hostile `$CANON_HOME` shown escaped and promptly.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use live_runtime::test_support::{self, mkfifo, sparse_file};
use serde_json::Value;

use crate::cli::{
    assert_clean, raw_controls, runtimes, stale_receipt_named, Home, HOSTILE_NAME, TOKEN_CANARY,
};

fn status_of<'a>(list: &'a Value, endpoint: &str) -> Option<&'a str> {
    runtimes(list)
        .iter()
        .find(|r| r["endpoint"] == endpoint)
        .and_then(|r| r["status"].as_str())
}

/// Every process's command line and environment on this machine, NUL-separated.
fn all_command_lines() -> String {
    let me = std::process::id().to_string();
    let mut text = String::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(bytes) = std::fs::read(entry.path().join("cmdline")) {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
        // Our own environment is the test's; the others (the demo runtimes above all) must not
        // carry the token either.
        if name != me {
            if let Ok(bytes) = std::fs::read(entry.path().join("environ")) {
                text.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    text
}

/// Runs a subcommand, failing the test (and killing it) if it has not ended within `deadline`:
/// a FIFO opened without `O_NONBLOCK` or `/dev/zero` read without a cap would hang it forever.
fn run_within(home: &Home, args: &[&str], deadline: Duration) -> Output {
    let what = format!("`supercode-tray {}`", args.join(" "));
    test_support::output_within(home.command(args), &what, deadline)
}

/// A `$CANON_HOME` with two good catalog entries (one whose profile exists, one whose profile is
/// missing) and every kind of hostile file next to them; returns the bad files and the reason
/// each must be listed with.
fn hostile_canon_home(canon: &Path) -> Vec<(&'static str, &'static str)> {
    use std::os::unix::fs::PermissionsExt;
    let write = |path: &Path, text: &str, mode: u32| {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let entry = |profile: &str| {
        serde_json::json!({
            "id": format!("sdk:{profile}:0123456789abcdef"), "runtime": "sdk", "profile": profile,
            "cwd": canon.display().to_string(), "launchCommand": ["/bin/true", profile],
            "status": "offline", "reviveCapability": "revivable",
            "lastStoppedAt": "2026-12-01T10:00:00.000Z"
        })
        .to_string()
    };
    let runtimes = canon.join("runtimes");
    std::fs::create_dir_all(&runtimes).unwrap();
    std::fs::create_dir_all(canon.join("locks")).unwrap();
    write(
        &canon.join("agents.json"),
        r#"{"alpha": {"apiKey": "k", "agentId": "a", "agentName": "alpha", "registeredAt": "2026-12-01T09:00:00.000Z"}}"#,
        0o600,
    );
    write(&runtimes.join("alpha.json"), &entry("alpha"), 0o600);
    write(&runtimes.join("gone.json"), &entry("gone"), 0o600);
    // Used, but reported: others may read it.
    write(&runtimes.join("wide.json"), &entry("wide"), 0o644);

    let mut bad = Vec::new();
    mkfifo(&runtimes.join("fifo.json"));
    bad.push(("runtimes/fifo.json", "not a regular file (a FIFO)"));
    std::os::unix::fs::symlink("/dev/zero", runtimes.join("zero.json")).unwrap();
    bad.push(("runtimes/zero.json", "symbolic link"));
    sparse_file(&runtimes.join("huge.json"), b"{", 100 * 1024 * 1024);
    bad.push((
        "runtimes/huge.json",
        "over the 1048576-byte Canon file limit",
    ));
    write(&runtimes.join("deep.json"), &"[".repeat(200_000), 0o600);
    bad.push(("runtimes/deep.json", "nested too deeply"));
    let foreign = runtimes.join("foreign.json");
    write(&foreign, &entry("foreign"), 0o600);
    std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    bad.push(("runtimes/foreign.json", "owned by uid 65534"));
    mkfifo(&canon.join("pending-registrations.json"));
    bad.push(("pending-registrations.json", "not a regular file (a FIFO)"));
    std::os::unix::fs::symlink("/dev/zero", canon.join("locks/other.lock")).unwrap();
    bad.push(("locks/other.lock", "symbolic link"));
    bad
}

/// How long `list` or `doctor` may take over a hostile `$CANON_HOME`: a correct read takes
/// milliseconds; a hung one never ends. Generous for a loaded CI machine.
const HOSTILE_READ_DEADLINE: Duration = Duration::from_secs(20);

/// Issue 2's "done when": demo runtimes are listed running; one killed with SIGKILL is gone from
/// the next list; the canary token given with `--token-file` appears in no output, receipt, log
/// or command line, and the runtimes' loopback addresses in no output or log (only in receipts).
#[test]
fn demo_runtimes_are_listed_running_a_sigkilled_one_leaves_and_the_canary_shows_nowhere() {
    let home = Home::new();
    let token_file = home.canary_token_file();
    let mut printed = String::new();

    let mut alpha = home.start_demo("alpha", &token_file);
    let beta = home.start_demo("beta", &token_file);

    let list = home.list_json(&mut printed);
    assert_eq!(list["version"], 1);
    assert_eq!(list["secretStore"]["kind"], "file");
    assert_eq!(status_of(&list, &alpha.endpoint), Some("running"), "{list}");
    assert_eq!(status_of(&list, &beta.endpoint), Some("running"), "{list}");
    let table = home.run(&["list"], &mut printed);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.contains("alpha") && table.contains("beta"), "{table}");

    // The loopback addresses, which no output may show either.
    let secrets = live_runtime::SecretStore::file(home.path("secrets"));
    let dir = live_runtime::ReceiptDir::new(home.path("receipts"), secrets);
    let mut ports = Vec::new();
    for endpoint in [&alpha.endpoint, &beta.endpoint] {
        let endpoint: live_runtime::LiveRuntimeEndpoint = endpoint.parse().unwrap();
        let record = live_runtime::list_live_runtimes(&dir)
            .unwrap()
            .runtimes
            .into_iter()
            .find(|r| r.endpoint == endpoint)
            .unwrap();
        let resolved = live_runtime::resolve_live_runtime(&dir, &endpoint, &record.source).unwrap();
        assert_eq!(resolved.token.expose(), TOKEN_CANARY);
        ports.push(format!(":{}", resolved.address.expose().port()));
    }

    // Killed and reaped: the very next list no longer shows it running under its receipt, but
    // as exited, by the id it had (issue 31), until dismissed.
    let killed_err = alpha.kill();
    let list = home.list_json(&mut printed);
    assert_eq!(
        status_of(&list, &alpha.endpoint),
        None,
        "the killed runtime's receipt is gone from the next list: {list}"
    );
    let exited = runtimes(&list)
        .iter()
        .find(|r| r["id"] == alpha.endpoint.as_str())
        .and_then(|r| r["status"].as_str());
    assert_eq!(exited, Some("exited"), "{list}");
    assert_eq!(status_of(&list, &beta.endpoint), Some("running"));

    let mut secrets: Vec<&str> = vec![TOKEN_CANARY];
    secrets.extend(ports.iter().map(String::as_str));
    assert_clean("the CLI's output", &printed, &secrets);
    assert_clean("the killed runtime's stderr", &killed_err, &[TOKEN_CANARY]);
    assert_clean(
        "a command line or environment",
        &all_command_lines(),
        &[TOKEN_CANARY],
    );
    std::fs::remove_file(&token_file).unwrap();
    // A receipt names its runtime's address (that is what it is for), never its token.
    assert_clean("a file left behind", &home.files_text(""), &[TOKEN_CANARY]);
    for sub in ["logs", "state", "canon"] {
        assert_clean(sub, &home.files_text(sub), &secrets);
    }
    assert!(
        home.path("logs").is_dir(),
        "the CLI logged to its log directory, which was checked"
    );
    drop(beta);
}

#[test]
fn errors_exit_1_on_stderr_and_usage_errors_exit_2() {
    let home = Home::new();
    let mut printed = String::new();
    let token_file = home.canary_token_file();
    let demo = home.start_demo("gamma", &token_file);

    let unknown = home.run(
        &["forget", "lre_00000000000000000000000000000000"],
        &mut printed,
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(unknown.stdout.is_empty());
    assert!(String::from_utf8_lossy(&unknown.stderr).starts_with("error: "));

    let live = home.run(&["forget", &demo.endpoint], &mut printed);
    assert_eq!(live.status.code(), Some(1));
    let message = String::from_utf8_lossy(&live.stderr).into_owned();
    assert!(message.contains("running"), "{message}");
    let list = home.list_json(&mut printed);
    assert_eq!(
        status_of(&list, &demo.endpoint),
        Some("running"),
        "a refused forget leaves the receipt"
    );

    let usage = home.run(&["list", "--no-such-flag"], &mut printed);
    assert_eq!(usage.status.code(), Some(2));
    let usage = home.run(&["approve"], &mut printed);
    assert_eq!(usage.status.code(), Some(2));
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}

/// Issue 29: `list` shows a hostile record's name, runtime id and workspace with each control
/// as a visible escape, and `list --json` carries them as JSON escapes that parse back to the
/// very text recorded; neither sends the terminal a raw control.
#[test]
fn issue_29_list_and_list_json_print_a_hostile_records_text_escaped() {
    let home = Home::new();
    let receipt = stale_receipt_named(&home, HOSTILE_NAME, &["sleep", "1"], serde_json::json!({}));
    let hostile_workspace = "/w\u{1b}]0;owned\u{7}\u{202e}kcatta";
    let path = home
        .path("receipts")
        .join(format!("{}.json", receipt.endpoint));
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record["source"]["workspace"] = serde_json::json!(hostile_workspace);
    test_support::write_receipt_file(
        &home.path("receipts"),
        &format!("{}.json", receipt.endpoint),
        &record,
    );
    let mut printed = String::new();

    let table = home.run(&["list"], &mut printed);
    assert!(table.status.success(), "{table:?}");
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert_eq!(raw_controls(&table), [], "{table:?}");
    let row = table
        .lines()
        .find(|l| l.starts_with(&receipt.endpoint))
        .unwrap_or_else(|| panic!("no row: {table}"));
    assert!(
        row.contains(r#"planned\u{1b}[2K\u{d}  program:           "/usr/local/bin/canon-agent"\u{a}\u{9b}31m\u{202e}evil"#),
        "{row}"
    );
    assert!(
        row.ends_with(r"/w\u{1b}]0;owned\u{7}\u{202e}kcatta"),
        "{row}"
    );

    let json = home.run(&["list", "--json"], &mut printed);
    assert!(json.status.success(), "{json:?}");
    let text = String::from_utf8_lossy(&json.stdout).into_owned();
    assert_eq!(raw_controls(&text), [], "{text:?}");
    assert!(text.contains(r"\u009b31m\u202eevil"), "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    let shown = runtimes(&list)
        .iter()
        .find(|r| r["id"] == receipt.endpoint.as_str())
        .unwrap_or_else(|| panic!("not listed: {list:#}"));
    assert_eq!(
        shown["name"], HOSTILE_NAME,
        "the same text, escaped for JSON"
    );
    assert_eq!(shown["workspace"], hostile_workspace);
}

/// Issue 13: with a FIFO, links to `/dev/zero`, a 100 MB file, a deep nest, another user's file
/// and a 0644 file in `$CANON_HOME`, `list --json` returns promptly, lists the good catalog
/// entries with the package's derived `reviveCapability` and `status` next to the tray's own
/// revive availability, lists each bad file with its reason and the 0644 one as a warning; `list`
/// and `doctor` say the same in words.
#[test]
fn issue_13_list_and_doctor_return_promptly_over_a_hostile_canon_home() {
    let home = Home::new();
    let bad = hostile_canon_home(&home.path("canon"));

    let output = run_within(&home, &["list", "--json"], HOSTILE_READ_DEADLINE);
    assert!(output.status.success(), "{output:?}");
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    let entry = |profile: &str| {
        runtimes(&list)
            .iter()
            .find(|r| r["profile"] == profile)
            .unwrap_or_else(|| panic!("{profile} not listed: {list:#}"))
    };
    let alpha = entry("alpha");
    assert_eq!(alpha["origin"], "catalog");
    assert_eq!(alpha["catalogStatus"], "offline");
    assert_eq!(alpha["reviveCapability"], "revivable");
    assert_eq!(alpha["revive"]["available"], true, "{alpha:#}");
    let gone = entry("gone");
    assert_eq!(gone["reviveCapability"], "missing-profile");
    assert_eq!(gone["catalogStatus"], "offline");
    assert_eq!(gone["revive"]["available"], false);
    assert!(gone["revive"]["reason"]
        .as_str()
        .unwrap()
        .contains("missing from agents.json"));
    assert_eq!(entry("wide")["reviveCapability"], "missing-profile");
    assert_eq!(runtimes(&list).len(), 3, "{list:#}");

    let ignored = list["ignored"].as_array().unwrap();
    for (file, reason) in &bad {
        let found = ignored
            .iter()
            .find(|i| i["location"] == "canon" && i["file"] == *file)
            .unwrap_or_else(|| panic!("{file} not listed as ignored: {ignored:#?}"));
        assert!(
            found["reason"].as_str().unwrap().contains(reason),
            "{file}: {found} lacks {reason:?}"
        );
    }
    assert_eq!(ignored.len(), bad.len(), "{ignored:#?}");
    let warnings = list["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0]["file"], "runtimes/wide.json");
    assert!(warnings[0]["reason"]
        .as_str()
        .unwrap()
        .contains("permissions (644)"));

    let output = run_within(&home, &["list"], HOSTILE_READ_DEADLINE);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text.contains("ignored runtimes/fifo.json: it is not a regular file (a FIFO)"),
        "{text}"
    );
    assert!(
        text.contains("warning runtimes/wide.json: its permissions (644)"),
        "{text}"
    );

    let output = run_within(&home, &["doctor", "--json"], HOSTILE_READ_DEADLINE);
    let doctor: Value = serde_json::from_slice(&output.stdout).unwrap();
    let checks = doctor["checks"].as_array().unwrap();
    let canon = checks.iter().find(|c| c["name"] == "CANON_HOME").unwrap();
    assert_eq!(canon["status"], "warn", "{canon:#}");
    let detail = canon["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("{} file(s) ignored", bad.len())),
        "{detail}"
    );
    assert!(detail.contains("runtimes/wide.json"), "{detail}");
    // Each ignored file is a warning of its own, with its reason (issue 31 item 7).
    let ignored: Vec<&str> = checks
        .iter()
        .filter(|c| c["name"] == "ignored file" && c["status"] == "warn")
        .map(|c| c["detail"].as_str().unwrap())
        .collect();
    assert_eq!(ignored.len(), bad.len(), "{ignored:#?}");
    for (file, reason) in &bad {
        assert!(
            ignored
                .iter()
                .any(|d| d.contains(&format!("/{file}: ")) && d.contains(reason)),
            "doctor does not name {file} with {reason:?}: {ignored:#?}"
        );
    }
}
