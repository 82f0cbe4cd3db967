//! A canary token and a distinctive address must never show up where browsers, logs or files
//! could see them: receipt files, `Debug` of any public type, or the JSON of a list.

use live_runtime::{
    list_live_runtimes, register_live_runtime, resolve_live_runtime, LiveRuntimeReceiptError,
    ReceiptDir, Sensitive,
};

use crate::common::{entries, file_store_scratch, keychain_or_skip, scratch_with, source, token};

const CANARY: &str = "CANARY-tok-5f1d9b7e2c";
const CANARY_PORT: u16 = 47_123;

fn assert_clean(what: &str, text: &str) {
    assert!(!text.contains(CANARY), "{what} leaked the token: {text}");
    assert!(
        !text.contains(&CANARY_PORT.to_string()),
        "{what} leaked the address: {text}"
    );
}

/// Registers with the canary and checks every public surface. With `receipts_only_dir` the whole
/// receipt directory must be free of the canary (true for the keychain store).
fn canary_never_leaks(dir: &ReceiptDir) {
    let src = source("canary");
    let address = format!("127.0.0.1:{CANARY_PORT}").parse().unwrap();
    let registration =
        register_live_runtime(dir, "rt-canary", src.clone(), address, token(CANARY)).unwrap();

    for name in entries(dir.path()) {
        let bytes = std::fs::read(dir.path().join(&name)).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(CANARY),
            "receipt dir file {name} holds the token"
        );
    }

    let list = list_live_runtimes(dir).unwrap();
    assert_eq!(list.runtimes.len(), 1);
    assert_clean(
        "serde_json of the list",
        &serde_json::to_string(&list).unwrap(),
    );
    assert_clean("Debug of the list", &format!("{list:?} {list:#?}"));
    assert_clean("Debug of a record", &format!("{:?}", list.runtimes[0]));

    let resolved = resolve_live_runtime(dir, registration.endpoint(), &src).unwrap();
    assert_eq!(
        resolved.token.expose(),
        CANARY,
        "the canary must be what resolves"
    );
    assert_clean(
        "Debug of ResolvedLiveRuntime",
        &format!("{resolved:?} {resolved:#?}"),
    );
    assert_clean("Debug of the token", &format!("{:?}", resolved.token));
    assert_clean("Debug of the address", &format!("{:?}", resolved.address));
    assert_clean("Debug of the registration", &format!("{registration:?}"));
    assert_clean("Debug of the receipt dir", &format!("{dir:?}"));
    assert_clean(
        "Debug of the secret store",
        &format!("{:?}", dir.secret_store()),
    );

    let mismatch =
        resolve_live_runtime(dir, registration.endpoint(), &source("other")).unwrap_err();
    assert_clean("a resolve error", &format!("{mismatch:?} {mismatch}"));
    let missing = LiveRuntimeReceiptError::MissingToken {
        endpoint: registration.endpoint().clone(),
    };
    assert_clean("a missing-token error", &format!("{missing:?} {missing}"));
}

#[test]
fn sensitive_debug_is_redacted() {
    assert_eq!(
        format!("{:?}", Sensitive::new(CANARY.to_string())),
        "Sensitive(<redacted>)"
    );
    assert_eq!(
        format!("{:#?}", Sensitive::new(CANARY.to_string())),
        "Sensitive(<redacted>)"
    );
}

#[test]
fn canary_token_never_leaks_with_the_file_store() {
    let scratch = file_store_scratch();
    canary_never_leaks(&scratch.dir);
}

#[test]
fn canary_token_never_leaks_with_the_keychain() {
    let Some(store) = keychain_or_skip("canary_token_never_leaks_with_the_keychain") else {
        return;
    };
    let (_tmp, dir) = scratch_with(store);
    canary_never_leaks(&dir);
}
