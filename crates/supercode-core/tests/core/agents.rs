//! Live agent state (issue 15) through the core as the tray uses it: real demo runtimes serving
//! the status API (each scenario, hostile ones included), registered through the real library,
//! watched by the real watcher. Waits are on events; the only timings changed are the
//! subscriptions' own, through `AgentOptions`.

use std::time::{Duration, Instant};

use demo_runtime::{DemoConfig, DemoServer, Scenario};
use live_runtime::test_support::prompt_runtime::{bait_and_switch, Posted, PromptRuntime};
use live_runtime::{LiveRuntimeRegistration, Sensitive};
use supercode_core::agents::AgentOptions;
use supercode_core::view::{
    ActOutcome, AgentState, AgentStateView, CommandError, RuntimeStatus, Snapshot,
};
use supercode_core::{CoreError, CoreEvent, Refusal, Supercode};

use crate::support::{recorder, register_at, wait_until, Events, Fixture, TIMEOUT};

const CANARY: &str = "CANARY-agent-token-9f2e71";

struct Runtime {
    registration: LiveRuntimeRegistration,
    server: DemoServer,
}

impl Runtime {
    fn endpoint(&self) -> String {
        self.registration.endpoint().to_string()
    }

    fn address(&self) -> String {
        self.server.local_addr().expose().to_string()
    }
}

async fn start(fixture: &Fixture, name: &str, scenario: Scenario) -> Runtime {
    start_paced(fixture, name, scenario, demo_runtime::PHASE_DELAY).await
}

/// A phase delay no test waits out: its timed phases move on only when the test cues them.
const CUED: Duration = Duration::from_secs(3600);

/// [`start`], with the scenario's timed phases `phase_delay` apart.
async fn start_paced(
    fixture: &Fixture,
    name: &str,
    scenario: Scenario,
    phase_delay: Duration,
) -> Runtime {
    let mut config = DemoConfig::new(name, Sensitive::new(CANARY.to_owned()));
    config.scenario = scenario;
    config.phase_delay = phase_delay;
    let server = demo_runtime::serve(config).await.unwrap();
    let address = *server.local_addr().expose();
    let registration = register_at(fixture.receipts(), name, CANARY, None, address);
    Runtime {
        registration,
        server,
    }
}

/// Timings short enough that failures show within a test, still far above loopback latency.
/// The silence timeout stays the API's: the demo runtime's keep-alives come every 15 s.
fn quick() -> AgentOptions {
    AgentOptions {
        first_document_timeout: Duration::from_millis(300),
        backoff_initial: Duration::from_millis(20),
        backoff_max: Duration::from_millis(100),
        alert_interval: Duration::from_millis(500),
        ..AgentOptions::default()
    }
}

fn state_of(snapshot: &Snapshot, endpoint: &str) -> Option<(AgentState, Option<String>)> {
    let runtime = snapshot.runtimes.iter().find(|r| r.id == endpoint)?;
    let state = runtime.state.as_ref()?;
    Some((state.value, state.title.clone()))
}

/// The revision of the status document `snapshot` shows for `endpoint`: what a shell acts with.
fn revision_of(snapshot: &Snapshot, endpoint: &str) -> u64 {
    let runtime = snapshot.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    runtime.state.as_ref().and_then(|s| s.revision).unwrap()
}

/// Waits (off the async workers) for a snapshot showing `endpoint` in `state`.
async fn wait_state(events: &mut Events, endpoint: &str, state: AgentState) -> Snapshot {
    tokio::task::block_in_place(|| {
        events
            .wait_for_snapshot(&format!("{endpoint} in {state:?}"), TIMEOUT, |s| {
                state_of(s, endpoint).is_some_and(|(v, _)| v == state)
            })
            .1
    })
}

fn alerts(events: &Events, endpoint: &str) -> Vec<AgentState> {
    events
        .seen
        .iter()
        .filter_map(|(_, e)| match e {
            CoreEvent::AgentAlert { id, state, .. } if id == endpoint => Some(*state),
            _ => None,
        })
        .collect()
}

fn watched(
    fixture: &Fixture,
    options: AgentOptions,
) -> (Supercode, supercode_core::WatchHandle, Events) {
    let (sink, events) = recorder();
    let core = fixture.core_with(sink).with_agent_options(options);
    let watch = core.watch();
    (core, watch, events)
}

