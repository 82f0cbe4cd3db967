//! The tray app: tray icon and menu, the on-demand window, notifications and event forwarding.
//!
//! The window is created when the user asks for it and destroyed when closed, so no WebView sits
//! in memory while the app idles in the tray. Every action is reachable from the menu, because on
//! Linux the appindicator tray delivers no clicks to the icon itself.

use std::process::ExitCode;
use std::time::Duration;

use supercode_core::view::PendingState;
use supercode_core::{CoreEvent, Locations, Supercode, WatchHandle};
use tauri::{
    App, AppHandle, Emitter, Manager, RunEvent, Runtime, WebviewUrl, WebviewWindowBuilder,
};
#[cfg(not(target_os = "linux"))]
use tauri_plugin_notification::NotificationExt as _;

use crate::commands;

mod alerts;
mod autostart;
mod first_start;
mod tray;
use alerts::{AgentAlerts, AlertText, Choice, Notifications, Shown};
use tray::MenuId;

// The event names are the core's, which the UI's bindings are generated from: one spelling.
pub use supercode_core::view::events::{
    CONFIRM_ACT as CONFIRM_ACT_EVENT, CONFIRM_REVIVE as CONFIRM_REVIVE_EVENT,
    SNAPSHOT as SNAPSHOT_EVENT,
};
/// The label of the one window; `capabilities/main-window.json` grants it its permissions.
pub const MAIN_WINDOW: &str = "main";

/// How long quitting waits for the core's background work to end ([`Supercode::shutdown`]).
/// Everything is told to stop at once; what takes longest is an attach proxy finishing an
/// in-flight response (at most `attach_proxy::SHUTDOWN_GRACE`, 1 s) and a keychain call that
/// cannot be interrupted (at most `live_runtime::KEYCHAIN_TIMEOUT`, 5 s). Past this the app
/// exits anyway: a quit must not hang, and nothing is lost (an interrupted approval resumes at
/// the next start).
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(6);

/// Starts the tray app and runs it until the user quits.
pub fn run() -> ExitCode {
    let locations = match Locations::from_env() {
        Ok(locations) => locations,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let _log_guard = supercode_cli::logging::init(
        &locations.log_dir,
        true,
        supercode_cli::logging::APP_BUFFERED_LINES,
    );
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        "starting Supercode Tray"
    );
    let builder = tauri::Builder::default()
        // Its name on the session bus is how `doctor` tells that the app runs: one spelling, the
        // core's.
        .plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(supercode_core::doctor::APP_INSTANCE_ID)
                .callback(|app, _args, _cwd| {
                    if let Err(e) = open_window(app, None) {
                        tracing::warn!("could not focus the running instance's window: {e}");
                    }
                })
                .build(),
        )
        .plugin(tauri_plugin_notification::init())
        .setup(|app| {
            setup_tray_app(app.handle())?;
            Ok(())
        });
    let app = match build(builder, tauri::generate_context!(), locations) {
        Ok(app) => app,
        Err(e) => {
            eprintln!("error: could not start the tray app: {e}");
            return ExitCode::FAILURE;
        }
    };
    app.run(|app, event| match event {
        // Closing the window must not quit: the app lives in the tray until "Quit".
        RunEvent::ExitRequested {
            api, code: None, ..
        } => api.prevent_exit(),
        // The last event before the process exits, and exiting runs no destructor of managed
        // state: the core's background work ends here, awaited. Blocking the main thread is
        // fine now (the event loop is done) and nothing the work does waits for it.
        RunEvent::Exit => shut_down(app),
        _ => {}
    });
    ExitCode::SUCCESS
}

