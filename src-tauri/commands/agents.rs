//! Commands on coding agents: their state, and Connect/Disconnect as a plan shown first and a
//! change that makes exactly that plan (its digest).

use supercode_core::view::{
    CodingAgentView, CommandError, HooksChange, HooksOutcome, HooksPlanView,
};
use supercode_core::Supercode;
use tauri::State;

/// Every coding agent's state as `hooks status` computes it, with the actions that apply.
#[tauri::command]
pub async fn coding_agents(
    core: State<'_, Supercode>,
) -> Result<Vec<CodingAgentView>, CommandError> {
    core.coding_agents().await.map_err(Into::into)
}

/// What Connect or Disconnect would change in the agent's settings: shown before it is made.
#[tauri::command]
pub async fn hooks_plan(
    core: State<'_, Supercode>,
    agent: String,
    change: HooksChange,
) -> Result<HooksPlanView, CommandError> {
    core.hooks_plan(&agent, change).await.map_err(Into::into)
}

/// Makes the change the user confirmed (its digest); refused when the file changed since.
#[tauri::command]
pub async fn hooks_change(
    core: State<'_, Supercode>,
    agent: String,
    change: HooksChange,
    digest: String,
) -> Result<HooksOutcome, CommandError> {
    core.hooks_change(&agent, change, digest)
        .await
        .map_err(Into::into)
}