// Proves the pinned approval walk end to end: working → needs-approval offering approve and
// deny → `act approve` accepted → working → needs-input, one alert per entry into a state that
// needs the user, and the runtime that needs you sorts first and is counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_scenario_is_followed_and_approved_through_act() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, quick());
    let idle = start(&fixture, "idle-one", Scenario::Steady).await;
    // The test walks the scenario with cues: a timed first phase had to outlast the
    // subscription's start (the receipt seen, the token read from the keychain, the stream
    // opened), and under the whole suite's load even five seconds were not always enough.
    let runtime = start_paced(&fixture, "approver", Scenario::Approval, CUED).await;
    let endpoint = runtime.endpoint();

    wait_state(&mut events, &endpoint, AgentState::Working).await;
    runtime.server.cue().expect("working moves on when cued");
    let asking = wait_state(&mut events, &endpoint, AgentState::NeedsApproval).await;
    let view = asking.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    let state = view.state.as_ref().unwrap();
    assert_eq!(state.title.as_deref(), Some("Run the test suite?"));
    let ids: Vec<&str> = state.actions.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["approve", "deny"]);
    assert!(state.actions[1].destructive);
    // The demo counts every open status stream, and ours is the only one: nobody else watches
    // (issue 31: the window said "1 watching" for the tray itself).
    assert_eq!(
        state.observers,
        Some(0),
        "the tray's own stream is not counted"
    );
    assert_eq!(
        asking.runtimes[0].id, endpoint,
        "the runtime that needs you sorts first"
    );
    assert_eq!(asking.counts.needs_you, 1);
    // The steady runtime is heard from too (idle), and a state is set on every running one.
    tokio::task::block_in_place(|| {
        wait_until("the idle runtime heard from", TIMEOUT, || {
            state_of(&core.snapshot(), &idle.endpoint()).filter(|(v, _)| *v == AgentState::Idle)
        })
    });

    let outcome = core
        .act(&endpoint, "approve", revision_of(&asking, &endpoint))
        .await
        .unwrap();
    assert_eq!(outcome.action, "approve");
    assert!(outcome.message.contains("Approve"), "{}", outcome.message);
    wait_state(&mut events, &endpoint, AgentState::Working).await;
    runtime.server.cue().expect("the tests run until cued");
    let done = wait_state(&mut events, &endpoint, AgentState::NeedsInput).await;
    assert_eq!(
        state_of(&done, &endpoint).unwrap().1.as_deref(),
        Some("Tests pass. Anything else?")
    );
    // The needs-input alert may be deferred by the alert interval: wait for it.
    events.drain();
    if !alerts(&events, &endpoint).contains(&AgentState::NeedsInput) {
        tokio::task::block_in_place(|| {
            events.wait_for("the needs-input alert", TIMEOUT, |e| {
                matches!(e, CoreEvent::AgentAlert { id, state: AgentState::NeedsInput, .. } if *id == endpoint)
            })
        });
    }
    assert_eq!(
        alerts(&events, &endpoint),
        [AgentState::NeedsApproval, AgentState::NeedsInput],
        "one alert per entry into a state that needs the user"
    );
    assert!(
        alerts(&events, &idle.endpoint()).is_empty(),
        "idle alerts nobody"
    );
}

// Proves: an action the latest document does not offer is refused by the core itself
// (`ActionNotOffered`, which only the core's own check produces; a runtime's 409 would be
// `ActionRefused`), so no request reaches the runtime; nor does an invalid id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_not_offered_is_refused_without_asking_the_runtime() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, quick());
    let runtime = start(&fixture, "asker", Scenario::Approval).await;
    let endpoint = runtime.endpoint();
    let asking = wait_state(&mut events, &endpoint, AgentState::NeedsApproval).await;
    let revision = revision_of(&asking, &endpoint);
    for action in ["retry", "Delete All<script>", "approve/../deny", ""] {
        match core.act(&endpoint, action, revision).await {
            Err(CoreError::ActionNotOffered { .. }) => {}
            other => panic!("{action:?}: {other:?}"),
        }
    }
    let error = core.act(&endpoint, "retry", revision).await.unwrap_err();
    // Issue 32: the refusal quotes what the runtime says now, so its reason reaches the user
    // (a Claude Code session whose terminal answered first says "Already answered in the
    // terminal"; crates/agent-hooks' board).
    let title = asking
        .runtimes
        .iter()
        .find(|r| r.endpoint.as_deref() == Some(endpoint.as_str()))
        .and_then(|r| r.state.as_ref()?.title.clone())
        .unwrap();
    let message = error.to_string();
    assert!(
        message.contains(&format!("now: it says \"{title}\"")),
        "{message}"
    );
    assert_eq!(
        CommandError::from(error).code,
        supercode_core::view::ErrorCode::Refused
    );
    // Still asking: nothing was invoked.
    let snapshot = core.snapshot();
    assert_eq!(
        state_of(&snapshot, &endpoint).map(|(v, _)| v),
        Some(AgentState::NeedsApproval)
    );
}

// Proves: a runtime without the API is `unknown`, with nothing broken (still running and
// attachable), and asking it for an action says it serves no API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_without_the_api_is_unknown_and_nothing_breaks() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, quick());
    let runtime = start(&fixture, "plain", Scenario::NoApi).await;
    let endpoint = runtime.endpoint();
    let snapshot = wait_state(&mut events, &endpoint, AgentState::Unknown).await;
    let view = snapshot.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    assert_eq!(view.status, RuntimeStatus::Running);
    assert!(view.attach.available);
    assert!(matches!(
        core.act(&endpoint, "approve", 1).await,
        Err(CoreError::NoStatusApi { .. })
    ));
    core.attach(&endpoint).await.unwrap();
    // A 404 is not asked again: no not-answering follows, however long the backoff runs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        state_of(&core.snapshot(), &endpoint).map(|(v, _)| v),
        Some(AgentState::Unknown)
    );
    assert!(alerts(&events, &endpoint).is_empty());
}

