//! Attach through the core as the tray uses it, against real demo runtimes served in this
//! process: proxies stop when the watcher sees their runtime go, and a storm of 200 runtimes
//! registering and dropping while the tray lists and attaches loses nothing and leaves nothing.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use demo_runtime::{DemoConfig, DemoServer};
use live_runtime::{LiveRuntimeRegistration, Sensitive};
use supercode_core::view::RuntimeStatus;

use crate::support::{accepts, proxy_address, recorder, register_at, wait_until, Fixture, TIMEOUT};

/// A demo runtime serving real HTTP with its own token, registered under `name`.
struct Runtime {
    name: String,
    registration: LiveRuntimeRegistration,
    server: DemoServer,
}

async fn start_runtime(fixture: &Fixture, name: &str) -> Runtime {
    let token = format!("token-of-{name}");
    let server = demo_runtime::serve(DemoConfig::new(name, Sensitive::new(token.clone())))
        .await
        .unwrap();
    let address = *server.local_addr().expose();
    let registration = register_at(fixture.receipts(), name, &token, None, address);
    Runtime {
        name: name.to_owned(),
        registration,
        server,
    }
}

/// What following a one-time URL gives a browser: the redirect, then the page with the cookie.
async fn follow(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let first = client.get(url).send().await.map_err(|e| e.to_string())?;
    if first.status() != reqwest::StatusCode::SEE_OTHER {
        return Err(format!("the code answered {}", first.status()));
    }
    let cookie = first
        .headers()
        .get(reqwest::header::SET_COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .ok_or("no session cookie")?
        .to_owned();
    let origin = url.split("/__attach/").next().unwrap_or_default();
    let page = client
        .get(format!("{origin}/"))
        .header(reqwest::header::COOKIE, cookie)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if page.status() != reqwest::StatusCode::OK {
        return Err(format!("the page answered {}", page.status()));
    }
    page.text().await.map_err(|e| e.to_string())
}

/// The demo page's heading, which names its runtime.
fn heading(name: &str) -> String {
    format!("<h1 id=\"runtime-name\">{name}</h1>")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .build()
        .unwrap()
}

// Proves: with only the watcher running (a tray whose window is closed asks for no list), a
// runtime that goes away takes its attach proxy with it: the proxy's port stops accepting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_stops_when_the_watcher_sees_its_runtime_go() {
    let fixture = Fixture::new();
    let (sink, events) = recorder();
    let core = fixture.core_with(sink);
    let _watch = core.watch();
    let runtime = start_runtime(&fixture, "proxied").await;
    let endpoint = runtime.registration.endpoint().to_string();
    // As in the tray, the runtime is attached once the watcher lists it.
    let mut events = events.listed("proxied").await;

    let url = core.attach(&endpoint).await.unwrap();
    let page = follow(&client(), url.as_str()).await.unwrap();
    assert!(
        page.contains(&heading("proxied")),
        "the runtime's page came through the proxy"
    );
    let proxy = proxy_address(url.as_str());
    assert!(accepts(proxy), "the proxy listens while its runtime runs");

    drop(runtime.registration);
    runtime.server.shutdown().await;
    tokio::task::spawn_blocking(move || {
        events.wait_for_snapshot("the runtime to leave the inventory", TIMEOUT, |s| {
            !s.runtimes.iter().any(|r| r.name == "proxied")
        });
        wait_until("the proxy to stop listening", TIMEOUT, || {
            (!accepts(proxy)).then_some(())
        });
    })
    .await
    .unwrap();
}

// Proves (issue 16): attaching again to a runtime whose proxy runs reads no secret store, as the
// proxy already holds the token: with the token gone from the store, the repeated attach still
// works end to end on the same proxy, while a core with no proxy yet is refused for the missing
// token. The runtime is still checked: once it is gone, the repeated attach is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_again_reuses_the_proxy_without_reading_the_token_again() {
    let fixture = Fixture::new();
    let core = fixture.core();
    let runtime = start_runtime(&fixture, "again").await;
    let endpoint = runtime.registration.endpoint().to_string();
    let first = core.attach(&endpoint).await.unwrap();
    follow(&client(), first.as_str()).await.unwrap();

    let account = format!("live-runtime:{endpoint}");
    fixture.store().delete(&account).unwrap();
    assert!(fixture.store().get(&account).unwrap().is_none());

    let again = core.attach(&endpoint).await.unwrap();
    assert_eq!(
        proxy_address(again.as_str()),
        proxy_address(first.as_str()),
        "the running proxy was reused"
    );
    assert_ne!(again.as_str(), first.as_str(), "a fresh one-time code");
    let page = follow(&client(), again.as_str()).await.unwrap();
    assert!(page.contains(&heading("again")));
    let fresh = fixture.core().attach(&endpoint).await;
    assert!(
        fresh.is_err(),
        "without a running proxy, the token must come from the store"
    );

    runtime.server.shutdown().await;
    assert!(
        core.attach(&endpoint).await.is_err(),
        "a runtime that stopped answering is refused, proxy or not"
    );
    drop(runtime.registration);
}

const STORM: usize = 200;

