//! Trusted local receipts for attachable Supercode runtimes.
//!
//! A runtime is a local process serving an authenticated HTTP endpoint on loopback. When it starts
//! it links this crate and calls [`register_live_runtime`]: the bearer token goes into the
//! [`SecretStore`] (the OS keychain, or the opt-in plaintext file store) and a small JSON
//! *receipt* describing the runtime appears in the [`ReceiptDir`]. The tray lists those receipts
//! ([`list_live_runtimes`], which reconciles: dead processes' receipts are removed, foreign ones
//! adopted), resolves one into an address + token ([`resolve_live_runtime`], a pure read) and
//! forgets stale ones ([`forget_live_runtime`]). Reads change nothing on disk; reconciliation is
//! its own step ([`reconcile_receipt`], [`ReceiptFiles::reconcile`]).
//!
//! A browser-facing host may reveal the opaque [`LiveRuntimeEndpoint`], but never the HTTP bearer
//! token or the loopback address: those only exist as [`Sensitive`] values inside
//! [`ResolvedLiveRuntime`], which cannot be serialized and redacts itself in `Debug` output.
//!
//! # Layout
//! - [`secret`]: [`Sensitive`], [`SecretStore`] and its error type.
//! - [`process`]: [`ProcessIdentity`] (pid + start time), so a reused pid is never mistaken for
//!   the runtime that registered.
//! - [`owned_file`]: how every file another program leaves for us is read and written (no link
//!   followed, no blocking open, regular, owned, capped; exclusive temp file + rename). Receipts
//!   use it, and so does `canon-local` for `$CANON_HOME`.
//! - [`receipt`]: the receipt types, the on-disk format (see `docs/receipt-format.md`) and the
//!   register / list / resolve / discover / find / forget operations.
//!
//! - `test_support` (feature `test-support`, for tests only): the fixtures every crate's
//!   integration tests share.
//!
//! # Blocking
//! Every operation is synchronous: file I/O plus, for the keychain store, a round trip bounded by
//! [`KEYCHAIN_TIMEOUT`]. Async callers should run them with `tokio::task::spawn_blocking`.
#![deny(missing_docs)]

pub mod owned_file;
pub mod process;
pub mod receipt;
pub mod secret;
#[cfg(feature = "test-support")]
pub mod test_support;

pub use process::{effective_uid, pid_exists, ProcessIdentity};
pub use receipt::{
    discover_live_runtime, find_live_runtime, forget_live_runtime, list_live_runtimes,
    read_receipt, reconcile_receipt, register_live_runtime, register_live_runtime_for_process,
    register_live_runtime_with_metadata, resolve_live_runtime, secret_account, DirRefused,
    IgnoredReceipt, LiveRuntimeEndpoint, LiveRuntimeList, LiveRuntimeMetadata,
    LiveRuntimeReceiptError, LiveRuntimeRecord, LiveRuntimeRegistration, LiveRuntimeSource,
    LiveRuntimeStatus, LiveRuntimeSupervisor, LocatedLiveRuntime, PrivateDir, ReceiptDir,
    ReceiptFiles, ReceiptScan, ResolvedLiveRuntime, MAX_RECEIPT_BYTES, RECEIPT_VERSION,
    STALE_TEMP_FILE_AGE,
};
pub use secret::{
    BearerToken, SecretStore, SecretStoreError, SecretStoreKind, Sensitive, KEYCHAIN_TIMEOUT,
};
