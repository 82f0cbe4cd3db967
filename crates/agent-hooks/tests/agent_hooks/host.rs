//! A session's host, for real: a host serving a stand-in agent process (a sleeper), hooks'
//! events over its socket, its receipt and status API read as the tray reads them (issue 32,
//! items 2 to 4).

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_hooks::agent::Agent;
use agent_hooks::channel::Request;
use agent_hooks::claude_code::Decision;
use agent_hooks::event::{EventKind, HookEvent};
use agent_hooks::host::{self, HostConfig};
use live_runtime::test_support::{wait_until, ChildGuard};
use live_runtime::{list_live_runtimes, resolve_live_runtime, ReceiptDir, SecretStore};
use serde_json::Value;

/// Generous for CI: the host answers in milliseconds.
const TIMEOUT: Duration = Duration::from_secs(10);

struct Scene {
    _temp: tempfile::TempDir,
    receipts: ReceiptDir,
    sockets: PathBuf,
    agent: ChildGuard,
    task: tokio::task::JoinHandle<Result<(), host::HostError>>,
}

fn event(kind: EventKind) -> HookEvent {
    HookEvent {
        session_id: "sess-1".into(),
        cwd: PathBuf::from("/work/project"),
        subagent: None,
        transcript: None,
        spawned: None,
        kind,
    }
}

fn permission() -> HookEvent {
    event(EventKind::PermissionRequest {
        tool: "Bash".into(),
        detail: Some("touch /tmp/marker".into()),
        suggestions: None,
        always_label: None,
    })
}

/// What the hook program does for `event`, off the test's thread: the hook blocks, and the host
/// runs on this runtime.
async fn hook(sockets: &Path, event: HookEvent, wait: bool) -> Option<Decision> {
    let request = Request {
        event,
        wait,
        in_terminal: false,
        while_watched: false,
    };
    send(sockets, request).await
}

/// [`hook`] with the whole request.
async fn send(sockets: &Path, request: Request) -> Option<Decision> {
    let sockets = sockets.to_path_buf();
    tokio::task::spawn_blocking(move || {
        agent_hooks::hook::send(Agent::ClaudeCode, &sockets, &request)
    })
    .await
    .unwrap()
}

async fn start() -> Scene {
    let temp = tempfile::tempdir().unwrap();
    let receipts = ReceiptDir::new(
        temp.path().join("receipts"),
        SecretStore::file(temp.path().join("secrets")),
    );
    let sockets = temp.path().join("supercode").join("hooks");
    let agent = ChildGuard::sleep();
    let config = HostConfig {
        agent: Agent::ClaudeCode,
        session_id: "sess-1".into(),
        cwd: PathBuf::from("/work/project"),
        process: agent.identity(),
        socket_dir: sockets.clone(),
        receipts: receipts.clone(),
        keep_alive: Duration::from_secs(15),
    };
    let task = tokio::spawn(host::run(config));
    let scene = Scene {
        _temp: temp,
        receipts,
        sockets,
        agent,
        task,
    };
    let receipts = scene.receipts.clone();
    tokio::task::spawn_blocking(move || {
        wait_until("the host registers", TIMEOUT, || {
            list_live_runtimes(&receipts)
                .ok()
                .filter(|l| !l.runtimes.is_empty())
        })
    })
    .await
    .unwrap();
    scene
}

async fn status(scene: &Scene) -> Value {
    get(scene, "/supercode/v1/status")
        .await
        .json()
        .await
        .unwrap()
}

/// The session's status stream, open (as the tray keeps it) until the response is dropped.
async fn watch(scene: &Scene) -> reqwest::Response {
    let response = get(scene, "/supercode/v1/status/stream").await;
    assert_eq!(response.status(), 200);
    response
}

