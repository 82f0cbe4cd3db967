//! `runtimes/<hash>.json`: the local runtime catalog (`buildLocalRuntimeId`,
//! `readLocalRuntimeEntry`, `upsertLocalRuntimeEntry`, `heartbeatLocalRuntimeEntry`,
//! `markLocalRuntimeStopped`, `removeLocalRuntimeEntry`, `listLocalRuntimeEntries`).
//!
//! Mutations work on the raw JSON objects exactly like the package's object spreads, so fields
//! this version does not know survive and keys keep their order.

use std::fs;
use std::io::ErrorKind;

use serde_json::{Map, Value};

use crate::error::{CanonFileError, FileProblem};
use crate::home::{node_resolve, short_hash, CanonHome};
use crate::json::{exclusive, iso_now, read_json, write_json_atomic};
use crate::profiles::load_profiles;
use crate::records::FieldReader;

/// `LocalRuntimeStatus`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LocalRuntimeStatus {
    /// `running`.
    Running,
    /// `offline`.
    Offline,
    /// `stale`: recorded as running but its pid is dead.
    Stale,
    /// `manual`.
    Manual,
    /// `embedded`.
    Embedded,
    /// A value this version does not know, kept as written.
    Other(String),
}

impl LocalRuntimeStatus {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Running => "running",
            Self::Offline => "offline",
            Self::Stale => "stale",
            Self::Manual => "manual",
            Self::Embedded => "embedded",
            Self::Other(s) => s,
        }
    }

    /// Parses the wire string.
    pub fn parse(s: &str) -> Self {
        match s {
            "running" => Self::Running,
            "offline" => Self::Offline,
            "stale" => Self::Stale,
            "manual" => Self::Manual,
            "embedded" => Self::Embedded,
            other => Self::Other(other.to_owned()),
        }
    }
}

/// Serialized as the package writes it (`"running"`, or the unknown value as written).
impl serde::Serialize for LocalRuntimeStatus {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// `LocalRuntimeReviveCapability`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReviveCapability {
    /// `revivable`.
    Revivable,
    /// `manual`.
    Manual,
    /// `embedded`.
    Embedded,
    /// `missing-profile`: the entry names a profile absent from `agents.json`.
    MissingProfile,
    /// A value this version does not know, kept as written.
    Other(String),
}

impl ReviveCapability {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Revivable => "revivable",
            Self::Manual => "manual",
            Self::Embedded => "embedded",
            Self::MissingProfile => "missing-profile",
            Self::Other(s) => s,
        }
    }

    /// Parses the wire string.
    pub fn parse(s: &str) -> Self {
        match s {
            "revivable" => Self::Revivable,
            "manual" => Self::Manual,
            "embedded" => Self::Embedded,
            "missing-profile" => Self::MissingProfile,
            other => Self::Other(other.to_owned()),
        }
    }
}

/// Serialized as the package writes it (`"missing-profile"`, or the unknown value as written).
impl serde::Serialize for ReviveCapability {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// `LocalRuntimeCatalogEntry`. No field is secret.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalRuntimeCatalogEntry {
    /// `id` (see [`build_local_runtime_id`]).
    pub id: String,
    /// `runtime` (`LocalRuntimeKind`: an `AgentClientType` or `sdk`).
    pub runtime: String,
    /// `profile` (`null` for manual runtimes).
    pub profile: Option<String>,
    /// `agentId`.
    pub agent_id: Option<String>,
    /// `agentName`.
    pub agent_name: Option<String>,
    /// `cwd`.
    pub cwd: String,
    /// `baseCwd`.
    pub base_cwd: Option<String>,
    /// `workspaceRoots`.
    pub workspace_roots: Option<Vec<String>>,
    /// `workspaces`.
    pub workspaces: Option<Vec<String>>,
    /// `launchCommand`.
    pub launch_command: Vec<String>,
    /// `pid`.
    pub pid: Option<i64>,
    /// `status`.
    pub status: LocalRuntimeStatus,
    /// `reviveCapability`.
    pub revive_capability: ReviveCapability,
    /// `surfaceMode` (`host`, `channel`, `embedded`).
    pub surface_mode: Option<String>,
    /// `lastStartedAt`.
    pub last_started_at: Option<String>,
    /// `lastHeartbeatAt`.
    pub last_heartbeat_at: Option<String>,
    /// `lastStoppedAt`.
    pub last_stopped_at: Option<String>,
    /// `lastAuthError`.
    pub last_auth_error: Option<String>,
    /// `lastError`.
    pub last_error: Option<String>,
    /// `sessions` (`Record<string, LocalRuntimeSessionState>`), kept as JSON.
    pub sessions: Option<Map<String, Value>>,
    /// Unknown fields (and known ones of an unexpected type), written back untouched.
    pub extra: Map<String, Value>,
}

