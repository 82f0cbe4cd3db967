//! `doctor` checks what "nothing happens" depends on (issue 31 item 7), with real parts: the real
//! `supercode-tray` binary, a private D-Bus session bus per test (a `dbus-daemon` with nothing
//! to activate), the end-to-end suite's stand-in notification server on it, a process owning the
//! tray app's single-instance name, hostile receipt files, and real launchers on `PATH`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use live_runtime::test_support::{output_within, ChildGuard};
use serde_json::Value;

use crate::cli::private_env;

const TRAY: &str = env!("CARGO_BIN_EXE_supercode-tray");
/// How long a stand-in gets to own its name on the bus (a loaded CI machine is slow to start
/// Python); it takes well under a second when idle.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one doctor run may take: a few bus calls of at most 3 s each and a secret-store probe.
const DOCTOR_DEADLINE: Duration = Duration::from_secs(60);
/// The tray app's name on the session bus while it runs (`supercode_core::doctor::APP_BUS_NAME`).
const APP_BUS_NAME: &str = supercode_core::doctor::APP_BUS_NAME;

/// A private session bus: a `dbus-daemon` of its own, with no service directory, so nothing is
/// activated on it (no notification daemon of the host's); killed on drop.
struct PrivateBus {
    _daemon: ChildGuard,
    address: String,
    _dir: tempfile::TempDir,
}

impl PrivateBus {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("bus.conf");
        std::fs::write(
            &config,
            format!(
                r#"<busconfig>
  <type>session</type>
  <listen>unix:dir={}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
                dir.path().display()
            ),
        )
        .unwrap();
        let mut daemon = Command::new("dbus-daemon")
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            // It complains, unprivileged, that it cannot raise its file limit: noise here.
            .stderr(Stdio::null())
            .spawn()
            .expect("dbus-daemon starts (scripts/install-deps.sh --test installs it)");
        let stdout = daemon.stdout.take().unwrap();
        let address = first_line_within(stdout, "dbus-daemon's address");
        assert!(address.starts_with("unix:"), "{address:?}");
        Self {
            _daemon: ChildGuard(daemon),
            address,
            _dir: dir,
        }
    }

    /// Starts `command` on this bus and waits for its `{"event":"ready"}` line.
    fn start_stand_in(&self, mut command: Command, what: &str) -> ChildGuard {
        let mut child = command
            .env("DBUS_SESSION_BUS_ADDRESS", &self.address)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{what} did not start: {e}"));
        let line = first_line_within(child.stdout.take().unwrap(), what);
        assert!(line.contains(r#""event":"ready""#), "{what}: {line}");
        ChildGuard(child)
    }

    /// The end-to-end suite's stand-in notification server, owning
    /// `org.freedesktop.Notifications` on this bus.
    fn notification_server(&self) -> ChildGuard {
        let script = repo().join("tests/e2e/notification-server.py");
        self.start_stand_in(Command::new(script), "the stand-in notification server")
    }

    /// A process owning the tray app's single-instance name, as the running app does.
    fn app_name_owner(&self) -> ChildGuard {
        self.name_owner(APP_BUS_NAME, "the stand-in owner of the app's name")
    }

    /// A process owning `name` on this bus.
    fn name_owner(&self, name: &str, what: &str) -> ChildGuard {
        let mut command = Command::new("/usr/bin/python3");
        command.current_dir(repo().join("tests/e2e")).args([
            "-c",
            r#"
import sys
from stand_in import own_name
from gi.repository import Gio, GLib
loop = GLib.MainLoop()
own_name(Gio.bus_get_sync(Gio.BusType.SESSION, None), sys.argv[1], loop, "tray app")
loop.run()
"#,
            name,
        ]);
        self.start_stand_in(command, what)
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The first line `stream` writes, waited for at most [`READY_TIMEOUT`].
fn first_line_within(stream: impl std::io::Read + Send + 'static, what: &str) -> String {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line);
        // Keep reading so the writer never blocks on a full pipe.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let line = rx
        .recv_timeout(READY_TIMEOUT)
        .unwrap_or_else(|_| panic!("{what} printed nothing within {READY_TIMEOUT:?}"));
    line.trim().to_owned()
}

/// `supercode-tray doctor ARGS` over private directories under `home`, on `bus`, with no display
/// (so the tray-host check does not depend on the machine's), and `PATH` as given.
fn doctor(home: &Path, bus: &PrivateBus, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(TRAY);
    command.arg("doctor").args(args);
    private_env(&mut command, home);
    command
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address)
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("SUPERCODE_BROWSER");
    for (key, value) in env {
        command.env(key, value);
    }
    output_within(command, "supercode-tray doctor", DOCTOR_DEADLINE)
}

fn doctor_json(home: &Path, bus: &PrivateBus, env: &[(&str, &str)]) -> (Value, Output) {
    let output = doctor(home, bus, &["--json"], env);
    let report = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("doctor --json printed no JSON ({e}): {output:?}"));
    (report, output)
}

/// The checks called `name`.
fn checks<'a>(report: &'a Value, name: &str) -> Vec<&'a Value> {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] == name)
        .collect()
}

