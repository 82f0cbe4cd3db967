//! What the user hears about agents: the notification for a [`CoreEvent::AgentAlert`], and the
//! "Notify me when an agent needs me" setting, on by default and remembered across restarts in a
//! small file in the app's state directory.
//!
//! The core decides when an alert is due (once per entry into a state, one per runtime for a
//! burst); this module only words it and honours the setting.
//!
//! [`CoreEvent::AgentAlert`]: supercode_core::CoreEvent::AgentAlert

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use supercode_core::view::AgentState;

/// The file, in the state directory, that holds the setting.
pub const SETTINGS_FILE: &str = "agent-alerts.json";

/// The notification for an agent that entered `state`: its title, and a body of the runtime's
/// name and the agent's title (both plain text the core sanitized; nothing secret). `None` for a
/// state the user is not told about.
pub fn notification(
    state: AgentState,
    name: &str,
    title: Option<&str>,
) -> Option<(&'static str, String)> {
    let heading = match state {
        AgentState::NeedsApproval => "Needs your approval",
        AgentState::NeedsInput => "Waiting for you",
        AgentState::Error => "Failed",
        AgentState::NotAnswering => "Not answering",
        AgentState::Working | AgentState::Idle | AgentState::Unknown => return None,
    };
    let body = match title {
        Some(title) if !title.is_empty() => format!("{name}: {title}"),
        _ => name.to_owned(),
    };
    Some((heading, body))
}

/// The setting, as the app holds it (managed Tauri state).
#[derive(Debug)]
pub struct AgentAlerts {
    enabled: AtomicBool,
    path: PathBuf,
}

impl AgentAlerts {
    /// The setting remembered in `state_dir`; on when nothing (or nothing readable) is
    /// remembered, so a damaged file never silences the alerts.
    pub fn load(state_dir: &Path) -> Self {
        let path = state_dir.join(SETTINGS_FILE);
        let enabled = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
            .and_then(|v| v.get("notifyWhenAgentNeedsYou")?.as_bool())
            .unwrap_or(true);
        Self {
            enabled: AtomicBool::new(enabled),
            path,
        }
    }

    /// Whether agent notifications are shown.
    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns them on or off and remembers it (a temporary file renamed over the old one, so a
    /// crash mid-write leaves the old setting). The setting changes for this run even when it
    /// cannot be saved; the error says why it will not be remembered.
    pub fn set(&self, enabled: bool) -> io::Result<()> {
        self.enabled.store(enabled, Ordering::Relaxed);
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let text = serde_json::json!({ "notifyWhenAgentNeedsYou": enabled }).to_string();
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }

    /// The notification to show for an agent that entered `state`, or `None` when the user
    /// turned agent notifications off (or is not told about that state).
    pub fn notification_for(
        &self,
        state: AgentState,
        name: &str,
        title: Option<&str>,
    ) -> Option<(&'static str, String)> {
        if self.enabled() {
            notification(state, name, title)
        } else {
            None
        }
    }

    /// Flips the setting; returns the new value.
    pub fn toggle(&self) -> (bool, io::Result<()>) {
        let next = !self.enabled();
        (next, self.set(next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_state_the_core_alerts_on_gets_its_own_heading_and_the_others_none() {
        let mut headings = Vec::new();
        for state in AgentState::ALL {
            let shown = notification(state, "demo-a", Some("Run the test suite?"));
            // The core alerts on exactly these states; each gets a notification.
            assert_eq!(
                shown.is_some(),
                state.needs_you() || state.is_trouble(),
                "{state:?}"
            );
            if let Some((heading, body)) = shown {
                assert_eq!(body, "demo-a: Run the test suite?", "{state:?}");
                headings.push(heading);
            }
        }
        assert_eq!(
            headings,
            [
                "Needs your approval",
                "Waiting for you",
                "Failed",
                "Not answering"
            ]
        );
        assert_eq!(
            notification(AgentState::NeedsInput, "demo-a", None),
            Some(("Waiting for you", "demo-a".to_owned()))
        );
    }

    #[test]
    fn the_setting_is_on_by_default_and_remembered_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let state_dir = dir.path().join("state");
        assert!(AgentAlerts::load(&state_dir).enabled(), "on by default");

        let alerts = AgentAlerts::load(&state_dir);
        let (now, saved) = alerts.toggle();
        saved.unwrap();
        assert!(!now && !alerts.enabled());
        assert!(
            !AgentAlerts::load(&state_dir).enabled(),
            "a restart remembers off"
        );
        AgentAlerts::load(&state_dir).set(true).unwrap();
        assert!(AgentAlerts::load(&state_dir).enabled(), "and on again");
    }

    #[test]
    fn turned_off_no_agent_state_is_notified_and_turned_on_again_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let alerts = AgentAlerts::load(dir.path());
        let shown = |alerts: &AgentAlerts| {
            AgentState::ALL
                .iter()
                .filter(|s| alerts.notification_for(**s, "demo-a", None).is_some())
                .count()
        };
        assert_eq!(shown(&alerts), 4);
        alerts.set(false).unwrap();
        assert_eq!(shown(&alerts), 0);
        alerts.set(true).unwrap();
        assert_eq!(shown(&alerts), 4);
    }

    #[test]
    fn a_damaged_settings_file_leaves_the_alerts_on() {
        let dir = tempfile::tempdir().unwrap();
        for junk in [
            "",
            "not json",
            "[false]",
            "{\"notifyWhenAgentNeedsYou\":\"no\"}",
        ] {
            std::fs::write(dir.path().join(SETTINGS_FILE), junk).unwrap();
            assert!(AgentAlerts::load(dir.path()).enabled(), "{junk:?}");
        }
    }
}
