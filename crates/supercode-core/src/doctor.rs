//! `supercode-tray doctor`: what a user or a bug report needs, each problem with its fix.
//!
//! A check *fails* when something Supercode Tray needs does not work: the receipt directory is
//! refused, the log directory is not writable, the secret store does not answer, the platform is
//! not supported, an agent's hooks run a program that is gone. Doctor then exits non-zero. A
//! *warning* is something that works but that you should know of, mostly why "nothing happens":
//! the tray app is not running, no notification server or tray host is on the session bus, no
//! program would open a URL or a folder, a file was ignored (each one, with its reason), Codex
//! does not trust our hooks yet.

use std::path::Path;
use std::time::Duration;

use agent_hooks::agent::Agent;
use live_runtime::{PrivateDir, ReceiptDir};
use serde::Serialize;

use crate::desktop::{self, Opening};
use crate::inventory::Sources;
use crate::view::{AgentConnection, IgnoredFile, IgnoredLocation};
use crate::Locations;

/// How long the secret-store probe may take before doctor calls it hung; longer than the store's
/// own timeout so that its clearer error wins.
const PROBE_BOUND: Duration = Duration::from_secs(15);

/// How long doctor waits for an answer on the session bus. The bus daemon answers at once, and a
/// notification server the bus starts on demand answers in well under a second; one that takes
/// longer is hung, which is worth a warning, not a hung doctor.
const BUS_TIMEOUT: Duration = Duration::from_secs(3);

/// The id the tray app gives its single-instance guard (tauri-plugin-single-instance's
/// `dbus_id`): the running app owns [`APP_BUS_NAME`] on the session bus, and a second start hands
/// its arguments to it there.
pub const APP_INSTANCE_ID: &str = "dev.supercode.tray";

/// The name the running tray app owns on the session bus: [`APP_INSTANCE_ID`] and the plugin's
/// `.SingleInstance`. Whether it has an owner is whether the app runs.
pub const APP_BUS_NAME: &str = "dev.supercode.tray.SingleInstance";

/// The desktop notification server's name on the session bus (Desktop Notifications
/// Specification), where the app's notifications go (through notify-rust).
const NOTIFICATIONS_NAME: &str = "org.freedesktop.Notifications";

/// The longest text doctor repeats from another program (the notification server's name).
const FOREIGN_TEXT_CHARS: usize = 64;

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
    // The files the inventory reads, read once as it reads them (changing nothing):
    // `$CANON_HOME`'s summary and every ignored file come from here.
    let sources = Sources::read_unchanged(locations);
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
        canon_home(locations, &sources),
        log_dir(&locations.log_dir),
        attach_peer_check(),
    ];
    checks.push(secret_store(locations).await);
    // D-Bus round trips, each bounded by BUS_TIMEOUT, off the async runtime.
    match tokio::task::spawn_blocking(session_bus_checks).await {
        Ok(bus_checks) => checks.extend(bus_checks),
        Err(e) => checks.push(Check::warn(
            "session bus",
            format!("the checks did not finish: {e}"),
            "run doctor again",
        )),
    }
    checks.push(opener(Opening::Browser));
    checks.push(opener(Opening::Folder));
    checks.extend(Agent::ALL.map(agent_hooks));
    checks.extend(ignored_files(locations, sources.ignored()));
    DoctorReport { checks }
}

/// The session bus, for doctor's few questions to it.
struct SessionBus(dbus::blocking::Connection);

impl SessionBus {
    fn connect() -> Result<Self, dbus::Error> {
        dbus::blocking::Connection::new_session().map(Self)
    }

    fn name_has_owner(&self, name: &str) -> Result<bool, dbus::Error> {
        let bus = self
            .0
            .with_proxy("org.freedesktop.DBus", "/org/freedesktop/DBus", BUS_TIMEOUT);
        let (owned,): (bool,) = bus.method_call("org.freedesktop.DBus", "NameHasOwner", (name,))?;
        Ok(owned)
    }

    /// The notification server's `GetServerInformation`: name, vendor, version, spec version.
    /// Asking it starts a server the bus activates on demand, as the app's first notification would.
    fn notification_server(&self) -> Result<(String, String, String, String), dbus::Error> {
        let server = self.0.with_proxy(
            NOTIFICATIONS_NAME,
            "/org/freedesktop/Notifications",
            BUS_TIMEOUT,
        );
        server.method_call(NOTIFICATIONS_NAME, "GetServerInformation", ())
    }
}

/// What the desktop session's bus says: the tray host, the tray app, the notification server.
fn session_bus_checks() -> Vec<Check> {
    let bus = match SessionBus::connect() {
        Ok(bus) => bus,
        Err(e) => {
            let detail = format!("cannot reach the session bus ({})", bus_error(&e));
            let fix =
                "run doctor from your desktop session (DBUS_SESSION_BUS_ADDRESS must name its bus)";
            return ["tray host", "tray app", "notifications"]
                .into_iter()
                .map(|name| Check::warn(name, format!("cannot tell: {detail}"), fix))
                .collect();
        }
    };
    vec![tray_host(&bus), tray_app(&bus), notifications(&bus)]
}

