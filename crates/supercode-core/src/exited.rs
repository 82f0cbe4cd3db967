//! Runtimes that stopped unexpectedly and that nothing else shows any more: the tray's record
//! of them, so that one does not vanish from the tray, the window and `list` but stays as
//! `exited`, with its last state, until the user dismisses it (issue 31).
//!
//! Which runtimes: a runtime died when reconciliation removed its receipt (a runtime that stops
//! cleanly removes its own receipt first; see `docs/ARCHITECTURE.md`, "Reading and reconciling
//! receipts"), the same rule by which the watcher tells "Runtime stopped unexpectedly". One that
//! the inventory still shows afterwards (a Canon runtime, as its catalog entry: stale, with
//! Revive when it can be revived) needs no record; the others get one. Whoever reconciles
//! records it ([`record`]): the app's watcher, with the agent's last state it showed, or
//! the CLI's `list` (whether or not the app runs), which never saw a state.
//!
//! The record is `<state dir>/exited-runtimes.json`, `{"version":1,"runtimes":[...]}`, newest
//! first, at most [`MAX_EXITED`] of them: written atomically (0600, temp file and rename) under
//! an exclusive lock on `exited-runtimes.lock`, so the app and the CLI reconciling at the same
//! moment both keep what they recorded. It is read as every file we did not write ourselves is
//! (owner only, no link followed, size and depth capped), and a file that cannot be read is
//! reported as ignored with the reason and is never overwritten: nothing in it is lost, and
//! deaths are not recorded until it is fixed or removed.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use live_runtime::owned_file::{
    parse_json, read_owned_file, write_atomically, FileRules, ModeRule,
};
use live_runtime::LiveRuntimeRecord;
use serde::{Deserialize, Serialize};

use crate::view::{
    ActionAvailability, AgentState, AgentStateView, ExitedView, IgnoredFile, IgnoredLocation,
    RuntimeOrigin, RuntimeStatus, RuntimeView,
};
use crate::CoreError;

/// The file in the state directory that records exited runtimes.
pub const EXITED_FILE: &str = "exited-runtimes.json";

/// The lock file that serializes changes to [`EXITED_FILE`] between the app and the CLI.
const LOCK_FILE: &str = "exited-runtimes.lock";

/// How many exited runtimes are kept, newest first: enough for every runtime a reboot or a
/// crash of the user's session ends at once, few enough that the list stays readable and the
/// file small.
pub const MAX_EXITED: usize = 50;

/// Largest record file read. Writing keeps under it (texts capped, the oldest records dropped
/// until the file fits), so the record the tray writes is always one it reads back.
const MAX_FILE_BYTES: u64 = 512 * 1024;

/// The longest text a record keeps (a name, a title, a detail): what the window shows of it.
const MAX_TEXT_CHARS: usize = 2000;

/// The record is the app's own, written 0600: read as receipts are, owner only.
const RULES: FileRules = FileRules {
    singular: "exited-runtimes record",
    plural: "exited-runtimes records",
    max_bytes: MAX_FILE_BYTES,
    mode: ModeRule::OwnerOnly,
};

/// One runtime that stopped unexpectedly, as it was last shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitedRuntime {
    /// Its inventory id when it ran (the receipt's endpoint), which it keeps.
    pub id: String,
    /// Its live-runtime id.
    pub runtime_id: String,
    /// Its display name.
    pub name: String,
    /// Its kind.
    pub kind: String,
    /// Its workspace.
    pub workspace: Option<String>,
    /// The Canon profile it ran as.
    pub profile: Option<String>,
    /// Its agent's name.
    pub agent_name: Option<String>,
    /// The process that ended.
    pub pid: Option<u32>,
    /// When it registered (RFC 3339).
    pub started_at: Option<String>,
    /// When its death was seen (RFC 3339).
    pub exited_at: String,
    /// Why it is shown as exited, for people.
    pub reason: String,
    /// What its agent last showed, when the tray was watching it.
    pub last_state: Option<LastState>,
}

/// What an exited runtime's agent last showed (sanitized when it was shown; capped again when
/// read back).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LastState {
    /// The state.
    pub value: AgentState,
    /// What it was doing or asking.
    pub title: Option<String>,
    /// More about it.
    pub detail: Option<String>,
    /// When it entered that state.
    pub since: Option<String>,
}

