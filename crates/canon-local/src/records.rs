//! `Record<string, T>` files (`agents.json`, `pending-registrations.json`) and the field
//! plumbing shared by their typed entries.
//!
//! Entries that do not have the expected shape are kept verbatim (and written back verbatim), with
//! the reason available for display: a rewrite never loses anything the package or a newer
//! version put there.

use std::fmt;
use std::path::Path;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::error::CanonFileError;
use crate::home::CanonHome;
use crate::json::{read_json, write_json_atomic};

/// The top-level `Record<string, T>` of a Canon file, in file order.
pub struct Records<T> {
    entries: IndexMap<String, Slot<T>>,
    /// Something the user should fix about the file these came from, though it was used.
    warning: Option<String>,
}

enum Slot<T> {
    Valid(T),
    /// Not the expected shape: kept verbatim. Its content is never shown (it may hold a key).
    Unrecognized {
        raw: Value,
        reason: String,
    },
}

impl<T> Default for Records<T> {
    fn default() -> Self {
        Self {
            entries: IndexMap::new(),
            warning: None,
        }
    }
}

impl<T: Clone> Clone for Records<T> {
    fn clone(&self) -> Self {
        Self {
            entries: self
                .entries
                .iter()
                .map(|(k, v)| {
                    let slot = match v {
                        Slot::Valid(t) => Slot::Valid(t.clone()),
                        Slot::Unrecognized { raw, reason } => Slot::Unrecognized {
                            raw: raw.clone(),
                            reason: reason.clone(),
                        },
                    };
                    (k.clone(), slot)
                })
                .collect(),
            warning: self.warning.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Records<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (name, slot) in &self.entries {
            match slot {
                Slot::Valid(t) => map.entry(name, t),
                Slot::Unrecognized { reason, .. } => {
                    map.entry(name, &format_args!("<unrecognized: {reason}>"))
                }
            };
        }
        map.finish()
    }
}

impl<T> Records<T> {
    /// Reads a record file: missing → empty; corrupt or untrusted → an error with the reason.
    pub(crate) fn load(
        path: &Path,
        parse: impl Fn(Map<String, Value>) -> Result<T, String>,
    ) -> Result<Self, CanonFileError> {
        match read_json(path)? {
            None => Ok(Self::default()),
            Some(file) => {
                let mut records = Self::from_value(file.value, parse).map_err(|reason| {
                    CanonFileError::Corrupt {
                        path: path.to_path_buf(),
                        reason,
                    }
                })?;
                records.warning = file.warning;
                Ok(records)
            }
        }
    }

    /// Writes a record file the package's way (atomic, mode 0600, `JSON.stringify(v, null, 2)`).
    pub(crate) fn save(
        &self,
        home: &CanonHome,
        path: &Path,
        render: impl Fn(&T) -> Map<String, Value>,
    ) -> Result<(), CanonFileError> {
        write_json_atomic(home.root(), path, &self.to_value(render))
    }

    /// What the user should fix about the file, though it was read and used (its mode lets other
    /// users read it); `None` when nothing.
    pub fn file_warning(&self) -> Option<&str> {
        self.warning.as_deref()
    }

    /// The well-formed entry named `name`.
    pub fn get(&self, name: &str) -> Option<&T> {
        match self.entries.get(name) {
            Some(Slot::Valid(t)) => Some(t),
            _ => None,
        }
    }

    /// Whether `records[name]` is truthy in JavaScript (any entry except `null`, `false`, `0`,
    /// `""`), which is what the package checks.
    pub fn is_present(&self, name: &str) -> bool {
        match self.entries.get(name) {
            Some(Slot::Valid(_)) => true,
            Some(Slot::Unrecognized { raw, .. }) => js_truthy(raw),
            None => false,
        }
    }

