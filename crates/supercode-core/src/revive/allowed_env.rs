//! Environment variables that change how programs load, which revive refuses to set unless the
//! user allowed them for that runtime, and the record of those allows.
//!
//! A launch command comes from a receipt or a catalog entry, files any local program can write.
//! `LD_PRELOAD`, `NODE_OPTIONS` and their kind make the program (or any program it starts) load
//! code the command does not show, so they are refused until the user allows them.
//!
//! An allow is for one runtime and one exact value, recorded by the app in
//! `<state dir>/revive-allowed-env.json` when the user ticks "Allow" in the window's confirmation
//! or passes `--allow-env NAME` to `supercode-tray revive`:
//! `{"version":1,"runtimes":{"<catalog or runtime id>":{"LD_PRELOAD":"/opt/x.so"}}}`. A changed
//! value is refused again; deleting the file withdraws every allow.

use std::collections::BTreeMap;
use std::path::Path;

use live_runtime::owned_file::{read_owned_file, write_atomically, FileRules, ModeRule};

use serde::{Deserialize, Serialize};

use crate::CoreError;

/// Variables that change how programs load, by exact name (matched ignoring ASCII case, as
/// Windows does). Documented in `docs/cli.md`.
pub const LOADER_VARIABLES: &[&str] = &[
    // Where programs are looked up.
    "PATH",
    "PATHEXT",
    // Node.js.
    "NODE_OPTIONS",
    "NODE_PATH",
    // Shells: files sourced at start-up, options that run code.
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    // Python.
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    // Perl.
    "PERL5LIB",
    "PERLLIB",
    "PERL5OPT",
    // Ruby.
    "RUBYOPT",
    "RUBYLIB",
    // Java.
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    // glibc's character-set modules.
    "GCONV_PATH",
];

/// Prefixes of variables that change how programs load: the dynamic linkers' (`LD_PRELOAD`,
/// `LD_LIBRARY_PATH`, `LD_AUDIT`, `DYLD_INSERT_LIBRARIES`, ...).
pub const LOADER_PREFIXES: &[&str] = &["LD_", "DYLD_"];

/// The file in the state directory that records the allows.
pub const ALLOWED_ENV_FILE: &str = "revive-allowed-env.json";

/// Largest allow file read: a few hundred allows fit; anything bigger is not ours.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The record is the app's own, written 0600: read it as receipts are, owner only.
const ALLOWED_ENV_RULES: FileRules = FileRules {
    singular: "allowed-variables record",
    plural: "allowed-variables records",
    max_bytes: MAX_FILE_BYTES,
    mode: ModeRule::OwnerOnly,
};

/// Why `name` must be allowed before revive sets it, or `None` when it need not be.
pub fn loader_reason(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    let what = if let Some(prefix) = LOADER_PREFIXES.iter().find(|p| upper.starts_with(**p)) {
        format!("{prefix}* variables make the dynamic linker load other code into the program")
    } else if LOADER_VARIABLES.contains(&upper.as_str()) {
        match upper.as_str() {
            "PATH" | "PATHEXT" => {
                "it decides which programs are found when the runtime starts others".to_owned()
            }
            _ => "it makes the program's interpreter load or run code the command does not show"
                .to_owned(),
        }
    } else {
        return None;
    };
    Some(format!("{name} changes how programs load: {what}"))
}

/// The allows, as recorded.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AllowedEnv {
    version: u32,
    /// Allow key (catalog id or runtime id) → variable → the exact value allowed.
    runtimes: BTreeMap<String, BTreeMap<String, String>>,
}

