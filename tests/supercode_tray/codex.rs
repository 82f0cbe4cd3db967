//! Issue 33 with the real Codex CLI (0.171.0 from npm, pinned in `tests/codex/`, installed by
//! `scripts/install-deps.sh --test`), run interactively in `tmux` as a user runs it, pointed at a
//! stand-in of the Responses API that this test serves (a model provider in `config.toml` with
//! `base_url`, `wire_api = "responses"` and `env_key`): each prompt "make marker-N" gets one
//! `exec_command` call with `"sandbox_permissions": "require_escalated"` (so Codex asks under
//! `-a on-request`), and after its output the turn ends with a message.
//!
//! The walk: `hooks install codex --yes` → `hooks status` says, in the window's words, that Codex
//! does not trust them yet → Codex shows "Hooks need review" and the user trusts them there →
//! `hooks status` says connected → the session is listed → `needs-approval` with no Approve
//! while Codex asks in its terminal → `y` in the terminal → the command ran → `needs-input`, and
//! attach shows the conversation from Codex's rollout; with "answer Codex approvals from the
//! tray" on, `needs-approval` offers Approve while Codex's terminal shows our `statusMessage`, and
//! `act approve` runs the command, and the same attached page's conversation has the new turn;
//! a slow command that asks nothing shows as `working` with its command while it runs (from
//! the tool's start, whose hook Codex runs in the background), then `needs-input`;
//! closing Codex's terminal ends the runtime (Codex's `SessionEnd`) while Codex's shared app
//! server still runs; `hooks remove codex` leaves exactly the user's hooks file and their
//! `config.toml` as Codex left it; the canary API key is in no output, file of ours, or host's
//! environment.
//!
//! Codex runs as users run it, in its default mode: the terminal's `codex` hands the session to
//! a shared background app server, which runs the hooks and outlives the terminal. The user's
//! `config.toml` sets `thread_unload_delay_secs = 1` (Codex's own setting, a minute by default)
//! so the server ends the session a second after its terminal closes; the test stops that server
//! (by the pids of the processes under its temp home) when it ends. Skipped with a message when
//! the pinned CLI or tmux is not installed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::terminal::{attach_link, have_tmux, processes_running, Terminal};
use serde_json::{json, Value};

const TRAY: &str = env!("CARGO_BIN_EXE_supercode-tray");
/// The canary API key Codex is given: it must show up nowhere of ours.
const API_KEY_CANARY: &str = "sk-proj-canary-codex-3b7e91d04c5a4f28";
/// The prompt whose turn the stand-in fails (`response.failed`), and why it says it failed.
const FAILING_PROMPT: &str = "please fail-turn";
const MODEL_FAILURE: &str = "the stand-in model is overloaded";
/// What Codex's own approval prompt says.
const CODEX_PROMPT: &str = "Would you like to run the following command?";

/// A prompt whose command takes three seconds and needs no approval.
const SLOW_PROMPT: &str = "slowly make";
/// Generous for a loaded machine; each step takes about a second here.
const STEP_TIMEOUT: Duration = Duration::from_secs(40);

fn codex_binary() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
    );
    path.is_file().then_some(path)
}

/// The stand-in Responses API: an escalated `exec_command` for each prompt naming a marker,
/// then a closing message once its output is in (and for side requests without the tool).
fn serve_model(runtime: &tokio::runtime::Runtime, markers: PathBuf) -> SocketAddr {
    use axum::body::Bytes;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let handler = move |body: Bytes| {
        let markers = markers.clone();
        async move {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let item = answer(&request, &markers);
            let fail = request["input"]
                .as_array()
                .and_then(|input| input.last())
                .is_some_and(|last| last.to_string().contains(FAILING_PROMPT));
            let response = |status: &str, output: Value| {
                json!({"id": "resp_1", "object": "response", "status": status, "output": output,
                    "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens_details": {"reasoning_tokens": 0}}})
            };
            let mut failed = response("failed", json!([]));
            failed["error"] = json!({"code": "server_error", "message": MODEL_FAILURE});
            let events = if fail {
                vec![
                    json!({"type": "response.created", "response": response("in_progress", json!([]))}),
                    json!({"type": "response.failed", "response": failed}),
                ]
            } else {
                vec![
                    json!({"type": "response.created", "response": response("in_progress", json!([]))}),
                    json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
                    json!({"type": "response.completed", "response": response("completed", json!([item]))}),
                ]
            };
            let body: String = events
                .iter()
                .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
                .collect();
            ([("content-type", "text/event-stream")], body)
        }
    };
    let app = axum::Router::new()
        .route("/v1/responses", axum::routing::post(handler))
        .fallback(|| async { axum::Json(json!({"data": [], "models": []})) });
    runtime.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    address
}