/// The one check called `name`.
fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    match checks(report, name)[..] {
        [one] => one,
        ref other => panic!("{} checks named {name}: {report:#}", other.len()),
    }
}

fn detail(check: &Value) -> &str {
    check["detail"].as_str().unwrap()
}

/// Issue 31 item 7: with the tray app stopped and no notification server on the bus, doctor
/// warns about each, says how to start the app and that notifications will not show, and exits
/// 0: warnings are not failures.
#[test]
fn issue_31_doctor_warns_when_the_app_is_stopped_and_no_notification_server_runs() {
    let home = tempfile::tempdir().unwrap();
    let bus = PrivateBus::start();
    let (report, output) = doctor_json(home.path(), &bus, &[]);

    let app = check(&report, "tray app");
    assert_eq!(app["status"], "warn", "{app:#}");
    assert!(detail(app).contains("not running"), "{app:#}");
    assert!(
        app["fix"].as_str().unwrap().contains("`supercode-tray`"),
        "the fix says how to start it: {app:#}"
    );
    let notifications = check(&report, "notifications");
    assert_eq!(notifications["status"], "warn", "{notifications:#}");
    assert!(
        detail(notifications).contains("no notification server")
            && detail(notifications).contains("will not show"),
        "{notifications:#}"
    );
    assert!(
        output.status.success(),
        "warnings only, so exit 0: {output:?}\n{report:#}"
    );
}

/// With the stand-in notification server and a process owning the app's single-instance name on
/// the bus, both checks are ok; the server's own name and version are shown.
#[test]
fn issue_31_doctor_finds_the_running_app_and_the_notification_server() {
    let home = tempfile::tempdir().unwrap();
    let bus = PrivateBus::start();
    let _server = bus.notification_server();
    let _app = bus.app_name_owner();
    let (report, _) = doctor_json(home.path(), &bus, &[]);

    let app = check(&report, "tray app");
    assert_eq!(app["status"], "ok", "{app:#}");
    assert!(detail(app).contains(APP_BUS_NAME), "{app:#}");
    let notifications = check(&report, "notifications");
    assert_eq!(notifications["status"], "ok", "{notifications:#}");
    assert!(
        detail(notifications).contains("answers"),
        "{notifications:#}"
    );
}

/// Issue 31 item 7: every file the inventory ignored is a warning of its own with its reason,
/// its untrusted name printed with its control characters escaped.
#[test]
fn issue_31_doctor_lists_each_ignored_receipt_with_its_reason() {
    let home = tempfile::tempdir().unwrap();
    let bus = PrivateBus::start();
    let receipts = home.path().join("receipts");
    std::fs::create_dir_all(&receipts).unwrap();
    std::fs::set_permissions(
        &receipts,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    std::os::unix::fs::symlink("/dev/zero", receipts.join("evil.json")).unwrap();
    let hostile_name = "paint\u{1b}[2J\u{202e}.json";
    std::fs::write(receipts.join(hostile_name), b"{ not json").unwrap();

    let (report, output) = doctor_json(home.path(), &bus, &[]);
    let ignored = checks(&report, "ignored file");
    assert_eq!(ignored.len(), 2, "{report:#}");
    for file in &ignored {
        assert_eq!(file["status"], "warn", "{file:#}");
    }
    let evil = ignored
        .iter()
        .find(|c| detail(c).contains("evil.json"))
        .unwrap_or_else(|| panic!("evil.json not named: {report:#}"));
    assert!(
        detail(evil).starts_with(&receipts.join("evil.json").display().to_string()),
        "{evil:#}"
    );
    assert!(detail(evil).contains("symbolic link"), "{evil:#}");
    assert!(
        output.status.success(),
        "ignored files are warnings: {output:?}"
    );

    let output = doctor(home.path(), &bus, &[], &[]);
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("[warn] ignored file: ") && text.contains("paint\\u{1b}[2J\\u{202e}.json"),
        "the hostile name is shown escaped: {text}"
    );
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "a raw control character reached the terminal: {text:?}"
    );
}

