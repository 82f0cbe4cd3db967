//! `pending-registrations.json`: registrations submitted (or about to be) but not yet approved
//! (`loadPendingRegistrations`, `savePendingRegistrations`, `getOrCreatePendingRegistration`,
//! `updatePendingRegistration`, `clearPendingRegistration`). The poll token is held as
//! [`Sensitive`].

use std::fmt;

use serde_json::{Map, Value};

use crate::error::CanonFileError;
use crate::home::CanonHome;
use crate::json::{exclusive, iso_now};
use crate::records::{layout, FieldReader, Records};
use live_runtime::Sensitive;

/// One pending registration (`PendingRegistration` in the package).
#[derive(Clone)]
pub struct PendingRegistration {
    /// `profile`.
    pub profile: String,
    /// `clientType`.
    pub client_type: Option<String>,
    /// `localRegistrationId`: makes resubmission idempotent on the server.
    pub local_registration_id: String,
    /// `requestId`, once submitted.
    pub request_id: Option<String>,
    /// `pollToken`, once submitted (if the server issued one).
    pub poll_token: Option<Sensitive<String>>,
    /// `createdAt` (ISO).
    pub created_at: String,
    /// `updatedAt` (ISO).
    pub updated_at: String,
    /// Unknown fields, written back untouched.
    pub extra: Map<String, Value>,
    key_order: Vec<String>,
}

