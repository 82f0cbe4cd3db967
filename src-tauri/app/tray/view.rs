//! What the tray shows, as a plain value ([`TrayView`]) derived from the inventory: which icon,
//! the tooltip, and the menu's entries, their texts and their order. Nothing here needs a display:
//! the tray module draws it, and its tests read it as it is.
//!
//! Runtimes come in the core's order (those whose agent needs the user first), each as a
//! submenu with Attach and the actions its agent offers. Everything a runtime says (its name,
//! its agent's title, its action labels) is untrusted plain text: capped here and escaped so the
//! platform menu shows it as it is, never as a mnemonic.

use std::fmt;

use supercode_core::view::{
    AgentActionView, AgentState, PendingState, PendingView, RuntimeView, Snapshot,
};

const TRAY_IDLE: &[u8] = include_bytes!("../../../icons/tray-idle.png");
const TRAY_LIVE: &[u8] = include_bytes!("../../../icons/tray-live.png");
const TRAY_PENDING: &[u8] = include_bytes!("../../../icons/tray-pending.png");
const TRAY_ATTENTION: &[u8] = include_bytes!("../../../icons/tray-attention.png");

/// The most characters of a runtime's submenu title: long enough for a name, the state and the
/// start of the agent's title, short enough that a panel's menu stays narrow.
pub const SUBMENU_TITLE_CHARS: usize = 80;
/// The most characters of an agent's detail line (the command an approval is for): as wide as
/// a submenu title, so the submenu is no wider than the menu it opens from.
pub const DETAIL_CHARS: usize = SUBMENU_TITLE_CHARS;
/// The most characters of an action's menu label (the API caps labels at 64 already).
pub const ACTION_LABEL_CHARS: usize = 64;
/// The most characters of a runtime's name in a menu line: enough to tell names apart, short
/// enough that the state after it ("— Needs approval") always fits in [`SUBMENU_TITLE_CHARS`]
/// (issue 31: a long name pushed the state out of the line).
pub const RUNTIME_NAME_CHARS: usize = 32;

/// The state the icon shows: an agent that needs you beats a registration waiting beats
/// runtimes live beats idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrayState {
    /// No live runtime, nothing waiting.
    Idle,
    /// At least one runtime is running.
    Live,
    /// A registration is waiting for approval.
    Pending,
    /// A runtime's agent waits for the user ([`AgentState::needs_you`]).
    NeedsYou,
}

impl TrayState {
    /// Every state, each with its own icon.
    pub const ALL: [Self; 4] = [Self::Idle, Self::Live, Self::Pending, Self::NeedsYou];

    /// The state's icon: its file name (where the icon is a file, `indicator`) and its PNG.
    pub(super) fn icon(self) -> (&'static str, &'static [u8]) {
        match self {
            Self::Idle => ("tray-idle.png", TRAY_IDLE),
            Self::Live => ("tray-live.png", TRAY_LIVE),
            Self::Pending => ("tray-pending.png", TRAY_PENDING),
            Self::NeedsYou => ("tray-attention.png", TRAY_ATTENTION),
        }
    }
}

/// The app's own settings the menu shows as check items.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Toggles {
    /// "Start at login" is on.
    pub autostart: bool,
    /// "Notify me when an agent needs me" is on.
    pub agent_alerts: bool,
}

/// What a menu item does: built here, parsed back here, dispatched on by
/// [`super::super::on_menu_event`]. Ids carry only opaque endpoints, catalog ids and profile names,
/// never anything secret, so they are safe to log.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MenuId {
    /// Attach the runtime with this inventory id.
    Attach(String),
    /// Open the revive confirmation of the runtime with this inventory id.
    Revive(String),
    /// Take the exited runtime with this inventory id off the list.
    Dismiss(String),
    /// Approve the registration of this profile.
    Approve(String),
    /// Invoke an action the runtime's agent offers, without asking first, as chosen from the
    /// status document the menu showed: the core refuses it once the runtime's prompt changed.
    Act {
        /// The runtime's inventory id.
        id: String,
        /// The action id (`^[a-z0-9][a-z0-9._-]{0,63}$`, so it never holds a `:`).
        action: String,
        /// The `revision` of the status document the menu showed.
        revision: u64,
    },
    /// Open the window on the confirmation of an action the core says to ask about first. The
    /// window asks from the state it shows, and acts on that state's revision.
    ConfirmAct {
        /// The runtime's inventory id.
        id: String,
        /// The action id.
        action: String,
    },
    /// The greyed-out "No live runtimes" line.
    NoRuntimes,
    /// The greyed-out line of what the agent of this runtime asks about (the command).
    Detail(String),
    /// Show the window.
    Open,
    /// Turn "Start at login" on or off.
    Autostart,
    /// Turn "Notify me when an agent needs me" on or off.
    AgentAlerts,
    /// Open the logs folder.
    Logs,
    /// Quit the app.
    Quit,
}

