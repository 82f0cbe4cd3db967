//! What the user hears about agents: the notification for a [`CoreEvent::AgentAlert`], and the
//! "Notify me when an agent needs me" setting, on by default and remembered across restarts in a
//! small file in the app's state directory.
//!
//! The core decides when an alert is due (once per entry into a state, one per runtime for a
//! burst); this module only words it and honours the setting.
//!
//! [`CoreEvent::AgentAlert`]: supercode_core::CoreEvent::AgentAlert

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use supercode_core::view::{AgentActionView, AgentState, AgentStateView};

/// The file, in the state directory, that holds the setting.
pub const SETTINGS_FILE: &str = "agent-alerts.json";

/// The most characters of an approval's detail (the command) in a notification body: enough
/// for a command line, short enough that the servers that cut long bodies keep the rest.
pub const DETAIL_CHARS: usize = 300;

/// What a [`CoreEvent::AgentAlert`](supercode_core::CoreEvent::AgentAlert) says, as the
/// notification needs it (all plain text the core sanitized; nothing secret).
#[derive(Clone, Debug, Default)]
pub struct AlertText<'a> {
    /// The runtime's name.
    pub name: &'a str,
    /// What the agent is doing or asking.
    pub title: Option<&'a str>,
    /// The command an approval is for, or why it is not answering.
    pub detail: Option<&'a str>,
    /// Whether the notification offers the agent's actions itself (the server shows actions).
    pub actionable: bool,
}

/// A notification: its heading and body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// The summary line.
    pub heading: &'static str,
    /// What happened and what the user can do.
    pub body: String,
}

/// The notification for an agent that entered `state`: what happened (the agent's question and
/// the command it asks about, or why it does not answer) and what the user can do about it.
/// `None` for a state the user is not told about.
pub fn notification(state: AgentState, alert: &AlertText<'_>) -> Option<Notice> {
    let name = alert.name;
    let asks = match alert.title {
        Some(title) if !title.is_empty() => format!("{name}: {title}"),
        _ => name.to_owned(),
    };
    let detail = alert.detail.filter(|d| !d.trim().is_empty()).map(|d| {
        let mut detail = d.trim().to_owned();
        supercode_core::text::cut(&mut detail, DETAIL_CHARS);
        detail
    });
    let (heading, body) = match state {
        AgentState::NeedsApproval => {
            let todo = if alert.actionable {
                "Approve or deny it here, or in the tray menu."
            } else {
                "Approve or deny it in the tray menu or the window."
            };
            let body = match detail {
                Some(detail) => format!("{asks}\n{detail}\n{todo}"),
                None => format!("{asks}\n{todo}"),
            };
            ("Needs your approval", body)
        }
        AgentState::NeedsInput => (
            "Waiting for you",
            format!("{asks}\nAttach to it from the tray menu to answer."),
        ),
        AgentState::Error => {
            let body = match detail {
                Some(detail) => format!("{asks}\n{detail}"),
                None => asks,
            };
            (
                "Failed",
                format!("{body}\nAttach to it from the tray menu to see more."),
            )
        }
        AgentState::NotAnswering => {
            let why = detail.unwrap_or_else(|| "it does not answer its status API".to_owned());
            (
                "Not answering",
                format!(
                    "{name} is running but does not answer: {why}\nIt may be busy, stuck or \
                     paused; this clears by itself when it answers again. Attach to it from \
                     the tray menu to look."
                ),
            )
        }
        AgentState::Working | AgentState::Idle | AgentState::Unknown => return None,
    };
    Some(Notice { heading, body })
}

/// The notification for a runtime whose process exited without unregistering: Revive is
/// offered only for a runtime the tray can revive.
pub fn runtime_died(name: &str, revivable: bool) -> Notice {
    let body = if revivable {
        format!("{name} stopped unexpectedly. Revive it from the tray menu or the window.")
    } else {
        format!(
            "{name} stopped unexpectedly. The tray cannot relaunch it; start it again the way \
             you started it."
        )
    };
    Notice {
        heading: "Runtime stopped",
        body,
    }
}

/// `text` for a notification server that reads markup in bodies (the spec's `body-markup`: `<b>`,
/// `<i>`, `<u>`, `<a href>`, `<img>` and entities): `&`, `<` and `>` as entities, so what an
/// agent wrote is shown as written, never rendered or made a link.
pub fn markup_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// What choosing a notification's button does. An action is for the document it was shown
/// from: it carries the runtime, the action and that document's revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Invoke the agent's action at once (one the core says needs no confirmation).
    Act {
        /// The runtime's inventory id.
        id: String,
        /// The action id.
        action: String,
        /// The revision of the document the notification showed.
        revision: u64,
    },
    /// Open the window on the action's confirmation (one the core says to ask about: a
    /// destructive action, or one with a question). The window shows the agent's latest
    /// document and acts on the revision it shows.
    Confirm {
        /// The runtime's inventory id.
        id: String,
        /// The action id.
        action: String,
    },
    /// Open the window.
    Open,
}

