//! Connecting an agent to the tray: our hook entries in the agent's own settings file, added,
//! recognised and removed by one set of rules that the CLI and the window only render
//! (the window through `supercode_core::connect`, which adds the digest a confirmation carries).
//!
//! The settings file is the user's: we merge into it and keep every other key and every hook of
//! their own, in order. Our entries are recognised by their command alone (a program named
//! `supercode-tray-hook` run with the agent's name, or the `supercode-tray hook <agent>` that
//! entries installed before that program ran), so removing takes out exactly what installing added
//! and nothing the user wrote, and installing twice adds nothing. The file is read with the
//! project's one reader for files other programs leave ([`live_runtime::owned_file`]): a
//! symbolic link, a file of another user, one that others may write, one over the size cap or
//! one that is not a JSON object is refused with the reason and never overwritten. The write is
//! atomic (temp file + rename, mode 0600) and the previous content is first kept in a backup
//! beside it.

use std::path::{Path, PathBuf};

use live_runtime::owned_file::{self, FileRules, ModeRule};
use serde::Serialize;
use serde_json::{Map, Value};

/// The largest settings file read: Claude Code's are a few KiB; a megabyte is far beyond any.
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

const SETTINGS_RULES: FileRules = FileRules {
    singular: "settings file",
    plural: "settings files",
    max_bytes: MAX_SETTINGS_BYTES,
    mode: ModeRule::WarnWhenReadable,
};

/// The suffix of the backup kept beside the settings file before each change.
pub const BACKUP_SUFFIX: &str = ".supercode-backup";

/// One hook entry we add: the event it runs on and how long the agent lets it run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HookEntry {
    /// The agent's event name (`PreToolUse`, ...).
    pub event: &'static str,
    /// The agent's timeout for the command, in seconds.
    pub timeout_secs: u64,
    /// What the agent shows while the hook runs, for agents that show one (Codex's
    /// `statusMessage`); `None` writes no such key.
    pub status_message: Option<&'static str>,
    /// True when the agent runs the hook in the background instead of waiting for it
    /// (`"async": true`, Claude Code's): for the events that only report, on every tool call.
    pub background: bool,
}

/// How long an agent lets an ordinary hook of ours run. Ours answer in milliseconds; this only
/// bounds a host that hangs, and the agent goes on without the hook after it.
pub const QUICK_HOOK_TIMEOUT_SECS: u64 = 10;

impl HookEntry {
    /// An ordinary entry: the agent waits at most [`QUICK_HOOK_TIMEOUT_SECS`] and shows nothing.
    pub const fn quick(event: &'static str) -> Self {
        Self {
            event,
            timeout_secs: QUICK_HOOK_TIMEOUT_SECS,
            status_message: None,
            background: false,
        }
    }

    /// An ordinary entry the agent runs in the background, not waiting for it.
    pub const fn background(event: &'static str) -> Self {
        Self {
            background: true,
            ..Self::quick(event)
        }
    }

    /// The hook as it goes into the settings, running `command`.
    fn hook(&self, command: &str) -> Value {
        let mut hook = serde_json::json!({
            "type": "command", "command": command, "timeout": self.timeout_secs
        });
        if let Some(message) = self.status_message {
            hook["statusMessage"] = Value::String(message.to_owned());
        }
        self.write_mode(&mut hook);
        hook
    }

    /// Makes `hook` run in the background or be waited for, as this entry says.
    fn write_mode(&self, hook: &mut Value) {
        if self.background {
            hook["async"] = Value::Bool(true);
        } else if let Some(object) = hook.as_object_mut() {
            object.remove("async");
        }
    }

    /// True when `hook` (one of ours) runs as this entry says: `command`, and in the background
    /// or not.
    fn is_current(&self, hook: &Value, command: &str) -> bool {
        hook.get("command").and_then(Value::as_str) == Some(command) && self.runs_as_written(hook)
    }

    fn runs_as_written(&self, hook: &Value) -> bool {
        hook.get("async").and_then(Value::as_bool).unwrap_or(false) == self.background
    }
}

/// What an agent's hooks look like in its settings file.
#[derive(Clone, Copy, Debug)]
pub struct AgentHooks {
    /// The agent's name on our command line (`claude-code`).
    pub agent: &'static str,
    /// A name for people (`Claude Code`).
    pub display_name: &'static str,
    /// The entries we add, one per event.
    pub entries: &'static [HookEntry],
}

