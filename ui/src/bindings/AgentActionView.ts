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
 * It discards work or refuses the agent: styled apart.
 */
destructive: boolean, 
/**
 * The question every shell asks before invoking it, or `None` to invoke it at once: decided
 * here, once ([`AgentActionView::new`]), never by a shell (plain text, capped).
 */
confirm: string | null, };
