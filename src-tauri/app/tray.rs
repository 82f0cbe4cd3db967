//! The tray icon and its menu, drawn from a [`TrayView`]: a plain value derived from the
//! inventory and compared with what is shown before anything is touched.
//!
//! Most inventory changes do not change the tray (a catalog heartbeat, a timestamp, a stale
//! entry's reason). Rebuilding the menu on each of them would replace every item under a user
//! who has the menu open, and a click that lands during the swap is lost; so the icon, tooltip
//! and menu are only set when their part of the view differs.

use std::sync::Mutex;

use supercode_core::view::{RuntimeStatus, Snapshot};
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

/// One line of the menu. Ids are what [`super::on_menu_event`] dispatches on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A clickable (or greyed-out) item.
    Item {
        /// The menu id: `attach:<id>`, `revive:<id>`, `approve:<profile>` or an app item.
        id: String,
        /// What the user reads.
        label: String,
        /// Whether it can be clicked.
        enabled: bool,
    },
    /// A check item (only "Start at login").
    Check {
        /// The menu id.
        id: String,
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
        let live = snapshot
            .runtimes
            .iter()
            .filter(|r| r.status == RuntimeStatus::Running)
            .count();
        let state = if !snapshot.pending.is_empty() {
            TrayState::Pending
        } else if live > 0 {
            TrayState::Live
        } else {
            TrayState::Idle
        };
        let tooltip = match (live, snapshot.pending.len()) {
            (0, 0) => "Supercode Tray: no live runtimes".to_owned(),
            (live, 0) => format!("Supercode Tray: {live} live"),
            (live, pending) => {
                format!("Supercode Tray: {live} live, {pending} waiting for approval")
            }
        };

        let item = |id: String, label: String| Entry::Item {
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
                id: "none".into(),
                label: "No live runtimes".into(),
                enabled: false,
            });
        }
        for runtime in attachable {
            entries.push(item(
                format!("attach:{}", runtime.id),
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
                    format!("revive:{}", runtime.id),
                    format!("Revive {}…", runtime.name),
                ));
            }
        }
        if !snapshot.pending.is_empty() {
            entries.push(Entry::Separator);
            for pending in &snapshot.pending {
                entries.push(item(
                    format!("approve:{}", pending.profile),
                    format!("Approve registration \"{}\"", pending.profile),
                ));
            }
        }
        entries.extend([
            Entry::Separator,
            item("open".into(), "Open Supercode Tray".into()),
            Entry::Check {
                id: "autostart".into(),
                label: "Start at login".into(),
                checked: autostart,
            },
            item("logs".into(), "Open logs folder".into()),
            Entry::Separator,
            item("quit".into(), "Quit".into()),
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
                Entry::Item { id, label, enabled } => {
                    menu.item(&MenuItem::with_id(app, id, label, *enabled, None::<&str>)?)
                }
                Entry::Check { id, label, checked } => menu.item(&CheckMenuItem::with_id(
                    app,
                    id,
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

/// What the tray shows now, so a refresh can tell what changed.
#[derive(Default)]
struct Shown(Mutex<Option<TrayView>>);

/// Creates the tray icon for `snapshot`; menu clicks go to `on_menu`.
pub fn create<R: Runtime>(
    app: &AppHandle<R>,
    snapshot: &Snapshot,
    on_menu: fn(&AppHandle<R>, &str),
) -> tauri::Result<()> {
    let view = TrayView::of(snapshot, autostart_enabled(app));
    TrayIconBuilder::with_id(TRAY_ID)
        .icon(view.icon()?)
        .tooltip(&view.tooltip)
        .menu(&view.menu(app)?)
        .show_menu_on_left_click(true)
        .on_menu_event(move |app, event| on_menu(app, event.id().as_ref()))
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
        ActionAvailability, RuntimeOrigin, RuntimeView, SecretStoreKindView, SecretStoreView,
    };

    fn snapshot(runtimes: Vec<RuntimeView>) -> Snapshot {
        Snapshot {
            runtimes,
            ignored: Vec::new(),
            warnings: Vec::new(),
            pending: Vec::new(),
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
                id: "attach:lre_alpha".into(),
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
}
