//! The happy path: attach, then page, SSE, WebSocket and big bodies through the proxy.

use futures_util::{SinkExt, StreamExt};
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::Message;

use crate::support::*;

#[tokio::test]
async fn following_the_attach_url_lands_on_the_runtime_page() {
    let rig = Rig::start().await;
    let client = cookie_client();
    let url = rig.proxy.mint_code();
    let response = send(client.get(url.as_str())).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.url().as_str(),
        rig.url("/"),
        "the code URL redirects to /"
    );
    let page = text(response).await;
    assert!(page.contains(RUNTIME_NAME));
    assert!(page.contains("new EventSource('/api/events')"));

    // The cookie keeps working for later requests without a new code.
    let info: serde_json::Value =
        serde_json::from_str(&text(send(client.get(rig.url("/api/info"))).await).await).unwrap();
    assert_eq!(info["name"], RUNTIME_NAME);
}

#[tokio::test]
async fn redeeming_sets_a_strict_http_only_cookie_and_no_store_no_referrer() {
    let rig = Rig::start().await;
    let url = rig.proxy.mint_code();
    let response = raw_get(rig.proxy_addr(), path_of(&url), &[]).await;
    assert_eq!(response.status, 303);
    assert_eq!(response.header("location"), Some("/"));
    assert_eq!(response.header("cache-control"), Some("no-store"));
    assert_eq!(response.header("referrer-policy"), Some("no-referrer"));
    let cookie = response.header("set-cookie").unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(attribute), "{cookie} lacks {attribute}");
    }
    let value = cookie.split(';').next().unwrap().split_once('=').unwrap().1;
    assert!(value.len() >= 32, "session id carries at least 128 bits");
}

#[tokio::test]
async fn attach_codes_are_long_random_and_distinct() {
    let rig = Rig::start().await;
    let a = rig.proxy.mint_code();
    let b = rig.proxy.mint_code();
    assert_ne!(a, b);
    let prefix = format!("{}/__attach/", rig.origin());
    let code = a.as_str().strip_prefix(&prefix).expect("URL shape");
    assert!(code.len() >= 32 && code.chars().all(|c| c.is_ascii_hexdigit()));
}

#[tokio::test]
async fn sse_events_arrive_incrementally_through_the_proxy() {
    let rig = Rig::start().await;
    let client = rig.attached_client().await;
    let response = send(client.get(rig.url("/api/events"))).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.bytes_stream();
    let mut seen = String::new();
    // The stream never ends, so seeing two events proves they are forwarded as they come.
    let two_events = async {
        while seen.matches("data: ").count() < 2 {
            let chunk = body
                .next()
                .await
                .expect("stream stays open")
                .expect("chunk");
            assert_no_canary(&chunk, "SSE chunk");
            seen.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    };
    timeout(demo_runtime::TICK_INTERVAL + STEP_TIMEOUT, two_events)
        .await
        .expect("two SSE events within the timeout");
    assert!(
        seen.contains(r#""tick":0"#) && seen.contains(r#""tick":1"#),
        "{seen}"
    );
}

#[tokio::test]
async fn websocket_echo_works_through_the_proxy() {
    let rig = Rig::start().await;
    let cookie = rig.session_cookie().await;
    let request = rig.ws_request(&cookie, Some(&rig.origin()));
    let (mut socket, response) = timeout(STEP_TIMEOUT, tokio_tungstenite::connect_async(request))
        .await
        .expect("handshake in time")
        .expect("upgrade accepted through the proxy");
    for (_, value) in response.headers() {
        assert_no_canary(value.as_bytes(), "101 header");
    }
    for i in 0..20 {
        let message = format!("echo-{i}");
        socket.send(Message::text(message.clone())).await.unwrap();
        let reply = timeout(STEP_TIMEOUT, socket.next())
            .await
            .expect("echo in time")
            .expect("socket open")
            .expect("frame");
        assert_eq!(reply, Message::text(message));
    }
    let big = vec![7u8; 300_000];
    socket.send(Message::binary(big.clone())).await.unwrap();
    let reply = timeout(STEP_TIMEOUT, socket.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(reply, Message::binary(big));
}

#[tokio::test]
async fn ten_megabyte_blob_streams_through_the_proxy() {
    let rig = Rig::start().await;
    let client = rig.attached_client().await;
    let bytes: u64 = 10 * 1024 * 1024;
    let response = send(client.get(rig.url(&format!("/api/blob?bytes={bytes}")))).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.content_length(), Some(bytes));
    let mut body = response.bytes_stream();
    let (mut received, mut chunks) = (0u64, 0u32);
    timeout(STEP_TIMEOUT, async {
        while let Some(chunk) = body.next().await {
            let chunk = chunk.expect("chunk");
            assert!(chunk.iter().all(|&b| b == b'x'));
            received += chunk.len() as u64;
            chunks += 1;
        }
    })
    .await
    .expect("blob in time");
    assert_eq!(received, bytes);
    assert!(chunks > 1, "the blob arrives as a stream of chunks");
}

#[tokio::test]
async fn post_bodies_stream_both_ways_without_buffering() {
    let rig = Rig::start().await;
    let client = rig.attached_client().await;
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(1);
    let upload = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::io::Error>(chunk), rx))
    });
    // Round 0's chunk goes in before the request is sent; reqwest waits for response headers.
    tx.send(vec![b'a'; 64 * 1024]).await.unwrap();
    let response = send(
        client
            .post(rig.url("/api/echo"))
            .header("origin", rig.origin())
            .body(reqwest::Body::wrap_stream(upload)),
    )
    .await;
    assert_eq!(response.status(), 200);
    let mut echoed = response.bytes_stream();
    // Ping-pong: each chunk must come back before the next is sent, which is only possible if
    // the proxy streams the upload and the download instead of buffering either.
    for round in 0..8u8 {
        let chunk = vec![b'a' + round; 64 * 1024];
        if round > 0 {
            tx.send(chunk.clone()).await.unwrap();
        }
        let mut got = Vec::new();
        while got.len() < chunk.len() {
            let piece = timeout(STEP_TIMEOUT, echoed.next())
                .await
                .expect("echo arrives before the upload finishes")
                .expect("stream open")
                .expect("chunk");
            got.extend_from_slice(&piece);
        }
        assert_eq!(got, chunk, "round {round}");
    }
    drop(tx);
    let rest = timeout(STEP_TIMEOUT, async {
        let mut n = 0;
        while let Some(piece) = echoed.next().await {
            n += piece.unwrap().len();
        }
        n
    })
    .await
    .expect("echo ends when the upload ends");
    assert_eq!(rest, 0);
}