impl LastState {
    /// What `shown`'s agent showed, unless nothing (`unknown`, or no state).
    pub(crate) fn of(shown: &RuntimeView) -> Option<Self> {
        let state = shown
            .state
            .as_ref()
            .filter(|s| s.value != AgentState::Unknown)?;
        Some(Self {
            value: state.value,
            title: state.title.clone(),
            detail: state.detail.clone(),
            since: state.since.clone(),
        })
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct ExitedFile {
    version: u32,
    runtimes: Vec<ExitedRuntime>,
}

/// The exited runtimes recorded in `state_dir`, newest first, or why the record was not read.
pub fn read(state_dir: &Path) -> Result<Vec<ExitedRuntime>, IgnoredFile> {
    load(state_dir).map_err(|reason| IgnoredFile {
        location: IgnoredLocation::State,
        file: EXITED_FILE.to_owned(),
        reason: format!(
            "{reason}; runtimes that stop unexpectedly are not recorded until it is fixed or removed"
        ),
    })
}

fn load(state_dir: &Path) -> Result<Vec<ExitedRuntime>, String> {
    let Some(file) = read_owned_file(&state_dir.join(EXITED_FILE), &RULES).map_err(|e| e.reason)?
    else {
        return Ok(Vec::new());
    };
    let text = String::from_utf8(file.bytes).map_err(|_| "it is not UTF-8 text".to_owned())?;
    let value = parse_json(&text)?;
    let parsed: ExitedFile = serde_json::from_value(value)
        .map_err(|e| format!("it is not an exited-runtimes record ({e})"))?;
    if parsed.version != 1 {
        return Err(format!(
            "its version {} is not one this version of Supercode Tray reads",
            parsed.version
        ));
    }
    let mut runtimes = parsed.runtimes;
    runtimes.truncate(MAX_EXITED);
    for runtime in &mut runtimes {
        runtime.cap();
    }
    Ok(runtimes)
}

impl ExitedRuntime {
    /// The record of `record`'s runtime, dead since `exited_at`; `shown` is its view as the
    /// tray last showed it (with its agent's state), if it did.
    pub(crate) fn of(
        record: &LiveRuntimeRecord,
        view: RuntimeView,
        shown: Option<&RuntimeView>,
        exited_at: String,
    ) -> Self {
        let last_state = shown.and_then(LastState::of);
        Self {
            id: view.id,
            runtime_id: view.runtime_id,
            name: view.name,
            kind: view.kind,
            workspace: view.workspace,
            profile: view.profile,
            agent_name: view.agent_name,
            pid: Some(record.pid),
            started_at: Some(record.registered_at.clone()),
            exited_at,
            reason: format!(
                "It stopped unexpectedly: its process (PID {}) ended without unregistering, and the tray cannot relaunch it. Start it again the way you started it, then dismiss this.",
                record.pid
            ),
            last_state,
        }
    }

    fn cap(&mut self) {
        for text in [
            &mut self.id,
            &mut self.runtime_id,
            &mut self.name,
            &mut self.kind,
            &mut self.exited_at,
            &mut self.reason,
        ] {
            cap(text);
        }
        for text in [
            &mut self.workspace,
            &mut self.profile,
            &mut self.agent_name,
            &mut self.started_at,
        ]
        .into_iter()
        .flatten()
        {
            cap(text);
        }
        if let Some(state) = &mut self.last_state {
            for text in [&mut state.title, &mut state.detail, &mut state.since]
                .into_iter()
                .flatten()
            {
                cap(text);
            }
        }
    }

    /// How the inventory shows it: `exited`, with its last state, and only Dismiss to do.
    pub fn view(&self) -> RuntimeView {
        let gone = "It has exited.";
        RuntimeView {
            id: self.id.clone(),
            endpoint: None,
            runtime_id: self.runtime_id.clone(),
            catalog_id: None,
            source: None,
            name: self.name.clone(),
            kind: self.kind.clone(),
            workspace: self.workspace.clone(),
            workspace_roots: Vec::new(),
            profile: self.profile.clone(),
            agent_name: self.agent_name.clone(),
            status: RuntimeStatus::Exited,
            status_reason: Some(self.reason.clone()),
            since: Some(self.exited_at.clone()),
            pid: self.pid,
            attach: ActionAvailability::never(gone),
            forget: ActionAvailability::never(
                "It has exited and its receipt is already gone; dismiss it instead.",
            ),
            revive: ActionAvailability::never(
                "The tray cannot relaunch it; start it again the way you started it.",
            ),
            dismiss: ActionAvailability::yes(),
            launch_command: None,
            catalog_status: None,
            revive_capability: None,
            origin: RuntimeOrigin::Exited,
            state: None,
            exited: Some(ExitedView {
                at: self.exited_at.clone(),
                last_state: self.last_state.as_ref().map(|last| AgentStateView {
                    value: last.value,
                    title: last.title.clone(),
                    detail: last.detail.clone(),
                    since: last.since.clone(),
                    ..AgentStateView::unknown()
                }),
            }),
        }
    }
}

fn cap(text: &mut String) {
    if let Some((at, _)) = text.char_indices().nth(MAX_TEXT_CHARS) {
        text.truncate(at);
    }
}

/// Records `dead` (newest first) in `state_dir`, keeping at most [`MAX_EXITED`]; a record of
/// the same id is replaced. Refused, and nothing written, when the record file cannot be read.
pub fn record(state_dir: &Path, dead: Vec<ExitedRuntime>) -> Result<(), CoreError> {
    if dead.is_empty() {
        return Ok(());
    }
    change(state_dir, |runtimes| {
        runtimes.retain(|old| !dead.iter().any(|new| new.id == old.id));
        let mut all = dead;
        all.append(runtimes);
        all.truncate(MAX_EXITED);
        *runtimes = all;
        true
    })
}

/// Gives each recorded runtime of `states` (by id) that has no last state the one given: what
/// the app's watcher saw of a runtime whose receipt another process (the CLI's `list`)
/// reconciled first, and so recorded without it. A last state already there is kept.
pub fn fill_last_states(
    state_dir: &Path,
    states: Vec<(String, LastState)>,
) -> Result<(), CoreError> {
    change(state_dir, |runtimes| {
        let mut changed = false;
        for runtime in runtimes.iter_mut().filter(|r| r.last_state.is_none()) {
            if let Some((_, state)) = states.iter().find(|(id, _)| *id == runtime.id) {
                runtime.last_state = Some(state.clone());
                changed = true;
            }
        }
        changed
    })
}

/// Removes the exited runtime `id` from the record in `state_dir`: the user has seen it.
pub fn dismiss(state_dir: &Path, id: &str) -> Result<(), CoreError> {
    let mut found = false;
    change(state_dir, |runtimes| {
        let before = runtimes.len();
        runtimes.retain(|r| r.id != id);
        found = runtimes.len() < before;
        found
    })?;
    if found {
        Ok(())
    } else {
        Err(CoreError::UnknownRuntime {
            query: id.to_owned(),
        })
    }
}

/// Reads the record, lets `edit` change it, and writes it back when `edit` says it changed, all
/// under the lock.
fn change(
    state_dir: &Path,
    edit: impl FnOnce(&mut Vec<ExitedRuntime>) -> bool,
) -> Result<(), CoreError> {
    let path = state_dir.join(EXITED_FILE);
    let io = |source| CoreError::Io {
        what: format!("could not record exited runtimes in {}", path.display()),
        source,
    };
    std::fs::create_dir_all(state_dir).map_err(io)?;
    let lock = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(state_dir.join(LOCK_FILE))
        .map_err(io)?;
    // Held until `lock` closes; the app and the CLI each take it around a read and a write.
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| io(e.into()))?;
    let mut runtimes = load(state_dir).map_err(|reason| CoreError::Io {
        what: format!(
            "{} was not read, so it was left as it is; fix or remove it",
            path.display()
        ),
        source: std::io::Error::other(reason),
    })?;
    if !edit(&mut runtimes) {
        return Ok(());
    }
    for runtime in &mut runtimes {
        runtime.cap();
    }
    let mut file = ExitedFile {
        version: 1,
        runtimes,
    };
    let bytes = loop {
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| io(std::io::Error::other(e)))?;
        if bytes.len() as u64 <= MAX_FILE_BYTES || file.runtimes.len() <= 1 {
            break bytes;
        }
        file.runtimes.pop();
    };
    write_atomically(state_dir, EXITED_FILE, &bytes).map_err(io)
    // The lock is released as `lock` drops, after the rename.
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dead(id: &str) -> ExitedRuntime {
        ExitedRuntime {
            id: id.to_owned(),
            runtime_id: format!("demo:{id}"),
            name: id.to_owned(),
            kind: "demo".into(),
            workspace: None,
            profile: None,
            agent_name: None,
            pid: Some(7),
            started_at: None,
            exited_at: "2026-12-02T19:00:00Z".into(),
            reason: "It stopped unexpectedly.".into(),
            last_state: None,
        }
    }

