//! The session's page that `attach` opens, over real HTTP: the page and its policy, the
//! conversation read from a real transcript file full of hostile content, and Approve from the
//! page's own endpoint (issue 32, item 5).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_hooks::agent::Agent;
use agent_hooks::board::Board;
use agent_hooks::event::{EventKind, HookEvent};
use agent_hooks::server::{self, CONVERSATION_PATH, PAGE_CSP};
use agent_hooks::transcript::{MAX_MESSAGES, MESSAGE_CAP, TAIL_BYTES};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "page-test-token-0123456789abcdef";

struct Served {
    board: Arc<Board>,
    base: String,
    _stop: tokio_util::sync::DropGuard,
}

async fn serve() -> Served {
    let board = Board::new(agent_hooks::agent::Agent::ClaudeCode);
    let stop = CancellationToken::new();
    let address = server::serve(
        Arc::clone(&board),
        Agent::ClaudeCode,
        TOKEN,
        Duration::from_secs(30),
        stop.clone(),
    )
    .await
    .unwrap();
    Served {
        board,
        base: format!("http://{address}"),
        _stop: stop.drop_guard(),
    }
}

fn event(transcript: Option<PathBuf>, kind: EventKind) -> HookEvent {
    HookEvent {
        session_id: "sess-page".into(),
        cwd: PathBuf::from("/work/project"),
        subagent: None,
        transcript,
        spawned: None,
        kind,
    }
}

async fn get(url: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(url)
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap()
}

async fn conversation(served: &Served) -> Value {
    get(&format!("{}{CONVERSATION_PATH}", served.base))
        .await
        .json()
        .await
        .unwrap()
}

fn line(kind: &str, content: Value) -> String {
    json!({ "type": kind, "message": { "role": kind, "content": content } }).to_string()
}

// Proves: the page is served behind the bearer check with a CSP that allows no inline code, and
// loads only its own script and style.
#[tokio::test]
async fn the_page_is_static_behind_the_token_with_a_strict_policy() {
    let served = serve().await;
    let anonymous = reqwest::get(format!("{}/", served.base)).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let anonymous = reqwest::get(format!("{}{CONVERSATION_PATH}", served.base))
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401);
    let page = get(&format!("{}/", served.base)).await;
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert_eq!(csp, PAGE_CSP);
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe"));
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let html = page.text().await.unwrap();
    assert!(html.contains(r#"<script src="/session.js" defer></script>"#));
    assert!(
        !html.contains("<script>") && !html.contains("<style>"),
        "no inline code"
    );
    let script = get(&format!("{}/session.js", served.base)).await;
    assert_eq!(script.status(), 200);
    let script = script.text().await.unwrap();
    assert!(script.contains("textContent") && !script.contains("innerHTML"));
}

// Proves: before the session names its transcript, the page says so instead of failing.
#[tokio::test]
async fn without_a_transcript_the_conversation_says_why() {
    let served = serve().await;
    let body = conversation(&served).await;
    assert_eq!(body["messages"], json!([]));
    assert!(body["unavailable"].as_str().unwrap().contains("transcript"));
}

// Proves: hostile transcript content (markup, terminal escapes, bidi overrides, control
// characters, a huge line, broken JSON) comes out as capped plain text, and the newest messages
// are the ones shown.
#[tokio::test]
async fn hostile_transcript_content_comes_out_capped_and_plain() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let huge = "A".repeat(100_000);
    let lines = [
        line("user", json!("<script>alert(1)</script> please run it")),
        "{not json".to_owned(),
        line(
            "assistant",
            json!([
                {"type": "text", "text": "\u{1b}[31mred\u{1b}[0m \u{1b}]0;pwned\u{7}done \u{202e}evil\u{0}"},
                {"type": "tool_use", "name": "Bash", "input": {"command": "echo <b>hi</b>"}},
            ]),
        ),
        line(
            "user",
            json!([{"type": "tool_result", "content": "secret output"}]),
        ),
        line("assistant", json!([{"type": "text", "text": huge}])),
        json!({"type": "summary", "summary": "not a message"}).to_string(),
        line("assistant", json!("The last word.")),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let served = serve().await;
    served
        .board
        .apply(&event(Some(path.clone()), EventKind::Prompt));
    let body = conversation(&served).await;
    let messages = body["messages"].as_array().unwrap();
    let shown: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown[..3],
        [
            ("user", "<script>alert(1)</script> please run it"),
            ("assistant", "red done evil"),
            ("tool", "Bash: echo <b>hi</b>"),
        ],
        "markup is kept as text (the page sets it with textContent); escapes and controls are gone"
    );
    let long = shown[3].1;
    assert_eq!(long.chars().count(), MESSAGE_CAP);
    assert!(long.ends_with('…'));
    assert_eq!(shown[4], ("assistant", "The last word."));
    assert_eq!(
        shown.len(),
        5,
        "tool results and other entries are not shown"
    );
    assert_eq!(body["truncated"], false);

    // A transcript longer than the tail read: only its end, marked as cut, and never more
    // than the message cap.
    let many: Vec<String> = (0..(MAX_MESSAGES + 50) * 20)
        .map(|i| line("user", json!(format!("message {i:05} {}", "x".repeat(40)))))
        .collect();
    std::fs::write(&path, many.join("\n") + "\n").unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() > TAIL_BYTES);
    let body = conversation(&served).await;
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), MAX_MESSAGES);
    assert_eq!(body["truncated"], true);
    let last = format!("message {:05}", (MAX_MESSAGES + 50) * 20 - 1);
    assert!(messages.last().unwrap()["text"]
        .as_str()
        .unwrap()
        .starts_with(&last));
}