/// Ends the core's background work, waiting at most [`SHUTDOWN_WAIT`]. Called on the main
/// thread once the event loop is done, outside any async runtime.
pub fn shut_down<R: Runtime>(app: &AppHandle<R>) {
    let core = app.state::<Supercode>();
    // The timeout is made inside the future `block_on` runs: its timer needs the runtime's time
    // driver, which only exists in there (made out here it panics, "there is no reactor
    // running", and the process exits 101 without shutting down; issue 31).
    let finished = tauri::async_runtime::block_on(async {
        tokio::time::timeout(SHUTDOWN_WAIT, core.shutdown()).await
    });
    if finished.is_err() {
        tracing::warn!("background work still running after {SHUTDOWN_WAIT:?}; exiting anyway");
    }
}

/// Builds the app over `locations`: the core (its events forwarded to the window, the tray and
/// notifications from the start) and the IPC commands. Generic over the runtime so command tests
/// can pass `tauri::test::mock_builder()`.
pub fn build<R: Runtime>(
    builder: tauri::Builder<R>,
    context: tauri::Context<R>,
    locations: Locations,
) -> tauri::Result<App<R>> {
    let app = builder.invoke_handler(commands::handler()).build(context)?;
    // Managed before the event loop starts, so before setup and any command runs.
    let handle = app.handle().clone();
    app.manage(Supercode::new(locations, move |event| {
        forward(&handle, event)
    }));
    Ok(app)
}

/// Everything the real app does at start-up beyond [`build`]: the tray, the watcher, approvals.
fn setup_tray_app<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let core = app.state::<Supercode>();
    // Before the tray, which shows the setting as a check item.
    app.manage(AgentAlerts::load(&core.locations().state_dir));
    app.manage(Notifications::default());
    let snapshot = core.snapshot();
    tray::create(app, &snapshot, on_menu_event)?;

    let watch: WatchHandle = core.watch();
    app.manage(watch);
    tracing::info!(
        runtimes = snapshot.runtimes.len(),
        pending = snapshot.pending.len(),
        "tray ready, inventory loaded"
    );
    // A registration submitted before the app last stopped resumes polling without resubmitting.
    for profile in core.submitted_registrations() {
        spawn_tracked(app, move |app| async move {
            let core = app.state::<Supercode>();
            if let Err(e) = core.approve(&profile, |_| {}).await {
                tracing::warn!(profile = %profile, "resuming the approval failed: {e}");
            }
        });
    }

    // `SUPERCODE_TRAY_OPEN_WINDOW=1` opens the window at every start, `=0` at none (the tests
    // and scripts that want one or the other); unset, it opens at the first start only.
    let first_start = first_start::FirstStart::in_dir(&core.locations().state_dir);
    let open = match std::env::var_os("SUPERCODE_TRAY_OPEN_WINDOW") {
        Some(value) => value == "1",
        None => first_start.is_first(),
    };
    if open {
        open_window(app, None)?;
        if let Err(e) = first_start.remember() {
            tracing::warn!("could not remember that the window opened at the first start: {e}");
        }
    }
    Ok(())
}

