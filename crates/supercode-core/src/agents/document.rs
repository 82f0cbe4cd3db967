//! The status document reader: parses, validates and sanitizes one runtime status document
//! exactly as "What a client does with a document" in `docs/runtime-api.md` says.
//!
//! Everything here is untrusted input. A document is either invalid as a whole (the caller counts
//! a failed attempt and keeps the last valid one) or turned into an [`AgentStateView`] whose
//! strings are plain text, free of control and bidirectional formatting characters, and capped.

use serde::de::value::StrDeserializer;
use serde::de::DeserializeOwned;
use serde_json::Value;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::view::{AgentActionView, AgentState, AgentStateView, ControllerKind, ControllerView};

/// Largest `GET` body or event `data` read as a document (bytes).
pub const MAX_DOCUMENT_BYTES: usize = 32 * 1024;
/// Deepest JSON nesting a document may have.
pub const MAX_DEPTH: usize = 16;
/// The document version this client reads.
pub const VERSION: u64 = 1;
/// Largest `revision` (2^53 − 1, what every JSON implementation represents exactly).
pub const MAX_REVISION: u64 = (1 << 53) - 1;
/// Most actions kept.
pub const MAX_ACTIONS: usize = 8;
/// Cap of `title`, in characters.
pub const TITLE_CAP: usize = 200;
/// Cap of `detail`, in characters.
pub const DETAIL_CAP: usize = 2_000;
/// Cap of `actions[].label` and `controller.label`, in characters.
pub const LABEL_CAP: usize = 64;
/// Cap of `actions[].confirm` and of a refusal's `message`, in characters.
pub const MESSAGE_CAP: usize = 500;

/// A valid document: what the UI shows, and the revision to order it and to act on it with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    /// The document's `revision`.
    pub revision: u64,
    /// The sanitized state.
    pub view: AgentStateView,
}

impl Document {
    /// Whether `other` asks the same of the user as this one: the same state, title, detail and
    /// actions (what the API's `stale-revision` rule watches), whatever else changed (the
    /// observers, the controller).
    pub fn same_prompt(&self, other: &Document) -> bool {
        let (a, b) = (&self.view, &other.view);
        a.value == b.value && a.title == b.title && a.detail == b.detail && a.actions == b.actions
    }
}

/// Why a document is invalid. Says which rule it broke, never echoes its content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    /// Over [`MAX_DOCUMENT_BYTES`].
    #[error("the status document is over {MAX_DOCUMENT_BYTES} bytes")]
    TooLarge,
    /// Not UTF-8 JSON, or not an object.
    #[error("the status document is not a JSON object")]
    NotAnObject,
    /// Nested deeper than [`MAX_DEPTH`].
    #[error("the status document is nested deeper than {MAX_DEPTH}")]
    TooDeep,
    /// A `version` other than 1.
    #[error("the status document has a version other than {VERSION}")]
    Version,
    /// A required field is missing, of the wrong type or out of range.
    #[error("the status document's `{0}` is missing or invalid")]
    Field(&'static str),
}

