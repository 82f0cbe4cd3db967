//! `JSON.stringify` byte-compatibility and the package's atomic write.
//!
//! `serde_json` and V8 agree on string escaping (both escape `"`, `\`, and the C0 controls —
//! `\b \f \n \r \t` by name, the rest as lowercase `\u00xx` — and both emit `/`, U+2028/U+2029
//! and all non-ASCII as raw UTF-8). They disagree on two things this module handles itself:
//! numbers (V8 prints `1` for `1.0` and `1e+21` for `1e21`) and key order (V8 lists array-index
//! keys such as `"2"` first, in ascending order, before the other keys in insertion order).
//!
//! Reading and writing go through `live_runtime::owned_file`, the receipt directory's own reader
//! and writer: no link followed, no blocking open, regular files owned by the user only, size and
//! depth capped; exclusive-create, no-follow temp file renamed into place.

use std::fs;
use std::io::ErrorKind;
use std::path::Path;
use std::sync::Mutex;

use live_runtime::owned_file::{parse_json, read_owned_file, FileRules, ModeRule, StagedFile};
use serde_json::{Map, Value};

use crate::error::CanonFileError;

/// Serializes in-process read-modify-write cycles on Canon files, so two tasks of this process
/// never interleave (the package itself has no cross-process locking for these files).
pub(crate) static FILE_LOCK: Mutex<()> = Mutex::new(());

/// Runs `f` while holding [`FILE_LOCK`].
pub(crate) fn exclusive<T>(f: impl FnOnce() -> T) -> T {
    let _guard = FILE_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    f()
}

/// `JSON.stringify(value, null, 2)`.
pub fn to_js_json_pretty(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Some(0));
    out
}

/// `JSON.stringify(value)`.
pub fn to_js_json_compact(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, None);
    out
}

fn newline_indent(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn write_value(out: &mut String, value: &Value, level: Option<usize>) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number_from_json(n)),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(l) = level {
                    newline_indent(out, l + 1);
                }
                write_value(out, item, level.map(|l| l + 1));
            }
            if let Some(l) = level {
                newline_indent(out, l);
            }
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, (key, item)) in js_key_order(map).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if let Some(l) = level {
                    newline_indent(out, l + 1);
                }
                write_string(out, key);
                out.push(':');
                if level.is_some() {
                    out.push(' ');
                }
                write_value(out, item, level.map(|l| l + 1));
            }
            if let Some(l) = level {
                newline_indent(out, l);
            }
            out.push('}');
        }
    }
}

/// V8's own-property order: array indices (canonical integers below 2^32 - 1) ascending first,
/// then the remaining keys in insertion order.
fn js_key_order(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut indices: Vec<(u32, &String, &Value)> = Vec::new();
    let mut others = Vec::new();
    for (k, v) in map {
        match array_index(k) {
            Some(i) => indices.push((i, k, v)),
            None => others.push((k, v)),
        }
    }
    indices.sort_by_key(|(i, _, _)| *i);
    indices
        .into_iter()
        .map(|(_, k, v)| (k, v))
        .chain(others)
        .collect()
}

fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse::<u32>().ok().filter(|i| *i != u32::MAX)
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn js_number_from_json(n: &serde_json::Number) -> String {
    // JS numbers are doubles: integers beyond 2^53 round exactly as they would in Node.
    #[allow(clippy::cast_precision_loss)]
    let f = if let Some(i) = n.as_i64() {
        i as f64
    } else if let Some(u) = n.as_u64() {
        u as f64
    } else {
        n.as_f64().unwrap_or(f64::NAN)
    };
    js_number(f)
}

/// `Number.prototype.toString()` (ECMA-262 Number::toString, radix 10); non-finite values
/// become `null` as in `JSON.stringify`.
pub(crate) fn js_number(f: f64) -> String {
    if !f.is_finite() {
        return "null".into();
    }
    if f == 0.0 {
        return "0".into();
    }
    let sci = format!("{:e}", f.abs()); // shortest round-trip digits, e.g. "1.2345e-7"
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    let k = digits.len() as i32;
    let n = exp + 1;
    let mut out = String::new();
    if f < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.push_str(&"0".repeat((n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.push_str(&"0".repeat((-n) as usize));
        out.push_str(&digits);
    } else {
        let e = n - 1;
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if e < 0 { '-' } else { '+' });
        out.push_str(&e.abs().to_string());
    }
    out
}

/// `new Date().toISOString()`: UTC, millisecond precision.
pub fn iso_now() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.millisecond()
    )
}

