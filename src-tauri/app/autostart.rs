//! "Start at login": the XDG autostart entry, `$XDG_CONFIG_HOME/autostart/supercode-tray.desktop`
//! (`~/.config/autostart` when the variable is unset), written and removed here.
//!
//! Written by hand rather than by tauri-plugin-autostart (issue 31), which named the file after
//! the product (`Supercode Tray.desktop`, a space in a file name), wrote `Exec=` the running
//! binary unquoted with a trailing space (a debug build of a checkout, when run from one), gave
//! it no icon and ignored `XDG_CONFIG_HOME`. Here the entry runs the installed command,
//! `supercode-tray`, when `PATH` finds it at [`INSTALLED_COMMAND`] (the package's), and
//! otherwise the running binary by its absolute path, quoted as the Desktop Entry spec says; it
//! carries the installed icon's name; it is written to a temporary file renamed over the entry,
//! so a login never finds half an entry.

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// The entry's file name: the desktop entry's (`supercode-tray.desktop`), with no space in it.
pub const ENTRY_FILE: &str = "supercode-tray.desktop";

/// The entry tauri-plugin-autostart wrote in `~/.config/autostart` before: still honoured as
/// "on", and removed when the setting is turned off or the entry rewritten.
pub const LEGACY_ENTRY_FILE: &str = "Supercode Tray.desktop";

/// Where the package installs the command; the entry names it by its name when `PATH` finds it
/// there, so it survives upgrades and names no build of a checkout.
pub const INSTALLED_COMMAND: &str = "/usr/bin/supercode-tray";

/// The command's name, as `PATH` finds it and as the package's desktop entry runs it.
const COMMAND: &str = "supercode-tray";

/// The login item of this user.
#[derive(Clone, Debug)]
pub struct LoginItem {
    /// `…/autostart/supercode-tray.desktop`.
    entry: PathBuf,
    /// `~/.config/autostart/Supercode Tray.desktop`, when there is a home directory.
    legacy: Option<PathBuf>,
}

impl LoginItem {
    /// The login item in the directories the environment names; `None` without a home
    /// directory or `XDG_CONFIG_HOME` to put it in.
    pub fn from_env() -> Option<Self> {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute());
        // The spec: a relative XDG_CONFIG_HOME is invalid and ignored.
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| home.as_ref().map(|h| h.join(".config")))?;
        Some(Self {
            entry: config.join("autostart").join(ENTRY_FILE),
            legacy: home.map(|h| h.join(".config/autostart").join(LEGACY_ENTRY_FILE)),
        })
    }

    /// Whether the app starts at login: its entry (or the one the plugin wrote before) exists.
    pub fn is_enabled(&self) -> bool {
        self.entry.exists() || self.legacy.as_ref().is_some_and(|l| l.exists())
    }

    /// Writes the entry (over a temporary file, renamed), with `Exec=` from [`exec_line`] for
    /// the running binary, and removes the plugin's old one.
    pub fn enable(&self) -> io::Result<()> {
        let running = std::env::current_exe()?;
        let exec = exec_line(
            std::env::var_os("PATH").as_deref(),
            Path::new(INSTALLED_COMMAND),
            &running,
        )?;
        let dir = self
            .entry
            .parent()
            .ok_or_else(|| io::Error::other("the autostart entry has no folder"))?;
        std::fs::create_dir_all(dir)?;
        let tmp = dir.join(format!(".{ENTRY_FILE}.tmp"));
        std::fs::write(&tmp, entry(&exec))?;
        std::fs::rename(&tmp, &self.entry)?;
        self.remove_legacy()
    }

    /// Removes the entry, and the plugin's old one; nothing to remove is not an error.
    pub fn disable(&self) -> io::Result<()> {
        remove_if_there(&self.entry)?;
        self.remove_legacy()
    }

    fn remove_legacy(&self) -> io::Result<()> {
        match &self.legacy {
            Some(legacy) => remove_if_there(legacy),
            None => Ok(()),
        }
    }
}

fn remove_if_there(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The autostart entry that runs `exec` (an `Exec=` value as [`exec_line`] makes it).
pub fn entry(exec: &str) -> String {
    format!(
        "[Desktop Entry]\n\
         Type=Application\n\
         Name=Supercode Tray\n\
         Comment=Local control centre for AI coding-agent runtimes\n\
         Exec={exec}\n\
         Icon={COMMAND}\n\
         Terminal=false\n\
         X-GNOME-Autostart-enabled=true\n"
    )
}

/// The `Exec=` value: `supercode-tray` when the first `supercode-tray` in `path_var` is
/// `installed` (the same file, whatever link leads to it), otherwise `running` by its absolute
/// path, quoted ([`quote_exec_arg`]). A path that is not UTF-8 cannot be written in a desktop
/// entry: an error.
pub fn exec_line(path_var: Option<&OsStr>, installed: &Path, running: &Path) -> io::Result<String> {
    let found = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(COMMAND))
        .find(|candidate| candidate.is_file());
    let same_file = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if found.is_some_and(|f| same_file(&f, installed)) {
        return Ok(COMMAND.to_owned());
    }
    let running = running.to_str().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "the app's path is not UTF-8, which a desktop entry cannot hold",
        )
    })?;
    Ok(quote_exec_arg(running))
}

