// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { ActionAvailability } from "./ActionAvailability";
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
message: string | null, 
/**
 * Whether it can be approved (or the approval resumed or retried) now, and why not.
 */
approve: ActionAvailability, 
/**
 * Whether it can be dismissed now: always, since dismissing a registration that has not
 * ended rejects it, and one in flight is cancelled first.
 */
dismiss: ActionAvailability, 
/**
 * True once it has ended (approved or rejected): dismissing only clears it, where
 * otherwise dismissing it rejects it.
 */
over: boolean, };
