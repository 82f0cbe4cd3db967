//! Command-level tests on Tauri's mock runtime: every IPC command and the snapshot event are
//! exercised against real receipts, a real demo runtime, real Canon files and the contract-following
//! test Canon server, and every payload that would reach the webview is checked for canaries: the
//! bearer token, the API key, the poll token and the runtime's loopback address.

use std::sync::{Arc, Mutex};

use live_runtime::test_support::prompt_runtime::{bait_and_switch, Posted, PromptRuntime};
use live_runtime::test_support::WAIT_TIMEOUT;
use live_runtime::{LiveRuntimeMetadata, LiveRuntimeSource, ReceiptDir, SecretStore, Sensitive};
use serde_json::{json, Value};
use supercode_core::{Locations, Supercode};
use supercode_tray::app;
use tauri::test::{
    get_ipc_response, mock_builder, mock_context, noop_assets, MockRuntime, INVOKE_KEY,
};
use tauri::webview::InvokeRequest;
use tauri::{Listener, Manager, WebviewWindow, WebviewWindowBuilder};

const TOKEN_CANARY: &str = "canary-bearer-7c1f0e9a52";
const API_KEY_CANARY: &str = "canary-apikey-51d2b8e04c";
const POLL_TOKEN_CANARY: &str = "canary-polltoken-a93e71f2";

/// Everything one test needs; dropping it stops the runtime and removes the files.
struct Fixture {
    _dir: tempfile::TempDir,
    runtime: tokio::runtime::Runtime,
    demo: Option<demo_runtime::DemoServer>,
    registration: Option<live_runtime::LiveRuntimeRegistration>,
    loopback: String,
    locations: Locations,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let secrets = SecretStore::file(dir.path().join("secrets"));
        let receipts = ReceiptDir::new(dir.path().join("receipts"), secrets);
        let canon_root = dir.path().join("canon");
        std::fs::create_dir_all(&canon_root).unwrap();
        let locations = Locations {
            receipts,
            canon: canon_local::CanonHome::at(&canon_root).unwrap(),
            log_dir: dir.path().join("logs"),
            state_dir: dir.path().join("state"),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let token = Sensitive::new(TOKEN_CANARY.to_owned());
        let demo = runtime
            .block_on(demo_runtime::serve(demo_runtime::DemoConfig::new(
                "canary-demo",
                token.clone(),
            )))
            .unwrap();
        let address = *demo.local_addr().expose();
        let registration = live_runtime::register_live_runtime_with_metadata(
            &locations.receipts,
            "demo:canary",
            LiveRuntimeSource {
                session_id: "session-1".into(),
                workspace: dir.path().to_path_buf(),
            },
            address,
            token,
            LiveRuntimeMetadata {
                runtime_kind: "demo".into(),
                display_name: Some("canary-demo".into()),
                ..Default::default()
            },
        )
        .unwrap();
        Fixture {
            loopback: address.to_string(),
            _dir: dir,
            runtime,
            demo: Some(demo),
            registration: Some(registration),
            locations,
        }
    }

    fn endpoint(&self) -> String {
        self.registration.as_ref().unwrap().endpoint().to_string()
    }

    /// Writes `agents.json` with an API key and a pending registration with a poll token, in the
    /// package's layout.
    fn write_canon_secrets(&self) {
        let root = self.locations.canon.root();
        std::fs::write(
            root.join("agents.json"),
            serde_json::to_string_pretty(&json!({
                "existing": {
                    "apiKey": API_KEY_CANARY,
                    "agentId": "agent-1",
                    "agentName": "Existing",
                    "registeredAt": "2026-12-01T10:00:00.000Z"
                }
            }))
            .unwrap(),
        )
        .unwrap();
        std::fs::write(
            root.join("pending-registrations.json"),
            serde_json::to_string_pretty(&json!({
                "stuck": {
                    "profile": "stuck",
                    "clientType": "claude-code",
                    "localRegistrationId": "0f0e0d0c-0b0a-4908-8706-050403020100",
                    "requestId": "req-the-server-does-not-know",
                    "pollToken": POLL_TOKEN_CANARY,
                    "createdAt": "2026-12-02T10:00:00.000Z",
                    "updatedAt": "2026-12-02T10:00:00.000Z"
                },
                "fresh": {
                    "profile": "fresh",
                    "clientType": "codex",
                    "localRegistrationId": "1f1e1d1c-1b1a-4918-9716-151413121110",
                    "createdAt": "2026-12-02T10:00:00.000Z",
                    "updatedAt": "2026-12-02T10:00:00.000Z"
                }
            }))
            .unwrap(),
        )
        .unwrap();
    }