/// Why the hooks could not be installed, removed or checked.
#[derive(Debug, thiserror::Error)]
pub enum HooksError {
    /// The settings file was refused (a link, another user's, writable by others, too big...).
    #[error("refusing {path}: {reason}; it was not changed")]
    Refused {
        /// The file.
        path: PathBuf,
        /// Why, for people.
        reason: String,
    },
    /// The settings file is not a JSON object (or its `hooks` is not one).
    #[error(
        "refusing {path}: {reason}; fix the file by hand, then run this again (it was not changed)"
    )]
    NotSettings {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Writing the file or its backup failed.
    #[error("could not write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// No home directory to find the agent's settings in.
    #[error(
        "no home directory: set HOME (or CLAUDE_CONFIG_DIR for Claude Code, CODEX_HOME for Codex)"
    )]
    NoHome,
}

/// Whether the hooks are in the settings file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Installed {
    /// Every entry is there.
    Yes,
    /// Some entries are there, some are missing.
    Partly,
    /// None is there.
    No,
}

/// What `hooks status` reports for one agent.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HooksStatus {
    /// The agent (`claude-code`).
    pub agent: &'static str,
    /// The settings file.
    pub settings: PathBuf,
    /// Whether our entries are there.
    pub installed: Installed,
    /// Events whose entry is missing.
    pub missing_events: Vec<&'static str>,
    /// Events whose entry is ours but written by an earlier version, to run otherwise than
    /// this one writes it (waited for, where it now runs in the background; or through the old
    /// `supercode-tray hook` command): `hooks install` brings them up to date.
    pub outdated_events: Vec<&'static str>,
    /// The programs our entries run; each must exist for the hooks to work.
    pub commands: Vec<String>,
    /// True when every program our entries run exists and is executable.
    pub binary_exists: bool,
    /// A problem with the file itself (refused, not JSON), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// A change to make: what it adds or removes, for the preview, and the new file.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The settings file.
    pub path: PathBuf,
    /// For people: exactly what goes in or comes out, as JSON per event.
    pub preview: String,
    /// True when there is nothing to do (already installed, or nothing of ours to remove).
    pub nothing_to_do: bool,
    new_bytes: Vec<u8>,
    old_bytes: Option<Vec<u8>>,
    /// Set when the file was read despite something the user should fix (its mode).
    pub warning: Option<String>,
}

impl AgentHooks {
    /// The hook command written into the settings: the program, quoted for the agent's shell,
    /// then the agent's name.
    pub fn command_for(&self, program: &Path) -> String {
        format!("{} {}", shell_quote(&program.to_string_lossy()), self.agent)
    }

    /// True when `command` is one of ours.
    pub fn is_ours(&self, command: &str) -> bool {
        self.program_of(command).is_some()
    }

    /// The program one of our commands runs: one named `supercode-tray-hook` (wherever it is
    /// installed) given the agent's name, or, as entries installed before that program ran, one
    /// named `supercode-tray` given `hook <agent>` (`hooks install` points those at the hook
    /// program). `None` for any other command.
    fn program_of(&self, command: &str) -> Option<String> {
        [
            (format!(" {}", self.agent), crate::hook::PROGRAM),
            (format!(" hook {}", self.agent), "supercode-tray"),
        ]
        .into_iter()
        .find_map(|(arguments, name)| {
            let program = shell_unquote(command.strip_suffix(&arguments)?)?;
            Path::new(&program)
                .file_name()
                .is_some_and(|n| n == name)
                .then_some(program)
        })
    }

