// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type ActionAvailability = { 
/**
 * True when the action can be run now.
 */
available: boolean, 
/**
 * Why the action is not available; `None` when it is.
 */
reason: string | null, 
/**
 * False when the action can never apply to the thing as it is (revive on a running
 * runtime, forget on a running one, attach on a stale one): the shells leave it out
 * rather than show it disabled on every card (issue 31). True when it can run, or could
 * once something changes (a profile in use, a lock to fix): then it is shown with `reason`.
 */
applies: boolean, };
