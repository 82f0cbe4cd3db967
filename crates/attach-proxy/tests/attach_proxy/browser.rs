//! A real browser: headless Debian Chromium driven over WebDriver (chromedriver), plain HTTP.
//!
//! Skipped with a message when Chromium or chromedriver is missing, unless
//! `SUPERCODE_REQUIRE_BROWSER=1`, in which case their absence fails the test.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use futures_util::FutureExt;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::time::timeout;

use crate::support::*;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// Bound for the whole browser session: a cold Chromium start on a loaded 2-core CI box can take
/// ten seconds or more, then the page needs a couple of SSE ticks.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(90);

/// WebDriver script timeout: how long an async script may wait for the page to come alive.
const SCRIPT_TIMEOUT_MS: u64 = 30_000;

fn browser_required() -> bool {
    std::env::var("SUPERCODE_REQUIRE_BROWSER").is_ok_and(|v| v == "1")
}

struct WebDriver {
    http: reqwest::Client,
    base: String,
}

impl WebDriver {
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.expect("chromedriver answers");
        let status = response.status();
        let value: Value = response.json().await.expect("chromedriver sends JSON");
        assert!(status.is_success(), "WebDriver {path} failed: {value}");
        value["value"].clone()
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, Some(body)).await
    }
}

async fn start_chromedriver() -> (Child, u16) {
    let mut child = Command::new(CHROMEDRIVER)
        .arg("--port=0")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromedriver starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // chromedriver announces the port it bound once it is ready to take sessions.
    let port = timeout(BROWSER_TIMEOUT, async {
        while let Some(line) = lines.next_line().await.expect("chromedriver stdout") {
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                return rest
                    .trim_end_matches('.')
                    .trim()
                    .parse::<u16>()
                    .expect("a port");
            }
        }
        panic!("chromedriver exited before it was ready");
    })
    .await
    .expect("chromedriver ready in time");
    // Keep draining stdout so chromedriver never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, port)
}

#[tokio::test]
async fn chromium_attaches_sees_the_live_page_and_never_sees_the_token_or_session_cookie() {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|path| !Path::new(path).exists())
        .collect();
    if !missing.is_empty() {
        assert!(
            !browser_required(),
            "SUPERCODE_REQUIRE_BROWSER=1 but {missing:?} not installed (apt install chromium chromium-driver)"
        );
        eprintln!("skipping the browser test: {missing:?} not installed");
        return;
    }

    let rig = Rig::start().await;
    let profile = tempfile::tempdir().unwrap();
    let (mut chromedriver, port) = start_chromedriver().await;
    let driver = WebDriver {
        http: reqwest::Client::new(),
        base: format!("http://127.0.0.1:{port}"),
    };
    let session = driver
        .post(
            "/session",
            json!({ "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": CHROMIUM,
                    "args": [
                        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        "--disable-dev-shm-usage",
                        format!("--user-data-dir={}", profile.path().display()),
                    ]
                }
            }}}),
        )
        .await;
    let session_path = format!(
        "/session/{}",
        session["sessionId"].as_str().expect("a session id")
    );

    // Run the checks, then always close the browser, then report what the checks found.
    let outcome = timeout(
        BROWSER_TIMEOUT,
        std::panic::AssertUnwindSafe(drive(&driver, &session_path, &rig)).catch_unwind(),
    )
    .await;
    let _ = timeout(
        Duration::from_secs(20),
        driver.call(reqwest::Method::DELETE, &session_path, None),
    )
    .await;
    let _ = chromedriver.kill().await;
    match outcome {
        Err(_) => panic!("the browser session did not finish within {BROWSER_TIMEOUT:?}"),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Ok(Ok(())) => {}
    }
}

async fn drive(driver: &WebDriver, session: &str, rig: &Rig) {
    driver
        .post(
            &format!("{session}/timeouts"),
            json!({ "script": SCRIPT_TIMEOUT_MS, "pageLoad": SCRIPT_TIMEOUT_MS }),
        )
        .await;
    let attach_url = rig.proxy.mint_code();
    driver
        .post(
            &format!("{session}/url"),
            json!({ "url": attach_url.as_str() }),
        )
        .await;

    // Wait (inside the page, event-driven by the page's own updates) until the SSE counter has
    // advanced past its first value and the WebSocket echo came back.
    let alive = driver
        .post(
            &format!("{session}/execute/async"),
            json!({ "script": r#"
                const done = arguments[arguments.length - 1];
                const tick = document.getElementById('tick');
                const echo = document.getElementById('ws-echo');
                const seen = new Set();
                const check = () => {
                  const n = parseInt(tick.textContent, 10);
                  if (!Number.isNaN(n)) seen.add(n);
                  if (seen.size >= 2 && echo.textContent === 'hello') {
                    obs.disconnect();
                    done({ ticks: [...seen], echo: echo.textContent });
                  }
                };
                const obs = new MutationObserver(check);
                obs.observe(document.body, { subtree: true, childList: true, characterData: true });
                check();
            "#, "args": [] }),
        )
        .await;
    assert!(alive["ticks"].as_array().unwrap().len() >= 2, "{alive}");
    assert_eq!(alive["echo"], "hello");

    let page = driver
        .post(
            &format!("{session}/execute/sync"),
            json!({ "script": "return { cookie: document.cookie, html: document.documentElement.outerHTML, href: location.href, name: document.getElementById('runtime-name').textContent };", "args": [] }),
        )
        .await;
    assert_eq!(page["name"], RUNTIME_NAME);
    assert_eq!(
        page["href"],
        rig.url("/"),
        "the code is gone from the address bar"
    );
    let cookie = page["cookie"].as_str().unwrap();
    assert!(
        !cookie.contains("sc_attach_"),
        "session cookie visible to JS: {cookie}"
    );
    for field in ["html", "href", "cookie"] {
        assert_no_canary(page[field].as_str().unwrap().as_bytes(), field);
    }

    // Re-opening the same attach link (a history entry, a copied URL) no longer works.
    driver
        .post(
            &format!("{session}/url"),
            json!({ "url": attach_url.as_str() }),
        )
        .await;
    let replay = driver
        .post(
            &format!("{session}/execute/sync"),
            json!({ "script": "return document.body.innerText;", "args": [] }),
        )
        .await;
    assert!(
        replay
            .as_str()
            .unwrap()
            .contains("This attach link has expired or was already used"),
        "{replay}"
    );
}
