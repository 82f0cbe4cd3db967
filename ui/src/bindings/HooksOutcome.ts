// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type HooksOutcome = { 
/**
 * The agent (`claude-code`).
 */
agent: string, 
/**
 * A human summary, with what is left to do (Codex: trust the hooks in Codex).
 */
message: string, };
