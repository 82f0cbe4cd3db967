// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type SnapshotCounts = { 
/**
 * Runtimes whose process is alive ([`RuntimeStatus::Running`]).
 */
running: number, 
/**
 * Runtimes whose record claims a process that is gone.
 */
stale: number, 
/**
 * Runtimes that stopped unexpectedly and are shown until dismissed ([`RuntimeStatus::Exited`]).
 */
exited: number, 
/**
 * Registrations that have not ended: they wait for the owner, for Canon or for the user
 * to approve again.
 */
awaitingApproval: number, 
/**
 * Running runtimes whose agent waits for the user ([`AgentState::needs_you`]).
 */
needsYou: number, };