    /// Well-formed entries in file order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.entries.iter().filter_map(|(k, v)| match v {
            Slot::Valid(t) => Some((k.as_str(), t)),
            Slot::Unrecognized { .. } => None,
        })
    }

    /// Entries kept verbatim because they are not the expected shape: `(name, reason)`.
    pub fn unrecognized(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().filter_map(|(k, v)| match v {
            Slot::Unrecognized { reason, .. } => Some((k.as_str(), reason.as_str())),
            Slot::Valid(_) => None,
        })
    }

    /// Number of entries, unrecognized ones included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entries at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `records[name] = value`: an existing key keeps its position, a new one goes last.
    pub fn insert(&mut self, name: impl Into<String>, value: T) {
        self.entries.insert(name.into(), Slot::Valid(value));
    }

    /// `delete records[name]`, keeping the order of the rest. Returns whether it existed.
    pub fn remove(&mut self, name: &str) -> bool {
        self.entries.shift_remove(name).is_some()
    }

    /// Mutable access to a well-formed entry.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut T> {
        match self.entries.get_mut(name) {
            Some(Slot::Valid(t)) => Some(t),
            _ => None,
        }
    }

    pub(crate) fn from_value(
        value: Value,
        parse: impl Fn(Map<String, Value>) -> Result<T, String>,
    ) -> Result<Self, String> {
        let Value::Object(map) = value else {
            return Err(format!(
                "expected an object at the top level, found {}",
                kind(&value)
            ));
        };
        let mut entries = IndexMap::new();
        for (name, raw) in map {
            let slot = match raw {
                Value::Object(obj) => match parse(obj.clone()) {
                    Ok(t) => Slot::Valid(t),
                    Err(reason) => Slot::Unrecognized {
                        raw: Value::Object(obj),
                        reason,
                    },
                },
                other => Slot::Unrecognized {
                    reason: format!("expected an object, found {}", kind(&other)),
                    raw: other,
                },
            };
            entries.insert(name, slot);
        }
        Ok(Self {
            entries,
            warning: None,
        })
    }

    pub(crate) fn to_value(&self, render: impl Fn(&T) -> Map<String, Value>) -> Value {
        let mut map = Map::new();
        for (name, slot) in &self.entries {
            let value = match slot {
                Slot::Valid(t) => Value::Object(render(t)),
                Slot::Unrecognized { raw, .. } => raw.clone(),
            };
            map.insert(name.clone(), value);
        }
        Value::Object(map)
    }
}

pub(crate) fn js_truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Pulls typed fields out of a JSON object; whatever is left (unknown fields, and optional known
/// fields of an unexpected type) stays in `rest` and is written back untouched.
pub(crate) struct FieldReader {
    pub(crate) key_order: Vec<String>,
    pub(crate) rest: Map<String, Value>,
}

impl FieldReader {
    pub(crate) fn new(obj: Map<String, Value>) -> Self {
        Self {
            key_order: obj.keys().cloned().collect(),
            rest: obj,
        }
    }

    /// A required string field.
    pub(crate) fn string(&mut self, name: &str) -> Result<String, String> {
        match self.rest.get(name) {
            Some(Value::String(_)) => match self.rest.shift_remove(name) {
                Some(Value::String(s)) => Ok(s),
                _ => unreachable!("checked above"),
            },
            Some(other) => Err(format!(
                "field {name} is {}, expected a string",
                kind(other)
            )),
            None => Err(format!("field {name} is missing")),
        }
    }

    /// An optional string field; a non-string value is left in `rest`.
    pub(crate) fn opt_string(&mut self, name: &str) -> Option<String> {
        if matches!(self.rest.get(name), Some(Value::String(_))) {
            if let Some(Value::String(s)) = self.rest.shift_remove(name) {
                return Some(s);
            }
        }
        None
    }

    /// An optional array of strings; anything else is left in `rest`.
    pub(crate) fn opt_strings(&mut self, name: &str) -> Option<Vec<String>> {
        let ok = match self.rest.get(name) {
            Some(Value::Array(items)) => items.iter().all(Value::is_string),
            _ => false,
        };
        if !ok {
            return None;
        }
        match self.rest.shift_remove(name) {
            Some(Value::Array(items)) => Some(
                items
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::String(s) => Some(s),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        }
    }

    /// An optional integer (a JS number with no fraction); anything else is left in `rest`.
    pub(crate) fn opt_integer(&mut self, name: &str) -> Option<i64> {
        let n = match self.rest.get(name) {
            Some(Value::Number(n)) => n.as_i64()?,
            _ => return None,
        };
        self.rest.shift_remove(name);
        Some(n)
    }

    /// An optional object; anything else is left in `rest`.
    pub(crate) fn opt_object(&mut self, name: &str) -> Option<Map<String, Value>> {
        if matches!(self.rest.get(name), Some(Value::Object(_))) {
            if let Some(Value::Object(m)) = self.rest.shift_remove(name) {
                return Some(m);
            }
        }
        None
    }
}

/// Lays out an entry: keys that were in the file keep their file order, new known keys follow in
/// the package's declaration order, then unknown keys added in memory. This reproduces what
/// `{ ...existing, ...patch }` gives in JavaScript.
pub(crate) fn layout(
    key_order: &[String],
    known: Vec<(&'static str, Option<Value>)>,
    extra: &Map<String, Value>,
) -> Map<String, Value> {
    let mut known: IndexMap<&'static str, Value> = known
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
    let mut out = Map::new();
    for key in key_order {
        if let Some(v) = known.shift_remove(key.as_str()) {
            out.insert(key.clone(), v);
        } else if let Some(v) = extra.get(key) {
            out.insert(key.clone(), v.clone());
        }
    }
    for (k, v) in known {
        out.insert(k.to_string(), v);
    }
    for (k, v) in extra {
        if !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}
