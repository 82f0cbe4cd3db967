// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
import type { SecretStoreKindView } from "./SecretStoreKindView";

export type SecretStoreView = { 
/**
 * Keychain or file.
 */
kind: SecretStoreKindView, 
/**
 * A sentence for people.
 */
description: string, };
