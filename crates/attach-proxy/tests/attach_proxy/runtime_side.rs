//! Issue 29 item 6 (and the header side of item 7), through the real proxy to a scripted
//! runtime: what a runtime's answers may not do (reveal its address or token to the browser,
//! hold a request forever, frame a body the browser would misread), and what the proxy does
//! not pass to a runtime (a foreign `Origin`, `CONNECT`, `TRACE`, a service worker's script).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use attach_proxy::AttachOptions;
use tokio::io::AsyncWriteExt;

use crate::scripted::*;
use crate::support::{path_of, raw_get, CANARY_TOKEN};

/// A short head deadline, so the tests that wait for it take well under a second each.
const SHORT_HEAD_DEADLINE: Duration = Duration::from_millis(400);

fn short_deadline() -> AttachOptions {
    AttachOptions {
        response_head_timeout: SHORT_HEAD_DEADLINE,
        ..AttachOptions::default()
    }
}

#[tokio::test]
async fn issue_29_redirects_to_the_runtimes_own_address_point_back_at_the_proxy() {
    // As a runtime that builds absolute URLs from the `Host` it is sent (its own address) does.
    let rig = Rig::start(|seen| {
        let own = seen.header("host").unwrap().to_owned();
        let port = own.rsplit(':').next().unwrap();
        Reply::keep(format!(
            "HTTP/1.1 302 Found\r\nlocation: http://{own}/next?a=1\r\n\
             content-location: HTTP://localhost:{port}/page\r\n\
             refresh: 0; url='http://{own}/later'\r\nlink: </other>\r\ncontent-length: 0\r\n\r\n"
        ))
    })
    .await;
    let mut browser = rig.browser().await;
    let got = browser.get("/").await;
    let proxy = &browser.host;
    assert_eq!(got.status, 302);
    assert_eq!(
        got.header("location"),
        Some(format!("http://{proxy}/next?a=1").as_str())
    );
    assert_eq!(
        got.header("content-location"),
        Some(format!("http://{proxy}/page").as_str())
    );
    assert_eq!(
        got.header("refresh"),
        Some(format!("0; url=http://{proxy}/later").as_str())
    );
    assert_eq!(got.header("link"), Some("</other>"), "other fields pass");
    let runtime = rig.runtime.addr.to_string();
    for (name, value) in &got.headers {
        assert!(
            !value.contains(&runtime),
            "{name}: {value} names the runtime"
        );
    }
}

#[tokio::test]
async fn issue_29_response_fields_carrying_the_runtimes_token_never_reach_the_browser() {
    // A runtime that echoes what it was sent (its token among it) into its response headers.
    let rig = Rig::start(|seen| {
        let authorization = seen.header("authorization").unwrap_or_default().to_owned();
        let token = authorization.strip_prefix("Bearer ").unwrap_or_default();
        Reply::keep(format!(
            "HTTP/1.1 302 Found\r\nx-echo: {authorization}\r\nlocation: /next?token={token}\r\n\
             x-fine: yes\r\ncontent-length: 0\r\n\r\n"
        ))
    })
    .await;
    let mut browser = rig.browser().await;
    // `send` also fails the test if the token shows up anywhere in the response.
    let got = browser.get("/").await;
    assert_eq!(got.status, 302);
    assert!(!got.has("x-echo"), "{got:?}");
    assert!(!got.has("location"), "{got:?}");
    assert_eq!(got.header("x-fine"), Some("yes"));
    assert_eq!(
        rig.runtime.seen()[0].header("authorization"),
        Some(format!("Bearer {CANARY_TOKEN}").as_str()),
        "the runtime did get its token"
    );
}

#[tokio::test]
async fn issue_29_a_runtime_that_never_answers_gets_a_504_at_the_head_deadline() {
    // It reads the request and then sends nothing at all.
    let rig = Rig::start_with(short_deadline(), |_| Reply::keep(Vec::new())).await;
    let mut browser = rig.browser().await;
    let started = Instant::now();
    let got = browser.get("/stuck").await;
    let waited = started.elapsed();
    assert_eq!(got.status, 504, "{got:?}");
    assert!(waited >= SHORT_HEAD_DEADLINE, "answered after {waited:?}");
    // The browser connection stays usable, on a fresh runtime connection.
    let again = browser.get("/stuck").await;
    assert_eq!(again.status, 504);
    assert_eq!(rig.runtime.accepted(), 2, "the stuck connection was closed");
}

