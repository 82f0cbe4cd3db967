//! `--instructions` / `--syscalls`: what one message costs the runtime and the proxy, counted
//! rather than timed, so the figure does not move with the machine's load. Each of the two runs
//! in its own process under `valgrind --tool=callgrind` or `strace -c`, and nginx, set up as in
//! the timed rows, under the same counter for comparison.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::str::FromStr;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;

use crate::client::{connect, request, Target, BLOB_BYTES};
use crate::hex_token;
use crate::nginx::{start_nginx, Nginx, NGINX};
use crate::roles::{spawn_role, spawn_runtime_process, PROXY_ROLE_ENV};

/// Requests in every `--instructions` / `--syscalls` run; the measured runs add to them, so
/// start-up and shutdown cancel out in the difference.
const PROFILE_BASE_REQUESTS: usize = 100;
/// Extra sequential `GET /api/health` requests of the request run.
const PROFILE_EXTRA_REQUESTS: usize = 2_000;
/// Extra 10 MB bodies of the body run.
const PROFILE_EXTRA_BODIES: usize = 4;

/// What `--instructions` and `--syscalls` count in the runtime and the proxy process.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// User-space instructions (callgrind's `Ir`): deterministic, blind to the kernel.
    Instructions,
    /// System calls by name (`strace -c`): the kernel work a message costs, counted, not timed.
    Syscalls,
}

impl Counter {
    fn wrapper(self, out: &Path) -> Vec<String> {
        let out = out.display();
        match self {
            Counter::Instructions => vec![
                "valgrind".to_owned(),
                "--tool=callgrind".to_owned(),
                format!("--callgrind-out-file={out}"),
                format!("--log-file={out}.log"),
            ],
            Counter::Syscalls => ["strace", "-f", "-c", "-o"]
                .iter()
                .map(|s| (*s).to_owned())
                .chain([out.to_string()])
                .collect(),
        }
    }

    /// `"total"` and, for syscalls, one entry per syscall name.
    fn read(self, out: &Path) -> std::collections::BTreeMap<String, u64> {
        let text = std::fs::read_to_string(out).unwrap();
        let mut counts = std::collections::BTreeMap::new();
        match self {
            Counter::Instructions => {
                let total = text
                    .lines()
                    .find_map(|line| {
                        line.strip_prefix("summary:")
                            .or(line.strip_prefix("totals:"))
                    })
                    .and_then(|v| u64::from_str(v.trim()).ok())
                    .unwrap_or_else(|| panic!("no instruction total in {}", out.display()));
                counts.insert("total".to_owned(), total);
            }
            Counter::Syscalls => {
                // `% time  seconds  usecs/call  calls  [errors]  syscall`, then a `total` row.
                for line in text.lines() {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    if let (Some(calls), Some(name)) = (fields.get(3), fields.last()) {
                        if let Ok(calls) = calls.parse() {
                            counts.insert((*name).to_owned(), calls);
                        }
                    }
                }
            }
        }
        counts
    }
}

/// The proxy a counted run goes through.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Middle {
    AttachProxy,
    Nginx,
}

