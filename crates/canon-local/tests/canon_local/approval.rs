//! The approval workflow and the registration client against the in-process fake Canon.

use std::time::Duration;

use canon_local::client::{CanonClient, RegistrationRequest};
use canon_local::test_server::{TestServer, TestServerConfig};
use canon_local::{
    api_key_account, approve, load_pending_registrations, load_profiles, reject, AgentProfile,
    ApprovalError, ApprovalOptions, ApprovalOutcome, ApprovalState, ClientError, RegistrationPhase,
    Sensitive,
};
use serde_json::json;

use crate::support::{
    approve_alice, fast_options, file_secrets, node_ok, pending_alice, registration, temp_home,
    Case, Run, TempHome,
};

const CANARY_KEY: &str = "sk-canary-7d1f0c2b9e";

fn config() -> TestServerConfig {
    TestServerConfig {
        api_key: CANARY_KEY.into(),
        ..TestServerConfig::default()
    }
}

/// A fake Canon with `config`, alice's pending registration, and one approval run of it.
async fn approve_once(config: TestServerConfig) -> (Case, Run) {
    let c = pending_alice(config, None).await;
    let r = c.approve().await;
    (c, r)
}

fn alice_profile(t: &TempHome) -> AgentProfile {
    load_profiles(&t.home)
        .unwrap()
        .get("alice")
        .cloned()
        .unwrap()
}

fn alice_pending(t: &TempHome) -> bool {
    load_pending_registrations(&t.home)
        .unwrap()
        .get("alice")
        .is_some()
}

/// Every Debug/Display rendering the caller can see, to scan for secrets.
fn rendered(t: &TempHome, run: &Run) -> String {
    let mut out = format!("{:?} {:?}", run.states, run.outcome);
    if let Err(e) = &run.outcome {
        out.push_str(&e.to_string());
    }
    if let Ok(p) = load_profiles(&t.home) {
        out.push_str(&format!("{p:?}"));
    }
    if let Ok(p) = load_pending_registrations(&t.home) {
        out.push_str(&format!("{p:?}"));
    }
    out
}

