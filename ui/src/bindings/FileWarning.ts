// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { IgnoredLocation } from "./IgnoredLocation";

export type FileWarning = { 
/**
 * Where it was found.
 */
location: IgnoredLocation, 
/**
 * Its file name (or path relative to the location).
 */
file: string, 
/**
 * What is wrong and what to do, for people.
 */
reason: string, };
