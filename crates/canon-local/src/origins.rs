//! Which Canon API each pending registration was submitted to: the tray's own record, so a poll
//! token is only ever sent back to the API that issued it.
//!
//! The package's `PendingRegistration` (`pending-registrations.json`) has no base URL field, and
//! adding one would make the file differ from what the package writes. So the tray keeps this in
//! a file of its own, outside `$CANON_HOME` (the app puts it in its state directory): a JSON
//! object from `localRegistrationId` (a UUID, unique to one pending entry) to
//! `{"baseUrl": "...", "recordedAt": "..."}`, written like the Canon files (0600, temp file then
//! rename).
//!
//! The base URL is recorded *before* a registration is submitted, so a crash between submitting
//! and saving the poll token cannot leave a token whose origin is unknown. A registration the
//! tray did not submit (a runtime submitted it with the package) has no record: the first
//! `approve` records the API it polls, and every later one must use the same.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::error::CanonFileError;
use crate::json::{exclusive, iso_now, read_json, write_json_atomic};

/// The tray's record of which Canon API each pending registration belongs to.
#[derive(Debug, Clone)]
pub struct RegistrationOrigins {
    path: PathBuf,
}

impl RegistrationOrigins {
    /// The record kept in the file at `path` (created when first written).
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Where the record is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The base URL recorded for the registration `local_registration_id`, if any.
    pub fn base_url_of(
        &self,
        local_registration_id: &str,
    ) -> Result<Option<String>, CanonFileError> {
        Ok(self
            .load()?
            .get(local_registration_id)
            .and_then(|entry| entry.get("baseUrl"))
            .and_then(Value::as_str)
            .map(str::to_owned))
    }

    /// Records that `local_registration_id` belongs to `base_url` (replacing any earlier record).
    pub fn record(
        &self,
        local_registration_id: &str,
        base_url: &str,
    ) -> Result<(), CanonFileError> {
        exclusive(|| {
            let mut all = self.load()?;
            all.insert(
                local_registration_id.to_owned(),
                json!({ "baseUrl": base_url, "recordedAt": iso_now() }),
            );
            self.save(all)
        })
    }

    /// Drops the record of `local_registration_id` (its registration is finished or dismissed).
    pub fn forget(&self, local_registration_id: &str) -> Result<(), CanonFileError> {
        exclusive(|| {
            let mut all = self.load()?;
            if all.shift_remove(local_registration_id).is_some() {
                self.save(all)?;
            }
            Ok(())
        })
    }

    fn load(&self) -> Result<Map<String, Value>, CanonFileError> {
        match read_json(&self.path)?.map(|file| file.value) {
            None => Ok(Map::new()),
            Some(Value::Object(all)) => Ok(all),
            Some(_) => Err(CanonFileError::Corrupt {
                path: self.path.clone(),
                reason: "not a JSON object".into(),
            }),
        }
    }

    fn save(&self, all: Map<String, Value>) -> Result<(), CanonFileError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        write_json_atomic(dir, &self.path, &Value::Object(all))
    }
}