/// Maps a core event to what the user sees: window events, the tray, notifications.
pub fn forward<R: Runtime>(app: &AppHandle<R>, event: CoreEvent) {
    match event {
        CoreEvent::Snapshot(snapshot) => {
            // Tauri serializes an event before it looks for its listeners (10 MB of JSON at
            // 10,000 runtimes), so none is made while the window is closed; it asks for the
            // snapshot when it opens.
            if app.get_webview_window(MAIN_WINDOW).is_some() {
                if let Err(e) = app.emit_to(MAIN_WINDOW, SNAPSHOT_EVENT, &*snapshot) {
                    tracing::debug!("could not update the window: {e}");
                }
            }
            // A notification about a state the runtime has left is withdrawn.
            if let Some(notifications) = app.try_state::<Notifications>() {
                let gone = notifications.moved_on(|id| {
                    snapshot
                        .runtimes
                        .iter()
                        .find(|r| r.id == id)
                        .and_then(|r| r.state.as_ref())
                });
                withdraw(gone);
            }
            if let Err(e) = tray::refresh(app, snapshot) {
                tracing::warn!("could not update the tray: {e}");
            }
        }
        CoreEvent::RuntimeDied { name, revivable } => {
            tracing::info!(runtime = %name, revivable, "a runtime stopped unexpectedly");
            let notice = alerts::runtime_died(&name, revivable);
            notify(app, notice.heading, &notice.body);
        }
        CoreEvent::RegistrationWaiting { profile } => {
            tracing::info!(profile = %profile, "a registration is waiting for approval");
            notify(
                app,
                "Registration waiting",
                &format!("The agent registration \"{profile}\" is waiting for approval."),
            );
        }
        CoreEvent::AgentAlert {
            id,
            name,
            state,
            title,
            detail,
            actions,
            revision,
        } => {
            // Name, opaque id and state are safe to log; the title, the agent's own text, is not.
            tracing::info!(runtime = %name, %id, ?state, "an agent needs attention");
            // Without the managed setting (command tests) the default holds: notify.
            let enabled = app.try_state::<AgentAlerts>().is_none_or(|s| s.enabled());
            if enabled {
                let buttons = alerts::buttons(&id, &actions, revision);
                notify_agent(
                    app,
                    AgentNotice {
                        id,
                        name,
                        state,
                        title,
                        detail,
                        offers_actions: !actions.is_empty(),
                        buttons,
                    },
                );
            }
        }
    }
}

/// An agent's notification, before the server is asked whether it shows buttons.
struct AgentNotice {
    id: String,
    name: String,
    state: supercode_core::view::AgentState,
    title: Option<String>,
    detail: Option<String>,
    /// Whether the agent offers actions (the buttons then hold them, not only Open).
    offers_actions: bool,
    buttons: Vec<(String, String, Choice)>,
}

