//! The runtime status API (docs/runtime-api.md) against a real served demo runtime: every test
//! waits on the stream's own events, never on sleeps.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use demo_runtime::{
    ActionCall, DemoConfig, Scenario, BLANK_LINES_WRITE_BYTES, HUGE_DETAIL_BYTES, STATUS_CARD_PATH,
};
use futures_util::{Stream, StreamExt};
use live_runtime::Sensitive;
use serde_json::{json, Value};
use tokio::time::timeout;

use crate::support::{client, get_authed, serve_config, start_with, STEP_TIMEOUT, TOKEN};

const STATUS: &str = "/supercode/v1/status";
const STREAM: &str = "/supercode/v1/status/stream";

async fn get_status(base: &str) -> Value {
    let response = get_authed(base, STATUS).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    response.json().await.unwrap()
}

/// POSTs action `id` (with `body` as JSON, if any) and returns the status and JSON body.
async fn act(base: &str, id: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = client()
        .post(format!("{base}/supercode/v1/actions/{id}"))
        .bearer_auth(TOKEN);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = timeout(STEP_TIMEOUT, request.send())
        .await
        .unwrap()
        .unwrap();
    let status = response.status().as_u16();
    assert_eq!(response.headers()["content-type"], "application/json");
    (status, response.json().await.unwrap())
}

#[derive(Debug)]
enum Frame {
    Status { id: String, document: Value },
    Comment(String),
}

/// A client of the status stream that parses SSE frames as the API documents them.
struct StatusStream {
    body: Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>,
    buffer: Vec<u8>,
}

impl StatusStream {
    async fn open(base: &str) -> Self {
        let response = get_authed(base, STREAM).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self {
            body: Box::pin(response.bytes_stream()),
            buffer: Vec::new(),
        }
    }

    /// The next frame, or `None` if none arrives within `within`.
    async fn frame_within(&mut self, within: Duration) -> Option<Frame> {
        timeout(within, async {
            loop {
                if let Some(end) = self.buffer.windows(2).position(|w| w == b"\n\n") {
                    let frame: Vec<u8> = self.buffer.drain(..end + 2).collect();
                    return parse_frame(std::str::from_utf8(&frame[..end]).unwrap());
                }
                let chunk = self.body.next().await.expect("stream open").unwrap();
                self.buffer.extend_from_slice(&chunk);
            }
        })
        .await
        .ok()
    }

    async fn frame(&mut self) -> Frame {
        self.frame_within(STEP_TIMEOUT)
            .await
            .expect("a frame arrives in time")
    }

    /// The next status document, skipping keep-alives; checks `id` is its revision.
    async fn document(&mut self) -> Value {
        // One deadline for the whole wait: keep-alives must not keep a missing document waited on.
        timeout(STEP_TIMEOUT, async {
            loop {
                if let Frame::Status { id, document } = self.frame().await {
                    assert_eq!(id, document["revision"].to_string(), "id is the revision");
                    return document;
                }
            }
        })
        .await
        .expect("a status document arrives in time")
    }

    /// The next document whose state or title differs from `current`'s (observer changes are
    /// skipped).
    async fn next_state(&mut self, current: &Value) -> Value {
        timeout(STEP_TIMEOUT, async {
            loop {
                let document = self.document().await;
                assert!(document["revision"].as_u64() > current["revision"].as_u64());
                if document["state"] != current["state"] || document["title"] != current["title"] {
                    return document;
                }
            }
        })
        .await
        .expect("the next state arrives in time")
    }
}