    #[test]
    fn the_record_keeps_the_newest_first_bounded_and_one_per_id() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..MAX_EXITED + 10 {
            record(dir.path(), vec![dead(&format!("lre_{n}"))]).unwrap();
        }
        record(dir.path(), vec![dead("lre_3")]).unwrap();
        let kept = read(dir.path()).unwrap();
        assert_eq!(kept.len(), MAX_EXITED);
        assert_eq!(kept[0].id, "lre_3", "recorded again: newest, once");
        assert_eq!(kept[1].id, format!("lre_{}", MAX_EXITED + 9));
        assert_eq!(kept.iter().filter(|r| r.id == "lre_3").count(), 1);
        let mode = std::fs::metadata(dir.path().join(EXITED_FILE)).unwrap();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
            0o600
        );

        dismiss(dir.path(), "lre_3").unwrap();
        assert!(read(dir.path()).unwrap().iter().all(|r| r.id != "lre_3"));
        assert!(matches!(
            dismiss(dir.path(), "lre_3"),
            Err(CoreError::UnknownRuntime { .. })
        ));
    }

    #[test]
    fn a_record_that_cannot_be_read_is_reported_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(EXITED_FILE);
        let wrong = br#"{"version":2,"runtimes":[]}"#;
        std::fs::write(&file, wrong).unwrap();
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let ignored = read(dir.path()).unwrap_err();
        assert_eq!(ignored.location, IgnoredLocation::State);
        assert!(ignored.reason.contains("version 2"), "{}", ignored.reason);
        assert!(record(dir.path(), vec![dead("lre_x")]).is_err());
        assert_eq!(std::fs::read(&file).unwrap(), wrong, "left as it was");
    }

    #[test]
    fn the_record_written_always_fits_what_is_read_back() {
        let dir = tempfile::tempdir().unwrap();
        // Control characters are written as six-byte escapes: the worst a text can cost.
        let hostile = "\u{1}".repeat(MAX_TEXT_CHARS * 3);
        for n in 0..MAX_EXITED {
            let mut long = dead(&format!("lre_{n}"));
            long.name = hostile.clone();
            long.reason = hostile.clone();
            long.workspace = Some(hostile.clone());
            long.last_state = Some(LastState {
                value: AgentState::NeedsInput,
                title: Some(hostile.clone()),
                detail: Some(hostile.clone()),
                since: None,
            });
            record(dir.path(), vec![long]).unwrap();
        }
        let kept = read(dir.path()).expect("what was written is read back");
        assert!(
            !kept.is_empty() && kept.len() < MAX_EXITED,
            "{}",
            kept.len()
        );
        assert_eq!(
            kept[0].id,
            format!("lre_{}", MAX_EXITED - 1),
            "the newest kept"
        );
        assert!(
            std::fs::metadata(dir.path().join(EXITED_FILE))
                .unwrap()
                .len()
                <= MAX_FILE_BYTES
        );
    }

    #[test]
    fn texts_read_back_are_capped() {
        let dir = tempfile::tempdir().unwrap();
        let mut long = dead("lre_long");
        long.name = "n".repeat(MAX_TEXT_CHARS * 2);
        record(dir.path(), vec![long]).unwrap();
        let kept = read(dir.path()).unwrap();
        assert_eq!(kept[0].name.chars().count(), MAX_TEXT_CHARS);
    }
}
