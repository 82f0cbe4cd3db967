//! Which environment variables revive sets without asking, and the record of the user's allows
//! for the others.
//!
//! A launch command comes from a receipt or a catalog entry, files any local program can write.
//! Its variables can make the program, or any program it starts, run code the command does not
//! show: the loaders' (`LD_PRELOAD`, `NODE_OPTIONS`), a shell's (`BASH_ENV`, `BASH_FUNC_x%%`),
//! git's (`GIT_SSH_COMMAND`, `GIT_CONFIG_*`), where configuration and credentials are read
//! (`HOME`, `XDG_*`, `CLAUDE_CONFIG_DIR`), where requests go and whom they trust (`*_BASE_URL`,
//! `HTTPS_PROXY`, `NODE_TLS_REJECT_UNAUTHORIZED`, `SSL_CERT_FILE`), and more every release. A
//! list of the dangerous ones always has holes (issue 29), so the rule is the other way round:
//! every variable a record sets needs the user's allow, except the few in [`HARMLESS`], each with
//! a value of the plain shape it takes ([`allow_reason`]). A name outside `[A-Za-z_][A-Za-z0-9_]*`
//! ([`is_valid_name`]) is not set at all: the plan is refused.
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

/// The shape of value a [harmless](HARMLESS) variable may have; any other value needs an allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlainValue {
    /// A name: letters, digits and `_ . @ : + -`, no `/`, so it names no file (a locale, a
    /// terminal type, a profile). glibc reads a locale or terminfo name with a `/` as a path.
    Word,
    /// A time zone: a [`PlainValue::Word`] that may also hold `/`, `,`, `<` and `>` (a zone such
    /// as `Europe/Paris` or a POSIX rule), but not start with `/` or `:/` and hold no `..`, so it
    /// names a zone under the system's zoneinfo and no other file.
    Zone,
}

/// The longest value a harmless variable may have: every locale, zone or terminal name fits.
const PLAIN_VALUE_MAX: usize = 64;

impl PlainValue {
    fn admits(self, value: &str) -> bool {
        let word = |c: char| c.is_ascii_alphanumeric() || "_.@:+-".contains(c);
        value.len() <= PLAIN_VALUE_MAX
            && match self {
                PlainValue::Word => value.chars().all(word),
                PlainValue::Zone => {
                    value.chars().all(|c| word(c) || "/,<>".contains(c))
                        && !value.starts_with('/')
                        && !value.starts_with(":/")
                        && !value.contains("..")
                }
            }
    }

    fn described(self) -> &'static str {
        match self {
            PlainValue::Word => "a plain name (letters, digits, _ . @ : + -; no /)",
            PlainValue::Zone => "a time zone name (no leading /, no ..)",
        }
    }
}

/// The variables revive sets without the user's allow, by exact name, with the value each may
/// have and why it is harmless: each only chooses how text is shown or which of the user's own
/// agents runs, never what code runs, where files are read or where requests go. Documented in
/// `docs/cli.md`.
pub const HARMLESS: &[(&str, PlainValue, &str)] = &[
    (
        "LANG",
        PlainValue::Word,
        "the locale: language and formats of text",
    ),
    ("LANGUAGE", PlainValue::Word, "the languages of messages"),
    ("LC_ALL", PlainValue::Word, "the locale"),
    ("LC_ADDRESS", PlainValue::Word, "the locale"),
    ("LC_COLLATE", PlainValue::Word, "the locale"),
    ("LC_CTYPE", PlainValue::Word, "the locale"),
    ("LC_IDENTIFICATION", PlainValue::Word, "the locale"),
    ("LC_MEASUREMENT", PlainValue::Word, "the locale"),
    ("LC_MESSAGES", PlainValue::Word, "the locale"),
    ("LC_MONETARY", PlainValue::Word, "the locale"),
    ("LC_NAME", PlainValue::Word, "the locale"),
    ("LC_NUMERIC", PlainValue::Word, "the locale"),
    ("LC_PAPER", PlainValue::Word, "the locale"),
    ("LC_TELEPHONE", PlainValue::Word, "the locale"),
    ("LC_TIME", PlainValue::Word, "the locale"),
    ("TZ", PlainValue::Zone, "the time zone times are shown in"),
    (
        "TERM",
        PlainValue::Word,
        "the terminal type output is written for",
    ),
    (
        "COLORTERM",
        PlainValue::Word,
        "whether the terminal shows colours",
    ),
    ("NO_COLOR", PlainValue::Word, "output without colours"),
    (
        "CANON_AGENT",
        PlainValue::Word,
        "which of the user's registered Canon agents it runs as (the plan's profile)",
    ),
];

