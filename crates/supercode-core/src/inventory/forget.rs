//! Forget: whether a runtime may be forgotten, what forgetting it removes, and removing it.

use super::catalog::{catalog_runtimes, catalog_status, CatalogRuntime};
use super::find::find_record;
use super::name::display_name;
use crate::resolve::RuntimeAction;
use crate::view::{ActionAvailability, RuntimeStatus, RuntimeView};
use crate::{CoreError, Locations};

/// Removes a stale receipt (by endpoint, or the id of a runtime it backs) and its keychain
/// entry, or a stale catalog entry (by catalog id) as `removeLocalRuntimeEntry` does: its one
/// file under `runtimes/`. Nothing else: profiles, locks and other entries stay.
pub fn forget(locations: &Locations, id: &str) -> Result<(), CoreError> {
    let record = match find_record(locations, id, RuntimeAction::Forget) {
        Err(CoreError::UnknownRuntime { .. }) => return forget_catalog_entry(locations, id),
        other => other?,
    };
    live_runtime::forget_live_runtime(&locations.receipts, &record.endpoint)?;
    Ok(())
}

/// What forget removes, shown before it runs: the CLI asks about exactly this, and runs forget
/// on `target`, so what goes is what was shown (refused if it is no longer forgettable then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForgetPlan {
    /// What forget is run on: a receipt's endpoint, or a catalog id.
    pub target: String,
    /// The runtime's display name.
    pub name: String,
    /// Each thing removed, for people (paths and the secret store; nothing secret).
    pub removes: Vec<String>,
}

/// What forgetting `runtime` removes, or why it cannot be forgotten (the view's rule).
pub fn forget_plan(locations: &Locations, runtime: &RuntimeView) -> Result<ForgetPlan, CoreError> {
    let target = runtime.target_for(RuntimeAction::Forget)?;
    let removes = match target.parse::<live_runtime::LiveRuntimeEndpoint>() {
        Ok(endpoint) => vec![
            format!(
                "its stale receipt {}",
                locations.receipts.receipt_path(&endpoint).display()
            ),
            format!(
                "its token, if the {} holds it",
                locations.receipts.secret_store().describe()
            ),
        ],
        Err(_) => vec![format!(
            "its Canon catalog entry {} (as @canonmsg/core's removeLocalRuntimeEntry does)",
            locations.canon.runtime_path(target).display()
        )],
    };
    Ok(ForgetPlan {
        target: target.to_owned(),
        name: runtime.name.clone(),
        removes,
    })
}

/// Whether a catalog entry can be forgotten: only one whose process went away without saying so
/// (stale). One that stopped cleanly can be revived, and the package itself keeps it.
pub fn catalog_forget(entry: &CatalogRuntime) -> ActionAvailability {
    match catalog_status(entry) {
        RuntimeStatus::Stale => ActionAvailability::yes(),
        RuntimeStatus::Running => ActionAvailability::never(
            "It is running; only a runtime whose process has gone can be forgotten.",
        ),
        _ => ActionAvailability::never(
            "It stopped normally and can be started again; only a runtime whose process has gone without stopping can be forgotten.",
        ),
    }
}

fn forget_catalog_entry(locations: &Locations, id: &str) -> Result<(), CoreError> {
    let (runtimes, _) = catalog_runtimes(locations);
    let Some(entry) = runtimes.into_iter().find(|e| e.id == id) else {
        return Err(CoreError::UnknownRuntime {
            query: id.to_owned(),
        });
    };
    let name = display_name(None, Some(&entry));
    let refused = |reason: String| {
        CoreError::from(crate::error::Refusal::NotAvailable {
            action: "forgotten",
            name: name.clone(),
            reason,
        })
    };
    let availability = catalog_forget(&entry);
    if !availability.available {
        return Err(refused(availability.reason.unwrap_or_default()));
    }
    // Removed only if the file still holds what was checked: a runtime that came back (new pid
    // or heartbeat) in between is not forgotten.
    let still = |now: &canon_local::LocalRuntimeCatalogEntry| {
        now.pid.and_then(|p| u32::try_from(p).ok()) == entry.pid
            && now
                .last_heartbeat_at
                .clone()
                .or_else(|| now.last_started_at.clone())
                .or_else(|| now.last_stopped_at.clone())
                == entry.since
    };
    if canon_local::remove_local_runtime_entry_checked(&locations.canon, id, still)? {
        Ok(())
    } else {
        Err(refused(
            "It changed since it was checked; look at it again.".to_owned(),
        ))
    }
}
