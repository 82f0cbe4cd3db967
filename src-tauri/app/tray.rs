//! The tray icon and its menu on the platform, drawn from a [`TrayView`] ([`view`]: a plain
//! value derived from the inventory) and compared with what is shown before anything is touched.
//!
//! Most inventory changes do not change the tray (a catalog heartbeat, a timestamp, a stale
//! entry's reason), and those that do change a line or two. Rebuilding the menu would replace
//! every item under a user who has the menu open (a click that lands during the swap is lost)
//! and make the platform re-export all of it; so the icon and tooltip are only set when they
//! differ, and the menu is changed line by line ([`edits`]).
//!
//! - [`view`]: what the tray shows (icon state, tooltip, the menu's entries), testable without
//!   a display.
//! - [`edits`]: the smallest change from the menu shown to the one to show.
//! - `indicator` (Linux): what the tray tells the desktop beyond its menu.

use std::sync::{Arc, Mutex};

use supercode_core::view::Snapshot;
use tauri::image::Image;
use tauri::menu::{
    CheckMenuItem, IsMenuItem, Menu, MenuBuilder, MenuItem, MenuItemKind, PredefinedMenuItem,
    Submenu,
};
use tauri::tray::TrayIconBuilder;
use tauri::{AppHandle, Manager, Runtime};

mod edits;
#[cfg(target_os = "linux")]
mod indicator;
mod view;

pub use view::MenuId;
use view::{Entry, Toggles, TrayState, TrayView};

const TRAY_ID: &str = "supercode-tray";

/// The platform's side of a view: its icon image and a menu built from its entries.
impl TrayView {
    fn icon(&self) -> tauri::Result<Image<'static>> {
        Image::from_bytes(self.state.icon().1)
    }

    fn menu<R: Runtime>(&self, app: &AppHandle<R>) -> tauri::Result<Menu<R>> {
        let mut menu = MenuBuilder::new(app);
        for entry in &self.entries {
            menu = menu.item(&*native_item(app, entry)?);
        }
        menu.build()
    }
}

/// The platform menu item of `entry` (submenus built recursively).
fn native_item<R: Runtime>(
    app: &AppHandle<R>,
    entry: &Entry,
) -> tauri::Result<Box<dyn IsMenuItem<R>>> {
    Ok(match entry {
        Entry::Item { id, label, enabled } => Box::new(MenuItem::with_id(
            app,
            id.to_string(),
            label,
            *enabled,
            None::<&str>,
        )?),
        Entry::Check { id, label, checked } => Box::new(CheckMenuItem::with_id(
            app,
            id.to_string(),
            label,
            true,
            *checked,
            None::<&str>,
        )?),
        Entry::Submenu { label, entries, .. } => {
            let items = entries
                .iter()
                .map(|e| native_item(app, e))
                .collect::<tauri::Result<Vec<_>>>()?;
            let refs: Vec<&dyn IsMenuItem<R>> = items.iter().map(|i| &**i).collect();
            Box::new(Submenu::with_items(app, label, true, &refs)?)
        }
        Entry::Separator => Box::new(PredefinedMenuItem::separator(app)?),
    })
}

/// What the tray shows now, so a refresh can tell what changed, and the menu that shows it.
struct Shown<R: Runtime> {
    /// The inventory it shows, kept for a [`redraw`] (the copy the watcher published).
    snapshot: Arc<Snapshot>,
    view: TrayView,
    menu: Menu<R>,
}

/// The tray's state: what it shows, and what to show next.
struct TrayShown<R: Runtime> {
    shown: Mutex<Shown<R>>,
    /// The folder of the icon files the indicator shows (Linux, `indicator`); `None` where
    /// Tauri sets the icon (elsewhere, or when the files could not be written).
    icons: Option<std::path::PathBuf>,
    /// Set by [`refresh`] and [`redraw`]; taken by the main thread. A burst of snapshots while
    /// the main thread is busy is shown once, as its newest, instead of once per snapshot in turn.
    next: Mutex<Option<Next>>,
}

/// What the main thread shows next.
enum Next {
    /// A newer inventory.
    Snapshot(Arc<Snapshot>),
    /// The inventory shown now, again (a setting the menu shows changed).
    Redraw,
}