/// Whether `name` is a variable name revive sets: `[A-Za-z_][A-Za-z0-9_]*`. Anything else (`=`,
/// NUL, `%` as in `BASH_FUNC_x%%`, a control character) is refused with the plan.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why `name=value` needs the user's allow before revive sets it, or `None` when it is one of
/// the [harmless](HARMLESS) variables with a plain value.
pub fn allow_reason(name: &str, value: &str) -> Option<String> {
    match HARMLESS.iter().find(|(harmless, _, _)| *harmless == name) {
        Some((_, shape, _)) if shape.admits(value) => None,
        Some((_, shape, _)) => Some(format!(
            "{name} is set without asking only to {}, and this value is not one",
            shape.described()
        )),
        None => Some(format!(
            "{name} is not one of the few harmless variables revive sets without asking"
        )),
    }
}

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

    /// Issue 29: the variables the deny-list let through, and the ones it named, all need an
    /// allow; only the documented harmless ones with plain values do not.
    #[test]
    fn every_variable_needs_an_allow_but_the_harmless_ones_with_plain_values() {
        for (name, value) in [
            ("BASH_FUNC_x", "() { evil; }"),
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", "core.sshCommand"),
            ("GIT_SSH_COMMAND", "evil.sh"),
            ("HOME", "/tmp/evil"),
            ("XDG_CONFIG_HOME", "/tmp/evil"),
            ("CLAUDE_CONFIG_DIR", "/tmp/evil"),
            ("ANTHROPIC_BASE_URL", "https://evil.example"),
            ("OPENAI_BASE_URL", "https://evil.example"),
            ("HTTP_PROXY", "http://evil.example"),
            ("HTTPS_PROXY", "http://evil.example"),
            ("NODE_TLS_REJECT_UNAUTHORIZED", "0"),
            ("SSL_CERT_FILE", "/tmp/evil.pem"),
            ("NODE_EXTRA_CA_CERTS", "/tmp/evil.pem"),
            ("npm_config_script_shell", "/tmp/evil.sh"),
            ("ELECTRON_RUN_AS_NODE", "1"),
            ("NODE_REPL_EXTERNAL_MODULE", "/tmp/evil.js"),
            ("GLIBC_TUNABLES", "glibc.malloc.check=3"),
            ("LOCPATH", "/tmp/evil"),
            ("GEM_PATH", "/tmp/evil"),
            ("LD_PRELOAD", "/tmp/evil.so"),
            ("ld_preload", "/tmp/evil.so"),
            ("DYLD_INSERT_LIBRARIES", "/tmp/evil.dylib"),
            ("PATH", "/tmp/evil:/usr/bin"),
            ("NODE_OPTIONS", "--require /tmp/evil.js"),
            ("PYTHONPATH", "/tmp/evil"),
            ("RUST_LOG", "trace"),
            ("GREETING", "hello"),
            ("lang", "C"),
        ] {
            let reason = allow_reason(name, value)
                .unwrap_or_else(|| panic!("{name}={value} is set without an allow"));
            assert!(reason.starts_with(name), "{reason}");
        }
        for (name, value) in [
            ("LANG", "en_US.UTF-8"),
            ("LANGUAGE", "fr:en"),
            ("LC_ALL", "C"),
            ("LC_TIME", "de_DE.UTF-8@euro"),
            ("TZ", "Europe/Paris"),
            ("TZ", ":America/New_York"),
            ("TZ", "CET-1CEST,M3.5.0,M10.5.0/3"),
            ("TERM", "xterm-256color"),
            ("COLORTERM", "truecolor"),
            ("NO_COLOR", "1"),
            ("CANON_AGENT", "reviewer"),
        ] {
            assert_eq!(allow_reason(name, value), None, "{name}={value}");
        }
        for (name, value) in [
            ("LANG", "/tmp/evil-locale"),
            ("LC_ALL", "../../tmp/evil"),
            ("TZ", "/tmp/evil-zone"),
            ("TZ", ":/tmp/evil-zone"),
            ("TZ", "../../../tmp/evil"),
            ("TERM", "../../tmp/evil"),
            ("CANON_AGENT", "a\u{1b}[2Jb"),
        ] {
            let reason = allow_reason(name, value)
                .unwrap_or_else(|| panic!("{name}={value:?} is set without an allow"));
            assert!(reason.contains("this value is not one"), "{reason}");
        }
        assert!(
            allow_reason("LANG", &"a".repeat(PLAIN_VALUE_MAX + 1)).is_some(),
            "a long value"
        );
    }

    #[test]
    fn only_plain_names_are_variable_names() {
        for name in ["A", "_", "LANG", "lc_all", "A1_B2", "_X"] {
            assert!(is_valid_name(name), "{name}");
        }
        for name in [
            "",
            "1A",
            "BASH_FUNC_x%%",
            "A=B",
            "A\0",
            "A\u{1b}[31m",
            "A B",
            "A-B",
            "\u{e9}",
            "X\u{202e}",
        ] {
            assert!(!is_valid_name(name), "{name:?}");
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
