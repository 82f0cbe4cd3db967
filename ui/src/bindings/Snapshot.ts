// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
import type { IgnoredFile } from "./IgnoredFile";
import type { PendingView } from "./PendingView";
import type { RuntimeView } from "./RuntimeView";
import type { SecretStoreView } from "./SecretStoreView";

export type Snapshot = { runtimes: Array<RuntimeView>, ignored: Array<IgnoredFile>, pending: Array<PendingView>, secretStore: SecretStoreView, firstRun: boolean, receiptDir: string, canonHome: string, };
