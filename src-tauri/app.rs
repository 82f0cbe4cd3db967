//! The tray app: tray icon and menu, the on-demand window, notifications and event forwarding.
//!
//! The window is created when the user asks for it and destroyed when closed, so no WebView sits
//! in memory while the app idles in the tray. Every action is reachable from the menu, because on
//! Linux the appindicator tray delivers no clicks to the icon itself.

use std::process::ExitCode;

use supercode_core::view::{RuntimeStatus, Snapshot};
use supercode_core::{CoreEvent, Supercode, WatchHandle};
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuBuilder, MenuItem, PredefinedMenuItem};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Emitter, Manager, RunEvent, Runtime, WebviewUrl, WebviewWindowBuilder};
use tauri_plugin_autostart::ManagerExt as _;
use tauri_plugin_notification::NotificationExt as _;

use crate::commands;

/// The event that carries a fresh [`Snapshot`] to the window.
pub const SNAPSHOT_EVENT: &str = "supercode://snapshot";
/// The event that asks the window to show the revive confirmation for one runtime.
pub const CONFIRM_REVIVE_EVENT: &str = "supercode://confirm-revive";
/// The label of the one window; `capabilities/main-window.json` grants it its permissions.
pub const MAIN_WINDOW: &str = "main";
const TRAY_ID: &str = "supercode-tray";

const TRAY_IDLE: &[u8] = include_bytes!("../icons/tray-idle.png");
const TRAY_LIVE: &[u8] = include_bytes!("../icons/tray-live.png");
const TRAY_PENDING: &[u8] = include_bytes!("../icons/tray-pending.png");

/// Starts the tray app and runs it until the user quits.
pub fn run() -> ExitCode {
    let core = match Supercode::from_env() {
        Ok(core) => core,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let _log_guard = crate::logging::init(&core.locations().log_dir, true);
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "starting Supercode Tray"
    );
    let builder = tauri::Builder::default()
        .plugin(tauri_plugin_single_instance::init(|app, _args, _cwd| {
            if let Err(e) = open_window(app, None) {
                tracing::warn!("could not focus the running instance's window: {e}");
            }
        }))
        .plugin(tauri_plugin_notification::init())
        .plugin(tauri_plugin_autostart::init(
            tauri_plugin_autostart::MacosLauncher::LaunchAgent,
            None,
        ))
        .setup(|app| {
            setup_tray_app(app.handle())?;
            Ok(())
        });
    let app = match build(builder, core).build(tauri::generate_context!()) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("error: could not start the tray app: {e}");
            return ExitCode::FAILURE;
        }
    };
    app.run(|_app, event| {
        // Closing the window must not quit: the app lives in the tray until "Quit".
        if let RunEvent::ExitRequested {
            api, code: None, ..
        } = event
        {
            api.prevent_exit();
        }
    });
    ExitCode::SUCCESS
}

/// Registers the core state and the IPC commands. Generic over the runtime so command tests can
/// pass `tauri::test::mock_builder()`.
pub fn build<R: Runtime>(builder: tauri::Builder<R>, core: Supercode) -> tauri::Builder<R> {
    builder.manage(core).invoke_handler(commands::handler())
}

/// Everything the real app does at start-up beyond [`build`]: the tray, the watcher, approvals.
fn setup_tray_app<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let core = app.state::<Supercode>();
    let snapshot = core.snapshot();
    let tray = TrayIconBuilder::with_id(TRAY_ID)
        .icon(tray_icon(&snapshot)?)
        .tooltip(tray_tooltip(&snapshot))
        .menu(&tray_menu(app, &snapshot)?)
        .show_menu_on_left_click(true)
        .on_menu_event(|app, event| on_menu_event(app, event.id().as_ref()))
        .build(app)?;
    let _ = tray;

    let handle = app.clone();
    let watch: WatchHandle = core.watch(move |event| forward(&handle, event));
    app.manage(watch);
    tracing::info!(
        runtimes = snapshot.runtimes.len(),
        pending = snapshot.pending.len(),
        "tray ready, inventory loaded"
    );
    // A registration submitted before the app last stopped resumes polling without resubmitting.
    for profile in core.submitted_registrations() {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            let core = app.state::<Supercode>();
            if let Err(e) = core.approve(&profile, |_| {}).await {
                tracing::warn!(profile = %profile, "resuming the approval failed: {e}");
            }
        });
    }

    if std::env::var_os("SUPERCODE_TRAY_OPEN_WINDOW").is_some_and(|v| v == "1") {
        open_window(app, None)?;
    }
    Ok(())
}