impl LocalRuntimeCatalogEntry {
    /// An entry with the required fields; the optional ones are `None`.
    pub fn new(
        id: impl Into<String>,
        runtime: impl Into<String>,
        profile: Option<String>,
        cwd: impl Into<String>,
        launch_command: Vec<String>,
        status: LocalRuntimeStatus,
        revive_capability: ReviveCapability,
    ) -> Self {
        Self {
            id: id.into(),
            runtime: runtime.into(),
            profile,
            agent_id: None,
            agent_name: None,
            cwd: cwd.into(),
            base_cwd: None,
            workspace_roots: None,
            workspaces: None,
            launch_command,
            pid: None,
            status,
            revive_capability,
            surface_mode: None,
            last_started_at: None,
            last_heartbeat_at: None,
            last_stopped_at: None,
            last_auth_error: None,
            last_error: None,
            sessions: None,
            extra: Map::new(),
        }
    }

    /// Parses one catalog object; the error says which field is wrong.
    pub fn from_json(value: Value) -> Result<Self, String> {
        let Value::Object(obj) = value else {
            return Err(format!(
                "expected an object, found {}",
                crate::records::kind(&value)
            ));
        };
        let mut r = FieldReader::new(obj);
        let id = r.string("id")?;
        let runtime = r.string("runtime")?;
        let profile = match r.rest.get("profile") {
            Some(Value::Null) => {
                r.rest.shift_remove("profile");
                None
            }
            _ => r.opt_string("profile"),
        };
        let cwd = r.string("cwd")?;
        let launch_command = r.opt_strings("launchCommand").ok_or_else(|| {
            "field launchCommand is missing or not an array of strings".to_owned()
        })?;
        let status = LocalRuntimeStatus::parse(&r.string("status")?);
        let revive_capability = ReviveCapability::parse(&r.string("reviveCapability")?);
        Ok(Self {
            id,
            runtime,
            profile,
            agent_id: r.opt_string("agentId"),
            agent_name: r.opt_string("agentName"),
            cwd,
            base_cwd: r.opt_string("baseCwd"),
            workspace_roots: r.opt_strings("workspaceRoots"),
            workspaces: r.opt_strings("workspaces"),
            launch_command,
            pid: r.opt_integer("pid"),
            status,
            revive_capability,
            surface_mode: r.opt_string("surfaceMode"),
            last_started_at: r.opt_string("lastStartedAt"),
            last_heartbeat_at: r.opt_string("lastHeartbeatAt"),
            last_stopped_at: r.opt_string("lastStoppedAt"),
            last_auth_error: r.opt_string("lastAuthError"),
            last_error: r.opt_string("lastError"),
            sessions: r.opt_object("sessions"),
            extra: r.rest,
        })
    }