impl fmt::Debug for PendingRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingRegistration")
            .field("profile", &self.profile)
            .field("client_type", &self.client_type)
            .field("local_registration_id", &self.local_registration_id)
            .field("request_id", &self.request_id)
            .field("poll_token", &self.poll_token)
            .field("created_at", &self.created_at)
            .field("updated_at", &self.updated_at)
            .field("extra_fields", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PendingRegistration {
    /// A new entry for `profile`, created now, with a fresh local registration id.
    fn new(profile: &str, client_type: Option<&str>) -> Self {
        let now = iso_now();
        Self {
            profile: profile.to_owned(),
            client_type: client_type.map(str::to_owned),
            local_registration_id: uuid::Uuid::new_v4().to_string(),
            request_id: None,
            poll_token: None,
            created_at: now.clone(),
            updated_at: now,
            extra: Map::new(),
            key_order: Vec::new(),
        }
    }

    pub(crate) fn from_object(obj: Map<String, Value>) -> Result<Self, String> {
        let mut r = FieldReader::new(obj);
        let profile = r.string("profile")?;
        let local_registration_id = r.string("localRegistrationId")?;
        let created_at = r.string("createdAt")?;
        let updated_at = r.string("updatedAt")?;
        Ok(Self {
            profile,
            client_type: r.opt_string("clientType"),
            local_registration_id,
            request_id: r.opt_string("requestId"),
            poll_token: r.opt_string("pollToken").map(Sensitive::new),
            created_at,
            updated_at,
            extra: r.rest,
            key_order: r.key_order,
        })
    }

    pub(crate) fn to_object(&self) -> Map<String, Value> {
        let s = |v: &Option<String>| v.clone().map(Value::String);
        layout(
            &self.key_order,
            vec![
                ("profile", Some(Value::String(self.profile.clone()))),
                ("clientType", s(&self.client_type)),
                (
                    "localRegistrationId",
                    Some(Value::String(self.local_registration_id.clone())),
                ),
                ("requestId", s(&self.request_id)),
                (
                    "pollToken",
                    self.poll_token
                        .as_ref()
                        .map(|t| Value::String(t.expose().clone())),
                ),
                ("createdAt", Some(Value::String(self.created_at.clone()))),
                ("updatedAt", Some(Value::String(self.updated_at.clone()))),
            ],
            &self.extra,
        )
    }
}

/// The fields `updatePendingRegistration` may change; `None` leaves a field as it is.
#[derive(Debug, Default, Clone)]
pub struct PendingPatch {
    /// New `requestId`.
    pub request_id: Option<String>,
    /// New `pollToken`.
    pub poll_token: Option<Sensitive<String>>,
    /// New `clientType`.
    pub client_type: Option<String>,
}

/// The content of `pending-registrations.json`.
pub type PendingRegistrations = Records<PendingRegistration>;

/// `loadPendingRegistrations()`: missing → empty; corrupt → error with the reason.
pub fn load_pending_registrations(
    home: &CanonHome,
) -> Result<PendingRegistrations, CanonFileError> {
    Records::load(
        &home.pending_registrations_path(),
        PendingRegistration::from_object,
    )
}

/// `savePendingRegistrations(pending)`.
pub fn save_pending_registrations(
    home: &CanonHome,
    pending: &PendingRegistrations,
) -> Result<(), CanonFileError> {
    exclusive(|| save_unlocked(home, pending))
}

fn save_unlocked(home: &CanonHome, pending: &PendingRegistrations) -> Result<(), CanonFileError> {
    pending.save(
        home,
        &home.pending_registrations_path(),
        PendingRegistration::to_object,
    )
}

/// `getOrCreatePendingRegistration(profile, clientType?)`. As in the package, an existing entry's
/// `clientType` is replaced by the argument even when it is `None` (the key is then dropped).
pub fn get_or_create_pending_registration(
    home: &CanonHome,
    profile: &str,
    client_type: Option<&str>,
) -> Result<PendingRegistration, CanonFileError> {
    exclusive(|| {
        let mut pending = load_pending_registrations(home)?;
        let next = match pending.get(profile) {
            Some(existing) => {
                let mut next = existing.clone();
                next.client_type = client_type.map(str::to_owned);
                next.updated_at = iso_now();
                next
            }
            None => PendingRegistration::new(profile, client_type),
        };
        pending.insert(profile, next.clone());
        save_unlocked(home, &pending)?;
        Ok(next)
    })
}

/// `updatePendingRegistration(profile, patch)`: creates the entry if missing (with the package's
/// key order: `profile, localRegistrationId, createdAt, updatedAt`, then the patch).
pub fn update_pending_registration(
    home: &CanonHome,
    profile: &str,
    patch: PendingPatch,
) -> Result<PendingRegistration, CanonFileError> {
    exclusive(|| {
        let mut pending = load_pending_registrations(home)?;
        let mut next = match pending.get(profile) {
            Some(existing) => existing.clone(),
            None => PendingRegistration {
                key_order: ["profile", "localRegistrationId", "createdAt", "updatedAt"]
                    .map(String::from)
                    .to_vec(),
                ..PendingRegistration::new(profile, None)
            },
        };
        // `{ ...existing, ...patch }`: patch keys new to the entry follow in the patch's order.
        next.key_order = next.to_object().keys().cloned().collect();
        if let Some(v) = patch.request_id {
            next.request_id = Some(v);
            push_key(&mut next.key_order, "requestId");
        }
        if let Some(v) = patch.poll_token {
            next.poll_token = Some(v);
            push_key(&mut next.key_order, "pollToken");
        }
        if let Some(v) = patch.client_type {
            next.client_type = Some(v);
            push_key(&mut next.key_order, "clientType");
        }
        next.updated_at = iso_now();
        pending.insert(profile, next.clone());
        save_unlocked(home, &pending)?;
        Ok(next)
    })
}

fn push_key(order: &mut Vec<String>, key: &str) {
    if !order.iter().any(|k| k == key) {
        order.push(key.to_owned());
    }
}

/// `clearPendingRegistration(profile)`: rewrites the file only if the entry existed, and says
/// whether it did (the package returns nothing; a dismiss of nothing is an error to the tray).
pub fn clear_pending_registration(home: &CanonHome, profile: &str) -> Result<bool, CanonFileError> {
    exclusive(|| {
        let mut pending = load_pending_registrations(home)?;
        let present = pending.is_present(profile);
        if present {
            pending.remove(profile);
            save_unlocked(home, &pending)?;
        }
        Ok(present)
    })
}