impl MenuId {
    /// The id `text` names, as [`fmt::Display`] wrote it; `None` for an id this menu never
    /// built.
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text.split_once(':') {
            Some(("attach", id)) => Self::Attach(id.to_owned()),
            Some(("revive", id)) => Self::Revive(id.to_owned()),
            Some(("dismiss", id)) => Self::Dismiss(id.to_owned()),
            Some(("approve", profile)) => Self::Approve(profile.to_owned()),
            Some(("detail", id)) => Self::Detail(id.to_owned()),
            // The action (and the revision) come first: they never hold a `:`, an inventory id
            // may.
            Some(("act", rest)) => {
                let (action, rest) = rest.split_once(':')?;
                let (revision, id) = rest.split_once(':')?;
                if action.is_empty() || id.is_empty() {
                    return None;
                }
                Self::Act {
                    id: id.to_owned(),
                    action: action.to_owned(),
                    revision: revision.parse().ok()?,
                }
            }
            Some(("confirm-act", rest)) => {
                let (action, id) = rest.split_once(':')?;
                if action.is_empty() || id.is_empty() {
                    return None;
                }
                Self::ConfirmAct {
                    id: id.to_owned(),
                    action: action.to_owned(),
                }
            }
            Some(_) => return None,
            None => match text {
                "none" => Self::NoRuntimes,
                "open" => Self::Open,
                "autostart" => Self::Autostart,
                "agent-alerts" => Self::AgentAlerts,
                "logs" => Self::Logs,
                "quit" => Self::Quit,
                _ => return None,
            },
        })
    }
}

impl fmt::Display for MenuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Attach(id) => write!(f, "attach:{id}"),
            Self::Revive(id) => write!(f, "revive:{id}"),
            Self::Dismiss(id) => write!(f, "dismiss:{id}"),
            Self::Approve(profile) => write!(f, "approve:{profile}"),
            Self::Act {
                id,
                action,
                revision,
            } => write!(f, "act:{action}:{revision}:{id}"),
            Self::ConfirmAct { id, action } => write!(f, "confirm-act:{action}:{id}"),
            Self::NoRuntimes => f.write_str("none"),
            Self::Detail(id) => write!(f, "detail:{id}"),
            Self::Open => f.write_str("open"),
            Self::Autostart => f.write_str("autostart"),
            Self::AgentAlerts => f.write_str("agent-alerts"),
            Self::Logs => f.write_str("logs"),
            Self::Quit => f.write_str("quit"),
        }
    }
}

/// One line of the menu.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A clickable (or greyed-out) item.
    Item {
        /// What choosing it does.
        id: MenuId,
        /// What the user reads.
        label: String,
        /// Whether it can be clicked.
        enabled: bool,
    },
    /// A check item ("Start at login", "Notify me when an agent needs me").
    Check {
        /// What choosing it does.
        id: MenuId,
        /// What the user reads.
        label: String,
        /// Whether it shows its check mark.
        checked: bool,
    },
    /// A submenu: one runtime whose agent the tray hears from, with Attach and its actions.
    Submenu {
        /// The runtime's inventory id: which runtime the submenu is for, whatever it says.
        runtime: String,
        /// Its title: the runtime's name, its agent's state and title (capped, plain text).
        label: String,
        /// Its items, top to bottom.
        entries: Vec<Entry>,
    },
    /// A separator line.
    Separator,
}

/// Everything the tray shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrayView {
    /// Which icon.
    pub state: TrayState,
    /// The tooltip where the platform shows one; on Linux the item's title and icon
    /// description, which panels show on hover (`tray/indicator.rs`).
    pub tooltip: String,
    /// The menu, top to bottom.
    pub entries: Vec<Entry>,
}

