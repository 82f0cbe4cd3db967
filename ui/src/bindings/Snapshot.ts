// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { FileWarning } from "./FileWarning";
import type { IgnoredFile } from "./IgnoredFile";
import type { PendingView } from "./PendingView";
import type { RuntimeView } from "./RuntimeView";
import type { SecretStoreView } from "./SecretStoreView";
import type { SnapshotCounts } from "./SnapshotCounts";

export type Snapshot = { 
/**
 * Every runtime, live ones first, newest first.
 */
runtimes: Array<RuntimeView>, 
/**
 * Files that were ignored, with reasons.
 */
ignored: Array<IgnoredFile>, 
/**
 * Files that were used, but should be fixed, with reasons.
 */
warnings: Array<FileWarning>, 
/**
 * Pending agent registrations.
 */
pending: Array<PendingView>, 
/**
 * The secret store in use.
 */
secretStore: SecretStoreView, 
/**
 * True until the tray has seen its first runtime.
 */
firstRun: boolean, 
/**
 * The receipt directory being watched.
 */
receiptDir: string, 
/**
 * The Canon home being watched.
 */
canonHome: string, 
/**
 * What the shells count, counted once here.
 */
counts: SnapshotCounts, };