    /// What installing our entries (running `program`) into `path` changes; an entry already
    /// there (by [`AgentHooks::is_ours`]) is kept as it is.
    pub fn plan_install(&self, path: &Path, program: &Path) -> Result<Plan, HooksError> {
        let (mut root, old_bytes, warning) = read_settings(path)?;
        let command = self.command_for(program);
        let hooks = hooks_object(&mut root, path)?;
        let mut added = Map::new();
        for entry in self.entries {
            let groups = hooks
                .entry(entry.event)
                .or_insert_with(|| Value::Array(Vec::new()));
            let Some(groups) = groups.as_array_mut() else {
                return Err(HooksError::NotSettings {
                    path: path.to_path_buf(),
                    reason: format!("its hooks.{} is not a list", entry.event),
                });
            };
            if groups.iter().any(|group| self.group_has_ours(group)) {
                // Ours already; one that runs a program from elsewhere (the app was moved or
                // reinstalled), or that an earlier version wrote to run otherwise (waited for
                // where it now runs in the background), is made as this one writes it.
                let mut moved = Vec::new();
                for hook in groups
                    .iter_mut()
                    .filter_map(|g| g.get_mut("hooks").and_then(Value::as_array_mut))
                    .flatten()
                {
                    let stale = hook
                        .get("command")
                        .and_then(Value::as_str)
                        .is_some_and(|c| self.is_ours(c))
                        && !entry.is_current(hook, &command);
                    if stale {
                        hook["command"] = Value::String(command.clone());
                        entry.write_mode(hook);
                        moved.push(hook.clone());
                    }
                }
                if !moved.is_empty() {
                    added.insert(entry.event.to_owned(), Value::Array(moved));
                }
                continue;
            }
            let group = serde_json::json!({ "hooks": [entry.hook(&command)] });
            groups.push(group.clone());
            added.insert(entry.event.to_owned(), Value::Array(vec![group]));
        }
        let unchanged = format!(
            "{} is already connected: {} has every hook entry.",
            self.display_name,
            path.display()
        );
        Ok(Plan::of(
            path, &root, old_bytes, warning, "Adds to", added, unchanged,
        ))
    }

    /// What removing our entries from `path` changes: every hook whose command is ours goes, a
    /// group left empty goes, an event left empty goes, and `hooks` left empty goes (if we
    /// emptied it). Nothing else is touched.
    pub fn plan_remove(&self, path: &Path) -> Result<Plan, HooksError> {
        let (mut root, old_bytes, warning) = read_settings(path)?;
        let mut removed = Map::new();
        let mut emptied_hooks = false;
        if let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) {
            let events: Vec<String> = hooks.keys().cloned().collect();
            for event in events {
                let Some(groups) = hooks.get_mut(&event).and_then(Value::as_array_mut) else {
                    continue;
                };
                let mut taken = Vec::new();
                for group in groups.iter_mut() {
                    let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                        continue;
                    };
                    let before = list.len();
                    list.retain(|hook| {
                        let ours = hook
                            .get("command")
                            .and_then(Value::as_str)
                            .is_some_and(|c| self.is_ours(c));
                        if ours {
                            taken.push(hook.clone());
                        }
                        !ours
                    });
                    if before > 0 && list.is_empty() {
                        // Marked for removal below: a group we emptied is ours entirely.
                        *group = Value::Null;
                    }
                }
                if taken.is_empty() {
                    continue;
                }
                groups.retain(|group| !group.is_null());
                if groups.is_empty() {
                    hooks.remove(&event);
                }
                removed.insert(event, Value::Array(taken));
            }
            emptied_hooks = hooks.is_empty() && !removed.is_empty();
        }
        if emptied_hooks {
            if let Some(object) = root.as_object_mut() {
                object.remove("hooks");
            }
        }
        let unchanged = format!(
            "{} is not connected: {} has no hook entry of ours.",
            self.display_name,
            path.display()
        );
        Ok(Plan::of(
            path,
            &root,
            old_bytes,
            warning,
            "Removes from",
            removed,
            unchanged,
        ))
    }

    /// Whether our entries are in `path`, and whether the program they run exists. A file that
    /// cannot be read is reported in [`HooksStatus::problem`], not as an error.
    pub fn status(&self, path: &Path) -> HooksStatus {
        let mut status = HooksStatus {
            agent: self.agent,
            settings: path.to_path_buf(),
            installed: Installed::No,
            missing_events: Vec::new(),
            outdated_events: Vec::new(),
            commands: Vec::new(),
            binary_exists: false,
            problem: None,
        };
        let root = match read_settings(path) {
            Ok((root, _, _)) => root,
            Err(e) => {
                status.problem = Some(e.to_string());
                status.missing_events = self.entries.iter().map(|e| e.event).collect();
                return status;
            }
        };
        let hooks = root.get("hooks").and_then(Value::as_object);
        if hooks.is_none() && root.get("hooks").is_some() {
            status.problem = Some(format!(
                "refusing {}: its \"hooks\" is not an object",
                path.display()
            ));
        }
        for entry in self.entries {
            let groups = hooks
                .and_then(|h| h.get(entry.event))
                .and_then(Value::as_array);
            let ours: Vec<(&Value, &str)> = groups
                .into_iter()
                .flatten()
                .filter_map(|group| group.get("hooks").and_then(Value::as_array))
                .flatten()
                .filter_map(|hook| Some((hook, hook.get("command").and_then(Value::as_str)?)))
                .filter(|(_, command)| self.is_ours(command))
                .collect();
            if ours.is_empty() {
                status.missing_events.push(entry.event);
            }
            let outdated = ours.iter().any(|(hook, command)| {
                let old_command = self.program_of(command).is_some_and(|p| {
                    Path::new(&p).file_name() != Some(crate::hook::PROGRAM.as_ref())
                });
                old_command || !entry.runs_as_written(hook)
            });
            if outdated {
                status.outdated_events.push(entry.event);
            }
            for command in ours.into_iter().map(|(_, command)| command.to_owned()) {
                if !status.commands.contains(&command) {
                    status.commands.push(command);
                }
            }
        }
        status.installed = match status.missing_events.len() {
            0 => Installed::Yes,
            n if n == self.entries.len() => Installed::No,
            _ => Installed::Partly,
        };
        status.binary_exists = !status.commands.is_empty()
            && status.commands.iter().all(|command| {
                self.program_of(command)
                    .is_some_and(|program| is_executable(Path::new(&program)))
            });
        status
    }

    fn group_has_ours(&self, group: &Value) -> bool {
        group
            .get("hooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|hook| hook.get("command").and_then(Value::as_str))
            .any(|command| self.is_ours(command))
    }
}

