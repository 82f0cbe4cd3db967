// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
export type IgnoredLocation = "receipts" | "canon" | "state";