// Proves: a live runtime whose stream sends headers and then nothing becomes `not-answering`
// (its first document never came: an attempt left unanswered), with one trouble alert.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_makes_the_runtime_not_answering() {
    let fixture = Fixture::new();
    let (_core, _watch, mut events) = watched(&fixture, quick());
    let runtime = start(&fixture, "stuck", Scenario::Stall).await;
    let endpoint = runtime.endpoint();
    let snapshot = wait_state(&mut events, &endpoint, AgentState::NotAnswering).await;
    let view = snapshot.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    assert_eq!(view.status, RuntimeStatus::Running);
    let state = view.state.as_ref().unwrap();
    assert!(state.actions.is_empty());
    assert!(state.since.is_some());
    events.drain();
    if !alerts(&events, &endpoint).contains(&AgentState::NotAnswering) {
        tokio::task::block_in_place(|| {
            events.wait_for("the not-answering alert", TIMEOUT, |e| {
                matches!(
                    e,
                    CoreEvent::AgentAlert {
                        state: AgentState::NotAnswering,
                        ..
                    }
                )
            })
        });
    }
    assert_eq!(alerts(&events, &endpoint), [AgentState::NotAnswering]);
}

// Proves: 10,000 changes a second are coalesced: over two seconds the watcher publishes at most
// one snapshot per publish interval (plus a few for the start), and at most one alert per alert
// interval.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_runtime_floods_neither_snapshots_nor_alerts() {
    let fixture = Fixture::new();
    let options = quick();
    let (publish, alert) = (options.publish_interval, options.alert_interval);
    let (core, _watch, mut events) = watched(&fixture, options);
    let runtime = start(&fixture, "flooder", Scenario::Flood).await;
    let endpoint = runtime.endpoint();
    tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the flood shown", TIMEOUT, |s| {
            state_of(s, &endpoint).is_some_and(|(_, t)| t.is_some_and(|t| t.starts_with("Flood")))
        })
    });
    let from = Instant::now();
    let window = Duration::from_secs(2);
    tokio::time::sleep(window).await;
    let elapsed = from.elapsed();
    events.drain();
    let snapshots = events
        .seen
        .iter()
        .filter(|(at, e)| *at >= from && matches!(e, CoreEvent::Snapshot(_)))
        .count();
    let bound = (elapsed.as_millis() / publish.as_millis()) as usize + 2;
    assert!(
        snapshots <= bound,
        "{snapshots} snapshots in {elapsed:?} (bound {bound})"
    );
    assert!(
        snapshots >= 2,
        "the flood kept being shown ({snapshots} snapshots)"
    );
    let alerted = events
        .seen
        .iter()
        .filter(|(at, e)| *at >= from && matches!(e, CoreEvent::AgentAlert { .. }))
        .count();
    let bound = (elapsed.as_millis() / alert.as_millis()) as usize + 1;
    assert!(
        alerted <= bound,
        "{alerted} alerts in {elapsed:?} (bound {bound})"
    );
    // The core stays responsive meanwhile.
    let started = Instant::now();
    core.snapshot();
    assert!(started.elapsed() < Duration::from_secs(2));
}

// Regression (issue 15): an alert held back by the alert interval was sent with the state the
// runtime had moved on to since, not yet shown: a flood alternating working and needs-input made
// the core alert "working" (an `agent-alert` line for a state nobody is told about). Every alert
// names a state that needs the user or is trouble.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_back_alert_is_never_sent_for_a_state_that_does_not_need_you() {
    let fixture = Fixture::new();
    let (_core, _watch, mut events) = watched(&fixture, quick());
    let runtime = start(&fixture, "flooder", Scenario::Flood).await;
    let endpoint = runtime.endpoint();
    tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the flood shown", TIMEOUT, |s| {
            state_of(s, &endpoint).is_some_and(|(_, t)| t.is_some_and(|t| t.starts_with("Flood")))
        })
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    events.drain();
    let alerted = alerts(&events, &endpoint);
    assert!(
        alerted.len() >= 2,
        "the flood kept entering needs-input, so held-back alerts were due: {alerted:?}"
    );
    assert!(
        alerted.iter().all(|s| *s == AgentState::NeedsInput),
        "every alert is for needs-input, the flood's one state that needs you: {alerted:?}"
    );
}

