//! The tray icon and its menu, drawn from a [`TrayView`]: a plain value derived from the
//! inventory and compared with what is shown before anything is touched.
//!
//! Most inventory changes do not change the tray (a catalog heartbeat, a timestamp, a stale
//! entry's reason). Rebuilding the menu on each of them would replace every item under a user
//! who has the menu open, and a click that lands during the swap is lost; so the icon, tooltip
//! and menu are only set when their part of the view differs.

use std::fmt;
use std::sync::Mutex;

use supercode_core::view::{PendingState, PendingView, Snapshot};
use tauri::image::Image;
use tauri::menu::{CheckMenuItem, Menu, MenuBuilder, MenuItem, PredefinedMenuItem};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};
use tauri_plugin_autostart::ManagerExt as _;

const TRAY_ID: &str = "supercode-tray";

const TRAY_IDLE: &[u8] = include_bytes!("../../icons/tray-idle.png");
const TRAY_LIVE: &[u8] = include_bytes!("../../icons/tray-live.png");
const TRAY_PENDING: &[u8] = include_bytes!("../../icons/tray-pending.png");

/// The state the icon shows: a registration waiting beats runtimes live beats idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrayState {
    /// No live runtime, nothing waiting.
    Idle,
    /// At least one runtime is running.
    Live,
    /// A registration is waiting for approval.
    Pending,
}

/// What a menu item does: built here, parsed back here, dispatched on by
/// [`super::on_menu_event`]. Ids carry only opaque endpoints, catalog ids and profile names,
/// never anything secret, so they are safe to log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MenuId {
    /// Attach the runtime with this inventory id.
    Attach(String),
    /// Open the revive confirmation of the runtime with this inventory id.
    Revive(String),
    /// Approve the registration of this profile.
    Approve(String),
    /// The greyed-out "No live runtimes" line.
    NoRuntimes,
    /// Show the window.
    Open,
    /// Turn "Start at login" on or off.
    Autostart,
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
            Some(("approve", profile)) => Self::Approve(profile.to_owned()),
            Some(_) => return None,
            None => match text {
                "none" => Self::NoRuntimes,
                "open" => Self::Open,
                "autostart" => Self::Autostart,
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
            Self::Approve(profile) => write!(f, "approve:{profile}"),
            Self::NoRuntimes => f.write_str("none"),
            Self::Open => f.write_str("open"),
            Self::Autostart => f.write_str("autostart"),
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
    /// A check item (only "Start at login").
    Check {
        /// What choosing it does.
        id: MenuId,
        /// What the user reads.
        label: String,
        /// Whether it shows its check mark.
        checked: bool,
    },
    /// A separator line.
    Separator,
}

/// Everything the tray shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrayView {
    /// Which icon.
    pub state: TrayState,
    /// The tooltip (where the platform shows one).
    pub tooltip: String,
    /// The menu, top to bottom.
    pub entries: Vec<Entry>,
}

impl TrayView {
    /// The tray for `snapshot`: live runtimes (attach), revivable ones, pending registrations,
    /// then the app's own items.
    pub fn of(snapshot: &Snapshot, autostart: bool) -> Self {
        let counts = snapshot.counts;
        let state = if counts.awaiting_approval > 0 {
            TrayState::Pending
        } else if counts.running > 0 {
            TrayState::Live
        } else {
            TrayState::Idle
        };
        let tooltip = match (counts.running, counts.awaiting_approval) {
            (0, 0) => "Supercode Tray: no live runtimes".to_owned(),
            (live, 0) => format!("Supercode Tray: {live} live"),
            (live, pending) => {
                format!("Supercode Tray: {live} live, {pending} waiting for approval")
            }
        };

        let item = |id: MenuId, label: String| Entry::Item {
            id,
            label,
            enabled: true,
        };
        let mut entries = Vec::new();
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
            entries.push(item(
                MenuId::Attach(runtime.id.clone()),
                format!("Attach {} ({})", runtime.name, runtime.kind),
            ));
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
                    format!("Revive {}…", runtime.name),
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
                id: MenuId::Autostart,
                label: "Start at login".into(),
                checked: autostart,
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

    fn icon(&self) -> tauri::Result<Image<'static>> {
        Image::from_bytes(match self.state {
            TrayState::Idle => TRAY_IDLE,
            TrayState::Live => TRAY_LIVE,
            TrayState::Pending => TRAY_PENDING,
        })
    }

    fn menu<R: Runtime>(&self, app: &AppHandle<R>) -> tauri::Result<Menu<R>> {
        let mut menu = MenuBuilder::new(app);
        for entry in &self.entries {
            menu = match entry {
                Entry::Item { id, label, enabled } => menu.item(&MenuItem::with_id(
                    app,
                    id.to_string(),
                    label,
                    *enabled,
                    None::<&str>,
                )?),
                Entry::Check { id, label, checked } => menu.item(&CheckMenuItem::with_id(
                    app,
                    id.to_string(),
                    label,
                    true,
                    *checked,
                    None::<&str>,
                )?),
                Entry::Separator => menu.item(&PredefinedMenuItem::separator(app)?),
            };
        }
        menu.build()
    }
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
        label,
        enabled: pending.approve.available,
    }
}

/// What the tray shows now, so a refresh can tell what changed.
#[derive(Default)]
struct Shown(Mutex<Option<TrayView>>);

