//! The Secret Service (Linux, *BSD) side of the keychain backend, on one long-lived session.
//!
//! `keyring::Entry` opens a new D-Bus connection and negotiates a new encrypted session (a
//! Diffie-Hellman key exchange) for every call, and that is most of what a read costs: several
//! times the search and the secret on a session that is already open, and on the path of every
//! first attach. So the keychain worker thread keeps one connection and session for as long as it
//! lives, in a thread-local: every call runs on that one thread, and a worker retired after a
//! timeout takes its session with it.
//!
//! Items are found, created and read exactly as `keyring` 3 does it, with `keyring`'s own attribute
//! set and label ([`SsCredential`]) and its own collection and error helpers, so an entry written
//! by either is found by the other: search by `target`/`service`/`username`, then (keyring's
//! fallback for v1 items) the default collection by `service`/`username`; more than one match is
//! ambiguous; locked items are unlocked before use; a new item goes to the default collection.
//!
//! A session can go stale under us (the keyring daemon restarted, the bus went away): a call that
//! fails on the kept session with a D-Bus or decryption error is tried once more on a fresh one.

use std::cell::RefCell;
use std::collections::HashMap;

use dbus_secret_service::{EncryptionType, Error, Item, SecretService};
use keyring::secret_service::{decode_error, get_collection, SsCredential};

use super::Sensitive;

thread_local! {
    /// The keychain worker thread's session, opened by its first call.
    static SESSION: RefCell<Option<SecretService>> = const { RefCell::new(None) };
}

/// Stores (or replaces) the secret for `user` of `service`.
pub(super) fn set(service: &str, user: &str, secret: &Sensitive<String>) -> keyring::Result<()> {
    let credential = credential(service, user)?;
    on_session(|ss| {
        let found = with_unique_item(ss, &credential, |item| {
            item.set_secret(secret.expose().as_bytes(), "text/plain")
                .map_err(decode_error)
        });
        let Err(keyring::Error::NoEntry) = found else {
            return found;
        };
        let attributes = credential
            .attributes
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        get_collection(ss, "default")?
            .create_item(
                &credential.label,
                attributes,
                secret.expose().as_bytes(),
                true, // replace
                "text/plain",
            )
            .map(drop)
            .map_err(decode_error)
    })
}

/// Reads the secret for `user` of `service`; [`keyring::Error::NoEntry`] when there is none.
pub(super) fn get(service: &str, user: &str) -> keyring::Result<Sensitive<String>> {
    let credential = credential(service, user)?;
    on_session(|ss| {
        let bytes = with_unique_item(ss, &credential, |item| {
            item.get_secret().map_err(decode_error)
        })?;
        keyring::error::decode_password(bytes).map(Sensitive::new)
    })
}

/// Deletes the secret for `user` of `service`; [`keyring::Error::NoEntry`] when there is none.
pub(super) fn delete(service: &str, user: &str) -> keyring::Result<()> {
    let credential = credential(service, user)?;
    on_session(|ss| with_unique_item(ss, &credential, |item| item.delete().map_err(decode_error)))
}

/// `keyring`'s description of the item for `user` of `service` in the default collection.
fn credential(service: &str, user: &str) -> keyring::Result<SsCredential> {
    SsCredential::new_with_target(None, service, user)
}

/// Applies `f` to the one item `credential` names, unlocked; `NoEntry` or `Ambiguous` otherwise.
fn with_unique_item<T>(
    ss: &SecretService,
    credential: &SsCredential,
    f: impl Fn(&Item) -> keyring::Result<T>,
) -> keyring::Result<T> {
    let attribute = |name: &str| credential.attributes[name].as_str();
    let search = ss
        .search_items(HashMap::from([
            ("target", attribute("target")),
            ("service", attribute("service")),
            ("username", attribute("username")),
        ]))
        .map_err(decode_error)?;
    match (search.unlocked.as_slice(), search.locked.as_slice()) {
        ([], []) => {}
        ([item], []) => return f(item),
        ([], [item]) => {
            item.unlock().map_err(decode_error)?;
            return f(item);
        }
        _ => return Err(ambiguous(search.unlocked.iter().chain(&search.locked))),
    }
    // keyring v1 wrote items without a `target` attribute, into the default collection only.
    let collection = get_collection(ss, "default")?;
    let legacy = collection
        .search_items(HashMap::from([
            ("service", attribute("service")),
            ("username", attribute("username")),
        ]))
        .map_err(decode_error)?;
    match legacy.as_slice() {
        [] => Err(keyring::Error::NoEntry),
        [item] => f(item),
        _ => Err(ambiguous(&legacy)),
    }
}

/// keyring's error for more than one matching item: a credential describing each.
fn ambiguous<'a, 'b: 'a>(items: impl IntoIterator<Item = &'a Item<'b>>) -> keyring::Error {
    let credentials = items
        .into_iter()
        .map(|item| SsCredential::new_from_item(item).map(|c| Box::new(c) as _))
        .collect::<keyring::Result<Vec<_>>>();
    match credentials {
        Ok(credentials) => keyring::Error::Ambiguous(credentials),
        Err(e) => e,
    }
}

/// Runs `call` on this thread's session, opening one if there is none, and once more on a fresh
/// session if the kept one failed in a way a new one may not.
fn on_session<T>(call: impl Fn(&SecretService) -> keyring::Result<T>) -> keyring::Result<T> {
    SESSION.with(|slot| {
        let mut slot = slot.borrow_mut();
        if let Some(ss) = slot.as_ref() {
            match call(ss) {
                Err(e) if session_may_be_stale(&e) => *slot = None,
                done => return done,
            }
        }
        let ss = SecretService::connect(EncryptionType::Dh).map_err(decode_error)?;
        let done = call(&ss);
        *slot = Some(ss);
        done
    })
}

/// Whether `e` can come from a session that no longer works (its daemon restarted, its bus went
/// away, its key is unknown to a new daemon), as opposed to an answer about the item itself.
fn session_may_be_stale(e: &keyring::Error) -> bool {
    let keyring::Error::PlatformFailure(inner) = e else {
        return false;
    };
    matches!(
        inner.downcast_ref::<Error>(),
        Some(Error::Dbus(_) | Error::Crypto(_) | Error::Parse | Error::Unavailable)
    )
}
