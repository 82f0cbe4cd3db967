//! Issue 12: a second OS user of the machine gets nothing of a runtime through its proxy, neither
//! by connecting to the proxy nor by listening on a port the runtime has closed.
//!
//! The other user is real (created by the test as root, see `attach_proxy::other_user`) and
//! acts from its own process; without root the tests say they are skipped.

use attach_proxy::other_user::{self, OtherUser, Role};
use attach_proxy::{check_health, AttachError};
use live_runtime::Sensitive;

use crate::support::*;

/// The ignored test the other user's processes run: this binary, re-run as that user.
const ENTRY: &str = "other_user::as_the_other_user";

#[test]
#[ignore = "run only as the second user, by the tests below"]
fn as_the_other_user() {
    other_user::run_requested_role();
}

/// `key=value` out of a role's result line.
fn field<'a>(result: &'a str, key: &str) -> &'a str {
    let start = result
        .find(&format!("{key}="))
        .unwrap_or_else(|| panic!("no {key} in {result}"))
        + key.len()
        + 1;
    result[start..].split(' ').next().unwrap()
}

// The proxy closes another user's connection before reading it: a request that would redeem a
// valid code (or use a made-up session) gets no byte back and leaves the code unused, which
// only holds if the proxy never parsed it. The user's own browser then redeems that same code.
#[tokio::test(flavor = "multi_thread")]
async fn another_user_is_closed_unread_and_cannot_use_a_code_or_a_made_up_cookie() {
    let Some(other) = OtherUser::get() else {
        return;
    };
    let rig = Rig::start().await;
    let url = rig.proxy.mint_code();
    let host = rig.proxy_addr();
    let attempts = [
        format!("GET {} HTTP/1.1\r\nHost: {host}\r\n\r\n", path_of(&url)),
        format!(
            "GET / HTTP/1.1\r\nHost: {host}\r\nCookie: sc_attach_0000={}\r\n\r\n",
            "0".repeat(64)
        ),
        format!("GET /api/info HTTP/1.1\r\nHost: {host}\r\n\r\n"),
    ];
    for (i, send) in attempts.into_iter().enumerate() {
        let role = Role::Talk { addr: host, send };
        let result = tokio::task::spawn_blocking(move || other.run(ENTRY, &role))
            .await
            .unwrap();
        assert_eq!(field(&result, "connected"), "true", "{result}");
        assert_eq!(
            field(&result, "received"),
            "0",
            "attempt {i} got an answer: {result}"
        );
        assert_no_canary(result.as_bytes(), "the other user's result");
        assert_eq!(rig.proxy.refused_connections(), i as u64 + 1);
    }

    let response = raw_get(host, path_of(&url), &[]).await;
    assert_eq!(
        response.status, 303,
        "the code the other user sent is still unused"
    );
    let client = rig.attached_client().await;
    let page = text(send(client.get(rig.url("/"))).await).await;
    assert!(
        page.contains(RUNTIME_NAME),
        "the user's own attach still works"
    );
    assert_eq!(
        rig.proxy.refused_connections(),
        3,
        "the user's own connections pass"
    );
}

// A runtime exits and another user takes its port: the health check refuses to send the token
// there, and the proxy (already running for that runtime) answers 502 without writing a byte
// of the request, token included, to the other user's listener.
#[tokio::test(flavor = "multi_thread")]
async fn a_port_taken_over_by_another_user_gets_no_token() {
    let Some(other) = OtherUser::get() else {
        return;
    };
    let mut rig = Rig::start().await;
    let client = rig.attached_client().await;
    rig.runtime.take().unwrap().shutdown().await;

    let mut listener = other.spawn(
        ENTRY,
        &Role::Listen {
            addr: rig.runtime_addr,
        },
    );
    let lines = tokio::task::spawn_blocking(move || {
        let lines = other_user::wait_listening(&mut listener);
        (listener, lines)
    });
    let (listener, lines) = lines.await.unwrap();

    let error = check_health(
        &Sensitive::new(rig.runtime_addr),
        &Sensitive::new(CANARY_TOKEN.to_owned()),
        Some(std::process::id()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            error,
            AttachError::Listener(runtime_link::ListenerError::Foreign { .. })
        ),
        "{error}"
    );
    assert!(error.to_string().contains("not answering"), "{error}");

    let response = send(client.get(rig.url("/api/info"))).await;
    assert_eq!(response.status(), 502);

    let result = tokio::task::spawn_blocking(move || other_user::stop_listening(listener, lines))
        .await
        .unwrap();
    assert!(
        field(&result, "connections").parse::<u32>().unwrap() >= 1,
        "the check connected, so the test watched the right port: {result}"
    );
    assert_eq!(
        field(&result, "received"),
        "0",
        "bytes reached the other user: {result}"
    );
    assert!(!result.contains(CANARY_TOKEN));
}
