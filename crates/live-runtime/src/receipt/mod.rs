//! Receipts: the files through which a running runtime announces itself to the tray.
//!
//! One registration writes one `<endpoint>.json` file (format in `docs/receipt-format.md`) into a
//! private [`ReceiptDir`], after putting its bearer token in the [`SecretStore`](crate::secret::SecretStore). Every read goes
//! through [`read_receipt`]'s checks — the directory is shared with foreign writers (Node and
//! Python runtimes) and with anything else running as the user, so a file is trusted only if it is a
//! regular file we own, private, small, well-formed and names a loopback address. A bad file is
//! reported as an [`IgnoredReceipt`] with a reason and never hides the good ones.
//!
//! A read is a read: it changes nothing on disk. A pid now used by another process makes the
//! receipt [`LiveRuntimeStatus::Stale`]; a receipt whose process has exited is not listed. Cleaning
//! up is reconciliation, an explicit step ([`reconcile_receipt`], [`ReceiptFiles::reconcile`], and
//! [`list_live_runtimes`], which reconciles as part of the list): a receipt whose process has
//! exited is removed with its secret, and a foreign receipt carrying an inline token is *adopted*
//! (token moved into the secret store, start time filled in, file rewritten atomically without
//! the token). [`resolve_live_runtime`], [`find_live_runtime`], [`discover_live_runtime`],
//! [`read_receipt`] and [`ReceiptFiles::scan`]/[`ReceiptFiles::refresh`] are pure reads.
//!
//! A watcher that must not rescan the whole directory for every change keeps a [`ReceiptFiles`]:
//! it re-reads only the files that changed and lists the rest from memory.
//!
//! # Layout
//! - `types`: the endpoint, the public records and listings, the error type.
//! - `dir`: the [`ReceiptDir`] and its private-directory rule; cleanup of dead writers' temp files.
//! - `read`: reading and checking one file ([`read_receipt`]), changing nothing.
//! - `reconcile`: removing dead processes' receipts and adopting foreign ones
//!   ([`reconcile_receipt`]).
//! - `register`: [`register_live_runtime`] and the RAII [`LiveRuntimeRegistration`].
//! - `files`: the per-file cache, [`ReceiptFiles`].
//! - `operations`: [`list_live_runtimes`], [`resolve_live_runtime`], [`discover_live_runtime`],
//!   [`find_live_runtime`], [`forget_live_runtime`].

mod dir;
mod files;
mod operations;
mod read;
mod reconcile;
mod register;
mod types;

pub(crate) use dir::ensure_private_dir;
pub use dir::{inspect_private_dir, DirRefused, PrivateDir, ReceiptDir, STALE_TEMP_FILE_AGE};
pub use files::ReceiptFiles;
pub use operations::{
    discover_live_runtime, find_live_runtime, forget_live_runtime, list_live_runtimes,
    resolve_live_runtime,
};
pub use read::{read_receipt, MAX_RECEIPT_BYTES};
pub use reconcile::reconcile_receipt;
pub use register::{
    register_live_runtime, register_live_runtime_for_process, register_live_runtime_with_metadata,
    LiveRuntimeRegistration,
};
pub use types::{
    secret_account, IgnoredReceipt, LiveRuntimeEndpoint, LiveRuntimeList, LiveRuntimeMetadata,
    LiveRuntimeReceiptError, LiveRuntimeRecord, LiveRuntimeSource, LiveRuntimeStatus,
    LiveRuntimeSupervisor, LocatedLiveRuntime, ReceiptScan, ResolvedLiveRuntime, RECEIPT_VERSION,
};