/// Shows an agent's notification: in place of the one already shown for its runtime (the
/// server's `replaces_id`), with the agent's actions and Open as buttons where the server shows
/// buttons (its `actions` capability), and the choice made on it carried out.
fn notify_agent<R: Runtime>(app: &AppHandle<R>, alert: AgentNotice) {
    if app
        .try_state::<tauri_plugin_notification::Notification<R>>()
        .is_none()
    {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // Noted before the server is asked, on this thread, which also handles the snapshots: a
        // snapshot that comes meanwhile is compared with this notification, not the one before.
        let Some(notifications) = app.try_state::<Notifications>() else {
            return;
        };
        let begun = notifications.begin(
            &alert.id,
            Shown {
                server_id: None,
                state: alert.state,
                title: alert.title.clone(),
                detail: alert.detail.clone(),
            },
        );
        let app = app.clone();
        // D-Bus round trips, and then a wait for the user's choice, off the app's event thread.
        let spawned = std::thread::Builder::new()
            .name("notification".into())
            .spawn(move || show_agent_notification(&app, alert, begun));
        if let Err(e) = spawned {
            tracing::debug!("notification not shown: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let text = AlertText {
            name: &alert.name,
            title: alert.title.as_deref(),
            detail: alert.detail.as_deref(),
            actionable: false,
        };
        if let Some(notice) = alerts::notification(alert.state, &text) {
            notify(app, notice.heading, &notice.body);
        }
    }
}

/// Shows showing `token` of an agent's notification, replacing `replaces`, and waits for the
/// user's choice on it (or its closing).
#[cfg(target_os = "linux")]
fn show_agent_notification<R: Runtime>(
    app: &AppHandle<R>,
    alert: AgentNotice,
    (token, replaces): (u64, Option<u32>),
) {
    let notifications = app.state::<Notifications>();
    let capabilities = server_capabilities();
    let actionable = capabilities.iter().any(|c| c == "actions");
    let text = AlertText {
        name: &alert.name,
        title: alert.title.as_deref(),
        detail: alert.detail.as_deref(),
        actionable: actionable && alert.offers_actions,
    };
    let Some(notice) = alerts::notification(alert.state, &text) else {
        notifications.closed(&alert.id, token);
        return;
    };
    let mut notification = linux_notification(notice.heading, &notice.body, &capabilities);
    if actionable {
        for (key, label, _) in &alert.buttons {
            notification.action(key, &supercode_core::text::visible(label));
        }
    }
    let showing = match Showing::show(&notification, replaces.unwrap_or(0)) {
        Ok(showing) => showing,
        Err(e) => {
            notifications.closed(&alert.id, token);
            tracing::debug!("notification not shown: {e}");
            return;
        }
    };
    if !notifications.shown(&alert.id, token, showing.id) {
        // Its runtime moved on (or another replaced it) while the server was asked.
        withdraw(vec![showing.id]);
    }
    // Kept until the server closes it (a server that asks the bus who sent it must still find
    // the sender there); a replaced showing's wait ends with its replacement's, and does nothing.
    let chosen = showing.wait();
    let current = notifications.is_current(&alert.id, token);
    notifications.closed(&alert.id, token);
    if !current {
        return;
    }
    if let Some(choice) = chosen.and_then(|key| alerts::chosen(&alert.buttons, &key)) {
        tracing::info!(runtime = %alert.name, "notification button chosen");
        choose(app, choice);
    }
}

/// The notification server's bus name, object path and interface (the Desktop Notifications
/// Specification).
#[cfg(target_os = "linux")]
const NOTIFICATIONS: &str = "org.freedesktop.Notifications";
#[cfg(target_os = "linux")]
const NOTIFICATIONS_PATH: &str = "/org/freedesktop/Notifications";

/// A notification as sent, with the server's signals subscribed on its connection before it was
/// sent: the one way the app shows a notification on Linux (notify-rust only builds it and asks
/// for the server's capabilities). notify-rust subscribes only once `Notify` has returned, so a
/// button clicked as the notification appeared (or a server quick to answer) was never seen: the
/// end-to-end test of the notification's buttons lost its click in 2 runs of 3 under load.
#[cfg(target_os = "linux")]
struct Showing {
    /// The server's id of the notification.
    id: u32,
    signals: zbus::MessageStream,
    /// Kept open until the notification closes.
    _connection: zbus::Connection,
}

#[cfg(target_os = "linux")]
impl Showing {
    /// Sends `notification` (replacing the server's notification `replaces`, or none for 0).
    fn show(notification: &notify_rust::Notification, replaces: u32) -> zbus::Result<Self> {
        zbus::block_on(async {
            let connection = zbus::Connection::session().await?;
            let rule = zbus::MatchRule::builder()
                .msg_type(zbus::message::Type::Signal)
                .interface(NOTIFICATIONS)
                .path(NOTIFICATIONS_PATH)
                .build()?;
            let signals = zbus::MessageStream::for_match_rule(rule, &connection, None).await?;
            let hints = std::collections::HashMap::<&str, zbus::Variant<'_>>::new();
            // -1: the server's own expiry.
            let expire_timeout = -1_i32;
            let id: u32 = connection
                .call_method(
                    Some(NOTIFICATIONS),
                    NOTIFICATIONS_PATH,
                    Some(NOTIFICATIONS),
                    "Notify",
                    &(
                        &notification.appname,
                        replaces,
                        &notification.icon,
                        &notification.summary,
                        &notification.body,
                        &notification.actions,
                        hints,
                        expire_timeout,
                    ),
                )
                .await?
                .body()
                .deserialize()?;
            Ok(Self {
                id,
                signals,
                _connection: connection,
            })
        })
    }

    /// Waits until the user chooses one of its buttons (its key; `default` for the notification
    /// itself) or it closes (`None`).
    fn wait(mut self) -> Option<String> {
        use futures_util::StreamExt;
        zbus::block_on(async move {
            while let Some(Ok(message)) = self.signals.next().await {
                let header = message.header();
                match header.member().map(|m| m.as_str()) {
                    Some("ActionInvoked") => {
                        if let Ok((id, key)) = message.body().deserialize::<(u32, String)>() {
                            if id == self.id {
                                return Some(key);
                            }
                        }
                    }
                    Some("NotificationClosed") => {
                        if let Ok((id, _reason)) = message.body().deserialize::<(u32, u32)>() {
                            if id == self.id {
                                return None;
                            }
                        }
                    }
                    _ => {}
                }
            }
            None
        })
    }
}

/// Withdraws the notifications `ids` (`CloseNotification`), off the calling thread.
fn withdraw(ids: Vec<u32>) {
    if ids.is_empty() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let spawned = std::thread::Builder::new()
            .name("notification".into())
            .spawn(move || {
                for id in ids {
                    if let Err(e) = close_notification(id) {
                        tracing::debug!("notification not withdrawn: {e}");
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::debug!("notification not withdrawn: {e}");
        }
    }
}

/// Asks the notification server to close notification `id`.
#[cfg(target_os = "linux")]
fn close_notification(id: u32) -> zbus::Result<()> {
    zbus::block_on(async {
        let connection = zbus::Connection::session().await?;
        connection
            .call_method(
                Some("org.freedesktop.Notifications"),
                "/org/freedesktop/Notifications",
                Some("org.freedesktop.Notifications"),
                "CloseNotification",
                &(id,),
            )
            .await?;
        Ok(())
    })
}

/// What a choice made on a notification does: the same as the tray menu's item for it.
fn choose<R: Runtime>(app: &AppHandle<R>, choice: Choice) {
    match choice {
        // The revision the notification showed goes to the core, which refuses it if the prompt
        // has changed since (a notification is also withdrawn when its runtime moves on).
        Choice::Act {
            id,
            action,
            revision,
        } => act(app, id, action, revision),
        // Windows are made on the main thread; the choice arrives on the notification's own.
        Choice::Confirm { id, action, .. } => {
            let handle = app.clone();
            let run = move || {
                let confirm = Confirm::Act {
                    id: &id,
                    action: &action,
                };
                if let Err(e) = open_window(&handle, Some(confirm)) {
                    tracing::warn!("could not open the confirmation: {e}");
                }
            };
            if let Err(e) = app.run_on_main_thread(run) {
                tracing::warn!("could not open the confirmation: {e}");
            }
        }
        Choice::Open => {
            let handle = app.clone();
            let run = move || {
                if let Err(e) = open_window(&handle, None) {
                    tracing::warn!("could not open the window: {e}");
                }
            };
            if let Err(e) = app.run_on_main_thread(run) {
                tracing::warn!("could not open the window: {e}");
            }
        }
    }
}

/// Invokes an agent's action chosen in the tray menu or a notification, from the document of
/// `revision` that it showed; a failure is told.
fn act<R: Runtime>(app: &AppHandle<R>, id: String, action: String, revision: u64) {
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        let core = app.state::<Supercode>();
        // Accepted: its effect arrives as the agent's next state, in the menu itself.
        // Refused because the prompt changed: the menu shows the new one as it arrives.
        if let Err(e) = core.act(&id, &action, revision).await {
            notify(&app, "Action failed", &e.to_string());
        }
    });
}

/// A notification under the product's name, as every notification of the app on Linux goes
/// out: the app process runs the `supercode-tray-app` binary (docs/ARCHITECTURE.md, "Two
/// binaries"), and desktops show and group notifications by the sender's name, and the .deb
/// installs the icon as `supercode-tray`. Title and body are escaped by the core's rule, and
/// the body's markup characters too where the server reads markup in it (`capabilities` lists
/// `body-markup`), so an agent's `<a href=…>` is shown, never made a link.
#[cfg(target_os = "linux")]
fn linux_notification(
    title: &str,
    body: &str,
    capabilities: &[String],
) -> notify_rust::Notification {
    let mut notification = notify_rust::Notification::new();
    let product = env!("CARGO_PKG_NAME");
    let body = supercode_core::text::visible_lines(body);
    let body = if capabilities.iter().any(|c| c == "body-markup") {
        alerts::markup_escaped(&body)
    } else {
        body.into_owned()
    };
    notification
        .appname(product)
        .icon(product)
        .summary(&supercode_core::text::visible(title))
        .body(&body);
    notification
}

/// What the notification server says it can do (`GetCapabilities`); none when it cannot be
/// asked.
#[cfg(target_os = "linux")]
fn server_capabilities() -> Vec<String> {
    notify_rust::get_capabilities().unwrap_or_default()
}

fn notify<R: Runtime>(app: &AppHandle<R>, title: &str, body: &str) {
    // Without the plugin (command tests on the mock runtime) there is nothing to show.
    if app
        .try_state::<tauri_plugin_notification::Notification<R>>()
        .is_none()
    {
        return;
    }
    // Names, titles and messages come from records and runtimes: their control and bidirectional
    // characters are shown as escapes, never obeyed (the core's one rule, issue 29).
    #[cfg(target_os = "linux")]
    {
        let (title, body) = (title.to_owned(), body.to_owned());
        // D-Bus round trips, off the thread that handles the app's events. The connection is
        // kept until the server closes the notification (as the plugin does): a server that asks
        // the bus who sent it (its pid) must still find the sender there.
        let spawned = std::thread::Builder::new()
            .name("notification".into())
            .spawn(move || {
                let notification = linux_notification(&title, &body, &server_capabilities());
                match Showing::show(&notification, 0) {
                    Ok(showing) => {
                        showing.wait();
                    }
                    // What it told (a failed attach or opener among them) is then only in the
                    // log; `doctor` warns when no notification server answers.
                    Err(e) => tracing::warn!("notification not shown: {e}"),
                }
            });
        if let Err(e) = spawned {
            tracing::debug!("notification not shown: {e}");
        }
    }
    #[cfg(not(target_os = "linux"))]
    if let Err(e) = app
        .notification()
        .builder()
        .title(supercode_core::text::visible(title).into_owned())
        .body(supercode_core::text::visible_lines(body).into_owned())
        .show()
    {
        tracing::debug!("notification not shown: {e}");
    }
}

/// Spawns `task` as background work of the core: quitting cancels it and waits for it.
fn spawn_tracked<R, F, Fut>(app: &AppHandle<R>, task: F)
where
    R: Runtime,
    F: FnOnce(AppHandle<R>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let tracked = app.state::<Supercode>().track(task(app.clone()));
    tauri::async_runtime::spawn(tracked);
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, id: MenuId) {
    // Menu ids carry only opaque endpoints, catalog ids and profile names: safe to log.
    tracing::info!(item = %id, "tray menu item chosen");
    let result = match &id {
        MenuId::Attach(runtime) => {
            let runtime = runtime.clone();
            spawn_tracked(app, move |app| async move {
                let core = app.state::<Supercode>();
                if let Err(e) = commands::runtimes::attach_and_open(&core, &runtime).await {
                    notify(&app, "Attach failed", &e.message);
                }
            });
            Ok(())
        }
        // Revive shows its launch command before running: the window asks for confirmation.
        MenuId::Revive(runtime) => open_window(app, Some(Confirm::Revive(runtime))),
        // Dismiss removes only the tray's record of a runtime already gone: nothing to confirm.
        MenuId::Dismiss(runtime) => {
            let runtime = runtime.clone();
            spawn_tracked(app, move |app| async move {
                let core = app.state::<Supercode>();
                if let Err(e) = core.dismiss(&runtime).await {
                    notify(&app, "Dismiss failed", &e.to_string());
                }
            });
            Ok(())
        }
        MenuId::Act {
            id,
            action,
            revision,
        } => {
            act(app, id.clone(), action.clone(), *revision);
            Ok(())
        }
        // An action the core says to ask about is asked in the window first.
        MenuId::ConfirmAct { id, action } => open_window(app, Some(Confirm::Act { id, action })),
        MenuId::AgentAlerts => toggle_agent_alerts(app),
        MenuId::Approve(profile) => {
            let profile = profile.clone();
            spawn_tracked(app, move |app| async move {
                let core = app.state::<Supercode>();
                match core.approve(&profile, |_| {}).await {
                    Ok(view) => {
                        let title = match view.state {
                            PendingState::Approved => "Registration approved",
                            PendingState::Rejected => "Registration rejected",
                            _ => "Registration not approved yet",
                        };
                        let body = match &view.message {
                            Some(message) => format!("\"{}\": {message}", view.profile),
                            None => format!("\"{}\"", view.profile),
                        };
                        notify(&app, title, &body);
                    }
                    Err(e) => notify(&app, "Approval failed", &e.to_string()),
                }
            });
            Ok(())
        }
        MenuId::Open => open_window(app, None),
        MenuId::Autostart => toggle_autostart(app),
        // Waits for the file manager's verdict, off the event thread; a failure is told.
        MenuId::Logs => {
            spawn_tracked(app, |app| async move {
                let core = app.state::<Supercode>();
                if let Err(e) = commands::app::open_logs_folder(&core).await {
                    notify(&app, "Open logs folder", &e.message);
                }
            });
            Ok(())
        }
        MenuId::Quit => {
            app.exit(0);
            Ok(())
        }
        MenuId::NoRuntimes | MenuId::Detail(_) => Ok(()),
    };
    if let Err(e) = result {
        tracing::warn!("menu action {id} failed: {e}");
    }
}

fn toggle_agent_alerts<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    if let Some(alerts) = app.try_state::<AgentAlerts>() {
        let (enabled, saved) = alerts.toggle();
        tracing::info!(enabled, "agent notifications toggled");
        if let Err(e) = saved {
            notify(
                app,
                "Notify me when an agent needs me",
                &format!("The setting holds until the app quits, but could not be saved: {e}"),
            );
        }
    }
    tray::redraw(app)
}