/// A D-Bus error for people: its message, else its name.
fn bus_error(e: &dbus::Error) -> String {
    e.message()
        .or_else(|| e.name())
        .unwrap_or("unknown error")
        .to_owned()
}

/// Whether the tray app runs: it owns [`APP_BUS_NAME`] while it does. Without it nothing shows
/// that an agent needs you, which is the first thing to rule out when "nothing happens".
fn tray_app(bus: &SessionBus) -> Check {
    const NAME: &str = "tray app";
    match bus.name_has_owner(APP_BUS_NAME) {
        Ok(true) => Check::ok(NAME, format!("running (it owns {APP_BUS_NAME} on the session bus)")),
        Ok(false) => Check::warn(
            NAME,
            "not running: no tray icon, window or notification will tell you when an agent needs you (`supercode-tray list` still works)",
            "start it: run `supercode-tray` with no subcommand from your desktop session, or Supercode Tray from your applications menu; its menu's \"Start at login\" keeps it running",
        ),
        Err(e) => Check::warn(
            NAME,
            format!("cannot tell whether it is running: the session bus did not answer ({})", bus_error(&e)),
            "run doctor again from your desktop session",
        ),
    }
}

/// Whether a notification server answers on the session bus: without one the app's
/// notifications (an agent needs you, an attach or an opener that failed) go nowhere.
fn notifications(bus: &SessionBus) -> Check {
    const NAME: &str = "notifications";
    const FIX: &str = "run a notification server: your desktop's own (GNOME Shell, KDE Plasma), or a daemon such as dunst, mako or xfce4-notifyd; until then watch the tray menu or the window";
    match bus.notification_server() {
        Ok((name, vendor, version, spec)) => {
            let shown = |text: &str| text.chars().take(FOREIGN_TEXT_CHARS).collect::<String>();
            Check::ok(
                NAME,
                format!(
                    "{} {} ({}) answers on the session bus (specification {})",
                    shown(&name),
                    shown(&version),
                    shown(&vendor),
                    shown(&spec)
                ),
            )
        }
        Err(e) if e.name() == Some("org.freedesktop.DBus.Error.NoReply") => Check::warn(
            NAME,
            format!("the notification server did not answer within {BUS_TIMEOUT:?}: notifications may not show"),
            FIX,
        ),
        Err(e) => Check::warn(
            NAME,
            format!(
                "no notification server on the session bus ({}): the app's notifications will not show",
                bus_error(&e)
            ),
            FIX,
        ),
    }
}

/// Whether something would open an attach URL or the logs folder: the launcher
/// [`desktop::launcher`] finds, as the opening will. Nothing is opened.
fn opener(opening: Opening) -> Check {
    let (name, what) = match opening {
        Opening::Browser => ("browser opener", "attach opens its link"),
        Opening::Folder => ("file opener", "the logs folder opens"),
    };
    match desktop::launcher(opening) {
        Ok(found) if found.from_variable => Check::ok(
            name,
            format!(
                "{what} with {} ({}), as SUPERCODE_BROWSER says",
                found.program,
                found.path.display()
            ),
        ),
        Ok(found) => Check::ok(
            name,
            format!("{what} with {} ({})", found.program, found.path.display()),
        ),
        Err(e) => Check::warn(
            name,
            format!("{e}: nothing would open (attach still prints its link)"),
            match opening {
                Opening::Browser => "install xdg-utils (xdg-open), or set SUPERCODE_BROWSER to your browser's program",
                Opening::Folder => "install xdg-utils (xdg-open) or your desktop's gio",
            },
        ),
    }
}

/// Every file the inventory ignored, a warning each with its reason: the listing goes on
/// without them, which is another way for a runtime to be missing. The receipt directory
/// itself, when it cannot be read, is the receipt-directory check's failure, not repeated here.
fn ignored_files(
    locations: &Locations,
    ignored: Vec<IgnoredFile>,
) -> impl Iterator<Item = Check> + '_ {
    ignored.into_iter().filter_map(move |file| {
        let dir = match file.location {
            IgnoredLocation::Receipts => locations.receipts.path(),
            IgnoredLocation::Canon => locations.canon.root(),
            IgnoredLocation::State => locations.state_dir.as_path(),
        };
        let path = dir.join(&file.file);
        if path == dir {
            return None;
        }
        Some(Check::warn(
            "ignored file",
            format!("{}: {}", path.display(), file.reason),
            "fix or remove it as the reason says; the other files are read as usual",
        ))
    })
}

