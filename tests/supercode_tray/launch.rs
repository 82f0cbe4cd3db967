//! The binaries (issue 16): `supercode-tray` runs every subcommand without loading a display
//! library, prints exactly what the tray app's binary prints, and with no subcommand becomes the
//! app binary installed beside it, in the same process. The agents' hook program
//! (`supercode-tray-hook`) loads nothing but libc's libraries, and is the same hook as the
//! `hook` subcommand that older installed entries run.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use live_runtime::test_support::{output_within, wait_until, ChildGuard};

use crate::cli::Home;

const TRAY: &str = env!("CARGO_BIN_EXE_supercode-tray");
const TRAY_APP: &str = env!("CARGO_BIN_EXE_supercode-tray-app");
const HOOK: &str = env!("CARGO_BIN_EXE_supercode-tray-hook");
/// How long a subcommand of an already built binary may take here (CI machines are slow).
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// Shared libraries of the display stack: none may be mapped into `supercode-tray`.
const DISPLAY_LIBRARIES: &[&str] = &[
    "libgtk-3.so",
    "libgdk-3.so",
    "libwebkit2gtk-4.1.so",
    "libjavascriptcoregtk-4.1.so",
    "libayatana-appindicator3.so",
    "libsoup-3.0.so",
];

/// `bin ARGS` run as `supercode-tray` (`argv[0]`, which clap's usage lines show, and which the
/// exec into the app keeps), with a private set of directories.
fn command(bin: &str, home: &Path, args: &[&str]) -> Command {
    use std::os::unix::process::CommandExt as _;
    let mut command = Command::new(bin);
    command.arg0("supercode-tray").args(args);
    crate::cli::private_env(&mut command, home);
    command
}

/// The display libraries mapped into process `pid` now.
fn display_libraries_mapped(pid: u32) -> Vec<String> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let mut found: Vec<String> = DISPLAY_LIBRARIES
        .iter()
        .filter(|lib| maps.lines().any(|line| line.contains(*lib)))
        .map(|lib| (*lib).to_owned())
        .collect();
    found.sort();
    found
}

/// Starts `bin demo-runtime` (a subcommand that keeps running) and returns what display
/// libraries it has mapped once it serves (it prints its endpoint then).
fn display_libraries_of_a_running_subcommand(bin: &str) -> Vec<String> {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("workspace")).unwrap();
    let workspace = home.path().join("workspace");
    let mut child = command(
        bin,
        home.path(),
        &[
            "demo-runtime",
            "--name",
            "display-free",
            "--workspace",
            workspace.to_str().unwrap(),
        ],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let stdout = child.stdout.take().unwrap();
    let child = ChildGuard(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut first = String::new();
        let _ = BufReader::new(stdout).read_line(&mut first);
        let _ = tx.send(first);
    });
    let endpoint = rx
        .recv_timeout(RUN_TIMEOUT)
        .unwrap_or_else(|_| panic!("{bin} demo-runtime printed no endpoint"));
    assert!(endpoint.starts_with("lre_"), "{endpoint:?}");
    display_libraries_mapped(child.pid())
}

// Proves: a subcommand of `supercode-tray` runs with no GTK, GDK, WebKitGTK, appindicator or
// libsoup mapped (what made `--version` cost ~40 ms and ~50 MB), while the same subcommand of
// the app binary has them, so the check sees them when they are there.
#[test]
fn the_command_runs_its_subcommands_with_no_display_library_loaded() {
    assert_eq!(
        display_libraries_of_a_running_subcommand(TRAY),
        Vec::<String>::new(),
        "supercode-tray maps display libraries"
    );
    let app = display_libraries_of_a_running_subcommand(TRAY_APP);
    for lib in ["libgtk-3.so", "libwebkit2gtk-4.1.so"] {
        assert!(
            app.iter().any(|l| l == lib),
            "the app binary maps {lib} (found {app:?})"
        );
    }
}

fn assert_same_output(what: &str, tray: &Output, app: &Output) {
    assert_eq!(tray.status.code(), app.status.code(), "{what}: exit status");
    assert_eq!(
        String::from_utf8_lossy(&tray.stdout),
        String::from_utf8_lossy(&app.stdout),
        "{what}: stdout"
    );
    assert_eq!(
        String::from_utf8_lossy(&tray.stderr),
        String::from_utf8_lossy(&app.stderr),
        "{what}: stderr"
    );
}