// Proves (issue 6, load): 200 runtimes registering and dropping at once while the tray keeps
// listing and attaching through the real proxies: each attach either works end to end or is
// refused cleanly because its runtime just went; at the peak the watcher lists all 200; after the
// drops nothing is left: no runtime listed, no receipt, no token, no proxy port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_runtimes_come_and_go_while_the_tray_lists_and_attaches() {
    let fixture = Arc::new(Fixture::new());
    let (sink, mut events) = recorder();
    let core = Arc::new(fixture.core_with(sink));
    let watch = core.watch();

    let done = Arc::new(AtomicBool::new(false));
    let attached = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let proxies = Arc::new(std::sync::Mutex::new(Vec::new()));
    // The tray side: list, and attach to whatever is listed running, until told to stop.
    let tray = {
        let (core, done, attached, refused, proxies) = (
            core.clone(),
            done.clone(),
            attached.clone(),
            refused.clone(),
            proxies.clone(),
        );
        tokio::spawn(async move {
            let client = client();
            while !done.load(Ordering::SeqCst) {
                let listed = tokio::task::spawn_blocking({
                    let core = core.clone();
                    move || core.snapshot()
                })
                .await
                .unwrap();
                assert!(listed.ignored.is_empty(), "{:?}", listed.ignored);
                let running: Vec<_> = listed
                    .runtimes
                    .iter()
                    .filter(|r| r.status == RuntimeStatus::Running)
                    .take(5)
                    .map(|r| (r.id.clone(), r.name.clone()))
                    .collect();
                for (id, name) in running {
                    match core.attach(&id).await {
                        Ok(url) => {
                            proxies.lock().unwrap().push(proxy_address(url.as_str()));
                            match follow(&client, url.as_str()).await {
                                Ok(page) => {
                                    assert!(page.contains(&heading(&name)), "{name}'s own page");
                                    attached.fetch_add(1, Ordering::SeqCst);
                                }
                                // The runtime went between the attach and the page.
                                Err(_) => {
                                    refused.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                        }
                        Err(e) => {
                            let text = e.to_string();
                            assert!(!text.contains("token-of-"), "no token in an error: {text}");
                            refused.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
                tokio::task::yield_now().await;
            }
        })
    };

    // The runtimes: all start at once, are held until the peak is checked, then all drop at once.
    let started = futures_util::future::join_all((0..STORM).map(|n| {
        let fixture = fixture.clone();
        async move { start_runtime(&fixture, &format!("storm-{n}")).await }
    }))
    .await;
    let names: Vec<String> = (0..STORM).map(|n| format!("storm-{n}")).collect();
    let (events, peak) = tokio::task::spawn_blocking(move || {
        let (_, peak) = events.wait_for_snapshot("all 200 runtimes listed", TIMEOUT * 2, |s| {
            s.runtimes
                .iter()
                .filter(|r| r.status == RuntimeStatus::Running)
                .count()
                == STORM
        });
        (events, peak)
    })
    .await
    .unwrap();
    let mut listed: Vec<String> = peak.runtimes.iter().map(|r| r.name.clone()).collect();
    listed.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(listed, expected, "each runtime listed once at the peak");

    // A few attaches that must all work while everything is up.
    let client = client();
    for runtime in started.iter().step_by(40) {
        let url = core
            .attach(runtime.registration.endpoint().as_str())
            .await
            .unwrap();
        let page = follow(&client, url.as_str()).await.unwrap();
        assert!(
            page.contains(&heading(&runtime.name)),
            "{}'s own page",
            runtime.name
        );
    }

    futures_util::future::join_all(started.into_iter().map(|runtime| async move {
        drop(runtime.registration);
        runtime.server.shutdown().await;
    }))
    .await;
    let mut events = events;
    tokio::task::spawn_blocking(move || {
        events.wait_for_snapshot("every runtime gone", TIMEOUT * 2, |s| s.runtimes.is_empty());
    })
    .await
    .unwrap();
    done.store(true, Ordering::SeqCst);
    tray.await
        .expect("the tray side saw a wrong page or a leaked token");
    drop(watch);

    let attached = attached.load(Ordering::SeqCst);
    eprintln!(
        "storm: {attached} attaches followed to the page, {} refused as their runtime went",
        refused.load(Ordering::SeqCst)
    );
    assert!(
        attached > 0,
        "the tray side attached at least once during the storm"
    );
    let after = core.snapshot();
    assert!(
        after.runtimes.is_empty() && after.ignored.is_empty(),
        "{after:?}"
    );
    let left = |dir: &std::path::Path| std::fs::read_dir(dir).map_or(0, |d| d.count());
    assert_eq!(
        left(fixture.receipts().path()),
        0,
        "no receipt or temp file left"
    );
    assert_eq!(left(&fixture.root.join("secrets")), 0, "no token left");
    let proxies = proxies.lock().unwrap().clone();
    tokio::task::spawn_blocking(move || {
        for proxy in proxies {
            wait_until("every proxy to stop", TIMEOUT, || {
                (!accepts(proxy)).then_some(())
            });
        }
    })
    .await
    .unwrap();
}