/// Parses, validates and sanitizes one document.
pub fn parse(bytes: &[u8]) -> Result<Document, DocumentError> {
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(DocumentError::TooLarge);
    }
    // serde_json stops at 128 levels itself, so the depth walk below is bounded.
    let value: Value = serde_json::from_slice(bytes).map_err(|_| DocumentError::NotAnObject)?;
    if depth(&value) > MAX_DEPTH {
        return Err(DocumentError::TooDeep);
    }
    let doc = value.as_object().ok_or(DocumentError::NotAnObject)?;
    if doc.get("version").and_then(Value::as_u64) != Some(VERSION) {
        return Err(DocumentError::Version);
    }
    let revision = doc
        .get("revision")
        .and_then(Value::as_u64)
        .filter(|r| *r <= MAX_REVISION)
        .ok_or(DocumentError::Field("revision"))?;
    let state = doc
        .get("state")
        .and_then(Value::as_str)
        .and_then(state_of)
        .ok_or(DocumentError::Field("state"))?;
    let title = doc
        .get("title")
        .and_then(Value::as_str)
        .ok_or(DocumentError::Field("title"))?;
    let title = match clean(title, false, TITLE_CAP) {
        empty if empty.is_empty() => state_name(state),
        title => title,
    };
    let detail = optional_text(doc.get("detail"), true, DETAIL_CAP, "detail")?;
    let since = doc
        .get("since")
        .and_then(Value::as_str)
        .and_then(|s| OffsetDateTime::parse(s, &Rfc3339).ok())
        .and_then(|t| t.format(&Rfc3339).ok())
        .ok_or(DocumentError::Field("since"))?;
    let actions = doc
        .get("actions")
        .and_then(Value::as_array)
        .ok_or(DocumentError::Field("actions"))?;
    let controller = doc
        .get("controller")
        .and_then(Value::as_object)
        .ok_or(DocumentError::Field("controller"))?;
    let kind = controller
        .get("kind")
        .and_then(Value::as_str)
        .and_then(named::<ControllerKind>)
        .ok_or(DocumentError::Field("controller.kind"))?;
    let controller_label = optional_text(
        controller.get("label"),
        false,
        LABEL_CAP,
        "controller.label",
    )?;
    let observers = doc
        .get("observers")
        .and_then(Value::as_u64)
        .and_then(|o| u32::try_from(o).ok())
        .ok_or(DocumentError::Field("observers"))?;
    Ok(Document {
        revision,
        view: AgentStateView {
            value: state,
            title: Some(title),
            detail,
            since: Some(since),
            actions: valid_actions(actions),
            controller: Some(ControllerView {
                kind,
                label: controller_label,
            }),
            observers: Some(observers),
            revision: Some(revision),
        },
    })
}

/// Whether `id` is a valid action id: `^[a-z0-9][a-z0-9._-]{0,63}$`.
pub fn is_valid_action_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    let first = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let rest = |b: &u8| first(b) || matches!(b, b'.' | b'_' | b'-');
    (1..=64).contains(&bytes.len()) && first(&bytes[0]) && bytes[1..].iter().all(rest)
}

/// A runtime's text made safe to show: control and bidirectional formatting characters (the
/// shells' one rule, [`crate::text::is_hidden_control`]) removed
/// (in `multiline` text `\n` and `\t` are kept and `\r\n` becomes `\n`), then capped at `cap`
/// characters with `…`.
pub fn clean(text: &str, multiline: bool, cap: usize) -> String {
    let mut out = String::with_capacity(text.len().min(cap * 4));
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if multiline && c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        let kept = multiline && matches!(c, '\n' | '\t');
        if kept || !crate::text::is_hidden_control(c) {
            out.push(c);
        }
    }
    crate::text::cut(&mut out, cap);
    out
}

/// An optional string field: absent, `null` and `""` (after cleaning) are all `None`; any other
/// type makes the document invalid.
fn optional_text(
    value: Option<&Value>,
    multiline: bool,
    cap: usize,
    field: &'static str,
) -> Result<Option<String>, DocumentError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(clean(s, multiline, cap)).filter(|s| !s.is_empty())),
        Some(_) => Err(DocumentError::Field(field)),
    }
}

/// The first [`MAX_ACTIONS`] valid actions; an entry with a bad id, no label, a duplicate id or
/// a field of the wrong type is dropped.
fn valid_actions(actions: &[Value]) -> Vec<AgentActionView> {
    let mut kept: Vec<AgentActionView> = Vec::new();
    for entry in actions {
        if kept.len() == MAX_ACTIONS {
            break;
        }
        let Some(action) = entry.as_object() else {
            continue;
        };
        let Some(id) = action
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| is_valid_action_id(id))
        else {
            continue;
        };
        if kept.iter().any(|a| a.id == id) {
            continue;
        }
        let Some(label) = action
            .get("label")
            .and_then(Value::as_str)
            .map(|l| clean(l, false, LABEL_CAP))
            .filter(|l| !l.is_empty())
        else {
            continue;
        };
        let Some(destructive) = action.get("destructive").and_then(Value::as_bool) else {
            continue;
        };
        let Ok(confirm) = optional_text(action.get("confirm"), false, MESSAGE_CAP, "confirm")
        else {
            continue;
        };
        kept.push(AgentActionView::new(
            id.to_owned(),
            label,
            destructive,
            confirm,
        ));
    }
    kept
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A state by the API's name for it, which is serde's (the names the bindings carry too): one of
/// the five a runtime reports, never one the tray derives.
fn state_of(name: &str) -> Option<AgentState> {
    named::<AgentState>(name).filter(|state| !state.is_derived())
}

