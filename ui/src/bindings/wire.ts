// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { ErrorCode } from "./ErrorCode";

/** The Tauri event carrying a fresh `Snapshot` whenever the inventory changes (`view::events::SNAPSHOT`). */
export const SNAPSHOT_EVENT = "supercode://snapshot";

/** The Tauri event asking the window to show one runtime's revive confirmation, payload its id (`view::events::CONFIRM_REVIVE`). */
export const CONFIRM_REVIVE_EVENT = "supercode://confirm-revive";

/** The Tauri event asking the window to confirm one agent action, payload `{ id, action }` (`view::events::CONFIRM_ACT`). */
export const CONFIRM_ACT_EVENT = "supercode://confirm-act";

/** Every error code the backend sends (`ErrorCode::ALL`). */
export const ERROR_CODES: readonly ErrorCode[] = ["notFound", "refused", "planChanged", "internal"];