    /// The JSON object, keys in the package's declaration order, unknown fields last.
    pub fn to_json(&self) -> Map<String, Value> {
        let s = |v: &Option<String>| v.clone().map(Value::String);
        let strings = |v: &Option<Vec<String>>| {
            v.as_ref()
                .map(|items| Value::Array(items.iter().cloned().map(Value::String).collect()))
        };
        crate::records::layout(
            &[],
            vec![
                ("id", Some(Value::String(self.id.clone()))),
                ("runtime", Some(Value::String(self.runtime.clone()))),
                (
                    "profile",
                    Some(self.profile.clone().map_or(Value::Null, Value::String)),
                ),
                ("agentId", s(&self.agent_id)),
                ("agentName", s(&self.agent_name)),
                ("cwd", Some(Value::String(self.cwd.clone()))),
                ("baseCwd", s(&self.base_cwd)),
                ("workspaceRoots", strings(&self.workspace_roots)),
                ("workspaces", strings(&self.workspaces)),
                ("launchCommand", strings(&Some(self.launch_command.clone()))),
                ("pid", self.pid.map(Value::from)),
                (
                    "status",
                    Some(Value::String(self.status.as_str().to_owned())),
                ),
                (
                    "reviveCapability",
                    Some(Value::String(self.revive_capability.as_str().to_owned())),
                ),
                ("surfaceMode", s(&self.surface_mode)),
                ("lastStartedAt", s(&self.last_started_at)),
                ("lastHeartbeatAt", s(&self.last_heartbeat_at)),
                ("lastStoppedAt", s(&self.last_stopped_at)),
                ("lastAuthError", s(&self.last_auth_error)),
                ("lastError", s(&self.last_error)),
                ("sessions", self.sessions.clone().map(Value::Object)),
            ],
            &self.extra,
        )
    }
}

/// `buildLocalRuntimeId({runtime, profile, cwd, launchCommand})`:
/// `${runtime}:${profile ?? 'manual'}:${shortHash(`${resolve(cwd)}:${launchCommand.join('\0')}`)}`.
/// `cwd` is resolved like Node's `path.resolve` (lexically, against the current directory).
pub fn build_local_runtime_id(
    runtime: &str,
    profile: Option<&str>,
    cwd: &str,
    launch_command: &[String],
) -> Result<String, CanonFileError> {
    let resolved = node_resolve(cwd)?;
    let profile = profile.unwrap_or("manual");
    Ok(format!(
        "{runtime}:{profile}:{}",
        short_hash(&format!("{resolved}:{}", launch_command.join("\0")))
    ))
}

/// The raw object of `id`'s file, if it exists, parses, and its `id` matches.
fn read_raw(home: &CanonHome, id: &str) -> Result<Option<Map<String, Value>>, CanonFileError> {
    match read_json(&home.runtime_path(id))?.map(|file| file.value) {
        Some(Value::Object(obj)) if obj.get("id").and_then(Value::as_str) == Some(id) => {
            Ok(Some(obj))
        }
        _ => Ok(None),
    }
}

/// `readLocalRuntimeEntry(id)`: `None` when missing or when the file's `id` differs; a corrupt
/// file is an error with the reason (the package returns `null`).
pub fn read_local_runtime_entry(
    home: &CanonHome,
    id: &str,
) -> Result<Option<LocalRuntimeCatalogEntry>, CanonFileError> {
    let path = home.runtime_path(id);
    match read_raw(home, id)? {
        None => Ok(None),
        Some(obj) => LocalRuntimeCatalogEntry::from_json(Value::Object(obj))
            .map(Some)
            .map_err(|reason| CanonFileError::Corrupt { path, reason }),
    }
}

