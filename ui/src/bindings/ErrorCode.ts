// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
export type ErrorCode = "notFound" | "refused" | "runtimeUnavailable" | "secretStore" | "network" | "invalidInput" | "internal";