fn poll_token_on_disk(t: &TempHome) -> String {
    let text = std::fs::read_to_string(t.home.pending_registrations_path()).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["alice"]["pollToken"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn approval_after_several_pending_polls_stores_the_key_everywhere() {
    let c = pending_alice(
        TestServerConfig {
            pending_polls: 3,
            ..config()
        },
        Some("codex"),
    )
    .await;
    let r = c.approve().await;
    assert_eq!(
        r.outcome.as_ref().unwrap(),
        &ApprovalOutcome::Approved {
            agent_id: "agent-test-1".into(),
            agent_name: "alice".into()
        }
    );
    assert!(
        matches!(r.states[0], ApprovalState::Submitted { .. }),
        "{:?}",
        r.states
    );
    let waiting = r
        .states
        .iter()
        .filter(|s| {
            **s == ApprovalState::Waiting {
                phase: RegistrationPhase::Pending,
            }
        })
        .count();
    assert_eq!(waiting, 3);

    let stored = c.secrets.get(&api_key_account("alice")).unwrap().unwrap();
    assert_eq!(stored.expose(), CANARY_KEY);
    let profile = alice_profile(&c.t);
    assert_eq!(profile.api_key.expose(), CANARY_KEY);
    assert_eq!(profile.client_type.as_deref(), Some("codex"));
    // The test server is plain http on loopback: used for the exchange, never recorded for the
    // package to keep using (issue 13).
    assert_eq!(profile.base_url.as_deref(), None);
    assert!(!alice_pending(&c.t), "pending not cleared");

    let state = c.server.state();
    assert_eq!(state.acks, vec!["req-1".to_owned()]);
    assert_eq!(state.registrations.len(), 1);
    assert_eq!(state.registrations[0].client_type.as_deref(), Some("codex"));
    assert!(state.registrations[0]
        .description
        .contains("Supercode Tray"));
    assert_eq!(state.unauthorized, 0, "every poll carried the token");

    let all = rendered(&c.t, &r);
    assert!(!all.contains(CANARY_KEY), "api key leaked: {all}");

    if crate::support::node_available() {
        let seen = node_ok(&c.t.home, "loadProfiles", json!([]));
        assert_eq!(seen["alice"]["apiKey"], json!(CANARY_KEY));
        assert_eq!(seen["alice"]["agentId"], json!("agent-test-1"));
        assert_eq!(seen["alice"]["agentName"], json!("alice"));
        assert_eq!(seen["alice"]["clientType"], json!("codex"));
        assert!(seen["alice"]["registeredAt"]
            .as_str()
            .unwrap()
            .ends_with('Z'));
        crate::support::assert_js_pretty(&c.t.home, &c.t.home.agents_path());
    }
}

#[tokio::test]
async fn approving_phase_is_reported_before_approval() {
    let (_c, r) = approve_once(TestServerConfig {
        pending_polls: 1,
        approving_polls: 2,
        ..config()
    })
    .await;
    assert!(matches!(r.outcome, Ok(ApprovalOutcome::Approved { .. })));
    let phases: Vec<_> = r
        .states
        .iter()
        .filter_map(|s| match s {
            ApprovalState::Waiting { phase } => Some(phase.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        phases,
        [
            RegistrationPhase::Pending,
            RegistrationPhase::Approving,
            RegistrationPhase::Approving
        ]
    );
}

#[tokio::test]
async fn rejection_keeps_the_entry_until_dismissed() {
    let (c, r) = approve_once(TestServerConfig {
        pending_polls: 1,
        reject: true,
        ..config()
    })
    .await;
    assert_eq!(
        r.outcome.unwrap(),
        ApprovalOutcome::Rejected {
            agent_name: Some("alice".into())
        }
    );
    assert_eq!(r.states.last(), Some(&ApprovalState::Rejected));
    assert!(alice_pending(&c.t));
    assert!(c.secrets.get(&api_key_account("alice")).unwrap().is_none());
    assert!(!c.t.home.agents_path().exists());
    reject(&c.t.home, &c.t.origins, "alice").unwrap();
    assert!(!alice_pending(&c.t));
}

#[tokio::test]
async fn server_errors_back_off_then_succeed() {
    let (c, r) = approve_once(TestServerConfig {
        status_errors: 3,
        register_errors: 1,
        ..config()
    })
    .await;
    assert!(
        matches!(r.outcome, Ok(ApprovalOutcome::Approved { .. })),
        "{:?}",
        r.outcome
    );
    let delays: Vec<Duration> = r
        .states
        .iter()
        .filter_map(|s| match s {
            ApprovalState::Retrying { delay, reason, .. } => {
                assert!(reason.contains("503"), "{reason}");
                Some(*delay)
            }
            _ => None,
        })
        .collect();
    assert_eq!(delays.len(), 4, "{:?}", r.states);
    // The three status failures back off exponentially (40, 80, 160 ms), capped at 200 ms.
    assert_eq!(
        &delays[1..],
        &[
            Duration::from_millis(40),
            Duration::from_millis(80),
            Duration::from_millis(160)
        ]
    );
    assert_eq!(c.server.state().register_calls, 2);
    assert_eq!(c.server.state().registrations.len(), 1);
}

#[tokio::test]
async fn a_slow_server_is_waited_for() {
    let (_c, r) = approve_once(TestServerConfig {
        pending_polls: 1,
        delay: Duration::from_millis(300),
        ..config()
    })
    .await;
    assert!(
        matches!(r.outcome, Ok(ApprovalOutcome::Approved { .. })),
        "{:?}",
        r.outcome
    );
}

#[tokio::test]
async fn an_interrupted_approval_resumes_the_same_request() {
    let c = pending_alice(
        TestServerConfig {
            pending_polls: 6,
            ..config()
        },
        None,
    )
    .await;
    let short = ApprovalOptions {
        deadline: Duration::from_millis(100),
        poll_interval: Duration::from_millis(30),
        ..fast_options(c.server.base_url())
    };
    let first = approve_alice(&c.t, &c.secrets, &short).await;
    assert_eq!(
        first.outcome.as_ref().unwrap(),
        &ApprovalOutcome::Expired {
            request_id: "req-1".into(),
            approved_without_key: false
        }
    );
    assert_eq!(first.states.last(), Some(&ApprovalState::Expired));
    let pending = load_pending_registrations(&c.t.home).unwrap();
    assert_eq!(
        pending.get("alice").unwrap().request_id.as_deref(),
        Some("req-1"),
        "requestId not saved before polling"
    );
    let polled_before = c.server.state().registrations[0].polls;
    assert!(polled_before < 6, "the first run should expire mid-poll");
    let token = poll_token_on_disk(&c.t);

    let second = c.approve().await;
    assert!(
        matches!(second.outcome, Ok(ApprovalOutcome::Approved { .. })),
        "{:?}",
        second.outcome
    );
    assert_eq!(
        second.states[0],
        ApprovalState::Resumed {
            request_id: "req-1".into()
        }
    );
    let state = c.server.state();
    assert_eq!(
        state.register_calls, 1,
        "a second registration was submitted"
    );
    assert_eq!(state.registrations.len(), 1);
    assert_eq!(state.acks, vec!["req-1".to_owned()]);
    for r in [&first, &second] {
        let all = rendered(&c.t, r);
        assert!(
            !all.contains(&token) && !all.contains(CANARY_KEY),
            "secret leaked: {all}"
        );
    }
}

#[tokio::test]
async fn approved_without_a_key_is_the_timeout_result() {
    let (c, r) = approve_once(TestServerConfig {
        withhold_key: true,
        ..config()
    })
    .await;
    assert_eq!(
        r.outcome.unwrap(),
        ApprovalOutcome::Expired {
            request_id: "req-1".into(),
            approved_without_key: true
        }
    );
    assert!(alice_pending(&c.t));
    assert!(c.server.state().acks.is_empty());
}

#[tokio::test]
async fn approval_keeps_unknown_fields_of_an_existing_profile() {
    let c = pending_alice(config(), None).await;
    let mut old = AgentProfile::new(Sensitive::new("sk-old".into()), "old-id", "Old", "then");
    old.extra
        .insert("customSetting".into(), json!({"keep": true}));
    old.stream_url = Some("https://stream.example".into());
    canon_local::upsert_agent_profile(&c.t.home, "alice", old).unwrap();
    let r = c.approve().await;
    assert!(matches!(r.outcome, Ok(ApprovalOutcome::Approved { .. })));
    let profile = alice_profile(&c.t);
    assert_eq!(profile.api_key.expose(), CANARY_KEY);
    assert_eq!(profile.agent_id, "agent-test-1");
    assert_eq!(profile.extra["customSetting"], json!({"keep": true}));
    assert_eq!(
        profile.stream_url.as_deref(),
        Some("https://stream.example")
    );
}

#[tokio::test]
async fn nothing_to_approve_is_an_error_saying_what_to_do() {
    let t = temp_home();
    let (_dir, secrets) = file_secrets();
    let err = approve_alice(&t, &secrets, &ApprovalOptions::default())
        .await
        .outcome
        .unwrap_err();
    assert!(matches!(err, ApprovalError::NoPendingRegistration { .. }));
    assert!(err.to_string().contains("start the registration"));
}

#[tokio::test]
async fn registration_is_idempotent_by_local_registration_id() {
    let server = TestServer::start(config()).await.unwrap();
    let client = CanonClient::new(server.base_url()).unwrap();
    let request = registration("alice", "local-1");
    let a = client.register(&request).await.unwrap();
    let b = client.register(&request).await.unwrap();
    assert_eq!(a.request_id, b.request_id);
    assert_eq!(
        a.poll_token.as_ref().unwrap().expose(),
        b.poll_token.as_ref().unwrap().expose()
    );
    assert!(!format!("{a:?}").contains(a.poll_token.as_ref().unwrap().expose().as_str()));
    let other = client
        .register(&RegistrationRequest {
            local_registration_id: "local-2".into(),
            ..request
        })
        .await
        .unwrap();
    assert_ne!(other.request_id, a.request_id);
    assert_eq!(server.state().registrations.len(), 2);
}

#[tokio::test]
async fn polls_without_the_token_are_refused_and_errors_carry_no_secret() {
    let server = TestServer::start(config()).await.unwrap();
    let client = CanonClient::new(server.base_url()).unwrap();
    let submitted = client.register(&registration("alice", "l")).await.unwrap();
    let err = client
        .check_status(&submitted.request_id, None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, ClientError::Status { status: 401, .. }),
        "{err:?}"
    );
    let wrong = Sensitive::new("wrong-token-canary".to_owned());
    let err = client
        .check_status(&submitted.request_id, Some(&wrong))
        .await
        .unwrap_err();
    assert!(
        !err.to_string().contains("wrong-token-canary")
            && !format!("{err:?}").contains("wrong-token-canary")
    );
    let err = client
        .ack_registration_status(&submitted.request_id, None)
        .await
        .unwrap_err();
    assert!(matches!(err, ClientError::Status { status: 401, .. }));
    assert_eq!(server.state().unauthorized, 3);

    let status = client
        .check_status(&submitted.request_id, submitted.poll_token.as_ref())
        .await
        .unwrap();
    assert_eq!(status.phase, RegistrationPhase::Approved);
    assert_eq!(status.api_key.as_ref().unwrap().expose(), CANARY_KEY);
    assert!(!format!("{status:?}").contains(CANARY_KEY));
}

/// The pause a fake Canon configured by `config` asks for in its first status answer.
async fn retry_after_given_by(config: TestServerConfig) -> Option<Duration> {
    let server = TestServer::start(config).await.unwrap();
    let client = CanonClient::new(server.base_url()).unwrap();
    let s = client.register(&registration("a", "x")).await.unwrap();
    let status = client
        .check_status(&s.request_id, s.poll_token.as_ref())
        .await
        .unwrap();
    status.retry_after
}

#[tokio::test]
async fn server_given_poll_interval_is_honoured() {
    let in_body = retry_after_given_by(TestServerConfig {
        pending_polls: 1,
        poll_interval_ms: Some(7),
        retry_after_secs: None,
        ..config()
    })
    .await;
    assert_eq!(in_body, Some(Duration::from_millis(7)));

    let in_header = retry_after_given_by(TestServerConfig {
        retry_after_secs: Some(3),
        ..config()
    })
    .await;
    assert_eq!(in_header, Some(Duration::from_secs(3)));
}

#[tokio::test]
async fn an_unreachable_canon_is_a_transport_error() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = CanonClient::new(format!("http://127.0.0.1:{port}")).unwrap();
    let err = client.check_status("req-1", None).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Transport { .. }) && err.is_transient(),
        "{err:?}"
    );
}

