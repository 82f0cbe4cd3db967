//! What the tray tells a Linux desktop beyond its menu: the StatusNotifierItem's icon with a
//! description of the state (`IconAccessibleDesc`), its `Title` (the two make the hover text:
//! xfce4-panel shows "title / description", KDE the title) and its `Status` (`NeedsAttention`
//! while an agent needs the user, which KDE answers by lifting the item out of the overflow).
//!
//! Tauri 2's tray says none of this on Linux. Its `set_tooltip` is a no-op there, and the item
//! could not carry one anyway: libayatana-appindicator exports no `ToolTip` property at all. Its
//! `set_title` sets the text drawn beside the icon (`XAyatanaLabel`), not `Title`; its
//! `set_icon` describes every icon as "tray icon"; and its status is `Active` or (hidden)
//! `Passive`, never `NeedsAttention`. The indicator underneath has every call needed
//! (`app_indicator_set_icon_full`, `_set_title`, `_set_status`); tray-icon hands out a pointer to
//! it (`TrayIcon::app_indicator`), and that is the one road used here. So on Linux the icon is
//! set here, from files written once into the app's state directory ([`write_icons`]), and Tauri
//! sets only the first one and the menu.

use std::io;
use std::path::{Path, PathBuf};

use libappindicator::{AppIndicator, AppIndicatorStatus};
use tauri::tray::TrayIcon;
use tauri::Runtime;

/// Writes each `(file name, PNG)` into `dir` (a temporary file renamed over the old one, so a
/// panel reading it never sees half an icon) and returns `dir`.
pub fn write_icons(dir: &Path, icons: &[(&str, &[u8])]) -> io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    for (name, png) in icons {
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, png)?;
        std::fs::rename(&tmp, dir.join(name))?;
    }
    Ok(dir.to_path_buf())
}

/// Sets the item's icon to the file `icon`, described (and titled) as `title`, and its `Status`
/// to `NeedsAttention` when `attention`, `Active` otherwise. Runs on the main thread (waits for
/// it when called from another).
pub fn show<R: Runtime>(
    tray: &TrayIcon<R>,
    icon: &Path,
    title: &str,
    attention: bool,
) -> tauri::Result<()> {
    let icon = icon.to_string_lossy().into_owned();
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
        indicator.set_icon_full(&icon, &title);
        indicator.set_title(&title);
        indicator.set_status(if attention {
            AppIndicatorStatus::Attention
        } else {
            AppIndicatorStatus::Active
        });
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_icons_are_written_whole_and_rewritten_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let icons = dir.path().join("tray-icons");
        write_icons(&icons, &[("a.png", b"one"), ("b.png", b"two")]).unwrap();
        write_icons(&icons, &[("a.png", b"three")]).unwrap();
        assert_eq!(std::fs::read(icons.join("a.png")).unwrap(), b"three");
        assert_eq!(std::fs::read(icons.join("b.png")).unwrap(), b"two");
        let mut names: Vec<_> = std::fs::read_dir(&icons)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["a.png", "b.png"], "no temporary file left");
    }
}
