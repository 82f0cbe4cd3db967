//! Finding the live record an action applies to, from an endpoint or any id `list` shows.

use live_runtime::{LiveRuntimeEndpoint, LiveRuntimeRecord, ReceiptScan};

use crate::approvals::ApprovalBoard;
use crate::resolve::RuntimeAction;
use crate::{CoreError, Locations};

/// Finds the live record `action` applies to, from the runtime's endpoint (its one receipt
/// file read, with every check a listing makes of it: an attach would otherwise cost one file
/// read per runtime) or any other id or name `list` shows (the inventory's id, a catalog id, a
/// runtime id), by the one rule of [`crate::resolve`] and the view's
/// [`RuntimeView::target_for`](crate::view::RuntimeView::target_for). A read: a dead process's
/// receipt is left for reconciliation.
pub(crate) fn find_record(
    locations: &Locations,
    id: &str,
    action: RuntimeAction,
) -> Result<LiveRuntimeRecord, CoreError> {
    let endpoint = match id.parse::<LiveRuntimeEndpoint>() {
        Ok(endpoint) => endpoint,
        Err(_) => {
            let snapshot = super::snapshot(locations, &ApprovalBoard::default());
            let runtime = crate::resolve::resolve(&snapshot.runtimes, id)?;
            runtime
                .target_for(action)?
                .parse()
                .map_err(|_| unknown(id))?
        }
    };
    let file_name = format!("{}.json", endpoint.as_str());
    match live_runtime::read_receipt(&locations.receipts, &file_name)? {
        ReceiptScan::Listed(record) => Ok(record),
        _ => Err(unknown(id)),
    }
}

/// The one "no such runtime" ([`CoreError::UnknownRuntime`]).
fn unknown(id: &str) -> CoreError {
    CoreError::UnknownRuntime {
        query: id.to_owned(),
    }
}
