//! Handing things to the user's desktop: a one-time attach URL to the browser, a folder (the
//! logs) to the file manager. Both run detached (double fork), so an app that does this all day
//! leaves no zombie behind; neither ever logs the URL, which carries a one-time code.

use std::path::Path;

use attach_proxy::AttachUrl;

use crate::CoreError;

/// Opens a one-time attach URL in the user's browser, from the backend. `SUPERCODE_BROWSER`, when
/// set, names the program to use instead of the desktop default (tests use it).
pub fn open_in_browser(url: &AttachUrl) -> Result<(), CoreError> {
    match std::env::var_os("SUPERCODE_BROWSER").filter(|v| !v.is_empty()) {
        Some(program) => match program.into_string() {
            Ok(program) => open::with_detached(url.as_str(), program),
            Err(_) => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "SUPERCODE_BROWSER is not valid UTF-8",
            )),
        },
        None => open::that_detached(url.as_str()),
    }
    .map_err(|source| CoreError::Io {
        what: "could not open the browser (set SUPERCODE_BROWSER to choose one)".into(),
        source,
    })
}

/// Opens a folder in the file manager, creating it first if it is missing (the logs folder
/// before anything was logged).
pub fn open_path(path: &Path) -> Result<(), CoreError> {
    std::fs::create_dir_all(path)
        .and_then(|()| open::that_detached(path))
        .map_err(|source| CoreError::Io {
            what: format!("could not open {}", path.display()),
            source,
        })
}