fn parse_frame(text: &str) -> Frame {
    let (mut event, mut id, mut data) = (None, None, Vec::new());
    for line in text.split('\n') {
        if let Some(comment) = line.strip_prefix(':') {
            return Frame::Comment(comment.trim().to_owned());
        } else if let Some(value) = line.strip_prefix("event: ") {
            event = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("id: ") {
            id = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("data: ") {
            data.push(value);
        } else {
            panic!("unexpected SSE line {line:?}");
        }
    }
    assert_eq!(event.as_deref(), Some("status"), "every event is `status`");
    Frame::Status {
        id: id.expect("an id"),
        document: serde_json::from_str(&data.join("\n")).expect("data is the JSON document"),
    }
}

fn state_and_title(document: &Value) -> (&str, &str) {
    (
        document["state"].as_str().unwrap(),
        document["title"].as_str().unwrap(),
    )
}

#[tokio::test]
async fn approval_scenario_walks_every_state_in_order_on_the_stream() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    let mut stream = StatusStream::open(&base).await;

    let working = stream.document().await;
    assert_eq!(working["version"], 1);
    assert_eq!(
        state_and_title(&working),
        ("working", "Running the test suite")
    );
    assert_eq!(working["actions"], json!([]));
    assert_eq!(working["controller"], json!({ "kind": "none" }));
    assert_eq!(working["observers"], 1, "this stream is the one observer");

    let asking = stream.next_state(&working).await;
    assert_eq!(
        state_and_title(&asking),
        ("needs-approval", "Run the test suite?")
    );
    assert_eq!(asking["detail"], "cargo test --workspace");
    assert_eq!(
        asking["actions"],
        json!([
            { "id": "approve", "label": "Approve", "destructive": false },
            { "id": "deny", "label": "Deny", "destructive": true,
              "confirm": "Deny running the test suite?" },
        ])
    );
    assert_ne!(
        asking["since"], working["since"],
        "since moves with the state"
    );
    time::OffsetDateTime::parse(
        asking["since"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("since is RFC 3339");

    let (status, _) = act(
        &base,
        "approve",
        Some(json!({ "revision": asking["revision"] })),
    )
    .await;
    assert_eq!(status, 202);

    let running = stream.next_state(&asking).await;
    assert_eq!(
        state_and_title(&running),
        ("working", "Running the test suite")
    );
    assert_eq!(running["actions"], json!([]));
    let done = stream.next_state(&running).await;
    assert_eq!(
        state_and_title(&done),
        ("needs-input", "Tests pass. Anything else?")
    );
    assert_eq!(done["actions"], json!([]));
}

// A lengthened phase delay (`--phase-delay-ms`) holds each self-driven step that long, and no
// longer: the e2e tests rely on it to look at every step of the approval walk.
#[tokio::test]
async fn a_configured_phase_delay_sets_how_long_working_lasts_before_the_prompt() {
    const DELAY: Duration = Duration::from_millis(1_500);
    let mut config = DemoConfig::new("demo-status", Sensitive::new(TOKEN.to_owned()));
    config.scenario = Scenario::Approval;
    config.phase_delay = DELAY;
    let (_server, base) = serve_config(config).await;
    let started = Instant::now();
    let mut stream = StatusStream::open(&base).await;
    let working = stream.document().await;
    assert_eq!(working["state"], "working");
    let asking = stream.next_state(&working).await;
    let waited = started.elapsed();
    assert_eq!(asking["state"], "needs-approval");
    assert!(
        waited >= DELAY,
        "the prompt came after {waited:?}, before the {DELAY:?} delay"
    );
}

// A cue ends a timed step's wait at once (a test walks the scenario at its own pace), and
// does nothing where the scenario waits for the user.
#[tokio::test]
async fn a_cue_moves_a_timed_step_on_at_once_and_not_a_question() {
    let mut config = DemoConfig::new("demo-status", Sensitive::new(TOKEN.to_owned()));
    config.scenario = Scenario::Approval;
    config.phase_delay = Duration::from_secs(3600);
    let (server, base) = serve_config(config).await;
    let mut stream = StatusStream::open(&base).await;
    let working = stream.document().await;
    assert_eq!(working["state"], "working");
    let cued = server.cue().expect("working waits for its delay");
    let asking = stream.next_state(&working).await;
    assert_eq!(asking["state"], "needs-approval");
    assert_eq!(asking["revision"], cued, "cue() gives the new revision");
    assert_eq!(
        server.cue(),
        None,
        "a question waits for the user, not a cue"
    );
    assert_eq!(get_status(&base).await["revision"], asking["revision"]);
}

#[tokio::test]
async fn deny_leads_to_needs_input_asking_what_to_do_instead() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    let mut stream = StatusStream::open(&base).await;
    let working = stream.document().await;
    let asking = stream.next_state(&working).await;
    assert_eq!(act(&base, "deny", None).await.0, 202);
    let denied = stream.next_state(&asking).await;
    assert_eq!(
        state_and_title(&denied),
        ("needs-input", "Denied. What should I do instead?")
    );
    assert_eq!(
        act(&base, "approve", None).await.0,
        409,
        "nothing to approve after a deny"
    );
}

#[tokio::test]
async fn approve_is_accepted_only_while_offered_and_refused_after() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    let mut stream = StatusStream::open(&base).await;
    let working = stream.document().await;

    let (status, body) = act(&base, "approve", None).await;
    assert_eq!(status, 409, "not offered yet while working: {body}");
    assert_eq!(body["error"]["code"], "not-offered");

    let asking = stream.next_state(&working).await;
    let (status, body) = act(&base, "approve", None).await;
    assert_eq!(status, 202);
    assert_eq!(
        body,
        json!({ "action": "approve", "revision": asking["revision"] })
    );

    // The prompt is gone the moment the first approve is accepted.
    for id in ["approve", "deny"] {
        let (status, body) = act(&base, id, None).await;
        assert_eq!(status, 409, "{id} after approve");
        assert_eq!(body["error"]["code"], "not-offered");
        assert!(body["error"]["message"].as_str().unwrap().contains(id));
    }
    let running = stream.next_state(&asking).await;
    assert_eq!(running["state"], "working");
}

#[tokio::test]
async fn a_click_on_an_older_prompt_is_refused_but_a_new_observer_does_not_make_it_stale() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    let mut stream = StatusStream::open(&base).await;
    let working = stream.document().await;
    let asking = stream.next_state(&working).await;
    let offered = asking["revision"].as_u64().unwrap();

    for revision in [working["revision"].as_u64().unwrap(), offered + 1000] {
        let (status, body) = act(&base, "approve", Some(json!({ "revision": revision }))).await;
        assert_eq!(status, 409, "revision {revision}");
        assert_eq!(body["error"]["code"], "stale-revision");
    }
    assert_eq!(
        get_status(&base).await["state"],
        "needs-approval",
        "refusals change nothing"
    );

    // A second watcher bumps the revision, but the prompt the user saw is the same one.
    let mut second = StatusStream::open(&base).await;
    let watched = second.document().await;
    assert_eq!(watched["observers"], 2);
    assert!(watched["revision"].as_u64().unwrap() > offered);
    let (status, _) = act(&base, "approve", Some(json!({ "revision": offered }))).await;
    assert_eq!(status, 202);
    assert_eq!(stream.next_state(&asking).await["state"], "working");
}