/// `--instructions` / `--syscalls`: the runtime and an attach proxy, each in its own process
/// under callgrind or strace, driven through the proxy by a native client in this process. Three
/// runs (base, base + N requests, base + M bodies) give the count per request and per body by
/// difference. The same three runs through nginx (configured as in the timed rows, under the
/// same counter) give nginx's count beside the proxy's: the comparison the timed rows make,
/// without their noise.
pub async fn count_per_message(counter: Counter) {
    let kept = std::env::var_os("ATTACH_BENCH_PROFILE_DIR");
    let temp = tempfile::tempdir().unwrap();
    let dir = kept.as_ref().map_or(temp.path(), Path::new);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let runs = |middle| async move {
        [
            profiled_run(counter, dir, middle, "base", 0, 0).await,
            profiled_run(counter, dir, middle, "requests", PROFILE_EXTRA_REQUESTS, 0).await,
            profiled_run(counter, dir, middle, "bodies", 0, PROFILE_EXTRA_BODIES).await,
        ]
    };
    let [base, requests, bodies] = runs(Middle::AttachProxy).await;
    let nginx = if Path::new(NGINX).exists() {
        Some(runs(Middle::Nginx).await)
    } else {
        None
    };
    // The count per message of `run` over its base (n messages), for party `who`.
    let per = |base: &RunCounts, run: &RunCounts, who: usize, key: &str, n: usize| {
        let count = |counts: &RunCounts| counts[who].get(key).copied().unwrap_or(0);
        count(run).saturating_sub(count(base)) as f64 / n as f64
    };
    let what = match counter {
        Counter::Instructions => "instructions (callgrind Ir, user space)",
        Counter::Syscalls => "syscalls (strace -c)",
    };
    println!("| {what} | runtime | attach-proxy | nginx | proxy / runtime | proxy / nginx |");
    println!("|---|---|---|---|---|---|");
    let digits = match counter {
        Counter::Instructions => 0,
        Counter::Syscalls => 2,
    };
    // One row: the count per message of run `index` (1: requests, 2: bodies; n messages).
    let row = |what: &str, run: &RunCounts, index: usize, n: usize| {
        let (runtime, proxy) = (
            per(&base, run, 0, "total", n),
            per(&base, run, 1, "total", n),
        );
        let nginx = nginx
            .as_ref()
            .map(|runs| per(&runs[0], &runs[index], 1, "total", n));
        let (nginx, ratio) = match nginx {
            Some(nginx) => (format!("{nginx:.digits$}"), format!("{:.2}", proxy / nginx)),
            None => ("-".to_owned(), "-".to_owned()),
        };
        println!(
            "| {what} (n={n}) | {runtime:.digits$} | {proxy:.digits$} | {nginx} | {:.2} | {ratio} |",
            proxy / runtime
        );
    };
    row(
        "per GET /api/health, sequential on one keep-alive conn",
        &requests,
        1,
        PROFILE_EXTRA_REQUESTS,
    );
    row("per 10 MB body", &bodies, 2, PROFILE_EXTRA_BODIES);
    println!();
    if counter == Counter::Syscalls {
        let mut parties = vec![
            ("runtime", &base, &requests, 0),
            ("attach-proxy", &base, &requests, 1),
        ];
        if let Some(runs) = &nginx {
            parties.push(("nginx", &runs[0], &runs[1], 1));
        }
        for (name, base, requests, who) in parties {
            let calls: Vec<String> = requests[who]
                .keys()
                .filter(|key| *key != "total")
                .map(|key| (key, per(base, requests, who, key, PROFILE_EXTRA_REQUESTS)))
                .filter(|(_, n)| *n >= 0.05)
                .map(|(key, n)| format!("{key} {n:.2}"))
                .collect();
            println!("- {name}, per request: {}", calls.join(", "));
        }
        println!();
    }
    println!(
        "Totals: base run ({PROFILE_BASE_REQUESTS} requests) runtime {} / proxy {}; +{PROFILE_EXTRA_REQUESTS} requests runtime {} / proxy {}; +{PROFILE_EXTRA_BODIES} bodies runtime {} / proxy {}.",
        base[0]["total"], base[1]["total"], requests[0]["total"], requests[1]["total"], bodies[0]["total"], bodies[1]["total"]
    );
    match &nginx {
        Some([base, requests, bodies]) => println!(
            "nginx: base {} / +{PROFILE_EXTRA_REQUESTS} requests {} / +{PROFILE_EXTRA_BODIES} bodies {}.",
            base[1]["total"], requests[1]["total"], bodies[1]["total"]
        ),
        None => println!("(nginx column missing: /usr/sbin/nginx not found)"),
    }
}

