// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { PendingState } from "./PendingState";

export type PendingView = { 
/**
 * The profile it will be saved as.
 */
profile: string, 
/**
 * The runtime kind it is for.
 */
clientType: string | null, 
/**
 * Where it stands.
 */
state: PendingState, 
/**
 * When it was created (RFC 3339).
 */
createdAt: string, 
/**
 * When it last changed (RFC 3339).
 */
updatedAt: string, 
/**
 * A human explanation of the state, when there is one.
 */
message: string | null, };