/// A `switch` runtime whose every action call is kept, in the order answered.
async fn start_switch() -> (
    demo_runtime::DemoServer,
    String,
    Arc<Mutex<Vec<ActionCall>>>,
) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let mut config = DemoConfig::new("demo-status", Sensitive::new(TOKEN.to_owned()));
    config.scenario = Scenario::Switch;
    let kept = Arc::clone(&calls);
    config.on_action = Some(Arc::new(move |call: &ActionCall| {
        kept.lock().unwrap().push(call.clone());
    }));
    let (server, base) = serve_config(config).await;
    (server, base, calls)
}

fn call(action: Option<&str>, revision: Option<u64>, outcome: &'static str) -> ActionCall {
    ActionCall {
        action: action.map(str::to_owned),
        revision,
        outcome,
    }
}

// Issue 29's end-to-end tests rest on this: `switch` asks a harmless question until cued, then a
// destructive one at a new revision (and no cue moves it further); an approve chosen from the
// first question is refused as stale and changes nothing, one chosen from the second runs it; and
// every call is told once answered, so a test can see what reached the runtime.
#[tokio::test]
async fn switch_changes_its_question_on_a_cue_and_tells_every_action_call() {
    let (server, base, calls) = start_switch().await;
    let mut stream = StatusStream::open(&base).await;
    let asking = stream.document().await;
    assert_eq!(
        state_and_title(&asking),
        ("needs-approval", "Run the unit tests?")
    );
    assert_eq!(
        asking["actions"][0],
        json!({ "id": "approve", "label": "Approve", "destructive": false }),
        "the first question's approve asks nothing first"
    );
    let first = asking["revision"].as_u64().unwrap();

    let cued = server.cue().expect("switch waits for a cue");
    let switched = stream.next_state(&asking).await;
    assert_eq!(switched["revision"], cued, "cue() gives the new revision");
    assert_eq!(
        state_and_title(&switched),
        ("needs-approval", "Drop the production database?")
    );
    assert_eq!(
        switched["actions"][0],
        json!({ "id": "approve", "label": "Approve", "destructive": true,
                "confirm": "Drop the production database? This cannot be undone." })
    );
    assert_eq!(server.cue(), None, "nothing more to cue");

    let (status, body) = act(&base, "approve", Some(json!({ "revision": first }))).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "stale-revision");
    assert_eq!(
        get_status(&base).await["title"],
        "Drop the production database?",
        "the refusal changed nothing"
    );
    let (status, _) = act(&base, "approve", Some(json!({ "revision": cued }))).await;
    assert_eq!(status, 202);
    assert_eq!(
        state_and_title(&stream.next_state(&switched).await),
        ("working", "Dropping the production database")
    );
    assert_eq!(act(&base, "Approve", None).await.0, 400);
    assert_eq!(
        *calls.lock().unwrap(),
        [
            call(Some("approve"), Some(first), "stale-revision"),
            call(Some("approve"), Some(cued), "accepted"),
            call(None, None, "invalid-action-id"),
        ]
    );
}

