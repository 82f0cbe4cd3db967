//! The window opens by itself once, at the app's first start (issue 31): until then a new user
//! sees only a small icon in a panel, or nothing where no tray host runs. That it has opened is
//! remembered in the app's settings file in its state directory, so later starts stay in the tray.

use std::io;
use std::path::{Path, PathBuf};

/// The app's settings file, in its state directory.
pub const SETTINGS_FILE: &str = "settings.json";

/// The key that says the window was opened at a first start.
const WINDOW_OPENED: &str = "windowOpenedAtFirstStart";

/// Whether the window opened at a first start, remembered in `state_dir`.
#[derive(Debug)]
pub struct FirstStart {
    path: PathBuf,
}

impl FirstStart {
    /// The record in `state_dir`.
    pub fn in_dir(state_dir: &Path) -> Self {
        Self {
            path: state_dir.join(SETTINGS_FILE),
        }
    }

    /// Whether this is the first start: the window has not opened at a start before. A damaged
    /// file counts as not first (a window that fails to open each time is worse than none).
    pub fn is_first(&self) -> bool {
        match std::fs::read(&self.path) {
            Err(e) => e.kind() == io::ErrorKind::NotFound,
            Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
                .ok()
                .and_then(|v| v.get(WINDOW_OPENED)?.as_bool())
                .is_some_and(|opened| !opened),
        }
    }

    /// Remembers that the window opened (a temporary file renamed over the old one, keeping
    /// whatever else the file holds).
    pub fn remember(&self) -> io::Result<()> {
        let mut settings = std::fs::read(&self.path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .filter(serde_json::Value::is_object)
            .unwrap_or_else(|| serde_json::json!({}));
        settings[WINDOW_OPENED] = serde_json::Value::Bool(true);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, settings.to_string())?;
        std::fs::rename(&tmp, &self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_start_is_first_once_and_remembered_across_starts() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        assert!(FirstStart::in_dir(&state).is_first());
        FirstStart::in_dir(&state).remember().unwrap();
        // A later start (a new value over the same directory) is not first.
        assert!(!FirstStart::in_dir(&state).is_first());
        let saved: serde_json::Value =
            serde_json::from_slice(&std::fs::read(state.join(SETTINGS_FILE)).unwrap()).unwrap();
        assert_eq!(saved, serde_json::json!({ WINDOW_OPENED: true }));
    }

    #[test]
    fn a_damaged_settings_file_opens_no_window_and_other_settings_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SETTINGS_FILE), b"{not json").unwrap();
        assert!(!FirstStart::in_dir(dir.path()).is_first());
        std::fs::write(dir.path().join(SETTINGS_FILE), br#"{"other":1}"#).unwrap();
        assert!(!FirstStart::in_dir(dir.path()).is_first());
        FirstStart::in_dir(dir.path()).remember().unwrap();
        let saved: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(SETTINGS_FILE)).unwrap())
                .unwrap();
        assert_eq!(
            saved,
            serde_json::json!({ "other": 1, WINDOW_OPENED: true })
        );
    }
}