/// `arg` as one argument of an `Exec=` value, by the Desktop Entry spec: in double quotes, with
/// `"`, `` ` ``, `$` and `\` escaped by a backslash and `%` doubled (a field code otherwise);
/// then escaped as any string value is (`\` doubled, newline, tab and carriage return as `\n`,
/// `\t`, `\r`), since the file holds the value that unquoting reads.
pub fn quote_exec_arg(arg: &str) -> String {
    let mut quoted = String::from("\"");
    for c in arg.chars() {
        match c {
            '"' | '`' | '$' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            '%' => quoted.push_str("%%"),
            _ => quoted.push(c),
        }
    }
    quoted.push('"');
    let mut value = String::with_capacity(quoted.len());
    for c in quoted.chars() {
        match c {
            '\\' => value.push_str("\\\\"),
            '\n' => value.push_str("\\n"),
            '\t' => value.push_str("\\t"),
            '\r' => value.push_str("\\r"),
            _ => value.push(c),
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_path_is_quoted_and_a_reserved_character_escaped_as_the_spec_says() {
        assert_eq!(
            quote_exec_arg("/opt/Supercode Tray/supercode-tray-app"),
            "\"/opt/Supercode Tray/supercode-tray-app\""
        );
        // `$` and `"` get a backslash when quoted, and that backslash is doubled in the file.
        assert_eq!(quote_exec_arg("/a$b\"c"), r#""/a\\$b\\"c""#);
        assert_eq!(quote_exec_arg(r"/a\b"), r#""/a\\\\b""#);
        assert_eq!(quote_exec_arg("/a`b"), r#""/a\\`b""#);
        // `%` would start a field code.
        assert_eq!(quote_exec_arg("/100%/app"), "\"/100%%/app\"");
        // A newline cannot be in the file's line: written as the string escape.
        assert_eq!(quote_exec_arg("/a\nb"), "\"/a\\nb\"");
    }

    #[test]
    fn the_installed_command_is_named_only_when_path_finds_it_there() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("usr-bin");
        let other = dir.path().join("other");
        for d in [&bin, &other] {
            std::fs::create_dir_all(d).unwrap();
            std::fs::write(d.join(COMMAND), b"").unwrap();
        }
        let installed = bin.join(COMMAND);
        let running = Path::new("/home/u/src/target/debug/supercode-tray-app");
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();

        let found = exec_line(Some(&path(&[&bin])), &installed, running).unwrap();
        assert_eq!(found, "supercode-tray");
        // Another supercode-tray first on PATH: PATH would not run the installed one.
        let shadowed = exec_line(Some(&path(&[&other, &bin])), &installed, running).unwrap();
        assert_eq!(shadowed, format!("\"{}\"", running.display()));
        // Not on PATH at all (or no PATH): the running binary.
        assert_eq!(
            exec_line(Some(&path(&[&other])), &installed, running).unwrap(),
            shadowed
        );
        assert_eq!(exec_line(None, &installed, running).unwrap(), shadowed);
        // Reached through a link to its folder (merged /usr: /bin -> usr/bin): the same file.
        let link = dir.path().join("bin");
        std::os::unix::fs::symlink(&bin, &link).unwrap();
        assert_eq!(
            exec_line(Some(&path(&[&link])), &installed, running).unwrap(),
            "supercode-tray"
        );
    }

    #[test]
    fn the_entry_runs_the_command_with_the_installed_icon_and_no_trailing_space() {
        let text = entry("supercode-tray");
        assert!(text.starts_with("[Desktop Entry]\n"), "{text}");
        assert!(text.contains("\nExec=supercode-tray\n"), "{text}");
        assert!(text.contains("\nIcon=supercode-tray\n"), "{text}");
        assert!(text.lines().all(|l| !l.ends_with(' ')), "{text}");
    }

    #[test]
    fn enabling_writes_one_entry_and_disabling_removes_it_and_the_plugins_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let autostart = dir.path().join("config/autostart");
        let legacy = dir
            .path()
            .join("home/.config/autostart")
            .join(LEGACY_ENTRY_FILE);
        let item = LoginItem {
            entry: autostart.join(ENTRY_FILE),
            legacy: Some(legacy.clone()),
        };
        assert!(!item.is_enabled());
        // An entry the plugin wrote counts as on, and is replaced by ours.
        std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
        std::fs::write(&legacy, b"[Desktop Entry]\nExec=/old/debug/build \n").unwrap();
        assert!(item.is_enabled());
        item.enable().unwrap();
        assert!(!legacy.exists(), "the plugin's entry is gone");
        let names: Vec<_> = std::fs::read_dir(&autostart)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [ENTRY_FILE], "one entry, no temporary file left");
        let text = std::fs::read_to_string(autostart.join(ENTRY_FILE)).unwrap();
        assert!(text.contains("\nIcon=supercode-tray\n"), "{text}");
        assert!(item.is_enabled());
        item.disable().unwrap();
        assert!(!item.is_enabled());
        // Off when already off is fine.
        item.disable().unwrap();
    }
}