/// Creates the tray icon for `snapshot`; menu clicks go to `on_menu`.
pub fn create<R: Runtime>(
    app: &AppHandle<R>,
    snapshot: &Snapshot,
    on_menu: fn(&AppHandle<R>, MenuId),
) -> tauri::Result<()> {
    let view = TrayView::of(snapshot, autostart_enabled(app));
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(view.icon()?)
        .tooltip(&view.tooltip)
        .menu(&view.menu(app)?)
        .show_menu_on_left_click(true)
        .on_menu_event(move |app, event| match MenuId::parse(event.id().as_ref()) {
            Some(id) => on_menu(app, id),
            None => tracing::warn!(item = %event.id().as_ref(), "unknown tray menu item"),
        })
        .build(app)?;
    app.manage(Shown(Mutex::new(Some(view))));
    Ok(())
}

/// Brings the tray in line with `snapshot`, touching only the parts that differ. The work runs on
/// the main thread, in the order refreshes were asked for: tray calls from any other thread wait
/// for it anyway, and there a newer inventory is never overwritten by an older one.
pub fn refresh<R: Runtime>(app: &AppHandle<R>, snapshot: Snapshot) -> tauri::Result<()> {
    let handle = app.clone();
    app.run_on_main_thread(move || {
        if let Err(e) = show(&handle, &snapshot) {
            tracing::warn!("could not update the tray: {e}");
        }
    })
}

fn show<R: Runtime>(app: &AppHandle<R>, snapshot: &Snapshot) -> tauri::Result<()> {
    let (Some(tray), Some(shown)) = (app.tray_by_id(TRAY_ID), app.try_state::<Shown>()) else {
        return Ok(());
    };
    let view = TrayView::of(snapshot, autostart_enabled(app));
    let mut shown = shown.0.lock().unwrap_or_else(|e| e.into_inner());
    let old = shown.as_ref();
    if old.map(|o| o.state) != Some(view.state) {
        tray.set_icon(Some(view.icon()?))?;
    }
    if old.map(|o| &o.tooltip) != Some(&view.tooltip) {
        tray.set_tooltip(Some(&view.tooltip))?;
    }
    if old.map(|o| &o.entries) != Some(&view.entries) {
        tray.set_menu(Some(view.menu(app)?))?;
    }
    *shown = Some(view);
    Ok(())
}

fn autostart_enabled<R: Runtime>(app: &AppHandle<R>) -> bool {
    app.autolaunch().is_enabled().unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use supercode_core::view::{
        ActionAvailability, RuntimeOrigin, RuntimeStatus, RuntimeView, SecretStoreKindView,
        SecretStoreView, SnapshotCounts,
    };

    fn snapshot(runtimes: Vec<RuntimeView>) -> Snapshot {
        with_pending(runtimes, Vec::new())
    }

    fn with_pending(runtimes: Vec<RuntimeView>, pending: Vec<PendingView>) -> Snapshot {
        Snapshot {
            counts: SnapshotCounts::of(&runtimes, &pending),
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
        }
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
            launch_command: None,
            origin: RuntimeOrigin::Receipt,
            catalog_status: None,
            revive_capability: None,
            state: None,
        }
    }

    fn labels(view: &TrayView) -> Vec<String> {
        view.entries
            .iter()
            .map(|e| match e {
                Entry::Item { label, .. } | Entry::Check { label, .. } => label.clone(),
                Entry::Separator => "---".into(),
            })
            .collect()
    }

    const APP_ITEMS: [&str; 6] = [
        "---",
        "Open Supercode Tray",
        "Start at login",
        "Open logs folder",
        "---",
        "Quit",
    ];

    #[test]
    fn an_empty_inventory_shows_the_idle_state_and_the_app_items() {
        let view = TrayView::of(&snapshot(Vec::new()), false);
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
        let view = TrayView::of(&snapshot(vec![live("alpha")]), false);
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
        let before = TrayView::of(&inventory, false);
        // A newer timestamp and another pid say nothing the tray shows: no rebuild for them.
        inventory.runtimes[0].since = Some("2026-12-02T20:00:00.000Z".into());
        inventory.runtimes[0].pid = Some(4343);
        assert_eq!(TrayView::of(&inventory, false), before);
        // Attach no longer available does change the menu, and so does the autostart setting.
        inventory.runtimes[0].attach = ActionAvailability::no("its process exited");
        assert_ne!(TrayView::of(&inventory, false).entries, before.entries);
        assert_ne!(
            TrayView::of(&snapshot(Vec::new()), true).entries,
            TrayView::of(&snapshot(Vec::new()), false).entries
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
            let view = TrayView::of(&with_pending(Vec::new(), vec![pending.clone()]), false);
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

    #[test]
    fn menu_ids_parse_back_to_what_built_them() {
        let ids = [
            MenuId::Attach("lre_alpha".into()),
            MenuId::Revive("canon:agent:with:colons".into()),
            MenuId::Approve("agent-a".into()),
            MenuId::NoRuntimes,
            MenuId::Open,
            MenuId::Autostart,
            MenuId::Logs,
            MenuId::Quit,
        ];
        for id in ids {
            assert_eq!(MenuId::parse(&id.to_string()), Some(id.clone()), "{id}");
        }
        assert_eq!(MenuId::parse("forget:lre_alpha"), None);
        assert_eq!(MenuId::parse("exit"), None);
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
                awaiting_approval: 1,
                needs_you: 0,
            }
        );
        let view = TrayView::of(&inventory, false);
        assert_eq!(view.state, TrayState::Pending);
        assert_eq!(
            view.tooltip,
            "Supercode Tray: 1 live, 1 waiting for approval"
        );
    }
}