/// The key of the "Open" button. Action ids match `^[a-z0-9][a-z0-9._-]{0,63}$`, so no action's
/// key (its id, or `confirm:` and its id) can be this one.
pub const OPEN_KEY: &str = "app:open";
/// What the server sends when the notification itself is clicked (the spec's default action).
pub const DEFAULT_KEY: &str = "default";

/// The buttons of an alert's notification, in order, as (key, label, choice): the agent's
/// actions of the document of `revision` (one the core says to ask about labelled with `…`, as
/// in the menu; none without a revision, as in the menu), then Open.
pub fn buttons(
    id: &str,
    actions: &[AgentActionView],
    revision: Option<u64>,
) -> Vec<(String, String, Choice)> {
    let offered = revision.map(|revision| actions.iter().map(move |a| (a, revision)));
    let mut buttons: Vec<(String, String, Choice)> = offered
        .into_iter()
        .flatten()
        .map(|(a, revision)| {
            let (id, action) = (id.to_owned(), a.id.clone());
            if a.confirm.is_some() {
                (
                    format!("confirm:{action}"),
                    format!("{}\u{2026}", a.label),
                    Choice::Confirm { id, action },
                )
            } else {
                (
                    action.clone(),
                    a.label.clone(),
                    Choice::Act {
                        id,
                        action,
                        revision,
                    },
                )
            }
        })
        .collect();
    buttons.push((OPEN_KEY.to_owned(), "Open".to_owned(), Choice::Open));
    buttons
}

/// The choice a button's `key` names among `buttons`; a click on the notification itself opens
/// the window. `None` for a key this notification never offered.
pub fn chosen(buttons: &[(String, String, Choice)], key: &str) -> Option<Choice> {
    if key == DEFAULT_KEY {
        return Some(Choice::Open);
    }
    buttons
        .iter()
        .find(|(k, _, _)| k == key)
        .map(|(_, _, choice)| choice.clone())
}

/// What one runtime's notification was shown for: its state and question. A different one
/// replaces it; a runtime whose shown state moved off it has it withdrawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    /// The server's id of the notification (for `replaces_id` and `CloseNotification`); `None`
    /// until the server answered.
    pub server_id: Option<u32>,
    /// The state it told of.
    pub state: AgentState,
    /// The question it showed.
    pub title: Option<String>,
    /// The detail it showed.
    pub detail: Option<String>,
}

impl Shown {
    /// Whether `view` (a runtime's state as a snapshot shows it) is still what this notification
    /// tells of. `not-answering` is one state whatever its reason says.
    pub fn still_holds(&self, view: Option<&AgentStateView>) -> bool {
        view.is_some_and(|view| {
            view.value == self.state
                && (self.state == AgentState::NotAnswering
                    || (view.title == self.title && view.detail == self.detail))
        })
    }
}

/// The notifications shown per runtime (by inventory id), managed by the app.
#[derive(Debug, Default)]
pub struct Notifications {
    /// By runtime: the notification and the token of the showing that made it.
    shown: Mutex<HashMap<String, (Shown, u64)>>,
    next_token: AtomicU64,
}

impl Notifications {
    /// Starts showing `shown` for runtime `id`, at once (before the server is asked, so a
    /// snapshot that arrives meanwhile is compared with it): returns the token naming this
    /// showing and the server id of the notification it replaces, if one is shown. A replacement
    /// keeps the server's id, so the token is what tells showings apart.
    pub fn begin(&self, id: &str, mut shown: Shown) -> (u64, Option<u32>) {
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let mut all = self.lock();
        let replaces = all.get(id).and_then(|(s, _)| s.server_id);
        shown.server_id = replaces;
        all.insert(id.to_owned(), (shown, token));
        (token, replaces)
    }

    /// The server shows showing `token` of runtime `id` as `server_id`. `false` when it was
    /// withdrawn or replaced meanwhile: the caller closes it.
    pub fn shown(&self, id: &str, token: u64, server_id: u32) -> bool {
        match self.lock().get_mut(id) {
            Some((shown, t)) if *t == token => {
                shown.server_id = Some(server_id);
                true
            }
            _ => false,
        }
    }