/// The browser and file openers are the programs an opening would start, found on `PATH` (or
/// named by `SUPERCODE_BROWSER`); with none, each is a warning. Nothing is opened.
#[test]
fn issue_31_doctor_names_the_openers_and_warns_without_one() {
    let home = tempfile::tempdir().unwrap();
    let bus = PrivateBus::start();
    let bin = home.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opened = home.path().join("opened");
    let xdg_open = bin.join("xdg-open");
    std::fs::write(
        &xdg_open,
        format!("#!/bin/sh\necho \"$@\" >> {}\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        &xdg_open,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = bin.to_str().unwrap();

    let (report, _) = doctor_json(home.path(), &bus, &[("PATH", path)]);
    for name in ["browser opener", "file opener"] {
        let opener = check(&report, name);
        assert_eq!(opener["status"], "ok", "{opener:#}");
        assert!(
            detail(opener).contains(&xdg_open.display().to_string()),
            "{opener:#}"
        );
    }
    assert!(!opened.exists(), "doctor opened something");

    let empty = home.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (report, output) = doctor_json(home.path(), &bus, &[("PATH", empty.to_str().unwrap())]);
    for name in ["browser opener", "file opener"] {
        let opener = check(&report, name);
        assert_eq!(opener["status"], "warn", "{opener:#}");
        assert!(detail(opener).contains("xdg-open"), "{opener:#}");
    }
    assert!(output.status.success(), "{output:?}");

    let (report, _) = doctor_json(
        home.path(),
        &bus,
        &[
            ("PATH", path),
            ("SUPERCODE_BROWSER", "/nonexistent/browser"),
        ],
    );
    let browser = check(&report, "browser opener");
    assert_eq!(browser["status"], "warn", "{browser:#}");
    assert!(
        detail(browser).contains("SUPERCODE_BROWSER names /nonexistent/browser"),
        "{browser:#}"
    );
    assert_eq!(check(&report, "file opener")["status"], "ok");
}

/// A check that fails makes doctor exit 1 (here the log directory cannot be created: its parent
/// is a file); warnings alone exit 0 (the tests above).
#[test]
fn issue_31_doctor_exits_1_when_a_check_fails() {
    let home = tempfile::tempdir().unwrap();
    let bus = PrivateBus::start();
    let file = home.path().join("a-file");
    std::fs::write(&file, b"").unwrap();
    let logs = file.join("logs");
    let output = doctor(
        home.path(),
        &bus,
        &[],
        &[("SUPERCODE_LOG_DIR", logs.to_str().unwrap())],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("[FAIL] log directory"), "{text}");
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("doctor found problems"),
        "{output:?}"
    );
}

/// The name doctor asks about is the one the app owns: the app gives the plugin the core's
/// `APP_INSTANCE_ID`, which is the app's identifier, so the end-to-end suite (which checks that
/// the running app owns `<identifier>.SingleInstance`, `single-instance.test.mjs`) checks it too.
#[test]
fn the_apps_bus_name_is_the_one_the_end_to_end_suite_sees_it_own() {
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("tauri.conf.json")).unwrap())
            .unwrap();
    let identifier = config["identifier"].as_str().unwrap();
    assert_eq!(identifier, supercode_core::doctor::APP_INSTANCE_ID);
    assert_eq!(APP_BUS_NAME, format!("{identifier}.SingleInstance"));
}