impl TrayView {
    /// The tray for `snapshot`: live runtimes in the snapshot's order (the core's, those whose
    /// agent needs you first), revivable ones, pending registrations, then the app's own items.
    pub fn of(snapshot: &Snapshot, toggles: Toggles) -> Self {
        let counts = snapshot.counts;
        let state = if counts.needs_you > 0 {
            TrayState::NeedsYou
        } else if counts.awaiting_approval > 0 {
            TrayState::Pending
        } else if counts.running > 0 {
            TrayState::Live
        } else {
            TrayState::Idle
        };
        let mut tooltip = match counts.running {
            0 => "Supercode Tray: no live runtimes".to_owned(),
            live => format!("Supercode Tray: {live} live"),
        };
        match counts.needs_you {
            0 => {}
            1 => tooltip.push_str(", 1 needs you"),
            n => tooltip.push_str(&format!(", {n} need you")),
        }
        if counts.awaiting_approval > 0 {
            tooltip.push_str(&format!(
                ", {} waiting for approval",
                counts.awaiting_approval
            ));
        }
        if counts.exited > 0 {
            tooltip.push_str(&format!(", {} exited", counts.exited));
        }

        let item = |id: MenuId, label: String| Entry::Item {
            id,
            label,
            enabled: true,
        };
        let mut entries = Vec::new();
        // In the core's order ([`Snapshot::order`]): those that need you first.
        let attachable: Vec<_> = snapshot
            .runtimes
            .iter()
            .filter(|r| r.attach.available)
            .collect();
        if attachable.is_empty() {
            entries.push(Entry::Item {
                id: MenuId::NoRuntimes,
                label: "No live runtimes".into(),
                enabled: false,
            });
        }
        for runtime in attachable {
            entries.push(runtime_entry(runtime));
        }
        let revivable: Vec<_> = snapshot
            .runtimes
            .iter()
            .filter(|r| r.revive.available)
            .collect();
        if !revivable.is_empty() {
            entries.push(Entry::Separator);
            for runtime in revivable {
                entries.push(item(
                    MenuId::Revive(runtime.id.clone()),
                    format!("Revive {}…", short_name(&runtime.name)),
                ));
            }
        }
        // Runtimes that stopped unexpectedly and cannot be revived stay until dismissed: seen,
        // never counted as needing the user.
        let dismissable: Vec<_> = snapshot
            .runtimes
            .iter()
            .filter(|r| r.dismiss.available)
            .collect();
        if !dismissable.is_empty() {
            entries.push(Entry::Separator);
            for runtime in dismissable {
                entries.push(item(
                    MenuId::Dismiss(runtime.id.clone()),
                    format!("Dismiss {} (exited)", short_name(&runtime.name)),
                ));
            }
        }
        if !snapshot.pending.is_empty() {
            entries.push(Entry::Separator);
            entries.extend(snapshot.pending.iter().map(pending_entry));
        }
        entries.extend([
            Entry::Separator,
            item(MenuId::Open, "Open Supercode Tray".into()),
            Entry::Check {
                id: MenuId::AgentAlerts,
                label: "Notify me when an agent needs me".into(),
                checked: toggles.agent_alerts,
            },
            Entry::Check {
                id: MenuId::Autostart,
                label: "Start at login".into(),
                checked: toggles.autostart,
            },
            item(MenuId::Logs, "Open logs folder".into()),
            Entry::Separator,
            item(MenuId::Quit, "Quit".into()),
        ]);
        Self {
            state,
            tooltip,
            entries,
        }
    }
}

/// The agent state of `runtime`, `unknown` when the core has none for it.
fn agent_state(runtime: &RuntimeView) -> AgentState {
    runtime
        .state
        .as_ref()
        .map_or(AgentState::Unknown, |s| s.value)
}

/// How a state reads in the menu; `None` for `unknown`, which shows the runtime as before.
pub fn state_label(state: AgentState) -> Option<&'static str> {
    Some(match state {
        AgentState::Working => "Working",
        AgentState::NeedsApproval => "Needs approval",
        AgentState::NeedsInput => "Needs input",
        AgentState::Idle => "Idle",
        AgentState::Error => "Error",
        AgentState::NotAnswering => "Not answering",
        AgentState::Unknown => return None,
    })
}

/// A live runtime's line. Without a known agent state it is "Attach NAME (KIND)", as always;
/// with one it is a submenu titled with the name, the state and the agent's title, holding
/// the agent's detail (greyed out, when it offers actions), each action it offers in its order,
/// then Attach.
fn runtime_entry(runtime: &RuntimeView) -> Entry {
    let attach = MenuId::Attach(runtime.id.clone());
    let (Some(view), Some(state)) = (runtime.state.as_ref(), state_label(agent_state(runtime)))
    else {
        return Entry::Item {
            id: attach,
            label: menu_text(
                &format!("Attach {} ({})", short_name(&runtime.name), runtime.kind),
                SUBMENU_TITLE_CHARS,
            ),
            enabled: true,
        };
    };
    let name = short_name(&runtime.name);
    let title = match &view.title {
        Some(title) => format!("{name} \u{2014} {state}: {title}"),
        None => format!("{name} \u{2014} {state}"),
    };
    // What is asked comes where it is answered: the command above Approve (issue 31), then the
    // actions of the document of `revision` (none without one), then Attach.
    let mut entries: Vec<Entry> = detail_line(view.detail.as_deref())
        .filter(|_| view.revision.is_some() && !view.actions.is_empty())
        .map(|label| Entry::Item {
            id: MenuId::Detail(runtime.id.clone()),
            label,
            enabled: false,
        })
        .into_iter()
        .collect();
    entries.extend(view.revision.into_iter().flat_map(|revision| {
        view.actions
            .iter()
            .map(move |action| action_entry(&runtime.id, action, revision))
    }));
    entries.push(Entry::Item {
        id: attach,
        label: "Attach".into(),
        enabled: true,
    });
    Entry::Submenu {
        runtime: runtime.id.clone(),
        label: menu_text(&title, SUBMENU_TITLE_CHARS),
        entries,
    }
}

/// An agent's detail (the command an approval is for) as one menu line: its lines joined with
/// ` ⏎ ` so none is lost from view, then capped and escaped like every menu text. `None` when
/// there is none.
fn detail_line(detail: Option<&str>) -> Option<String> {
    let lines: Vec<&str> = detail?
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    (!lines.is_empty()).then(|| menu_text(&lines.join(" \u{23ce} "), DETAIL_CHARS))
}

