// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type ReviveOutcome = { 
/**
 * The inventory id that was revived.
 */
id: string, 
/**
 * A human summary ("demo-alpha is running again (PID 1234)").
 */
message: string, };
