// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type { ActionAvailability } from "./ActionAvailability";
export type { CommandError } from "./CommandError";
export type { ErrorCode } from "./ErrorCode";
export type { FileWarning } from "./FileWarning";
export type { IgnoredFile } from "./IgnoredFile";
export type { IgnoredLocation } from "./IgnoredLocation";
export type { PendingState } from "./PendingState";
export type { PendingView } from "./PendingView";
export type { ReviveOutcome } from "./ReviveOutcome";
export type { RuntimeOrigin } from "./RuntimeOrigin";
export type { RuntimeStatus } from "./RuntimeStatus";
export type { RuntimeView } from "./RuntimeView";
export type { SecretStoreKindView } from "./SecretStoreKindView";
export type { SecretStoreView } from "./SecretStoreView";
export type { Snapshot } from "./Snapshot";
export type { SourceView } from "./SourceView";