/// Counts of the runtime (`[0]`) and the proxy (`[1]`) process in one run.
type RunCounts = [std::collections::BTreeMap<String, u64>; 2];

/// One run of base + `requests` requests + `bodies` bodies through `middle`, the runtime and
/// the middle each under `counter`; returns both processes' counts.
async fn profiled_run(
    counter: Counter,
    dir: &Path,
    middle: Middle,
    name: &str,
    requests: usize,
    bodies: usize,
) -> RunCounts {
    let token = hex_token();
    let middle_name = match middle {
        Middle::AttachProxy => "proxy",
        Middle::Nginx => "nginx",
    };
    let name = format!("{name}-{middle_name}");
    let out = |who: &str| dir.join(format!("{name}-{who}.out"));
    eprintln!("profiled run {name}: +{requests} requests, +{bodies} bodies ...");
    let (mut runtime, runtime_addr) =
        spawn_runtime_process(&token, &counter.wrapper(&out("runtime"))).await;
    let (target, proxy, mut sender) = match middle {
        Middle::AttachProxy => {
            let (proxy, target, sender) =
                start_counted_proxy(counter, &out("middle"), runtime_addr, &token).await;
            (target, Running::AttachProxy(proxy), sender)
        }
        Middle::Nginx => {
            let nginx = start_nginx(dir, runtime_addr, &token, &counter.wrapper(&out("middle")))
                .await
                .expect("nginx starts");
            let target = Target {
                name: "nginx",
                addr: nginx.addr,
                headers: Vec::new(),
                middle: None,
            };
            let sender = connect(&target).await;
            (target, Running::Nginx(nginx), sender)
        }
    };
    for _ in 0..PROFILE_BASE_REQUESTS + requests {
        sender.ready().await.unwrap();
        let response = sender
            .send_request(request(&target, "/api/health"))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.into_body().collect().await.unwrap();
    }
    for _ in 0..bodies {
        sender.ready().await.unwrap();
        let response = sender
            .send_request(request(&target, &format!("/api/blob?bytes={BLOB_BYTES}")))
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body.len() as u64, BLOB_BYTES);
    }
    drop(sender);
    match proxy {
        Running::AttachProxy(mut proxy) => {
            drop(proxy.stdin.take());
            assert!(
                proxy.wait().await.unwrap().success(),
                "proxy process failed"
            );
        }
        Running::Nginx(nginx) => nginx.stop().await,
    }
    drop(runtime.stdin.take());
    assert!(
        runtime.wait().await.unwrap().success(),
        "runtime process failed"
    );
    [counter.read(&out("runtime")), counter.read(&out("middle"))]
}

/// The middle process of a counted run.
enum Running {
    AttachProxy(tokio::process::Child),
    Nginx(Nginx),
}

/// Starts an attach proxy process under `counter` and trades its attach URL for a session
/// cookie; returns the process, the target with the cookie, and the client connection.
async fn start_counted_proxy(
    counter: Counter,
    out: &Path,
    runtime_addr: std::net::SocketAddr,
    token: &str,
) -> (tokio::process::Child, Target, SendRequest<Empty<Bytes>>) {
    let (proxy, mut lines) = spawn_role(
        PROXY_ROLE_ENV,
        &counter.wrapper(out),
        &format!("{runtime_addr}\n{token}\n"),
    )
    .await;
    let origin = lines.next_line().await.unwrap().expect("proxy origin");
    let url = lines.next_line().await.unwrap().expect("attach URL");
    let target = Target {
        name: "attach-proxy",
        addr: origin.strip_prefix("http://").unwrap().parse().unwrap(),
        headers: Vec::new(),
        middle: None,
    };
    let mut sender = connect(&target).await;
    let response = sender
        .send_request(request(&target, &url[origin.len()..]))
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    let target = Target {
        headers: vec![(
            hyper::header::COOKIE,
            cookie.split(';').next().unwrap().parse().unwrap(),
        )],
        ..target
    };
    (proxy, target, sender)
}