// Proves: a transcript path that is a symbolic link (to a file of the user's own, even) is not
// followed, and a subagent's event cannot point the page at another file.
#[tokio::test]
async fn a_linked_transcript_is_refused_and_a_subagent_cannot_repoint_it() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.jsonl");
    std::fs::write(&real, line("assistant", json!("from the session")) + "\n").unwrap();
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, line("assistant", json!("from elsewhere")) + "\n").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&other, &link).unwrap();
    let served = serve().await;
    served.board.apply(&event(Some(link), EventKind::Prompt));
    let body = conversation(&served).await;
    assert_eq!(body["messages"], json!([]));
    assert!(body["unavailable"].is_string());

    served.board.apply(&event(Some(real), EventKind::Prompt));
    let mut sub = event(
        Some(other),
        EventKind::ToolDone {
            tool: "Read".into(),
            detail: None,
        },
    );
    sub.subagent = Some("a1".into());
    served.board.apply(&sub);
    let body = conversation(&served).await;
    assert_eq!(body["messages"][0]["text"], "from the session");
}

// Proves: the page's Approve (a POST to the action endpoint with the revision shown) answers
// the pending request.
#[tokio::test]
async fn approve_from_the_page_answers_the_pending_request() {
    let served = serve().await;
    let mut waiting = served
        .board
        .request_approval(&event(
            None,
            EventKind::PermissionRequest {
                tool: "Bash".into(),
                detail: Some("touch x".into()),
                suggestions: None,
                always_label: None,
            },
        ))
        .unwrap();
    let revision = served.board.current().revision;
    let response = reqwest::Client::new()
        .post(format!("{}/supercode/v1/actions/approve", served.base))
        .bearer_auth(TOKEN)
        .json(&json!({ "revision": revision }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    assert_eq!(
        waiting.decision.try_recv().unwrap(),
        agent_hooks::claude_code::Decision::Allow
    );
}

/// Drives a headless Chromium with the UI's own `playwright-core`: opens the attach URL, waits
/// for the request's buttons and the conversation, clicks Approve, and prints the body's markup,
/// the page's errors (a CSP violation is one) and the result line, as JSON.
const BROWSER_SCRIPT: &str = r#"
const { chromium } = require(process.env.PW);
(async () => {
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM, args: ['--no-sandbox'] });
  const page = await browser.newPage();
  const errors = [];
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(process.env.URL);
  await page.waitForSelector('#status-actions button', { timeout: 15000 });
  await page.waitForSelector('#conversation li', { timeout: 15000 });
  const html = await page.evaluate(() => document.body.outerHTML);
  await page.click('#status-actions button[data-action="approve"]');
  await page.waitForFunction(() => document.getElementById('status-result').textContent.includes(':'), null, { timeout: 15000 });
  const result = await page.textContent('#status-result');
  console.log(JSON.stringify({ html, errors, result }));
  await browser.close();
})().catch((e) => { console.error(String(e)); process.exit(1); });
"#;

// Proves: in a real browser attached through the real attach proxy, the page runs under its
// policy without an error, shows the pending request with its buttons and the conversation, a
// transcript's markup stays text (escaped in the DOM, never an element), and its Approve
// answers the request. Skipped without Chromium or the UI's playwright-core.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_real_browser_through_the_proxy_the_page_shows_the_request_and_the_conversation() {
    let playwright = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ui/node_modules/playwright-core");
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists());
    let (Some(chromium), true) = (chromium, playwright.is_dir()) else {
        eprintln!("skipped: no Chromium, or ui/node_modules (npm --prefix ui ci) is missing");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let lines = [
        line("user", json!("<img src=x onerror=alert(1)> make it")),
        line("assistant", json!("I will run <b>touch</b>.")),
    ];
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let served = serve().await;
    served.board.apply(&event(Some(path), EventKind::Prompt));
    let mut waiting = served
        .board
        .request_approval(&event(
            None,
            EventKind::PermissionRequest {
                tool: "Bash".into(),
                detail: Some("touch <i>x</i>".into()),
                suggestions: None,
                always_label: None,
            },
        ))
        .unwrap();
    let address: std::net::SocketAddr = served.base["http://".len()..].parse().unwrap();
    let proxy = attach_proxy::AttachProxy::start(
        live_runtime::Sensitive::new(address),
        live_runtime::BearerToken::new(TOKEN.to_owned()),
    )
    .await
    .unwrap();
    let url = proxy.mint_code().as_str().to_owned();
    let run = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .args(["-e", BROWSER_SCRIPT])
            .env("PW", playwright)
            .env("CHROMIUM", chromium)
            .env("URL", url)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(run.status.success(), "{run:?}");
    let seen: Value = serde_json::from_slice(&run.stdout).unwrap();
    let dom = seen["html"].as_str().unwrap();
    assert_eq!(seen["errors"], json!([]), "{seen}");
    assert!(
        dom.contains(r#"<div id="status-state">needs-approval</div>"#),
        "{dom}"
    );
    assert!(dom.contains(r#"data-action="deny""#), "{dom}");
    assert!(dom.contains("touch &lt;i&gt;x&lt;/i&gt;"), "{dom}");
    assert!(
        dom.contains(r#"<li class="user">&lt;img src=x onerror=alert(1)&gt; make it</li>"#),
        "{dom}"
    );
    assert!(
        dom.contains(r#"<li class="assistant">I will run &lt;b&gt;touch&lt;/b&gt;.</li>"#),
        "{dom}"
    );
    assert!(!dom.contains("<img") && !dom.contains("<b>"), "{dom}");
    assert_eq!(seen["result"], "Approve: accepted", "{seen}");
    assert_eq!(
        waiting.decision.try_recv().unwrap(),
        agent_hooks::claude_code::Decision::Allow
    );
}