/// Maps a core event to what the user sees: window events, the tray, notifications.
pub fn forward<R: Runtime>(app: &AppHandle<R>, event: CoreEvent) {
    match event {
        CoreEvent::Snapshot(snapshot) => {
            if let Err(e) = app.emit_to(MAIN_WINDOW, SNAPSHOT_EVENT, &snapshot) {
                tracing::debug!("no window to update: {e}");
            }
            if let Err(e) = refresh_tray(app, &snapshot) {
                tracing::warn!("could not update the tray: {e}");
            }
        }
        CoreEvent::RuntimeDied { name } => {
            tracing::info!(runtime = %name, "a runtime stopped unexpectedly");
            notify(
                app,
                "Runtime stopped",
                &format!(
                    "{name} stopped unexpectedly. Revive it from the tray if it is revivable."
                ),
            );
        }
        CoreEvent::RegistrationWaiting { profile } => {
            tracing::info!(profile = %profile, "a registration is waiting for approval");
            notify(
                app,
                "Registration waiting",
                &format!("The agent registration \"{profile}\" is waiting for approval."),
            );
        }
    }
}

fn notify<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    // Without the plugin (command tests on the mock runtime) there is nothing to show.
    if app
        .try_state::<tauri_plugin_notification::Notification<R>>()
        .is_none()
    {
        return;
    }
    if let Err(e) = app.notification().builder().title(title).body(body).show() {
        tracing::debug!("notification not shown: {e}");
    }
}

fn refresh_tray<R: Runtime>(app: &AppHandle<R>, snapshot: &Snapshot) -> tauri::Result<()> {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return Ok(());
    };
    update_tray(app, &tray, snapshot)
}

fn update_tray<R: Runtime>(
    app: &AppHandle<R>,
    tray: &TrayIcon<R>,
    snapshot: &Snapshot,
) -> tauri::Result<()> {
    tray.set_icon(Some(tray_icon(snapshot)?))?;
    tray.set_tooltip(Some(tray_tooltip(snapshot)))?;
    tray.set_menu(Some(tray_menu(app, snapshot)?))?;
    Ok(())
}

/// The tray's look says the state: a registration waiting beats runtimes live beats idle.
fn tray_icon(snapshot: &Snapshot) -> tauri::Result<Image<'static>> {
    let bytes = if !snapshot.pending.is_empty() {
        TRAY_PENDING
    } else if snapshot
        .runtimes
        .iter()
        .any(|r| r.status == RuntimeStatus::Running)
    {
        TRAY_LIVE
    } else {
        TRAY_IDLE
    };
    Image::from_bytes(bytes)
}

fn tray_tooltip(snapshot: &Snapshot) -> String {
    let live = snapshot
        .runtimes
        .iter()
        .filter(|r| r.status == RuntimeStatus::Running)
        .count();
    match (live, snapshot.pending.len()) {
        (0, 0) => "Supercode Tray: no live runtimes".to_owned(),
        (live, 0) => format!("Supercode Tray: {live} live"),
        (live, pending) => format!("Supercode Tray: {live} live, {pending} waiting for approval"),
    }
}