/// Creates the tray icon for `snapshot`; menu clicks go to `on_menu`.
pub fn create<R: Runtime>(
    app: &AppHandle<R>,
    snapshot: &Snapshot,
    on_menu: fn(&AppHandle<R>, MenuId),
) -> tauri::Result<()> {
    let view = TrayView::of(snapshot, toggles(app));
    let menu = view.menu(app)?;
    let tray = TrayIconBuilder::with_id(TRAY_ID)
        .icon(view.icon()?)
        .tooltip(&view.tooltip)
        .menu(&menu)
        .show_menu_on_left_click(true)
        .on_menu_event(move |app, event| match MenuId::parse(event.id().as_ref()) {
            Some(id) => on_menu(app, id),
            None => tracing::warn!(item = %event.id().as_ref(), "unknown tray menu item"),
        })
        .build(app)?;
    let icons = icon_files(app);
    if let Some(dir) = &icons {
        show_on_indicator(&tray, dir, &view)?;
    }
    app.manage(TrayShown {
        shown: Mutex::new(Shown {
            snapshot: Arc::new(snapshot.clone()),
            view,
            menu,
        }),
        next: Mutex::new(None),
        icons,
    });
    Ok(())
}

/// Writes the icons where the indicator reads them, in the app's state directory; `None` (Tauri
/// sets the icon, described as "tray icon") where there is no indicator or they cannot be written.
fn icon_files<R: Runtime>(app: &AppHandle<R>) -> Option<std::path::PathBuf> {
    #[cfg(target_os = "linux")]
    {
        let dir = app
            .state::<supercode_core::Supercode>()
            .locations()
            .state_dir
            .join("tray-icons");
        let icons = TrayState::ALL.map(TrayState::icon);
        match indicator::write_icons(&dir, &icons) {
            Ok(dir) => return Some(dir),
            Err(e) => tracing::warn!("could not write the tray icons, Tauri draws them: {e}"),
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = app;
    None
}

/// Shows `view`'s icon, description, title and status through the indicator (see `indicator`).
#[cfg(target_os = "linux")]
fn show_on_indicator<R: Runtime>(
    tray: &tauri::tray::TrayIcon<R>,
    icons: &std::path::Path,
    view: &TrayView,
) -> tauri::Result<()> {
    indicator::show(
        tray,
        &icons.join(view.state.icon().0),
        &view.tooltip,
        view.state == TrayState::NeedsYou,
    )
}

/// No indicator here: [`icon_files`] gives no folder, so this is never called.
#[cfg(not(target_os = "linux"))]
fn show_on_indicator<R: Runtime>(
    _tray: &tauri::tray::TrayIcon<R>,
    _icons: &std::path::Path,
    _view: &TrayView,
) -> tauri::Result<()> {
    Ok(())
}

/// Brings the tray in line with `snapshot`, touching only the parts that differ. The work runs on
/// the main thread, where tray calls from any other thread would wait for it anyway; a snapshot
/// that arrives before the main thread got to the one before replaces it, so a newer inventory is
/// never overwritten by an older one and a burst costs one update, not one per snapshot.
pub fn refresh<R: Runtime>(app: &AppHandle<R>, snapshot: Arc<Snapshot>) -> tauri::Result<()> {
    queue(app, Next::Snapshot(snapshot))
}

/// Shows the inventory the tray shows now again, for a setting its menu shows that changed. It
/// reads no inventory of its own: a read made on this thread could be older than a snapshot the
/// watcher hands [`refresh`] meanwhile, and it would then overwrite it.
pub fn redraw<R: Runtime>(app: &AppHandle<R>) -> tauri::Result<()> {
    queue(app, Next::Redraw)
}

fn queue<R: Runtime>(app: &AppHandle<R>, next: Next) -> tauri::Result<()> {
    let Some(state) = app.try_state::<TrayShown<R>>() else {
        return Ok(());
    };
    {
        let mut slot = lock(&state.next);
        let waiting = slot.is_some();
        // A snapshot waiting to be shown is shown with the new settings anyway: a redraw leaves it.
        if !(waiting && matches!(next, Next::Redraw)) {
            *slot = Some(next);
        }
        if waiting {
            // The main thread has not taken the last one yet: it will take this one instead.
            return Ok(());
        }
    }
    let handle = app.clone();
    app.run_on_main_thread(move || {
        let state = handle.state::<TrayShown<R>>();
        let Some(next) = lock(&state.next).take() else {
            return;
        };
        let mut shown = lock(&state.shown);
        if let Next::Snapshot(snapshot) = next {
            shown.snapshot = snapshot;
        }
        if let Err(e) = show(&handle, &mut shown, state.icons.as_deref()) {
            tracing::warn!("could not update the tray: {e}");
        }
    })
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Brings the tray in line with `shown.snapshot`.
fn show<R: Runtime>(
    app: &AppHandle<R>,
    shown: &mut Shown<R>,
    icons: Option<&std::path::Path>,
) -> tauri::Result<()> {
    let Some(tray) = app.tray_by_id(TRAY_ID) else {
        return Ok(());
    };
    let view = TrayView::of(&shown.snapshot, toggles(app));
    let changed = shown.view.state != view.state || shown.view.tooltip != view.tooltip;
    match icons {
        Some(dir) if changed => show_on_indicator(&tray, dir, &view)?,
        Some(_) => {}
        None => {
            if shown.view.state != view.state {
                tray.set_icon(Some(view.icon()?))?;
            }
            if shown.view.tooltip != view.tooltip {
                tray.set_tooltip(Some(&view.tooltip))?;
            }
        }
    }
    let edits = edits::edits(&shown.view.entries, &view.entries);
    if !edits.is_empty() {
        if let Err(e) = apply(app, Lines::Menu(&shown.menu), &edits) {
            // Half-applied edits leave the menu in no known state: show a new one instead.
            tracing::warn!("could not edit the tray menu, replacing it: {e}");
            let menu = view.menu(app)?;
            tray.set_menu(Some(menu.clone()))?;
            shown.menu = menu;
        }
    }
    shown.view = view;
    Ok(())
}

/// The lines [`apply`] edits: the menu's own or a submenu's.
enum Lines<'a, R: Runtime> {
    Menu(&'a Menu<R>),
    Submenu(&'a Submenu<R>),
}

// Not derived: a derive would ask `R: Copy`, and only the references are copied.
impl<R: Runtime> Clone for Lines<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R: Runtime> Copy for Lines<'_, R> {}

impl<R: Runtime> Lines<'_, R> {
    fn at(self, at: usize) -> Result<MenuItemKind<R>, EditError> {
        let items = match self {
            Self::Menu(menu) => menu.items()?,
            Self::Submenu(submenu) => submenu.items()?,
        };
        items
            .into_iter()
            .nth(at)
            .ok_or_else(|| EditError::Mismatch(format!("no menu line at {at}")))
    }

    fn insert(self, item: &dyn IsMenuItem<R>, at: usize) -> tauri::Result<()> {
        match self {
            Self::Menu(menu) => menu.insert(item, at),
            Self::Submenu(submenu) => submenu.insert(item, at),
        }
    }

    fn remove(self, at: usize) -> Result<MenuItemKind<R>, EditError> {
        match self {
            Self::Menu(menu) => menu.remove_at(at)?,
            Self::Submenu(submenu) => submenu.remove_at(at)?,
        }
        .ok_or_else(|| EditError::Mismatch(format!("no menu line at {at} to remove")))
    }
}

/// Why [`apply`] stopped.
#[derive(Debug, thiserror::Error)]
enum EditError {
    /// The platform menu refused a change.
    #[error(transparent)]
    Platform(#[from] tauri::Error),
    /// The menu does not hold what the shown view says it holds.
    #[error("{0}")]
    Mismatch(String),
}

/// The menu line `item` is not what an edit expects: it `is_not` that.
fn unlike<R: Runtime>(item: &MenuItemKind<R>, is_not: &str) -> EditError {
    EditError::Mismatch(format!("{:?} {is_not}", item.id()))
}

/// Applies `edits` to `lines` in order, as [`edits::edits`] made them.
fn apply<R: Runtime>(
    app: &AppHandle<R>,
    lines: Lines<'_, R>,
    edits: &[edits::Edit<'_>],
) -> Result<(), EditError> {
    use edits::Edit;
    for edit in edits {
        match edit {
            Edit::Remove { at } => {
                lines.remove(*at)?;
            }
            Edit::Insert { at, entry } => lines.insert(&*native_item(app, entry)?, *at)?,
            Edit::Label { at, label } => match lines.at(*at)? {
                MenuItemKind::MenuItem(item) => item.set_text(label)?,
                MenuItemKind::Check(item) => item.set_text(label)?,
                other => return Err(unlike(&other, "has no label")),
            },
            Edit::Enabled { at, enabled } => match lines.at(*at)? {
                MenuItemKind::MenuItem(item) => item.set_enabled(*enabled)?,
                other => return Err(unlike(&other, "cannot be greyed out")),
            },
            Edit::Checked { at, checked } => match lines.at(*at)? {
                MenuItemKind::Check(item) => item.set_checked(*checked)?,
                other => return Err(unlike(&other, "has no check mark")),
            },
            Edit::Within { at, edits } => match lines.at(*at)? {
                MenuItemKind::Submenu(submenu) => apply(app, Lines::Submenu(&submenu), edits)?,
                other => return Err(unlike(&other, "is not a submenu")),
            },
        }
    }
    Ok(())
}

fn toggles<R: Runtime>(app: &AppHandle<R>) -> Toggles {
    Toggles {
        autostart: super::autostart::LoginItem::from_env().is_some_and(|item| item.is_enabled()),
        agent_alerts: app
            .try_state::<super::alerts::AgentAlerts>()
            .is_none_or(|a| a.enabled()),
    }
}
