// Mirrors the Rust IPC type of the same name; the lead regenerates this file with ts-rs.
import type { PendingState } from "./PendingState";

export type PendingView = { profile: string, clientType: string | null, state: PendingState, createdAt: string, updatedAt: string, message: string | null, };