#[test]
fn approve_can_run_on_a_multi_threaded_runtime() {
    // Tauri commands and spawned tasks need a `Send` future; this fails to compile otherwise.
    fn assert_send<T: Send>(_: &T) {}
    let t = temp_home();
    let (_dir, secrets) = file_secrets();
    let options = ApprovalOptions::default();
    let future = approve(
        &t.home,
        &t.origins,
        "alice",
        &secrets,
        &options,
        |_state| {},
    );
    assert_send(&future);
}

#[test]
fn base_url_precedence_prefers_the_profile_and_trims_a_trailing_slash() {
    assert_eq!(
        canon_local::client::resolve_base_url(Some("https://self.hosted/")),
        "https://self.hosted"
    );
    // An empty profile value counts as unset (the package uses `||`).
    let fallback = canon_local::client::resolve_base_url(Some(""));
    let expected = std::env::var("CANON_BASE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .map_or(canon_local::DEFAULT_BASE_URL.to_owned(), |u| {
            u.trim_end_matches('/').to_owned()
        });
    assert_eq!(fallback, expected);
}

/// The hostile `requestId` of issue 29: pasted into the status path, it climbs to `/steal` and
/// turns the rest into a query, taking the poll token header along.
const HOSTILE_REQUEST_ID: &str = "../../steal?x=";

