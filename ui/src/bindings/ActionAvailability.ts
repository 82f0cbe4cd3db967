// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type ActionAvailability = { 
/**
 * True when the action can be run now.
 */
available: boolean, 
/**
 * Why the action is not available; `None` when it is.
 */
reason: string | null, };
