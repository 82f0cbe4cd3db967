//! IPC commands: one-to-five-line adapters that take the core from Tauri's state, call it, and map
//! its errors to the one wire format, `CommandError { code, message }`. Grouped by domain and
//! registered in one place, [`handler`]. Each is allowed for the main window in
//! `capabilities/main-window.json`.
//!
//! None runs on the main thread: the synchronous ones read files and may wait on the keychain,
//! so they are `#[tauri::command(async)]`, which keeps the event loop (and the tray) responsive.

pub mod agents;
pub mod app;
pub mod registrations;
pub mod runtimes;

/// The one place every command is registered.
pub fn handler<R: tauri::Runtime>() -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static
{
    tauri::generate_handler![
        runtimes::snapshot,
        runtimes::attach,
        runtimes::forget,
        runtimes::dismiss,
        runtimes::revive_plan,
        runtimes::revive,
        runtimes::act,
        registrations::approve,
        registrations::reject,
        app::open_logs,
        app::desktop_notice,
        agents::coding_agents,
        agents::hooks_plan,
        agents::hooks_change,
    ]
}