/// The menu: live runtimes (attach), revivable ones, pending registrations, then the app's items.
fn tray_menu<R: Runtime>(app: &AppHandle<R>, snapshot: &Snapshot) -> tauri::Result<Menu<R>> {
    let mut menu = MenuBuilder::new(app);
    let live: Vec<_> = snapshot
        .runtimes
        .iter()
        .filter(|r| r.attach.available)
        .collect();
    if live.is_empty() {
        menu = menu.item(&MenuItem::with_id(
            app,
            "none",
            "No live runtimes",
            false,
            None::<&str>,
        )?);
    }
    for runtime in live {
        let label = format!("Attach {} ({})", runtime.name, runtime.kind);
        menu = menu.item(&MenuItem::with_id(
            app,
            format!("attach:{}", runtime.id),
            label,
            true,
            None::<&str>,
        )?);
    }
    let revivable: Vec<_> = snapshot
        .runtimes
        .iter()
        .filter(|r| r.revive.available)
        .collect();
    if !revivable.is_empty() {
        menu = menu.item(&PredefinedMenuItem::separator(app)?);
        for runtime in revivable {
            let label = format!("Revive {}…", runtime.name);
            menu = menu.item(&MenuItem::with_id(
                app,
                format!("revive:{}", runtime.id),
                label,
                true,
                None::<&str>,
            )?);
        }
    }
    if !snapshot.pending.is_empty() {
        menu = menu.item(&PredefinedMenuItem::separator(app)?);
        for pending in &snapshot.pending {
            let label = format!("Approve registration \"{}\"", pending.profile);
            menu = menu.item(&MenuItem::with_id(
                app,
                format!("approve:{}", pending.profile),
                label,
                true,
                None::<&str>,
            )?);
        }
    }
    let autostart = app.autolaunch().is_enabled().unwrap_or(false);
    menu.separator()
        .item(&MenuItem::with_id(
            app,
            "open",
            "Open Supercode Tray",
            true,
            None::<&str>,
        )?)
        .item(&CheckMenuItem::with_id(
            app,
            "autostart",
            "Start at login",
            true,
            autostart,
            None::<&str>,
        )?)
        .item(&MenuItem::with_id(
            app,
            "logs",
            "Open logs folder",
            true,
            None::<&str>,
        )?)
        .separator()
        .item(&MenuItem::with_id(app, "quit", "Quit", true, None::<&str>)?)
        .build()
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, id: &str) {
    let result = match id.split_once(':') {
        Some(("attach", runtime)) => {
            let (app, runtime) = (app.clone(), runtime.to_owned());
            tauri::async_runtime::spawn(async move {
                let core = app.state::<Supercode>();
                if let Err(e) = commands::runtimes::attach_and_open(&core, &runtime).await {
                    notify(&app, "Attach failed", &e.message);
                }
            });
            Ok(())
        }
        // Revive shows its launch command before running: the window asks for confirmation.
        Some(("revive", runtime)) => open_window(app, Some(runtime)),
        Some(("approve", profile)) => {
            let (app, profile) = (app.clone(), profile.to_owned());
            tauri::async_runtime::spawn(async move {
                let core = app.state::<Supercode>();
                match core.approve(&profile, |_| {}).await {
                    Ok(view) => notify(
                        &app,
                        "Registration",
                        &format!("{}: {:?}", view.profile, view.state),
                    ),
                    Err(e) => notify(&app, "Approval failed", &e.to_string()),
                }
            });
            Ok(())
        }
        _ => match id {
            "open" => open_window(app, None),
            "autostart" => toggle_autostart(app),
            "logs" => {
                if let Err(e) = commands::app::open_logs_folder(&app.state::<Supercode>()) {
                    notify(app, "Open logs folder", &e.message);
                }
                Ok(())
            }
            "quit" => {
                app.exit(0);
                Ok(())
            }
            _ => Ok(()),
        },
    };
    if let Err(e) = result {
        tracing::warn!("menu action {id} failed: {e}");
    }
}

fn toggle_autostart<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let launcher = app.autolaunch();
    let result = if launcher.is_enabled().unwrap_or(false) {
        launcher.disable()
    } else {
        launcher.enable()
    };
    if let Err(e) = result {
        notify(
            app,
            "Start at login",
            &format!("Could not change the setting: {e}"),
        );
    }
    refresh_tray(app, &app.state::<Supercode>().snapshot())
}

/// Shows the window, creating it if needed; with `confirm_revive`, asks it to show that runtime's
/// revive confirmation.
pub fn open_window<R: Runtime>(
    app: &AppHandle<R>,
    confirm_revive: Option<&str>,
) -> tauri::Result<()> {
    if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
        window.show()?;
        window.unminimize()?;
        window.set_focus()?;
        if let Some(id) = confirm_revive {
            window.emit(CONFIRM_REVIVE_EVENT, id)?;
        }
        return Ok(());
    }
    let page = match confirm_revive {
        Some(id) => format!("index.html?confirmRevive={}", encode_query(id)),
        None => "index.html".to_owned(),
    };
    WebviewWindowBuilder::new(app, MAIN_WINDOW, WebviewUrl::App(page.into()))
        .title("Supercode Tray")
        .inner_size(440.0, 620.0)
        .min_inner_size(360.0, 420.0)
        .build()?;
    Ok(())
}

/// Percent-encodes an inventory id for the window's query string (ids are not secrets).
fn encode_query(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