#[tokio::test]
async fn switch_approved_before_its_cue_runs_the_unit_tests_and_a_cue_then_does_nothing() {
    let (server, base, calls) = start_switch().await;
    let mut stream = StatusStream::open(&base).await;
    let asking = stream.document().await;
    assert_eq!(act(&base, "approve", None).await.0, 202);
    let running = stream.next_state(&asking).await;
    assert_eq!(
        state_and_title(&running),
        ("working", "Running the unit tests")
    );
    assert_eq!(
        server.cue(),
        None,
        "the cue switches only the first question"
    );
    assert_eq!(get_status(&base).await["revision"], running["revision"]);
    assert_eq!(
        *calls.lock().unwrap(),
        [call(Some("approve"), None, "accepted")]
    );
}

#[tokio::test]
async fn malformed_action_calls_are_bad_requests() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    for body in [
        "{\"revision\": -1}",
        "not json",
        "[1]",
        "{\"revision\": \"3\"}",
    ] {
        let response = client()
            .post(format!("{base}/supercode/v1/actions/approve"))
            .bearer_auth(TOKEN)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["code"], "bad-request");
    }
    let (status, body) = act(&base, "Approve", None).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("invalid-action-id"))
    );
}

#[tokio::test]
async fn status_routes_refuse_missing_or_wrong_tokens_and_never_send_the_document() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    for auth in [
        None,
        Some("Bearer wrong-token-value"),
        Some(&*format!("Basic {TOKEN}")),
    ] {
        for (method, path) in [
            ("GET", STATUS),
            ("GET", STREAM),
            ("POST", "/supercode/v1/actions/approve"),
        ] {
            let mut request = client().request(method.parse().unwrap(), format!("{base}{path}"));
            if let Some(auth) = auth {
                request = request.header("authorization", auth);
            }
            let response = timeout(STEP_TIMEOUT, request.send())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(response.status(), 401, "{method} {path} with {auth:?}");
            let body = response.text().await.unwrap();
            assert!(!body.contains("Running the test suite") && !body.contains("revision"));
            assert!(!body.contains("wrong-token-value") && !body.contains(TOKEN));
        }
    }
}

#[tokio::test]
async fn get_equals_the_last_streamed_document() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    let mut stream = StatusStream::open(&base).await;
    let working = stream.document().await;
    assert_eq!(get_status(&base).await, working);
    let asking = stream.next_state(&working).await;
    assert_eq!(get_status(&base).await, asking);
}