async fn get(scene: &Scene, path: &str) -> reqwest::Response {
    let (address, token) = endpoint(scene).await;
    reqwest::Client::new()
        .get(format!("http://{address}{path}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// The session runtime's address and token, from its receipt.
async fn endpoint(scene: &Scene) -> (std::net::SocketAddr, String) {
    let receipts = scene.receipts.clone();
    tokio::task::spawn_blocking(move || {
        let record = list_live_runtimes(&receipts).unwrap().runtimes.remove(0);
        let resolved = resolve_live_runtime(&receipts, &record.endpoint, &record.source).unwrap();
        (*resolved.address.expose(), resolved.token.expose().clone())
    })
    .await
    .unwrap()
}

async fn act(scene: &Scene, action: &str) -> (u16, Value) {
    let (address, token) = endpoint(scene).await;
    let response = reqwest::Client::new()
        .post(format!("http://{address}/supercode/v1/actions/{action}"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (
        response.status().as_u16(),
        response.json().await.unwrap_or(Value::Null),
    )
}

// Proves: the receipt's source is the session, its workspace the cwd, its process the agent's
// (not the host's), and its endpoint serves status API v1 with the token; a new session is idle.
#[tokio::test]
async fn the_session_is_a_runtime_of_the_agents_process() {
    let scene = start().await;
    let receipts = scene.receipts.clone();
    let list = tokio::task::spawn_blocking(move || list_live_runtimes(&receipts).unwrap())
        .await
        .unwrap();
    let record = &list.runtimes[0];
    assert_eq!(record.source.session_id, "sess-1");
    assert_eq!(record.source.workspace, PathBuf::from("/work/project"));
    assert_eq!(record.pid, scene.agent.pid());
    assert_eq!(record.metadata.runtime_kind, "claude-code");
    let doc = status(&scene).await;
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["state"], "idle");
    assert_eq!(doc["controller"]["kind"], "terminal");
}

// Proves: approve from the tray answers the waiting hook with allow, and the state follows;
// a second approve is refused.
#[tokio::test]
async fn approve_in_the_tray_answers_the_waiting_permission_hook() {
    let scene = start().await;
    assert_eq!(
        hook(&scene.sockets, event(EventKind::Prompt), false).await,
        None
    );
    assert_eq!(status(&scene).await["state"], "working");
    let sockets = scene.sockets.clone();
    let waiting = tokio::spawn(async move { hook(&sockets, permission(), true).await });
    let receipts_doc = loop {
        let doc = status(&scene).await;
        if doc["state"] == "needs-approval" {
            break doc;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(receipts_doc["title"], "Run Bash?");
    assert_eq!(receipts_doc["detail"], "touch /tmp/marker");
    let ids: Vec<&str> = receipts_doc["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["approve", "deny"]);
    let (code, _) = act(&scene, "approve").await;
    assert_eq!(code, 202);
    let decision = tokio::time::timeout(TIMEOUT, waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(decision, Some(Decision::Allow));
    assert_eq!(status(&scene).await["state"], "working");
    let (code, body) = act(&scene, "approve").await;
    assert_eq!(code, 409, "{body}");
}

// Proves: a request whose agent's own prompt waits for the hook (Codex's, a subagent's,
// `claude -p`'s when the user chose the tray) is held for the tray only while a client watches
// the session: with none (after the moment a new session's tray is given), the hook gets no
// decision and the request is shown without actions; held while a stream is open, it is let go
// the same way when the last one closes.
#[tokio::test]
async fn a_request_the_agent_waits_on_is_held_only_while_the_tray_watches() {
    let scene = start().await;
    let request = || Request {
        event: permission(),
        wait: true,
        in_terminal: false,
        while_watched: true,
    };
    let unwatched = tokio::time::timeout(TIMEOUT, send(&scene.sockets, request()))
        .await
        .expect("no decision within a moment");
    assert_eq!(unwatched, None);
    let doc = status(&scene).await;
    assert_eq!(doc["state"], "needs-approval");
    assert_eq!(doc["actions"], serde_json::json!([]));

    let stream = watch(&scene).await;
    let sockets = scene.sockets.clone();
    let waiting = tokio::spawn(async move { send(&sockets, request()).await });
    let held = loop {
        let doc = status(&scene).await;
        if doc["actions"].as_array().is_some_and(|a| !a.is_empty()) {
            break doc;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(held["state"], "needs-approval");
    assert!(!waiting.is_finished(), "held while the tray watches");
    drop(stream);
    let decision = tokio::time::timeout(TIMEOUT, waiting)
        .await
        .expect("let go once nobody watches")
        .unwrap();
    assert_eq!(decision, None);
    let doc = status(&scene).await;
    assert_eq!(doc["state"], "needs-approval");
    assert_eq!(doc["actions"], serde_json::json!([]));
    let (code, body) = act(&scene, "approve").await;
    assert_eq!(code, 409, "{body}");
}

// Proves: when the terminal answers first (the tool's PostToolUse arrives), the waiting hook
// gets no decision, needs-approval clears at once, and a late tray answer is refused with
// "already answered in the terminal". Then the end of the turn is needs-input with its message.
#[tokio::test]
async fn the_terminal_answering_first_wins_and_the_late_tray_answer_is_refused() {
    let scene = start().await;
    let sockets = scene.sockets.clone();
    let waiting = tokio::spawn(async move { hook(&sockets, permission(), true).await });
    while status(&scene).await["state"] != "needs-approval" {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let done = EventKind::ToolDone {
        tool: "Bash".into(),
        detail: Some("touch /tmp/marker".into()),
    };
    hook(&scene.sockets, event(done), false).await;
    let decision = tokio::time::timeout(TIMEOUT, waiting)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(decision, None, "no decision the user did not make");
    assert_eq!(status(&scene).await["state"], "working");
    let (code, body) = act(&scene, "approve").await;
    assert_eq!(code, 409);
    assert_eq!(body["error"]["message"], "already answered in the terminal");
    hook(
        &scene.sockets,
        event(EventKind::NeedsInput {
            title: Some("All done.".into()),
        }),
        false,
    )
    .await;
    let doc = status(&scene).await;
    assert_eq!(
        (doc["state"].as_str(), doc["title"].as_str()),
        (Some("needs-input"), Some("All done."))
    );
}

// Proves: a hook that Claude Code stops (the user said no in the terminal) clears the request.
#[tokio::test]
async fn a_permission_hook_that_is_stopped_clears_needs_approval() {
    use std::io::Write;
    let scene = start().await;
    // The waiting hook's side of the socket, as the hook program writes it; dropping it is what
    // the kernel does when the agent kills the hook.
    let mut waiting = std::os::unix::net::UnixStream::connect(agent_hooks::channel::socket_path(
        &scene.sockets,
        "claude-code",
        "sess-1",
    ))
    .unwrap();
    let request = serde_json::json!({ "event": permission(), "wait": true }).to_string() + "\n";
    waiting.write_all(request.as_bytes()).unwrap();
    while status(&scene).await["state"] != "needs-approval" {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(waiting);
    let deadline = std::time::Instant::now() + TIMEOUT;
    while status(&scene).await["state"] == "needs-approval" {
        assert!(
            std::time::Instant::now() < deadline,
            "needs-approval never cleared"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (code, body) = act(&scene, "deny").await;
    assert_eq!(
        (code, body["error"]["message"].as_str()),
        (409, Some("already answered in the terminal"))
    );
}

// Proves: the agent's process exiting ends the host and removes the receipt; SessionEnd too.
#[tokio::test]
async fn the_runtime_ends_with_the_agents_process_and_with_session_end() {
    let mut scene = start().await;
    scene.agent.kill();
    tokio::time::timeout(TIMEOUT, &mut scene.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let receipts = scene.receipts.clone();
    let list = tokio::task::spawn_blocking(move || list_live_runtimes(&receipts).unwrap())
        .await
        .unwrap();
    assert!(
        list.runtimes.is_empty() && list.exited.is_empty(),
        "the host removed its own receipt"
    );

    let mut scene = start().await;
    hook(&scene.sockets, event(EventKind::SessionEnd), false).await;
    tokio::time::timeout(TIMEOUT, &mut scene.task)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let receipts = scene.receipts.clone();
    let list = tokio::task::spawn_blocking(move || list_live_runtimes(&receipts).unwrap())
        .await
        .unwrap();
    assert!(list.runtimes.is_empty());
}

/// The ignored test that the second user's processes run (this binary, re-run as that user).
#[test]
#[ignore = "run only as the second user, by the tests that use it"]
fn as_the_other_user() {
    attach_proxy::other_user::run_requested_role();
}

// Proves (issue 32, item 6): another OS user can neither reach a session's socket (its
// directory is the user's own, 0700) nor, with the directory and socket opened to everyone by
// mistake, hand the host an event: the host checks its peer's uid and closes unanswered, so no
// prompt can be raised or answered and nothing of the session is read.
#[tokio::test]
async fn another_user_can_neither_reach_nor_talk_to_a_sessions_host() {
    use std::os::unix::fs::PermissionsExt;
    let Some(other) = attach_proxy::other_user::OtherUser::get() else {
        return;
    };
    let scene = start().await;
    let socket = agent_hooks::channel::socket_path(&scene.sockets, "claude-code", "sess-1");
    // Let the other user as far as the sockets' directory: only that directory stops them.
    for dir in [
        scene.sockets.parent().unwrap().parent().unwrap(),
        scene.sockets.parent().unwrap(),
    ] {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    }
    let request = serde_json::json!({ "event": permission(), "wait": true }).to_string() + "\n";
    let talk = attach_proxy::other_user::Role::TalkUnix {
        path: socket.clone(),
        send: request,
    };
    let entry = "host::as_the_other_user";
    let first = {
        let (other, talk) = (other, talk.clone());
        tokio::task::spawn_blocking(move || other.run(entry, &talk))
            .await
            .unwrap()
    };
    assert_eq!(first, "connected=false error=PermissionDenied");

    std::fs::set_permissions(&scene.sockets, std::fs::Permissions::from_mode(0o711)).unwrap();
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let second = tokio::task::spawn_blocking(move || other.run(entry, &talk))
        .await
        .unwrap();
    assert_eq!(
        second, "connected=true received=0 text=",
        "the host answered another user"
    );
    let doc = status(&scene).await;
    assert_eq!(
        doc["state"], "idle",
        "another user's event changed nothing: {doc}"
    );
}
