//! Shutdown (issue 14): `Supercode::shutdown` ends the watcher, the attach proxies and the
//! approvals in flight, and returns only once they have ended.

use std::sync::Arc;
use std::time::Duration;

use demo_runtime::DemoConfig;
use live_runtime::Sensitive;
use supercode_core::view::{CommandError, ErrorCode, PendingView};

use crate::approvals::{fast_options, undecided_canon};
use crate::support::{
    accepts, proxy_address, recorder, register_at, write_receipt, Fixture, Sleeper, TIMEOUT,
};

/// How long the test watches for something that must not happen any more: many times the
/// watcher's 15 ms debounce (a receipt change is published within it) and fifty of the
/// approval's 20 ms poll intervals, yet short enough to keep the test quick.
const QUIET: Duration = Duration::from_secs(1);

// Proves (issue 14): with the watcher running, a runtime attached through its proxy and an
// approval polling the local Canon, an awaited shutdown leaves none of them: the approval ended
// (refused as quitting) and polls no more, the proxy's port refuses connections, and a receipt
// written afterwards gives no event. The interrupted approval is not left marked as running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_the_watcher_the_attach_proxies_and_the_approvals_and_waits_for_them() {
    let fx = Fixture::new();
    // Canon never decides, so the approval polls until it is stopped.
    let server = undecided_canon().await;
    canon_local::get_or_create_pending_registration(fx.canon(), "patient", None).unwrap();
    let (sink, events) = recorder();
    let core = Arc::new(
        fx.core_with(sink)
            .with_approval_options(fast_options(server.base_url(), TIMEOUT * 4)),
    );
    let _watch = core.watch();

    let token = "token-of-shutdown";
    let runtime = demo_runtime::serve(DemoConfig::new("closing", Sensitive::new(token.into())))
        .await
        .unwrap();
    let registration = register_at(
        fx.receipts(),
        "closing",
        token,
        None,
        *runtime.local_addr().expose(),
    );
    let mut events = events.listed("closing").await;
    let url = core.attach(registration.endpoint().as_str()).await.unwrap();
    let proxy = proxy_address(url.as_str());
    assert!(accepts(proxy), "the proxy listens before the shutdown");

    let approval = tokio::spawn({
        let core = core.clone();
        async move { core.approve("patient", |_: &PendingView| {}).await }
    });
    let polls = || server.state().registrations.first().map_or(0, |r| r.polls);
    tokio::time::timeout(TIMEOUT, async {
        while polls() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the approval polls Canon before the shutdown");

    tokio::time::timeout(TIMEOUT, core.shutdown())
        .await
        .expect("shutdown finishes");

    let outcome = tokio::time::timeout(TIMEOUT, approval)
        .await
        .expect("the approval ended with the shutdown")
        .unwrap();
    let error = CommandError::from(outcome.expect_err("an interrupted approval is not a result"));
    assert_eq!(error.code, ErrorCode::Refused, "{error:?}");
    assert!(error.message.contains("quitting"), "{error:?}");
    assert!(!accepts(proxy), "the proxy's port refuses connections");

    events.drain();
    let seen = events.seen.len();
    let polled = polls();
    let sleeper = Sleeper::sleep();
    let identity = sleeper.identity();
    write_receipt(fx.receipts(), sleeper.pid(), identity.start_time, "after");
    tokio::time::sleep(QUIET).await;
    events.drain();
    assert_eq!(
        events.seen.len(),
        seen,
        "the watcher sent nothing after the shutdown: {}",
        events.summary()
    );
    assert_eq!(polls(), polled, "the approval polls Canon no more");
    assert!(
        core.attach(registration.endpoint().as_str()).await.is_err(),
        "no attach after the shutdown"
    );
    // Interrupted, the approval no longer counts as running: the registration can be dismissed.
    core.reject("patient").unwrap();

    drop(registration);
    runtime.shutdown().await;
}
