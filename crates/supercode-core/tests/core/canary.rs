//! Secrets never leave the backend: a bearer token, an API key, a poll token and a runtime's
//! loopback address appear in no serialized snapshot, no event's Debug output and no command error.

use std::sync::{Arc, Mutex};

use canon_local::test_server::{TestServer, TestServerConfig};
use canon_local::PendingPatch;
use live_runtime::Sensitive;
use supercode_core::view::{CommandError, PendingView};
use supercode_core::{CoreError, Supercode};

use crate::approvals::fast_options;
use crate::support::{recorder, register, Fixture, TIMEOUT};

const BEARER: &str = "CANARY-bearer-3c1f9d";
const API_KEY: &str = "CANARY-apikey-a77e02";
const FOREIGN_POLL_TOKEN: &str = "CANARY-poll-5b0c44";

/// Everything a command error carries, in every form it can take.
fn error_text(error: CoreError) -> String {
    let debug = format!("{error:?}");
    let command = CommandError::from(error);
    format!(
        "{debug}\n{command:?}\n{}",
        serde_json::to_string(&command).unwrap()
    )
}

fn snapshot_json(core: &Supercode) -> String {
    serde_json::to_string(&core.snapshot()).unwrap()
}

#[tokio::test]
async fn no_token_key_poll_token_or_address_reaches_a_snapshot_an_event_or_a_command_error() {
    let fx = Fixture::new();
    let server = TestServer::start(TestServerConfig {
        pending_polls: 2,
        api_key: API_KEY.into(),
        ..TestServerConfig::default()
    })
    .await
    .unwrap();
    let (sink, mut events) = recorder();
    let core = fx
        .core_with(sink)
        .with_approval_options(fast_options(server.base_url(), TIMEOUT));
    let watch = core.watch();
    let mut outputs: Vec<String> = Vec::new();

    // A live runtime with a canary token, and one whose port no longer answers.
    let (live, _listener) = register(fx.receipts(), "live", BEARER, None);
    let address = _listener.local_addr().unwrap().to_string();
    let (closed, closed_listener) = register(fx.receipts(), "closed", BEARER, None);
    let closed_address = closed_listener.local_addr().unwrap().to_string();
    drop(closed_listener);
    outputs.push(snapshot_json(&core));

    // An approval that completes (API key), watched while it polls (its poll token is live).
    canon_local::get_or_create_pending_registration(fx.canon(), "canary", Some("codex")).unwrap();
    let issued_poll_tokens: Arc<Mutex<Vec<String>>> = Arc::default();
    let during: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let (tokens, during) = (issued_poll_tokens.clone(), during.clone());
        let core_ref = &core;
        let home = fx.canon().clone();
        let view = core
            .approve("canary", move |view: &PendingView| {
                during.lock().unwrap().push(format!("{view:?}"));
                during
                    .lock()
                    .unwrap()
                    .push(serde_json::to_string(&core_ref.snapshot()).unwrap());
                if let Some(token) = canon_local::load_pending_registrations(&home)
                    .ok()
                    .and_then(|p| p.get("canary").and_then(|e| e.poll_token.clone()))
                {
                    tokens.lock().unwrap().push(token.expose().clone());
                }
            })
            .await
            .unwrap();
        outputs.push(format!("{view:?}"));
    }
    outputs.extend(during.lock().unwrap().drain(..));
    let mut poll_tokens = issued_poll_tokens.lock().unwrap().clone();
    assert!(
        !poll_tokens.is_empty(),
        "the test saw the issued poll token, so it can look for it"
    );
    poll_tokens.dedup();

    // A pending registration with a poll token Canon does not know: the error must not echo it.
    canon_local::update_pending_registration(
        fx.canon(),
        "foreign",
        PendingPatch {
            request_id: Some("req-unknown".into()),
            poll_token: Some(Sensitive::new(FOREIGN_POLL_TOKEN.into())),
            client_type: None,
        },
    )
    .unwrap();
    outputs.push(snapshot_json(&core));
    let failed = core.approve("foreign", |v: &PendingView| {
        let _ = v;
    });
    outputs.push(error_text(
        tokio::time::timeout(TIMEOUT, failed)
            .await
            .unwrap()
            .unwrap_err(),
    ));

    // Command errors of every other kind.
    outputs.push(error_text(
        core.forget(live.endpoint().as_str()).unwrap_err(),
    ));
    outputs.push(error_text(
        tokio::time::timeout(TIMEOUT, core.attach(closed.endpoint().as_str()))
            .await
            .unwrap()
            .unwrap_err(),
    ));
    outputs.push(error_text(
        crate::support::revive_confirmed(&core, live.endpoint().as_str())
            .await
            .unwrap_err(),
    ));
    outputs.push(error_text(
        core.attach("lre_0123456789abcdef0123456789abcdef")
            .await
            .unwrap_err(),
    ));
    outputs.push(snapshot_json(&core));

    // Every event the watcher sent, in Debug form.
    drop(live);
    events.wait_for_snapshot("the last change", TIMEOUT, |s| {
        !s.runtimes.iter().any(|r| r.name == "live")
    });
    drop(watch);
    events.drain();
    assert!(events.seen.len() >= 3, "the watcher reported the changes");
    outputs.extend(events.seen.iter().map(|(_, e)| format!("{e:?}")));

    let mut secrets = vec![
        BEARER.to_owned(),
        API_KEY.to_owned(),
        FOREIGN_POLL_TOKEN.to_owned(),
        address,
        closed_address,
    ];
    secrets.extend(poll_tokens);
    for output in &outputs {
        for secret in &secrets {
            assert!(
                !output.contains(secret.as_str()),
                "a secret leaked into: {output}"
            );
        }
    }
    // The checks looked at real output.
    assert!(outputs.iter().any(|o| o.contains("canary")));
    assert!(outputs.len() > 10);
}