// Proves: HTML and control characters come through as inert text (controls and bidi gone), the
// action with an invalid id is dropped, and the valid one still works; a 4 MiB document is
// refused as a failed attempt and never shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_documents_are_sanitized_or_refused() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, quick());
    let html = start(&fixture, "html", Scenario::Html).await;
    let huge = start(&fixture, "huge", Scenario::Huge).await;
    let endpoint = html.endpoint();
    let snapshot = wait_state(&mut events, &endpoint, AgentState::NeedsApproval).await;
    let state = snapshot
        .runtimes
        .iter()
        .find(|r| r.id == endpoint)
        .and_then(|r| r.state.clone())
        .unwrap();
    let texts: Vec<String> = [state.title.clone(), state.detail.clone()]
        .into_iter()
        .flatten()
        .chain(state.actions.iter().map(|a| a.label.clone()))
        .chain(state.actions.iter().filter_map(|a| a.confirm.clone()))
        .chain(state.controller.as_ref().and_then(|c| c.label.clone()))
        .collect();
    assert!(texts.len() >= 5, "{texts:?}");
    for text in &texts {
        assert!(
            !text
                .chars()
                .any(|c| (c.is_control() && c != '\n' && c != '\t')
                    || ('\u{202a}'..='\u{202e}').contains(&c)
                    || ('\u{2066}'..='\u{2069}').contains(&c)),
            "{text:?}"
        );
    }
    assert!(
        state.title.unwrap().starts_with("<img src=x"),
        "kept as text"
    );
    let ids: Vec<&str> = state.actions.iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["approve"], "the invalid id was dropped");
    core.act(&endpoint, "approve", revision_of(&snapshot, &endpoint))
        .await
        .unwrap();
    wait_state(&mut events, &endpoint, AgentState::Idle).await;

    let huge_endpoint = huge.endpoint();
    let snapshot = wait_state(&mut events, &huge_endpoint, AgentState::NotAnswering).await;
    let json = serde_json::to_string(&snapshot).unwrap();
    assert!(
        json.len() < 64 * 1024,
        "nothing huge was shown ({} bytes)",
        json.len()
    );
    assert!(!events.seen.iter().any(|(_, e)| matches!(e,
        CoreEvent::Snapshot(s) if state_of(s, &huge_endpoint).is_some_and(|(_, t)| t.is_some()))));
}

// Proves: the runtime's token and loopback address reach no snapshot, event or action error,
// in any state (approval walk, refusals, a stalled runtime, a runtime that went away).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_and_address_reach_no_snapshot_event_or_error() {
    let fixture = Fixture::new();
    let (core, watch, mut events) = watched(&fixture, quick());
    let approval = start(&fixture, "canary-approval", Scenario::Approval).await;
    let stall = start(&fixture, "canary-stall", Scenario::Stall).await;
    let secrets = [CANARY.to_owned(), approval.address(), stall.address()];
    let mut outputs = Vec::new();
    // Both states last, so one snapshot shows both.
    let (_, both) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot("asking and not answering", TIMEOUT, |s| {
            state_of(s, &approval.endpoint()).is_some_and(|(v, _)| v == AgentState::NeedsApproval)
                && state_of(s, &stall.endpoint())
                    .is_some_and(|(v, _)| v == AgentState::NotAnswering)
        })
    });
    for (id, action) in [
        (approval.endpoint(), "deny"),
        (approval.endpoint(), "deny"),
        (approval.endpoint(), "nope"),
        (stall.endpoint(), "approve"),
    ] {
        let revision = both.runtimes.iter().find(|r| r.id == id).unwrap();
        let revision = revision
            .state
            .as_ref()
            .and_then(|s| s.revision)
            .unwrap_or(0);
        match core.act(&id, action, revision).await {
            Ok(outcome) => outputs.push(format!("{outcome:?}")),
            Err(error) => {
                outputs.push(format!("{error:?} {error}"));
                outputs.push(serde_json::to_string(&CommandError::from(error)).unwrap());
            }
        }
    }
    outputs.push(serde_json::to_string(&core.snapshot()).unwrap());
    outputs.push(serde_json::to_string(&core.snapshot_with_states().await).unwrap());
    stall.server.shutdown().await;
    drop(stall.registration);
    tokio::time::sleep(Duration::from_millis(300)).await;
    drop(watch);
    events.drain();
    outputs.extend(events.seen.iter().map(|(_, e)| match e {
        CoreEvent::Snapshot(s) => serde_json::to_string(&**s).unwrap(),
        other => format!("{other:?}"),
    }));
    assert!(outputs.len() > 8);
    assert!(outputs.iter().any(|o| o.contains("canary-approval")));
    for output in &outputs {
        for secret in &secrets {
            assert!(
                !output.contains(secret.as_str()),
                "a secret leaked into: {output}"
            );
        }
    }
}

// Proves: without subscriptions (the CLI), one concurrent read gives every running runtime its
// state, `unknown` for one without the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_read_gives_every_running_runtime_its_state() {
    let fixture = Fixture::new();
    let core = fixture.core();
    let steady = start(&fixture, "steady", Scenario::Steady).await;
    let plain = start(&fixture, "plain", Scenario::NoApi).await;
    let snapshot = core.snapshot_with_states().await;
    assert_eq!(
        state_of(&snapshot, &steady.endpoint()),
        Some((AgentState::Idle, Some("Waiting for work".into())))
    );
    assert_eq!(
        state_of(&snapshot, &plain.endpoint()).map(|(v, _)| v),
        Some(AgentState::Unknown)
    );
    // Without a watcher, plain snapshots say unknown rather than guess.
    assert_eq!(
        state_of(&core.snapshot(), &steady.endpoint()).map(|(v, _)| v),
        Some(AgentState::Unknown)
    );
    // And `offered` and `act` work without a subscription: they read the document first.
    assert!(matches!(
        core.offered(&steady.endpoint(), "approve").await,
        Err(CoreError::ActionNotOffered { .. })
    ));
    let revision = revision_of(&snapshot, &steady.endpoint());
    assert!(matches!(
        core.act(&steady.endpoint(), "approve", revision).await,
        Err(CoreError::ActionNotOffered { .. })
    ));
}

