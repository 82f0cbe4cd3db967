//! What the runtime receives: the proxy's token only, no proxy cookies, no hop-by-hop headers.

use crate::support::*;

#[tokio::test]
async fn browser_authorization_and_attach_cookies_are_not_forwarded() {
    let rig = Rig::start().await;
    let cookie = rig.session_cookie().await;
    let cookies = format!("theme=dark; {cookie}; sc_attach_0123456789abcdef=from-another-proxy");
    let response = raw_get(
        rig.proxy_addr(),
        "/api/headers",
        &[
            ("cookie", &cookies),
            // A browser-supplied Authorization must be replaced, not forwarded alongside ours
            // (the runtime refuses requests with two Authorization headers, and a wrong one).
            ("authorization", "Bearer browser-supplied-value"),
            ("proxy-authorization", "Basic Zm9vOmJhcg=="),
            ("connection", "keep-alive, x-hop-only"),
            ("x-hop-only", "1"),
            ("x-end-to-end", "1"),
        ],
    )
    .await;
    assert_eq!(response.status, 200, "{response:?}");
    let body = response.body.trim();
    // The response may be chunked; the JSON object is the line that starts with '{'.
    let json = body
        .lines()
        .find(|line| line.starts_with('{'))
        .expect("JSON body");
    let report: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(report["authorizationMatched"], true);
    assert_eq!(report["cookieNames"], serde_json::json!(["theme"]));
    let names: Vec<&str> = report["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(names.iter().filter(|n| **n == "authorization").count(), 1);
    for absent in ["proxy-authorization", "x-hop-only", "keep-alive"] {
        assert!(
            !names.contains(&absent),
            "{absent} was forwarded: {names:?}"
        );
    }
    assert!(names.contains(&"x-end-to-end"));
    assert!(names.contains(&"host"));
}

#[tokio::test]
async fn a_request_with_only_the_attach_cookie_reaches_the_runtime_without_a_cookie_header() {
    let rig = Rig::start().await;
    let client = rig.attached_client().await;
    let report: serde_json::Value =
        serde_json::from_str(&text(send(client.get(rig.url("/api/headers"))).await).await).unwrap();
    assert_eq!(report["cookieNames"], serde_json::json!([]));
    assert!(!report["names"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("cookie")));
}

#[tokio::test]
async fn keep_alive_connections_serve_many_requests() {
    let rig = Rig::start().await;
    let client = rig.attached_client().await;
    // reqwest reuses one pooled connection for sequential requests; each must succeed.
    for _ in 0..50 {
        let response = send(client.get(rig.url("/api/health"))).await;
        assert_eq!(response.status(), 200);
        assert_eq!(text(response).await, r#"{"ok":true}"#);
    }
}

#[tokio::test]
async fn a_browser_connection_reconnects_after_the_runtime_restarts() {
    let mut rig = Rig::start().await;
    let client = rig.attached_client().await;
    assert_eq!(send(client.get(rig.url("/api/health"))).await.status(), 200);

    // The runtime goes away (closing the proxy's keep-alive connection to it) and comes back on
    // the same address, as a restarted runtime would.
    rig.runtime.take().unwrap().shutdown().await;
    let mut config = demo_runtime::DemoConfig::new(
        "restarted",
        live_runtime::Sensitive::new(CANARY_TOKEN.to_owned()),
    );
    config.bind = rig.runtime_addr;
    rig.runtime = Some(
        demo_runtime::serve(config)
            .await
            .expect("rebinds the same port"),
    );

    // Same client, same pooled browser connection: the proxy notices the closed runtime
    // connection and opens a new one instead of failing.
    let info: serde_json::Value =
        serde_json::from_str(&text(send(client.get(rig.url("/api/info"))).await).await).unwrap();
    assert_eq!(info["name"], "restarted");
}
