// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { ActionAvailability } from "./ActionAvailability";
import type { PlanEnvVar } from "./PlanEnvVar";

export type RevivePlanView = { 
/**
 * The inventory id.
 */
id: string, 
/**
 * The display name.
 */
name: string, 
/**
 * The program as an absolute path, exactly what is started.
 */
program: string, 
/**
 * The program as the record names it, before the `PATH` lookup.
 */
recordedProgram: string, 
/**
 * Its arguments, one per element.
 */
args: Array<string>, 
/**
 * Its working directory.
 */
cwd: string, 
/**
 * Every variable it sets on top of the app's own environment, sorted by name.
 */
env: Array<PlanEnvVar>, 
/**
 * The Canon profile it runs as.
 */
profile: string | null, 
/**
 * A digest of this plan; a revive carrying another one is refused (`planChanged`).
 */
digest: string, 
/**
 * Whether it can run as shown; the reason names each variable still to be allowed.
 */
run: ActionAvailability, };