#[tokio::test]
async fn issue_29_a_stream_whose_head_came_in_time_runs_past_the_head_deadline() {
    // SSE: the head at once, then events much later than the head deadline.
    let (runtime, _) = hand_written_runtime(|mut stream| async move {
        let mut buffer = Vec::new();
        if read_head(&mut stream, &mut buffer).await.is_none() {
            return;
        }
        let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                     transfer-encoding: chunked\r\n\r\n";
        stream.write_all(head).await.unwrap();
        stream.write_all(b"9\r\ndata: 1\n\n\r\n").await.unwrap();
        tokio::time::sleep(SHORT_HEAD_DEADLINE * 3).await;
        stream
            .write_all(b"9\r\ndata: 2\n\n\r\n0\r\n\r\n")
            .await
            .unwrap();
    });
    let front = Front::with_options(runtime, short_deadline()).await;
    let mut browser = front.browser().await;
    let started = Instant::now();
    let got = browser.get("/events").await;
    assert!(started.elapsed() >= SHORT_HEAD_DEADLINE * 3);
    assert!(got.complete, "{got:?}");
    assert_eq!(got.body, b"data: 1\n\ndata: 2\n\n");
}

#[tokio::test]
async fn issue_29_endless_informational_responses_get_a_502_long_before_the_head_deadline() {
    // Default head deadline (a minute): only the cap on 1xx responses can end this in time.
    let flood = "HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n".repeat(200);
    let rig = Rig::start(move |_| Reply::keep(flood.clone())).await;
    let mut browser = rig.browser().await;
    let started = Instant::now();
    let got = browser.get("/").await;
    assert_eq!(got.status, 502, "{got:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn issue_29_connect_and_trace_get_a_405_and_never_reach_the_runtime() {
    let rig = Rig::start(|_| Reply::keep(length_response("runtime"))).await;
    let mut browser = rig.browser().await;
    let authority = browser.host.clone();
    let connect = browser.send("CONNECT", &authority, &[], b"").await;
    assert_eq!(connect.status, 405, "{connect:?}");
    let mut browser = rig.browser().await;
    let trace = browser.send("TRACE", "/", &[], b"").await;
    assert_eq!(trace.status, 405, "{trace:?}");
    assert!(
        !String::from_utf8_lossy(&trace.body).contains("Cookie"),
        "nothing is echoed"
    );
    assert_eq!(rig.runtime.accepted(), 0);
}

#[tokio::test]
async fn issue_29_a_transfer_coding_other_than_exactly_one_chunked_gets_a_502() {
    for coding in [
        "gzip",
        "gzip, chunked",
        "chunked, chunked",
        "identity",
        "chunked\r\ntransfer-encoding: chunked",
    ] {
        let reply = format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: {coding}\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
        );
        let rig = Rig::start(move |_| Reply::keep(reply.clone())).await;
        let mut browser = rig.browser().await;
        let got = browser.get("/").await;
        assert_eq!(got.status, 502, "{coding}: {got:?}");
        assert!(!String::from_utf8_lossy(&got.body).contains("hello"));
    }
}

#[tokio::test]
async fn issue_29_a_chunk_size_line_without_a_hex_digit_is_an_error_not_the_last_chunk() {
    for size_line in ["\r\n", ";ext=1\r\n", " \r\n", "\t;x\r\n"] {
        let reply = format!(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nabcd\r\n{size_line}\r\nmore"
        );
        let rig = Rig::start(move |_| Reply::keep(reply.clone())).await;
        rig.browser().await.get_cut_off("/").await;
    }
}

#[tokio::test]
async fn issue_29_only_the_proxys_own_origin_reaches_the_runtime_as_the_runtimes_own() {
    let rig = Rig::start(|_| Reply::keep(length_response("ok"))).await;
    let mut browser = rig.browser().await;
    let own = format!("http://{}", browser.host);
    // A GET's `Origin` is not checked (no fetch metadata here): a foreign one is dropped.
    browser
        .send("GET", "/foreign", &[("origin", "http://evil.test")], b"")
        .await;
    browser
        .send("GET", "/own", &[("origin", own.as_str())], b"")
        .await;
    let seen = rig.runtime.seen();
    let runtime_origin = format!("http://{}", rig.runtime.addr);
    assert_eq!(seen[0].path, "/foreign");
    assert_eq!(seen[0].header("origin"), None);
    assert_eq!(seen[1].header("origin"), Some(runtime_origin.as_str()));
}

#[tokio::test]
async fn issue_29_a_service_workers_script_is_refused_and_its_scope_header_dropped() {
    let rig = Rig::start(|_| {
        Reply::keep(
            &b"HTTP/1.1 200 OK\r\nservice-worker-allowed: /\r\ncontent-length: 2\r\n\r\nok"[..],
        )
    })
    .await;
    let mut browser = rig.browser().await;
    let script = browser
        .send("GET", "/sw.js", &[("service-worker", "script")], b"")
        .await;
    assert_eq!(script.status, 403, "{script:?}");
    let by_dest = browser
        .send("GET", "/sw.js", &[("sec-fetch-dest", "serviceworker")], b"")
        .await;
    assert_eq!(by_dest.status, 403, "{by_dest:?}");
    assert_eq!(rig.runtime.accepted(), 0, "the script was never fetched");
    let page = browser.get("/page").await;
    assert_eq!(page.body, b"ok");
    assert!(!page.has("service-worker-allowed"), "{page:?}");
}

