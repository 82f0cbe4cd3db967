//! One-time attach codes and the browser sessions they turn into.
//!
//! Both are 256-bit random values from the OS RNG, hex-encoded. Only their SHA-256 digests are
//! kept, so the maps hold nothing a memory dump could replay, and a lookup's timing depends on a
//! digest the requester cannot steer rather than on the secret itself.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// Random bytes in a code or session id (256 bits; the brief's floor is 128).
const SECRET_BYTES: usize = 32;

/// Longest code worth hashing; real codes are `2 * SECRET_BYTES` hex characters.
const MAX_CODE_LEN: usize = 2 * SECRET_BYTES;

type Digest32 = [u8; 32];

fn digest(secret: &str) -> Digest32 {
    Sha256::digest(secret.as_bytes()).into()
}

/// A fresh random secret, hex-encoded.
pub(crate) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    OsRng.fill_bytes(&mut buf);
    hex::encode(buf)
}

/// Codes minted but not yet redeemed, with their deadlines.
#[derive(Default)]
pub(crate) struct AttachCodes {
    // std Mutex: held only for a map operation, never across an await.
    pending: Mutex<HashMap<Digest32, Instant>>,
}

impl AttachCodes {
    /// Mints a code redeemable once within `ttl`. Expired codes are forgotten on the way.
    pub(crate) fn mint(&self, ttl: Duration) -> String {
        let code = random_hex(SECRET_BYTES);
        let now = Instant::now();
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.retain(|_, deadline| *deadline > now);
        pending.insert(digest(&code), now + ttl);
        code
    }

    /// Consumes `code`: true only the first time, and only before its deadline.
    pub(crate) fn redeem(&self, code: &str) -> bool {
        if code.len() > MAX_CODE_LEN {
            return false;
        }
        let key = digest(code);
        let deadline = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        deadline.is_some_and(|deadline| Instant::now() < deadline)
    }
}

/// Session ids handed to browsers that redeemed a code. They live as long as the proxy.
#[derive(Default)]
pub(crate) struct Sessions {
    // std Mutex: held only for a set operation, never across an await.
    ids: Mutex<HashSet<Digest32>>,
}

impl Sessions {
    /// Starts a session and returns its id (the cookie value).
    pub(crate) fn open(&self) -> String {
        let id = random_hex(SECRET_BYTES);
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(digest(&id));
        id
    }

    /// True when `id` belongs to a session this proxy opened.
    pub(crate) fn contains(&self, id: &str) -> bool {
        if id.len() != 2 * SECRET_BYTES {
            return false;
        }
        let key = digest(id);
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_redeems_exactly_once() {
        let codes = AttachCodes::default();
        let code = codes.mint(Duration::from_secs(30));
        assert_eq!(code.len(), 64);
        assert!(codes.redeem(&code));
        assert!(!codes.redeem(&code));
    }

    #[test]
    fn an_expired_code_does_not_redeem() {
        let codes = AttachCodes::default();
        let code = codes.mint(Duration::ZERO);
        assert!(!codes.redeem(&code));
    }

    #[test]
    fn unknown_and_oversized_codes_do_not_redeem() {
        let codes = AttachCodes::default();
        let _real = codes.mint(Duration::from_secs(30));
        assert!(!codes.redeem("0000"));
        assert!(!codes.redeem(&"a".repeat(10_000)));
    }

    #[test]
    fn codes_and_sessions_are_distinct_random_values() {
        let codes = AttachCodes::default();
        let a = codes.mint(Duration::from_secs(30));
        let b = codes.mint(Duration::from_secs(30));
        assert_ne!(a, b);
        let sessions = Sessions::default();
        let s = sessions.open();
        assert!(sessions.contains(&s));
        assert!(!sessions.contains(&a), "a code is not a session");
        assert!(!sessions.contains(&sessions_free_id()));
    }

    fn sessions_free_id() -> String {
        random_hex(SECRET_BYTES)
    }
}
