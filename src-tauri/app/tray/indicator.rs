//! What the tray tells a Linux desktop beyond its icon and menu: the StatusNotifierItem's `Title`
//! (what a panel shows on hover) and its `Status` (`NeedsAttention` while an agent needs the
//! user, which KDE answers by lifting the item out of the overflow).
//!
//! Tauri 2's tray says neither on Linux. Its `set_tooltip` is a no-op there, and the item could
//! not carry one anyway: libayatana-appindicator exports no `ToolTip` property at all. Its
//! `set_title` sets the text drawn beside the icon (`XAyatanaLabel`), not `Title`, and its status
//! is `Active` or (hidden) `Passive`, never `NeedsAttention`. The indicator underneath has both
//! calls (`app_indicator_set_title`, `app_indicator_set_status`); tray-icon hands out a pointer
//! to it (`TrayIcon::app_indicator`), and that is the one road used here. So panels that build
//! the hover text from `Title` (xfce4-panel, KDE) show the state; the rest still show the icon.

use libappindicator::{AppIndicator, AppIndicatorStatus};
use tauri::tray::TrayIcon;
use tauri::Runtime;

/// Sets the item's `Title` to `title`, and its `Status` to `NeedsAttention` when `attention`,
/// `Active` otherwise. Runs on the main thread (waits for it when called from another).
pub fn show<R: Runtime>(tray: &TrayIcon<R>, title: &str, attention: bool) -> tauri::Result<()> {
    let title = title.to_owned();
    tray.with_inner_tray_icon(move |inner| {
        // SAFETY: `app_indicator` points at the indicator the tray icon owns, valid while the
        // tray icon is, and this closure runs on the main thread while Tauri holds the tray
        // icon, so the indicator is alive and no other thread touches it. `AppIndicator` is a
        // plain wrapper around the indicator's GObject pointer: the copy read here calls the
        // library through that same pointer, and `ManuallyDrop` keeps the copy from ever
        // releasing anything (the crate gives it no `Drop` today; should it gain one, the
        // owner's would still be the only one that runs).
        #[allow(unsafe_code)]
        let mut indicator: std::mem::ManuallyDrop<AppIndicator> =
            std::mem::ManuallyDrop::new(unsafe { std::ptr::read(inner.app_indicator()) });
        indicator.set_title(&title);
        indicator.set_status(if attention {
            AppIndicatorStatus::Attention
        } else {
            AppIndicatorStatus::Active
        });
    })
}
