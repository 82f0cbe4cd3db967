//! How text from a record or a runtime is shown outside a webview: on a terminal, in a desktop
//! notification, in the tray menu (the window renders what a user confirms with the same rule).
//!
//! A receipt's `displayName`, a catalog entry's workspace, an environment variable's name, a
//! runtime's title: any local program can write them, and a terminal acts on what it is sent.
//! An `ESC [` sequence moves the cursor and repaints lines, a carriage return overwrites the
//! line, a newline forges a line of its own, and a bidirectional override reorders what follows
//! (issue 29: a revive plan showed `program: "/usr/local/bin/canon-agent"` while it ran
//! `evil.sh`). One rule, [`is_hidden_control`], says which characters those are; every shell
//! shows them as visible `\u{..}` escapes, never as themselves:
//! - [`visible`]: a name, a kind, a workspace, a reason, a title, inline.
//! - [`visible_lines`]: a message whose line breaks are its own (an error with a log tail).
//! - [`quoted`]: a value whose edges matter (an argument, a variable's value), in quotes.
//! - [`json_safe`]: a JSON document for a terminal; JSON itself escapes C0 controls, and this
//!   writes the rest as `\uXXXX`, so the document still means the same.
//!
//! The status-document reader removes the same characters from what a runtime reports
//! ([`crate::agents::document::clean`]); everything else reaches the shells as recorded and is
//! rendered here.

use std::borrow::Cow;
use std::fmt::Write as _;

/// The characters a terminal, a notification, a menu or a webview would act on rather than
/// show, as inclusive ranges: the C0 controls (tab, newline, carriage return and escape among
/// them), DEL, the C1 controls (U+0080 to U+009F; `U+009B` is a one-character `ESC [` on
/// terminals that read them), the line and paragraph separators, and the bidirectional marks,
/// embeddings, overrides and isolates (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to
/// U+2069), which reorder the text around them (in a webview too). The window renders with the
/// same list (`ui/src/bindings/textRules.ts`, generated from it).
pub const HIDDEN_CONTROLS: [(char, char); 7] = [
    ('\u{0}', '\u{1f}'),
    ('\u{7f}', '\u{9f}'),
    ('\u{61c}', '\u{61c}'),
    ('\u{200e}', '\u{200f}'),
    ('\u{2028}', '\u{2029}'),
    ('\u{202a}', '\u{202e}'),
    ('\u{2066}', '\u{2069}'),
];

/// Whether `c` is one of the [`HIDDEN_CONTROLS`]. Of ASCII those are exactly the controls, so
/// the ranges are searched only beyond it.
pub fn is_hidden_control(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    in_hidden_ranges(c)
}

fn in_hidden_ranges(c: char) -> bool {
    HIDDEN_CONTROLS
        .iter()
        .any(|&(first, last)| (first..=last).contains(&c))
}

/// `text` with every [hidden control](is_hidden_control) written as a visible `\u{..}` escape
/// (ESC shows as `\u{1b}`), newlines included, so it stays on its line. Borrowed when there is
/// nothing to escape.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden_control) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        push_visible(&mut out, c);
    }
    Cow::Owned(out)
}

/// [`visible`], keeping `\n` as a line break: for a message of several lines (an error with a
/// runtime's log tail). A carriage return, which would overwrite the line, is still escaped.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| c != '\n' && is_hidden_control(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if c == '\n' {
            out.push(c);
        } else {
            push_visible(&mut out, c);
        }
    }
    Cow::Owned(out)
}

/// Cuts `text` to `max` characters, the last of them `…`, when it is longer: how every text the
/// tray shows is capped (a status document's fields, a notification's detail, a menu line).
pub fn cut(text: &mut String, max: usize) {
    if text.char_indices().nth(max).is_none() {
        return;
    }
    let keep = text
        .char_indices()
        .nth(max.saturating_sub(1))
        .map_or(text.len(), |(at, _)| at);
    text.truncate(keep);
    text.push('\u{2026}');
}

/// `text` in double quotes, with `"` and `\` escaped and every hidden control [`visible`], so
/// where it starts and ends is plain: `a "b"` shows as `"a \"b\""`.
pub fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => push_visible(&mut out, c),
        }
    }
    out.push('"');
    out
}

