//! Commands about the app itself.

use supercode_core::view::{CommandError, DesktopNotice};
use supercode_core::Supercode;
use tauri::State;

/// Opens the log folder in the file manager (from the backend, not from JS); a file manager that
/// fails to open it is the window's error.
#[tauri::command]
pub async fn open_logs(core: State<'_, Supercode>) -> Result<(), CommandError> {
    open_logs_folder(&core).await
}

/// Shared by the command and the tray menu.
pub async fn open_logs_folder(core: &Supercode) -> Result<(), CommandError> {
    supercode_core::desktop::open_path(&core.locations().log_dir)
        .await
        .map_err(Into::into)
}

/// What the window should say about this desktop (no tray host: the icon cannot show), as the
/// core decides it. Asked of the session bus off the async runtime.
#[tauri::command(async)]
pub fn desktop_notice() -> Option<DesktopNotice> {
    supercode_core::doctor::tray_host_notice()
}