// Proves: the two binaries answer the command line alike: help, version, usage errors, an
// error of the core and `list` print byte for byte what the app binary prints (which runs the
// code the single binary ran before issue 16), with the same exit status.
#[test]
fn the_command_prints_exactly_what_the_app_binary_prints() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("canon")).unwrap();
    std::fs::create_dir_all(home.path().join("receipts")).unwrap();
    std::fs::set_permissions(
        home.path().join("receipts"),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let cases: &[&[&str]] = &[
        &["--version"],
        &["-V"],
        &["--help"],
        &["help", "revive"],
        &["list", "--help"],
        &["list", "--json"],
        &["list"],
        &["pending", "--json"],
        &["forget", "no-such-runtime"],
        &["no-such-command"],
        &["list", "--no-such-flag"],
        &["demo-runtime"],
    ];
    for args in cases {
        let what = format!("supercode-tray {}", args.join(" "));
        let tray = output_within(command(TRAY, home.path(), args), &what, RUN_TIMEOUT);
        let app = output_within(command(TRAY_APP, home.path(), args), &what, RUN_TIMEOUT);
        assert_same_output(&what, &tray, &app);
    }
    let version = output_within(
        command(TRAY, home.path(), &["--version"]),
        "--version",
        RUN_TIMEOUT,
    );
    assert_eq!(
        String::from_utf8_lossy(&version.stdout),
        format!("supercode-tray {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// A directory holding a link to the built `supercode-tray`, to put a stand-in app beside.
/// It is under cargo's target directory, so a hard link works; it is a copy otherwise.
fn tray_in_own_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let tray = dir.path().join("supercode-tray");
    if std::fs::hard_link(TRAY, &tray).is_err() {
        std::fs::copy(TRAY, &tray).unwrap();
    }
    (dir, tray)
}

/// Runs `program` (with `argv[0]` set to `arg0`) without arguments, feeding `script` on stdin.
fn run_fed(program: &Path, arg0: &str, script: &str) -> (u32, Output) {
    use std::os::unix::process::CommandExt as _;
    let mut child = Command::new(program)
        .arg0(arg0)
        .env("SUPERCODE_EXEC_PROBE", "kept-through-exec")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    (pid, output)
}

// Proves: `supercode-tray` with no subcommand replaces itself (exec) with the program installed
// beside it as `supercode-tray-app`: the same pid, the same argv[0], the same environment and
// standard streams, and the app's exit status is the command's. The stand-in app is a real
// shell (a link named supercode-tray-app) reading a script from the stdin it inherits; the e2e
// tests start the real app the same way.
#[test]
fn with_no_subcommand_the_command_becomes_the_app_beside_it_in_the_same_process() {
    let (dir, tray) = tray_in_own_dir();
    std::os::unix::fs::symlink("/bin/sh", dir.path().join("supercode-tray-app")).unwrap();
    let script =
        "echo \"pid=$$ argv0=$0 probe=$SUPERCODE_EXEC_PROBE\"; echo to-stderr >&2; exit 7\n";

    let (pid, output) = run_fed(&tray, "supercode-tray", script);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("pid={pid} argv0=supercode-tray probe=kept-through-exec\n"),
        "{output:?}"
    );
    assert_eq!(String::from_utf8_lossy(&output.stderr), "to-stderr\n");
    assert_eq!(output.status.code(), Some(7), "the app's exit status");

    // Started through a link elsewhere (~/bin/supercode-tray -> /usr/bin/supercode-tray), it
    // still finds the app beside the file the link names.
    let elsewhere = tempfile::tempdir().unwrap();
    let link = elsewhere.path().join("supercode-tray");
    std::os::unix::fs::symlink(&tray, &link).unwrap();
    let (pid, output) = run_fed(&link, "/some/where/supercode-tray", script);
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("pid={pid} argv0=/some/where/supercode-tray probe=kept-through-exec\n"),
        "{output:?}"
    );
    assert_eq!(output.status.code(), Some(7));
}

