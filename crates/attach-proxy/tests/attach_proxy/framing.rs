//! How the proxy reads a runtime's responses and writes requests to it: every way HTTP/1.1 lets
//! a message end (length, chunks, close, no body at all), keep-alive reuse, and a runtime that
//! breaks the rules, through the proxy to a scripted runtime (`scripted`).

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::time::timeout;

use crate::scripted::*;
use crate::support::{CANARY_TOKEN, STEP_TIMEOUT};

#[tokio::test]
async fn length_delimited_responses_reuse_one_runtime_connection() {
    let rig = Rig::start(|seen| Reply::keep(length_response(&format!("page {}", seen.path)))).await;
    let mut browser = rig.browser().await;
    for i in 0..5 {
        let got = browser.get(&format!("/p{i}")).await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body, format!("page /p{i}").as_bytes());
        assert_eq!(got.header("content-length"), Some("8"));
    }
    assert_eq!(
        rig.runtime.accepted(),
        1,
        "one runtime connection carried all five"
    );
    let seen = rig.runtime.seen();
    assert_eq!(seen.len(), 5);
    assert!(seen.iter().all(|s| s.connection == 1));
}

#[tokio::test]
async fn chunked_responses_with_extensions_and_trailers_arrive_whole_and_reuse_the_connection() {
    let rig = Rig::start(|_| {
        Reply::keep(
            &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-sum\r\n\r\n\
               5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nx-sum: 11\r\n\r\n"[..],
        )
    })
    .await;
    let mut browser = rig.browser().await;
    for _ in 0..3 {
        let got = browser.get("/").await;
        assert_eq!(got.status, 200);
        assert!(got.complete);
        assert_eq!(got.body, b"hello world");
        assert!(!got.has("trailer"), "hop-by-hop Trailer dropped: {got:?}");
    }
    assert_eq!(rig.runtime.accepted(), 1);
}