/// The API's name of a state (what an empty title is replaced by).
pub fn state_name(state: AgentState) -> String {
    match serde_json::to_value(state) {
        Ok(Value::String(name)) => name,
        _ => unreachable!("a unit variant serializes to its name"),
    }
}

/// The variant of `T` that serde names `name`.
fn named<T: DeserializeOwned>(name: &str) -> Option<T> {
    T::deserialize(StrDeserializer::<serde::de::value::Error>::new(name)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid() -> Value {
        json!({
            "version": 1,
            "revision": 7,
            "state": "needs-approval",
            "title": "Run the test suite?",
            "detail": "cargo test --workspace",
            "since": "2026-12-03T08:30:01.123456789Z",
            "actions": [
                { "id": "approve", "label": "Approve", "destructive": false },
                { "id": "deny", "label": "Deny", "destructive": true, "confirm": "Deny it?" }
            ],
            "controller": { "kind": "terminal", "label": "zsh in tmux" },
            "observers": 2
        })
    }

    fn with(mut doc: Value, key: &str, value: Value) -> Value {
        doc[key] = value;
        doc
    }

    fn without(mut doc: Value, key: &str) -> Value {
        doc.as_object_mut().unwrap().remove(key);
        doc
    }

    fn read(doc: &Value) -> Result<Document, DocumentError> {
        parse(doc.to_string().as_bytes())
    }

    #[test]
    fn the_documented_example_reads_as_written() {
        let doc = read(&valid()).unwrap();
        assert_eq!(doc.revision, 7);
        let view = doc.view;
        assert_eq!(view.value, AgentState::NeedsApproval);
        assert_eq!(view.title.as_deref(), Some("Run the test suite?"));
        assert_eq!(view.detail.as_deref(), Some("cargo test --workspace"));
        assert_eq!(
            view.since.as_deref(),
            Some("2026-12-03T08:30:01.123456789Z")
        );
        assert_eq!(view.actions.len(), 2);
        assert_eq!(view.actions[1].confirm.as_deref(), Some("Deny it?"));
        assert!(view.actions[1].destructive);
        assert_eq!(
            view.controller,
            Some(ControllerView {
                kind: ControllerKind::Terminal,
                label: Some("zsh in tmux".into())
            })
        );
        assert_eq!(view.observers, Some(2));
        assert_eq!(view.revision, Some(7));
    }

    // Issue 30 item 3: whether to ask before acting is decided here, once, and carried in the
    // view: the runtime's question, a generic one for a destructive action without one, none
    // otherwise.
    #[test]
    fn whether_to_ask_before_an_action_is_decided_with_the_document() {
        let doc = with(
            valid(),
            "actions",
            json!([
                { "id": "approve", "label": "Approve", "destructive": false },
                { "id": "deny", "label": "Deny", "destructive": true, "confirm": "Deny it?" },
                { "id": "drop", "label": "Drop", "destructive": true },
                { "id": "retry", "label": "Retry", "destructive": false, "confirm": "Again?" }
            ]),
        );
        let asks: Vec<Option<String>> = read(&doc)
            .unwrap()
            .view
            .actions
            .into_iter()
            .map(|a| a.confirm)
            .collect();
        assert_eq!(asks[0], None);
        assert_eq!(asks[1].as_deref(), Some("Deny it?"));
        let generic = asks[2].as_deref().unwrap();
        assert!(
            generic.contains("\"Drop\"") && generic.contains("cannot be undone"),
            "{generic}"
        );
        assert_eq!(asks[3].as_deref(), Some("Again?"));
    }

    // Issue 29: what makes an action chosen from one document stale is a change of what it asks,
    // not of who watches.
    #[test]
    fn the_same_prompt_ignores_observers_and_controller_but_not_actions() {
        let first = read(&valid()).unwrap();
        let watched = with(with(valid(), "observers", json!(5)), "revision", json!(8));
        let watched = with(watched, "controller", json!({ "kind": "ide" }));
        assert!(first.same_prompt(&read(&watched).unwrap()));
        let switched = with(
            with(valid(), "revision", json!(8)),
            "title",
            json!("Drop it?"),
        );
        assert!(!first.same_prompt(&read(&switched).unwrap()));
        let mut destructive = valid();
        destructive["actions"][0]["destructive"] = json!(true);
        assert!(!first.same_prompt(&read(&destructive).unwrap()));
    }

    #[test]
    fn every_state_and_controller_kind_is_read_and_others_are_invalid() {
        for (name, state) in [
            ("working", AgentState::Working),
            ("needs-approval", AgentState::NeedsApproval),
            ("needs-input", AgentState::NeedsInput),
            ("idle", AgentState::Idle),
            ("error", AgentState::Error),
        ] {
            let doc = read(&with(valid(), "state", json!(name))).unwrap();
            assert_eq!(doc.view.value, state);
        }
        for derived in ["unknown", "not-answering", "Working", ""] {
            assert_eq!(
                read(&with(valid(), "state", json!(derived))),
                Err(DocumentError::Field("state"))
            );
        }
        for kind in ["terminal", "ide", "browser", "none"] {
            read(&with(valid(), "controller", json!({ "kind": kind }))).unwrap();
        }
        assert_eq!(
            read(&with(valid(), "controller", json!({ "kind": "phone" }))),
            Err(DocumentError::Field("controller.kind"))
        );
    }

    #[test]
    fn a_document_over_32_kib_is_invalid_and_one_just_under_is_read() {
        let base = valid().to_string().len();
        let pad = |n: usize| with(valid(), "padding", json!("x".repeat(n)));
        // `,"padding":""` adds 13 bytes besides the string itself.
        let exact = pad(MAX_DOCUMENT_BYTES - base - 13);
        assert_eq!(exact.to_string().len(), MAX_DOCUMENT_BYTES);
        read(&exact).unwrap();
        let over = pad(MAX_DOCUMENT_BYTES - base - 12);
        assert_eq!(read(&over), Err(DocumentError::TooLarge));
    }

    #[test]
    fn nesting_deeper_than_16_is_invalid() {
        let nest = |levels: usize| {
            let mut v = json!(1);
            for _ in 0..levels {
                v = json!([v]);
            }
            v
        };
        // The document itself is one level: 15 more make 16.
        read(&with(valid(), "extra", nest(15))).unwrap();
        assert_eq!(
            read(&with(valid(), "extra", nest(16))),
            Err(DocumentError::TooDeep)
        );
        // Far beyond serde_json's own limit: still a clean error.
        let bomb = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse(bomb.as_bytes()).is_err());
    }

    #[test]
    fn not_json_not_utf8_and_not_an_object_are_invalid() {
        for bytes in [
            &b"not json"[..],
            &b"[1,2]"[..],
            &b"\"a string\""[..],
            &b"{\"version\":1,\"title\":\"\xff\"}"[..],
            &b""[..],
        ] {
            assert!(parse(bytes).is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn versions_other_than_1_are_invalid() {
        for version in [json!(2), json!(0), json!("1"), json!(1.0), json!(null)] {
            assert_eq!(
                read(&with(valid(), "version", version)),
                Err(DocumentError::Version)
            );
        }
        assert_eq!(
            read(&without(valid(), "version")),
            Err(DocumentError::Version)
        );
    }

    #[test]
    fn required_fields_missing_or_of_the_wrong_type_make_it_invalid() {
        for field in [
            "revision",
            "state",
            "title",
            "since",
            "actions",
            "controller",
            "observers",
        ] {
            assert_eq!(
                read(&without(valid(), field)),
                Err(DocumentError::Field(field)),
                "{field} missing"
            );
            assert!(
                read(&with(valid(), field, json!({ "wrong": true }))).is_err()
                    || field == "controller",
                "{field} of the wrong type"
            );
        }
        assert!(read(&with(valid(), "controller", json!([]))).is_err());
        assert!(read(&with(valid(), "detail", json!(5))).is_err());
        assert!(read(&with(
            valid(),
            "controller",
            json!({"kind": "ide", "label": 1})
        ))
        .is_err());
    }

    #[test]
    fn revision_and_observers_ranges_are_enforced() {
        read(&with(valid(), "revision", json!(MAX_REVISION))).unwrap();
        read(&with(valid(), "revision", json!(0))).unwrap();
        for bad in [json!(MAX_REVISION + 1), json!(-1), json!(1.5), json!("7")] {
            assert_eq!(
                read(&with(valid(), "revision", bad)),
                Err(DocumentError::Field("revision"))
            );
        }
        read(&with(valid(), "observers", json!(u32::MAX))).unwrap();
        for bad in [json!(u64::from(u32::MAX) + 1), json!(-1)] {
            assert_eq!(
                read(&with(valid(), "observers", bad)),
                Err(DocumentError::Field("observers"))
            );
        }
    }

    #[test]
    fn since_must_be_rfc_3339() {
        read(&with(valid(), "since", json!("2026-12-03T10:30:01+02:00"))).unwrap();
        for bad in [
            "2026-12-03",
            "yesterday",
            "2026-12-03T08:30:01",
            "2026-13-03T08:30:01Z",
        ] {
            assert_eq!(
                read(&with(valid(), "since", json!(bad))),
                Err(DocumentError::Field("since")),
                "{bad}"
            );
        }
    }

    #[test]
    fn control_and_bidi_characters_are_removed_and_detail_keeps_lines_and_tabs() {
        let doc = json!({
            "title": "a\u{0}b\u{7}c\u{1b}[31md\u{7f}e\u{85}f\u{202e}g\u{2066}h\u{9f}\ni\tj",
            "detail": "one\r\ntwo\rthree\nfour\tfive\u{202a}\u{1b}",
            "controller": { "kind": "ide", "label": "VS\u{200f}\u{2069} Code\n" },
        });
        let mut full = valid();
        for (k, v) in doc.as_object().unwrap() {
            full[k] = v.clone();
        }
        let view = read(&full).unwrap().view;
        assert_eq!(view.title.as_deref(), Some("abc[31mdefghij"));
        assert_eq!(view.detail.as_deref(), Some("one\ntwothree\nfour\tfive"));
        // U+200F, a right-to-left mark, reorders neutral text around it: removed too (issue 29,
        // the shells' one rule).
        assert_eq!(view.controller.unwrap().label.as_deref(), Some("VS Code"));
    }

    #[test]
    fn strings_are_capped_after_removal_with_an_ellipsis() {
        let long = "é".repeat(TITLE_CAP);
        let mut doc = with(valid(), "title", json!(format!("{long}\u{0}")));
        // Exactly at the cap once the control character is gone: kept whole.
        assert_eq!(read(&doc).unwrap().view.title.unwrap(), long);
        doc = with(valid(), "title", json!(format!("{long}x")));
        let title = read(&doc).unwrap().view.title.unwrap();
        assert_eq!(title.chars().count(), TITLE_CAP);
        assert!(title.ends_with('…'));
        let detail = read(&with(valid(), "detail", json!("d".repeat(5000))))
            .unwrap()
            .view
            .detail
            .unwrap();
        assert_eq!(detail.chars().count(), DETAIL_CAP);
        assert!(detail.ends_with('…'));
        let action = json!([{ "id": "a", "label": "l".repeat(100), "destructive": false,
                              "confirm": "c".repeat(900) }]);
        let view = read(&with(valid(), "actions", action)).unwrap().view;
        assert_eq!(view.actions[0].label.chars().count(), LABEL_CAP);
        assert_eq!(
            view.actions[0].confirm.as_ref().unwrap().chars().count(),
            MESSAGE_CAP
        );
        let controller = json!({ "kind": "ide", "label": "v".repeat(65) });
        let label = read(&with(valid(), "controller", controller))
            .unwrap()
            .view
            .controller
            .unwrap()
            .label
            .unwrap();
        assert_eq!(label.chars().count(), LABEL_CAP);
    }

    #[test]
    fn an_empty_title_becomes_the_state_name_and_empty_detail_is_absent() {
        let doc = with(valid(), "title", json!("\u{1b}\u{7}"));
        assert_eq!(
            read(&doc).unwrap().view.title.as_deref(),
            Some("needs-approval")
        );
        for empty in [json!(""), json!(null), json!("\u{0}")] {
            assert_eq!(
                read(&with(valid(), "detail", empty)).unwrap().view.detail,
                None
            );
        }
        assert_eq!(read(&without(valid(), "detail")).unwrap().view.detail, None);
    }

    #[test]
    fn invalid_duplicate_and_unlabelled_actions_are_dropped_and_eight_kept() {
        let actions = json!([
            { "id": "Delete All<script>", "label": "Bad id", "destructive": true },
            { "id": "", "label": "Empty id", "destructive": false },
            { "id": "a".repeat(65), "label": "Long id", "destructive": false },
            { "id": "-x", "label": "Leading dash", "destructive": false },
            { "id": "ok.1_-", "label": "Fine", "destructive": false },
            { "id": "ok.1_-", "label": "Duplicate", "destructive": true },
            { "id": "nolabel", "destructive": false },
            { "id": "emptylabel", "label": "\u{7}", "destructive": false },
            { "id": "nodestructive", "label": "Missing flag" },
            { "id": "badconfirm", "label": "Bad confirm", "destructive": false, "confirm": 3 },
            "not an object",
            { "id": "b", "label": "B", "destructive": false },
            { "id": "c", "label": "C", "destructive": false },
            { "id": "d", "label": "D", "destructive": false },
            { "id": "e", "label": "E", "destructive": false },
            { "id": "f", "label": "F", "destructive": false },
            { "id": "g", "label": "G", "destructive": false },
            { "id": "h", "label": "H", "destructive": false },
            { "id": "i", "label": "I", "destructive": false },
        ]);
        let view = read(&with(valid(), "actions", actions)).unwrap().view;
        let ids: Vec<&str> = view.actions.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["ok.1_-", "b", "c", "d", "e", "f", "g", "h"]);
        assert_eq!(view.actions[0].label, "Fine");
        assert!(!view.actions[0].destructive);
        assert!(read(&with(valid(), "actions", json!([])))
            .unwrap()
            .view
            .actions
            .is_empty());
    }

    #[test]
    fn action_id_rule_matches_the_documented_regex() {
        for good in ["approve", "a", "0", "x.y_z-1", &"a".repeat(64)] {
            assert!(is_valid_action_id(good), "{good}");
        }
        for bad in [
            "",
            "A",
            "_a",
            ".a",
            "a b",
            "é",
            "a/b",
            &"a".repeat(65),
            "a\n",
        ] {
            assert!(!is_valid_action_id(bad), "{bad}");
        }
    }

    #[test]
    fn unknown_fields_are_ignored_everywhere() {
        let mut doc = with(valid(), "future", json!({ "anything": [1, 2] }));
        doc["actions"][0]["icon"] = json!("check");
        doc["controller"]["pid"] = json!(12);
        read(&doc).unwrap();
    }

    #[test]
    fn html_is_kept_as_text_for_the_shells_to_render_as_text() {
        let doc = with(valid(), "title", json!("<img src=x onerror=alert(1)>"));
        assert_eq!(
            read(&doc).unwrap().view.title.as_deref(),
            Some("<img src=x onerror=alert(1)>")
        );
    }
}
