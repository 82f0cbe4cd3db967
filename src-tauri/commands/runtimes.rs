//! Commands on runtimes: the inventory snapshot, attach, forget, dismiss, the revive plan, revive, and the
//! actions a runtime's agent offers (act).

use supercode_core::revive::ReviveRequest;
use supercode_core::view::{ActOutcome, CommandError, ReviveOutcome, RevivePlanView, Snapshot};
use supercode_core::Supercode;
use tauri::State;

/// The whole inventory as the window shows it: what the watcher published last, so the answer is
/// never older than an event the window already has.
#[tauri::command(async)]
pub fn snapshot(core: State<'_, Supercode>) -> Snapshot {
    core.current()
}

/// Opens a live runtime in the user's browser; the URL never passes through the webview.
#[tauri::command]
pub async fn attach(core: State<'_, Supercode>, id: String) -> Result<(), CommandError> {
    attach_and_open(&core, &id).await
}

/// Shared by the command and the tray menu: mint a one-time URL and open it from the backend.
pub async fn attach_and_open(core: &Supercode, id: &str) -> Result<(), CommandError> {
    let url = core.attach(id).await?;
    // The URL carries the one-time code: it is never logged, only whether the browser started.
    match supercode_core::desktop::open_in_browser(&url).await {
        Ok(()) => {
            tracing::info!(id, "attach: the browser was started");
            Ok(())
        }
        Err(e) => {
            tracing::warn!(id, "attach: {e}");
            Err(e.into())
        }
    }
}

/// Removes a stale receipt, nothing else.
#[tauri::command(async)]
pub fn forget(core: State<'_, Supercode>, id: String) -> Result<(), CommandError> {
    core.forget(&id).map_err(Into::into)
}

/// Takes an exited runtime off the list (the core refuses one that has not exited).
#[tauri::command]
pub async fn dismiss(core: State<'_, Supercode>, id: String) -> Result<(), CommandError> {
    core.dismiss(&id).await.map(|_| ()).map_err(Into::into)
}

/// What a revive would run: shown in the confirmation before anything runs.
#[tauri::command]
pub async fn revive_plan(
    core: State<'_, Supercode>,
    id: String,
) -> Result<RevivePlanView, CommandError> {
    core.revive_plan(&id).await.map_err(Into::into)
}

/// Relaunches a stopped runtime from the plan the user confirmed (its digest), with the
/// variables they allowed, and waits until it is up.
#[tauri::command]
pub async fn revive(
    core: State<'_, Supercode>,
    id: String,
    plan_digest: String,
    allow_env: Option<Vec<String>>,
) -> Result<ReviveOutcome, CommandError> {
    let allow_env = allow_env.unwrap_or_default();
    let request = ReviveRequest {
        id,
        plan_digest,
        allow_env,
    };
    core.revive(request).await.map_err(Into::into)
}

/// Invokes an action the runtime's agent offers ("Approve"), chosen from the state whose
/// `revision` the window showed; the core refuses it once the runtime's prompt changed since, or
/// when its latest status document does not offer it, and is the only one that talks to the
/// runtime.
#[tauri::command]
pub async fn act(
    core: State<'_, Supercode>,
    id: String,
    action: String,
    revision: u64,
) -> Result<ActOutcome, CommandError> {
    core.act(&id, &action, revision).await.map_err(Into::into)
}
