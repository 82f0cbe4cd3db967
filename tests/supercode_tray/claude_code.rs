//! Issue 32 with the real Claude Code CLI (2.1.328 from npm, pinned in `tests/claude-code/`,
//! installed by `scripts/install-deps.sh --test`), run interactively in `tmux` as a user runs
//! it, pointed at a stand-in of the Anthropic Messages API that this test serves: each prompt
//! "make marker-N" gets one Bash call `touch <dir>/marker-N`, and after its result the turn
//! ends with text. Claude Code's first-run state is seeded in a temp HOME (onboarding done, the
//! folder trusted, the test key approved) and it runs with `--permission-mode default`.
//!
//! The walk: `hooks install claude-code --yes` → the session is listed by `list --json` →
//! `needs-approval` with the command as detail → `act approve` → the command ran and the
//! terminal says the hook allowed it → `needs-input` with the last message; `act deny` → it did
//! not run; the terminal answering first → needs-approval clears and a late `act` is refused
//! with "already answered in the terminal"; `attach --no-open` and the page and conversation
//! through the proxy show the stand-in's text; `claude -p` is not held and its command is not
//! allowed by anyone; the host killed while a request waits leaves the terminal asking, and
//! the next hook starts a new one; SIGKILL of Claude Code ends the runtime; the canary
//! API key is in no output, receipt, log, settings file, or the host's environment.
//!
//! The user's own hook runs beside ours throughout, and `hooks remove` leaves exactly the
//! user's settings. Skipped with a message when the pinned CLI or tmux is not installed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::terminal::{have_tmux, processes_running, Terminal};
use serde_json::{json, Value};

const TRAY: &str = env!("CARGO_BIN_EXE_supercode-tray");
/// The canary API key Claude Code is given: it must show up nowhere of ours.
const API_KEY_CANARY: &str = "sk-ant-api03-canary-claude-code-5f1e0c7b9d2a4e68";
/// Generous for a loaded CI machine; each step takes well under a second here.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

fn claude_binary() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    path.is_file().then_some(path)
}