fn date_now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Largest `$CANON_HOME` file that is read. The package's files are a few KiB (a profile or a
/// catalog entry is a few hundred bytes; a catalog entry's `sessions` grow by about 300 bytes per
/// conversation), so 1 MiB holds thousands of each, while a hostile or corrupt file (a 100 MB
/// sparse file, `/dev/zero` behind a link) costs no more than that on any read.
pub const MAX_CANON_FILE_BYTES: u64 = 1024 * 1024;

/// How every `$CANON_HOME` file is read (the receipt reader's rules, with the package's 0600 as a
/// warning rather than a refusal, see [`ModeRule::WarnWhenReadable`]).
pub(crate) const CANON_FILE_RULES: FileRules = FileRules {
    singular: "Canon file",
    plural: "Canon files",
    max_bytes: MAX_CANON_FILE_BYTES,
    mode: ModeRule::WarnWhenReadable,
};

/// How many temp names a write tries before giving up: the package's own name first, then
/// randomized ones, in case a leftover (or planted) file already holds it.
const TEMP_NAME_ATTEMPTS: u32 = 4;

/// The package's `writeJsonFile`/`writeJsonAtomic`: create `dir` recursively, write
/// `JSON.stringify(value, null, 2)` (no trailing newline) to `${path}.${pid}.${Date.now()}.tmp`
/// with mode 0600, then rename it over `path`. The temp file is created exclusively and without
/// following links ([`StagedFile::write_via`]), so an existing file or link at that name is never
/// written through: another name is tried instead.
pub(crate) fn write_json_atomic(
    dir: &Path,
    path: &Path,
    value: &Value,
) -> Result<(), CanonFileError> {
    let write_err = |p: &Path| {
        let p = p.to_path_buf();
        move |source| CanonFileError::Write { path: p, source }
    };
    fs::create_dir_all(dir).map_err(write_err(dir))?;
    let bytes = to_js_json_pretty(value);
    let mut attempt = 0;
    let staged = loop {
        let mut temp = path.as_os_str().to_owned();
        temp.push(format!(".{}.{}", std::process::id(), date_now_ms()));
        if attempt > 0 {
            temp.push(format!(".{:08x}", rand_u32()));
        }
        temp.push(".tmp");
        match StagedFile::write_via(Path::new(&temp), path, bytes.as_bytes()) {
            Ok(staged) => break staged,
            Err(e) if e.kind() == ErrorKind::AlreadyExists && attempt + 1 < TEMP_NAME_ATTEMPTS => {
                attempt += 1;
            }
            Err(source) => return Err(write_err(path)(source)),
        }
    };
    staged.publish().map_err(write_err(path))
}

fn rand_u32() -> u32 {
    // Only needs to differ from a name that already exists; uuid's v4 is random enough.
    uuid::Uuid::new_v4().as_fields().0
}

/// A parsed `$CANON_HOME` file, and what the user should know about it even though it was used.
pub(crate) struct JsonFile {
    pub(crate) value: Value,
    /// Set when the file was used despite a problem (its mode lets other users read it).
    pub(crate) warning: Option<String>,
}

/// Reads and parses a JSON file the receipt way ([`read_owned_file`]). `Ok(None)` when it does
/// not exist; a file that is not a regular file of ours within the cap is
/// [`CanonFileError::Refused`]; one that is not JSON is [`CanonFileError::Corrupt`].
pub(crate) fn read_json(path: &Path) -> Result<Option<JsonFile>, CanonFileError> {
    let file = match read_owned_file(path, &CANON_FILE_RULES) {
        Ok(Some(file)) => file,
        Ok(None) => return Ok(None),
        Err(refused) => {
            return Err(CanonFileError::Refused {
                path: path.to_path_buf(),
                reason: refused.reason,
            })
        }
    };
    // Node reads with 'utf-8', replacing invalid sequences; it keeps a leading BOM, which
    // JSON.parse rejects and so does serde_json.
    let text = String::from_utf8_lossy(&file.bytes);
    let value = parse_json(&text).map_err(|reason| CanonFileError::Corrupt {
        path: path.to_path_buf(),
        reason,
    })?;
    Ok(Some(JsonFile {
        value,
        warning: file.warning,
    }))
}