#[tokio::test]
async fn issue_29_redeeming_a_link_clears_what_an_earlier_runtime_left_on_the_origin() {
    let rig = Rig::start(|_| Reply::keep(length_response("ok"))).await;
    let proxy = proxy_addr(&rig.front.proxy);
    // A browser new to this proxy: the origin may hold another runtime's files and storage.
    let fresh = raw_get(proxy, path_of(&rig.front.proxy.mint_code()), &[]).await;
    assert_eq!(fresh.status, 303);
    assert_eq!(
        fresh.header("clear-site-data"),
        Some("\"cache\", \"storage\", \"executionContexts\"")
    );
    // A browser that holds this proxy's cookie was attached to this runtime: its data stays.
    let again = raw_get(
        proxy,
        path_of(&rig.front.proxy.mint_code()),
        &[("cookie", rig.front.cookie.as_str())],
    )
    .await;
    assert_eq!(again.status, 303);
    assert_eq!(again.header("clear-site-data"), None);
    assert_eq!(rig.runtime.accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn issue_29_an_upload_that_keeps_moving_is_not_cut_off_by_the_head_deadline() {
    // The head deadline counts from when the request last moved: an upload that takes three
    // deadlines to arrive still gets its answer.
    let (runtime, _) = hand_written_runtime(|mut stream| async move {
        let mut buffer = Vec::new();
        let Some((seen, length)) = read_head(&mut stream, &mut buffer).await else {
            return;
        };
        buffer.drain(..length);
        let Some(body) = read_body(&mut stream, &mut buffer, &seen).await else {
            return;
        };
        let answer = length_response(&format!("got {}", body.len()));
        stream.write_all(&answer).await.unwrap();
    });
    let front = Front::with_options(runtime, short_deadline()).await;
    let mut browser = front.browser().await;
    let pieces = 6;
    let head = format!(
        "POST /upload HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nCookie: {}\r\n\
         content-length: {}\r\n\r\n",
        browser.cookie,
        pieces * 4,
        host = browser.host,
    );
    browser.stream.write_all(head.as_bytes()).await.unwrap();
    for _ in 0..pieces {
        tokio::time::sleep(SHORT_HEAD_DEADLINE / 2).await;
        browser.stream.write_all(b"data").await.unwrap();
    }
    let got = tokio::time::timeout(crate::support::STEP_TIMEOUT, browser.read_response(false))
        .await
        .expect("an answer in time")
        .expect("an answer");
    assert_eq!(got.status, 200, "{got:?}");
    assert_eq!(got.body, format!("got {}", pieces * 4).as_bytes());
}

#[tokio::test]
async fn issue_29_a_runtime_that_stops_reading_an_upload_gets_a_504() {
    // It reads the head and then neither reads the body nor answers.
    let (runtime, _) = hand_written_runtime(|mut stream| async move {
        let mut buffer = Vec::new();
        if read_head(&mut stream, &mut buffer).await.is_some() {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    });
    let front = Front::with_options(runtime, short_deadline()).await;
    let browser = front.browser().await;
    let body = vec![b'x'; 32 << 20];
    let head = format!(
        "PUT /upload HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nCookie: {}\r\n\
         content-length: {}\r\n\r\n",
        browser.cookie,
        body.len(),
        host = browser.host,
    );
    let mut stream = browser.stream;
    let (mut reader, mut writer) = stream.split();
    let upload = async {
        let _ = writer.write_all(head.as_bytes()).await;
        let _ = writer.write_all(&body).await;
        // Whatever happens to the upload, only the answer ends this test.
        std::future::pending::<()>().await;
    };
    let answer = async {
        let mut received = Vec::new();
        let mut chunk = [0u8; 4096];
        while !received.windows(4).any(|w| w == b"\r\n\r\n") {
            use tokio::io::AsyncReadExt;
            match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => received.extend_from_slice(&chunk[..read]),
            }
        }
        String::from_utf8_lossy(&received).into_owned()
    };
    let answer = tokio::time::timeout(crate::support::STEP_TIMEOUT, async {
        tokio::select! {
            answer = answer => answer,
            _ = upload => unreachable!(),
        }
    })
    .await
    .expect("an answer in time");
    assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
}