/// Issue 33: Codex runs only the hooks the user trusted in it, so doctor does not call Codex
/// connected while our entries wait for review: it warns, saying how to trust them in Codex;
/// once Codex has recorded the user's trust of each entry (written here as Codex 0.169 writes
/// it, which the real-Codex walk checks), the check is ok.
#[test]
fn issue_33_doctor_says_whether_codex_trusts_our_hooks() {
    use agent_hooks::codex::{event_key, trusted_hash};

    let home = tempfile::tempdir().unwrap();
    let bus = PrivateBus::start();
    let codex_home = home.path().join(".codex");
    let codex_env = [("CODEX_HOME", codex_home.to_str().unwrap())];
    let mut install = Command::new(TRAY);
    install.args(["hooks", "install", "codex", "--yes"]);
    private_env(&mut install, home.path());
    install.env("CODEX_HOME", &codex_home);
    let installed = output_within(install, "hooks install codex", DOCTOR_DEADLINE);
    assert!(installed.status.success(), "{installed:?}");

    let (report, output) = doctor_json(home.path(), &bus, &codex_env);
    let codex = check(&report, "Codex");
    assert_eq!(codex["status"], "warn", "{codex:#}");
    assert!(
        detail(codex).contains("not trusted in Codex yet"),
        "{codex:#}"
    );
    assert!(
        codex["fix"].as_str().unwrap().contains("Hooks need review"),
        "{codex:#}"
    );
    assert!(output.status.success(), "a warning: {output:?}");

    // The user trusts every entry in Codex; Codex records one hash per entry.
    let hooks_path = codex_home.join("hooks.json");
    let hooks: Value = serde_json::from_slice(&std::fs::read(&hooks_path).unwrap()).unwrap();
    let mut config = String::from("model = \"stand-in\"\n");
    for (event, groups) in hooks["hooks"].as_object().unwrap() {
        for (g, group) in groups.as_array().unwrap().iter().enumerate() {
            for (h, handler) in group["hooks"].as_array().unwrap().iter().enumerate() {
                config.push_str(&format!(
                    "[hooks.state.\"{}:{}:{g}:{h}\"]\ntrusted_hash = \"{}\"\n",
                    hooks_path.display(),
                    event_key(event),
                    trusted_hash(event, handler)
                ));
            }
        }
    }
    std::fs::write(codex_home.join("config.toml"), config).unwrap();
    let (report, _) = doctor_json(home.path(), &bus, &codex_env);
    let codex = check(&report, "Codex");
    assert_eq!(codex["status"], "ok", "{codex:#}");
    assert!(detail(codex).contains("connected through"), "{codex:#}");
}

/// Run as a child of the test below (on its private bus): prints the core's tray-host notice.
#[test]
fn tray_host_notice_probe() {
    if std::env::var_os("SUPERCODE_TEST_TRAY_HOST_PROBE").is_none() {
        return;
    }
    let notice = supercode_core::doctor::tray_host_notice();
    println!("NOTICE={}", serde_json::to_string(&notice).unwrap());
}

/// The core's notice for the window, asked on `bus` by a child process (the bus is per process).
fn tray_host_notice_on(bus: &PrivateBus) -> Value {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "doctor::tray_host_notice_probe", "--nocapture"])
        .env("SUPERCODE_TEST_TRAY_HOST_PROBE", "1")
        .env("DBUS_SESSION_BUS_ADDRESS", &bus.address);
    let output = output_within(command, "the tray-host probe", DOCTOR_DEADLINE);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("NOTICE="))
        .unwrap_or_else(|| panic!("the probe printed no notice: {output:?}"));
    serde_json::from_str(line).unwrap()
}

// Proves: the window's notice comes from the one rule doctor's tray-host check uses: with no
// StatusNotifier host on the session bus the core gives the notice (what to install on GNOME,
// how to bring the window back); once a process owns the host's name, none.
#[test]
fn issue_31_the_window_is_told_when_no_tray_host_runs_and_not_when_one_does() {
    let bus = PrivateBus::start();
    let notice = tray_host_notice_on(&bus);
    let title = notice["title"].as_str().unwrap_or_default();
    let detail = notice["detail"].as_str().unwrap_or_default();
    assert!(title.contains("tray icon cannot show"), "{notice}");
    assert!(detail.contains("AppIndicator"), "{notice}");
    assert!(detail.contains("run supercode-tray again"), "{notice}");

    let _host = bus.name_owner("org.kde.StatusNotifierWatcher", "a stand-in tray host");
    assert_eq!(tray_host_notice_on(&bus), Value::Null);
}