fn answer(request: &Value, markers: &Path) -> Value {
    let input = request["input"].as_array().cloned().unwrap_or_default();
    let has_exec = request["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "exec_command"));
    let last = input.last().cloned().unwrap_or(Value::Null);
    let marker = last
        .to_string()
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .rfind(|w| w.starts_with("marker-"))
        .map(str::to_owned);
    match (has_exec, last["type"] == "function_call_output", marker) {
        // Takes a while and asks nothing: the session shows the tool while it runs.
        (true, false, Some(marker)) if last.to_string().contains(SLOW_PROMPT) => json!({
            "type": "function_call", "id": format!("fc_{marker}"), "call_id": format!("call_{marker}"),
            "name": "exec_command", "status": "completed",
            "arguments": json!({
                "cmd": format!("sleep 3 && touch {}", markers.join(&marker).display()),
            }).to_string()
        }),
        (true, false, Some(marker)) => json!({
            "type": "function_call", "id": format!("fc_{marker}"), "call_id": format!("call_{marker}"),
            "name": "exec_command", "status": "completed",
            "arguments": json!({
                "cmd": format!("touch {}", markers.join(&marker).display()),
                "sandbox_permissions": "require_escalated",
                "justification": format!("Create {marker}")
            }).to_string()
        }),
        _ => json!({
            "type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "All done: the marker is there.", "annotations": []}]
        }),
    }
}

/// A temp HOME with the user's own Codex settings, our directories, and the tmux server.
struct Session {
    /// First, so it is dropped first: the agent's tmux server is killed before its
    /// directories are removed.
    terminal: Terminal,
    dir: tempfile::TempDir,
    /// The user's home, apart from `dir`: not in the system's temp directory, as a user's is not.
    /// Codex refuses to put its sandbox's helper (`codex-linux-sandbox`) under the temp
    /// directory, and without it every sandboxed command fails at once.
    home: tempfile::TempDir,
    printed: String,
}

impl Drop for Session {
    /// Codex's shared app server, started by the test's `codex` from its temp home, outlives the
    /// terminal: stop it (only the processes whose program is under this temp home).
    fn drop(&mut self) {
        let _ = self.terminal.tmux(&["kill-server"]);
        for pid in self.codex_server() {
            let _ = Command::new("kill").arg(&pid).status();
        }
    }
}

impl Session {
    /// The pids of Codex's app server processes of this test's home.
    fn codex_server(&self) -> Vec<String> {
        processes_running(&self.home().join(".codex/packages").display().to_string())
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    fn home(&self) -> &Path {
        self.home.path()
    }

    /// `supercode-tray ARGS` as this test's user runs it.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(TRAY);
        command.args(args);
        crate::cli::private_env(&mut command, self.dir.path());
        command
            .env("HOME", self.home())
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env_remove("CODEX_HOME");
        command
    }

    fn run(&mut self, args: &[&str]) -> Output {
        let output = self.command(args).output().unwrap();
        self.printed
            .push_str(&String::from_utf8_lossy(&output.stdout));
        self.printed
            .push_str(&String::from_utf8_lossy(&output.stderr));
        output
    }

    /// `hooks status`'s line for Codex, and its `--json` entry.
    fn codex_status_text(&mut self) -> String {
        let output = self.run(&["hooks", "status"]);
        assert!(output.status.success(), "{output:?}");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find(|l| l.starts_with("codex "))
            .unwrap()
            .to_owned()
    }

    fn codex_status(&mut self) -> Value {
        let output = self.run(&["hooks", "status", "--json"]);
        assert!(output.status.success(), "{output:?}");
        let status: Value = serde_json::from_slice(&output.stdout).unwrap();
        status["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "codex")
            .cloned()
            .unwrap()
    }

    fn listed(&mut self) -> Option<Value> {
        let output = self.run(&["list", "--json"]);
        assert!(output.status.success(), "{output:?}");
        let list: Value = serde_json::from_slice(&output.stdout).unwrap();
        list["runtimes"]
            .as_array()?
            .iter()
            .find(|r| r["kind"] == "codex")
            .cloned()
    }

    /// Answers Codex's open prompt with `y`: the turn ends, and the command made `made`.
    fn yes_in_terminal(&mut self, made: &Path) {
        self.terminal.keys(&["y"]);
        self.wait_listed("needs-input after the terminal approved", |r| {
            r.is_some_and(|r| r["state"]["value"] == "needs-input")
        });
        assert!(made.exists(), "the command ran");
    }

    fn wait_listed(&mut self, what: &str, check: impl Fn(Option<&Value>) -> bool) -> Option<Value> {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let listed = self.listed();
            if check(listed.as_ref()) {
                return listed;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: never happened; last list: {listed:?}\nscreen:\n{}",
                self.terminal.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every file of ours in the temp dir (Codex's own sessions, logs and state, and the launch
    /// script, are Codex's and the test's).
    fn files_text(&self) -> String {
        let mut text = String::new();
        let mut stack = vec![self.dir.path().to_path_buf(), self.home().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                let codex_own = path.starts_with(self.home().join(".codex"))
                    && !path.ends_with("hooks.json")
                    && !path.ends_with("config.toml");
                if codex_own || path.ends_with("run-codex.sh") {
                    continue;
                }
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(path),
                    Ok(t) if t.is_file() => text.push_str(&String::from_utf8_lossy(
                        &std::fs::read(&path).unwrap_or_default(),
                    )),
                    _ => {}
                }
            }
        }
        text
    }
}

const USER_CONFIG: &str = "# my own Codex settings\nmodel = \"stand-in\"\nmodel_provider = \"standin\"\nthread_unload_delay_secs = 1\n";
const USER_HOOKS: &str =
    r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}]}}"#;

