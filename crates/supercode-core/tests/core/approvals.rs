//! Approvals through the core against canon-local's contract-following fake Canon.

use std::time::Duration;

use canon_local::test_server::{TestServer, TestServerConfig};
use canon_local::ApprovalOptions;
use supercode_core::view::{CommandError, ErrorCode, PendingState, PendingView};
use supercode_core::Supercode;

use crate::support::{keychain_or_skip, Fixture, TIMEOUT};

/// Fast polling against the local fake Canon; the deadline is the test's own budget.
pub fn fast_options(base_url: String, deadline: Duration) -> ApprovalOptions {
    ApprovalOptions {
        base_url: Some(base_url),
        deadline,
        poll_interval: Duration::from_millis(20),
        min_poll_interval: Duration::from_millis(10),
        max_backoff: Duration::from_millis(100),
    }
}

/// A fake Canon that never decides: an approval against it polls until its deadline or until
/// it is stopped.
pub async fn undecided_canon() -> TestServer {
    TestServer::start(TestServerConfig {
        pending_polls: u32::MAX,
        ..TestServerConfig::default()
    })
    .await
    .unwrap()
}

pub fn core_for(fx: &Fixture, server: &TestServer, deadline: Duration) -> Supercode {
    fx.core()
        .with_approval_options(fast_options(server.base_url(), deadline))
}

/// Runs a full approval of `profile` with the key `api_key` and checks every place it lands.
async fn approve_and_check(fx: &Fixture, profile: &str, api_key: &str) {
    let server = TestServer::start(TestServerConfig {
        pending_polls: 2,
        approving_polls: 1,
        api_key: api_key.to_owned(),
        ..TestServerConfig::default()
    })
    .await
    .unwrap();
    canon_local::get_or_create_pending_registration(fx.canon(), profile, Some("claude-code"))
        .unwrap();
    let core = core_for(fx, &server, TIMEOUT);
    let mut states = Vec::new();

    let view = tokio::time::timeout(
        TIMEOUT,
        core.approve(profile, |v: &PendingView| states.push(v.state)),
    )
    .await
    .unwrap()
    .unwrap();

    assert_eq!(view.state, PendingState::Approved, "{view:?}");
    assert!(states.contains(&PendingState::Waiting), "{states:?}");
    assert!(states.contains(&PendingState::Approving), "{states:?}");
    let profiles = canon_local::load_profiles(fx.canon()).unwrap();
    let saved = profiles.get(profile).expect("agents.json has the profile");
    assert_eq!(saved.api_key.expose(), api_key);
    assert_eq!(saved.agent_id, "agent-test-1");
    assert_eq!(saved.client_type.as_deref(), Some("claude-code"));
    assert!(!canon_local::load_pending_registrations(fx.canon())
        .unwrap()
        .is_present(profile));
    let stored = fx
        .store()
        .get(&canon_local::api_key_account(profile))
        .unwrap()
        .expect("the key is in the secret store");
    assert_eq!(stored.expose(), api_key);
    let seen = server.state();
    assert_eq!(seen.registrations.len(), 1);
    assert_eq!(seen.registrations[0].polls, 4);
    assert_eq!(seen.acks, vec![seen.registrations[0].request_id.clone()]);
    assert!(core.snapshot().pending.is_empty());
}

#[tokio::test]
async fn approve_after_polls_saves_the_profile_clears_the_pending_entry_and_stores_the_key() {
    let fx = Fixture::new();
    approve_and_check(&fx, "ann", "api-key-file-store").await;
}

