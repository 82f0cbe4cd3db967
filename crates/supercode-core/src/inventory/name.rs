//! The name a runtime is shown by, everywhere.

use live_runtime::LiveRuntimeRecord;

use super::catalog::CatalogRuntime;

/// The name a runtime is shown by, everywhere: its agent's name (the receipt's, else its
/// catalog entry's), else the name the runtime gave itself, else its Canon profile, else its id.
/// A runtime linked to its catalog entry so looks the same running (receipt and entry) or
/// stopped (entry only); a caller with only the receipt at hand passes no entry.
pub(crate) fn display_name(
    record: Option<&LiveRuntimeRecord>,
    entry: Option<&CatalogRuntime>,
) -> String {
    let meta = record.map(|r| &r.metadata);
    meta.and_then(|m| m.agent_name.clone())
        .or_else(|| entry.and_then(|e| e.agent_name.clone()))
        .or_else(|| meta.and_then(|m| m.display_name.clone()))
        .or_else(|| meta.and_then(|m| m.profile.clone()))
        .or_else(|| entry.and_then(|e| e.profile.clone()))
        .or_else(|| record.map(|r| r.runtime_id.clone()))
        .or_else(|| entry.map(|e| e.id.clone()))
        .unwrap_or_default()
}