/// `{ ...existing, ...entry, sessions: { ...existing.sessions, ...entry.sessions } }`, written.
/// A corrupt existing file counts as absent, as in the package.
fn upsert_raw(
    home: &CanonHome,
    entry: Map<String, Value>,
    undefined: &[&str],
) -> Result<Map<String, Value>, CanonFileError> {
    let id = entry
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let mut next = read_raw(home, &id).ok().flatten().unwrap_or_default();
    let mut sessions = match next.get("sessions") {
        Some(Value::Object(s)) => s.clone(),
        _ => Map::new(),
    };
    if let Some(Value::Object(s)) = entry.get("sessions") {
        for (k, v) in s {
            sessions.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in entry {
        next.insert(k, v);
    }
    // Keys set to `undefined` in the package's spread: present in neither source, dropped.
    for key in undefined {
        next.shift_remove(*key);
    }
    next.insert("sessions".into(), Value::Object(sessions));
    write_json_atomic(
        &home.runtimes_dir(),
        &home.runtime_path(&id),
        &Value::Object(next.clone()),
    )?;
    Ok(next)
}

fn parsed(
    home: &CanonHome,
    id: &str,
    obj: Map<String, Value>,
) -> Result<LocalRuntimeCatalogEntry, CanonFileError> {
    LocalRuntimeCatalogEntry::from_json(Value::Object(obj)).map_err(|reason| {
        CanonFileError::Corrupt {
            path: home.runtime_path(id),
            reason,
        }
    })
}

/// `upsertLocalRuntimeEntry(entry)`: merges onto the existing file (unknown fields and key order
/// kept, sessions merged) and returns the written entry.
pub fn upsert_local_runtime_entry(
    home: &CanonHome,
    entry: &LocalRuntimeCatalogEntry,
) -> Result<LocalRuntimeCatalogEntry, CanonFileError> {
    exclusive(|| {
        let next = upsert_raw(home, entry.to_json(), &[])?;
        parsed(home, &entry.id, next)
    })
}

/// `heartbeatLocalRuntimeEntry(id, patch)`: `status: running`, `pid: patch.pid ?? <this pid>`,
/// `lastHeartbeatAt: now`. `patch` is a `Partial<LocalRuntimeCatalogEntry>` as JSON. `None` if
/// there is no entry.
pub fn heartbeat_local_runtime_entry(
    home: &CanonHome,
    id: &str,
    patch: Map<String, Value>,
) -> Result<Option<LocalRuntimeCatalogEntry>, CanonFileError> {
    exclusive(|| {
        let Some(mut next) = read_raw(home, id)? else {
            return Ok(None);
        };
        let pid = patch
            .get("pid")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| Value::from(std::process::id()));
        for (k, v) in patch {
            next.insert(k, v);
        }
        next.insert("id".into(), Value::String(id.to_owned()));
        next.insert("status".into(), Value::String("running".into()));
        next.insert("pid".into(), pid);
        next.insert("lastHeartbeatAt".into(), Value::String(iso_now()));
        let written = upsert_raw(home, next, &[])?;
        parsed(home, id, written).map(Some)
    })
}

/// `markLocalRuntimeStopped(id, patch)`: pid removed, `status` `embedded` for embedded runtimes
/// else `offline`, `lastStoppedAt: now`. `None` if there is no entry.
pub fn mark_local_runtime_stopped(
    home: &CanonHome,
    id: &str,
    patch: Map<String, Value>,
) -> Result<Option<LocalRuntimeCatalogEntry>, CanonFileError> {
    exclusive(|| {
        let Some(existing) = read_raw(home, id)? else {
            return Ok(None);
        };
        let status = if existing.get("reviveCapability").and_then(Value::as_str) == Some("embedded")
        {
            "embedded"
        } else {
            "offline"
        };
        let mut next = existing;
        for (k, v) in patch {
            next.insert(k, v);
        }
        next.insert("id".into(), Value::String(id.to_owned()));
        next.insert("status".into(), Value::String(status.into()));
        next.insert("lastStoppedAt".into(), Value::String(iso_now()));
        let written = upsert_raw(home, next, &["pid"])?;
        parsed(home, id, written).map(Some)
    })
}

/// `removeLocalRuntimeEntry(id)`: a missing file is fine.
pub fn remove_local_runtime_entry(home: &CanonHome, id: &str) -> Result<(), CanonFileError> {
    let path = home.runtime_path(id);
    match fs::remove_file(&path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(CanonFileError::Write { path, source: e }),
        _ => Ok(()),
    }
}

/// [`remove_local_runtime_entry`] for a user's "forget": the file is read the receipt way first
/// (no link followed, regular files of ours only, size capped), and removed only if it parses
/// as the entry `id` and `still(&entry)` holds for it as it is now (the caller's check of what
/// the user confirmed). What goes is exactly what the package removes: that one file; other
/// entries, `agents.json`, locks and pending registrations are not opened for writing.
/// `Ok(false)` when there is no such entry or `still` says it changed; a refused or corrupt file
/// is an error with the reason, and stays.
pub fn remove_local_runtime_entry_checked(
    home: &CanonHome,
    id: &str,
    still: impl FnOnce(&LocalRuntimeCatalogEntry) -> bool,
) -> Result<bool, CanonFileError> {
    exclusive(|| {
        let Some(entry) = read_local_runtime_entry(home, id)? else {
            return Ok(false);
        };
        if !still(&entry) {
            return Ok(false);
        }
        remove_local_runtime_entry(home, id)?;
        Ok(true)
    })
}

/// What [`list_local_runtime_entries`] found.
#[derive(Debug, Clone, Default)]
pub struct RuntimeCatalogListing {
    /// Entries after `deriveRuntimeState`, newest first
    /// (`lastHeartbeatAt ?? lastStartedAt ?? lastStoppedAt`, descending).
    pub entries: Vec<LocalRuntimeCatalogEntry>,
    /// Files that were skipped (untrusted, corrupt, unreadable, wrong shape) and why; also
    /// `agents.json` if it could not be read while deriving `missing-profile`.
    pub problems: Vec<FileProblem>,
    /// Files that were used but that the user should fix (their mode lets other users read
    /// them), `agents.json` included.
    pub warnings: Vec<FileProblem>,
}

/// `listLocalRuntimeEntries({runtime})`: every `*.json` in `runtimes/`, state derived (a
/// `running` entry with a dead pid is `stale`; a profile missing from `agents.json` makes it
/// `missing-profile`). Every file is read the receipt way (no link followed, no blocking open,
/// regular files of ours only, size and depth capped): bad files are reported in `problems`, and
/// files others may read in `warnings`, instead of being dropped or trusted silently. A bad file
/// never hides the good ones.
pub fn list_local_runtime_entries(
    home: &CanonHome,
    runtime: Option<&str>,
) -> Result<RuntimeCatalogListing, CanonFileError> {
    let dir = home.runtimes_dir();
    let mut listing = RuntimeCatalogListing::default();
    if !crate::home::check_canon_dir(&dir, "runtimes")? {
        return Ok(listing);
    }
    let read_dir = match fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(listing),
        Err(source) => return Err(CanonFileError::Read { path: dir, source }),
    };
    let profiles = match load_profiles(home) {
        Ok(p) => {
            if let Some(warning) = p.file_warning() {
                listing.warnings.push(FileProblem {
                    path: home.agents_path(),
                    reason: warning.to_owned(),
                });
            }
            Some(p)
        }
        Err(e) => {
            listing.problems.push(FileProblem::from(&e));
            None
        }
    };
    let mut names: Vec<_> = read_dir
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let file = match read_json(&path) {
            Ok(Some(file)) => file,
            Ok(None) => continue, // removed between readdir and read
            Err(e) => {
                listing.problems.push(FileProblem::from(&e));
                continue;
            }
        };
        if let Some(reason) = file.warning {
            listing.warnings.push(FileProblem {
                path: path.clone(),
                reason,
            });
        }
        let mut entry = match LocalRuntimeCatalogEntry::from_json(file.value) {
            Ok(e) => e,
            Err(reason) => {
                listing.problems.push(FileProblem { path, reason });
                continue;
            }
        };
        if runtime.is_some_and(|r| r != entry.runtime) {
            continue;
        }
        if entry.status == LocalRuntimeStatus::Running {
            if let Some(pid) = entry.pid.filter(|p| *p != 0) {
                #[allow(clippy::cast_precision_loss)]
                if !crate::process::is_process_alive(pid as f64) {
                    entry.status = LocalRuntimeStatus::Stale;
                }
            }
        }
        if let Some(profile) = entry.profile.as_deref().filter(|p| !p.is_empty()) {
            if !profiles.as_ref().is_some_and(|p| p.is_present(profile)) {
                entry.revive_capability = ReviveCapability::MissingProfile;
            }
        }
        listing.entries.push(entry);
    }
    let key = |e: &LocalRuntimeCatalogEntry| {
        e.last_heartbeat_at
            .clone()
            .or_else(|| e.last_started_at.clone())
            .or_else(|| e.last_stopped_at.clone())
            .unwrap_or_default()
    };
    listing.entries.sort_by_key(|e| std::cmp::Reverse(key(e)));
    Ok(listing)
}
