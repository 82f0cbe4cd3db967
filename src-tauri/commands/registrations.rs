//! Commands on pending agent registrations: approve and reject.

use supercode_core::view::{CommandError, PendingView};
use supercode_core::Supercode;
use tauri::State;

/// Submits or resumes a registration and waits for Canon's answer; progress arrives as snapshots.
#[tauri::command]
pub async fn approve(
    core: State<'_, Supercode>,
    profile: String,
) -> Result<PendingView, CommandError> {
    core.approve(&profile, |_| {}).await.map_err(Into::into)
}

/// Dismisses a pending registration locally.
#[tauri::command(async)]
pub fn reject(core: State<'_, Supercode>, profile: String) -> Result<(), CommandError> {
    core.reject(&profile).map_err(Into::into)
}
