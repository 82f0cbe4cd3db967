// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { ActionAvailability } from "./ActionAvailability";
import type { AgentStateView } from "./AgentStateView";
import type { ExitedView } from "./ExitedView";
import type { RuntimeOrigin } from "./RuntimeOrigin";
import type { RuntimeStatus } from "./RuntimeStatus";
import type { SourceView } from "./SourceView";

export type RuntimeView = { 
/**
 * Inventory id, the same while the runtime is running, stale, revived or exited: its
 * catalog id when a catalog entry backs it, otherwise its receipt's opaque endpoint (issue
 * 31). Every action takes it; `endpoint` is the receipt it acts on now.
 */
id: string, 
/**
 * The opaque live-runtime endpoint, when a receipt backs this runtime.
 */
endpoint: string | null, 
/**
 * The runtime's stable id (live-runtime `runtime_id`, or the catalog id).
 */
runtimeId: string, 
/**
 * The `@canonmsg/core` catalog id, when a catalog entry backs this runtime.
 */
catalogId: string | null, 
/**
 * The source session and workspace the receipt belongs to.
 */
source: SourceView | null, 
/**
 * Display name: agent name, display name, profile or runtime id.
 */
name: string, 
/**
 * Runtime kind (`claude-code`, `codex`, `sdk`, `demo`, ...).
 */
kind: string, 
/**
 * The workspace it serves.
 */
workspace: string | null, 
/**
 * Every workspace root it serves.
 */
workspaceRoots: Array<string>, 
/**
 * The Canon profile it runs as, if any.
 */
profile: string | null, 
/**
 * The agent's name, if it has one.
 */
agentName: string | null, 
/**
 * Current status.
 */
status: RuntimeStatus, 
/**
 * Why the status is what it is, when that is not obvious (stale, missing profile...).
 */
statusReason: string | null, 
/**
 * When it registered, last started or stopped (RFC 3339).
 */
since: string | null, 
/**
 * Its process id, when known.
 */
pid: number | null, 
/**
 * Open it in the browser.
 */
attach: ActionAvailability, 
/**
 * Remove its stale receipt.
 */
forget: ActionAvailability, 
/**
 * Relaunch it from its recorded launch command.
 */
revive: ActionAvailability, 
/**
 * Take an exited runtime off the list: applies only to one that has exited.
 */
dismiss: ActionAvailability, 
/**
 * The command revive would run, shown to the user before it runs.
 */
launchCommand: Array<string> | null, 
/**
 * The `status` of the catalog entry behind this runtime exactly as `@canonmsg/core`'s
 * `listLocalRuntimeEntries` derives it (`running`, `offline`, `stale`, `manual`, `embedded`,
 * or a newer value as written); `None` without a catalog entry. `status` above is the tray's
 * own reading, which also weighs the live receipt.
 */
catalogStatus: string | null, 
/**
 * The catalog entry's `reviveCapability` exactly as the package derives it (`revivable`,
 * `manual`, `embedded`, `missing-profile`, or a newer value as written); `None` without a
 * catalog entry. Whether the tray can revive it now, and why not, is `revive`.
 */
reviveCapability: string | null, 
/**
 * Which record(s) this view was built from.
 */
origin: RuntimeOrigin, 
/**
 * What its agent is doing, from the runtime's status API (`docs/runtime-api.md`); `None`
 * for a runtime that is not running.
 */
state: AgentStateView | null, 
/**
 * When it exited and what its agent last showed; `None` unless its status is `exited`.
 */
exited: ExitedView | null, };
