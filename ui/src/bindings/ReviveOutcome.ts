// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
export type ReviveOutcome = { id: string, message: string, };