impl Plan {
    /// The plan that writes `root` to `path`, previewing `changed` (the entries added or
    /// removed, by event) after `verb`, or saying `unchanged` when there are none.
    fn of(
        path: &Path,
        root: &Value,
        old_bytes: Option<Vec<u8>>,
        warning: Option<String>,
        verb: &str,
        changed: Map<String, Value>,
        unchanged: String,
    ) -> Self {
        let nothing_to_do = changed.is_empty();
        let preview = if nothing_to_do {
            unchanged
        } else {
            format!(
                "{verb} \"hooks\" in {}, per event:\n{}",
                path.display(),
                pretty(&Value::Object(changed))
            )
        };
        Plan {
            path: path.to_path_buf(),
            preview,
            nothing_to_do,
            new_bytes: to_bytes(root),
            old_bytes,
            warning,
        }
    }

    /// Writes the change: first the backup of the current content (if there is a file), then the
    /// new file, atomically. Does nothing when there is nothing to do.
    pub fn apply(&self) -> Result<(), HooksError> {
        if self.nothing_to_do {
            return Ok(());
        }
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "settings.json".into());
        let write_error = |path: PathBuf| move |source| HooksError::Write { path, source };
        std::fs::create_dir_all(dir).map_err(write_error(dir.to_path_buf()))?;
        if let Some(old) = &self.old_bytes {
            let backup = format!("{name}{BACKUP_SUFFIX}");
            owned_file::write_atomically(dir, &backup, old)
                .map_err(write_error(dir.join(&backup)))?;
        }
        owned_file::write_atomically(dir, &name, &self.new_bytes)
            .map_err(write_error(self.path.clone()))
    }

    /// A digest of the change: the file as read and the file as it will be written. A
    /// confirmation carries the digest of the plan it showed; a plan made again from a file
    /// that changed since has another digest, so what runs is exactly what was confirmed.
    pub fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(self.path.as_os_str().as_encoded_bytes());
        hash.update([0]);
        match &self.old_bytes {
            Some(old) => {
                hash.update((old.len() as u64).to_le_bytes());
                hash.update(old);
            }
            None => hash.update(u64::MAX.to_le_bytes()),
        }
        hash.update(&self.new_bytes);
        hex::encode(hash.finalize())
    }

    /// The path of the backup [`Plan::apply`] keeps.
    pub fn backup_path(&self) -> Option<PathBuf> {
        self.old_bytes.as_ref()?;
        let mut name = self.path.file_name()?.to_os_string();
        name.push(BACKUP_SUFFIX);
        Some(self.path.with_file_name(name))
    }
}

type Read = (Value, Option<Vec<u8>>, Option<String>);