/// Asserts the server saw no status, ack or other request after the registration: the poll
/// token went nowhere.
fn nothing_sent_after_register(server: &TestServer) {
    let state = server.state();
    assert_eq!(state.polls, 0, "{state:?}");
    assert!(state.acks.is_empty(), "{state:?}");
    assert!(state.stray_requests.is_empty(), "{state:?}");
    assert_eq!(state.unauthorized, 0, "{state:?}");
}

/// Issue 29: the test server's record of stray requests sees a request that carries the poll
/// token to another path, so an empty record below means the token was not sent there.
#[tokio::test]
async fn the_test_server_records_a_poll_token_sent_to_another_path() {
    let server = TestServer::start(config()).await.unwrap();
    let response = reqwest::Client::new()
        .get(format!("{}/steal?x=/agents/status", server.base_url()))
        .header(canon_local::client::POLL_TOKEN_HEADER, "poll-x")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(
        server.state().stray_requests,
        [("GET /steal?x=/agents/status".to_owned(), true)]
    );
}

/// Issue 29: a `requestId` Canon hands out that is not one plain path segment is refused with a
/// clear error, is not saved, and the poll token is never sent with it.
#[tokio::test]
async fn a_hostile_request_id_from_canon_is_refused_and_the_poll_token_never_sent() {
    let (c, run) = approve_once(TestServerConfig {
        request_id: Some(HOSTILE_REQUEST_ID.into()),
        ..config()
    })
    .await;
    let error = run.outcome.unwrap_err();
    assert!(
        matches!(
            &error,
            ApprovalError::Client(ClientError::InvalidRequestId { request_id })
                if request_id == HOSTILE_REQUEST_ID
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("requestId \"../../steal?x=\" is refused"),
        "{message}"
    );
    assert_eq!(c.server.state().register_calls, 1);
    nothing_sent_after_register(&c.server);
    let pending = load_pending_registrations(&c.t.home).unwrap();
    assert_eq!(
        pending.get("alice").unwrap().request_id,
        None,
        "the refused id is not kept"
    );
}

/// Issue 29: the pending file is any local program's to write: a hostile `requestId` kept there
/// is refused before the first poll, and the client refuses it for status and ack alike.
#[tokio::test]
async fn a_hostile_request_id_in_the_pending_file_is_refused_before_anything_is_sent() {
    let c = pending_alice(config(), None).await;
    canon_local::update_pending_registration(
        &c.t.home,
        "alice",
        canon_local::PendingPatch {
            request_id: Some(HOSTILE_REQUEST_ID.into()),
            poll_token: Some(Sensitive::new("poll-planted".into())),
            client_type: None,
        },
    )
    .unwrap();
    let run = c.approve().await;
    let error = run.outcome.unwrap_err();
    assert!(
        matches!(
            &error,
            ApprovalError::Client(ClientError::InvalidRequestId { .. })
        ),
        "{error:?}"
    );
    assert_eq!(c.server.state().register_calls, 0);
    nothing_sent_after_register(&c.server);

    let client = CanonClient::new(c.server.base_url()).unwrap();
    let token = Sensitive::new("poll-planted".to_owned());
    for id in [
        HOSTILE_REQUEST_ID,
        "",
        "a/b",
        "..",
        "a%2Fb",
        "a?b",
        "a#b",
        "a b",
        &"x".repeat(canon_local::client::REQUEST_ID_MAX + 1),
    ] {
        let status = client.check_status(id, Some(&token)).await;
        assert!(
            matches!(status, Err(ClientError::InvalidRequestId { .. })),
            "{id:?}: {status:?}"
        );
        let ack = client.ack_registration_status(id, Some(&token)).await;
        assert!(
            matches!(ack, Err(ClientError::InvalidRequestId { .. })),
            "{id:?}: {ack:?}"
        );
    }
    nothing_sent_after_register(&c.server);
    for id in ["req-1", "0f3c9a2e-77b1-4c1e-9d2a-5b6e8f1a0c3d", "AbC_123-x"] {
        assert!(canon_local::client::is_valid_request_id(id), "{id}");
    }
}
