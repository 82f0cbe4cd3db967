// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type ActOutcome = { 
/**
 * The inventory id of the runtime.
 */
id: string, 
/**
 * The action id that was accepted.
 */
action: string, 
/**
 * A human summary ("demo-alpha accepted Approve").
 */
message: string, };