/// The settings as a JSON object (an empty one for a missing or empty file), its bytes as read,
/// and a warning about its mode.
fn read_settings(path: &Path) -> Result<Read, HooksError> {
    let refused = |reason: String| HooksError::Refused {
        path: path.to_path_buf(),
        reason,
    };
    let Some(file) =
        owned_file::read_owned_file(path, &SETTINGS_RULES).map_err(|e| refused(e.reason))?
    else {
        return Ok((Value::Object(Map::new()), None, None));
    };
    let not_settings = |reason: String| HooksError::NotSettings {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::str::from_utf8(&file.bytes)
        .map_err(|_| not_settings("it is not UTF-8 text".into()))?;
    let root = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        owned_file::parse_json(text).map_err(not_settings)?
    };
    if !root.is_object() {
        return Err(not_settings("it is not a JSON object".into()));
    }
    Ok((root, Some(file.bytes), file.warning))
}

fn hooks_object<'a>(
    root: &'a mut Value,
    path: &Path,
) -> Result<&'a mut Map<String, Value>, HooksError> {
    let object = root
        .as_object_mut()
        .expect("read_settings returns an object");
    object
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| HooksError::NotSettings {
            path: path.to_path_buf(),
            reason: "its \"hooks\" is not an object".into(),
        })
}

fn to_bytes(root: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(root).expect("a JSON value serializes");
    bytes.push(b'\n');
    bytes
}

/// One line per event: the event, then the group added or removed, as compact JSON.
fn pretty(value: &Value) -> String {
    let Some(events) = value.as_object() else {
        return value.to_string();
    };
    let width = events.keys().map(String::len).max().unwrap_or(0);
    events
        .iter()
        .flat_map(|(event, groups)| {
            groups
                .as_array()
                .into_iter()
                .flatten()
                .map(move |group| format!("  {event:<width$}  {group}"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Quotes `text` for a POSIX shell when it needs it (the agent runs the command through one).
fn shell_quote(text: &str) -> String {
    let plain = text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'+'));
    if plain && !text.is_empty() {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// The one word [`shell_quote`] wrote, or `None` for anything else (several words, other quoting).
fn shell_unquote(word: &str) -> Option<String> {
    if let Some(inner) = word.strip_prefix('\'').and_then(|w| w.strip_suffix('\'')) {
        let text = inner.replace(r"'\''", "'");
        (shell_quote(&text) == word).then_some(text)
    } else {
        (shell_quote(word) == word).then(|| word.to_owned())
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEST: AgentHooks = AgentHooks {
        agent: "claude-code",
        display_name: "Claude Code",
        entries: &[],
    };

    #[test]
    fn our_commands_are_recognised_by_program_name_and_arguments() {
        assert!(TEST.is_ours("/usr/bin/supercode-tray-hook claude-code"));
        assert!(TEST.is_ours("'/home/a b/supercode-tray-hook' claude-code"));
        assert!(!TEST.is_ours("/usr/bin/supercode-tray-hook codex"));
        assert!(!TEST.is_ours("/usr/bin/supercode-tray claude-code"));
        assert!(!TEST.is_ours("/usr/bin/supercode-tray-hook hook claude-code"));
        assert_eq!(
            TEST.command_for(Path::new("/home/a b/supercode-tray-hook")),
            "'/home/a b/supercode-tray-hook' claude-code"
        );
        assert!(TEST.is_ours(&TEST.command_for(Path::new("/opt/it's/supercode-tray-hook"))));
        assert!(!TEST.is_ours("rm -rf ~; /usr/bin/supercode-tray-hook claude-code"));
        // Entries installed before the hook program existed.
        assert!(TEST.is_ours("/usr/bin/supercode-tray hook claude-code"));
        assert!(TEST.is_ours("'/home/a b/supercode-tray' hook claude-code"));
        assert!(!TEST.is_ours("/usr/bin/supercode-tray hook codex"));
        assert!(!TEST.is_ours("/usr/bin/my-hook hook claude-code"));
        assert!(!TEST.is_ours("echo supercode-tray hook claude-code; rm -rf x"));
        assert!(!TEST.is_ours("rm -rf ~; /usr/bin/supercode-tray hook claude-code"));
        assert!(!TEST.is_ours("'a' 'b/supercode-tray' hook claude-code"));
    }
}
