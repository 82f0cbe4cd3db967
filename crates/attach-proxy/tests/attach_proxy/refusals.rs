//! Every way the proxy refuses a request, and that no refusal leaks the token.
//! (Every helper in `support` already fails the test if the canary token shows up anywhere.)

use std::time::Duration;

use attach_proxy::AttachOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Error as WsError;

use crate::support::*;

fn assert_refusal_page(response: &RawResponse, status: u16, says: &str) {
    assert_eq!(response.status, status, "{response:?}");
    assert_eq!(response.header("cache-control"), Some("no-store"));
    assert_eq!(response.header("referrer-policy"), Some("no-referrer"));
    assert!(response.header("set-cookie").is_none());
    assert!(
        response.body.contains(says),
        "{:?} lacks {says:?}",
        response.body
    );
}

#[tokio::test]
async fn a_replayed_code_is_refused_with_the_expired_page() {
    let rig = Rig::start().await;
    let url = rig.proxy.mint_code();
    assert_eq!(
        raw_get(rig.proxy_addr(), path_of(&url), &[]).await.status,
        303
    );
    let replay = raw_get(rig.proxy_addr(), path_of(&url), &[]).await;
    assert_refusal_page(
        &replay,
        403,
        "This attach link has expired or was already used: each link works once, within 30 seconds. Attach again from Supercode Tray, or for a new link from the command line run <code>supercode-tray attach NAME</code> again.",
    );
}

#[tokio::test]
async fn an_expired_code_is_refused() {
    let rig = Rig::start_with(AttachOptions {
        code_ttl: Duration::ZERO,
        ..AttachOptions::default()
    })
    .await;
    let url = rig.proxy.mint_code();
    let response = raw_get(rig.proxy_addr(), path_of(&url), &[]).await;
    assert_refusal_page(&response, 403, "has expired or was already used");
}

#[tokio::test]
async fn an_unknown_code_is_refused() {
    let rig = Rig::start().await;
    let _real = rig.proxy.mint_code();
    let forged = format!("/__attach/{}", "ab".repeat(32));
    assert_refusal_page(
        &raw_get(rig.proxy_addr(), &forged, &[]).await,
        403,
        "expired or was already used",
    );
}

#[tokio::test]
async fn a_head_request_does_not_burn_the_code() {
    let rig = Rig::start().await;
    let url = rig.proxy.mint_code();
    let head = raw_request(rig.proxy_addr(), "HEAD", path_of(&url), &[], "").await;
    assert_eq!(head.status, 405);
    assert_eq!(
        raw_get(rig.proxy_addr(), path_of(&url), &[]).await.status,
        303
    );
}

#[tokio::test]
async fn requests_without_a_valid_session_cookie_get_401() {
    let rig = Rig::start().await;
    let addr = rig.proxy_addr();
    let other_rig = Rig::start().await;
    let foreign_cookie = other_rig.session_cookie().await;
    let forged_value = format!(
        "{}={}",
        foreign_cookie.split('=').next().unwrap(),
        "0".repeat(64)
    );
    for cookie in [
        None,
        Some(forged_value.as_str()),
        Some(foreign_cookie.as_str()),
    ] {
        let headers: Vec<(&str, &str)> = cookie.iter().map(|c| ("cookie", *c)).collect();
        for path in ["/", "/api/info", "/api/events"] {
            let response = raw_get(addr, path, &headers).await;
            assert_refusal_page(&response, 401, "Attach again from the tray");
        }
    }
}

#[tokio::test]
async fn a_foreign_host_header_is_refused_even_with_a_valid_session() {
    let rig = Rig::start().await;
    let cookie = rig.session_cookie().await;
    let port = rig.proxy_addr().port();
    let rebound = format!("attacker.example:{port}");
    let other_port = format!("127.0.0.1:{}", port.wrapping_add(1));
    for host in [rebound.as_str(), other_port.as_str(), "127.0.0.1", ""] {
        let response = raw_get(
            rig.proxy_addr(),
            "/",
            &[("host", host), ("cookie", &cookie)],
        )
        .await;
        assert_refusal_page(&response, 421, "host name the attach proxy does not serve");
    }
    // Also refused before a code is looked at, so a rebinding page cannot burn or use codes.
    let url = rig.proxy.mint_code();
    let response = raw_get(rig.proxy_addr(), path_of(&url), &[("host", &rebound)]).await;
    assert_eq!(response.status, 421);
    assert_eq!(
        raw_get(rig.proxy_addr(), path_of(&url), &[]).await.status,
        303
    );

    // Control: the two spellings of the proxy's own host are accepted.
    let localhost = format!("localhost:{port}");
    let ok = raw_get(
        rig.proxy_addr(),
        "/api/health",
        &[("host", &localhost), ("cookie", &cookie)],
    )
    .await;
    assert_eq!(ok.status, 200);
}

