//! `agents.json`: the registered agent profiles (`loadProfiles`, `saveProfiles`,
//! `upsertAgentProfile`). The API key is held as [`Sensitive`] in memory and only exposed when the
//! file is written.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::CanonFileError;
use crate::home::CanonHome;
use crate::json::exclusive;
use crate::records::{layout, FieldReader, Records};
use live_runtime::Sensitive;

/// One `agents.json` entry (`AgentProfile` in the package).
#[derive(Clone)]
pub struct AgentProfile {
    /// `apiKey`.
    pub api_key: Sensitive<String>,
    /// `agentId`.
    pub agent_id: String,
    /// `agentName`.
    pub agent_name: String,
    /// `registeredAt` (ISO timestamp).
    pub registered_at: String,
    /// `clientType` (`AgentClientType`, e.g. `claude-code`, `codex`).
    pub client_type: Option<String>,
    /// `baseUrl`: the Canon API this profile belongs to, when not the default.
    pub base_url: Option<String>,
    /// `streamUrl`.
    pub stream_url: Option<String>,
    /// `rtdbUrl`.
    pub rtdb_url: Option<String>,
    /// `runtimeId`.
    pub runtime_id: Option<String>,
    /// Fields this version does not know (and known optional fields of an unexpected type),
    /// written back untouched.
    pub extra: Map<String, Value>,
    key_order: Vec<String>,
}

impl AgentProfile {
    /// A profile with the four required fields.
    pub fn new(
        api_key: Sensitive<String>,
        agent_id: impl Into<String>,
        agent_name: impl Into<String>,
        registered_at: impl Into<String>,
    ) -> Self {
        Self {
            api_key,
            agent_id: agent_id.into(),
            agent_name: agent_name.into(),
            registered_at: registered_at.into(),
            client_type: None,
            base_url: None,
            stream_url: None,
            rtdb_url: None,
            runtime_id: None,
            extra: Map::new(),
            key_order: Vec::new(),
        }
    }

    /// `{ ...self, ...update }` for the fields `update` sets: the result keeps this profile's
    /// unknown fields and key order, with `update`'s required fields and its `Some` optionals.
    /// `base_url` is always `update`'s: a key belongs to the Canon API that issued it, so a stale
    /// `baseUrl` must not survive a re-registration against the default API.
    pub fn merged_with(&self, update: AgentProfile) -> AgentProfile {
        let mut extra = self.extra.clone();
        for (k, v) in update.extra {
            extra.insert(k, v);
        }
        let mut key_order = self.key_order.clone();
        for k in update.key_order {
            if !key_order.contains(&k) {
                key_order.push(k);
            }
        }
        AgentProfile {
            api_key: update.api_key,
            agent_id: update.agent_id,
            agent_name: update.agent_name,
            registered_at: update.registered_at,
            client_type: update.client_type.or_else(|| self.client_type.clone()),
            base_url: update.base_url,
            stream_url: update.stream_url.or_else(|| self.stream_url.clone()),
            rtdb_url: update.rtdb_url.or_else(|| self.rtdb_url.clone()),
            runtime_id: update.runtime_id.or_else(|| self.runtime_id.clone()),
            extra,
            key_order,
        }
    }

    pub(crate) fn from_object(obj: Map<String, Value>) -> Result<Self, String> {
        let mut r = FieldReader::new(obj);
        let api_key = Sensitive::new(r.string("apiKey")?);
        let agent_id = r.string("agentId")?;
        let agent_name = r.string("agentName")?;
        let registered_at = r.string("registeredAt")?;
        Ok(Self {
            api_key,
            agent_id,
            agent_name,
            registered_at,
            client_type: r.opt_string("clientType"),
            base_url: r.opt_string("baseUrl"),
            stream_url: r.opt_string("streamUrl"),
            rtdb_url: r.opt_string("rtdbUrl"),
            runtime_id: r.opt_string("runtimeId"),
            extra: r.rest,
            key_order: r.key_order,
        })
    }

    pub(crate) fn to_object(&self) -> Map<String, Value> {
        let s = |v: &Option<String>| v.clone().map(Value::String);
        layout(
            &self.key_order,
            vec![
                ("apiKey", Some(Value::String(self.api_key.expose().clone()))),
                ("agentId", Some(Value::String(self.agent_id.clone()))),
                ("agentName", Some(Value::String(self.agent_name.clone()))),
                (
                    "registeredAt",
                    Some(Value::String(self.registered_at.clone())),
                ),
                ("clientType", s(&self.client_type)),
                ("baseUrl", s(&self.base_url)),
                ("streamUrl", s(&self.stream_url)),
                ("rtdbUrl", s(&self.rtdb_url)),
                ("runtimeId", s(&self.runtime_id)),
            ],
            &self.extra,
        )
    }
}

impl fmt::Debug for AgentProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentProfile")
            .field("api_key", &self.api_key)
            .field("agent_id", &self.agent_id)
            .field("agent_name", &self.agent_name)
            .field("registered_at", &self.registered_at)
            .field("client_type", &self.client_type)
            .field("base_url", &self.base_url)
            .field("stream_url", &self.stream_url)
            .field("rtdb_url", &self.rtdb_url)
            .field("runtime_id", &self.runtime_id)
            // Unknown fields might hold secrets a newer package added: names only.
            .field("extra_fields", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The content of `agents.json`.
pub type AgentProfiles = Records<AgentProfile>;

/// `loadProfiles()`: a missing file is an empty set; a corrupt one is an error carrying the
/// reason (the package silently treats it as empty).
pub fn load_profiles(home: &CanonHome) -> Result<AgentProfiles, CanonFileError> {
    Records::load(&home.agents_path(), AgentProfile::from_object)
}

/// `saveProfiles(profiles)`: the package's atomic, mode-0600 write.
pub fn save_profiles(home: &CanonHome, profiles: &AgentProfiles) -> Result<(), CanonFileError> {
    exclusive(|| save_unlocked(home, profiles))
}

fn save_unlocked(home: &CanonHome, profiles: &AgentProfiles) -> Result<(), CanonFileError> {
    profiles.save(home, &home.agents_path(), AgentProfile::to_object)
}

/// `upsertAgentProfile(name, profile)`: `profiles[name.trim()] = profile`, then save. Unlike the
/// package, a corrupt `agents.json` is reported instead of being overwritten (it may hold keys).
pub fn upsert_agent_profile(
    home: &CanonHome,
    name: &str,
    profile: AgentProfile,
) -> Result<AgentProfiles, CanonFileError> {
    write_profile(home, name, |_| profile)
}

/// Like [`upsert_agent_profile`], but an existing profile's unknown fields, key order and unset
/// optionals are kept (`{ ...existing, ...update }`). Used by the approval workflow.
pub fn merge_agent_profile(
    home: &CanonHome,
    name: &str,
    update: AgentProfile,
) -> Result<AgentProfiles, CanonFileError> {
    write_profile(home, name, |existing| match existing {
        Some(existing) => existing.merged_with(update),
        None => update,
    })
}

/// Sets `profiles[name.trim()]` to what `next` makes of the existing profile, under the file lock.
fn write_profile(
    home: &CanonHome,
    name: &str,
    next: impl FnOnce(Option<&AgentProfile>) -> AgentProfile,
) -> Result<AgentProfiles, CanonFileError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(CanonFileError::EmptyProfileName);
    }
    exclusive(|| {
        let mut profiles = load_profiles(home)?;
        let profile = next(profiles.get(name));
        profiles.insert(name, profile);
        save_unlocked(home, &profiles)?;
        Ok(profiles)
    })
}