/// The stand-in Messages API: a tool call for each prompt naming a marker, then text.
fn serve_model(runtime: &tokio::runtime::Runtime, markers: PathBuf) -> SocketAddr {
    use axum::body::Bytes;
    use axum::response::IntoResponse;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let handler = move |body: Bytes| {
        let markers = markers.clone();
        async move {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let answer = answer(&request, &markers);
            // What each request got, for a failure's message.
            let line = format!(
                "tools={} stream={} last={:.300} -> {}\n",
                request["tools"].as_array().map_or(0, Vec::len),
                request["stream"],
                request["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .map(|m| m["content"].to_string())
                    .unwrap_or_default(),
                answer.1
            );
            use std::io::Write as _;
            if let Ok(mut log) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(markers.join("requests.log"))
            {
                let _ = log.write_all(line.as_bytes());
            }
            if request["stream"] == true {
                ([("content-type", "text/event-stream")], sse(&answer)).into_response()
            } else {
                axum::Json(json!({
                    "id": "msg_0", "type": "message", "role": "assistant", "model": "stand-in",
                    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                    "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}
                }))
                .into_response()
            }
        }
    };
    let app = axum::Router::new()
        .route("/v1/messages", axum::routing::post(handler))
        .route(
            "/v1/messages/count_tokens",
            axum::routing::post(|| async { axum::Json(json!({"input_tokens": 10})) }),
        )
        .fallback(|| async { axum::Json(json!({})) });
    runtime.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    address
}

/// A content block and a stop reason: the tool call, or (once its result is in, or for any
/// side request without tools) the closing text.
fn answer(request: &Value, markers: &Path) -> (Value, &'static str) {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    // The last user message (Claude Code may put a system message after it).
    let last = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .cloned()
        .unwrap_or(Value::Null);
    let blocks = last["content"].as_array().cloned().unwrap_or_default();
    let has_bash = request["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
    let prompt: String = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join(" ");
    let marker = prompt
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .rfind(|w| w.starts_with("marker-"));
    // Each marker gets one call (its id names the marker); once the conversation holds that
    // call's result, however Claude Code orders its blocks, the turn ends.
    let answered = |marker: &str| {
        messages.iter().any(|m| {
            m["content"].as_array().is_some_and(|blocks| {
                blocks.iter().any(|b| {
                    b["type"] == "tool_result" && b["tool_use_id"] == format!("toolu_{marker}")
                })
            })
        })
    };
    match (has_bash, marker.filter(|m| !answered(m))) {
        (true, Some(marker)) => (
            json!({"type": "tool_use", "id": format!("toolu_{marker}"), "name": "Bash", "input": {
                "command": format!("touch {}", markers.join(marker).display()),
                "description": format!("Create {marker}")
            }}),
            "tool_use",
        ),
        _ => (
            json!({"type": "text", "text": "All done: the marker is there.\nAnything else?"}),
            "end_turn",
        ),
    }
}

fn sse((block, stop): &(Value, &'static str)) -> String {
    let mut start = block.clone();
    let delta = if block["type"] == "tool_use" {
        start["input"] = json!({});
        json!({"type": "input_json_delta", "partial_json": block["input"].to_string()})
    } else {
        start["text"] = json!("");
        json!({"type": "text_delta", "text": block["text"]})
    };
    let events = [
        (
            "message_start",
            json!({"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "stand-in", "content": [],
            "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
        ),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": start}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ];
    events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect()
}

/// A temp HOME with Claude Code's first-run state, our directories, and the tmux server.
struct Session {
    /// First, so it is dropped first: the agent's tmux server is killed before its
    /// directories are removed.
    terminal: Terminal,
    dir: tempfile::TempDir,
    /// The stand-in's log of what each request got (shown when a step fails).
    requests_log: Option<PathBuf>,
    printed: String,
}

impl Session {
    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(TRAY);
        command.args(args);
        crate::cli::private_env(&mut command, self.dir.path());
        command
            .env("HOME", self.path("home"))
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env_remove("CLAUDE_CONFIG_DIR");
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

    /// The Claude Code runtime in `list --json`, when there is one.
    fn listed(&mut self) -> Option<Value> {
        let output = self.run(&["list", "--json"]);
        assert!(output.status.success(), "{output:?}");
        let list: Value = serde_json::from_slice(&output.stdout).unwrap();
        list["runtimes"]
            .as_array()?
            .iter()
            .find(|r| r.to_string().contains("claude-code"))
            .cloned()
    }

    fn wait_listed(&mut self, what: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let listed = self.listed();
            if let Some(runtime) = listed.as_ref().filter(|r| check(r)) {
                return runtime.clone();
            }
            assert!(
                Instant::now() < deadline,
                "{what}: never happened; last list: {listed:?}\nscreen:\n{}\nrequests:\n{}",
                self.terminal.screen(),
                self.requests_log
                    .as_ref()
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn files_text(&self) -> String {
        let mut text = String::new();
        let mut stack = vec![self.dir.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                // Claude Code's own files (its transcript, its .claude.json) and our launch
                // script hold the key or the prompts; ours are the rest.
                if path.ends_with("home/.claude/projects") || path.ends_with("run-claude.sh") {
                    continue;
                }
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(path),
                    Ok(t) if t.is_file() => {
                        text.push_str(&String::from_utf8_lossy(
                            &std::fs::read(&path).unwrap_or_default(),
                        ));
                    }
                    _ => {}
                }
            }
        }
        text
    }
}

/// Starts Claude Code in tmux and waits for its prompt.
fn launch(session: &Session) {
    let script = session.path("run-claude.sh");
    session.terminal.start(&script.display().to_string());
    session
        .terminal
        .wait_screen("Claude Code starts", "manual mode on");
}

/// The session's directories, Claude Code's first-run state and its launch script; not started.
fn prepare_session(claude: &Path, model: SocketAddr) -> Session {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let session = Session {
        requests_log: None,
        terminal: Terminal::new(
            format!("supercode-test-{}", std::process::id()),
            "claude",
            STEP_TIMEOUT,
            Duration::from_millis(200),
        ),
        printed: String::new(),
        dir,
    };
    for sub in ["home/.claude", "project", "markers", "canon", "run"] {
        std::fs::create_dir_all(session.path(sub)).unwrap();
    }
    std::fs::set_permissions(session.path("run"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let project = session.path("project");
    let key_tail = &API_KEY_CANARY[API_KEY_CANARY.len() - 20..];
    let first_run = json!({
        "hasCompletedOnboarding": true,
        "theme": "dark",
        "customApiKeyResponses": { "approved": [key_tail], "rejected": [] },
        "projects": { project.display().to_string(): {
            "hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true, "allowedTools": []
        }}
    });
    std::fs::write(session.path("home/.claude.json"), first_run.to_string()).unwrap();
    let script = session.path("run-claude.sh");
    let mut env = String::new();
    for (name, value) in [
        ("HOME", session.path("home").display().to_string()),
        ("XDG_RUNTIME_DIR", session.path("run").display().to_string()),
        (
            "SUPERCODE_RUNTIME_DIR",
            session.path("receipts").display().to_string(),
        ),
        ("SUPERCODE_SECRET_STORE", "file".to_owned()),
        (
            "SUPERCODE_SECRET_DIR",
            session.path("secrets").display().to_string(),
        ),
        (
            "SUPERCODE_LOG_DIR",
            session.path("logs").display().to_string(),
        ),
        (
            "SUPERCODE_STATE_DIR",
            session.path("state").display().to_string(),
        ),
        ("CANON_HOME", session.path("canon").display().to_string()),
        ("ANTHROPIC_BASE_URL", format!("http://{model}")),
        ("ANTHROPIC_API_KEY", API_KEY_CANARY.to_owned()),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
    ] {
        env.push_str(&format!("export {name}='{value}'\n"));
    }
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nunset CLAUDE_CONFIG_DIR\n{env}cd '{}'\nexec '{}' --permission-mode default \"$@\"\n",
            project.display(),
            claude.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
    session
}

/// `attach ID --no-open`, then the browser's part done by hand: the one-time link (a cookie), the
/// page, and the conversation JSON the page shows, all through the proxy.
fn attach_shows_the_conversation(
    session: &mut Session,
    runtime: &tokio::runtime::Runtime,
    id: &str,
    marker: &Path,
) {
    use std::io::BufRead;
    let mut attach = session
        .command(&["attach", id, "--no-open"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufReader::new(attach.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_owned();
    assert!(url.contains("/__attach/"), "first line is the URL: {url:?}");
    let origin = url[..url.find("/__attach/").unwrap()].to_owned();
    let (page, csp, conversation) = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let link = client.get(&url).send().await.unwrap();
        assert_eq!(link.status(), 303);
        let cookie = link.headers()["set-cookie"].to_str().unwrap();
        let cookie = cookie.split(';').next().unwrap().to_owned();
        let page = client
            .get(format!("{origin}/"))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 200);
        let csp = page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let page = page.text().await.unwrap();
        // Claude Code writes the turn's last text to its transcript a moment after its `Stop`
        // hook; the page reloads it on every status change and every few seconds, so does this.
        let deadline = Instant::now() + STEP_TIMEOUT;
        let conversation = loop {
            let conversation: Value = client
                .get(format!("{origin}/api/conversation"))
                .header("cookie", &cookie)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let texts = conversation["messages"].to_string();
            if texts.contains("All done: the marker is there.") || Instant::now() > deadline {
                break conversation;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        (page, csp, conversation)
    });
    let _ = attach.kill();
    let _ = attach.wait();
    assert!(page.contains("/session.js"), "{page}");
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let said: Vec<(String, String)> = conversation["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("{conversation}"))
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let has = |role: &str, text: &str| said.iter().any(|(r, t)| r == role && t.contains(text));
    assert!(has("user", "make marker-1"), "{said:?}");
    assert!(
        has("tool", &format!("Bash: touch {}", marker.display())),
        "{said:?}"
    );
    assert!(
        has("assistant", "All done: the marker is there."),
        "the stand-in's text: {said:?}"
    );
}

#[test]
fn issue_32_a_real_claude_code_session_is_a_runtime_approved_and_denied_from_the_tray() {
    let (Some(claude), true) = (claude_binary(), have_tmux()) else {
        let why =
            "the pinned Claude Code CLI or tmux is missing; run scripts/install-deps.sh --test";
        assert!(std::env::var_os(crate::REQUIRE_AGENTS).is_none(), "{why}");
        eprintln!("skipped: {why}");
        return;
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let markers_dir = tempfile::tempdir().unwrap();
    let markers = markers_dir.path().to_path_buf();
    let model = serve_model(&runtime, markers.clone());

    let mut session = prepare_session(&claude, model);
    session.requests_log = Some(markers.join("requests.log"));
    // The user's own settings and hook, which must keep working beside ours and stay after
    // `hooks remove`: it counts the tool calls Claude Code makes.
    let own_hook_log = session.path("own-hook.log");
    let users_own = json!({
        "model": "stand-in",
        "hooks": { "PreToolUse": [ { "matcher": "Bash", "hooks": [
            { "type": "command", "command": format!("echo call >> '{}'", own_hook_log.display()) }
        ] } ] }
    });
    let settings_path = session.path("home/.claude/settings.json");
    std::fs::write(
        &settings_path,
        serde_json::to_vec_pretty(&users_own).unwrap(),
    )
    .unwrap();
    // Before Claude Code starts: it reads its hooks once, at start.
    let install = session.run(&["hooks", "install", "claude-code", "--yes"]);
    assert!(install.status.success(), "{install:?}");
    assert!(String::from_utf8_lossy(&install.stdout).contains("PermissionRequest"));
    let status = session.run(&["hooks", "status", "--json"]);
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["agents"][0]["installed"], "yes", "{status}");
    let doctor = session.run(&["doctor", "--json"]);
    let doctor: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let check = doctor["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "Claude Code"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(check["status"], "ok", "{check}");
    assert!(
        check["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with("connected"),
        "{check}"
    );
    launch(&session);

    // Approve from the tray's command line.
    session.terminal.type_line("make marker-1");
    let asking = session.wait_listed("needs-approval", |r| {
        r["state"]["value"] == "needs-approval"
    });
    assert_eq!(asking["state"]["title"], "Run Bash?");
    let marker1 = markers.join("marker-1");
    assert_eq!(
        asking["state"]["detail"],
        format!("touch {}", marker1.display())
    );
    assert_eq!(
        asking["source"]["workspace"],
        session.path("project").display().to_string()
    );
    let id = asking["endpoint"].as_str().unwrap().to_owned();
    let claude_pid = asking["pid"].as_u64().unwrap();
    assert_ne!(claude_pid as u32, std::process::id());
    let approve = session.run(&["act", &id, "approve"]);
    assert!(approve.status.success(), "{approve:?}");
    let done = session.wait_listed("needs-input after the turn", |r| {
        r["state"]["value"] == "needs-input"
    });
    assert_eq!(done["state"]["title"], "All done: the marker is there.");
    assert!(marker1.exists(), "the approved command ran");
    session.terminal.wait_screen(
        "the terminal says the hook allowed it",
        "PermissionRequest hook",
    );

    // Attach opens the session: through the attach proxy's one-time link, its page and the
    // conversation so far, read from the transcript Claude Code keeps.
    attach_shows_the_conversation(&mut session, &runtime, &id, &marker1);

    // Deny from the tray.
    session.terminal.type_line("make marker-2");
    session.wait_listed("needs-approval again", |r| {
        r["state"]["value"] == "needs-approval"
    });
    let deny = session.run(&["act", &id, "deny", "--yes"]);
    assert!(deny.status.success(), "{deny:?}");
    session.wait_listed("the turn goes on after the denial", |r| {
        r["state"]["value"] != "needs-approval"
    });
    assert!(
        !markers.join("marker-2").exists(),
        "the denied command did not run"
    );

    // The terminal answers first: the tray's request clears and a late answer is refused.
    session.wait_listed("idle between turns", |r| {
        r["state"]["value"] == "needs-input"
    });
    session.terminal.type_line("make marker-3");
    session.wait_listed("needs-approval a third time", |r| {
        r["state"]["value"] == "needs-approval"
    });
    session
        .terminal
        .wait_screen("the terminal's dialog", "Do you want to proceed?");
    // Claude Code's dialog ignores keys for a moment after it opens (as against a stray key): a
    // person reads it first; so does this test, and presses again if the key came too early.
    let deadline = Instant::now() + STEP_TIMEOUT;
    while session
        .terminal
        .screen()
        .contains("Do you want to proceed?")
    {
        assert!(
            Instant::now() < deadline,
            "the terminal's dialog took no answer"
        );
        std::thread::sleep(Duration::from_millis(700));
        session.terminal.tmux(&["send-keys", "-t", "claude", "1"]);
    }
    session.wait_listed("needs-approval cleared by the terminal", |r| {
        r["state"]["value"] != "needs-approval"
    });
    let late = session.run(&["act", &id, "approve"]);
    assert_eq!(late.status.code(), Some(1), "{late:?}");
    // `act` checks what the runtime offers now first and quotes what its document says: "Already
    // answered in the terminal" until the session moves on (here the stand-in ends the turn at
    // once, so `act` may already see its last message); a click that races the terminal gets
    // the runtime's own refusal, "already answered in the terminal" (crates/agent-hooks tests).
    let refusal = String::from_utf8_lossy(&late.stderr);
    assert!(
        refusal.contains("does not offer \"approve\" now: it says")
            || refusal.contains("already answered in the terminal"),
        "{late:?}"
    );
    let deadline = Instant::now() + STEP_TIMEOUT;
    while !markers.join("marker-3").exists() {
        assert!(
            Instant::now() < deadline,
            "the terminal's yes ran the command"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // The session's host killed while a request waits: the hook gives no decision, the terminal
    // still asks and its answer runs the command; the next hook starts a new host.
    session.wait_listed("needs-input before the host is killed", |r| {
        r["state"]["value"] == "needs-input"
    });
    session.terminal.type_line("make marker-5");
    session.wait_listed("needs-approval for the host to die in", |r| {
        r["state"]["value"] == "needs-approval"
    });
    session
        .terminal
        .wait_screen("the terminal's dialog", "Do you want to proceed?");
    // Only this session's host: its command line names the session's directory.
    let project = session.path("project").display().to_string();
    for pid in processes_running(&format!("--cwd {project}")) {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
    }
    let deadline = Instant::now() + STEP_TIMEOUT;
    while !processes_running(" hook claude-code").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the waiting hook outlived its host"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        session
            .terminal
            .screen()
            .contains("Do you want to proceed?"),
        "the terminal still asks:\n{}",
        session.terminal.screen()
    );
    assert!(
        !markers.join("marker-5").exists(),
        "nothing was decided for the user"
    );
    let deadline = Instant::now() + STEP_TIMEOUT;
    while session
        .terminal
        .screen()
        .contains("Do you want to proceed?")
    {
        assert!(
            Instant::now() < deadline,
            "the terminal's dialog took no answer"
        );
        std::thread::sleep(Duration::from_millis(700));
        session.terminal.tmux(&["send-keys", "-t", "claude", "1"]);
    }
    session.wait_listed("a new host after the next hook", |r| {
        r["state"]["value"] == "needs-input"
    });
    assert!(
        markers.join("marker-5").exists(),
        "the terminal's yes ran the command"
    );

    // The host holds none of Claude Code's environment.
    let host_env: String = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains("hook-host"))
        })
        .map(|e| {
            String::from_utf8_lossy(&std::fs::read(e.path().join("environ")).unwrap_or_default())
                .into_owned()
        })
        .collect();
    assert!(
        host_env.contains("SUPERCODE_RUNTIME_DIR"),
        "a host runs: {host_env}"
    );

    // A script's session (`claude -p`) is not held: no decision, so Claude Code denies at once
    // and the script goes on exactly as without the hooks.
    let started = Instant::now();
    let script = Command::new(session.path("run-claude.sh"))
        .args(["-p", "make marker-4"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(script.status.success(), "{script:?}");
    assert!(
        started.elapsed() < STEP_TIMEOUT / 2,
        "claude -p waited: {:?}",
        started.elapsed()
    );
    assert!(
        !markers.join("marker-4").exists(),
        "nobody allowed the script's command"
    );
    session
        .printed
        .push_str(&String::from_utf8_lossy(&script.stdout));

    // SIGKILL of Claude Code ends the runtime.
    let _ = Command::new("kill")
        .args(["-KILL", &claude_pid.to_string()])
        .status();
    let deadline = Instant::now() + STEP_TIMEOUT;
    while session.listed().is_some() {
        assert!(
            Instant::now() < deadline,
            "the runtime outlived Claude Code"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let everything = format!("{}{}{host_env}", session.printed, session.files_text());
    assert!(
        !everything.contains(API_KEY_CANARY),
        "the API key reached our output, files or the host's environment"
    );
    let settings = std::fs::read_to_string(&settings_path).unwrap();
    assert!(!settings.contains(API_KEY_CANARY));

    // The user's own hook ran for every Bash call beside ours (approved, denied, the terminal's
    // yes, the script's), and `hooks remove` leaves exactly the user's settings.
    let own_calls = std::fs::read_to_string(&own_hook_log).unwrap_or_default();
    assert_eq!(own_calls.lines().count(), 5, "{own_calls}");
    let remove = session.run(&["hooks", "remove", "claude-code", "--yes"]);
    assert!(remove.status.success(), "{remove:?}");
    let left: Value = serde_json::from_slice(&std::fs::read(&settings_path).unwrap()).unwrap();
    assert_eq!(
        left, users_own,
        "hooks remove left exactly the user's own settings"
    );
}