#[tokio::test]
async fn without_a_scenario_the_state_is_a_steady_idle_and_quiet_streams_get_keep_alives() {
    let keep_alive = Duration::from_millis(100);
    let (_server, base) = start_with(Scenario::Steady, Some(keep_alive)).await;
    let mut stream = StatusStream::open(&base).await;
    let idle = stream.document().await;
    assert_eq!(state_and_title(&idle), ("idle", "Waiting for work"));
    assert_eq!(idle["actions"], json!([]));
    for _ in 0..3 {
        match stream.frame().await {
            Frame::Comment(text) => assert_eq!(text, "keep-alive"),
            other => panic!("a steady runtime only sends keep-alives, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn observers_count_the_open_streams() {
    let (_server, base) = start_with(Scenario::Steady, None).await;
    let mut first = StatusStream::open(&base).await;
    assert_eq!(first.document().await["observers"], 1);
    let mut second = StatusStream::open(&base).await;
    assert_eq!(second.document().await["observers"], 2);
    assert_eq!(
        first.document().await["observers"],
        2,
        "the first stream is told"
    );
    drop(second);
    assert_eq!(
        first.document().await["observers"],
        1,
        "a closed stream counts out"
    );
    assert_eq!(get_status(&base).await["observers"], 1);
}

#[tokio::test]
async fn the_no_api_scenario_answers_404_on_every_status_path_behind_the_token() {
    let (_server, base) = start_with(Scenario::NoApi, None).await;
    for (method, path) in [
        ("GET", STATUS),
        ("GET", STREAM),
        ("POST", "/supercode/v1/actions/approve"),
        ("GET", STATUS_CARD_PATH),
    ] {
        let url = format!("{base}{path}");
        let authed = client()
            .request(method.parse().unwrap(), &url)
            .bearer_auth(TOKEN)
            .send()
            .await
            .unwrap();
        assert_eq!(authed.status(), 404, "{method} {path}");
        let anonymous = client()
            .request(method.parse().unwrap(), &url)
            .send()
            .await
            .unwrap();
        assert_eq!(
            anonymous.status(),
            401,
            "no token still gets nothing but 401"
        );
    }
    let page = get_authed(&base, "/").await.text().await.unwrap();
    assert!(
        page.contains(r#"<div id="status-state">not served</div>"#),
        "the page knows the API is not served"
    );
    assert!(!page.contains(STATUS_CARD_PATH), "and loads no status card");
}

#[tokio::test]
async fn the_error_scenario_fails_and_retry_starts_over() {
    let (_server, base) = start_with(Scenario::Failing, None).await;
    let mut stream = StatusStream::open(&base).await;
    let working = stream.document().await;
    assert_eq!(working["state"], "working");
    let failed = stream.next_state(&working).await;
    assert_eq!(
        state_and_title(&failed),
        ("error", "The test runner crashed")
    );
    assert_eq!(failed["actions"][0]["id"], "retry");
    assert_eq!(act(&base, "retry", None).await.0, 202);
    let again = stream.next_state(&failed).await;
    assert_eq!(again["state"], "working");
    assert_eq!(stream.next_state(&again).await["state"], "error");
}

#[tokio::test]
async fn flood_pushes_a_thousand_changes_in_order() {
    let (_server, base) = start_with(Scenario::Flood, None).await;
    let mut stream = StatusStream::open(&base).await;
    let first = stream.document().await;
    // A count, not a rate: the flood must push many changes in order; how fast is a benchmark's
    // question, and a loaded 2-core CI machine made a rate threshold flaky (4,356/s < 5,000).
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut last, mut events) = (first["revision"].as_u64().unwrap(), 0u64);
    while events < 1_000 && Instant::now() < deadline {
        let document = stream.document().await;
        let revision = document["revision"].as_u64().unwrap();
        assert!(revision > last, "revisions only go up");
        last = revision;
        events += 1;
    }
    // Each document's revision is above the one before, so 1,000 documents are 1,000 changes.
    assert!(events >= 1_000, "only {events} documents pushed in 60 s");
}

#[tokio::test]
async fn huge_serves_a_multi_megabyte_document_on_get_and_stream() {
    let (_server, base) = start_with(Scenario::Huge, None).await;
    let document = get_status(&base).await;
    assert!(document["detail"].as_str().unwrap().len() >= HUGE_DETAIL_BYTES);
    let streamed = StatusStream::open(&base).await.document().await;
    assert!(streamed["detail"].as_str().unwrap().len() >= HUGE_DETAIL_BYTES);
}

#[tokio::test]
async fn html_sends_markup_and_control_characters_and_offers_an_invalid_action_id() {
    let (_server, base) = start_with(Scenario::Html, None).await;
    let document = get_status(&base).await;
    let title = document["title"].as_str().unwrap();
    assert!(title.contains("<img src=x onerror="));
    assert!(title.contains('\u{7}') && title.contains('\u{1b}') && title.contains('\u{0}'));
    let detail = document["detail"].as_str().unwrap();
    assert!(detail.contains("<script>") && detail.contains('\r'));
    assert!(document["controller"]["label"]
        .as_str()
        .unwrap()
        .contains("<iframe"));
    let ids: Vec<&str> = document["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|action| action["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids[0], "approve");
    assert!(
        ids[1].contains("<script>"),
        "an offered id outside the charset"
    );
    assert!(document["actions"][0]["label"]
        .as_str()
        .unwrap()
        .contains("<b "));

    // The runtime itself refuses the id it offers; only `approve` runs.
    let (status, body) = act(&base, "Delete%20All%3Cscript%3E", None).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("invalid-action-id"))
    );
    assert_eq!(act(&base, "approve", None).await.0, 202);
    assert_eq!(get_status(&base).await["state"], "idle");
}

#[tokio::test]
async fn stall_opens_the_stream_and_then_sends_nothing_not_even_keep_alives() {
    let keep_alive = Duration::from_millis(50);
    let (_server, base) = start_with(Scenario::Stall, Some(keep_alive)).await;
    let mut stream = StatusStream::open(&base).await;
    // Twenty keep-alive intervals of silence; a steady runtime sends a comment in every one.
    assert!(stream.frame_within(keep_alive * 20).await.is_none());
    assert!(stream.buffer.is_empty(), "not a single byte");
    assert_eq!(
        get_status(&base).await["title"],
        "Stalled stream",
        "GET still answers"
    );
}

#[tokio::test]
async fn blank_lines_sends_the_first_document_then_blank_lines_as_fast_as_they_are_read() {
    let (_server, base) = start_with(Scenario::BlankLines, None).await;
    let mut stream = StatusStream::open(&base).await;
    assert_eq!(stream.document().await["title"], "Sending blank lines");
    // Raw chunks from here: whatever followed the document in its chunk, then more.
    let mut blank = std::mem::take(&mut stream.buffer).len();
    timeout(STEP_TIMEOUT, async {
        while blank < 4 * BLANK_LINES_WRITE_BYTES {
            let chunk = stream.body.next().await.expect("stream open").unwrap();
            assert!(chunk.iter().all(|&b| b == b'\n'), "nothing but line breaks");
            blank += chunk.len();
        }
    })
    .await
    .expect("the blank lines keep coming");
}

#[tokio::test]
async fn the_page_shows_the_status_and_posts_actions_same_origin_as_text() {
    let (_server, base) = start_with(Scenario::Approval, None).await;
    let html = get_authed(&base, "/").await.text().await.unwrap();
    assert!(html.contains(&format!(r#"<script src="{STATUS_CARD_PATH}"></script>"#)));
    let card = get_authed(&base, STATUS_CARD_PATH).await;
    assert_eq!(
        card.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    assert_eq!(card.headers()["x-content-type-options"], "nosniff");
    let script = card.text().await.unwrap();
    assert!(script.contains("new EventSource('/supercode/v1/status/stream')"));
    assert!(script.contains("fetch('/supercode/v1/actions/' + encodeURIComponent(action.id)"));
    for text in [&html, &script] {
        assert!(
            !text.contains("innerHTML"),
            "document strings are set as text only"
        );
        assert!(!text.contains("http://") && !text.contains(TOKEN));
    }
}

#[test]
fn scenario_names_round_trip_and_unknown_names_list_the_choices() {
    for (name, scenario) in Scenario::ALL {
        assert_eq!(name.parse::<Scenario>().unwrap(), scenario);
        assert_eq!(scenario.to_string(), name);
    }
    let error = "approvals".parse::<Scenario>().unwrap_err().to_string();
    assert!(
        error.contains("approval, error, no-api, flood, huge, html, stall, blank-lines, switch")
    );
}