// Proves: without the app beside it, `supercode-tray` alone says which file it could not run
// and how to get it, and exits 1; subcommands do not need the app at all.
#[test]
fn without_the_app_beside_it_the_command_says_what_is_missing_and_subcommands_still_work() {
    let (dir, tray) = tray_in_own_dir();
    let (_, output) = run_fed(&tray, "supercode-tray", "");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(output.stdout.is_empty(), "{output:?}");
    let expected = format!(
        "error: could not start the tray app {}: No such file or directory (os error 2); \
         reinstall Supercode Tray, or build both binaries with `cargo build --bins`\n",
        dir.path().join("supercode-tray-app").display()
    );
    assert_eq!(String::from_utf8_lossy(&output.stderr), expected);

    let home = tempfile::tempdir().unwrap();
    let version = output_within(
        command(tray.to_str().unwrap(), home.path(), &["--version"]),
        "--version without the app",
        RUN_TIMEOUT,
    );
    assert!(version.status.success(), "{version:?}");
}

/// Runs `hook` (a command line: the hook program, or the old subcommand) through `sh -c` as the
/// agent does, with `event` on stdin, for a Claude Code session whose agent process is this test
/// (`CLAUDE_PID`, an ancestor of the hook's shell).
fn run_hook(home: &Home, hook: &str, event: &serde_json::Value) -> Output {
    let input = home.path("event.json");
    std::fs::write(&input, event.to_string()).unwrap();
    let mut command = Command::new("sh");
    crate::cli::private_env(&mut command, &home.path(""));
    command
        .args(["-c", hook])
        .env("HOME", home.path(""))
        .env("XDG_RUNTIME_DIR", home.path("run"))
        .env("CLAUDE_PID", std::process::id().to_string())
        .stdin(std::fs::File::open(&input).unwrap());
    output_within(command, "the hook", RUN_TIMEOUT)
}

/// The Claude Code session's runtime as `list --json` shows it, if it is listed.
fn listed_session(home: &Home) -> Option<serde_json::Value> {
    let list = home.list_json(&mut String::new());
    crate::cli::runtimes(&list)
        .iter()
        .find(|r| r["kind"] == "claude-code")
        .cloned()
}

// Proves: the hook program links nothing but libc's libraries, and it and the `hook` subcommand
// that entries installed before it run are one hook: events through either reach the same
// session's host, whose runtime `list --json` shows following each, and the session's end
// through the hook program ends it. Both print nothing and exit 0. (With the subcommand's event
// replaced by a command that sends nothing, the wait for `working` fails.)
#[test]
fn the_hook_program_and_the_old_hook_subcommand_are_one_hook() {
    let ldd = Command::new("ldd").arg(HOOK).output().unwrap();
    assert!(ldd.status.success(), "{ldd:?}");
    let libraries: Vec<String> = String::from_utf8_lossy(&ldd.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .filter(|name| {
            ![
                "linux-vdso.so",
                "libc.so",
                "libgcc_s.so",
                "libm.so",
                "/lib64/ld-linux",
            ]
            .iter()
            .any(|libc| name.starts_with(libc))
        })
        .collect();
    assert_eq!(
        libraries,
        Vec::<String>::new(),
        "the hook program loads only libc's libraries"
    );

    let home = Home::new();
    std::fs::create_dir(home.path("run")).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(home.path("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let event = |name: &str| {
        serde_json::json!({
            "session_id": "one-hook-two-entry-points",
            "cwd": home.path("workspace"),
            "hook_event_name": name,
        })
    };
    let program = format!("'{HOOK}' claude-code");
    let subcommand = format!("'{TRAY}' hook claude-code");

    let mut runs = vec![run_hook(&home, &program, &event("SessionStart"))];
    let session = wait_until("the session listed", RUN_TIMEOUT, || listed_session(&home));
    assert_eq!(
        session["source"]["sessionId"], "one-hook-two-entry-points",
        "{session}"
    );
    assert_eq!(session["state"]["value"], "idle", "{session}");

    runs.push(run_hook(&home, &subcommand, &event("UserPromptSubmit")));
    wait_until("the session working", RUN_TIMEOUT, || {
        listed_session(&home).filter(|s| s["state"]["value"] == "working")
    });

    runs.push(run_hook(&home, &program, &event("SessionEnd")));
    wait_until("the session gone", RUN_TIMEOUT, || {
        listed_session(&home).is_none().then_some(())
    });
    for run in runs {
        assert!(run.status.success(), "{run:?}");
        assert!(run.stdout.is_empty() && run.stderr.is_empty(), "{run:?}");
    }
}
