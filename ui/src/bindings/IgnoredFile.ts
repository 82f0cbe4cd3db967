// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
export type IgnoredFile = { location: "receipts" | "canon", file: string, reason: string, };
