//! The approval workflow and the registration client against the in-process fake Canon.

use std::time::Duration;

use canon_local::client::{CanonClient, RegistrationRequest};
use canon_local::test_server::{TestServer, TestServerConfig};
use canon_local::{
    api_key_account, approve, get_or_create_pending_registration, load_pending_registrations,
    load_profiles, reject, AgentProfile, ApprovalError, ApprovalOptions, ApprovalOutcome,
    ApprovalState, ClientError, RegistrationPhase, SecretStore, Sensitive,
};
use serde_json::json;

use crate::support::{node_ok, temp_home, TempHome};

const CANARY_KEY: &str = "sk-canary-7d1f0c2b9e";

/// Generous bound on any single approval run (CI machines are slow; runs take well under 1 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

fn fast(server: &TestServer) -> ApprovalOptions {
    ApprovalOptions {
        base_url: Some(server.base_url()),
        deadline: Duration::from_secs(30),
        poll_interval: Duration::from_millis(20),
        min_poll_interval: Duration::from_millis(5),
        max_backoff: Duration::from_millis(200),
    }
}

fn config() -> TestServerConfig {
    TestServerConfig {
        api_key: CANARY_KEY.into(),
        ..TestServerConfig::default()
    }
}

struct Run {
    outcome: Result<ApprovalOutcome, ApprovalError>,
    states: Vec<ApprovalState>,
}

async fn run(t: &TempHome, secrets: &SecretStore, options: &ApprovalOptions) -> Run {
    let mut states = Vec::new();
    let outcome = tokio::time::timeout(
        RUN_TIMEOUT,
        approve(&t.home, &t.origins, "alice", secrets, options, |s| {
            states.push(s)
        }),
    )
    .await
    .expect("approve did not finish in time");
    Run { outcome, states }
}

fn secrets_dir() -> (tempfile::TempDir, SecretStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SecretStore::file(dir.path());
    (dir, store)
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
    let server = TestServer::start(TestServerConfig {
        pending_polls: 3,
        ..config()
    })
    .await
    .unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    get_or_create_pending_registration(&t.home, "alice", Some("codex")).unwrap();
    let r = run(&t, &secrets, &fast(&server)).await;
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

    let stored = secrets.get(&api_key_account("alice")).unwrap().unwrap();
    assert_eq!(stored.expose(), CANARY_KEY);
    let profile = load_profiles(&t.home)
        .unwrap()
        .get("alice")
        .cloned()
        .unwrap();
    assert_eq!(profile.api_key.expose(), CANARY_KEY);
    assert_eq!(profile.client_type.as_deref(), Some("codex"));
    // The test server is plain http on loopback: used for the exchange, never recorded for the
    // package to keep using (issue 13).
    assert_eq!(profile.base_url.as_deref(), None);
    assert!(
        load_pending_registrations(&t.home)
            .unwrap()
            .get("alice")
            .is_none(),
        "pending not cleared"
    );

    let state = server.state();
    assert_eq!(state.acks, vec!["req-1".to_owned()]);
    assert_eq!(state.registrations.len(), 1);
    assert_eq!(state.registrations[0].client_type.as_deref(), Some("codex"));
    assert!(state.registrations[0]
        .description
        .contains("Supercode Tray"));
    assert_eq!(state.unauthorized, 0, "every poll carried the token");

    let all = rendered(&t, &r);
    assert!(!all.contains(CANARY_KEY), "api key leaked: {all}");

    if crate::support::node_available() {
        let seen = node_ok(&t.home, "loadProfiles", json!([]));
        assert_eq!(seen["alice"]["apiKey"], json!(CANARY_KEY));
        assert_eq!(seen["alice"]["agentId"], json!("agent-test-1"));
        assert_eq!(seen["alice"]["agentName"], json!("alice"));
        assert_eq!(seen["alice"]["clientType"], json!("codex"));
        assert!(seen["alice"]["registeredAt"]
            .as_str()
            .unwrap()
            .ends_with('Z'));
        crate::support::assert_js_pretty(&t.home, &t.home.agents_path());
    }
}

#[tokio::test]
async fn approving_phase_is_reported_before_approval() {
    let server = TestServer::start(TestServerConfig {
        pending_polls: 1,
        approving_polls: 2,
        ..config()
    })
    .await
    .unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let r = run(&t, &secrets, &fast(&server)).await;
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
    let server = TestServer::start(TestServerConfig {
        pending_polls: 1,
        reject: true,
        ..config()
    })
    .await
    .unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let r = run(&t, &secrets, &fast(&server)).await;
    assert_eq!(
        r.outcome.unwrap(),
        ApprovalOutcome::Rejected {
            agent_name: Some("alice".into())
        }
    );
    assert_eq!(r.states.last(), Some(&ApprovalState::Rejected));
    assert!(load_pending_registrations(&t.home)
        .unwrap()
        .get("alice")
        .is_some());
    assert!(secrets.get(&api_key_account("alice")).unwrap().is_none());
    assert!(!t.home.agents_path().exists());
    reject(&t.home, &t.origins, "alice").unwrap();
    assert!(load_pending_registrations(&t.home)
        .unwrap()
        .get("alice")
        .is_none());
}

#[tokio::test]
async fn server_errors_back_off_then_succeed() {
    let server = TestServer::start(TestServerConfig {
        status_errors: 3,
        register_errors: 1,
        ..config()
    })
    .await
    .unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let r = run(&t, &secrets, &fast(&server)).await;
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
    assert_eq!(server.state().register_calls, 2);
    assert_eq!(server.state().registrations.len(), 1);
}

