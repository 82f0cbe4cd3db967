//! `canon-local`: the files `@canonmsg/core` 0.13 keeps under `$CANON_HOME`, read and written
//! byte-compatibly with the package, and the Canon registration client.
//!
//! Every write reproduces `JSON.stringify(value, null, 2)` and the package's atomic
//! temp-file-then-rename; fields this version does not know are kept on rewrite. Where the
//! package silently swallows a corrupt file, this crate returns the reason so the tray can show
//! it; a corrupt file never panics and never blocks the other files.
//!
//! Secrets (API keys, poll tokens) live in [`Sensitive`] in memory and reach nothing but the file
//! they belong in and the secret store.
//!
//! # Layout
//! - [`home`] — [`CanonHome`], Node-style path resolution.
//! - [`profiles`] — `agents.json`.
//! - [`locks`] — `locks/<profile>.lock`.
//! - [`pending`] — `pending-registrations.json`.
//! - [`catalog`] — `runtimes/<hash>.json`.
//! - [`json`] — the `JSON.stringify` writer.
//! - [`client`] — the registration HTTP client.
//! - [`approval`] — the resumable approval workflow.
//! - [`origins`] — the tray's record of which Canon API each pending registration belongs to.
//! - `test_server` (feature `test-server`): a contract-following fake Canon for tests.
#![deny(missing_docs)]

pub mod approval;
pub mod catalog;
pub mod client;
mod error;
pub mod home;
pub mod json;
pub mod locks;
pub mod origins;
pub mod pending;
pub mod process;
pub mod profiles;
mod records;
#[cfg(feature = "test-server")]
pub mod test_server;

pub use approval::{
    api_key_account, approve, reject, ApprovalError, ApprovalOptions, ApprovalOutcome,
    ApprovalState,
};
pub use catalog::{
    build_local_runtime_id, heartbeat_local_runtime_entry, list_local_runtime_entries,
    mark_local_runtime_stopped, read_local_runtime_entry, remove_local_runtime_entry,
    remove_local_runtime_entry_checked, upsert_local_runtime_entry, LocalRuntimeCatalogEntry,
    LocalRuntimeStatus, ReviveCapability, RuntimeCatalogListing,
};
pub use client::{CanonClient, ClientError, RegistrationPhase, DEFAULT_BASE_URL};
pub use error::{CanonFileError, FileProblem};
pub use home::CanonHome;
pub use live_runtime::{SecretStore, SecretStoreError, Sensitive};
pub use locks::{
    acquire_lock, describe_profile_lock, is_profile_locked, release_lock, LockError, LockStatus,
    ProfileLockHandle,
};
pub use origins::RegistrationOrigins;
pub use pending::{
    clear_pending_registration, get_or_create_pending_registration, load_pending_registrations,
    save_pending_registrations, update_pending_registration, PendingPatch, PendingRegistration,
    PendingRegistrations,
};
pub use process::is_process_alive;
pub use profiles::{
    load_profiles, merge_agent_profile, save_profiles, upsert_agent_profile, AgentProfile,
    AgentProfiles,
};
pub use records::Records;