    /// Forgets showing `token` of runtime `id` (the server closed it, or the user chose it).
    pub fn closed(&self, id: &str, token: u64) {
        let mut all = self.lock();
        if all.get(id).is_some_and(|(_, t)| *t == token) {
            all.remove(id);
        }
    }

    /// Whether showing `token` is still the notification shown for runtime `id`: the buttons of
    /// one replaced since do nothing.
    pub fn is_current(&self, id: &str, token: u64) -> bool {
        self.lock().get(id).is_some_and(|(_, t)| *t == token)
    }

    /// The notifications whose runtime's state moved on (`state_of` a runtime id is its state
    /// in the latest snapshot; `None` once it is gone): each is forgotten here, and the server
    /// ids of those shown already are returned for the caller to withdraw (one still being
    /// shown is closed by its showing, which finds itself forgotten).
    pub fn moved_on<'s>(&self, state_of: impl Fn(&str) -> Option<&'s AgentStateView>) -> Vec<u32> {
        let mut all = self.lock();
        let mut gone = Vec::new();
        all.retain(|id, (s, _)| {
            let keep = s.still_holds(state_of(id));
            if !keep {
                gone.extend(s.server_id);
            }
            keep
        });
        gone
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Shown, u64)>> {
        self.shown.lock().unwrap_or_else(|e| e.into_inner())
    }
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

    /// Flips the setting; returns the new value.
    pub fn toggle(&self) -> (bool, io::Result<()>) {
        let next = !self.enabled();
        (next, self.set(next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asking<'a>(detail: Option<&'a str>, actionable: bool) -> AlertText<'a> {
        AlertText {
            name: "demo-a",
            title: Some("Run the test suite?"),
            detail,
            actionable,
        }
    }

    #[test]
    fn each_state_the_core_alerts_on_gets_its_own_heading_and_the_others_none() {
        let mut headings = Vec::new();
        for state in AgentState::ALL {
            let shown = notification(state, &asking(None, false));
            // The core alerts on exactly these states; each gets a notification.
            assert_eq!(
                shown.is_some(),
                state.needs_you() || state.is_trouble(),
                "{state:?}"
            );
            if let Some(notice) = shown {
                headings.push(notice.heading);
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
    }

    #[test]
    fn an_approval_shows_the_command_it_is_for_capped_and_says_where_to_answer_issue_31() {
        let notice = notification(
            AgentState::NeedsApproval,
            &asking(Some("cargo test --workspace"), true),
        )
        .unwrap();
        assert_eq!(
            notice.body,
            "demo-a: Run the test suite?\ncargo test --workspace\nApprove or deny it here, or in the tray menu."
        );
        let plain = notification(AgentState::NeedsApproval, &asking(None, false)).unwrap();
        assert!(plain
            .body
            .ends_with("Approve or deny it in the tray menu or the window."));

        let long = "x".repeat(DETAIL_CHARS + 50);
        let notice = notification(AgentState::NeedsApproval, &asking(Some(&long), true)).unwrap();
        let shown = notice.body.lines().nth(1).unwrap();
        assert_eq!(shown.chars().count(), DETAIL_CHARS);
        assert!(shown.ends_with('\u{2026}'));
    }

    #[test]
    fn not_answering_says_why_and_that_it_clears_by_itself_issue_31() {
        let notice = notification(
            AgentState::NotAnswering,
            &AlertText {
                name: "demo-a",
                title: None,
                detail: Some("no response headers within 5s"),
                actionable: false,
            },
        )
        .unwrap();
        assert!(notice
            .body
            .starts_with("demo-a is running but does not answer: no response headers within 5s"));
        assert!(notice.body.contains("clears by itself"));
    }

    #[test]
    fn a_runtime_that_died_is_offered_revive_only_when_it_is_revivable_issue_31() {
        assert!(runtime_died("alpha", true).body.contains("Revive it"));
        let not = runtime_died("alpha", false).body;
        assert!(!not.contains("Revive"), "{not}");
        assert!(not.contains("cannot relaunch"), "{not}");
    }

    #[test]
    fn markup_in_an_agents_text_is_shown_as_written_where_the_server_reads_markup() {
        assert_eq!(
            markup_escaped("<a href=\"https://x\">Approve</a> & <b>now</b>"),
            "&lt;a href=\"https://x\"&gt;Approve&lt;/a&gt; &amp; &lt;b&gt;now&lt;/b&gt;"
        );
        assert_eq!(markup_escaped("cargo test"), "cargo test");
    }

    /// An action as the core makes its view: a destructive one carries the question to ask.
    fn action(id: &str, destructive: bool) -> AgentActionView {
        AgentActionView {
            id: id.into(),
            label: id.to_uppercase(),
            destructive,
            confirm: destructive.then(|| format!("{id}?")),
        }
    }

    #[test]
    fn buttons_act_at_once_confirm_destructive_ones_in_the_window_and_carry_the_revision() {
        let buttons = buttons(
            "lre_a",
            &[action("approve", false), action("deny", true)],
            Some(7),
        );
        let keys: Vec<(&str, &str)> = buttons
            .iter()
            .map(|(k, l, _)| (k.as_str(), l.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("approve", "APPROVE"),
                ("confirm:deny", "DENY\u{2026}"),
                (OPEN_KEY, "Open")
            ]
        );
        assert_eq!(
            chosen(&buttons, "approve"),
            Some(Choice::Act {
                id: "lre_a".into(),
                action: "approve".into(),
                revision: 7
            })
        );
        assert_eq!(
            chosen(&buttons, "confirm:deny"),
            Some(Choice::Confirm {
                id: "lre_a".into(),
                action: "deny".into(),
            })
        );
        assert_eq!(chosen(&buttons, DEFAULT_KEY), Some(Choice::Open));
        assert_eq!(
            chosen(&buttons, "deny"),
            None,
            "a destructive action never runs at once"
        );
        assert_eq!(chosen(&buttons, "__closed"), None);
        assert_eq!(
            super::buttons("lre_a", &[action("approve", false)], None),
            [(OPEN_KEY.to_owned(), "Open".to_owned(), Choice::Open)],
            "a document without a revision offers nothing to act on, as in the menu"
        );
    }

    fn view(value: AgentState, title: &str) -> AgentStateView {
        AgentStateView {
            value,
            title: Some(title.into()),
            ..AgentStateView::unknown()
        }
    }

    #[test]
    fn a_notification_is_replaced_and_withdrawn_when_its_runtime_moves_on_issue_31() {
        let notifications = Notifications::default();
        let shown = |state, title: &str| Shown {
            server_id: None,
            state,
            title: Some(title.into()),
            detail: None,
        };
        let (old, replaces) = notifications.begin("a", shown(AgentState::NeedsApproval, "Run it?"));
        assert_eq!(replaces, None);
        assert!(notifications.shown("a", old, 1));
        let (token, replaces) =
            notifications.begin("a", shown(AgentState::NeedsApproval, "Run it?"));
        assert_eq!(replaces, Some(1), "the second showing replaces the first");
        assert!(
            !notifications.shown("a", old, 1),
            "the replaced showing is not current"
        );
        assert!(notifications.shown("a", token, 1));
        let (b, _) = notifications.begin("b", shown(AgentState::NotAnswering, "x"));
        assert!(notifications.shown("b", b, 2));
        assert!(
            notifications.is_current("a", token) && !notifications.is_current("a", old),
            "the replaced showing's buttons do nothing"
        );
        notifications.closed("a", old);
        assert!(
            notifications.is_current("a", token),
            "a replaced showing closes nothing"
        );

        let mut states = std::collections::HashMap::from([
            ("a", view(AgentState::NeedsApproval, "Run it?")),
            // A new reason is still "not answering".
            ("b", view(AgentState::NotAnswering, "other")),
        ]);
        assert!(notifications.moved_on(|id| states.get(id)).is_empty());

        // A showing the server has not answered yet is compared (and withdrawn) all the same.
        let (c, _) = notifications.begin("c", shown(AgentState::NeedsInput, "Next?"));
        assert!(
            notifications.moved_on(|id| states.get(id)).is_empty(),
            "nothing to close yet"
        );
        assert!(
            !notifications.shown("c", c, 3),
            "its showing closes it itself"
        );

        states.insert("a", view(AgentState::Working, "Running it"));
        assert_eq!(notifications.moved_on(|id| states.get(id)), [1]);
        assert!(
            !notifications.is_current("a", token),
            "forgotten once withdrawn"
        );

        states.clear();
        assert_eq!(
            notifications.moved_on(|id| states.get(id)),
            [2],
            "a runtime gone withdraws it"
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
    fn turned_off_the_setting_says_so_and_turned_on_again_it_does_too() {
        let dir = tempfile::tempdir().unwrap();
        let alerts = AgentAlerts::load(dir.path());
        assert!(alerts.enabled());
        alerts.set(false).unwrap();
        assert!(!alerts.enabled());
        alerts.set(true).unwrap();
        assert!(alerts.enabled());
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