/// A loopback address nothing listens at (a port the kernel just handed out, closed again).
fn free_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The state a one-shot read (`list`) gives the runtime at `endpoint`, and how long it took.
async fn read_once(core: &Supercode, endpoint: &str) -> (AgentStateView, Duration) {
    let started = Instant::now();
    let snapshot = core.snapshot_with_states().await;
    let took = started.elapsed();
    let runtime = snapshot.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    assert_eq!(
        runtime.status,
        RuntimeStatus::Running,
        "the process is alive"
    );
    (runtime.state.clone().unwrap(), took)
}

// Issue 30 (one not-answering rule): a runtime whose process lives but where nothing listens
// (its HTTP server restarting, or gone) is judged by the subscriptions' rule: one attempt turned
// away can be a restart, so a one-shot read (`list`), which makes one, shows its state unknown
// with why, at once, and not `not-answering` on the first refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_read_of_a_runtime_turned_away_once_is_unknown_with_why() {
    let fixture = Fixture::new();
    let core = fixture.core();
    let registration = register_at(fixture.receipts(), "deaf", CANARY, None, free_address());
    let endpoint = registration.endpoint().to_string();
    let (state, took) = read_once(&core, &endpoint).await;
    assert_eq!(state.value, AgentState::Unknown, "{:?}", state.detail);
    let detail = state.detail.unwrap_or_default();
    assert!(detail.contains("may be restarting"), "{detail}");
    assert!(!detail.contains(CANARY));
    // No waiting for attempts it does not make (a loaded machine's slack for the inventory).
    assert!(took < Duration::from_secs(2), "the read took {took:?}");
}

// Issue 30: a runtime that takes the request and says nothing (a stopped process's kernel queues
// the connection) is `not-answering` once the one-shot read's deadline passes, the read's whole
// wait for an answer, as a subscription's unanswered request is; the read ends then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_read_finds_a_silent_runtime_not_answering_at_its_deadline() {
    const DEADLINE: Duration = Duration::from_millis(800);
    let fixture = Fixture::new();
    let core = fixture.core().with_agent_options(AgentOptions {
        one_shot_timeout: DEADLINE,
        ..AgentOptions::default()
    });
    // Listening (this process, the receipt's), never accepting: the kernel queues the connection.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = silent.local_addr().unwrap();
    let registration = register_at(fixture.receipts(), "silent", CANARY, None, address);
    let endpoint = registration.endpoint().to_string();
    let (state, took) = read_once(&core, &endpoint).await;
    assert_eq!(state.value, AgentState::NotAnswering);
    assert!(
        state
            .detail
            .as_deref()
            .unwrap_or_default()
            .contains("did not answer within"),
        "{:?}",
        state.detail
    );
    assert!(took >= DEADLINE, "decided after {took:?}");
    assert!(
        took < DEADLINE + Duration::from_secs(3),
        "the read took {took:?}"
    );
}

// Regression (issue 29): a runtime answering its stream with blank lines (valid SSE that
// completes no event, in 512 KiB writes) pinned the watcher's thread, which runs the inventory
// and every subscription, in a line reader quadratic in the frame: another runtime's prompt
// never showed. Now the flood is parsed linearly, a slice per turn, and its stream is cut past
// the budget of bytes without a document, so the well-behaved runtime's change shows within
// its usual latency, the inventory lists a new runtime at once, and the flooder keeps showing its
// last document. Production timings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtime_flooding_its_stream_with_blank_lines_stalls_no_other_runtime() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, AgentOptions::default());
    let flooder = start(&fixture, "blank-flooder", Scenario::BlankLines).await;
    // Its first phase outlasts the subscription's start under load (see the approval test).
    let asker = start_paced(
        &fixture,
        "asker",
        Scenario::Approval,
        Duration::from_secs(5),
    )
    .await;
    let (flooder, asker_id) = (flooder.endpoint(), asker.endpoint());
    tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the flooder's first document shown", TIMEOUT, |s| {
            state_of(s, &flooder).is_some_and(|(_, t)| t.as_deref() == Some("Sending blank lines"))
        })
    });
    wait_state(&mut events, &asker_id, AgentState::NeedsApproval).await;

    // Approved at the runtime itself, so that the time measured is the stream's alone.
    let asked = Instant::now();
    let answer = reqwest::Client::new()
        .post(format!(
            "http://{}/supercode/v1/actions/approve",
            asker.address()
        ))
        .bearer_auth(CANARY)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);
    let (shown, _) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the approval's effect shown", TIMEOUT, |s| {
            state_of(s, &asker_id).is_some_and(|(v, _)| v == AgentState::Working)
        })
    });
    let latency = shown.saturating_duration_since(asked);
    // Loopback and one watcher pass take milliseconds; two seconds is the generous CI bound
    // (the old reader never showed it within a minute).
    assert!(
        latency < Duration::from_secs(2),
        "the approval showed {latency:?} after it was sent"
    );
    // Nor is the inventory held up: a runtime registered during the flood is listed at once.
    let registered = Instant::now();
    let late = start(&fixture, "late", Scenario::NoApi).await;
    let late_id = late.endpoint();
    let (listed, _) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the late runtime listed", TIMEOUT, |s| {
            s.runtimes.iter().any(|r| r.id == late_id)
        })
    });
    let latency = listed.saturating_duration_since(registered);
    assert!(
        latency < Duration::from_secs(2),
        "the runtime registered during the flood was listed after {latency:?}"
    );
    // The flooder is still shown from its documents (each reconnection sends one first).
    assert_eq!(
        state_of(&core.snapshot(), &flooder),
        Some((AgentState::Working, Some("Sending blank lines".into())))
    );
}

