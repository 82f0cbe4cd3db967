// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
export type RuntimeStatus = "running" | "stale" | "offline" | "manual" | "embedded";