fn toggle_autostart<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    let result = match autostart::LoginItem::from_env() {
        Some(item) if item.is_enabled() => item.disable(),
        Some(item) => item.enable(),
        None => Err(std::io::Error::other(
            "neither HOME nor XDG_CONFIG_HOME names a folder for it",
        )),
    };
    if let Err(e) = result {
        notify(
            app,
            "Start at login",
            &format!("Could not change the setting: {e}"),
        );
    }
    tray::redraw(app)
}

/// A confirmation the tray menu asks the window to show, because a menu cannot ask.
#[derive(Clone, Copy, Debug)]
pub enum Confirm<'a> {
    /// The revive confirmation of this runtime (it shows the command first).
    Revive(&'a str),
    /// The confirmation of one action of this runtime's agent.
    Act {
        /// The runtime's inventory id.
        id: &'a str,
        /// The action id.
        action: &'a str,
    },
}

/// Shows the window, creating it if needed; with `confirm`, asks it to show that confirmation.
pub fn open_window<R: Runtime>(
    app: &AppHandle<R>,
    confirm: Option<Confirm<'_>>,
) -> tauri::Result<()> {
    if let Some(window) = app.get_webview_window(MAIN_WINDOW) {
        window.show()?;
        window.unminimize()?;
        window.set_focus()?;
        match confirm {
            Some(Confirm::Revive(id)) => window.emit(CONFIRM_REVIVE_EVENT, id)?,
            Some(Confirm::Act { id, action }) => window.emit(
                CONFIRM_ACT_EVENT,
                serde_json::json!({ "id": id, "action": action }),
            )?,
            None => {}
        }
        return Ok(());
    }
    let page = match confirm {
        Some(Confirm::Revive(id)) => format!("index.html?confirmRevive={}", encode_query(id)),
        Some(Confirm::Act { id, action }) => format!(
            "index.html?confirmAct={}&action={}",
            encode_query(id),
            encode_query(action)
        ),
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
