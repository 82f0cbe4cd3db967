//! The user's on/off choices about what our hooks wait for, each a file in our config directory
//! (`$XDG_CONFIG_HOME/supercode-tray/<name>`, else `~/.config/supercode-tray/<name>`) whose
//! presence means on. The hook reads it for each permission request, so a choice applies to the
//! next request at once and turning it on or off changes nothing in the agent's settings (Codex
//! would stop running changed hooks until the user reviewed them again).

use std::path::PathBuf;

/// One on/off choice.
#[derive(Debug)]
pub struct Choice {
    /// Its file's name in our config directory.
    pub file: &'static str,
    /// What the file says, for a user who finds it.
    pub text: &'static str,
}

impl Choice {
    /// Where its file is, or `None` without a home directory.
    pub fn path(&self) -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(|h| PathBuf::from(h).join(".config"))
            })?;
        Some(base.join("supercode-tray").join(self.file))
    }

    /// True when it is on: its file is a regular file of the user's own (a link or another
    /// user's file does not count).
    pub fn is_on(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.path()
            .and_then(|p| std::fs::symlink_metadata(p).ok())
            .is_some_and(|m| m.is_file() && m.uid() == live_runtime::effective_uid())
    }

    /// Turns it on or off; returns its file's path.
    pub fn set(&self, on: bool) -> std::io::Result<PathBuf> {
        let path = self
            .path()
            .ok_or_else(|| std::io::Error::other("no home directory: set HOME"))?;
        if on {
            let dir = path.parent().expect("a choice's file has a directory");
            std::fs::create_dir_all(dir)?;
            live_runtime::owned_file::write_atomically(dir, self.file, self.text.as_bytes())?;
        } else {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(path)
    }
}
