// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
/**
 * Whether an action can run now; `reason` says why not when it cannot.
 */
export type ActionAvailability = { available: boolean, reason: string | null, };
