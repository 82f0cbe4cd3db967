//! A session's conversation, read from its transcript for the page `attach` opens.
//!
//! The transcript's path comes from the hook input and its content from the model, the user and
//! every tool's output, so both are untrusted. The file is opened without following a link or
//! blocking, and read only if the opened file is a regular file of the user's own
//! ([`read_tail`]); only its last [`TAIL_BYTES`] are read, only the last [`MAX_MESSAGES`]
//! messages kept, each capped at [`MESSAGE_CAP`] characters, and every text is made plain
//! ([`plain`]: no control characters, terminal escape sequences or bidirectional overrides).
//! The page then sets it with `textContent`, never as markup.
//!
//! Reading, capping and making plain is this one path for every agent; only the parsing of one
//! line of the agent's format differs ([`crate::agent::Agent::transcript_messages`]): Claude
//! Code's is [`entry_messages`] here, Codex's rollout is `crate::codex::rollout_messages`.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use serde::Serialize;
use serde_json::Value;

use crate::event::{cap, MAX_PATH};

/// The largest part of a transcript read, from its end: enough for the last screens of a
/// conversation, small enough to read on every refresh of the page.
pub const TAIL_BYTES: u64 = 512 * 1024;
/// The most messages the page shows: the conversation's recent part.
pub const MAX_MESSAGES: usize = 200;
/// The longest text kept of one message.
pub const MESSAGE_CAP: usize = 8000;

/// Who said it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The user's prompt.
    User,
    /// The agent's text.
    Assistant,
    /// A tool the agent called (its name and what it works on).
    Tool,
}

/// One message, plain text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Who.
    pub role: Role,
    /// What, capped and plain.
    pub text: String,
}

/// The conversation's recent part.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Conversation {
    /// Oldest first.
    pub messages: Vec<Message>,
    /// True when older messages were left out (the tail or message cap).
    pub truncated: bool,
    /// Why there is no conversation to show, when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<&'static str>,
}

/// The last `max` bytes of `path` when it is an absolute path to a regular file of the user's
/// own, opened without following a link or blocking; and whether the read started mid-file.
pub fn read_tail(path: &Path, max: u64) -> Option<(Vec<u8>, bool)> {
    if !path.is_absolute() || path.as_os_str().len() > MAX_PATH {
        return None;
    }
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let mut file = std::fs::File::from(rustix::fs::open(path, flags, Mode::empty()).ok()?);
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != live_runtime::effective_uid() {
        return None;
    }
    let start = meta.len().saturating_sub(max);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::new();
    file.take(max).read_to_end(&mut tail).ok()?;
    Some((tail, start > 0))
}

/// The messages of one transcript line, in an agent's format.
pub type LineMessages = fn(&str) -> Vec<Message>;

/// The conversation in the transcript at `path`, each line read by `line_messages`, or why
/// there is none.
pub fn conversation(path: Option<&Path>, line_messages: LineMessages) -> Conversation {
    let Some(path) = path else {
        return unavailable("The session has not named its transcript yet.");
    };
    let Some((tail, cut)) = read_tail(path, TAIL_BYTES) else {
        return unavailable(
            "The session's transcript cannot be read (it must be a regular file of yours).",
        );
    };
    let text = String::from_utf8_lossy(&tail);
    let mut lines = text.lines();
    if cut {
        // The first line read is a part of one.
        lines.next();
    }
    let mut messages: Vec<Message> = lines.flat_map(line_messages).collect();
    let truncated = cut || messages.len() > MAX_MESSAGES;
    if messages.len() > MAX_MESSAGES {
        messages.drain(..messages.len() - MAX_MESSAGES);
    }
    Conversation {
        messages,
        truncated,
        unavailable: None,
    }
}

fn unavailable(why: &'static str) -> Conversation {
    Conversation {
        unavailable: Some(why),
        ..Conversation::default()
    }
}

/// `text` as a message: made plain, trimmed and capped; `None` when nothing is left.
pub fn message(role: Role, text: &str) -> Option<Message> {
    let text = plain(text);
    let text = text.trim();
    (!text.is_empty()).then(|| Message {
        role,
        text: cap(text, MESSAGE_CAP),
    })
}

/// The messages of one line of a Claude Code transcript (JSON lines whose `type` is `user` or
/// `assistant` and whose `message.content` is a string or a list of blocks: `text`,
/// `tool_use`, `tool_result`…): its texts, and the tools it called.
pub fn entry_messages(line: &str) -> Vec<Message> {
    let Ok(entry) = serde_json::from_str::<Value>(line) else {
        return Vec::new();
    };
    let role = match entry.get("type").and_then(Value::as_str) {
        Some("user") => Role::User,
        Some("assistant") => Role::Assistant,
        _ => return Vec::new(),
    };
    if entry.get("isMeta").and_then(Value::as_bool) == Some(true) {
        return Vec::new();
    }
    match entry.pointer("/message/content") {
        Some(Value::String(text)) => message(role, text).into_iter().collect(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| match block.get("type").and_then(Value::as_str) {
                Some("text") => message(role, block.get("text")?.as_str()?),
                Some("tool_use") => {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("tool");
                    let input = block.get("input").and_then(Value::as_object);
                    let what = input.and_then(|i| {
                        ["command", "file_path", "url", "pattern", "path", "query"]
                            .iter()
                            .find_map(|key| i.get(*key).and_then(Value::as_str))
                    });
                    match what {
                        Some(what) => message(Role::Tool, &format!("{name}: {what}")),
                        None => message(Role::Tool, name),
                    }
                }
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `text` without what could rewrite a terminal or reorder what is shown: terminal escape
/// sequences (CSI, OSC and two-character ones) are removed whole, every other control character
/// but `\n` and `\t` is removed, and so are the bidirectional formatting characters.
pub fn plain(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC (a title, a hyperlink): up to BEL or ST.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\n' | '\t' => out.push(c),
            '\r' if chars.peek() == Some(&'\n') => {}
            c if c.is_control() || is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_has_no_escapes_controls_or_bidi_overrides() {
        assert_eq!(
            plain("a\u{1b}[31mred\u{1b}[0m b\u{1b}]0;title\u{7}c\u{1b}]8;;x\u{1b}\\d\r\ne\u{202e}f\u{0}"),
            "ared bcd\nef"
        );
    }

    #[test]
    fn a_symlink_or_a_relative_path_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("t.jsonl");
        std::fs::write(&file, "{}\n").unwrap();
        let link = dir.path().join("link.jsonl");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(read_tail(&file, 10).is_some());
        assert!(read_tail(&link, 10).is_none());
        assert!(read_tail(Path::new("t.jsonl"), 10).is_none());
        assert!(conversation(Some(&link), entry_messages)
            .unavailable
            .is_some());
    }
}
