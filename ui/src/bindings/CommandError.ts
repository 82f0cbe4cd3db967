// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { ErrorCode } from "./ErrorCode";

export type CommandError = { 
/**
 * What kind of failure.
 */
code: ErrorCode, 
/**
 * What happened and what to do next.
 */
message: string, };
