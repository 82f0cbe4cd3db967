//! `supercode-tray doctor`: what a user or a bug report needs, each problem with its fix.

use std::path::Path;
use std::time::Duration;

use live_runtime::{PrivateDir, ReceiptDir};
use serde::Serialize;

use crate::Locations;

/// How long the secret-store probe may take before doctor calls it hung; longer than the store's
/// own timeout so that its clearer error wins.
const PROBE_BOUND: Duration = Duration::from_secs(15);

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckStatus {
    /// Fine.
    Ok,
    /// Works, but worth knowing.
    Warn,
    /// Broken; the fix says what to do.
    Fail,
}

/// One check.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// How it came out.
    pub status: CheckStatus,
    /// What was found.
    pub detail: String,
    /// What to do, when something is wrong.
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: &str, detail: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: CheckStatus::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn warn(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: CheckStatus::Warn,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }

    fn fail(name: &str, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            status: CheckStatus::Fail,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Every check doctor ran.
#[derive(Clone, Debug, Serialize)]
pub struct DoctorReport {
    /// The checks, in the order they ran.
    pub checks: Vec<Check>,
}

impl DoctorReport {
    /// True when no check failed.
    pub fn healthy(&self) -> bool {
        self.checks.iter().all(|c| c.status != CheckStatus::Fail)
    }
}

/// Runs every check.
pub async fn run(locations: &Locations) -> DoctorReport {
    let mut checks = vec![
        Check::ok(
            "version",
            format!(
                "supercode-tray {} on {}",
                env!("CARGO_PKG_VERSION"),
                sysinfo::System::long_os_version().unwrap_or_else(|| std::env::consts::OS.into())
            ),
        ),
        platform(),
        receipt_dir(&locations.receipts),
        canon_home(locations),
        log_dir(&locations.log_dir),
        attach_peer_check(),
    ];
    checks.push(secret_store(locations).await);
    checks.push(tray_host());
    checks.push(claude_code());
    DoctorReport { checks }
}

/// Whether Claude Code's sessions reach the tray: our hooks in its settings, and the program
/// they run still there (a hook whose program is gone makes Claude Code report an error on
/// every event).
fn claude_code() -> Check {
    use agent_hooks::claude_code::{settings_path, HOOKS};
    use agent_hooks::settings::Installed;
    const NAME: &str = "Claude Code";
    const INSTALL: &str = "supercode-tray hooks install claude-code";
    let path = match settings_path() {
        Ok(path) => path,
        Err(e) => return Check::warn(NAME, e.to_string(), "set HOME"),
    };
    let status = HOOKS.status(&path);
    let shown = path.display();
    match (&status.problem, &status.installed) {
        (Some(problem), _) => Check::warn(
            NAME,
            format!("cannot tell whether it is connected: {problem}"),
            format!("fix {shown}, then run `{INSTALL}`"),
        ),
        (None, Installed::No) => Check::ok(
            NAME,
            format!("not connected ({shown} has no hook of ours); to see Claude Code sessions in the tray: {INSTALL}"),
        ),
        (None, Installed::Partly) => Check::warn(
            NAME,
            format!("partly connected: {shown} lacks the hooks for {}", status.missing_events.join(", ")),
            format!("run `{INSTALL}`"),
        ),
        (None, Installed::Yes) if !status.binary_exists => Check::fail(
            NAME,
            format!("connected, but the hook's program is missing ({})", status.commands.join(", ")),
            format!("run `{INSTALL}` with the installed supercode-tray, or `supercode-tray hooks remove claude-code`"),
        ),
        (None, Installed::Yes) => Check::ok(NAME, format!("connected through {shown}")),
    }
}

/// Whether this platform is one Supercode Tray supports (README, "Platforms"): Linux is built
/// and tested in CI; macOS and Windows are neither, so doctor says so instead of letting a user
/// find out from a missing feature.
fn platform() -> Check {
    const NAME: &str = "platform";
    let (os, arch) = (std::env::consts::OS, std::env::consts::ARCH);
    if os == "linux" {
        Check::ok(
            NAME,
            format!("{os} on {arch}: supported (tested in CI on Debian 12)"),
        )
    } else {
        Check::fail(
            NAME,
            format!("{os} on {arch}: not supported; only Linux is built and tested"),
            "run Supercode Tray on a Linux desktop (see README, Platforms)",
        )
    }
}

/// The receipt directory as the next list or registration will find it: the library's own check
/// ([`ReceiptDir::check`]), so doctor never judges it by a rule of its own.
fn receipt_dir(dir: &ReceiptDir) -> Check {
    const NAME: &str = "receipt directory";
    let path = dir.path().display();
    match dir.check() {
        Ok(PrivateDir::Missing) => Check::ok(
            NAME,
            format!("{path} (created when the first runtime registers)"),
        ),
        Ok(PrivateDir::Private { mode }) => Check::ok(NAME, format!("{path} (mode {mode:o})")),
        Ok(PrivateDir::TooOpen { mode }) => Check::warn(
            NAME,
            format!(
                "{path} has mode {mode:o}, which lets other users in; it will be tightened to 0700 on next use (by the tray, the CLI or a runtime registering)"
            ),
            format!("nothing is needed; to tighten it now: chmod 700 {path}"),
        ),
        Ok(PrivateDir::Refused(refused)) => {
            Check::fail(NAME, format!("{path}: {}", refused.problem()), refused.fix())
        }
        Err(e) => Check::fail(
            NAME,
            e.to_string(),
            "set SUPERCODE_RUNTIME_DIR to a directory of your own",
        ),
    }
}

fn canon_home(locations: &Locations) -> Check {
    const NAME: &str = "CANON_HOME";
    let root = locations.canon.root();
    if !root.exists() {
        return Check::ok(
            NAME,
            format!(
                "{} (not created yet: no Canon runtime has run)",
                root.display()
            ),
        );
    }
    let summary = crate::inventory::canon_summary(locations);
    if summary.problems.is_empty() && summary.warnings.is_empty() {
        return Check::ok(NAME, format!("{}: {}", root.display(), summary.text));
    }
    let mut detail = format!("{}: {}", root.display(), summary.text);
    if !summary.problems.is_empty() {
        detail.push_str(&format!(
            "; {} file(s) ignored: {}",
            summary.problems.len(),
            summary.problems.join("; ")
        ));
    }
    if !summary.warnings.is_empty() {
        detail.push_str(&format!(
            "; {} file(s) used but readable by other users: {}",
            summary.warnings.len(),
            summary.warnings.join("; ")
        ));
    }
    Check::warn(
        NAME,
        detail,
        "fix or remove the files named above (chmod 600 those others can read); the rest keeps working",
    )
}

/// Whether attach proxies can tell which OS user is at the other end of a connection (see
/// `docs/attach.md`): they close other users' connections unread and send tokens only to the
/// user's own listeners where the platform says who owns a socket.
fn attach_peer_check() -> Check {
    const NAME: &str = "attach: other users";
    match attach_proxy::owner::Platform::check() {
        attach_proxy::owner::Platform::Checked => Check::ok(
            NAME,
            "the kernel tells which user owns each loopback connection: other users' connections to an attach proxy are closed unread, and tokens go only to your own runtimes' sockets",
        ),
        attach_proxy::owner::Platform::Unchecked => Check::warn(
            NAME,
            format!(
                "on {} an attach proxy cannot tell which user is connecting, so another user of this machine who learns an attach link in time could use it",
                std::env::consts::OS
            ),
            "attach only on a machine you do not share, or use Linux, where this is checked",
        ),
    }
}

fn log_dir(path: &Path) -> Check {
    const NAME: &str = "log directory";
    match std::fs::create_dir_all(path).and_then(|()| tempfile_in(path)) {
        Ok(()) => Check::ok(NAME, path.display().to_string()),
        Err(e) => Check::fail(
            NAME,
            format!("{} is not writable: {e}", path.display()),
            "set SUPERCODE_LOG_DIR to a writable directory",
        ),
    }
}

fn tempfile_in(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(probe)
}

async fn secret_store(locations: &Locations) -> Check {
    const NAME: &str = "secret store";
    let store = locations.receipts.secret_store().clone();
    let description = store.describe();
    let probe = tokio::task::spawn_blocking(move || store.probe());
    match tokio::time::timeout(PROBE_BOUND, probe).await {
        Ok(Ok(Ok(()))) if locations.receipts.secret_store().kind() == live_runtime::SecretStoreKind::File => Check::warn(
            NAME,
            format!("{description}: answers"),
            "tokens are stored in plaintext files; unset SUPERCODE_SECRET_STORE to use the OS keychain",
        ),
        Ok(Ok(Ok(()))) => Check::ok(NAME, format!("{description}: answers")),
        Ok(Ok(Err(e))) => Check::fail(NAME, format!("{description}: {e}"), secret_fix()),
        Ok(Err(e)) => Check::fail(NAME, format!("{description}: the probe failed: {e}"), secret_fix()),
        Err(_) => Check::fail(NAME, format!("{description}: no answer within {PROBE_BOUND:?}"), secret_fix()),
    }
}

fn secret_fix() -> String {
    "unlock your keyring (or start a Secret Service provider such as gnome-keyring); to opt in to plaintext files instead, set SUPERCODE_SECRET_STORE=file".into()
}

fn tray_host() -> Check {
    const NAME: &str = "tray host";
    #[cfg(target_os = "linux")]
    {
        let display = std::env::var_os("WAYLAND_DISPLAY").or_else(|| std::env::var_os("DISPLAY"));
        if display.is_none() {
            return Check::warn(
                NAME,
                "no display (DISPLAY/WAYLAND_DISPLAY unset): the CLI works, the tray app cannot start here",
                "run the tray app from a desktop session",
            );
        }
        let watcher = std::process::Command::new("dbus-send")
            .args([
                "--session",
                "--print-reply",
                "--dest=org.freedesktop.DBus",
                "/org/freedesktop/DBus",
                "org.freedesktop.DBus.NameHasOwner",
                "string:org.kde.StatusNotifierWatcher",
            ])
            .output();
        match watcher {
            Ok(out) if String::from_utf8_lossy(&out.stdout).contains("boolean true") => {
                Check::ok(NAME, "a StatusNotifier tray host is running")
            }
            Ok(_) => Check::warn(
                NAME,
                "no StatusNotifier tray host on the session bus: the tray icon will not show",
                "on GNOME install and enable the AppIndicator extension (gnome-shell-extension-appindicator)",
            ),
            Err(_) => Check::warn(NAME, "could not ask D-Bus (dbus-send missing)", "install the dbus package"),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Check::ok(NAME, "the system tray is part of this desktop")
    }
}