#[tokio::test]
async fn cross_site_or_missing_origin_on_post_is_refused() {
    let rig = Rig::start().await;
    let cookie = rig.session_cookie().await;
    let addr = rig.proxy_addr();
    for origin in [Some("http://attacker.example"), Some("null"), None] {
        let mut headers = vec![("cookie", cookie.as_str())];
        if let Some(origin) = origin {
            headers.push(("origin", origin));
        }
        let response = raw_request(addr, "POST", "/api/echo", &headers, "payload").await;
        assert_refusal_page(&response, 403, "came from another site");
    }
    // Control: the proxy's own origin is let through.
    let origin = rig.origin();
    let ok = raw_request(
        addr,
        "POST",
        "/api/echo",
        &[("cookie", &cookie), ("origin", &origin)],
        "payload",
    )
    .await;
    assert_eq!(ok.status, 200);
    assert!(ok.body.contains("payload"));
}

#[tokio::test]
async fn cross_site_websocket_upgrade_is_refused() {
    let rig = Rig::start().await;
    let cookie = rig.session_cookie().await;
    for origin in [Some("http://attacker.example"), None] {
        let request = rig.ws_request(&cookie, origin);
        let result = timeout(STEP_TIMEOUT, tokio_tungstenite::connect_async(request))
            .await
            .expect("answer in time");
        match result {
            Err(WsError::Http(response)) => {
                assert_eq!(response.status(), 403);
                let body = response.body().as_deref().unwrap_or_default();
                assert_no_canary(body, "WS refusal body");
            }
            other => panic!(
                "cross-site upgrade was not refused: {:?}",
                other.map(|_| ())
            ),
        }
    }
}

#[tokio::test]
async fn a_stopped_runtime_gives_502_with_a_clear_page() {
    let mut rig = Rig::start().await;
    let client = rig.attached_client().await;
    assert_eq!(send(client.get(rig.url("/api/health"))).await.status(), 200);

    rig.runtime.take().unwrap().shutdown().await;

    for path in ["/", "/api/health"] {
        let response = send(client.get(rig.url(path))).await;
        assert_eq!(response.status(), 502, "{path}");
        assert_eq!(response.headers()["cache-control"], "no-store");
        let page = text(response).await;
        assert!(page.contains("The runtime is not answering"), "{page}");
        assert!(
            !page.contains(&rig.runtime_addr.port().to_string()),
            "502 page names the runtime port"
        );
    }
    // A WebSocket attempt fails the same way instead of hanging.
    let cookie = rig.session_cookie().await;
    let origin = rig.origin();
    let response = raw_get(
        rig.proxy_addr(),
        "/api/ws",
        &[
            ("cookie", &cookie),
            ("origin", &origin),
            ("connection", "Upgrade"),
            ("upgrade", "websocket"),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ],
    )
    .await;
    assert_eq!(response.status, 502);
}

// Issue 12: a local flood of connections cannot make a proxy hold more than its cap (256 by
// default, 8 here); the one over the cap is closed unread and counted, and a slot freed is
// usable again.
#[tokio::test]
async fn connections_over_the_cap_are_closed_unread() {
    let cap = 8;
    let rig = Rig::start_with(AttachOptions {
        max_connections: cap,
        ..AttachOptions::default()
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..cap {
        held.push(
            tokio::net::TcpStream::connect(rig.proxy_addr())
                .await
                .unwrap(),
        );
    }
    // The proxy admits connections in order; once it has counted them all, the next is over.
    let mut over = tokio::net::TcpStream::connect(rig.proxy_addr())
        .await
        .unwrap();
    let mut buf = [0u8; 1];
    let read = timeout(STEP_TIMEOUT, over.read(&mut buf))
        .await
        .expect("closed in time");
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "the connection over the cap is closed: {read:?}"
    );
    assert_eq!(rig.proxy.refused_connections(), 1);

    held.clear();
    // The held connections end as the proxy notices them close; then a new one is served.
    let deadline = std::time::Instant::now() + STEP_TIMEOUT;
    loop {
        let mut stream = tokio::net::TcpStream::connect(rig.proxy_addr())
            .await
            .unwrap();
        let request = format!(
            "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            rig.proxy_addr()
        );
        let _ = stream.write_all(request.as_bytes()).await;
        let mut answer = Vec::new();
        let _ = timeout(STEP_TIMEOUT, stream.read_to_end(&mut answer)).await;
        if answer.starts_with(b"HTTP/1.1 401") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no slot freed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