impl AllowedEnv {
    /// Reads the record in `state_dir`. A missing file is no allow; an unreadable one is also
    /// no allow (refusing is the safe reading), and is logged.
    pub fn load(state_dir: &Path) -> Self {
        let path = state_dir.join(ALLOWED_ENV_FILE);
        match read_owned_file(&path, &ALLOWED_ENV_RULES) {
            Ok(None) => Self::default(),
            Ok(Some(file)) => serde_json::from_slice(&file.bytes).unwrap_or_else(|e| {
                tracing::warn!(
                    "{} is not a valid allow list ({e}); nothing is allowed",
                    path.display()
                );
                Self::default()
            }),
            Err(e) => {
                tracing::warn!("cannot read {}: {e}; nothing is allowed", path.display());
                Self::default()
            }
        }
    }

    /// Whether `name=value` is allowed for the runtime `key`.
    pub fn allows(&self, key: &str, name: &str, value: &str) -> bool {
        self.runtimes
            .get(key)
            .and_then(|vars| vars.get(name))
            .is_some_and(|allowed| allowed == value)
    }

    /// Allows `name=value` for the runtime `key`.
    pub fn allow(&mut self, key: &str, name: &str, value: &str) {
        self.runtimes
            .entry(key.to_owned())
            .or_default()
            .insert(name.to_owned(), value.to_owned());
    }

    /// Writes the record to `state_dir` (0600, exclusive-create temp file, then rename).
    pub fn save(&mut self, state_dir: &Path) -> Result<(), CoreError> {
        self.version = 1;
        let io = |source| CoreError::Io {
            what: format!(
                "could not record the allowed variables in {}",
                state_dir.join(ALLOWED_ENV_FILE).display()
            ),
            source,
        };
        std::fs::create_dir_all(state_dir).map_err(io)?;
        let bytes = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        write_atomically(state_dir, ALLOWED_ENV_FILE, &bytes).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_variables_are_recognised_ignoring_case_and_others_are_not() {
        for name in [
            "LD_PRELOAD",
            "ld_library_path",
            "DYLD_INSERT_LIBRARIES",
            "PATH",
            "NODE_OPTIONS",
            "BASH_ENV",
            "ENV",
            "PYTHONPATH",
            "PYTHONSTARTUP",
            "PERL5LIB",
            "RUBYOPT",
            "NODE_PATH",
        ] {
            let reason = loader_reason(name).unwrap_or_else(|| panic!("{name} is refused"));
            assert!(reason.starts_with(&format!("{name} changes how programs load")));
        }
        for name in [
            "CANON_AGENT",
            "HOME",
            "RUST_LOG",
            "LANG",
            "OLDPATH",
            "ENVIRONMENT",
        ] {
            assert_eq!(loader_reason(name), None, "{name}");
        }
    }

    #[test]
    fn an_allow_is_for_one_runtime_and_one_exact_value_and_survives_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut allowed = AllowedEnv::load(dir.path());
        assert!(!allowed.allows("rt", "LD_PRELOAD", "/x.so"));
        allowed.allow("rt", "LD_PRELOAD", "/x.so");
        allowed.save(dir.path()).unwrap();
        let again = AllowedEnv::load(dir.path());
        assert!(again.allows("rt", "LD_PRELOAD", "/x.so"));
        assert!(!again.allows("rt", "LD_PRELOAD", "/y.so"), "another value");
        assert!(
            !again.allows("other", "LD_PRELOAD", "/x.so"),
            "another runtime"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(ALLOWED_ENV_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_or_fifo_allow_file_allows_nothing_and_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("elsewhere.json");
        std::fs::write(
            &elsewhere,
            br#"{"version":1,"runtimes":{"rt":{"LD_PRELOAD":"/x.so"}}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.path().join(ALLOWED_ENV_FILE)).unwrap();
        assert!(!AllowedEnv::load(dir.path()).allows("rt", "LD_PRELOAD", "/x.so"));

        let fifo_dir = tempfile::tempdir().unwrap();
        let fifo = fifo_dir.path().join(ALLOWED_ENV_FILE);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        assert!(!AllowedEnv::load(fifo_dir.path()).allows("rt", "LD_PRELOAD", "/x.so"));
    }
}
