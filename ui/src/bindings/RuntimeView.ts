// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
import type { ActionAvailability } from "./ActionAvailability";
import type { RuntimeOrigin } from "./RuntimeOrigin";
import type { RuntimeStatus } from "./RuntimeStatus";

export type RuntimeView = { id: string, name: string, kind: string, workspace: string | null, profile: string | null, status: RuntimeStatus, statusReason: string | null, 
/**
 * ISO 8601
 */
since: string | null, pid: number | null, attach: ActionAvailability, forget: ActionAvailability, revive: ActionAvailability, 
/**
 * Shown to the user before revive.
 */
launchCommand: Array<string> | null, origin: RuntimeOrigin, };