/// One offered action of the document of `revision`: run at once, or (when the core says to
/// ask first) asked in the window, since a menu cannot ask.
fn action_entry(id: &str, action: &AgentActionView, revision: u64) -> Entry {
    let (id, name) = (id.to_owned(), action.id.clone());
    let (menu_id, label) = if action.confirm.is_some() {
        (
            MenuId::ConfirmAct { id, action: name },
            format!("{}\u{2026}", action.label),
        )
    } else {
        (
            MenuId::Act {
                id,
                action: name,
                revision,
            },
            action.label.clone(),
        )
    };
    Entry::Item {
        id: menu_id,
        label: menu_text(&label, ACTION_LABEL_CHARS + 1),
        enabled: true,
    }
}

/// A runtime's name as a menu line shows it: at most [`RUNTIME_NAME_CHARS`] characters, cut
/// with `…`, so what follows it in the line (its state) is never what the cap cuts.
fn short_name(name: &str) -> String {
    let mut name = name.to_owned();
    supercode_core::text::cut(&mut name, RUNTIME_NAME_CHARS);
    name
}

/// `text` as a menu shows it verbatim: control and bidirectional characters as visible `\u{..}`
/// escapes (the core's one rule, [`supercode_core::text::visible`]: a receipt's name is shown
/// as written, never reordered), at most `max` characters with `…` when cut, and `&` doubled,
/// since the platform menus read a single `&` as a mnemonic marker.
pub fn menu_text(text: &str, max: usize) -> String {
    let mut kept = supercode_core::text::visible(text).into_owned();
    supercode_core::text::cut(&mut kept, max);
    kept.replace('&', "&&")
}

