// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type AgentActionView = { 
/**
 * Its machine name, validated (`^[a-z0-9][a-z0-9._-]{0,63}$`).
 */
id: string, 
/**
 * The button or menu text (plain text, capped).
 */
label: string, 
/**
 * It discards work or refuses the agent: styled apart, asked before it runs.
 */
destructive: boolean, 
/**
 * The question to ask before invoking it, when the runtime gave one (plain text, capped).
 */
confirm: string | null, };
