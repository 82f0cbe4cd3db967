// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { HooksChange } from "./HooksChange";

export type HooksPlanView = { 
/**
 * The agent (`claude-code`).
 */
agent: string, 
/**
 * Its name for people.
 */
title: string, 
/**
 * Connect or Disconnect.
 */
change: HooksChange, 
/**
 * The settings file changed.
 */
settings: string, 
/**
 * Exactly what goes in or comes out, as `hooks install|remove` prints it.
 */
preview: string, 
/**
 * Where the previous file is kept; `None` when there is no file yet.
 */
backup: string | null, 
/**
 * True when there is nothing to change.
 */
nothingToDo: boolean, 
/**
 * Something about the file the user should fix (its mode), if any.
 */
warning: string | null, 
/**
 * A digest of the file as read and the file as it will be written.
 */
digest: string, };
