// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { AgentStateView } from "./AgentStateView";

export type ExitedView = { 
/**
 * When its death was seen (RFC 3339).
 */
at: string, 
/**
 * What its agent last showed (state, title, detail, since; no actions), when the tray was
 * watching it then. Shown for the record: it needs no one now.
 */
lastState: AgentStateView | null, };