// Issue 32: a tool's start is followed within milliseconds by its approval prompt, and the
// publish interval (which coalesces a runtime's changes) must not hold the prompt back. With an
// interval of seconds, the prompt that comes right after `working` was shown still shows at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_comes_to_need_you_is_shown_at_once_within_the_publish_interval() {
    const INTERVAL: Duration = Duration::from_secs(3);
    let fixture = Fixture::new();
    let options = AgentOptions {
        publish_interval: INTERVAL,
        ..quick()
    };
    let (_core, _watch, mut events) = watched(&fixture, options);
    let runtime = start_paced(&fixture, "asker", Scenario::Approval, CUED).await;
    let endpoint = runtime.endpoint();
    wait_state(&mut events, &endpoint, AgentState::Working).await;
    let asked = Instant::now();
    runtime.server.cue().expect("working moves on when cued");
    let (shown, _) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the prompt shown", TIMEOUT, |s| {
            state_of(s, &endpoint).is_some_and(|(v, _)| v == AgentState::NeedsApproval)
        })
    });
    let latency = shown.saturating_duration_since(asked);
    assert!(
        latency < INTERVAL / 2,
        "the prompt showed {latency:?} after it was asked, held back by the publish interval"
    );
}

// Regression (issue 29), the attacker's own runtime: a raw socket that answers the stream with a
// `Content-Length` of a terabyte and then nothing but blank lines, no document ever. Each attempt
// is cut at the budget of bytes without a document, and after three the runtime is shown
// `not-answering` with that reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_of_blank_lines_alone_makes_the_runtime_not_answering_with_the_reason() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let fixture = Fixture::new();
    // The API's first-document timeout, so the budget is what ends each attempt.
    let options = AgentOptions {
        first_document_timeout: AgentOptions::default().first_document_timeout,
        ..quick()
    };
    let (_core, _watch, mut events) = watched(&fixture, options);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                // The request head (the client sends no body), then the answer.
                let mut head = Vec::new();
                let mut byte = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut byte).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&byte[..n]),
                    }
                }
                let answer = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                              content-length: 1099511627776\r\n\r\n";
                if socket.write_all(answer.as_bytes()).await.is_err() {
                    return;
                }
                let blank = vec![b'\n'; 512 * 1024];
                while socket.write_all(&blank).await.is_ok() {}
            });
        }
    });
    let registration = register_at(fixture.receipts(), "raw-flooder", CANARY, None, address);
    let endpoint = registration.endpoint().to_string();
    let snapshot = wait_state(&mut events, &endpoint, AgentState::NotAnswering).await;
    let detail = snapshot
        .runtimes
        .iter()
        .find(|r| r.id == endpoint)
        .and_then(|r| r.state.as_ref()?.detail.clone())
        .unwrap_or_default();
    assert!(
        detail.contains("without a status document"),
        "the reason is shown: {detail:?}"
    );
    server.abort();
}

/// A raw-socket runtime serving `documents` (see `prompt_runtime`), registered as `name`.
fn start_prompts(
    fixture: &Fixture,
    name: &str,
    documents: Vec<serde_json::Value>,
) -> (PromptRuntime, LiveRuntimeRegistration) {
    let runtime = PromptRuntime::start(CANARY, documents);
    let registration = register_at(fixture.receipts(), name, CANARY, None, runtime.address());
    (runtime, registration)
}

fn is_prompt_changed(result: &Result<ActOutcome, CoreError>) -> bool {
    matches!(
        result,
        Err(CoreError::Refused(Refusal::PromptChanged { .. }))
    )
}

