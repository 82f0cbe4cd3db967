//! One view per runtime: a receipt and the catalog entry it names become one, the views are
//! ordered (running, then newest), and the first view of a catalog entry takes its id.

use std::collections::HashSet;

use live_runtime::LiveRuntimeRecord;

use super::catalog::{catalog_status, CatalogRuntime};
use super::views::{catalog_view, live_status, live_view};
use crate::view::{RuntimeStatus, RuntimeView};
use crate::Locations;

/// The views of `live` receipts and of the `catalog` entries no receipt names, in the
/// inventory's order.
pub(super) fn merge(
    locations: &Locations,
    live: Vec<&LiveRuntimeRecord>,
    catalog: &[CatalogRuntime],
) -> Vec<RuntimeView> {
    enum ViewOf<'a> {
        Receipt(&'a LiveRuntimeRecord, Option<&'a CatalogRuntime>),
        Catalog(&'a CatalogRuntime),
    }
    fn key<'a>(of: &ViewOf<'a>) -> (RuntimeStatus, Option<&'a str>) {
        match of {
            ViewOf::Receipt(record, _) => (live_status(record), Some(&record.registered_at)),
            ViewOf::Catalog(entry) => (catalog_status(entry), entry.since.as_deref()),
        }
    }
    let mut linked: HashSet<&str> = HashSet::new();
    let mut order = Vec::with_capacity(live.len() + catalog.len());
    for record in live {
        let entry = record
            .metadata
            .canon_runtime_id
            .as_ref()
            .and_then(|id| catalog.iter().find(|c| &c.id == id));
        if let Some(entry) = entry {
            linked.insert(&entry.id);
        }
        order.push(ViewOf::Receipt(record, entry));
    }
    for entry in catalog.iter().filter(|c| !linked.contains(c.id.as_str())) {
        order.push(ViewOf::Catalog(entry));
    }
    // Running first, then newest first (a stable sort: ties keep the order above). Sorted before
    // the views are built, by the status and `since` each view will have: a view is hundreds of
    // bytes, and the watcher builds them all on every change.
    order.sort_by(|a, b| {
        let ((a_status, a_since), (b_status, b_since)) = (key(a), key(b));
        let rank = |status: RuntimeStatus| u8::from(status != RuntimeStatus::Running);
        rank(a_status)
            .cmp(&rank(b_status))
            .then_with(|| b_since.cmp(&a_since))
    });
    // The catalog id is the id of the first view (in this order: running, then newest) its
    // entry backs, so a Canon runtime keeps one id from running to stale to revived; a second
    // receipt naming the same entry (an old stale one beside its revived successor) keeps its
    // endpoint, so ids stay unique.
    let mut claimed: HashSet<&str> = HashSet::new();
    order
        .into_iter()
        .map(|of| match of {
            ViewOf::Receipt(record, entry) => {
                let owns = entry.is_some_and(|e| claimed.insert(e.id.as_str()));
                live_view(locations, record, entry, owns)
            }
            ViewOf::Catalog(entry) => catalog_view(locations, entry),
        })
        .collect()
}