/// A registration's line: Approve where the core says it can be approved (resumed, retried),
/// otherwise a greyed-out line that says where it stands.
fn pending_entry(pending: &PendingView) -> Entry {
    let profile = &pending.profile;
    let label = if pending.approve.available {
        match pending.state {
            PendingState::Expired => format!("Resume approval of \"{profile}\""),
            PendingState::Error => format!("Retry approval of \"{profile}\""),
            _ => format!("Approve registration \"{profile}\""),
        }
    } else {
        match pending.state {
            PendingState::Approved => format!("Registration \"{profile}\" was approved"),
            PendingState::Rejected => format!("Registration \"{profile}\" was rejected"),
            _ => format!("Registration \"{profile}\" is being approved…"),
        }
    };
    Entry::Item {
        id: MenuId::Approve(profile.clone()),
        // The profile is a pending file's, which any local program can write.
        label: menu_text(&label, SUBMENU_TITLE_CHARS),
        enabled: pending.approve.available,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use supercode_core::view::{
        ActionAvailability, AgentStateView, ControllerKind, ControllerView, RuntimeOrigin,
        RuntimeStatus, SecretStoreKindView, SecretStoreView, SnapshotCounts,
    };
    use tauri::image::Image;

    /// Agent notifications on (the default), autostart off.
    const ON: Toggles = Toggles {
        autostart: false,
        agent_alerts: true,
    };

    fn snapshot(runtimes: Vec<RuntimeView>) -> Snapshot {
        with_pending(runtimes, Vec::new())
    }

    /// A snapshot as the core hands it over: ordered and counted ([`Snapshot::order`]).
    fn with_pending(runtimes: Vec<RuntimeView>, pending: Vec<PendingView>) -> Snapshot {
        let mut snapshot = Snapshot {
            counts: SnapshotCounts::default(),
            runtimes,
            ignored: Vec::new(),
            warnings: Vec::new(),
            pending,
            secret_store: SecretStoreView {
                kind: SecretStoreKindView::Keychain,
                description: "the OS keychain".into(),
            },
            first_run: false,
            receipt_dir: "/run/user/1000/receipts".into(),
            canon_home: "/home/u/.canon".into(),
        };
        snapshot.order();
        snapshot
    }

    fn live(name: &str) -> RuntimeView {
        RuntimeView {
            id: format!("lre_{name}"),
            endpoint: Some(format!("lre_{name}")),
            runtime_id: format!("demo:{name}"),
            catalog_id: None,
            source: None,
            name: name.into(),
            kind: "demo".into(),
            workspace: None,
            workspace_roots: Vec::new(),
            profile: None,
            agent_name: None,
            status: RuntimeStatus::Running,
            status_reason: None,
            since: Some("2026-12-02T19:00:00.000Z".into()),
            pid: Some(4242),
            attach: ActionAvailability::yes(),
            forget: ActionAvailability::no("it is running"),
            revive: ActionAvailability::no("it is running"),
            dismiss: ActionAvailability::dismiss_not_exited(),
            launch_command: None,
            origin: RuntimeOrigin::Receipt,
            catalog_status: None,
            revive_capability: None,
            state: None,
            exited: None,
        }
    }

    fn labels(view: &TrayView) -> Vec<String> {
        view.entries
            .iter()
            .map(|e| match e {
                Entry::Item { label, .. }
                | Entry::Check { label, .. }
                | Entry::Submenu { label, .. } => label.clone(),
                Entry::Separator => "---".into(),
            })
            .collect()
    }

    const APP_ITEMS: [&str; 7] = [
        "---",
        "Open Supercode Tray",
        "Notify me when an agent needs me",
        "Start at login",
        "Open logs folder",
        "---",
        "Quit",
    ];

    #[test]
    fn an_empty_inventory_shows_the_idle_state_and_the_app_items() {
        let view = TrayView::of(&snapshot(Vec::new()), ON);
        assert_eq!(view.state, TrayState::Idle);
        assert_eq!(view.tooltip, "Supercode Tray: no live runtimes");
        assert_eq!(labels(&view)[0], "No live runtimes");
        assert_eq!(labels(&view)[1..], APP_ITEMS);
        assert!(matches!(
            view.entries[0],
            Entry::Item { enabled: false, .. }
        ));
    }

    #[test]
    fn a_live_runtime_gets_an_attach_entry_and_the_live_state() {
        let view = TrayView::of(&snapshot(vec![live("alpha")]), ON);
        assert_eq!(view.state, TrayState::Live);
        assert_eq!(
            view.entries[0],
            Entry::Item {
                id: MenuId::Attach("lre_alpha".into()),
                label: "Attach alpha (demo)".into(),
                enabled: true
            }
        );
        assert_eq!(labels(&view)[1..], APP_ITEMS);
    }

    #[test]
    fn a_change_the_tray_does_not_show_leaves_the_view_equal() {
        let mut inventory = snapshot(vec![live("alpha")]);
        let before = TrayView::of(&inventory, ON);
        // A newer timestamp and another pid say nothing the tray shows: no rebuild for them.
        inventory.runtimes[0].since = Some("2026-12-02T20:00:00.000Z".into());
        inventory.runtimes[0].pid = Some(4343);
        assert_eq!(TrayView::of(&inventory, ON), before);
        // Attach no longer available does change the menu, and so does the autostart setting.
        inventory.runtimes[0].attach = ActionAvailability::no("its process exited");
        assert_ne!(TrayView::of(&inventory, ON).entries, before.entries);
        assert_ne!(
            TrayView::of(
                &snapshot(Vec::new()),
                Toggles {
                    autostart: true,
                    agent_alerts: true
                }
            )
            .entries,
            TrayView::of(&snapshot(Vec::new()), ON).entries
        );
    }

    fn registration(state: PendingState) -> PendingView {
        PendingView::new(
            "agent-a".into(),
            Some("claude-code".into()),
            state,
            "2026-12-02T19:00:00.000Z".into(),
            "2026-12-02T19:00:00.000Z".into(),
            None,
        )
    }

    #[test]
    fn each_registration_state_is_offered_in_the_menu_exactly_when_the_core_allows_approving() {
        for state in PendingState::ALL {
            let pending = registration(state);
            let view = TrayView::of(&with_pending(Vec::new(), vec![pending.clone()]), ON);
            let entry = view
                .entries
                .iter()
                .find_map(|e| match e {
                    Entry::Item {
                        id: MenuId::Approve(profile),
                        label,
                        enabled,
                    } => Some((profile.clone(), label.clone(), *enabled)),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("{state:?}: no registration line in the menu"));
            assert_eq!(entry.0, "agent-a", "{state:?}");
            assert_eq!(entry.2, pending.approve.available, "{state:?}: {}", entry.1);
            // A line the user cannot choose never reads as an offer to approve.
            assert_eq!(
                ["Approve ", "Resume ", "Retry "]
                    .iter()
                    .any(|verb| entry.1.starts_with(verb)),
                pending.approve.available,
                "{state:?}: {}",
                entry.1
            );
            // The icon says "waiting" only while the registration has not ended.
            let waiting = view.state == TrayState::Pending;
            assert_eq!(waiting, !pending.over, "{state:?}");
        }
        // The case the window and the tray used to disagree on: an expired registration is
        // resumed, not final.
        let expired = registration(PendingState::Expired);
        assert!(expired.approve.available && !expired.over);
    }

    /// Issue 31, item 8: a runtime that stopped unexpectedly is seen in the menu with Dismiss
    /// and counted in the tooltip, but never sets the attention icon, even when its agent last
    /// asked for approval.
    #[test]
    fn an_exited_runtime_is_listed_with_dismiss_and_never_needs_you() {
        use supercode_core::exited::{ExitedRuntime, LastState};
        let gone = ExitedRuntime {
            id: "lre_gone".into(),
            runtime_id: "demo:gone".into(),
            name: "gone".into(),
            kind: "demo".into(),
            workspace: None,
            profile: None,
            agent_name: None,
            pid: Some(4343),
            started_at: None,
            exited_at: "2026-12-02T19:00:00Z".into(),
            reason: "It stopped unexpectedly.".into(),
            last_state: Some(LastState {
                value: AgentState::NeedsApproval,
                title: Some("Run the tests?".into()),
                detail: None,
                since: None,
            }),
        }
        .view();
        let inventory = snapshot(vec![live("alpha"), gone]);
        assert_eq!(inventory.counts.exited, 1);
        assert_eq!(inventory.counts.needs_you, 0);
        let view = TrayView::of(&inventory, ON);
        assert_eq!(view.state, TrayState::Live, "not the attention icon");
        assert_eq!(view.tooltip, "Supercode Tray: 1 live, 1 exited");
        assert_eq!(
            labels(&view)[..3],
            ["Attach alpha (demo)", "---", "Dismiss gone (exited)"]
        );
        assert!(view.entries.contains(&Entry::Item {
            id: MenuId::Dismiss("lre_gone".into()),
            label: "Dismiss gone (exited)".into(),
            enabled: true
        }));
    }

    #[test]
    fn menu_ids_parse_back_to_what_built_them() {
        let ids = [
            MenuId::Attach("lre_alpha".into()),
            MenuId::Revive("canon:agent:with:colons".into()),
            MenuId::Dismiss("lre_gone".into()),
            MenuId::Approve("agent-a".into()),
            MenuId::Act {
                id: "canon:agent:with:colons".into(),
                action: "approve".into(),
                revision: 9_007_199_254_740_991,
            },
            MenuId::ConfirmAct {
                id: "lre_alpha".into(),
                action: "deny.v2_x-1".into(),
            },
            MenuId::NoRuntimes,
            MenuId::Detail("lre_alpha".into()),
            MenuId::Open,
            MenuId::Autostart,
            MenuId::AgentAlerts,
            MenuId::Logs,
            MenuId::Quit,
        ];
        for id in ids {
            assert_eq!(MenuId::parse(&id.to_string()), Some(id.clone()), "{id}");
        }
        assert_eq!(MenuId::parse("forget:lre_alpha"), None);
        assert_eq!(MenuId::parse("exit"), None);
        // An act id without its action, its revision or its runtime was never built.
        assert_eq!(MenuId::parse("act:approve"), None);
        assert_eq!(MenuId::parse("act::7:lre_alpha"), None);
        assert_eq!(MenuId::parse("act:approve:lre_alpha"), None);
        assert_eq!(MenuId::parse("act:approve::lre_alpha"), None);
        assert_eq!(MenuId::parse("act:approve:7:"), None);
        assert_eq!(MenuId::parse("confirm-act:deny:"), None);
    }

    #[test]
    fn the_tooltip_counts_what_the_snapshot_counts() {
        let mut stale = live("beta");
        stale.status = RuntimeStatus::Stale;
        let inventory = with_pending(
            vec![live("alpha"), stale],
            vec![
                registration(PendingState::Waiting),
                registration(PendingState::Approved),
            ],
        );
        assert_eq!(
            inventory.counts,
            SnapshotCounts {
                running: 1,
                stale: 1,
                exited: 0,
                awaiting_approval: 1,
                needs_you: 0,
            }
        );
        let view = TrayView::of(&inventory, ON);
        assert_eq!(view.state, TrayState::Pending);
        assert_eq!(
            view.tooltip,
            "Supercode Tray: 1 live, 1 waiting for approval"
        );
    }

    fn agent(name: &str, value: AgentState) -> RuntimeView {
        let mut runtime = live(name);
        runtime.state = Some(if value == AgentState::Unknown {
            AgentStateView::unknown()
        } else {
            AgentStateView {
                value,
                title: Some(format!("{name} is {value:?}")),
                detail: Some("cargo test --workspace".into()),
                since: Some("2026-12-03T08:30:01.000Z".into()),
                actions: vec![
                    AgentActionView::new("approve".into(), "Approve".into(), false, None),
                    AgentActionView::new("deny".into(), "Deny".into(), true, None),
                    AgentActionView::new(
                        "retry".into(),
                        "Retry".into(),
                        false,
                        Some("Start over?".into()),
                    ),
                ],
                controller: Some(ControllerView {
                    kind: ControllerKind::Terminal,
                    label: None,
                }),
                observers: Some(1),
                revision: Some(7),
            }
        });
        runtime
    }

    /// The entries of the line for runtime `name`: a submenu's items, or the plain item.
    fn line<'a>(view: &'a TrayView, name: &str) -> &'a Entry {
        view.entries
            .iter()
            .find(|e| match e {
                Entry::Submenu { label, .. } => label.starts_with(&format!("{name} \u{2014}")),
                Entry::Item {
                    id: MenuId::Attach(id),
                    ..
                } => id == &format!("lre_{name}"),
                _ => false,
            })
            .unwrap_or_else(|| panic!("no line for {name}: {:?}", labels(view)))
    }

    #[test]
    fn every_agent_state_gets_its_icon_its_place_and_its_entries() {
        for state in AgentState::ALL {
            // The runtime under test after a live one whose state is not known yet, then in the
            // core's order.
            let inventory = snapshot(vec![agent("plain", AgentState::Unknown), agent("x", state)]);
            let view = TrayView::of(&inventory, ON);
            let icon = if state.needs_you() {
                TrayState::NeedsYou
            } else {
                TrayState::Live
            };
            assert_eq!(view.state, icon, "{state:?}");
            // The menu keeps the core's order, in which an agent that says what it does comes
            // before one not heard from yet, and one that needs you first of all.
            let first = labels(&view)[0].clone();
            assert_eq!(
                first.starts_with("x \u{2014}"),
                state != AgentState::Unknown,
                "{state:?}: {first}"
            );
            match (line(&view, "x"), state_label(state)) {
                (Entry::Item { id, label, .. }, None) => {
                    // Unknown: shown as it always was, with nothing about an agent.
                    assert_eq!(id, &MenuId::Attach("lre_x".into()));
                    assert_eq!(label, "Attach x (demo)");
                }
                (Entry::Submenu { label, entries, .. }, Some(word)) => {
                    assert_eq!(
                        label,
                        &format!("x \u{2014} {word}: x is {state:?}"),
                        "{state:?}"
                    );
                    assert_eq!(
                        entries,
                        &vec![
                            // The command, where it is approved (issue 31).
                            Entry::Item {
                                id: MenuId::Detail("lre_x".into()),
                                label: "cargo test --workspace".into(),
                                enabled: false,
                            },
                            Entry::Item {
                                id: MenuId::Act {
                                    id: "lre_x".into(),
                                    action: "approve".into(),
                                    // The revision of the document the menu shows.
                                    revision: 7,
                                },
                                label: "Approve".into(),
                                enabled: true,
                            },
                            // The core says to ask (destructive, or carrying a question): asked
                            // in the window first.
                            Entry::Item {
                                id: MenuId::ConfirmAct {
                                    id: "lre_x".into(),
                                    action: "deny".into()
                                },
                                label: "Deny\u{2026}".into(),
                                enabled: true,
                            },
                            Entry::Item {
                                id: MenuId::ConfirmAct {
                                    id: "lre_x".into(),
                                    action: "retry".into()
                                },
                                label: "Retry\u{2026}".into(),
                                enabled: true,
                            },
                            Entry::Item {
                                id: MenuId::Attach("lre_x".into()),
                                label: "Attach".into(),
                                enabled: true,
                            },
                        ],
                        "{state:?}"
                    );
                }
                (other, word) => panic!("{state:?} ({word:?}): {other:?}"),
            }
        }
    }

    #[test]
    fn an_agent_that_needs_you_beats_a_waiting_registration_and_is_counted_in_the_tooltip() {
        let inventory = with_pending(
            vec![
                agent("a", AgentState::Working),
                agent("b", AgentState::NeedsInput),
                agent("c", AgentState::NeedsApproval),
            ],
            vec![registration(PendingState::Waiting)],
        );
        let view = TrayView::of(&inventory, ON);
        assert_eq!(view.state, TrayState::NeedsYou);
        assert_eq!(
            view.tooltip,
            "Supercode Tray: 3 live, 2 need you, 1 waiting for approval"
        );
        // The core's order: needs-you first, the most urgent first.
        let order: Vec<String> = labels(&view)[..3]
            .iter()
            .map(|l| l.chars().next().unwrap().to_string())
            .collect();
        assert_eq!(order, ["c", "b", "a"]);
    }

    #[test]
    fn the_agent_alerts_item_shows_the_setting_and_changing_it_changes_the_menu() {
        let inventory = snapshot(Vec::new());
        let check = |view: &TrayView| {
            view.entries
                .iter()
                .find_map(|e| match e {
                    Entry::Check {
                        id: MenuId::AgentAlerts,
                        label,
                        checked,
                    } => Some((label.clone(), *checked)),
                    _ => None,
                })
                .expect("the agent alerts item")
        };
        let on = TrayView::of(&inventory, ON);
        let off = TrayView::of(
            &inventory,
            Toggles {
                agent_alerts: false,
                ..ON
            },
        );
        assert_eq!(
            check(&on),
            ("Notify me when an agent needs me".into(), true)
        );
        assert!(!check(&off).1);
        assert_ne!(on.entries, off.entries, "a toggle rebuilds the menu");
    }

    #[test]
    fn the_command_being_approved_is_one_capped_escaped_line_above_approve_issue_31() {
        let mut runtime = agent("x", AgentState::NeedsApproval);
        let long = format!(
            "rm -rf build\n\n  cargo test &&\u{1b}[2J {}\u{202e}",
            "y".repeat(200)
        );
        runtime.state.as_mut().unwrap().detail = Some(long);
        let view = TrayView::of(&snapshot(vec![runtime]), ON);
        let Entry::Submenu { entries, .. } = line(&view, "x") else {
            panic!("no submenu: {:?}", labels(&view));
        };
        let Entry::Item { id, label, enabled } = &entries[0] else {
            panic!("{entries:?}");
        };
        assert_eq!(id, &MenuId::Detail("lre_x".into()));
        assert!(!enabled, "a line to read, not to click");
        assert!(
            label.starts_with("rm -rf build \u{23ce} cargo test &&&&\\u{1b}[2J yyy"),
            "{label}"
        );
        assert_eq!(label.replace("&&", "&").chars().count(), DETAIL_CHARS);
        assert!(label.ends_with('\u{2026}'));
        assert!(matches!(&entries[1], Entry::Item { label, .. } if label == "Approve"));
        assert!(matches!(entries.last(), Some(Entry::Item { label, .. }) if label == "Attach"));

        // No detail, or nothing to answer: no line.
        for detail in [None, Some(" \n ")] {
            let mut runtime = agent("x", AgentState::NeedsApproval);
            runtime.state.as_mut().unwrap().detail = detail.map(Into::into);
            let view = TrayView::of(&snapshot(vec![runtime]), ON);
            let Entry::Submenu { entries, .. } = line(&view, "x") else {
                panic!();
            };
            assert!(!entries.iter().any(|e| matches!(
                e,
                Entry::Item {
                    id: MenuId::Detail(_),
                    ..
                }
            )));
        }
    }

    #[test]
    fn a_hostile_title_is_capped_and_shown_as_plain_text() {
        let mut runtime = agent("evil", AgentState::NeedsApproval);
        let state = runtime.state.as_mut().unwrap();
        state.title = Some(format!(
            "&Approve <b>me</b>\u{7}\u{1b}[31m{}",
            "x".repeat(500)
        ));
        state.actions[0].label = "&Yes".into();
        let view = TrayView::of(&snapshot(vec![runtime]), ON);
        let Entry::Submenu { label, entries, .. } = &view.entries[0] else {
            panic!("{:?}", view.entries[0]);
        };
        assert!(label.chars().count() <= SUBMENU_TITLE_CHARS + 1, "{label}");
        assert!(label.ends_with('\u{2026}'), "{label}");
        assert!(!label.chars().any(char::is_control), "{label:?}");
        // A single `&` would become a mnemonic; doubled, the menu shows it as typed.
        assert!(
            label.starts_with("evil \u{2014} Needs approval: &&Approve <b>me</b>\\u{7}\\u{1b}[31m"),
            "{label}"
        );
        assert!(matches!(&entries[1], Entry::Item { label, .. } if label == "&&Yes"));
    }

    #[test]
    fn a_long_runtime_name_is_cut_by_characters_and_the_state_stays_in_the_line_issue_31() {
        // Multi-byte characters: the cut counts characters, never splits one.
        let long = format!("{}-workspace-with-a-very-long-name", "\u{e9}".repeat(40));
        let cut: String = long.chars().take(RUNTIME_NAME_CHARS - 1).collect();
        let mut waiting = agent(&long, AgentState::NeedsApproval);
        waiting.state.as_mut().unwrap().title = Some("Run the test suite?".into());
        let mut plain = live(&long);
        plain.id = "lre_plain".into();
        let view = TrayView::of(&snapshot(vec![waiting, plain]), ON);
        let Entry::Submenu { label, .. } = &view.entries[0] else {
            panic!("{:?}", view.entries[0]);
        };
        assert_eq!(
            label,
            &format!("{cut}\u{2026} \u{2014} Needs approval: Run the test suite?")
        );
        assert!(label.chars().count() <= SUBMENU_TITLE_CHARS, "{label}");
        let Entry::Item { label, .. } = &view.entries[1] else {
            panic!("{:?}", view.entries[1]);
        };
        assert_eq!(label, &format!("Attach {cut}\u{2026} (demo)"));
        // A name at the cap is shown whole.
        let exact = "n".repeat(RUNTIME_NAME_CHARS);
        let view = TrayView::of(&snapshot(vec![agent(&exact, AgentState::Working)]), ON);
        assert!(
            labels(&view)[0].starts_with(&format!("{exact} \u{2014} Working")),
            "{:?}",
            labels(&view)
        );
    }

    #[test]
    fn the_tooltip_says_how_many_agents_need_you_in_words_that_agree() {
        let one = TrayView::of(&snapshot(vec![agent("a", AgentState::NeedsInput)]), ON);
        assert_eq!(one.tooltip, "Supercode Tray: 1 live, 1 needs you");
        assert_eq!(one.state, TrayState::NeedsYou);
    }

    #[test]
    fn menu_text_caps_by_characters_and_escapes_mnemonics() {
        assert_eq!(menu_text("plain", 10), "plain");
        assert_eq!(menu_text("abcdef", 4), "abc\u{2026}");
        assert_eq!(
            menu_text("\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}", 5),
            "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}"
        );
        assert_eq!(menu_text("a&b\nc", 20), "a&&b\\u{a}c");
        // Issue 29: a receipt's name cannot reorder or hide the rest of the line.
        assert_eq!(
            menu_text("Attach \u{202e}lve\u{1b}[8m (demo)", 80),
            "Attach \\u{202e}lve\\u{1b}[8m (demo)"
        );
    }

    #[test]
    fn every_tray_state_has_its_own_icon() {
        let icons = [TRAY_IDLE, TRAY_LIVE, TRAY_PENDING, TRAY_ATTENTION];
        for (i, a) in icons.iter().enumerate() {
            let image = Image::from_bytes(a).expect("a PNG tauri can read");
            assert_eq!((image.width(), image.height()), (64, 64), "icon {i}");
            for b in &icons[i + 1..] {
                assert_ne!(a, b, "icon {i} is not distinct");
            }
        }
    }
}