// Issue 29, the CLI's road (no subscriptions): the runtime answers the first look with "Run the
// unit tests?" (nothing to ask) and every later one with "Drop the production database?"
// (destructive, asked). An action chosen from the first look is refused by the core, with the
// shells' `refused` code, and nothing reaches the runtime; looking again gives the new question,
// and acting on that look sends its revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_an_action_looked_up_before_the_prompt_changed_is_refused_and_never_sent() {
    let fixture = Fixture::new();
    let core = fixture.core();
    let (runtime, registration) = start_prompts(&fixture, "switcher", bait_and_switch());
    let endpoint = registration.endpoint().to_string();
    runtime.advance_after_gets(1);

    let (offered, revision) = core.offered(&endpoint, "approve").await.unwrap();
    assert_eq!((offered.confirm.as_deref(), revision), (None, 1));
    let result = core.act(&endpoint, "approve", revision).await;
    assert!(is_prompt_changed(&result), "{result:?}");
    let error = CommandError::from(result.unwrap_err());
    assert_eq!(error.code, supercode_core::view::ErrorCode::Refused);
    assert!(error.message.contains("look again"), "{}", error.message);
    assert_eq!(runtime.posted(), [], "nothing reached the runtime");

    let (offered, revision) = core.offered(&endpoint, "approve").await.unwrap();
    assert_eq!(
        (offered.confirm.as_deref(), revision),
        (Some("Drop the production database?"), 2),
        "the new prompt is asked about, decided by the core"
    );
    core.act(&endpoint, "approve", revision).await.unwrap();
    assert_eq!(
        runtime.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(2)
        }]
    );
}

// Issue 29, the tray's and the window's road (a subscription): what the shells show carries its
// revision and whether to ask; once the runtime moves on, an action chosen from what was shown
// before is refused without reaching the runtime, and the view shows the new prompt, asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_an_action_chosen_from_a_shown_prompt_is_refused_once_the_prompt_changed() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, quick());
    let (runtime, registration) = start_prompts(&fixture, "switcher", bait_and_switch());
    let endpoint = registration.endpoint().to_string();
    let shown = wait_state(&mut events, &endpoint, AgentState::NeedsApproval).await;
    let state = shown.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    let state = state.state.as_ref().unwrap();
    assert_eq!(state.revision, Some(1));
    assert_eq!(
        state.actions[0].confirm, None,
        "nothing to ask at revision 1"
    );

    runtime.advance();
    let (_, changed) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot("revision 2 shown", TIMEOUT, |s| {
            s.runtimes
                .iter()
                .find(|r| r.id == endpoint)
                .and_then(|r| r.state.as_ref())
                .is_some_and(|s| s.revision == Some(2))
        })
    });
    let result = core.act(&endpoint, "approve", 1).await;
    assert!(is_prompt_changed(&result), "{result:?}");
    assert_eq!(runtime.posted(), [], "nothing reached the runtime");
    let state = changed.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    let state = state.state.as_ref().unwrap();
    assert_eq!(
        state.title.as_deref(),
        Some("Drop the production database?")
    );
    assert_eq!(
        state.actions[0].confirm.as_deref(),
        Some("Drop the production database?")
    );
    core.act(&endpoint, "approve", 2).await.unwrap();
    assert_eq!(
        runtime.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(2)
        }]
    );
}

// Issue 29: a change that asks nothing new of the user (here the observers) does not refuse an
// action chosen from before it, and the revision the user was shown is the one sent (the
// runtime keeps the same rule, `stale-revision`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_a_change_of_what_is_not_asked_keeps_the_shown_action_valid() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, quick());
    let first = live_runtime::test_support::prompt_runtime::prompt(
        4,
        "Run the unit tests?",
        &[("approve", "Approve", false, None)],
    );
    let mut watched_more = first.clone();
    watched_more["revision"] = 5.into();
    watched_more["observers"] = 2.into();
    let (runtime, registration) = start_prompts(&fixture, "watched", vec![first, watched_more]);
    let endpoint = registration.endpoint().to_string();
    let shown = wait_state(&mut events, &endpoint, AgentState::NeedsApproval).await;
    assert_eq!(revision_of(&shown, &endpoint), 4);
    runtime.advance();
    tokio::task::block_in_place(|| {
        events.wait_for_snapshot("revision 5 shown", TIMEOUT, |s| {
            s.runtimes
                .iter()
                .find(|r| r.id == endpoint)
                .and_then(|r| r.state.as_ref())
                .is_some_and(|s| s.revision == Some(5))
        })
    });
    core.act(&endpoint, "approve", 4).await.unwrap();
    assert_eq!(
        runtime.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(4)
        }]
    );
}

// Issue 29: when the tray has not heard of the change yet (the runtime moved on without telling
// its stream), the action goes out with the revision the user was shown, never a later one, and
// the runtime's `stale-revision` answer is told as the same "the prompt changed; look again".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_a_runtime_refusing_the_shown_revision_is_told_as_a_changed_prompt() {
    let fixture = Fixture::new();
    let (core, _watch, mut events) = watched(&fixture, quick());
    let (runtime, registration) = start_prompts(&fixture, "switcher", bait_and_switch());
    let endpoint = registration.endpoint().to_string();
    runtime.keep_stale_revision();
    let shown = wait_state(&mut events, &endpoint, AgentState::NeedsApproval).await;
    assert_eq!(revision_of(&shown, &endpoint), 1);
    runtime.advance_unannounced();
    let result = core.act(&endpoint, "approve", 1).await;
    assert!(is_prompt_changed(&result), "{result:?}");
    assert_eq!(
        runtime.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(1)
        }],
        "the revision shown, which the runtime refused"
    );
}

