// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type DesktopNotice = { 
/**
 * One line: what is wrong.
 */
title: string, 
/**
 * What it means and what to do.
 */
detail: string, };
