// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { ControllerKind } from "./ControllerKind";

export type ControllerView = { 
/**
 * The kind of client.
 */
kind: ControllerKind, 
/**
 * Which one, for people ("VS Code"), when the runtime said.
 */
label: string | null, };