// Issue 29, the CLI's road: a change between its look and its act that asks nothing new (here
// another client starting to watch) does not refuse the act, which sends the revision looked at.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_29_a_change_of_what_is_not_asked_after_a_look_keeps_the_act_valid() {
    let fixture = Fixture::new();
    let core = fixture.core();
    let first = live_runtime::test_support::prompt_runtime::prompt(
        4,
        "Run the unit tests?",
        &[("approve", "Approve", false, None)],
    );
    let mut watched_more = first.clone();
    watched_more["revision"] = 5.into();
    watched_more["observers"] = 2.into();
    let (runtime, registration) = start_prompts(&fixture, "watched", vec![first, watched_more]);
    let endpoint = registration.endpoint().to_string();
    runtime.advance_after_gets(1);
    let (_, revision) = core.offered(&endpoint, "approve").await.unwrap();
    assert_eq!(revision, 4);
    core.act(&endpoint, "approve", revision).await.unwrap();
    assert_eq!(runtime.revision(), 5, "the act read the changed document");
    assert_eq!(
        runtime.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(4)
        }]
    );
}

/// A real runtime process (the app binary's `demo-runtime`), continued and killed however the
/// test ends.
struct RuntimeProcess(std::process::Child);

impl RuntimeProcess {
    fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_child(&self.0);
        rustix::process::kill_process(pid, signal).unwrap();
    }
}

impl Drop for RuntimeProcess {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.0);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::CONT);
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The longest a stopped runtime took to show `not-answering` before issue 31 (the API's full
/// 45 s of silence, less what was left of its last keep-alive interval).
const OLD_NOT_ANSWERING_AFTER: Duration = Duration::from_secs(34);
/// How soon a continued runtime must be itself again: its pending reconnection is answered at
/// once; the rest is a loaded machine's slack (it took 17 s before issue 31).
const BACK_WITHIN: Duration = Duration::from_secs(5);

// Proves (issue 31): a real runtime process stopped with SIGSTOP (alive, its open stream silent,
// its kernel still queueing connections) shows `not-answering`, with the reason, within the
// documented time (20 s without a byte, then a reconnection unanswered for 5 s), with the API's
// own timings; and is itself again as soon as it is continued, its pending reconnection answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigstopped_runtime_is_not_answering_in_the_documented_time_and_back_at_once_issue_31() {
    let Some(bin) = crate::support::tray_binary("a_sigstopped_runtime_is_not_answering") else {
        return;
    };
    let fixture = Fixture::new();
    let (_core, _watch, mut events) = watched(&fixture, AgentOptions::default());
    let mut child = std::process::Command::new(bin)
        .args(["demo-runtime", "--name", "frozen", "--scenario", "approval"])
        .current_dir(fixture.workspace())
        .envs(fixture.child_env())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let endpoint = format!(
        "lre_{}",
        crate::support::first_line_with(&mut child, "lre_")
    );
    let runtime = RuntimeProcess(child);
    wait_state(&mut events, &endpoint, AgentState::NeedsApproval).await;

    runtime.signal(rustix::process::Signal::STOP);
    let stopped = Instant::now();
    let (at, shown) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot(
            "the stopped runtime not answering",
            OLD_NOT_ANSWERING_AFTER,
            |s| state_of(s, &endpoint).is_some_and(|(v, _)| v == AgentState::NotAnswering),
        )
    });
    let took = at - stopped;
    // 15 s at most since its last keep-alive, 20 s of silence, a 5 s reconnection.
    assert!(
        took < OLD_NOT_ANSWERING_AFTER,
        "not-answering after {took:?}"
    );
    let view = shown.runtimes.iter().find(|r| r.id == endpoint).unwrap();
    let reason = view
        .state
        .as_ref()
        .unwrap()
        .detail
        .clone()
        .unwrap_or_default();
    assert!(!reason.is_empty(), "not-answering says why");
    assert_eq!(view.status, RuntimeStatus::Running, "the process is alive");

    runtime.signal(rustix::process::Signal::CONT);
    let continued = Instant::now();
    let (at, _) = tokio::task::block_in_place(|| {
        events.wait_for_snapshot("the continued runtime asking again", TIMEOUT, |s| {
            state_of(s, &endpoint).is_some_and(|(v, _)| v == AgentState::NeedsApproval)
        })
    });
    let back = at - continued;
    assert!(back < BACK_WITHIN, "itself again after {back:?}");
    eprintln!("not-answering {took:?} after SIGSTOP ({reason}); back {back:?} after SIGCONT");
    // The same unchanged question after a stall is not alerted again (an alert held back would
    // have come within the alert interval).
    tokio::time::sleep(supercode_core::agents::ALERT_INTERVAL + Duration::from_millis(500)).await;
    events.drain();
    let asked = alerts(&events, &endpoint)
        .iter()
        .filter(|s| **s == AgentState::NeedsApproval)
        .count();
    assert_eq!(asked, 1, "{:?}", alerts(&events, &endpoint));
}
