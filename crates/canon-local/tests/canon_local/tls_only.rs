//! Canon over TLS only (issue 13): no plain http to another machine, no redirect followed, a
//! registration's poll token only ever sent back to the API that issued it, and no plain-http
//! base URL recorded in `agents.json`.
//!
//! The "other" servers here are bare TCP listeners that count every connection: proof that not
//! a single byte (so no poll token) went their way.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use canon_local::client::{CanonClient, RegistrationRequest};
use canon_local::test_server::TestServerConfig;
use canon_local::{
    get_or_create_pending_registration, load_pending_registrations, reject,
    update_pending_registration, AgentProfile, ApprovalError, ApprovalOptions, ApprovalOutcome,
    ClientError, PendingPatch, SecretStore, Sensitive,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{
    approve_alice, fast_options, file_secrets, pending_alice, registration, temp_home, Case,
    TempHome,
};

const POLL_TOKEN: &str = "poll-canary-5b2e71";

/// Bound on any one call; they take milliseconds.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Alice's pending registration and the Canon that will issue it, which keeps it pending.
async fn pending_at_issuer() -> Case {
    pending_alice(
        TestServerConfig {
            pending_polls: 1000,
            ..TestServerConfig::default()
        },
        None,
    )
    .await
}

/// Submits alice's registration to `base_url` and polls it until a short deadline stops the
/// approval midway, as a quit app or a killed CLI would.
async fn poll_until_stopped(t: &TempHome, secrets: &SecretStore, base_url: String) {
    let first = approve_alice(
        t,
        secrets,
        &ApprovalOptions {
            deadline: Duration::from_millis(150),
            ..fast_options(base_url)
        },
    )
    .await
    .outcome
    .unwrap();
    assert!(
        matches!(first, ApprovalOutcome::Expired { .. }),
        "{first:?}"
    );
}

/// Approves alice against a Canon that did not issue her registration: refused as another
/// Canon's, before a single connection to it.
async fn refused_by_another_canon(t: &TempHome, secrets: &SecretStore) -> ApprovalError {
    let other = Witness::start().await;
    let err = approve_alice(t, secrets, &fast_options(other.url()))
        .await
        .outcome
        .unwrap_err();
    assert!(matches!(err, ApprovalError::OtherCanon { .. }), "{err:?}");
    assert_eq!(other.connections(), 0, "the other Canon never heard of it");
    err
}

/// A loopback listener that accepts and counts connections, and answers nothing.
struct Witness {
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl Witness {
    async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let connections = Arc::new(AtomicUsize::new(0));
        let seen = connections.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                seen.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        Self { port, connections }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// A loopback HTTP server that answers every request with `307` to `target` (keeping the path),
/// and remembers the requests it got.
struct Redirector {
    port: u16,
    requests: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Redirector {
    async fn start(target: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (target, seen) = (target.clone(), seen.clone());
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let head = String::from_utf8_lossy(&head).into_owned();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    seen.lock().unwrap().push(head);
                    let answer = format!(
                        "HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}{path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    );
                    let _ = stream.write_all(answer.as_bytes()).await;
                });
            }
        });
        Self { port, requests }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn request_count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

#[test]
fn the_client_refuses_plain_http_to_another_machine() {
    for url in [
        "http://api.canonmsg.com",
        "http://192.0.2.10:8080",
        "ftp://x",
    ] {
        let err = CanonClient::new(url).expect_err(url);
        assert!(
            matches!(err, ClientError::InsecureBaseUrl { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("https"), "{err}");
    }
    assert!(
        CanonClient::new("http://127.0.0.1:9").is_ok(),
        "loopback http stays usable"
    );
    assert!(CanonClient::new("https://api.canonmsg.com").is_ok());
}

#[tokio::test]
async fn approve_refuses_a_plain_http_base_url_from_the_profile_before_any_request() {
    let t = temp_home();
    let (_dir, secrets) = file_secrets();
    // A profile (as the package would have it) whose baseUrl is plain http to another machine.
    let mut profile = AgentProfile::new(
        Sensitive::new("old-key".to_owned()),
        "agent-1",
        "alice",
        "2026-01-01T00:00:00.000Z",
    );
    profile.base_url = Some("http://canon.example.com".into());
    canon_local::upsert_agent_profile(&t.home, "alice", profile).unwrap();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let err = approve_alice(&t, &secrets, &ApprovalOptions::default())
        .await
        .outcome
        .unwrap_err();
    assert!(
        matches!(
            err,
            ApprovalError::Client(ClientError::InsecureBaseUrl { .. })
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("http://canon.example.com"),
        "{err}"
    );
    // Nothing was submitted, so no request id, and no origin recorded.
    let pending = load_pending_registrations(&t.home).unwrap();
    assert!(pending.get("alice").unwrap().request_id.is_none());
    assert!(!t.origins.path().exists());
}

#[tokio::test]
async fn a_redirect_is_an_error_and_the_poll_token_goes_nowhere_else() {
    let elsewhere = Witness::start().await;
    let redirector = Redirector::start(elsewhere.url()).await;
    let client = CanonClient::new(redirector.url()).unwrap();
    let token = Sensitive::new(POLL_TOKEN.to_owned());

    let err = tokio::time::timeout(CALL_TIMEOUT, client.check_status("req-1", Some(&token)))
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Redirected { status: 307, .. }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(message.contains("follows no redirects"), "{message}");
    assert!(!message.contains(POLL_TOKEN), "{message}");
    assert!(!err.is_transient(), "a redirect is not retried");

    let err = tokio::time::timeout(
        CALL_TIMEOUT,
        client.ack_registration_status("req-1", Some(&token)),
    )
    .await
    .unwrap()
    .unwrap_err();
    assert!(matches!(err, ClientError::Redirected { .. }), "{err:?}");
    let err = tokio::time::timeout(CALL_TIMEOUT, client.register(&registration("alice", "l-1")))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, ClientError::Redirected { .. }), "{err:?}");

    assert_eq!(
        redirector.request_count(),
        3,
        "each call reached the redirector once"
    );
    assert_eq!(
        elsewhere.connections(),
        0,
        "the redirect target was never contacted"
    );
}

#[tokio::test]
async fn an_approval_that_meets_a_redirect_stops_without_following_it() {
    let elsewhere = Witness::start().await;
    let redirector = Redirector::start(elsewhere.url()).await;
    let t = temp_home();
    let (_dir, secrets) = file_secrets();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    update_pending_registration(
        &t.home,
        "alice",
        PendingPatch {
            request_id: Some("req-9".into()),
            poll_token: Some(Sensitive::new(POLL_TOKEN.to_owned())),
            client_type: None,
        },
    )
    .unwrap();
    let err = approve_alice(&t, &secrets, &fast_options(redirector.url()))
        .await
        .outcome
        .unwrap_err();
    assert!(
        matches!(err, ApprovalError::Client(ClientError::Redirected { .. })),
        "{err:?}"
    );
    assert_eq!(redirector.request_count(), 1, "one poll, not retried");
    assert_eq!(elsewhere.connections(), 0);
}

#[tokio::test]
async fn a_registration_resumed_against_another_canon_sends_it_nothing() {
    let c = pending_at_issuer().await;
    let (issuer, t, secrets) = (&c.server, &c.t, &c.secrets);
    // Submitted to the issuer, polled a few times, stopped mid-poll (the deadline here; a
    // restart of the real CLI in tests/supercode_tray/cli_approve.rs).
    poll_until_stopped(t, secrets, issuer.base_url()).await;
    assert!(issuer.state().polls > 0, "it was polling when it stopped");
    let entry = load_pending_registrations(&t.home)
        .unwrap()
        .get("alice")
        .cloned()
        .unwrap();
    assert_eq!(
        t.origins
            .base_url_of(&entry.local_registration_id)
            .unwrap()
            .as_deref(),
        Some(issuer.base_url().as_str()),
        "the issuing API is recorded"
    );

    // Resumed with another base URL: refused, and the other server got no connection at all.
    let message = refused_by_another_canon(t, secrets).await.to_string();
    assert!(message.contains(&issuer.base_url()), "{message}");
    assert!(
        message.contains("only sent to the API that issued it"),
        "{message}"
    );

    // Dismissing it forgets the record along with the pending entry.
    reject(&t.home, &t.origins, "alice").unwrap();
    assert_eq!(
        t.origins.base_url_of(&entry.local_registration_id).unwrap(),
        None
    );
}

#[tokio::test]
async fn a_registration_submitted_by_the_package_stays_with_the_first_canon_polled() {
    let c = pending_at_issuer().await;
    let (issuer, t, secrets) = (&c.server, &c.t, &c.secrets);
    // What a runtime does through the package: submit, then save requestId/pollToken. The tray
    // has no record of where it went.
    let client = CanonClient::new(issuer.base_url()).unwrap();
    let entry = get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let submitted = client
        .register(&RegistrationRequest {
            name: "alice".into(),
            description: "from a runtime".into(),
            client_type: None,
            local_registration_id: entry.local_registration_id.clone(),
        })
        .await
        .unwrap();
    update_pending_registration(
        &t.home,
        "alice",
        PendingPatch {
            request_id: Some(submitted.request_id),
            poll_token: submitted.poll_token,
            client_type: None,
        },
    )
    .unwrap();

    // The first approve polls this API and pins it (stopped here by its deadline)...
    poll_until_stopped(t, secrets, issuer.base_url()).await;
    assert_eq!(
        t.origins
            .base_url_of(&entry.local_registration_id)
            .unwrap()
            .as_deref(),
        Some(issuer.base_url().as_str())
    );
    // ...so a later one against another API is refused before it connects.
    refused_by_another_canon(t, secrets).await;
}
