//! One-time attach codes and the browser sessions they turn into.
//!
//! Both are 256-bit random values from the OS RNG, hex-encoded. Only their SHA-256 digests are
//! kept, so the maps hold nothing a memory dump could replay, and a lookup's timing depends on a
//! digest the requester cannot steer rather than on the secret itself.

use std::collections::HashMap;
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

/// Session ids handed to browsers that redeemed a code, with when each was last used. A session
/// unused for longer than its idle timeout is over: the next request gets "attach again".
pub(crate) struct Sessions {
    // std Mutex: held only for a map operation, never across an await.
    last_used: Mutex<HashMap<Digest32, Instant>>,
    idle_timeout: Duration,
}

impl Sessions {
    pub(crate) fn new(idle_timeout: Duration) -> Self {
        Self {
            last_used: Mutex::default(),
            idle_timeout,
        }
    }

    /// Starts a session and returns its id (the cookie value). Sessions idle for too long are
    /// forgotten on the way, so the map only holds live ones.
    pub(crate) fn open(&self) -> String {
        let id = random_hex(SECRET_BYTES);
        let now = Instant::now();
        let mut last_used = self.lock();
        last_used.retain(|_, used| now.duration_since(*used) <= self.idle_timeout);
        last_used.insert(digest(&id), now);
        id
    }

    /// True when `id` belongs to a session this proxy opened that has not been idle for longer
    /// than the timeout; using it counts as activity.
    pub(crate) fn touch(&self, id: &str) -> bool {
        if id.len() != 2 * SECRET_BYTES {
            return false;
        }
        let key = digest(id);
        let now = Instant::now();
        let mut last_used = self.lock();
        match last_used.get_mut(&key) {
            Some(used) if now.duration_since(*used) <= self.idle_timeout => {
                *used = now;
                true
            }
            Some(_) => {
                last_used.remove(&key);
                false
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Digest32, Instant>> {
        self.last_used.lock().unwrap_or_else(|e| e.into_inner())
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
        let sessions = Sessions::new(Duration::from_secs(60));
        let s = sessions.open();
        assert!(sessions.touch(&s));
        assert!(!sessions.touch(&a), "a code is not a session");
        assert!(!sessions.touch(&sessions_free_id()));
    }

    #[test]
    fn a_session_idle_for_longer_than_its_timeout_is_over() {
        let sessions = Sessions::new(Duration::from_millis(50));
        let kept = sessions.open();
        let idle = sessions.open();
        for _ in 0..4 {
            std::thread::sleep(Duration::from_millis(20));
            assert!(sessions.touch(&kept), "use keeps a session alive");
        }
        assert!(!sessions.touch(&idle), "80 ms idle is past a 50 ms timeout");
        assert!(!sessions.touch(&idle), "an expired session stays over");
        assert!(sessions.touch(&kept));
    }

    fn sessions_free_id() -> String {
        random_hex(SECRET_BYTES)
    }
}
