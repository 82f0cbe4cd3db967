// Generated from crates/supercode-core/src/view.rs by `UPDATE_BINDINGS=1 cargo test -p supercode-core --test bindings`. Do not edit.
/** The code points, as inclusive ranges, that would act rather than show (controls, line separators, bidirectional overrides): rendered as visible `\u{..}` escapes (`text::HIDDEN_CONTROLS`). */
export const HIDDEN_CONTROLS: readonly (readonly [number, number])[] = [[0x0, 0x1f], [0x7f, 0x9f], [0x61c, 0x61c], [0x200e, 0x200f], [0x2028, 0x2029], [0x202a, 0x202e], [0x2066, 0x2069]];