/// Whether `agent`'s sessions reach the tray: our hooks in its settings, the program they run
/// still there (a hook whose program is gone makes the agent report an error on every event),
/// and, for Codex, trusted in Codex (it runs no hook the user has not trusted).
fn agent_hooks(agent: Agent) -> Check {
    let name = agent.title();
    let install = format!("supercode-tray hooks install {}", agent.name());
    let path = match agent.settings_path() {
        Ok(path) => path,
        Err(e) => return Check::warn(name, e.to_string(), "set HOME"),
    };
    // The sentences are the window's (`connect::agent_view`); doctor adds where and what to run.
    let view = crate::connect::agent_view(agent, &path);
    let shown = path.display();
    let summary = &view.summary;
    match view.connection {
        AgentConnection::Problem => Check::warn(
            name,
            format!("cannot tell whether it is connected: {summary}"),
            format!("fix {shown}, then run `{install}`"),
        ),
        AgentConnection::NotConnected => Check::ok(
            name,
            format!("{summary} ({shown} has no hook of ours); to see {name} sessions in the tray: {install}"),
        ),
        // A hook whose program is gone makes the agent report an error on every event.
        AgentConnection::Partly if !agent.hooks().status(&path).binary_exists => Check::fail(
            name,
            format!("{summary} in {shown}"),
            format!("run `{install}` with the installed supercode-tray, or `supercode-tray hooks remove {}`", agent.name()),
        ),
        AgentConnection::Partly => Check::warn(
            name,
            format!("{summary} in {shown}"),
            format!("run `{install}`"),
        ),
        AgentConnection::Connected => match &view.trust {
            Some(note) => Check::warn(
                name,
                format!("{summary} through {shown}, but {note}"),
                format!("start {name}; when it says \"Hooks need review\", review them and trust the Supercode Tray entries"),
            ),
            None => Check::ok(name, format!("{summary} through {shown}")),
        },
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

fn canon_home(locations: &Locations, sources: &Sources) -> Check {
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
    let summary = sources.canon_summary();
    let mut detail = format!("{}: {}", root.display(), summary.text);
    if summary.ignored > 0 {
        detail.push_str(&format!(
            "; {} file(s) ignored (each below, as an ignored file)",
            summary.ignored
        ));
    }
    if summary.warnings.is_empty() {
        return Check::ok(NAME, detail);
    }
    detail.push_str(&format!(
        "; {} file(s) used but readable by other users: {}",
        summary.warnings.len(),
        summary.warnings.join("; ")
    ));
    Check::warn(
        NAME,
        detail,
        "chmod 600 the files named above; the rest keeps working",
    )
}

/// Whether attach proxies can tell which OS user is at the other end of a connection (see
/// `docs/attach.md`): they close other users' connections unread and send tokens only to the
/// user's own listeners where the platform says who owns a socket.
fn attach_peer_check() -> Check {
    const NAME: &str = "attach: other users";
    match runtime_link::owner::Platform::check() {
        runtime_link::owner::Platform::Checked => Check::ok(
            NAME,
            "the kernel tells which user owns each loopback connection: other users' connections to an attach proxy are closed unread, and tokens go only to your own runtimes' sockets",
        ),
        runtime_link::owner::Platform::Unchecked => Check::warn(
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

/// Whether a StatusNotifier tray host shows the tray icon.
fn tray_host(bus: &SessionBus) -> Check {
    const NAME: &str = "tray host";
    let display = std::env::var_os("WAYLAND_DISPLAY").or_else(|| std::env::var_os("DISPLAY"));
    if display.is_none() {
        return Check::warn(
            NAME,
            "no display (DISPLAY/WAYLAND_DISPLAY unset): the CLI works, the tray app cannot start here",
            "run the tray app from a desktop session",
        );
    }
    match bus.name_has_owner(TRAY_HOST_NAME) {
        Ok(true) => Check::ok(NAME, "a StatusNotifier tray host is running"),
        Ok(false) => Check::warn(
            NAME,
            "no StatusNotifier tray host on the session bus: the tray icon will not show",
            TRAY_HOST_FIX,
        ),
        Err(e) => Check::warn(
            NAME,
            format!(
                "cannot tell: the session bus did not answer ({})",
                bus_error(&e)
            ),
            "run doctor again from your desktop session",
        ),
    }
}

/// The bus name a StatusNotifier tray host owns; without its owner no tray icon shows.
const TRAY_HOST_NAME: &str = "org.kde.StatusNotifierWatcher";

/// What to do when no tray host runs, for doctor and the window alike.
const TRAY_HOST_FIX: &str =
    "on GNOME install and enable the AppIndicator extension (gnome-shell-extension-appindicator)";

/// What the window says when the desktop has no tray host (the rule doctor's "tray host" check
/// applies, asked of the session bus now), or `None` when one runs or the bus cannot tell: a
/// notice that might be wrong is worse than none, and doctor says "cannot tell" in detail.
/// Blocking (one D-Bus call, [`BUS_TIMEOUT`] at most): call it off the async runtime.
pub fn tray_host_notice() -> Option<crate::view::DesktopNotice> {
    let bus = SessionBus::connect().ok()?;
    match bus.name_has_owner(TRAY_HOST_NAME) {
        Ok(false) => Some(crate::view::DesktopNotice {
            title: "The tray icon cannot show on this desktop".into(),
            detail: format!(
                "No tray host is running, so Supercode Tray has no icon in the panel. To get it, {TRAY_HOST_FIX}. Meanwhile, run supercode-tray again to bring this window back."
            ),
        }),
        Ok(true) | Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_bus_name_is_the_plugins_name_for_the_apps_id() {
        assert_eq!(APP_BUS_NAME, format!("{APP_INSTANCE_ID}.SingleInstance"));
    }
}
