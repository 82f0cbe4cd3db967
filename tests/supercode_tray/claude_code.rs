//! Issue 32 with the real Claude Code CLI (2.1.332 from npm, pinned in `tests/claude-code/`,
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
//! user's settings.
//!
//! Beside the walk, one test each for the rest of the issue: two sessions at once, a subagent
//! (the stand-in delegates, and holds chosen answers back so the test sees the session while
//! the subagent works), "Always allow", and `claude -p` answered from the tray when the user
//! chose so. They log what Claude Code sent through a hook of the user's own, as a witness.
//! Skipped with a message when the pinned CLI or tmux is not installed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::terminal::{attach_link, have_tmux, processes_running, Terminal};
use serde_json::{json, Value};

const TRAY: &str = env!("CARGO_BIN_EXE_supercode-tray");
/// The hook program our entries run.
const HOOK: &str = env!("CARGO_BIN_EXE_supercode-tray-hook");
/// The canary API key Claude Code is given: it must show up nowhere of ours.
const API_KEY_CANARY: &str = "sk-ant-api03-canary-claude-code-5f1e0c7b9d2a4e68";
/// Generous for a loaded CI machine; each step takes well under a second here.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);

fn claude_binary() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/claude-code/node_modules/@anthropic-ai/claude-code-linux-x64/claude");
    path.is_file().then_some(path)
}

/// The stand-in Messages API, and the hold it puts on the end of a delegating turn.
struct StandIn {
    address: SocketAddr,
    /// How many answers are held back (see [`answer`]): a delegating turn's closing text waits
    /// until the test releases it, so the test sees the session between its subagent's end and
    /// the turn's end.
    held: tokio::sync::watch::Receiver<usize>,
    release: Arc<tokio::sync::Semaphore>,
    /// What each request got.
    log: PathBuf,
}

impl StandIn {
    /// Waits until `count` answers have been held back in all.
    fn wait_held(&self, runtime: &tokio::runtime::Runtime, count: usize) {
        let mut held = self.held.clone();
        runtime
            .block_on(async {
                tokio::time::timeout(STEP_TIMEOUT, held.wait_for(|held| *held >= count))
                    .await
                    .map(|_| ())
            })
            .unwrap_or_else(|_| {
                panic!(
                    "the stand-in's held request {count} never came; requests:\n{}",
                    std::fs::read_to_string(&self.log).unwrap_or_default()
                )
            });
    }

    /// Lets one held answer go.
    fn release_one(&self) {
        self.release.add_permits(1);
    }
}

