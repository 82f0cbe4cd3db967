//! The demo page and its `/api` routes: bearer authentication, the page, info and health, the
//! SSE ticks, the WebSocket echo, blob and echo streaming, and clean shutdown.

use demo_runtime::DemoConfig;
use futures_util::{SinkExt, StreamExt};
use live_runtime::Sensitive;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

use crate::support::{client, get_authed, start, STEP_TIMEOUT, TOKEN};

#[tokio::test]
async fn every_route_refuses_a_missing_or_wrong_token_without_echoing_it() {
    let (_server, base) = start().await;
    for path in [
        "/",
        "/api/info",
        "/api/health",
        "/api/events",
        "/api/ws",
        "/api/headers",
    ] {
        for auth in [None, Some("Bearer wrong-token-value"), Some("Basic abc")] {
            let mut request = client().get(format!("{base}{path}"));
            if let Some(auth) = auth {
                request = request.header("authorization", auth);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401, "{path} with {auth:?}");
            assert_eq!(response.headers()["www-authenticate"], "Bearer");
            let body = response.text().await.unwrap();
            assert!(!body.contains("wrong-token-value"), "401 body echoes input");
            assert!(!body.contains(TOKEN));
        }
    }
}

#[tokio::test]
async fn two_authorization_headers_are_refused_even_if_one_matches() {
    let (_server, base) = start().await;
    let response = client()
        .get(format!("{base}/api/health"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("authorization", "Bearer other")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
}

#[tokio::test]
async fn page_info_and_health_answer_with_the_token_and_never_contain_it() {
    let (_server, base) = start().await;

    let page = get_authed(&base, "/").await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("demo-alpha"));
    assert!(html.contains("new EventSource('/api/events')"));
    assert!(!html.contains(TOKEN));
    assert!(
        !html.contains("http://"),
        "page must use relative URLs only"
    );

    let info: serde_json::Value = get_authed(&base, "/api/info").await.json().await.unwrap();
    assert_eq!(info["name"], "demo-alpha");
    assert_eq!(info["pid"], std::process::id());
    assert!(info["startedAt"].as_str().unwrap().contains('T'));
    assert!(info["uptimeSeconds"].is_u64());

    let health = get_authed(&base, "/api/health").await;
    assert_eq!(health.status(), 200);
    assert_eq!(health.text().await.unwrap(), r#"{"ok":true}"#);
}

#[tokio::test]
async fn events_start_with_tick_zero_immediately_then_count_up() {
    let (_server, base) = start().await;
    let response = get_authed(&base, "/api/events").await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.bytes_stream();
    let mut text = String::new();
    let first_two = async {
        while text.matches("data: ").count() < 2 {
            let chunk = body.next().await.expect("stream open").expect("chunk");
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    };
    // Tick 0 is immediate and tick 1 follows after one TICK_INTERVAL.
    timeout(demo_runtime::TICK_INTERVAL + STEP_TIMEOUT, first_two)
        .await
        .expect("two ticks arrive");
    let ticks: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert_eq!(ticks[0]["tick"], 0);
    assert_eq!(ticks[1]["tick"], 1);
    assert!(ticks[0]["at"].as_str().unwrap().contains('T'));
}

#[tokio::test]
async fn websocket_echoes_text_and_binary() {
    let (server, _base) = start().await;
    let mut request = format!("ws://{}/api/ws", server.local_addr().expose())
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
    let (mut socket, _) = timeout(STEP_TIMEOUT, tokio_tungstenite::connect_async(request))
        .await
        .unwrap()
        .expect("upgrade accepted");
    socket.send(Message::text("ping-1")).await.unwrap();
    let reply = timeout(STEP_TIMEOUT, socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(reply, Message::text("ping-1"));
    socket.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
    let reply = timeout(STEP_TIMEOUT, socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(reply, Message::binary(vec![1u8, 2, 3]));
}

#[tokio::test]
async fn blob_streams_exactly_the_requested_bytes() {
    let (_server, base) = start().await;
    let bytes = 10 * 1024 * 1024 + 7;
    let response = get_authed(&base, &format!("/api/blob?bytes={bytes}")).await;
    assert_eq!(response.content_length(), Some(bytes));
    let mut body = response.bytes_stream();
    let mut received = 0u64;
    let mut chunks = 0;
    timeout(STEP_TIMEOUT, async {
        while let Some(chunk) = body.next().await {
            let chunk = chunk.unwrap();
            assert!(chunk.iter().all(|&b| b == b'x'));
            received += chunk.len() as u64;
            chunks += 1;
        }
    })
    .await
    .unwrap();
    assert_eq!(received, bytes);
    assert!(
        chunks > 1,
        "the blob arrives in several chunks, not one buffer"
    );

    let too_big = get_authed(&base, "/api/blob?bytes=99999999999").await;
    assert_eq!(too_big.status(), 400);
}

#[tokio::test]
async fn echo_streams_the_request_body_back() {
    let (_server, base) = start().await;
    let payload: Vec<u8> = (0..3 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        payload.chunks(100_000).map(|c| Ok(c.to_vec())).collect();
    let body = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let response = timeout(
        STEP_TIMEOUT,
        client()
            .post(format!("{base}/api/echo"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/x-test")
            .body(body)
            .send(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-test");
    let echoed = timeout(STEP_TIMEOUT, response.bytes())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(echoed.len(), payload.len());
    assert!(echoed == payload);
}

#[tokio::test]
async fn headers_route_reports_names_only() {
    let (_server, base) = start().await;
    let response = client()
        .get(format!("{base}/api/headers"))
        .bearer_auth(TOKEN)
        .header("cookie", "a=secret-cookie-value; b=2")
        .header("x-custom", "secret-header-value")
        .send()
        .await
        .unwrap();
    let text = response.text().await.unwrap();
    assert!(!text.contains("secret-cookie-value"));
    assert!(!text.contains("secret-header-value"));
    assert!(!text.contains(TOKEN));
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["cookieNames"], serde_json::json!(["a", "b"]));
    assert!(report["names"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("x-custom")));
    assert_eq!(report["authorizationMatched"], true);
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_stops_listening() {
    let (server, base) = start().await;
    let addr = *server.local_addr().expose();
    let mut events = get_authed(&base, "/api/events").await.bytes_stream();
    timeout(STEP_TIMEOUT, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    timeout(STEP_TIMEOUT, server.shutdown())
        .await
        .expect("shutdown completes");

    // The open SSE stream ends instead of hanging forever.
    timeout(STEP_TIMEOUT, async {
        while let Some(Ok(_)) = events.next().await {}
    })
    .await
    .expect("stream ends after shutdown");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn debug_output_redacts_token_and_address() {
    let (server, _base) = start().await;
    let config = DemoConfig::new("x", Sensitive::new(TOKEN.to_owned()));
    let printed = format!("{config:?} {server:?}");
    assert!(!printed.contains(TOKEN));
    assert!(!printed.contains(&server.local_addr().expose().port().to_string()));
}
