// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
import type { ErrorCode } from "./ErrorCode";

export type CommandError = { code: ErrorCode, message: string, };