/// A JSON document (as `serde_json` writes it) with every hidden control that JSON leaves raw
/// (DEL, C1, the separators, the bidirectional ones) written as a `\uXXXX` escape. JSON escapes
/// the C0 controls inside strings, so a raw one is the document's own whitespace and stays; and
/// outside its strings a document is ASCII, so every other one found is inside a string, where
/// the escape means the same character: a parser reads the same document.
pub fn json_safe(json: &str) -> Cow<'_, str> {
    let escaped = |c: char| c > '\u{1f}' && is_hidden_control(c);
    // The C0 controls stay here, so only DEL and beyond can be escaped: a document that is ASCII
    // without DEL (checked a word, then a memchr, at a time) has none.
    if (json.is_ascii() && !json.as_bytes().contains(&0x7f)) || !json.chars().any(escaped) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if escaped(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

fn push_visible(out: &mut String, c: char) {
    if is_hidden_control(c) {
        let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
    } else {
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // What the fast paths (`is_hidden_control`'s, `json_safe`'s) rely on.
    #[test]
    fn every_hidden_control_is_a_c0_control_del_or_beyond_ascii() {
        for (first, last) in HIDDEN_CONTROLS {
            assert!(
                last <= '\u{1f}' || first >= '\u{7f}',
                "{first:?}..={last:?}"
            );
        }
        for c in (0u8..=0x7f).map(char::from) {
            assert_eq!(in_hidden_ranges(c), c.is_ascii_control(), "{c:?}");
            assert_eq!(in_hidden_ranges(c), is_hidden_control(c), "{c:?}");
        }
    }

    /// Every character a terminal acts on, and the text it hides in.
    const HOSTILE: &str = "a\u{1b}[2J\rb\nc\td\u{7}\u{7f}\u{85}\u{9b}31m\u{202e}e\u{2066}f\u{2069}\u{200f}\u{61c}\u{2028}g";

    #[test]
    fn cut_keeps_a_short_text_and_ends_a_long_one_with_an_ellipsis_within_the_cap() {
        let cut_to = |text: &str, max| {
            let mut text = text.to_owned();
            cut(&mut text, max);
            text
        };
        assert_eq!(cut_to("abc", 3), "abc");
        assert_eq!(cut_to("abcd", 3), "ab\u{2026}");
        assert_eq!(cut_to("ééééé", 4), "ééé\u{2026}");
        assert_eq!(cut_to("ééééé", 4).chars().count(), 4);
    }

    #[test]
    fn every_control_and_bidi_character_is_shown_as_an_escape_and_the_rest_as_it_is() {
        let shown = visible(HOSTILE);
        assert_eq!(
            shown,
            "a\\u{1b}[2J\\u{d}b\\u{a}c\\u{9}d\\u{7}\\u{7f}\\u{85}\\u{9b}31m\\u{202e}e\\u{2066}f\\u{2069}\\u{200f}\\u{61c}\\u{2028}g"
        );
        assert!(!shown.chars().any(is_hidden_control));
        let plain = "Café — ünïcödé 日本語 🦀 \\u{1b} \"quoted\"";
        assert!(matches!(visible(plain), Cow::Borrowed(_)));
        assert_eq!(visible(plain), plain);
    }

    #[test]
    fn multiline_text_keeps_its_line_breaks_and_nothing_else() {
        assert_eq!(
            visible_lines("log:\nline \u{1b}[1Aup\r\nend"),
            "log:\nline \\u{1b}[1Aup\\u{d}\nend"
        );
        assert!(matches!(visible_lines("a\nb"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_quoted_value_shows_its_edges_and_escapes() {
        assert_eq!(quoted(r#"two "words" \ "#), r#""two \"words\" \\ ""#);
        assert_eq!(quoted("x\u{202e}y\n"), "\"x\\u{202e}y\\u{a}\"");
        assert_eq!(quoted(""), "\"\"");
    }

    #[test]
    fn a_json_document_made_terminal_safe_parses_to_the_same_value() {
        let value = serde_json::json!({ "name": HOSTILE, "emoji": "🦀 日本語", "n": [1, 2] });
        let json = serde_json::to_string_pretty(&value).unwrap();
        let safe = json_safe(&json);
        assert!(
            !safe
                .chars()
                .any(|c| is_hidden_control(c) && !matches!(c, '\n' | ' ')),
            "only the document's own line breaks are left: {safe}"
        );
        assert!(
            safe.contains("\\u202e") && safe.contains("\\u009b"),
            "{safe}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        let astral = json_safe("\"\u{1f980}\"");
        assert_eq!(astral, "\"\u{1f980}\"", "only hidden controls are escaped");
    }
}
