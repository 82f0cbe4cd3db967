//! One inventory: live receipts and `@canonmsg/core` catalog entries merged into runtime views,
//! each saying which actions apply and why not when they don't.
//!
//! A live receipt that names its catalog entry (`metadata.canonRuntimeId`) becomes one view with
//! origin `both`: attachable while live, revivable from the catalog's launch command once stopped.
//!
//! - `sources`: [`Sources`], everything a snapshot is built from, read and re-read file by file.
//! - `canon`, `catalog`, `pending`, `problems`: reading `$CANON_HOME` (catalog entries,
//!   `agents.json`, pending registrations, untrusted lock files) and reporting its bad files.
//! - `reconcile`: [`Sources::reconcile`], the explicit clean-up step, and who died.
//! - `snapshot`: [`snapshot`], building the [`Snapshot`](crate::view::Snapshot) from sources.
//! - `merge`: one view per runtime (a receipt and its catalog entry as one), the order (running,
//!   then newest) and which view takes a catalog id.
//! - `views`: a receipt's or a catalog entry's view, its status and what actions apply.
//! - `name`: the name a runtime is shown by.
//! - `revivable`: whether a runtime can be revived now, and why not (what the views show and
//!   revive refuses with).
//! - `find`: the live record an action applies to, from an endpoint or any id `list` shows.
//! - `forget`: what forget removes, whether it may, and removing it.

mod canon;
mod catalog;
mod find;
mod forget;
mod merge;
mod name;
mod pending;
mod problems;
mod reconcile;
pub(crate) mod revivable;
mod snapshot;
mod sources;
mod views;

pub use canon::CanonSummary;
pub use catalog::{catalog_runtimes, CatalogRuntime};
pub(crate) use find::find_record;
pub use forget::{catalog_forget, forget, forget_plan, ForgetPlan};
pub(crate) use name::display_name;
pub use pending::pending;
pub use revivable::ReviveBlocker;
pub use snapshot::{snapshot, snapshot_with_receipts};
pub(crate) use sources::FullReadNeeded;
pub use sources::Sources;