#[tokio::test]
async fn a_chunked_response_split_across_writes_still_ends_and_is_reused() {
    // The last chunk arrives in a write of its own, after the data: the body ends only when the
    // proxy reads it, and the next request must still go on the same connection.
    let (runtime, accepted) = hand_written_runtime(|mut stream| async move {
        let mut buffer = Vec::new();
        while let Some((_, length)) = read_head(&mut stream, &mut buffer).await {
            buffer.drain(..length);
            let parts: [&[u8]; 3] = [
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
                b"4\r\nabcd\r\n",
                b"0\r\n\r\n",
            ];
            for part in parts {
                stream.write_all(part).await.unwrap();
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let front = Front::new(runtime).await;
    let mut browser = front.browser().await;
    for _ in 0..3 {
        let got = browser.get("/").await;
        assert!(got.complete);
        assert_eq!(got.body, b"abcd");
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_close_delimited_response_is_passed_on_whole_and_the_next_request_reconnects() {
    let rig = Rig::start(|seen| {
        Reply::then_close(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil close {}",
            seen.path
        ))
    })
    .await;
    let mut browser = rig.browser().await;
    let first = browser.get("/a").await;
    assert_eq!(first.status, 200);
    assert!(
        first.complete,
        "re-framed for the browser, which sees its end: {first:?}"
    );
    assert_eq!(first.body, b"until close /a");
    let second = browser.get("/b").await;
    assert_eq!(second.body, b"until close /b");
    assert_eq!(rig.runtime.accepted(), 2);
}

#[tokio::test]
async fn connection_close_from_the_runtime_is_honoured_and_not_passed_on() {
    let rig = Rig::start(|_| {
        Reply::then_close(
            &b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"[..],
        )
    })
    .await;
    let mut browser = rig.browser().await;
    for _ in 0..3 {
        let got = browser.get("/").await;
        assert_eq!(got.body, b"ok");
        assert!(
            !got.has("connection"),
            "the runtime's Connection is its own hop: {got:?}"
        );
    }
    assert_eq!(rig.runtime.accepted(), 3);
}

#[tokio::test]
async fn an_idle_connection_the_runtime_closed_is_replaced_without_an_error() {
    // The runtime closes each connection right after answering, without saying so: the next
    // request finds it closed (or writes into it as it closes) and must get a fresh one.
    let rig = Rig::start(|_| Reply::then_close(length_response("fine"))).await;
    let mut browser = rig.browser().await;
    for _ in 0..4 {
        let got = browser.get("/").await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body, b"fine");
        // Give the FIN time to arrive half of the time, so both ways of finding out are used.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(rig.runtime.accepted(), 4);
}

#[tokio::test]
async fn a_request_written_into_a_closing_connection_is_sent_again_if_it_is_safe() {
    // The runtime reads the second request on a connection and closes without answering, as a
    // server whose keep-alive timer fired just then does. A GET is sent again on a fresh
    // connection; a POST is not (it may have been acted on) and gets the proxy's 502.
    let (runtime, accepted) = hand_written_runtime(|mut stream| async move {
        let mut buffer = Vec::new();
        let Some((_, length)) = read_head(&mut stream, &mut buffer).await else {
            return;
        };
        buffer.drain(..length);
        stream.write_all(&length_response("answer")).await.unwrap();
        // Waits for the next request, then closes without a word.
        let _ = read_head(&mut stream, &mut buffer).await;
    });
    let front = Front::new(runtime).await;
    let mut browser = front.browser().await;
    assert_eq!(browser.get("/first").await.body, b"answer");
    let retried = browser.get("/second").await;
    assert_eq!(retried.status, 200, "a GET is sent again: {retried:?}");
    assert_eq!(retried.body, b"answer");
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    let posted = browser
        .send("POST", "/third", &[("content-length", "4")], b"data")
        .await;
    assert_eq!(posted.status, 502, "a POST is not sent twice: {posted:?}");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        2,
        "no second connection for the POST"
    );
}

#[tokio::test]
async fn conflicting_content_lengths_get_a_502_and_the_connection_is_dropped() {
    let rig = Rig::start(|seen| {
        if seen.path == "/conflict" {
            Reply::keep(
                &b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!"[..],
            )
        } else {
            Reply::keep(length_response("next"))
        }
    })
    .await;
    let mut browser = rig.browser().await;
    let got = browser.get("/conflict").await;
    assert_eq!(got.status, 502, "{got:?}");
    assert!(!String::from_utf8_lossy(&got.body).contains("hello"));
    let next = browser.get("/next").await;
    assert_eq!(next.body, b"next");
    assert_eq!(
        rig.runtime.accepted(),
        2,
        "the confused connection was not used again"
    );
}

#[tokio::test]
async fn agreeing_repeated_content_lengths_are_sent_on_as_one() {
    let rig = Rig::start(|_| {
        Reply::keep(&b"HTTP/1.1 200 OK\r\ncontent-length: 2, 2\r\ncontent-length: 2\r\n\r\nok"[..])
    })
    .await;
    let mut browser = rig.browser().await;
    let got = browser.get("/").await;
    assert_eq!(got.body, b"ok");
    let lengths: Vec<_> = got
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .collect();
    assert_eq!(lengths.len(), 1, "{got:?}");
    assert_eq!(lengths[0].1, "2");
}

#[tokio::test]
async fn transfer_encoding_beside_a_length_is_read_as_chunked_and_the_connection_is_not_reused() {
    let rig = Rig::start(|_| {
        Reply::keep(
            &b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"[..],
        )
    })
    .await;
    let mut browser = rig.browser().await;
    for _ in 0..2 {
        let got = browser.get("/").await;
        assert!(got.complete);
        assert_eq!(got.body, b"abc");
        assert_ne!(got.header("content-length"), Some("100"));
    }
    assert_eq!(rig.runtime.accepted(), 2);
}

#[tokio::test]
async fn a_body_cut_short_by_the_runtime_is_cut_short_for_the_browser() {
    let rig = Rig::start(|_| {
        Reply::then_close(&b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly ten.."[..])
    })
    .await;
    rig.browser().await.get_cut_off("/").await;
}

#[tokio::test]
async fn a_bad_chunk_cuts_the_response_off() {
    for broken in [
        &b"4\r\nabcd\r\nzz\r\n"[..],        // a size that is not hex
        &b"4\r\nabcdefgh\r\n0\r\n\r\n"[..], // more data than the size said
    ] {
        let reply = [
            &b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"[..],
            broken,
        ]
        .concat();
        let rig = Rig::start(move |_| Reply::keep(reply.clone())).await;
        rig.browser().await.get_cut_off("/").await;
    }
}

#[tokio::test]
async fn informational_responses_before_the_final_one_are_skipped() {
    let rig = Rig::start(|_| {
        Reply::keep(
            &b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n\
               HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nfinal"[..],
        )
    })
    .await;
    let mut browser = rig.browser().await;
    for _ in 0..2 {
        let got = browser.get("/").await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body, b"final");
    }
    assert_eq!(rig.runtime.accepted(), 1);
}

#[tokio::test]
async fn an_unasked_protocol_switch_is_refused() {
    let rig = Rig::start(|_| {
        Reply::keep(&b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n"[..])
    })
    .await;
    let mut browser = rig.browser().await;
    assert_eq!(browser.get("/").await.status, 502);
}

#[tokio::test]
async fn bodiless_responses_keep_their_headers_and_the_connection() {
    let rig = Rig::start(|seen| match seen.path.as_str() {
        "/head" => Reply::keep(&b"HTTP/1.1 200 OK\r\ncontent-length: 1234\r\n\r\n"[..]),
        "/204" => Reply::keep(&b"HTTP/1.1 204 No Content\r\n\r\n"[..]),
        "/304" => Reply::keep(
            &b"HTTP/1.1 304 Not Modified\r\netag: \"v1\"\r\ncontent-length: 99\r\n\r\n"[..],
        ),
        _ => Reply::keep(length_response("after")),
    })
    .await;
    let mut browser = rig.browser().await;
    let head = browser.send("HEAD", "/head", &[], b"").await;
    assert_eq!(head.status, 200);
    assert_eq!(
        head.header("content-length"),
        Some("1234"),
        "a HEAD answer's length is the GET's"
    );
    assert_eq!(browser.get("/after").await.body, b"after");
    assert_eq!(browser.get("/204").await.status, 204);
    assert_eq!(browser.get("/after").await.body, b"after");
    let not_modified = browser.get("/304").await;
    assert_eq!(not_modified.status, 304);
    assert_eq!(not_modified.header("etag"), Some("\"v1\""));
    assert_eq!(browser.get("/after").await.body, b"after");
    assert_eq!(rig.runtime.accepted(), 1);
}

#[tokio::test]
async fn an_oversized_or_malformed_head_gets_a_502() {
    let huge = format!(
        "HTTP/1.1 200 OK\r\nx-big: {}\r\ncontent-length: 0\r\n\r\n",
        "a".repeat(300 * 1024)
    );
    let many = format!(
        "HTTP/1.1 200 OK\r\n{}content-length: 0\r\n\r\n",
        (0..150)
            .map(|i| format!("x-{i}: 1\r\n"))
            .collect::<String>()
    );
    for reply in [
        huge.into_bytes(),
        many.into_bytes(),
        b"HTTP/1.1 abc OK\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\nbad header\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n".to_vec(),
        b"HTTP/1.1 200 OK\r\ncontent-length: 1e3\r\n\r\n".to_vec(),
    ] {
        let rig = Rig::start(move |_| Reply::keep(reply.clone())).await;
        let mut browser = rig.browser().await;
        let got = browser.get("/").await;
        assert_eq!(
            got.status,
            502,
            "{} header fields passed on",
            got.headers.len()
        );
    }
}

#[tokio::test]
async fn request_bodies_reach_the_runtime_as_sent_with_the_proxys_framing() {
    let rig =
        Rig::start(|seen| Reply::keep(length_response(&format!("got {}", seen.body.len())))).await;
    let mut browser = rig.browser().await;
    let posted = browser
        .send(
            "POST",
            "/length",
            &[("content-length", "11")],
            b"hello world",
        )
        .await;
    assert_eq!(posted.body, b"got 11");
    let chunked = browser
        .send(
            "POST",
            "/chunked",
            &[("transfer-encoding", "chunked")],
            b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
        )
        .await;
    assert_eq!(chunked.body, b"got 11");
    let empty = browser
        .send("POST", "/empty", &[("content-length", "0")], b"")
        .await;
    assert_eq!(empty.body, b"got 0");
    let seen = rig.runtime.seen();
    let by_path = |path: &str| seen.iter().find(|s| s.path == path).unwrap().clone();
    let length = by_path("/length");
    assert_eq!(length.body, b"hello world");
    assert_eq!(length.header("content-length"), Some("11"));
    assert_eq!(length.header("transfer-encoding"), None);
    let chunked = by_path("/chunked");
    assert_eq!(chunked.body, b"hello world");
    assert_eq!(chunked.header("transfer-encoding"), Some("chunked"));
    assert_eq!(chunked.header("content-length"), None);
    let empty = by_path("/empty");
    assert_eq!(empty.header("content-length"), Some("0"));
    for request in &seen {
        assert_eq!(request.method, "POST");
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {CANARY_TOKEN}").as_str())
        );
        assert_eq!(
            request.header("cookie"),
            None,
            "the session cookie is the proxy's"
        );
        assert_eq!(
            request
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("host"))
                .count(),
            1
        );
    }
    assert_eq!(rig.runtime.accepted(), 1);
}

#[tokio::test]
async fn a_large_upload_streams_and_an_early_answer_is_passed_on() {
    // A 4 MB upload: the runtime reads all of it. Then one it refuses before reading (413, then
    // a lingering close, as servers close): the browser gets the 413 rather than a stalled upload
    // or a 502.
    let rig = Rig::start(|seen| {
        if seen.path == "/refuse" {
            Reply {
                bytes: b"HTTP/1.1 413 Payload Too Large\r\nconnection: close\r\ncontent-length: 8\r\n\r\ntoo big!"
                    .to_vec(),
                close: true,
                before_body: true,
            }
        } else {
            Reply::keep(length_response(&format!("got {}", seen.body.len())))
        }
    })
    .await;
    let mut browser = rig.browser().await;
    let big = vec![b'x'; 4 << 20];
    let length = big.len().to_string();
    let got = browser
        .send("PUT", "/accept", &[("content-length", &length)], &big)
        .await;
    assert_eq!(got.body, format!("got {}", 4 << 20).as_bytes());
    assert_eq!(rig.runtime.seen()[0].body, big);

    let mut browser = rig.browser().await;
    let head = format!(
        "PUT /refuse HTTP/1.1\r\nHost: {host}\r\nOrigin: http://{host}\r\nCookie: {}\r\n\
         content-length: {length}\r\n\r\n",
        browser.cookie,
        host = browser.host,
    );
    browser.stream.write_all(head.as_bytes()).await.unwrap();
    // Only the head and a little of the body: the answer must come without the rest.
    browser.stream.write_all(&big[..64 * 1024]).await.unwrap();
    let refused = timeout(STEP_TIMEOUT, browser.read_response(false))
        .await
        .expect("an answer in time")
        .expect("an answer before the upload ends");
    assert_eq!(refused.status, 413, "{refused:?}");
    assert_eq!(refused.body, b"too big!");
}

#[tokio::test]
async fn response_hop_by_hop_headers_and_session_cookies_are_not_passed_on() {
    let rig = Rig::start(|_| {
        Reply::keep(
            &b"HTTP/1.1 200 OK\r\nconnection: x-private\r\nx-private: 1\r\nkeep-alive: timeout=5\r\n\
               set-cookie: sc_attach_0123=planted; Path=/\r\nset-cookie: theme=dark\r\n\
               x-kept: yes\r\ncontent-length: 2\r\n\r\nok"[..],
        )
    })
    .await;
    let mut browser = rig.browser().await;
    let got = browser.get("/").await;
    assert_eq!(got.body, b"ok");
    for dropped in ["x-private", "keep-alive"] {
        assert!(!got.has(dropped), "{dropped} passed on: {got:?}");
    }
    let cookies: Vec<_> = got
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(cookies, ["theme=dark"]);
    assert_eq!(got.header("x-kept"), Some("yes"));
}