#[tokio::test]
async fn a_slow_server_is_waited_for() {
    let server = TestServer::start(TestServerConfig {
        pending_polls: 1,
        delay: Duration::from_millis(300),
        ..config()
    })
    .await
    .unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let r = run(&t, &secrets, &fast(&server)).await;
    assert!(
        matches!(r.outcome, Ok(ApprovalOutcome::Approved { .. })),
        "{:?}",
        r.outcome
    );
}

#[tokio::test]
async fn an_interrupted_approval_resumes_the_same_request() {
    let server = TestServer::start(TestServerConfig {
        pending_polls: 6,
        ..config()
    })
    .await
    .unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let short = ApprovalOptions {
        deadline: Duration::from_millis(100),
        poll_interval: Duration::from_millis(30),
        ..fast(&server)
    };
    let first = run(&t, &secrets, &short).await;
    assert_eq!(
        first.outcome.as_ref().unwrap(),
        &ApprovalOutcome::Expired {
            request_id: "req-1".into(),
            approved_without_key: false
        }
    );
    assert_eq!(first.states.last(), Some(&ApprovalState::Expired));
    let pending = load_pending_registrations(&t.home).unwrap();
    assert_eq!(
        pending.get("alice").unwrap().request_id.as_deref(),
        Some("req-1"),
        "requestId not saved before polling"
    );
    let polled_before = server.state().registrations[0].polls;
    assert!(polled_before < 6, "the first run should expire mid-poll");
    let token = poll_token_on_disk(&t);

    let second = run(&t, &secrets, &fast(&server)).await;
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
    let state = server.state();
    assert_eq!(
        state.register_calls, 1,
        "a second registration was submitted"
    );
    assert_eq!(state.registrations.len(), 1);
    assert_eq!(state.acks, vec!["req-1".to_owned()]);
    for r in [&first, &second] {
        let all = rendered(&t, r);
        assert!(
            !all.contains(&token) && !all.contains(CANARY_KEY),
            "secret leaked: {all}"
        );
    }
}

#[tokio::test]
async fn approved_without_a_key_is_the_timeout_result() {
    let server = TestServer::start(TestServerConfig {
        withhold_key: true,
        ..config()
    })
    .await
    .unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let r = run(&t, &secrets, &fast(&server)).await;
    assert_eq!(
        r.outcome.unwrap(),
        ApprovalOutcome::Expired {
            request_id: "req-1".into(),
            approved_without_key: true
        }
    );
    assert!(load_pending_registrations(&t.home)
        .unwrap()
        .get("alice")
        .is_some());
    assert!(server.state().acks.is_empty());
}

#[tokio::test]
async fn approval_keeps_unknown_fields_of_an_existing_profile() {
    let server = TestServer::start(config()).await.unwrap();
    let t = temp_home();
    let (_dir, secrets) = secrets_dir();
    let mut old = AgentProfile::new(Sensitive::new("sk-old".into()), "old-id", "Old", "then");
    old.extra
        .insert("customSetting".into(), json!({"keep": true}));
    old.stream_url = Some("https://stream.example".into());
    canon_local::upsert_agent_profile(&t.home, "alice", old).unwrap();
    get_or_create_pending_registration(&t.home, "alice", None).unwrap();
    let r = run(&t, &secrets, &fast(&server)).await;
    assert!(matches!(r.outcome, Ok(ApprovalOutcome::Approved { .. })));
    let profile = load_profiles(&t.home)
        .unwrap()
        .get("alice")
        .cloned()
        .unwrap();
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
    let (_dir, secrets) = secrets_dir();
    let err = approve(
        &t.home,
        &t.origins,
        "alice",
        &secrets,
        &ApprovalOptions::default(),
        |_| {},
    )
    .await
    .unwrap_err();
    assert!(matches!(err, ApprovalError::NoPendingRegistration { .. }));
    assert!(err.to_string().contains("start the registration"));
}

#[tokio::test]
async fn registration_is_idempotent_by_local_registration_id() {
    let server = TestServer::start(config()).await.unwrap();
    let client = CanonClient::new(server.base_url()).unwrap();
    let request = RegistrationRequest {
        name: "alice".into(),
        description: "d".into(),
        client_type: None,
        local_registration_id: "local-1".into(),
    };
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
    let submitted = client
        .register(&RegistrationRequest {
            name: "alice".into(),
            description: "d".into(),
            client_type: None,
            local_registration_id: "l".into(),
        })
        .await
        .unwrap();
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

#[tokio::test]
async fn server_given_poll_interval_is_honoured() {
    let server = TestServer::start(TestServerConfig {
        pending_polls: 1,
        poll_interval_ms: Some(7),
        retry_after_secs: None,
        ..config()
    })
    .await
    .unwrap();
    let client = CanonClient::new(server.base_url()).unwrap();
    let s = client
        .register(&RegistrationRequest {
            name: "a".into(),
            description: "d".into(),
            client_type: None,
            local_registration_id: "x".into(),
        })
        .await
        .unwrap();
    let status = client
        .check_status(&s.request_id, s.poll_token.as_ref())
        .await
        .unwrap();
    assert_eq!(status.retry_after, Some(Duration::from_millis(7)));

    let server = TestServer::start(TestServerConfig {
        retry_after_secs: Some(3),
        ..config()
    })
    .await
    .unwrap();
    let client = CanonClient::new(server.base_url()).unwrap();
    let s = client
        .register(&RegistrationRequest {
            name: "a".into(),
            description: "d".into(),
            client_type: None,
            local_registration_id: "x".into(),
        })
        .await
        .unwrap();
    let status = client
        .check_status(&s.request_id, s.poll_token.as_ref())
        .await
        .unwrap();
    assert_eq!(status.retry_after, Some(Duration::from_secs(3)));
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
    let (_dir, secrets) = secrets_dir();
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