fn prepare_session(codex: &Path, model: SocketAddr) -> Session {
    use std::os::unix::fs::PermissionsExt;
    let session = Session {
        dir: tempfile::tempdir().unwrap(),
        home: tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
        terminal: Terminal::new(
            format!("supercode-codex-test-{}", std::process::id()),
            "codex",
            STEP_TIMEOUT,
            Duration::from_millis(300),
        ),
        printed: String::new(),
    };
    for sub in ["project", "canon", "run"] {
        std::fs::create_dir_all(session.path(sub)).unwrap();
    }
    std::fs::create_dir_all(session.home().join(".codex")).unwrap();
    std::fs::set_permissions(session.path("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let project = session.path("project");
    // The user's own settings: the model provider, and the project already trusted (Codex's
    // first-run folder question; the hooks' review is what the test walks through).
    let config = format!(
        "{USER_CONFIG}\n[model_providers.standin]\nname = \"Stand-in\"\nbase_url = \"http://{model}/v1\"\nwire_api = \"responses\"\nenv_key = \"STANDIN_API_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        project.display()
    );
    std::fs::write(session.home().join(".codex/config.toml"), config).unwrap();
    std::fs::write(session.home().join(".codex/hooks.json"), USER_HOOKS).unwrap();
    let mut env = String::new();
    for (name, value) in [
        ("HOME", session.home().to_path_buf()),
        ("XDG_RUNTIME_DIR", session.path("run")),
        ("XDG_CONFIG_HOME", session.home().join(".config")),
        ("SUPERCODE_RUNTIME_DIR", session.path("receipts")),
        ("SUPERCODE_SECRET_DIR", session.path("secrets")),
        ("SUPERCODE_LOG_DIR", session.path("logs")),
        ("SUPERCODE_STATE_DIR", session.path("state")),
        ("CANON_HOME", session.path("canon")),
    ] {
        env.push_str(&format!("export {name}='{}'\n", value.display()));
    }
    env.push_str(&format!(
        "export SUPERCODE_SECRET_STORE=file\nexport STANDIN_API_KEY='{API_KEY_CANARY}'\n"
    ));
    let script = session.path("run-codex.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nunset CODEX_HOME OPENAI_API_KEY\n{env}cd '{}'\nexec '{}' -a on-request -s workspace-write\n",
            project.display(),
            codex.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    session
}

#[test]
fn issue_33_a_real_codex_session_is_a_runtime_answered_in_its_terminal_or_from_the_tray() {
    let (Some(codex), true) = (codex_binary(), have_tmux()) else {
        let why = "the pinned Codex CLI or tmux is missing; run scripts/install-deps.sh --test";
        assert!(std::env::var_os(crate::REQUIRE_AGENTS).is_none(), "{why}");
        eprintln!("skipped: {why}");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let markers_dir = tempfile::tempdir().unwrap();
    let markers = markers_dir.path().to_path_buf();
    let model = serve_model(&runtime, markers.clone());
    let mut session = prepare_session(&codex, model);

    // Install: our entries go in beside the user's own; Codex does not trust them yet.
    let installed = session.run(&["hooks", "install", "codex", "--yes"]);
    assert!(installed.status.success(), "{installed:?}");
    let status = session.codex_status();
    assert_eq!(status["installed"], "yes", "{status}");
    assert_eq!(status["trust"]["trusted"], json!([]), "{status}");
    assert_eq!(
        status["trust"]["needsReview"].as_array().unwrap().len(),
        7,
        "{status}"
    );
    // The text and the JSON say it in the window's words (`connect::agent_view`).
    let note = status["view"]["trust"].as_str().unwrap().to_owned();
    assert!(note.starts_with("not trusted in Codex yet"), "{status}");
    assert_eq!(status["view"]["summary"], "connected", "{status}");
    let line = session.codex_status_text();
    assert!(line.contains(&format!("connected; {note}")), "{line}");

    // Trust them in Codex, as a user would: its review screen, "Trust all and continue".
    let script = session.path("run-codex.sh").display().to_string();
    session.terminal.start(&script);
    session.terminal.wait_screen(
        "Codex asks to review the new hooks",
        "Trust all and continue",
    );
    // Codex draws the screen a moment before it reads keys: choose option 2 until it is the
    // selected one (pressing it again is harmless), then confirm.
    let deadline = Instant::now() + STEP_TIMEOUT;
    while session.terminal.screen().contains("Hooks need review") {
        assert!(
            Instant::now() < deadline,
            "the review screen stayed:\n{}",
            session.terminal.screen()
        );
        if session
            .terminal
            .screen()
            .contains("› 2. Trust all and continue")
        {
            session.terminal.keys(&["Enter"]);
        } else {
            session.terminal.keys(&["2"]);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    session
        .terminal
        .wait_screen("Codex starts", "for shortcuts");
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let status = session.codex_status();
        if status["trust"]["needsReview"] == json!([]) {
            assert_eq!(
                status["trust"]["trusted"].as_array().unwrap().len(),
                7,
                "{status}"
            );
            assert_eq!(status["view"]["trust"], Value::Null, "{status}");
            let line = session.codex_status_text();
            assert!(line.starts_with("codex        connected  ("), "{line}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Codex never recorded the trust: {status}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Codex asks in its terminal; the tray shows it, without Approve (the setting is off).
    session.terminal.type_line("make marker-1");
    let asking = session
        .wait_listed("needs-approval", |r| {
            r.is_some_and(|r| r["state"]["value"] == "needs-approval")
        })
        .unwrap();
    assert_eq!(asking["state"]["title"], "Run Bash?", "{asking}");
    assert!(
        asking["state"]["detail"]
            .as_str()
            .unwrap()
            .contains("marker-1"),
        "{asking}"
    );
    assert_eq!(asking["state"]["actions"], json!([]), "{asking}");
    assert_eq!(
        asking["workspace"],
        json!(session.path("project")),
        "{asking}"
    );
    session
        .terminal
        .wait_screen("Codex's own prompt", CODEX_PROMPT);
    session.yes_in_terminal(&markers.join("marker-1"));
    let id = asking["id"].as_str().unwrap().to_owned();

    // Attach shows the conversation, read from Codex's rollout.
    let attached = Attached::open(&mut session, &runtime, &id);
    let marker1 = markers.join("marker-1").display().to_string();
    attached.wait_conversation(
        &runtime,
        "the first turn",
        &[
            ("user", "make marker-1".to_owned()),
            ("tool", format!("Bash: touch {marker1}")),
            ("assistant", "All done: the marker is there.".to_owned()),
        ],
    );

    // With the setting on, the hook waits for the tray, and Approve there runs the command.
    let on = session.run(&["hooks", "codex-approvals", "on"]);
    assert!(on.status.success(), "{on:?}");
    let tray = crate::cli::watching(session.command(&["events", "--json"]));
    session.terminal.type_line("make marker-2");
    let offered = session
        .wait_listed("needs-approval with Approve", |r| {
            r.is_some_and(|r| r["state"]["value"] == "needs-approval")
        })
        .unwrap();
    let actions: Vec<&str> = offered["state"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["id"].as_str())
        .collect();
    assert_eq!(actions, ["approve", "deny"], "{offered}");
    // Codex's terminal says why it waits: our entry's `statusMessage`.
    session.terminal.wait_screen(
        "Codex shows our statusMessage while the hook waits",
        agent_hooks::codex::PERMISSION_STATUS,
    );
    assert!(
        !markers.join("marker-2").exists(),
        "nothing ran before the answer"
    );
    let approved = session.run(&["act", &id, "approve"]);
    assert!(approved.status.success(), "{approved:?}");
    session.wait_listed("needs-input after Approve from the tray", |r| {
        r.is_some_and(|r| r["state"]["value"] == "needs-input")
    });
    assert!(
        markers.join("marker-2").exists(),
        "Approve from the tray ran the command"
    );
    // The page that stayed open gets the new turn.
    let marker2 = markers.join("marker-2").display().to_string();
    attached.wait_conversation(
        &runtime,
        "the second turn, live",
        &[
            ("user", "make marker-1".to_owned()),
            ("tool", format!("Bash: touch {marker1}")),
            ("assistant", "All done: the marker is there.".to_owned()),
            ("user", "make marker-2".to_owned()),
            ("tool", format!("Bash: touch {marker2}")),
            ("assistant", "All done: the marker is there.".to_owned()),
        ],
    );
    drop(attached);

    // The setting still on but no tray watching (it quit): nobody would answer in the tray, so
    // after a moment Codex asks in its own terminal, as with the setting off.
    drop(tray);
    session.terminal.type_line("make marker-4");
    session
        .terminal
        .wait_screen("Codex's own prompt, with no tray watching", CODEX_PROMPT);
    let unwatched = session.listed().unwrap();
    assert_eq!(unwatched["state"]["value"], "needs-approval", "{unwatched}");
    assert_eq!(unwatched["state"]["actions"], json!([]), "{unwatched}");
    session.yes_in_terminal(&markers.join("marker-4"));

    // A tool's start and end run in the background (Codex does not wait for them): the start
    // still shows while the tool runs, and its end does not undo the turn's end.
    session
        .terminal
        .type_line(&format!("{SLOW_PROMPT} marker-3"));
    session.wait_listed("working on the slow command", |r| {
        r.is_some_and(|r| {
            r["state"]["value"] == "working"
                && r["state"]["detail"]
                    .as_str()
                    .is_some_and(|d| d.starts_with("sleep 3 && touch"))
        })
    });
    session.wait_listed("needs-input after the slow command", |r| {
        r.is_some_and(|r| r["state"]["value"] == "needs-input")
    });
    // It ran to its end in Codex's sandbox (it makes its marker last), so the tool's start
    // showed for its whole 3 s, not for a command that failed at once.
    assert!(
        markers.join("marker-3").exists(),
        "the slow command ran\n{}",
        session.terminal.screen()
    );
    std::thread::sleep(Duration::from_millis(500));
    let settled = session.listed().unwrap();
    assert_eq!(settled["state"]["value"], "needs-input", "{settled}");

    // A turn the model API fails runs no hook in Codex; its rollout says why, and so does the
    // session's state.
    session.terminal.type_line(FAILING_PROMPT);
    let failed = session
        .wait_listed("error after a failed turn", |r| {
            r.is_some_and(|r| r["state"]["value"] == "error")
        })
        .unwrap();
    assert!(
        failed["state"]["title"]
            .as_str()
            .unwrap()
            .contains(MODEL_FAILURE),
        "{failed}"
    );

    // No host holds the key, then Codex's exit ends the runtime.
    for pid in processes_running("hook-host codex") {
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&environ).contains(API_KEY_CANARY),
            "the host's environment has the key"
        );
    }
    // The terminal closes; Codex's shared server unloads the session and runs `SessionEnd`.
    assert!(
        !session.codex_server().is_empty(),
        "Codex runs in its app server"
    );
    let _ = session.terminal.tmux(&["kill-server"]);
    session.wait_listed("the runtime ends with Codex's session", |r| {
        r.is_none_or(|r| r["status"] != "running")
    });
    assert!(
        !session.codex_server().is_empty(),
        "the runtime ended by SessionEnd, while Codex's app server still runs"
    );

    // Remove: the user's hooks file is theirs again; config.toml is as Codex left it.
    let config_before = std::fs::read_to_string(session.home().join(".codex/config.toml")).unwrap();
    let removed = session.run(&["hooks", "remove", "codex", "--yes"]);
    assert!(removed.status.success(), "{removed:?}");
    let hooks: Value =
        serde_json::from_slice(&std::fs::read(session.home().join(".codex/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(hooks, serde_json::from_str::<Value>(USER_HOOKS).unwrap());
    let config_after = std::fs::read_to_string(session.home().join(".codex/config.toml")).unwrap();
    assert_eq!(
        config_before, config_after,
        "config.toml is never written by us"
    );
    assert!(config_after.starts_with(USER_CONFIG));

    assert!(
        !session.printed.contains(API_KEY_CANARY),
        "the key in our output"
    );
    assert!(
        !session.files_text().contains(API_KEY_CANARY),
        "the key in a file of ours"
    );
}

/// `attach ID --no-open` kept running, and the browser's part done by hand: the one-time link (a
/// cookie), then the conversation JSON the page shows, through the proxy.
struct Attached {
    child: std::process::Child,
    origin: String,
    cookie: String,
}

impl Attached {
    fn open(session: &mut Session, runtime: &tokio::runtime::Runtime, id: &str) -> Self {
        let (child, url, origin) = attach_link(session.command(&["attach", id, "--no-open"]));
        let cookie = runtime.block_on(async {
            let link = client().get(&url).send().await.unwrap();
            assert_eq!(link.status(), 303);
            let cookie = link.headers()["set-cookie"].to_str().unwrap();
            cookie.split(';').next().unwrap().to_owned()
        });
        Self {
            child,
            origin,
            cookie,
        }
    }

    /// Waits until the page's conversation is `expected` (role, text), as the page reloads it.
    fn wait_conversation(
        &self,
        runtime: &tokio::runtime::Runtime,
        what: &str,
        expected: &[(&str, String)],
    ) {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let conversation: Value = runtime.block_on(async {
                client()
                    .get(format!("{}/api/conversation", self.origin))
                    .header("cookie", &self.cookie)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap()
            });
            let shown: Vec<(String, String)> = conversation["messages"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap_or_default().to_owned(),
                        m["text"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let wanted: Vec<(String, String)> = expected
                .iter()
                .map(|(role, text)| ((*role).to_owned(), text.clone()))
                .collect();
            if shown == wanted {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: the conversation never became {wanted:?}; last: {conversation}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}
