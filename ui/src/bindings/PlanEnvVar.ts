// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type PlanEnvVar = { 
/**
 * Its name.
 */
name: string, 
/**
 * Its value, exactly as it will be set.
 */
value: string, 
/**
 * It is not one of the few harmless variables (with a plain value), so it runs only once
 * allowed for this runtime.
 */
needsAllow: boolean, 
/**
 * The user allowed this exact value for this runtime before.
 */
allowed: boolean, 
/**
 * Why it needs allowing, for people; `None` when it does not.
 */
reason: string | null, };
