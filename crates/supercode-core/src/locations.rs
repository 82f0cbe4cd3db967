//! Where the tray reads and writes: the receipt directory, `$CANON_HOME`, logs and its own state.

use std::path::PathBuf;

use canon_local::CanonHome;
use live_runtime::ReceiptDir;

use crate::CoreError;

/// The file in the state directory that records each pending registration's Canon API.
pub const REGISTRATION_ORIGINS_FILE: &str = "canon-registration-origins.json";

/// Every place the tray touches, resolved once from the environment.
#[derive(Clone, Debug)]
pub struct Locations {
    /// Live-runtime receipts (and the secret store that holds their tokens).
    pub receipts: ReceiptDir,
    /// `@canonmsg/core` local state.
    pub canon: CanonHome,
    /// Rolling app log and per-runtime revive logs.
    pub log_dir: PathBuf,
    /// The tray's own small state (first-run marker).
    pub state_dir: PathBuf,
}

impl Locations {
    /// Resolves every location from the environment: `SUPERCODE_RUNTIME_DIR`, `SUPERCODE_SECRET_STORE`,
    /// `CANON_HOME`, `SUPERCODE_LOG_DIR` and `SUPERCODE_STATE_DIR` override the platform defaults.
    pub fn from_env() -> Result<Self, CoreError> {
        let receipts = ReceiptDir::from_env()?;
        let canon = CanonHome::from_env()?;
        let dirs = directories::ProjectDirs::from("dev", "supercode", "supercode-tray");
        let log_dir = env_path("SUPERCODE_LOG_DIR")
            .or_else(|| {
                dirs.as_ref().map(|d| {
                    d.state_dir()
                        .unwrap_or_else(|| d.data_local_dir())
                        .join("logs")
                })
            })
            .ok_or(CoreError::NoHome)?;
        let state_dir = env_path("SUPERCODE_STATE_DIR")
            .or_else(|| dirs.as_ref().map(|d| d.data_local_dir().to_path_buf()))
            .ok_or(CoreError::NoHome)?;
        Ok(Self {
            receipts,
            canon,
            log_dir,
            state_dir,
        })
    }

    /// The tray's record of which Canon API each pending registration was submitted to
    /// (`canon_local::origins`): kept in the state directory, because the package's
    /// `pending-registrations.json` has no field for it.
    pub fn registration_origins(&self) -> canon_local::RegistrationOrigins {
        canon_local::RegistrationOrigins::at(self.state_dir.join(REGISTRATION_ORIGINS_FILE))
    }

    /// The per-runtime log a revived runtime writes to.
    pub fn revive_log(&self, runtime_id: &str) -> PathBuf {
        let safe: String = runtime_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        self.log_dir.join("runtimes").join(format!("{safe}.log"))
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}
