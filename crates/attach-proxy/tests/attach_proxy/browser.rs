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
    let rig = Rig::start().await;
    with_chromium(|driver, session| async move { drive(&driver, &session, &rig).await }).await;
}

/// Runs `checks` against a fresh headless Chromium session (skipped, with a message, when the
/// browser is not installed), then always closes the browser, then reports what they found.
async fn with_chromium<F, Fut>(checks: F)
where
    F: FnOnce(WebDriver, String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
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
    let closer = WebDriver {
        http: driver.http.clone(),
        base: driver.base.clone(),
    };

    let outcome = timeout(
        BROWSER_TIMEOUT,
        std::panic::AssertUnwindSafe(checks(driver, session_path.clone())).catch_unwind(),
    )
    .await;
    let _ = timeout(
        Duration::from_secs(20),
        closer.call(reqwest::Method::DELETE, &session_path, None),
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
    // advanced past its first value, the WebSocket echo came back and the status card (its own
    // script, from the status API) shows the runtime's state.
    let alive = driver
        .post(
            &format!("{session}/execute/async"),
            json!({ "script": r#"
                const done = arguments[arguments.length - 1];
                const tick = document.getElementById('tick');
                const echo = document.getElementById('ws-echo');
                const state = document.getElementById('status-state');
                const seen = new Set();
                const check = () => {
                  const n = parseInt(tick.textContent, 10);
                  if (!Number.isNaN(n)) seen.add(n);
                  if (seen.size >= 2 && echo.textContent === 'hello' && state.textContent === 'idle') {
                    obs.disconnect();
                    done({ ticks: [...seen], echo: echo.textContent, state: state.textContent });
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
    assert_eq!(alive["state"], "idle");

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

/// A runtime that records the path of every request it is sent and answers each with a page.
struct RecordingRuntime {
    addr: std::net::SocketAddr,
    paths: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl RecordingRuntime {
    async fn start() -> RecordingRuntime {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let paths = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorded = paths.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                        recorded
                            .lock()
                            .unwrap()
                            .push(request.uri().path().to_owned());
                        async {
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .header("content-type", "text/html")
                                    .body(http_body_util::Full::new(bytes::Bytes::from_static(
                                        b"<h1 id=\"runtime-name\">recorder</h1>",
                                    )))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        RecordingRuntime { addr, paths }
    }

    /// The paths requested so far, but the browser's own favicon fetches.
    fn paths(&self) -> Vec<String> {
        let paths = self.paths.lock().unwrap();
        paths
            .iter()
            .filter(|p| *p != "/favicon.ico")
            .cloned()
            .collect()
    }
}

/// Serves one HTML page on its own 127.0.0.1 port: "another runtime's page", same-site to every
/// attach proxy.
async fn serve_other_site_page() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_request: hyper::Request<_>| async {
                    Ok::<_, std::convert::Infallible>(
                        hyper::Response::builder()
                            .header("content-type", "text/html")
                            .body(http_body_util::Full::new(bytes::Bytes::from_static(
                                b"<!doctype html><title>other runtime</title><h1>other</h1>",
                            )))
                            .unwrap(),
                    )
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    origin
}

// Issue 12: a page on another 127.0.0.1 port (another runtime's, same-site to the browser, so
// the SameSite=Strict session cookie rides along) frames and fetches an attached runtime's
// proxy: both are refused before they reach the runtime, while the runtime's own page, opened
// directly, still works.
#[tokio::test]
async fn another_runtimes_page_can_neither_frame_nor_fetch_an_attached_runtime() {
    let runtime = RecordingRuntime::start().await;
    let proxy = attach_proxy::AttachProxy::start(
        live_runtime::Sensitive::new(runtime.addr),
        live_runtime::Sensitive::new(CANARY_TOKEN.to_owned()),
    )
    .await
    .unwrap();
    let other_page = serve_other_site_page().await;
    let proxy = &proxy;
    let runtime = &runtime;
    let other_page = &other_page;
    with_chromium(|driver, session| async move {
        let session = session.as_str();
        driver
            .post(
                &format!("{session}/timeouts"),
                json!({ "script": SCRIPT_TIMEOUT_MS, "pageLoad": SCRIPT_TIMEOUT_MS }),
            )
            .await;
        driver
            .post(
                &format!("{session}/url"),
                json!({ "url": proxy.mint_code().as_str() }),
            )
            .await;
        assert_eq!(runtime.paths(), ["/"], "the attach landed on the runtime's page");

        driver
            .post(&format!("{session}/url"), json!({ "url": other_page }))
            .await;
        let fetched = driver
            .post(
                &format!("{session}/execute/async"),
                json!({ "script": r#"
                    const [target, done] = [arguments[0], arguments[arguments.length - 1]];
                    const frame = document.createElement('iframe');
                    const framed = new Promise((resolve) => { frame.onload = resolve; });
                    frame.src = target + '/framed';
                    document.body.appendChild(frame);
                    const fetched = fetch(target + '/fetched', { credentials: 'include', mode: 'no-cors' })
                      .then(() => 'settled', () => 'rejected');
                    Promise.all([framed, fetched]).then(([, f]) => done(f));
                "#, "args": [proxy.origin()] }),
            )
            .await;
        assert!(fetched == "settled" || fetched == "rejected", "{fetched}");
        let frame = driver
            .post(
                &format!("{session}/element"),
                json!({ "using": "css selector", "value": "iframe" }),
            )
            .await;
        driver
            .post(&format!("{session}/frame"), json!({ "id": frame }))
            .await;
        let framed_text = driver
            .post(
                &format!("{session}/execute/sync"),
                json!({ "script": "return document.body.innerText;", "args": [] }),
            )
            .await;
        assert!(
            framed_text
                .as_str()
                .unwrap()
                .contains("The request came from another site"),
            "the frame shows the refusal: {framed_text}"
        );
        driver
            .post(&format!("{session}/frame"), json!({ "id": null }))
            .await;
        assert_eq!(runtime.paths(), ["/"], "nothing from the other page reached the runtime");

        // The control: the same browser, the same session, the runtime's own address.
        driver
            .post(
                &format!("{session}/url"),
                json!({ "url": format!("{}/direct", proxy.origin()) }),
            )
            .await;
        let name = driver
            .post(
                &format!("{session}/execute/sync"),
                json!({ "script": "return document.getElementById('runtime-name').textContent;", "args": [] }),
            )
            .await;
        assert_eq!(name, "recorder");
        assert_eq!(runtime.paths(), ["/", "/direct"]);
    })
    .await;
}

/// A runtime with what a page can leave behind on its origin: a service worker's script, a
/// file the browser may cache for an hour, and a page. Each answer names the runtime; every
/// path asked for is recorded.
struct LeavingRuntime {
    addr: std::net::SocketAddr,
    paths: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl LeavingRuntime {
    async fn start(name: &'static str) -> LeavingRuntime {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let paths = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let recorded = paths.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let recorded = recorded.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request: hyper::Request<_>| {
                        let path = request.uri().path().to_owned();
                        recorded.lock().unwrap().push(path.clone());
                        let (kind, caching, body) = match path.as_str() {
                            "/sw.js" => (
                                "text/javascript",
                                "no-store",
                                format!("self.addEventListener('fetch', (e) => e.respondWith(new Response('served by the service worker of {name}')));"),
                            ),
                            "/cached.js" => ("text/javascript", "max-age=3600", name.to_owned()),
                            _ => (
                                "text/html",
                                "no-store",
                                format!("<!doctype html><h1 id=\"runtime-name\">{name}</h1>"),
                            ),
                        };
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                hyper::Response::builder()
                                    .header("content-type", kind)
                                    .header("cache-control", caching)
                                    .body(http_body_util::Full::new(bytes::Bytes::from(body)))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        LeavingRuntime { addr, paths }
    }

    fn asked_for(&self, path: &str) -> usize {
        self.paths
            .lock()
            .unwrap()
            .iter()
            .filter(|p| *p == path)
            .count()
    }

    async fn proxy_on(&self, port: u16) -> attach_proxy::AttachProxy {
        attach_proxy::AttachProxy::start_with_options(
            live_runtime::Sensitive::new(self.addr),
            live_runtime::Sensitive::new(CANARY_TOKEN.to_owned()),
            attach_proxy::AttachOptions {
                port,
                ..attach_proxy::AttachOptions::default()
            },
        )
        .await
        .unwrap()
    }
}

// Issue 29 item 7: proxies take ephemeral ports, and the browser keys service workers, caches
// and storage by origin, so runtime B attached later on the port runtime A's proxy had shares
// A's origin. In a real Chromium: A's page tries to register a service worker (refused through
// the proxy), stores a value and has a file cached for an hour; B, attached on the same port,
// finds no service worker, no stored value, and gets its own file from the network.
#[tokio::test]
async fn issue_29_what_runtime_a_left_on_the_origin_does_not_act_in_runtime_b_on_the_same_port() {
    let runtime_a = LeavingRuntime::start("runtime-a").await;
    let runtime_b = LeavingRuntime::start("runtime-b").await;
    let proxy_a = runtime_a.proxy_on(0).await;
    let port: u16 = proxy_a
        .origin()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let (runtime_a, runtime_b) = (&runtime_a, &runtime_b);
    with_chromium(|driver, session| async move {
        let session = session.as_str();
        driver
            .post(
                &format!("{session}/timeouts"),
                json!({ "script": SCRIPT_TIMEOUT_MS, "pageLoad": SCRIPT_TIMEOUT_MS }),
            )
            .await;
        driver
            .post(
                &format!("{session}/url"),
                json!({ "url": proxy_a.mint_code().as_str() }),
            )
            .await;
        let left = driver
            .post(
                &format!("{session}/execute/async"),
                json!({ "script": r#"
                    const done = arguments[arguments.length - 1];
                    (async () => {
                      let worker;
                      try {
                        await navigator.serviceWorker.register('/sw.js');
                        await navigator.serviceWorker.ready;
                        worker = 'registered';
                      } catch (e) { worker = 'refused'; }
                      localStorage.setItem('left-by', 'runtime-a');
                      const cached = await (await fetch('/cached.js')).text();
                      return { worker, cached, name: document.getElementById('runtime-name').textContent };
                    })().then(done, (e) => done({ error: String(e) }));
                "#, "args": [] }),
            )
            .await;
        assert_eq!(left["name"], "runtime-a", "{left}");
        assert_eq!(left["worker"], "refused", "{left}");
        assert_eq!(left["cached"], "runtime-a", "{left}");
        assert_eq!(runtime_a.asked_for("/sw.js"), 0, "the script never reached A");
        assert_eq!(runtime_a.asked_for("/cached.js"), 1);

        // Runtime A goes away; runtime B's proxy gets A's port, as the OS may hand it out.
        proxy_a.shutdown().await;
        let proxy_b = runtime_b.proxy_on(port).await;
        assert_eq!(proxy_b.origin(), format!("http://127.0.0.1:{port}"));
        driver
            .post(
                &format!("{session}/url"),
                json!({ "url": proxy_b.mint_code().as_str() }),
            )
            .await;
        let found = driver
            .post(
                &format!("{session}/execute/async"),
                json!({ "script": r#"
                    const done = arguments[arguments.length - 1];
                    (async () => {
                      const workers = (await navigator.serviceWorker.getRegistrations()).length;
                      const controlled = navigator.serviceWorker.controller !== null;
                      const stored = localStorage.getItem('left-by');
                      const cached = await (await fetch('/cached.js')).text();
                      return { workers, controlled, stored, cached, name: document.getElementById('runtime-name').textContent };
                    })().then(done, (e) => done({ error: String(e) }));
                "#, "args": [] }),
            )
            .await;
        assert_eq!(found["name"], "runtime-b", "{found}");
        assert_eq!(found["workers"], 0, "{found}");
        assert_eq!(found["controlled"], false, "{found}");
        assert_eq!(found["stored"], Value::Null, "A's storage is gone: {found}");
        assert_eq!(found["cached"], "runtime-b", "A's cached file is gone: {found}");
        assert_eq!(runtime_b.asked_for("/cached.js"), 1, "fetched from B itself");
        proxy_b.shutdown().await;
    })
    .await;
}
