//! Starting, stopping, health checks and redaction.

use std::time::Duration;

use attach_proxy::{check_health, AttachError};
use futures_util::StreamExt;
use live_runtime::Sensitive;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::timeout;

use crate::support::*;

#[tokio::test]
async fn shutdown_stops_accepting_and_ends_open_streams() {
    let rig = Rig::start().await;
    let client = rig.attached_client().await;
    let mut events = send(client.get(rig.url("/api/events")))
        .await
        .bytes_stream();
    timeout(STEP_TIMEOUT, events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let addr = rig.proxy_addr();
    assert!(!rig.proxy.is_closed());

    let Rig { proxy, runtime, .. } = rig;
    timeout(STEP_TIMEOUT, proxy.shutdown())
        .await
        .expect("shutdown completes");

    timeout(STEP_TIMEOUT, async {
        while let Some(Ok(_)) = events.next().await {}
    })
    .await
    .expect("the open SSE stream ends");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
    drop(runtime);
}

// Stopping is graceful: each connection's task hears the stop and closes an idle keep-alive
// connection at once. Only a connection still busy after the grace period is cut off, when the
// proxy gives up waiting (twice the grace period), so a close well before that is the graceful one.
#[tokio::test]
async fn shutdown_closes_an_idle_keep_alive_connection_at_once() {
    let rig = Rig::start().await;
    let addr = rig.proxy_addr();
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    // One request answered (no session: 401) and the connection kept open for the next.
    idle.write_all(format!("GET / HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.starts_with(b"HTTP/1.1 401") || !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = timeout(STEP_TIMEOUT, idle.read(&mut buf))
            .await
            .expect("answered in time")
            .unwrap();
        assert!(n > 0, "closed before answering: {head:?}");
        head.extend_from_slice(&buf[..n]);
    }

    let Rig { proxy, runtime, .. } = rig;
    let stopping = std::time::Instant::now();
    let shutdown = tokio::spawn(proxy.shutdown());
    let mut rest = Vec::new();
    timeout(STEP_TIMEOUT, idle.read_to_end(&mut rest))
        .await
        .expect("closed in time")
        .unwrap();
    let closed_after = stopping.elapsed();
    assert!(
        closed_after < attach_proxy::SHUTDOWN_GRACE,
        "an idle connection is closed when the proxy stops, not cut off later: {closed_after:?}"
    );
    timeout(STEP_TIMEOUT, shutdown).await.unwrap().unwrap();
    drop(runtime);
}

#[tokio::test]
async fn dropping_the_proxy_stops_it() {
    let rig = Rig::start().await;
    let addr = rig.proxy_addr();
    let Rig {
        proxy,
        runtime: _runtime,
        ..
    } = rig;
    drop(proxy);
    // Drop only signals the accept loop; wait (bounded) until the listener is gone.
    timeout(STEP_TIMEOUT, async {
        while tokio::net::TcpStream::connect(addr).await.is_ok() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("listener closes after drop");
}

#[tokio::test]
async fn debug_output_names_neither_code_nor_runtime_address_nor_token() {
    let rig = Rig::start().await;
    let url = rig.proxy.mint_code();
    let code = url.as_str().rsplit('/').next().unwrap().to_owned();
    let printed = format!("{:?} {:?}", rig.proxy, url);
    assert!(!printed.contains(&code), "{printed}");
    assert!(
        !printed.contains(&rig.runtime_addr.port().to_string()),
        "{printed}"
    );
    assert!(!printed.contains(CANARY_TOKEN));
    assert!(
        printed.contains(&rig.origin()),
        "the proxy's own origin is not secret"
    );
}

#[tokio::test]
async fn health_check_passes_for_a_running_runtime_with_its_token() {
    let rig = Rig::start().await;
    // The demo runtime serves from this test process, so this process holds its listener.
    check_health(
        &Sensitive::new(rig.runtime_addr),
        &Sensitive::new(CANARY_TOKEN.to_owned()),
        Some(std::process::id()),
    )
    .await
    .expect("healthy");
}

#[tokio::test]
async fn health_check_reports_a_refused_token() {
    let rig = Rig::start().await;
    let error = check_health(
        &Sensitive::new(rig.runtime_addr),
        &Sensitive::new("not-the-token".to_owned()),
        None,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, AttachError::UpstreamRejectedToken { status: 401 }),
        "{error}"
    );
}

#[tokio::test]
async fn health_check_reports_a_stopped_runtime_without_naming_its_address() {
    let mut rig = Rig::start().await;
    rig.runtime.take().unwrap().shutdown().await;
    let error = check_health(
        &Sensitive::new(rig.runtime_addr),
        &Sensitive::new(CANARY_TOKEN.to_owned()),
        None,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            error,
            AttachError::Listener(runtime_link::ListenerError::NotListening)
        ),
        "{error}"
    );
    let message = format!("{error} {error:?}");
    assert!(
        !message.contains(&rig.runtime_addr.port().to_string()),
        "{message}"
    );
    assert!(
        message.contains("revive"),
        "the message says what to do: {message}"
    );
}

/// A one-connection server that answers every request with `status_line`, or never answers.
async fn canned_server(status_line: Option<&'static str>) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buf = [0u8; 4096];
        let _ = stream.read(&mut buf).await;
        match status_line {
            Some(line) => {
                let response = format!("{line}\r\ncontent-length: 0\r\n\r\n");
                let _ = stream.write_all(response.as_bytes()).await;
            }
            // Hold the connection open without answering until the client gives up.
            None => {
                let _ = stream.read(&mut buf).await;
            }
        }
    });
    addr
}

#[tokio::test]
async fn health_check_reports_a_server_error() {
    let addr = canned_server(Some("HTTP/1.1 500 Internal Server Error")).await;
    let error = check_health(&Sensitive::new(addr), &Sensitive::new("t".to_owned()), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, AttachError::UpstreamUnhealthy { status: 500 }),
        "{error}"
    );
}

#[tokio::test]
async fn health_check_treats_a_404_root_as_healthy() {
    let addr = canned_server(Some("HTTP/1.1 404 Not Found")).await;
    check_health(&Sensitive::new(addr), &Sensitive::new("t".to_owned()), None)
        .await
        .expect("404 is still a live runtime");
}

#[tokio::test]
async fn health_check_gives_up_on_a_hung_runtime() {
    let addr = canned_server(None).await;
    let started = std::time::Instant::now();
    let error = timeout(
        attach_proxy::HEALTH_TIMEOUT + STEP_TIMEOUT,
        check_health(&Sensitive::new(addr), &Sensitive::new("t".to_owned()), None),
    )
    .await
    .expect("check_health bounds itself")
    .unwrap_err();
    assert!(matches!(error, AttachError::HealthTimeout), "{error}");
    assert!(started.elapsed() >= attach_proxy::HEALTH_TIMEOUT - Duration::from_millis(50));
}