#[tokio::test]
async fn approve_stores_the_api_key_in_the_os_keychain() {
    let Some(store) = keychain_or_skip("approve_stores_the_api_key_in_the_os_keychain") else {
        return;
    };
    let fx = Fixture::with_store(store.clone());
    // Unique per run: the keychain outlives the test.
    let profile = format!("core-test-{}-{}", std::process::id(), rand_suffix());
    approve_and_check(&fx, &profile, "api-key-keychain").await;
    store
        .delete(&canon_local::api_key_account(&profile))
        .unwrap();
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[tokio::test]
async fn a_registration_canon_rejected_is_shown_as_rejected_until_dismissed() {
    let fx = Fixture::new();
    let server = TestServer::start(TestServerConfig {
        pending_polls: 1,
        reject: true,
        ..TestServerConfig::default()
    })
    .await
    .unwrap();
    canon_local::get_or_create_pending_registration(fx.canon(), "rex", None).unwrap();
    let core = core_for(&fx, &server, TIMEOUT);

    let view = tokio::time::timeout(TIMEOUT, core.approve("rex", |_: &PendingView| {}))
        .await
        .unwrap()
        .unwrap();

    assert_eq!(view.state, PendingState::Rejected);
    let pending = core.snapshot().pending;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].state, PendingState::Rejected);
    assert!(pending[0]
        .message
        .as_deref()
        .is_some_and(|m| m.contains("dismiss")));
    assert!(canon_local::load_profiles(fx.canon())
        .unwrap()
        .get("rex")
        .is_none());

    core.reject("rex").unwrap();

    assert!(core.snapshot().pending.is_empty());
    assert!(!canon_local::load_pending_registrations(fx.canon())
        .unwrap()
        .is_present("rex"));
}

#[test]
fn reject_clears_an_unsubmitted_registration_without_contacting_canon() {
    let fx = Fixture::new();
    canon_local::get_or_create_pending_registration(fx.canon(), "shy", None).unwrap();
    // Any approval would fail: this base URL does not answer.
    let core = fx.core().with_approval_options(fast_options(
        "http://127.0.0.1:9".into(),
        Duration::from_secs(1),
    ));
    assert_eq!(core.snapshot().pending[0].state, PendingState::Unsubmitted);

    core.reject("shy").unwrap();

    assert!(core.snapshot().pending.is_empty());
}

#[tokio::test]
async fn a_second_approve_of_the_same_profile_is_refused_while_the_first_polls_and_its_state_shows()
{
    let fx = Fixture::new();
    // Canon never decides, so the first approval polls until its deadline.
    let server = undecided_canon().await;
    canon_local::get_or_create_pending_registration(fx.canon(), "twice", None).unwrap();
    let deadline = Duration::from_secs(4);
    let core = core_for(&fx, &server, deadline);

    let (first, ()) = tokio::join!(core.approve("twice", |_: &PendingView| {}), async {
        // Visible in the snapshot while it polls.
        let started = tokio::time::Instant::now();
        loop {
            let pending = core.snapshot().pending;
            if pending
                .iter()
                .any(|p| p.profile == "twice" && p.state == PendingState::Waiting)
            {
                break;
            }
            assert!(
                started.elapsed() < deadline,
                "never saw the approval waiting: {pending:?}"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            server.state().registrations.len(),
            1,
            "waiting means submitted"
        );

        let second = core
            .approve("twice", |_: &PendingView| {})
            .await
            .unwrap_err();
        let second = CommandError::from(second);
        assert_eq!(second.code, ErrorCode::Refused, "{second:?}");
        assert!(
            second.message.contains("already being approved"),
            "{second:?}"
        );

        let reject = CommandError::from(core.reject("twice").unwrap_err());
        assert_eq!(reject.code, ErrorCode::Refused, "{reject:?}");
    });

    assert_eq!(first.unwrap().state, PendingState::Expired);
    assert_eq!(
        server.state().registrations.len(),
        1,
        "one request, never two"
    );
    let pending = core.snapshot().pending;
    assert_eq!(pending[0].state, PendingState::Expired);
    // Finished, so it can be dismissed now.
    core.reject("twice").unwrap();
}

#[tokio::test]
async fn approve_without_a_pending_registration_is_not_found_and_contacts_no_one() {
    let fx = Fixture::new();
    let server = TestServer::start(TestServerConfig::default())
        .await
        .unwrap();
    let core = core_for(&fx, &server, TIMEOUT);
    let error = CommandError::from(
        core.approve("nobody", |_: &PendingView| {})
            .await
            .unwrap_err(),
    );
    assert_eq!(error.code, ErrorCode::NotFound, "{error:?}");
    assert_eq!(server.state().register_calls, 0);
}
