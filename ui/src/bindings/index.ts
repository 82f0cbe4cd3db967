// Re-exports every IPC type; regenerated alongside the ts-rs output.
export type { ActionAvailability } from "./ActionAvailability";
export type { CommandError } from "./CommandError";
export type { ErrorCode } from "./ErrorCode";
export type { IgnoredFile } from "./IgnoredFile";
export type { PendingState } from "./PendingState";
export type { PendingView } from "./PendingView";
export type { ReviveOutcome } from "./ReviveOutcome";
export type { RuntimeOrigin } from "./RuntimeOrigin";
export type { RuntimeStatus } from "./RuntimeStatus";
export type { RuntimeView } from "./RuntimeView";
export type { SecretStoreView } from "./SecretStoreView";
export type { Snapshot } from "./Snapshot";