    fn app(&self) -> (tauri::App<MockRuntime>, WebviewWindow<MockRuntime>) {
        let app = app::build(
            mock_builder(),
            mock_context(noop_assets()),
            self.locations.clone(),
        )
        .unwrap();
        let webview = WebviewWindowBuilder::new(&app, app::MAIN_WINDOW, Default::default())
            .build()
            .unwrap();
        (app, webview)
    }

    /// Every string the webview must never see.
    fn assert_clean(&self, what: &str, payload: &str) {
        for canary in [
            TOKEN_CANARY,
            API_KEY_CANARY,
            POLL_TOKEN_CANARY,
            self.loopback.as_str(),
        ] {
            assert!(
                !payload.contains(canary),
                "{what} leaked a secret ({canary}): {payload}"
            );
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        drop(self.registration.take());
        if let Some(demo) = self.demo.take() {
            self.runtime.block_on(demo.shutdown());
        }
    }
}

/// Invokes a command the way the webview does and returns its JSON answer, `Ok` or `Err`.
fn invoke(webview: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Result<Value, Value> {
    get_ipc_response(
        webview,
        InvokeRequest {
            cmd: cmd.into(),
            callback: tauri::ipc::CallbackFn(0),
            error: tauri::ipc::CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: tauri::ipc::InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_string(),
        },
    )
    .map(|body| body.deserialize::<Value>().unwrap())
}

/// Sends nothing; its receiver sees the channel close when this drops (the task holding it ended).
struct DropSignal {
    _sender: std::sync::mpsc::Sender<()>,
}

// Issue 31: Quit panicked in `shut_down` ("there is no reactor running": the timeout was made
// outside the runtime `block_on` enters) and exited 101 before anything was shut down. Called as
// the app calls it, on a thread in no runtime, it returns once the background work has ended.
#[test]
fn shut_down_outside_any_runtime_waits_for_the_background_work_to_end_issue_31() {
    let fx = Fixture::new();
    let (app, _webview) = fx.app();
    let (signal, ended) = std::sync::mpsc::channel::<()>();
    let held = DropSignal { _sender: signal };
    let task = app.state::<Supercode>().track(async move {
        let _held = held;
        std::future::pending::<()>().await;
    });
    tauri::async_runtime::spawn(task);
    assert_eq!(
        ended.recv_timeout(std::time::Duration::from_millis(200)),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout),
        "the task runs until shutdown"
    );
    app::shut_down(app.handle());
    assert_eq!(
        ended.try_recv(),
        Err(std::sync::mpsc::TryRecvError::Disconnected),
        "shut_down returned only after the task had ended"
    );
}

#[test]
fn snapshot_lists_the_runtime_without_its_token_or_address() {
    let fx = Fixture::new();
    fx.write_canon_secrets();
    let (_app, webview) = fx.app();
    let snapshot = invoke(&webview, "snapshot", json!({})).expect("snapshot answers");
    let text = snapshot.to_string();
    fx.assert_clean("snapshot", &text);
    let runtime = &snapshot["runtimes"][0];
    assert_eq!(runtime["id"], fx.endpoint());
    assert_eq!(runtime["status"], "running");
    assert_eq!(runtime["attach"]["available"], true);
    let pending: Vec<&str> = snapshot["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["profile"].as_str().unwrap())
        .collect();
    assert_eq!(pending, ["stuck", "fresh"]);
}

#[test]
fn refused_and_unknown_actions_answer_a_code_and_a_clean_message() {
    let fx = Fixture::new();
    fx.write_canon_secrets();
    let (_app, webview) = fx.app();

    let forget = invoke(&webview, "forget", json!({ "id": fx.endpoint() }))
        .expect_err("a running runtime is not forgotten");
    fx.assert_clean("forget error", &forget.to_string());
    assert_eq!(forget["code"], "refused", "{forget}");
    assert!(
        forget["message"]
            .as_str()
            .unwrap()
            .contains("still running"),
        "{forget}"
    );

    let revive = invoke(
        &webview,
        "revive",
        json!({ "id": "sdk:nobody:0000000000000000", "planDigest": "0" }),
    )
    .expect_err("unknown id");
    fx.assert_clean("revive error", &revive.to_string());
    assert_eq!(revive["code"], "notFound", "{revive}");

    let attach = invoke(
        &webview,
        "attach",
        json!({ "id": "lre_00000000000000000000000000000000" }),
    )
    .expect_err("unknown endpoint");
    fx.assert_clean("attach error", &attach.to_string());
    assert_eq!(attach["code"], "notFound", "{attach}");

    let logs = invoke(&webview, "open_logs", json!({}));
    fx.assert_clean("open_logs", &format!("{logs:?}"));

    let reject = invoke(&webview, "reject", json!({ "profile": "fresh" }));
    assert!(reject.is_ok(), "{reject:?}");
    let pending =
        std::fs::read_to_string(fx.locations.canon.root().join("pending-registrations.json"))
            .unwrap();
    assert!(
        !pending.contains("\"fresh\""),
        "reject clears the entry locally"
    );
    assert!(
        pending.contains(POLL_TOKEN_CANARY),
        "reject leaves the other entries as they were"
    );
}

/// `act` reaches the core and its refusal arrives as a `CommandError` (issue 15): the demo runtime
/// here runs no scenario, so it offers no action, and "approve" is refused however the core learns
/// that; an action id no runtime could offer is refused the same way, without echoing a secret.
#[test]
fn act_answers_a_refusal_as_a_command_error_with_a_clean_message() {
    let fx = Fixture::new();
    let (_app, webview) = fx.app();
    let refused = invoke(
        &webview,
        "act",
        json!({ "id": fx.endpoint(), "action": "approve", "revision": 1 }),
    )
    .expect_err("a runtime that offers nothing refuses every action");
    fx.assert_clean("act error", &refused.to_string());
    assert_eq!(refused["code"], "refused", "{refused}");
    assert!(
        !refused["message"].as_str().unwrap_or_default().is_empty(),
        "{refused}"
    );
    // An id that breaks the action charset is refused or rejected as malformed, never run.
    let hostile = invoke(
        &webview,
        "act",
        json!({ "id": fx.endpoint(), "action": "<b>deny</b>\u{7}", "revision": 1 }),
    )
    .expect_err("an action id no runtime may offer");
    fx.assert_clean("act error", &hostile.to_string());
    assert!(
        ["refused", "invalidInput"].contains(&hostile["code"].as_str().unwrap_or_default()),
        "{hostile}"
    );
    let missing = invoke(&webview, "act", json!({ "id": fx.endpoint() }))
        .expect_err("an act without an action id is malformed");
    fx.assert_clean("act without action", &missing.to_string());
    let unbound = invoke(
        &webview,
        "act",
        json!({ "id": fx.endpoint(), "action": "approve" }),
    )
    .expect_err("an act that does not say which document it was chosen from is malformed");
    fx.assert_clean("act without revision", &unbound.to_string());
}

/// The state the snapshot command shows for runtime `id`, once `ready` holds for it.
fn shown_state(
    webview: &WebviewWindow<MockRuntime>,
    id: &str,
    ready: impl Fn(&Value) -> bool,
) -> Value {
    live_runtime::test_support::wait_until("the state shown", WAIT_TIMEOUT, || {
        let snapshot = invoke(webview, "snapshot", json!({})).ok()?;
        let runtimes = snapshot["runtimes"].as_array()?;
        let state = runtimes.iter().find(|r| r["id"] == id)?["state"].clone();
        ready(&state).then_some(state)
    })
}

/// Issue 29, the window's road: `act` carries the revision of the state the window showed; once
/// the runtime's prompt changed from "Run the unit tests?" to "Drop the production database?",
/// an approve chosen from the first is refused (`refused`, "look again") without reaching the
/// runtime (a raw-socket one that would take it), and the snapshot shows the new prompt with its
/// question; approving that one sends its revision.
#[test]
fn issue_29_act_chosen_from_a_prompt_that_changed_is_refused_and_the_new_one_shown() {
    let fx = Fixture::new();
    let prompts = PromptRuntime::start(TOKEN_CANARY, bait_and_switch());
    let registration = live_runtime::register_live_runtime_with_metadata(
        &fx.locations.receipts,
        "test:switcher",
        LiveRuntimeSource {
            session_id: "session-switcher".into(),
            workspace: std::env::temp_dir(),
        },
        prompts.address(),
        Sensitive::new(TOKEN_CANARY.to_owned()),
        LiveRuntimeMetadata {
            runtime_kind: "sdk".into(),
            display_name: Some("switcher".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let id = registration.endpoint().to_string();
    let (app, webview) = fx.app();
    // What the tray app starts at launch: the watcher, and with it the agent subscriptions the
    // window's states come from.
    let _watch = app.state::<Supercode>().watch();
    let first = shown_state(&webview, &id, |s| s["revision"] == 1);
    assert_eq!(first["title"], "Run the unit tests?");
    assert_eq!(
        first["actions"][0]["confirm"],
        Value::Null,
        "nothing to ask"
    );

    prompts.advance();
    let now = shown_state(&webview, &id, |s| s["revision"] == 2);
    let refused = invoke(
        &webview,
        "act",
        json!({ "id": id, "action": "approve", "revision": 1 }),
    )
    .expect_err("the prompt the window showed is gone");
    assert_eq!(refused["code"], "refused", "{refused}");
    assert!(
        refused["message"].as_str().unwrap().contains("look again"),
        "{refused}"
    );
    fx.assert_clean("act error", &refused.to_string());
    assert_eq!(prompts.posted(), [], "nothing reached the runtime");
    assert_eq!(now["title"], "Drop the production database?");
    assert_eq!(
        now["actions"][0]["confirm"],
        "Drop the production database?"
    );

    let accepted = invoke(
        &webview,
        "act",
        json!({ "id": id, "action": "approve", "revision": 2 }),
    )
    .expect("the prompt shown now is approved");
    fx.assert_clean("act outcome", &accepted.to_string());
    assert_eq!(
        prompts.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(2)
        }]
    );
}

#[test]
fn attach_opens_the_browser_from_the_backend_and_answers_nothing_secret() {
    let fx = Fixture::new();
    // The program attach runs instead of the desktop browser: `true` accepts the URL and exits.
    std::env::set_var("SUPERCODE_BROWSER", "true");
    let (_app, webview) = fx.app();
    let answer =
        invoke(&webview, "attach", json!({ "id": fx.endpoint() })).expect("attach succeeds");
    assert_eq!(
        answer,
        Value::Null,
        "attach returns nothing: the URL never reaches the webview"
    );
}

#[test]
fn approve_and_its_errors_answers_and_events_carry_no_api_key_or_poll_token() {
    let fx = Fixture::new();
    fx.write_canon_secrets();
    let config = canon_local::test_server::TestServerConfig {
        pending_polls: 1,
        api_key: API_KEY_CANARY.into(),
        poll_interval_ms: Some(300),
        ..Default::default()
    };
    let server = fx
        .runtime
        .block_on(canon_local::test_server::TestServer::start(config))
        .unwrap();
    // Process-global, so this is the only test in this binary that talks to Canon.
    std::env::set_var("CANON_BASE_URL", server.base_url());
    let (app, webview) = fx.app();

    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = seen.clone();
    app.listen_any(app::SNAPSHOT_EVENT, move |event| {
        sink.lock().unwrap().push(event.payload().to_owned())
    });
    let _watch = app.state::<Supercode>().watch();

    // The server does not know this request id: Canon answers 404 to a poll carrying the token.
    let error =
        invoke(&webview, "approve", json!({ "profile": "stuck" })).expect_err("unknown request");
    fx.assert_clean("approve error", &error.to_string());
    // Canon's failure is only shown, so it has no code of its own (issue 14).
    assert_eq!(error["code"], "internal", "{error}");
    let missing = invoke(&webview, "approve", json!({ "profile": "nobody" }))
        .expect_err("no such pending registration");
    assert_eq!(missing["code"], "notFound", "{missing}");

    let view = invoke(&webview, "approve", json!({ "profile": "fresh" })).expect("approved");
    fx.assert_clean("approve answer", &view.to_string());
    assert_eq!(view["state"], "approved", "{view}");
    let agents = std::fs::read_to_string(fx.locations.canon.root().join("agents.json")).unwrap();
    assert!(
        agents.contains("\"fresh\""),
        "the approved profile is saved for canon runtimes"
    );

    live_runtime::test_support::wait_until("a snapshot event", WAIT_TIMEOUT, || {
        (!seen.lock().unwrap().is_empty()).then_some(())
    });
    let events = seen.lock().unwrap().clone();
    assert!(
        !events.is_empty(),
        "the watcher published at least one snapshot event"
    );
    for payload in &events {
        fx.assert_clean("snapshot event", payload);
    }
    fx.runtime.block_on(server.shutdown());
}

// Issue 13: the window asks for the plan (absolute program, arguments, cwd, every variable) and
// the revive carries its digest: a wrong digest is `planChanged` and runs nothing; the digest of
// the plan shown runs exactly that plan.
#[test]
fn revive_runs_only_the_plan_whose_digest_the_window_sends_back() {
    let fx = Fixture::new();
    fx.write_canon_secrets();
    let workspace = fx.locations.state_dir.parent().unwrap().join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let marker = workspace.join("ran");
    let script = format!("echo ran > '{}'; exit 3", marker.display());
    let cwd = workspace.to_string_lossy().into_owned();
    let launch = vec!["sh".to_owned(), "-c".to_owned(), script.clone()];
    let id = canon_local::build_local_runtime_id("sdk", Some("existing"), &cwd, &launch).unwrap();
    let entry = canon_local::LocalRuntimeCatalogEntry::new(
        id.clone(),
        "sdk",
        Some("existing".to_owned()),
        cwd.clone(),
        launch,
        canon_local::LocalRuntimeStatus::Offline,
        canon_local::ReviveCapability::Revivable,
    );
    canon_local::upsert_local_runtime_entry(&fx.locations.canon, &entry).unwrap();
    let (_app, webview) = fx.app();

    let plan = invoke(&webview, "revive_plan", json!({ "id": id })).expect("a plan");
    fx.assert_clean("revive plan", &plan.to_string());
    let program = plan["program"].as_str().unwrap();
    assert!(
        program.starts_with('/') && program.ends_with("/sh"),
        "{plan}"
    );
    assert_eq!(plan["recordedProgram"], "sh");
    assert_eq!(plan["args"], json!(["-c", script]));
    assert_eq!(plan["cwd"], cwd);
    assert_eq!(plan["env"][0]["name"], "CANON_AGENT");
    assert_eq!(plan["env"][0]["value"], "existing");
    assert_eq!(plan["run"]["available"], true);

    let stale = invoke(
        &webview,
        "revive",
        json!({ "id": id, "planDigest": "0".repeat(64) }),
    )
    .expect_err("another digest");
    assert_eq!(stale["code"], "planChanged", "{stale}");
    assert!(!marker.exists(), "nothing ran");
    let missing = invoke(&webview, "revive", json!({ "id": id }));
    assert!(missing.is_err(), "a revive without a digest is refused");
    assert!(!marker.exists(), "nothing ran");

    let ran = invoke(
        &webview,
        "revive",
        json!({ "id": id, "planDigest": plan["digest"] }),
    )
    .expect_err("the script exits before it comes up");
    fx.assert_clean("revive error", &ran.to_string());
    assert!(
        ran["message"]
            .as_str()
            .unwrap()
            .contains("exited before it came up"),
        "{ran}"
    );
    assert!(marker.exists(), "the confirmed plan ran");
}

// Proves: the window may ask for the desktop notice (the command is registered and allowed by
// its capability) and gets the core's answer as it is: no notice or one with a title and detail.
#[test]
fn issue_31_the_window_may_ask_whether_the_tray_icon_can_show() {
    let fx = Fixture::new();
    let (_app, webview) = fx.app();

    let notice = invoke(&webview, "desktop_notice", json!({})).expect("allowed and answered");

    assert!(
        notice.is_null() || notice["title"].is_string() && notice["detail"].is_string(),
        "{notice}"
    );
    assert_eq!(
        notice,
        serde_json::to_value(supercode_core::doctor::tray_host_notice()).unwrap()
    );
}

/// Issue 32 item 1: the window's Disconnect (and Connect) of a coding agent through IPC, on real
/// settings files: the preview's digest must come back, a file changed since is refused and kept,
/// the user's own hooks stay, a symbolic link is refused with its reason.
#[test]
fn coding_agents_change_only_as_previewed_on_real_settings_files() {
    let fx = Fixture::new();
    let dir = tempfile::tempdir().unwrap();
    // Process-global, so this is the only test in this binary that reads agents' settings.
    std::env::set_var("CLAUDE_CONFIG_DIR", dir.path().join("claude"));
    std::env::set_var("CODEX_HOME", dir.path().join("codex"));
    let settings = dir.path().join("claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let write = |text: &str| {
        std::fs::write(&settings, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o600)).unwrap();
    };
    write(
        r#"{ "model": "opus", "hooks": { "Stop": [
            { "hooks": [ { "type": "command", "command": "my-notifier" } ] },
            { "hooks": [ { "type": "command", "command": "/usr/bin/supercode-tray-hook claude-code" } ] }
        ] } }"#,
    );
    let (_app, webview) = fx.app();

    let agents = invoke(&webview, "coding_agents", json!({})).expect("the agents' states");
    fx.assert_clean("coding_agents", &agents.to_string());
    let claude = &agents[0];
    assert_eq!(claude["agent"], "claude-code");
    assert_eq!(claude["connection"], "partly", "{claude}");
    assert_eq!(claude["disconnect"]["available"], true);
    assert_eq!(agents[1]["agent"], "codex");

    let plan = invoke(
        &webview,
        "hooks_plan",
        json!({ "agent": "claude-code", "change": "disconnect" }),
    )
    .expect("a plan");
    fx.assert_clean("hooks_plan", &plan.to_string());
    let preview = plan["preview"].as_str().unwrap();
    assert!(preview.starts_with("Removes from \"hooks\""), "{preview}");
    assert!(
        preview.contains("/usr/bin/supercode-tray-hook claude-code"),
        "{preview}"
    );
    assert!(!preview.contains("my-notifier"), "{preview}");

    // Another program writes the file after the preview: the change is refused, the file kept.
    let changed = r#"{ "model": "sonnet", "hooks": { "Stop": [
        { "hooks": [ { "type": "command", "command": "/usr/bin/supercode-tray-hook claude-code" } ] }
    ] } }"#;
    write(changed);
    let error = invoke(
        &webview,
        "hooks_change",
        json!({ "agent": "claude-code", "change": "disconnect", "digest": plan["digest"] }),
    )
    .expect_err("the file changed since the preview");
    assert_eq!(error["code"], "planChanged", "{error}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), changed);

    // Previewed again, it is made: only our entry goes, the backup keeps the file as it was.
    write(
        r#"{ "model": "opus", "hooks": { "Stop": [
            { "hooks": [ { "type": "command", "command": "my-notifier" } ] },
            { "hooks": [ { "type": "command", "command": "/usr/bin/supercode-tray-hook claude-code" } ] }
        ] } }"#,
    );
    let plan = invoke(
        &webview,
        "hooks_plan",
        json!({ "agent": "claude-code", "change": "disconnect" }),
    )
    .unwrap();
    let outcome = invoke(
        &webview,
        "hooks_change",
        json!({ "agent": "claude-code", "change": "disconnect", "digest": plan["digest"] }),
    )
    .expect("the previewed change is made");
    assert!(outcome["message"]
        .as_str()
        .unwrap()
        .contains("disconnected"));
    let after: Value = serde_json::from_slice(&std::fs::read(&settings).unwrap()).unwrap();
    assert_eq!(
        after,
        json!({ "model": "opus", "hooks": { "Stop": [
            { "hooks": [ { "type": "command", "command": "my-notifier" } ] }
        ] } })
    );
    assert!(plan["backup"]
        .as_str()
        .unwrap()
        .ends_with(".supercode-backup"));
    assert!(std::path::Path::new(plan["backup"].as_str().unwrap()).exists());

    // Connect needs the hook program beside the running binary: this test binary has none, so
    // nothing is written and the reason says so.
    let error = invoke(
        &webview,
        "hooks_plan",
        json!({ "agent": "claude-code", "change": "connect" }),
    )
    .expect_err("no supercode-tray-hook beside the test binary");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("no supercode-tray-hook beside this program"),
        "{error}"
    );

    // A settings file that is a symbolic link is refused with its reason and left as it is.
    let real = dir.path().join("real.json");
    std::fs::rename(&settings, &real).unwrap();
    std::os::unix::fs::symlink(&real, &settings).unwrap();
    let error = invoke(
        &webview,
        "hooks_plan",
        json!({ "agent": "claude-code", "change": "disconnect" }),
    )
    .expect_err("a link is refused");
    assert_eq!(error["code"], "refused", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("link"),
        "{error}"
    );
    let agents = invoke(&webview, "coding_agents", json!({})).unwrap();
    assert_eq!(agents[0]["connection"], "problem");
    assert!(std::fs::symlink_metadata(&settings)
        .unwrap()
        .file_type()
        .is_symlink());
}