/// Serves the stand-in Messages API (see [`answer`]) on loopback; `markers` gets its log.
fn serve_model(runtime: &tokio::runtime::Runtime, markers: PathBuf) -> StandIn {
    use axum::body::Bytes;
    use axum::response::IntoResponse;
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let (held_tx, held) = tokio::sync::watch::channel(0usize);
    let held_tx = Arc::new(held_tx);
    let release = Arc::new(tokio::sync::Semaphore::new(0));
    let gate = Arc::clone(&release);
    let log = markers.join("requests.log");
    let handler = move |body: Bytes| {
        let markers = markers.clone();
        let (held_tx, gate) = (Arc::clone(&held_tx), Arc::clone(&gate));
        async move {
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (answer, hold) = answer(&request, &markers);
            // What each request got, for a failure's message.
            let line = format!(
                "tools={} stream={} last user message ends={} -> {}{}\n",
                request["tools"]
                    .as_array()
                    .map(|t| t
                        .iter()
                        .filter_map(|t| t["name"].as_str())
                        .collect::<Vec<_>>()
                        .join(","))
                    .unwrap_or_default(),
                request["stream"],
                request["messages"]
                    .as_array()
                    .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
                    .map(|m| {
                        let text = m["content"].to_string();
                        text[text.len().saturating_sub(300)..].to_owned()
                    })
                    .unwrap_or_default(),
                answer.1,
                if hold { " (held)" } else { "" },
            );
            use std::io::Write as _;
            if let Ok(mut log) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(markers.join("requests.log"))
            {
                let _ = log.write_all(line.as_bytes());
            }
            if hold {
                held_tx.send_modify(|held| *held += 1);
                gate.acquire().await.unwrap().forget();
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
    StandIn {
        address,
        held,
        release,
        log,
    }
}

/// Claude Code's tool for running a subagent (2.1.328 calls it `Agent`; older ones `Task`).
const SUBAGENT_TOOL: &str = "Agent";

/// The stand-in's script, by the latest thing said in the conversation (the last user message's
/// last tool result or text, leaving out the reminders Claude Code adds): "make marker-N" gets
/// one Bash call `touch <markers>/marker-N`; "delegate marker-N" gets one call of the subagent
/// tool, whose prompt "make marker-N as a subagent" gets the Bash call from the subagent; a
/// tool's result, a subagent's report (`<task-notification>`) and any side request without
/// tools get the closing text. The closing text after a subagent's Bash call and after a
/// delegating call is held back (the `bool`) until the test releases it, so the test sees the
/// session while its subagent is at work and while only the main agent is.
fn answer(request: &Value, markers: &Path) -> ((Value, &'static str), bool) {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    // A message's blocks; a plain string (a subagent's first prompt) is one text block.
    let blocks_of = |message: &Value| -> Vec<Value> {
        match &message["content"] {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        }
    };
    let users: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    let subagent = users.first().is_some_and(|first| {
        blocks_of(first).iter().any(|b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.contains("as a subagent"))
        })
    });
    let latest = users
        .last()
        .map(|last| blocks_of(last))
        .unwrap_or_default()
        .into_iter()
        .rev()
        .find(|b| {
            b["type"] == "tool_result"
                || b["text"].as_str().is_some_and(|t| {
                    !t.trim_start().starts_with("<system-reminder>")
                        || t.contains("<task-notification>")
                })
        })
        .unwrap_or(Value::Null);
    let has_tool = |name: &str| {
        request["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["name"] == name))
    };
    let closing = |held: bool| {
        (
            (
                json!({"type": "text", "text": "All done: the marker is there.\nAnything else?"}),
                "end_turn",
            ),
            held,
        )
    };
    if let Some(id) = latest["tool_use_id"].as_str() {
        return closing(
            id.starts_with("toolu_agent_") || (subagent && id.starts_with("toolu_marker-")),
        );
    }
    let prompt = latest["text"].as_str().unwrap_or_default();
    let marker = prompt
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .rfind(|w| w.starts_with("marker-"));
    // Each call's id names its marker: a marker whose call was answered gets the closing text.
    let answered = |id: &str| {
        messages.iter().any(|m| {
            blocks_of(m)
                .iter()
                .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
        })
    };
    match marker {
        _ if prompt.contains("<task-notification>") => closing(false),
        // Claude Code may put a call's result before the prompt's text in one message.
        Some(marker) if answered(&format!("toolu_agent_{marker}")) => closing(true),
        Some(marker) if answered(&format!("toolu_{marker}")) => closing(subagent),
        Some(marker) if prompt.contains("delegate marker-") && has_tool(SUBAGENT_TOOL) => (
            (
                json!({"type": "tool_use", "id": format!("toolu_agent_{marker}"), "name": SUBAGENT_TOOL, "input": {
                    "description": format!("Make {marker}"),
                    "prompt": format!("make {marker} as a subagent"),
                    "subagent_type": "general-purpose"
                }}),
                "tool_use",
            ),
            false,
        ),
        Some(marker) if prompt.contains("make marker-") && has_tool("Bash") => (
            (
                json!({"type": "tool_use", "id": format!("toolu_{marker}"), "name": "Bash", "input": {
                    "command": format!("touch {}", markers.join(marker).display()),
                    "description": format!("Create {marker}")
                }}),
                "tool_use",
            ),
            false,
        ),
        _ => closing(false),
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
    /// The test's own tmux server name.
    server: String,
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
            .env("XDG_CONFIG_HOME", self.path("home/.config"))
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
        self.listed_all().into_iter().next()
    }

    /// Every Claude Code runtime in `list --json`.
    fn listed_all(&mut self) -> Vec<Value> {
        let output = self.run(&["list", "--json"]);
        assert!(output.status.success(), "{output:?}");
        let list: Value = serde_json::from_slice(&output.stdout).unwrap();
        list["runtimes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r.to_string().contains("claude-code"))
            .cloned()
            .collect()
    }

    /// Waits until `check` holds for every Claude Code runtime listed at once, and returns them.
    fn wait_all_listed(&mut self, what: &str, check: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let listed = self.listed_all();
            if check(&listed) {
                return listed;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: never happened; last list: {listed:#?}\n{}",
                self.evidence()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What a failed step shows: the screen and what the stand-in answered.
    fn evidence(&self) -> String {
        format!(
            "screen:\n{}\nrequests:\n{}",
            self.terminal.screen(),
            self.requests_log
                .as_ref()
                .and_then(|p| std::fs::read_to_string(p).ok())
                .unwrap_or_default()
        )
    }

    /// True while a hook of this session's Claude Code runs.
    fn hooks_running(&self) -> bool {
        self.hooks() > 0
    }

    /// How many of our hooks this session's Claude Code runs now (other tests' run in
    /// parallel), each counted by the `sh -c` Claude Code starts it through: that shell lives
    /// from the hook's start to the program's end, where the program itself appears only once
    /// the shell has started it, so a wait could otherwise end in between, before the hook's
    /// event reached its host.
    fn hooks(&self) -> usize {
        let home = format!("HOME={}\0", self.path("home").display());
        processes_running(HOOK)
            .iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                    let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
                    args.len() > 2 && args[0].ends_with(b"sh") && args[1] == b"-c"
                }) && std::fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| String::from_utf8_lossy(&env).contains(&home))
            })
            .count()
    }

    /// Waits until the user's logging hook has seen `count` main-agent `Stop`s and our hooks for
    /// them are done, leaving only `waiting` (permission requests held for the tray).
    fn wait_stops_taken_in(&self, log: &Path, count: usize, waiting: usize) {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let stops = logged_events(log)
                .iter()
                .filter(|e| e["hook_event_name"] == "Stop")
                .count();
            if stops >= count && self.hooks() == waiting {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the turn's end was never taken in ({stops} stops, {} hooks)\n{}",
                self.hooks(),
                self.evidence()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Answers the terminal's permission dialog with "1" (yes).
    fn answer_yes_in(&self, terminal: &Terminal) {
        terminal.wait_screen("the terminal's dialog", "Do you want to proceed?");
        // Claude Code's dialog ignores keys for a moment after it opens (as against a stray
        // key): a person reads it first; so does this, and presses again if the key came early.
        let deadline = Instant::now() + STEP_TIMEOUT;
        while terminal.screen().contains("Do you want to proceed?") {
            assert!(
                Instant::now() < deadline,
                "the terminal's dialog took no answer"
            );
            std::thread::sleep(Duration::from_millis(700));
            terminal.keys(&["1"]);
        }
    }

    /// A second terminal for a second Claude Code in the same HOME (its own tmux server).
    fn second_terminal(&self) -> Terminal {
        Terminal::new(
            format!("{}-b", self.server),
            "claude",
            STEP_TIMEOUT,
            Duration::from_millis(200),
        )
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
                "{what}: never happened; last list: {listed:?}\n{}",
                self.evidence()
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

/// Starts Claude Code in the session's tmux and waits for its prompt.
fn launch(session: &Session) {
    launch_in(session, &session.terminal);
}

/// Starts Claude Code in `terminal`, with the session's HOME and stand-in, and waits for its prompt.
fn launch_in(session: &Session, terminal: &Terminal) {
    let script = session.path("run-claude.sh");
    terminal.start(&script.display().to_string());
    terminal.wait_screen("Claude Code starts", "manual mode on");
}

/// The session's directories, Claude Code's first-run state and its launch script; not started.
/// `test` names the test's tmux server (tests run in parallel).
fn prepare_session(test: &str, claude: &Path, model: &StandIn, markers: &Path) -> Session {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let server = format!("supercode-test-{}-{test}", std::process::id());
    let session = Session {
        requests_log: Some(markers.join("requests.log")),
        terminal: Terminal::new(
            server.clone(),
            "claude",
            STEP_TIMEOUT,
            Duration::from_millis(200),
        ),
        printed: String::new(),
        server,
        dir,
    };
    let model = model.address;
    for sub in [
        "home/.claude",
        "home/.config",
        "project",
        "markers",
        "canon",
        "run",
    ] {
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
            "XDG_CONFIG_HOME",
            session.path("home/.config").display().to_string(),
        ),
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
    let (mut attach, url, origin) = attach_link(session.command(&["attach", id, "--no-open"]));
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
    let Some(Walk {
        runtime,
        _markers_dir,
        markers,
        model: _model,
        mut session,
    }) = walk("walk")
    else {
        return;
    };
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
    session.answer_yes_in(&session.terminal);
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
    while session.hooks_running() {
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
    session.answer_yes_in(&session.terminal);
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
    let script = script_denied_at_once(&session, &markers, "marker-4");
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

/// Writes the user's own settings with a hook of theirs that appends every event's input to
/// `events.jsonl` (what Claude Code really sent, as a witness), then installs ours beside it.
fn install_with_event_log(session: &mut Session) -> PathBuf {
    let log = session.path("events.jsonl");
    let logger = json!([{ "hooks": [{
        "type": "command",
        "command": format!("cat >> '{0}'; echo >> '{0}'", log.display())
    }] }]);
    let mut hooks = serde_json::Map::new();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PermissionRequest",
        "Notification",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "SessionEnd",
    ] {
        hooks.insert(event.to_owned(), logger.clone());
    }
    std::fs::write(
        session.path("home/.claude/settings.json"),
        json!({ "model": "stand-in", "hooks": hooks }).to_string(),
    )
    .unwrap();
    let install = session.run(&["hooks", "install", "claude-code", "--yes"]);
    assert!(install.status.success(), "{install:?}");
    log
}

/// The events the user's logging hook saw, in order.
fn logged_events(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// Runs `claude -p "make MARKER"` as a script does and checks that the script went on as
/// without the hooks: no decision was waited for, so Claude Code denied the command at once.
/// Returns what the script printed.
fn script_denied_at_once(session: &Session, markers: &Path, marker: &str) -> Output {
    let started = Instant::now();
    let script = Command::new(session.path("run-claude.sh"))
        .args(["-p", &format!("make {marker}")])
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
        !markers.join(marker).exists(),
        "nobody allowed the script's command"
    );
    script
}

/// What each walk starts from: the pinned CLI (or the skip, see [`claude_or_skip`]), the stand-in
/// model API on a runtime of its own, the directory its commands leave markers in, and a prepared
/// session. Bind every field (in this order, so they drop as plain locals would: the session
/// first, the runtime last).
struct Walk {
    runtime: tokio::runtime::Runtime,
    _markers_dir: tempfile::TempDir,
    markers: PathBuf,
    model: StandIn,
    session: Session,
}

/// The [`Walk`] of test `test`, or `None` (skipped) without the pinned CLI or tmux.
fn walk(test: &str) -> Option<Walk> {
    let claude = claude_or_skip()?;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let markers_dir = tempfile::tempdir().unwrap();
    let markers = markers_dir.path().to_path_buf();
    let model = serve_model(&runtime, markers.clone());
    let session = prepare_session(test, &claude, &model, &markers);
    Some(Walk {
        runtime,
        _markers_dir: markers_dir,
        markers,
        model,
        session,
    })
}

/// Skips (or, under `scripts/test-env.sh`, fails) without the pinned Claude Code and tmux.
fn claude_or_skip() -> Option<PathBuf> {
    match (claude_binary(), have_tmux()) {
        (Some(claude), true) => Some(claude),
        _ => {
            let why =
                "the pinned Claude Code CLI or tmux is missing; run scripts/install-deps.sh --test";
            assert!(std::env::var_os(crate::REQUIRE_AGENTS).is_none(), "{why}");
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// The state of the one Claude Code runtime, which must be the only one listed.
fn only_state(session: &mut Session) -> Value {
    let listed = session.listed_all();
    assert_eq!(listed.len(), 1, "one session, one runtime: {listed:#?}");
    listed[0]["state"].clone()
}

// Issue 32, "a subagent's events do not flip the session's state wrongly". In 2.1.328 and
// 2.1.332 a subagent (the `Agent` tool) runs in the background beside the main agent, whose turn
// goes on and ends while the subagent works; the subagent's report comes back as a new turn.
// Claude Code shows a background subagent's permission dialog only once every
// `PermissionRequest` hook is done (a user's own hook sleeping 15 s hid it for 15 s), so ours
// does not wait for the tray there: the terminal asks at once and the tray shows the request
// without Approve; with `hooks claude-code-unattended on` the tray answers it instead.
#[test]
fn issue_32_a_subagents_events_do_not_flip_the_sessions_state() {
    let Some(Walk {
        runtime,
        _markers_dir,
        markers,
        model,
        mut session,
    }) = walk("subagent")
    else {
        return;
    };
    let log = install_with_event_log(&mut session);
    launch(&session);

    // The subagent asks, in the terminal; the main agent's turn goes on and ends meanwhile.
    session.terminal.type_line("delegate marker-s1");
    let asking = session.wait_listed("the subagent's request", |r| {
        r["state"]["value"] == "needs-approval"
    });
    let s1 = markers.join("marker-s1");
    assert_eq!(asking["state"]["detail"], format!("touch {}", s1.display()));
    assert_eq!(
        asking["state"]["actions"],
        json!([]),
        "the terminal asks, not the tray: {asking}"
    );
    session
        .terminal
        .wait_screen("the subagent's dialog", "Do you want to proceed?");
    model.wait_held(&runtime, 1);
    model.release_one();
    session.wait_stops_taken_in(&log, 1, 0);
    let state = only_state(&mut session);
    assert_eq!(
        state["value"], "needs-approval",
        "the main agent's end does not hide its subagent's request: {state}"
    );
    // Answered in the terminal (its first choice, "Yes"): the subagent's command runs, and the
    // session is working while the subagent is, though the main agent's turn has ended.
    session.answer_yes_in(&session.terminal);
    model.wait_held(&runtime, 2);
    assert!(s1.exists(), "the command the terminal allowed ran");
    session.wait_listed("working after the terminal's answer", |r| {
        r["state"]["value"] == "working"
    });
    // Its report starts the main agent's next turn, whose end waits for the user.
    model.release_one();
    session.wait_listed("the report's turn ends", |r| {
        r["state"]["value"] == "needs-input"
    });

    // Chosen so, the tray answers a subagent's request (the terminal shows no dialog meanwhile),
    // while the tray watches.
    let on = session.run(&["hooks", "claude-code-unattended", "on"]);
    assert!(on.status.success(), "{on:?}");
    let _tray = crate::cli::watching(session.command(&["events", "--json"]));
    session.terminal.type_line("delegate marker-s2");
    let asking = session.wait_listed("the second subagent's request", |r| {
        r["state"]["value"] == "needs-approval"
    });
    let s2 = markers.join("marker-s2");
    assert_eq!(asking["state"]["detail"], format!("touch {}", s2.display()));
    let id = asking["endpoint"].as_str().unwrap().to_owned();
    model.wait_held(&runtime, 3);
    model.release_one();
    session.wait_stops_taken_in(&log, 3, 1);
    let state = only_state(&mut session);
    assert_eq!(state["value"], "needs-approval", "{state}");
    let approve = session.run(&["act", &id, "approve"]);
    assert!(approve.status.success(), "{approve:?}");
    model.wait_held(&runtime, 4);
    assert!(s2.exists(), "the subagent's approved command ran");
    let state = only_state(&mut session);
    assert_eq!(state["value"], "working", "{state}");
    model.release_one();
    session.wait_listed("the second report's turn ends", |r| {
        r["state"]["value"] == "needs-input"
    });

    // What Claude Code sent, as the user's own hook saw it: the requests came from the
    // subagents, the main agent's turns ended while they ran, and their ends were `SubagentStop`s.
    let events = logged_events(&log);
    let named = |name: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["hook_event_name"] == name)
            .collect()
    };
    let requests = named("PermissionRequest");
    assert_eq!(requests.len(), 2, "{requests:#?}");
    assert!(
        requests.iter().all(|e| e["agent_id"].is_string()),
        "{requests:#?}"
    );
    assert!(named("Stop").iter().all(|e| e["agent_id"].is_null()));
    assert!(
        named("Stop")
            .iter()
            .any(|e| e["background_tasks"][0]["status"] == "running"),
        "{events:#?}"
    );
    assert_eq!(named("SubagentStop").len(), 2, "{events:#?}");
}

// Issue 32, "Always allow": the action sends Claude Code's own suggestions back as
// `updatedPermissions`, its label names all of them, and the next identical call is not asked.
#[test]
fn issue_32_always_allow_from_the_tray_and_the_next_call_is_not_asked() {
    let Some(Walk {
        runtime: _runtime,
        _markers_dir,
        markers,
        model: _model,
        mut session,
    }) = walk("always")
    else {
        return;
    };
    let log = install_with_event_log(&mut session);
    let settings_path = session.path("home/.claude/settings.json");
    let installed = std::fs::read(&settings_path).unwrap();
    launch(&session);

    session.terminal.type_line("make marker-1");
    let asking = session.wait_listed("needs-approval", |r| {
        r["state"]["value"] == "needs-approval"
    });
    // 2.1.328 suggests, for a command writing outside the project, access to its directory and
    // the accept-edits mode, both for the session; the label says both.
    let always = asking["state"]["actions"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["id"] == "always"))
        .cloned()
        .unwrap_or_else(|| panic!("no always-allow action: {asking:#}"));
    let label = always["label"].as_str().unwrap_or_default();
    assert!(
        label.starts_with("Always allow (session): accept edits + access to /"),
        "{always:#}"
    );
    let id = asking["endpoint"].as_str().unwrap().to_owned();
    let act = session.run(&["act", &id, "always"]);
    assert!(act.status.success(), "{act:?}");
    session.wait_listed("the turn ends", |r| r["state"]["value"] == "needs-input");
    assert!(markers.join("marker-1").exists(), "the allowed command ran");

    // The next identical request is not asked: no PermissionRequest, never needs-approval.
    session.terminal.type_line("make marker-2");
    session.wait_stops_taken_in(&log, 2, 0);
    assert!(markers.join("marker-2").exists(), "the second command ran");
    let state = only_state(&mut session);
    assert_eq!(state["value"], "needs-input", "{state}");
    let events = logged_events(&log);
    let requests: Vec<&Value> = events
        .iter()
        .filter(|e| e["hook_event_name"] == "PermissionRequest")
        .collect();
    assert_eq!(requests.len(), 1, "only the first call asked: {events:#?}");
    let second = events
        .iter()
        .find(|e| e["hook_event_name"] == "PreToolUse" && e["tool_use_id"] == "toolu_marker-2")
        .unwrap_or_else(|| panic!("{events:#?}"));
    assert_eq!(
        second["permission_mode"], "acceptEdits",
        "as the label said"
    );
    // Claude Code kept the updates for the session only: nothing was written to its settings,
    // and our entries (and the user's) are exactly as installed.
    assert_eq!(std::fs::read(&settings_path).unwrap(), installed);
    assert!(!session.path("project/.claude/settings.local.json").exists());
    assert!(!session.path("project/.claude/settings.json").exists());
}

// Issue 32, "two sessions at once": two Claude Codes of the user in two terminals are two
// runtimes, each with its own state; answering one's request leaves the other's waiting.
#[test]
fn issue_32_two_sessions_at_once_are_two_runtimes_answered_apart() {
    let Some(Walk {
        runtime: _runtime,
        _markers_dir,
        markers,
        model: _model,
        mut session,
    }) = walk("two")
    else {
        return;
    };
    let install = session.run(&["hooks", "install", "claude-code", "--yes"]);
    assert!(install.status.success(), "{install:?}");
    let second = session.second_terminal();
    launch(&session);
    launch_in(&session, &second);

    session.terminal.type_line("make marker-a1");
    second.type_line("make marker-b1");
    let (a1, b1) = (markers.join("marker-a1"), markers.join("marker-b1"));
    let asks = |runtime: &Value, marker: &Path| {
        runtime["state"]["value"] == "needs-approval"
            && runtime["state"]["detail"] == format!("touch {}", marker.display())
    };
    let find = |listed: &[Value], marker: &Path| -> Option<Value> {
        listed
            .iter()
            .find(|r| r["state"]["detail"] == format!("touch {}", marker.display()))
            .cloned()
    };
    let both = session.wait_all_listed("both ask at once", |listed| {
        listed.len() == 2
            && listed.iter().any(|r| asks(r, &a1))
            && listed.iter().any(|r| asks(r, &b1))
    });
    let (a, b) = (find(&both, &a1).unwrap(), find(&both, &b1).unwrap());
    assert_ne!(a["endpoint"], b["endpoint"]);
    assert_ne!(a["source"]["sessionId"], b["source"]["sessionId"]);
    assert_ne!(a["pid"], b["pid"]);
    let (a_id, b_id) = (
        a["endpoint"].as_str().unwrap().to_owned(),
        b["endpoint"].as_str().unwrap().to_owned(),
    );

    // Approve A: A's command runs and its turn ends; B still asks, with its own actions.
    let approve = session.run(&["act", &a_id, "approve"]);
    assert!(approve.status.success(), "{approve:?}");
    let after = session.wait_all_listed("A's turn ends", |listed| {
        listed.len() == 2
            && listed
                .iter()
                .any(|r| r["endpoint"] == a_id.as_str() && r["state"]["value"] == "needs-input")
    });
    assert!(a1.exists(), "A's approved command ran");
    let b_now = after
        .iter()
        .find(|r| r["endpoint"] == b_id.as_str())
        .unwrap();
    assert!(asks(b_now, &b1), "B still asks: {b_now:#}");
    assert!(
        b_now["state"]["actions"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a["id"] == "approve")),
        "{b_now:#}"
    );
    assert!(!b1.exists(), "A's answer did not touch B");
    // A's approval cannot be spent on B again, nor B's on A.
    let again = session.run(&["act", &a_id, "approve"]);
    assert_eq!(again.status.code(), Some(1), "{again:?}");

    // Deny B: its command never runs, and A is untouched.
    let deny = session.run(&["act", &b_id, "deny", "--yes"]);
    assert!(deny.status.success(), "{deny:?}");
    session.wait_all_listed("B's turn ends after the denial", |listed| {
        listed.len() == 2 && listed.iter().all(|r| r["state"]["value"] == "needs-input")
    });
    assert!(!b1.exists(), "the denied command did not run");
    drop(second);
}

// Issue 32: a script's session (`claude -p`) gets no decision from the tray unless the user chose
// to answer unattended sessions from the tray (`hooks claude-code-unattended on`); then its
// request waits for the tray like an interactive one, and off again it is denied at once.
#[test]
fn issue_32_claude_p_waits_for_the_tray_only_when_the_user_chose_so() {
    let Some(Walk {
        runtime: _runtime,
        _markers_dir,
        markers,
        model: _model,
        mut session,
    }) = walk("unattended")
    else {
        return;
    };
    let install = session.run(&["hooks", "install", "claude-code", "--yes"]);
    assert!(install.status.success(), "{install:?}");
    let chosen = |session: &mut Session| {
        let status = session.run(&["hooks", "status", "--json"]);
        let status: Value = serde_json::from_slice(&status.stdout).unwrap();
        status["agents"][0]["unattendedFromTray"].clone()
    };
    assert_eq!(chosen(&mut session), false, "off by default");

    let on = session.run(&["hooks", "claude-code-unattended", "on"]);
    assert!(on.status.success(), "{on:?}");
    assert_eq!(chosen(&mut session), true);
    let status = session.run(&["hooks", "status"]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains(
            "unattended sessions (claude -p) and background subagents answered from the tray"
        ),
        "{status:?}"
    );
    let tray = crate::cli::watching(session.command(&["events", "--json"]));
    let mut script = Command::new(session.path("run-claude.sh"))
        .args(["-p", "make marker-p1"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let p1 = markers.join("marker-p1");
    let asking = session.wait_listed("the script's request waits for the tray", |r| {
        r["state"]["value"] == "needs-approval"
    });
    assert_eq!(asking["state"]["detail"], format!("touch {}", p1.display()));
    assert!(script.try_wait().unwrap().is_none(), "the script waits");
    let id = asking["endpoint"].as_str().unwrap().to_owned();
    let approve = session.run(&["act", &id, "approve"]);
    assert!(approve.status.success(), "{approve:?}");
    let deadline = Instant::now() + STEP_TIMEOUT;
    let finished = loop {
        if let Some(status) = script.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the approved script never finished"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(finished.success(), "{:?}", script.wait_with_output());
    assert!(p1.exists(), "the approved command ran");

    // Chosen so, but no tray watches: nobody would answer, so denied at once, as without the
    // hooks (after the moment a running tray takes to see a new session).
    drop(tray);
    script_denied_at_once(&session, &markers, "marker-p3");

    // Off again: denied at once, as without the hooks.
    let off = session.run(&["hooks", "claude-code-unattended", "off"]);
    assert!(off.status.success(), "{off:?}");
    assert_eq!(chosen(&mut session), false);
    script_denied_at_once(&session, &markers, "marker-p2");
}
