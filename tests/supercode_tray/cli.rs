//! The command line as a user runs it: the real `supercode-tray` binary, real demo runtimes
//! started with `demo-runtime --token-file`, SIGKILL, and the contract-following test Canon
//! server. What the commands print is checked for the canary token, the API key and the
//! runtimes' loopback addresses; the files they leave and every process's command line and
//! environment for the token.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use live_runtime::test_support::{self, mkfifo, sparse_file, wait_until, ChildGuard};
use serde_json::Value;

pub(crate) const TRAY: &str = env!("CARGO_BIN_EXE_supercode-tray");
pub(crate) const TOKEN_CANARY: &str = "canary-cli-token-3e8b61f0d4a2";
const API_KEY_CANARY: &str = "canary-cli-apikey-92c4e7a1b5";
/// How long a demo runtime gets to print its endpoint (it is already compiled).
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A private set of directories, as the CLI finds them through its environment.
/// Points `command` at a private set of directories under `home` (receipts, the file secret
/// store, `$CANON_HOME`, logs, state), with no Canon URL or log level inherited and no stdin.
pub(crate) fn private_env(command: &mut Command, home: &Path) {
    command
        .env("SUPERCODE_RUNTIME_DIR", home.join("receipts"))
        .env("SUPERCODE_SECRET_STORE", "file")
        .env("SUPERCODE_SECRET_DIR", home.join("secrets"))
        .env("CANON_HOME", home.join("canon"))
        .env("SUPERCODE_LOG_DIR", home.join("logs"))
        .env("SUPERCODE_STATE_DIR", home.join("state"))
        .env_remove("CANON_BASE_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
}

pub(crate) struct Home {
    dir: tempfile::TempDir,
    extra_env: Vec<(&'static str, OsString)>,
}

impl Home {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["canon", "workspace"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        Self {
            dir,
            extra_env: Vec::new(),
        }
    }

    pub(crate) fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(TRAY);
        command.args(args);
        private_env(&mut command, self.dir.path());
        command.envs(self.extra_env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Runs a subcommand to completion; everything it printed is kept for the canary check.
    pub(crate) fn run(&self, args: &[&str], printed: &mut String) -> Output {
        let output = self.command(args).output().unwrap();
        printed.push_str(&String::from_utf8_lossy(&output.stdout));
        printed.push_str(&String::from_utf8_lossy(&output.stderr));
        output
    }

    pub(crate) fn list_json(&self, printed: &mut String) -> Value {
        let output = self.run(&["list", "--json"], printed);
        assert!(output.status.success(), "{output:?}");
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// Starts `demo-runtime --token-file` and waits for the endpoint it prints first.
    pub(crate) fn start_demo(&self, name: &str, token_file: &Path) -> Demo {
        self.start_demo_with(name, token_file, &[])
    }

    /// [`Home::start_demo`] with more arguments (`--scenario approval`).
    pub(crate) fn start_demo_with(&self, name: &str, token_file: &Path, more: &[&str]) -> Demo {
        let workspace = self.path("workspace");
        let mut args = vec![
            "demo-runtime",
            "--name",
            name,
            "--token-file",
            token_file.to_str().unwrap(),
            "--workspace",
            workspace.to_str().unwrap(),
        ];
        args.extend_from_slice(more);
        let mut child = self
            .command(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let _ = tx.send(first);
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            rest
        });
        let endpoint = rx
            .recv_timeout(START_TIMEOUT)
            .unwrap_or_else(|_| panic!("demo runtime {name} printed no endpoint"))
            .trim()
            .to_owned();
        assert!(endpoint.starts_with("lre_"), "{endpoint:?}");
        Demo { child, endpoint }
    }

    /// Every file under `sub` (the whole home for ""), as text; the file secret store excepted.
    fn files_text(&self, sub: &str) -> String {
        let mut text = String::new();
        let mut stack = vec![self.path(sub)];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let kind = entry.file_type().unwrap();
                if kind.is_dir() {
                    stack.push(path);
                } else if kind.is_file() && !path.starts_with(self.path("secrets")) {
                    text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
                }
            }
        }
        text
    }
}

pub(crate) struct Demo {
    child: Child,
    pub(crate) endpoint: String,
}

impl Demo {
    /// Stops it (SIGKILL) and returns what it printed on stderr.
    fn kill(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut err);
        }
        err
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn runtimes(list: &Value) -> &Vec<Value> {
    list["runtimes"].as_array().unwrap()
}

fn status_of<'a>(list: &'a Value, endpoint: &str) -> Option<&'a str> {
    runtimes(list)
        .iter()
        .find(|r| r["endpoint"] == endpoint)
        .and_then(|r| r["status"].as_str())
}

/// Every process's command line and environment on this machine, NUL-separated.
fn all_command_lines() -> String {
    let me = std::process::id().to_string();
    let mut text = String::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(bytes) = std::fs::read(entry.path().join("cmdline")) {
            text.push_str(&String::from_utf8_lossy(&bytes));
        }
        // Our own environment is the test's; the others (the demo runtimes above all) must not
        // carry the token either.
        if name != me {
            if let Ok(bytes) = std::fs::read(entry.path().join("environ")) {
                text.push_str(&String::from_utf8_lossy(&bytes));
            }
        }
    }
    text
}

pub(crate) fn assert_clean(what: &str, text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{what} contains the secret {secret:?}"
        );
    }
}

/// Issue 2's "done when": demo runtimes are listed running; one killed with SIGKILL is gone from
/// the next list; the canary token given with `--token-file` appears in no output, receipt, log
/// or command line, and the runtimes' loopback addresses in no output or log (only in receipts).
#[test]
fn demo_runtimes_are_listed_running_a_sigkilled_one_leaves_and_the_canary_shows_nowhere() {
    let home = Home::new();
    let token_file = home.path("canary.token");
    std::fs::write(&token_file, TOKEN_CANARY).unwrap();
    let mut printed = String::new();

    let mut alpha = home.start_demo("alpha", &token_file);
    let beta = home.start_demo("beta", &token_file);

    let list = home.list_json(&mut printed);
    assert_eq!(list["version"], 1);
    assert_eq!(list["secretStore"]["kind"], "file");
    assert_eq!(status_of(&list, &alpha.endpoint), Some("running"), "{list}");
    assert_eq!(status_of(&list, &beta.endpoint), Some("running"), "{list}");
    let table = home.run(&["list"], &mut printed);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.contains("alpha") && table.contains("beta"), "{table}");

    // The loopback addresses, which no output may show either.
    let secrets = live_runtime::SecretStore::file(home.path("secrets"));
    let dir = live_runtime::ReceiptDir::new(home.path("receipts"), secrets);
    let mut ports = Vec::new();
    for endpoint in [&alpha.endpoint, &beta.endpoint] {
        let endpoint: live_runtime::LiveRuntimeEndpoint = endpoint.parse().unwrap();
        let record = live_runtime::list_live_runtimes(&dir)
            .unwrap()
            .runtimes
            .into_iter()
            .find(|r| r.endpoint == endpoint)
            .unwrap();
        let resolved = live_runtime::resolve_live_runtime(&dir, &endpoint, &record.source).unwrap();
        assert_eq!(resolved.token.expose(), TOKEN_CANARY);
        ports.push(format!(":{}", resolved.address.expose().port()));
    }

    // Killed and reaped: the very next list no longer shows it running under its receipt, but
    // as exited, by the id it had (issue 31), until dismissed.
    let killed_err = alpha.kill();
    let list = home.list_json(&mut printed);
    assert_eq!(
        status_of(&list, &alpha.endpoint),
        None,
        "the killed runtime's receipt is gone from the next list: {list}"
    );
    let exited = runtimes(&list)
        .iter()
        .find(|r| r["id"] == alpha.endpoint.as_str())
        .and_then(|r| r["status"].as_str());
    assert_eq!(exited, Some("exited"), "{list}");
    assert_eq!(status_of(&list, &beta.endpoint), Some("running"));

    let mut secrets: Vec<&str> = vec![TOKEN_CANARY];
    secrets.extend(ports.iter().map(String::as_str));
    assert_clean("the CLI's output", &printed, &secrets);
    assert_clean("the killed runtime's stderr", &killed_err, &[TOKEN_CANARY]);
    assert_clean(
        "a command line or environment",
        &all_command_lines(),
        &[TOKEN_CANARY],
    );
    std::fs::remove_file(&token_file).unwrap();
    // A receipt names its runtime's address (that is what it is for), never its token.
    assert_clean("a file left behind", &home.files_text(""), &[TOKEN_CANARY]);
    for sub in ["logs", "state", "canon"] {
        assert_clean(sub, &home.files_text(sub), &secrets);
    }
    assert!(
        home.path("logs").is_dir(),
        "the CLI logged to its log directory, which was checked"
    );
    drop(beta);
}

#[test]
fn errors_exit_1_on_stderr_and_usage_errors_exit_2() {
    let home = Home::new();
    let mut printed = String::new();
    let token_file = home.path("token");
    std::fs::write(&token_file, TOKEN_CANARY).unwrap();
    let demo = home.start_demo("gamma", &token_file);

    let unknown = home.run(
        &["forget", "lre_00000000000000000000000000000000"],
        &mut printed,
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(unknown.stdout.is_empty());
    assert!(String::from_utf8_lossy(&unknown.stderr).starts_with("error: "));

    let live = home.run(&["forget", &demo.endpoint], &mut printed);
    assert_eq!(live.status.code(), Some(1));
    let message = String::from_utf8_lossy(&live.stderr).into_owned();
    assert!(message.contains("running"), "{message}");
    let list = home.list_json(&mut printed);
    assert_eq!(
        status_of(&list, &demo.endpoint),
        Some("running"),
        "a refused forget leaves the receipt"
    );

    let usage = home.run(&["list", "--no-such-flag"], &mut printed);
    assert_eq!(usage.status.code(), Some(2));
    let usage = home.run(&["approve"], &mut printed);
    assert_eq!(usage.status.code(), Some(2));
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}

/// A pending registration for `profile` written as the package writes it, and the
/// contract-following Canon server the CLI is pointed at (kept alive by the returned runtime).
fn pending_with_server(
    home: &mut Home,
    profile: &str,
    config: canon_local::test_server::TestServerConfig,
) -> (
    canon_local::CanonHome,
    tokio::runtime::Runtime,
    canon_local::test_server::TestServer,
) {
    let canon = canon_local::CanonHome::at(home.path("canon")).unwrap();
    canon_local::get_or_create_pending_registration(&canon, profile, Some("codex")).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let server = runtime
        .block_on(canon_local::test_server::TestServer::start(config))
        .unwrap();
    home.extra_env
        .push(("CANON_BASE_URL", server.base_url().into()));
    (canon, runtime, server)
}

/// Issue 3's "done when" for approval, from the command line: `pending --json` shows the
/// package's pending registration without its poll token; `approve` completes it against the
/// contract-following server, printing each state once; `agents.json` then holds the profile in
/// the package's shape and nothing printed holds the API key. (The poll token is checked at the
/// core's level, where it can be read while it exists: `core canary`.)
#[test]
fn approve_completes_a_pending_registration_and_prints_each_state_once() {
    let mut home = Home::new();
    let (canon, _runtime, server) = pending_with_server(
        &mut home,
        "newbie",
        canon_local::test_server::TestServerConfig {
            pending_polls: 3,
            api_key: API_KEY_CANARY.into(),
            poll_interval_ms: Some(50),
            ..Default::default()
        },
    );
    let mut printed = String::new();

    let pending = home.run(&["pending", "--json"], &mut printed);
    assert!(pending.status.success(), "{pending:?}");
    let pending: Value = serde_json::from_slice(&pending.stdout).unwrap();
    assert_eq!(pending[0]["profile"], "newbie");
    assert_eq!(pending[0]["clientType"], "codex");
    assert_eq!(pending[0]["state"], "unsubmitted");
    assert!(pending[0].get("pollToken").is_none(), "{pending}");

    let approve = home.run(&["approve", "newbie"], &mut printed);
    let stdout = String::from_utf8_lossy(&approve.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&approve.stderr).into_owned();
    assert!(approve.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(stdout.starts_with("newbie: approved"), "{stdout}");
    let progress: Vec<&str> = stderr.lines().collect();
    assert!(!progress.is_empty(), "progress is shown");
    for pair in progress.windows(2) {
        assert_ne!(pair[0], pair[1], "a state is printed once: {stderr}");
    }
    assert!(!stderr.contains("approved"), "{stderr}");

    let agents: Value =
        serde_json::from_str(&std::fs::read_to_string(canon.agents_path()).unwrap()).unwrap();
    assert_eq!(agents["newbie"]["apiKey"], API_KEY_CANARY);
    assert_eq!(agents["newbie"]["clientType"], "codex");
    let after = home.run(&["pending", "--json"], &mut printed);
    let after: Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(after, serde_json::json!([]));

    let state = server.state();
    assert_eq!(state.registrations.len(), 1);
    assert!(state.registrations[0].acked, "the approval was acked");
    assert_clean("the CLI's output", &printed, &[API_KEY_CANARY]);
}

/// A rejected registration is the command's failure: its state on stdout, exit 1.
#[test]
fn approve_exits_1_when_the_registration_is_rejected() {
    let mut home = Home::new();
    let (_canon, _runtime, _server) = pending_with_server(
        &mut home,
        "nope",
        canon_local::test_server::TestServerConfig {
            reject: true,
            ..Default::default()
        },
    );
    let mut printed = String::new();

    let approve = home.run(&["approve", "nope"], &mut printed);

    assert_eq!(approve.status.code(), Some(1), "{approve:?}");
    let stdout = String::from_utf8_lossy(&approve.stdout).into_owned();
    assert!(stdout.starts_with("nope: rejected"), "{stdout}");
    assert!(String::from_utf8_lossy(&approve.stderr).contains("error: "));
}

/// The proxy's own loopback address, from the attach URL.
pub(crate) fn proxy_address(url: &str) -> std::net::SocketAddr {
    url.strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|authority| authority.parse().ok())
        .unwrap_or_else(|| panic!("not an attach URL: {url:?}"))
}

fn accepts(address: std::net::SocketAddr) -> bool {
    std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
}

// Proves (issue 5): `attach ID --no-open` prints the one-time URL first and serves; when its
// runtime dies (SIGKILL), the proxy closes and the command ends with exit 1 and a message
// instead of serving 502 pages until someone presses Ctrl-C.
#[test]
fn attach_serves_until_its_runtime_dies_then_exits_1_and_closes_the_proxy() {
    let home = Home::new();
    let token_file = home.path("token");
    std::fs::write(&token_file, TOKEN_CANARY).unwrap();
    let mut demo = home.start_demo("delta", &token_file);

    let mut attach = home
        .command(&["attach", &demo.endpoint, "--no-open"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(attach.stdout.take().unwrap());
    let mut url = String::new();
    stdout.read_line(&mut url).unwrap();
    let url = url.trim().to_owned();
    assert!(url.contains("/__attach/"), "first line is the URL: {url:?}");
    let proxy = proxy_address(&url);
    assert!(accepts(proxy), "the proxy serves while its runtime runs");
    assert!(
        attach.try_wait().unwrap().is_none(),
        "attach keeps serving while its runtime runs"
    );

    demo.kill();
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    let status = loop {
        if let Some(status) = attach.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = attach.kill();
            panic!("attach still serves {START_TIMEOUT:?} after its runtime was killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    attach
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("stopped, so its attach proxy is closed"),
        "stderr says why: {err}"
    );
    assert!(!accepts(proxy), "the proxy's port is closed");
    let mut printed = url;
    stdout.read_to_string(&mut printed).unwrap();
    printed.push_str(&err);
    assert_clean("attach's output", &printed, &[TOKEN_CANARY]);
}

/// The ignored test that the second user's processes run (this binary, re-run as that user).
#[test]
#[ignore = "run only as the second user, by the tests that use it"]
fn as_the_other_user() {
    attach_proxy::other_user::run_requested_role();
}

// Issue 12: while the user attaches, a second OS user watches every process's command line,
// finds the one-time link on the browser's (here a stand-in that takes two seconds to start,
// then fetches like a browser), and tries it first. It gets nothing back, and the user's own
// browser still attaches with that same link.
#[test]
fn another_user_who_reads_the_attach_link_off_a_command_line_cannot_use_it() {
    let Some(other) = attach_proxy::other_user::OtherUser::get() else {
        return;
    };
    let mut home = Home::new();
    let token_file = home.path("token");
    std::fs::write(&token_file, TOKEN_CANARY).unwrap();
    let mut demo = home.start_demo("epsilon", &token_file);
    let browser = home.path("browser.sh");
    let (status_file, page_file, jar) = (home.path("status"), home.path("page"), home.path("jar"));
    std::fs::write(
        &browser,
        format!(
            "#!/bin/sh\nsleep 2\nexec curl -s -L -c '{jar}' -b '{jar}' -o '{page}' -w '%{{http_code}}' \"$1\" > '{status}'\n",
            jar = jar.display(),
            page = page_file.display(),
            status = status_file.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &browser,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    home.extra_env
        .push(("SUPERCODE_BROWSER", browser.clone().into()));

    let snoop = attach_proxy::other_user::Role::Snoop {
        duration: Duration::from_secs(8),
    };
    let snooper = other.spawn("cli::as_the_other_user", &snoop);
    let mut attach = home
        .command(&["attach", &demo.endpoint])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the stand-in browser to finish", START_TIMEOUT, || {
        std::fs::read_to_string(&status_file)
            .is_ok_and(|s| !s.is_empty())
            .then_some(())
    });
    let result = attach_proxy::other_user::finish(snooper);
    let _ = Command::new("kill")
        .args(["-INT", &attach.id().to_string()])
        .status();
    let _ = attach.wait();
    demo.kill();

    let field = |key: &str| -> String {
        let start = result.find(&format!("{key}=")).unwrap() + key.len() + 1;
        result[start..].split(' ').next().unwrap().to_owned()
    };
    assert!(
        field("seen").parse::<u32>().unwrap() >= 1,
        "the other user saw the link on a command line, so the test watched the right place: {result}"
    );
    assert_eq!(
        field("answered"),
        "0",
        "the other user got an answer: {result}"
    );
    assert_clean("the other user's findings", &result, &[TOKEN_CANARY]);
    assert_eq!(std::fs::read_to_string(&status_file).unwrap(), "200");
    let page = std::fs::read_to_string(&page_file).unwrap();
    assert!(
        page.contains("epsilon"),
        "the user's own browser attached: {page}"
    );
}

/// A loopback listener that only counts connections: proof that nothing at all went its way.
struct Witness {
    url: String,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Witness {
    fn start() -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                drop(stream);
            }
        });
        Self { url, connections }
    }

    fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Issue 13: `approve` killed mid-poll and started again with another `CANON_BASE_URL` refuses
/// to send the poll token there: the other server gets not one connection. Plain http to another
/// machine is refused outright.
#[test]
fn approve_restarted_mid_poll_with_another_canon_base_url_sends_the_poll_token_nowhere_else() {
    let mut home = Home::new();
    let (_canon, _runtime, server) = pending_with_server(
        &mut home,
        "moving",
        canon_local::test_server::TestServerConfig {
            pending_polls: 1_000_000,
            poll_interval_ms: Some(50),
            ..Default::default()
        },
    );
    let mut first = home
        .command(&["approve", "moving"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("approve to poll", START_TIMEOUT, || {
        (server.state().polls > 0).then_some(())
    });
    first.kill().unwrap();
    first.wait().unwrap();

    let elsewhere = Witness::start();
    home.extra_env.retain(|(name, _)| *name != "CANON_BASE_URL");
    home.extra_env
        .push(("CANON_BASE_URL", elsewhere.url.clone().into()));
    let mut printed = String::new();
    let again = home.run(&["approve", "moving"], &mut printed);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    let stderr = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(stderr.contains(&server.base_url()), "{stderr}");
    assert!(
        stderr.contains("only sent to the API that issued it"),
        "{stderr}"
    );
    assert_eq!(elsewhere.connections(), 0, "the other Canon was contacted");

    home.extra_env.retain(|(name, _)| *name != "CANON_BASE_URL");
    home.extra_env
        .push(("CANON_BASE_URL", "http://canon.example.com".into()));
    let clear = home.run(&["approve", "moving"], &mut printed);
    assert_eq!(clear.status.code(), Some(1), "{clear:?}");
    let stderr = String::from_utf8_lossy(&clear.stderr).into_owned();
    assert!(stderr.contains("over https only"), "{stderr}");
}

/// A `sleep` whose pid a hand-written receipt claims with another start time: the receipt is
/// stale (its pid now belongs to another process) and revivable from its supervisor.
pub(crate) struct StaleReceipt {
    _holder: ChildGuard,
    pub(crate) endpoint: String,
}

fn stale_receipt(home: &Home, argv: &[&str], env: Value) -> StaleReceipt {
    stale_receipt_named(home, "planned", argv, env)
}

/// [`stale_receipt`] whose display name (and runtime id, `test:NAME`) is `name`.
pub(crate) fn stale_receipt_named(
    home: &Home,
    name: &str,
    argv: &[&str],
    env: Value,
) -> StaleReceipt {
    let holder = ChildGuard::sleep();
    let identity = holder.identity();
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let mut receipt =
        test_support::foreign_receipt(&endpoint, name, identity.pid, Some(identity.start_time + 1));
    receipt["source"]["workspace"] = serde_json::json!(home.path("workspace"));
    receipt["metadata"]["supervisor"] = serde_json::json!({
        "kind": "launchCommand", "argv": argv, "cwd": home.path("workspace"), "env": env,
    });
    let dir = home.path("receipts");
    test_support::write_receipt_file(&dir, &format!("{endpoint}.json"), &receipt);
    StaleReceipt {
        _holder: holder,
        endpoint: endpoint.to_string(),
    }
}

/// Issue 31: `forget` shows exactly what it removes (the receipt's path, the token's store),
/// then removes nothing without `--yes` when stdin is not a terminal, nothing when the terminal
/// answers no, and exactly that receipt when it answers yes.
#[test]
fn issue_31_forget_shows_what_it_removes_and_asks_first() {
    let home = Home::new();
    let receipt = stale_receipt_named(&home, "leftover", &["/bin/true"], serde_json::json!({}));
    let file = home
        .path("receipts")
        .join(format!("{}.json", receipt.endpoint));
    let mut printed = String::new();

    let refused = home.run(&["forget", "leftover"], &mut printed);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let shown = String::from_utf8_lossy(&refused.stdout).into_owned();
    assert!(
        shown.contains("Forget \"leftover\" will remove:"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("its stale receipt {}", file.display())),
        "{shown}"
    );
    assert!(
        shown.contains("its token, if the plaintext file store"),
        "{shown}"
    );
    let message = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(message.contains("stdin is not a terminal"), "{message}");
    assert!(message.contains("--yes"), "{message}");
    assert!(file.exists(), "nothing is removed without a confirmation");

    let (code, terminal) = run_on_a_terminal(&home, &["forget", "leftover"], "n\n");
    assert_eq!(code, Some(1), "{terminal}");
    assert!(
        terminal.contains("Forget \"leftover\"? [y/N]"),
        "{terminal}"
    );
    assert!(terminal.contains("was not forgotten"), "{terminal}");
    assert!(file.exists(), "answered no, yet it was removed");

    let (code, terminal) = run_on_a_terminal(&home, &["forget", "leftover"], "y\n");
    assert_eq!(code, Some(0), "{terminal}");
    assert!(terminal.contains("Forgot \"leftover\""), "{terminal}");
    assert!(!file.exists(), "answered yes: the receipt shown is gone");
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}

/// Issue 31, item 8: a runtime whose process died without unregistering, and that nothing can
/// relaunch, stays in `list` as exited (with why) after `list` reconciled its receipt away;
/// forget refuses it saying to dismiss it, dismiss refuses a runtime that has not exited, and
/// `dismiss` takes it off, once. Its record holds nothing secret (no token, no address).
#[test]
fn issue_31_an_exited_runtime_is_listed_until_dismissed() {
    let home = Home::new();
    let holder = ChildGuard::sleep();
    let identity = holder.identity();
    let endpoint = live_runtime::LiveRuntimeEndpoint::generate();
    let mut receipt = test_support::foreign_receipt(
        &endpoint,
        "crashed-bot",
        identity.pid,
        Some(identity.start_time),
    );
    receipt["token"] = serde_json::json!(TOKEN_CANARY);
    let file = test_support::write_receipt_file(
        &home.path("receipts"),
        &format!("{endpoint}.json"),
        &receipt,
    );
    drop(holder); // SIGKILL, reaped: it died without unregistering.
    let _stale = stale_receipt_named(&home, "leftover", &["/bin/true"], serde_json::json!({}));
    let mut printed = String::new();

    let listed = home.run(&["list"], &mut printed);
    assert!(listed.status.success(), "{listed:?}");
    let text = String::from_utf8_lossy(&listed.stdout).into_owned();
    let row = text
        .lines()
        .position(|l| l.starts_with(endpoint.as_str()))
        .unwrap_or_else(|| panic!("{text}"));
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[row].contains(" exited ") && lines[row].contains("crashed-bot"),
        "{text}"
    );
    assert!(lines[row + 1].contains("stopped unexpectedly"), "{text}");
    assert!(!file.exists(), "list reconciled the dead receipt");
    // Its record is in the state directory, and holds nothing secret.
    let state = home.files_text("state");
    assert!(state.contains("crashed-bot"), "{state}");
    assert_clean(
        "the state directory",
        &state,
        &[TOKEN_CANARY, "127.0.0.1:9"],
    );
    let json: Value =
        serde_json::from_slice(&home.run(&["list", "--json"], &mut printed).stdout).unwrap();
    let view = json["runtimes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == endpoint.as_str())
        .unwrap();
    assert_eq!(view["status"], "exited");
    assert_eq!(view["dismiss"]["available"], true);
    assert_eq!(json["runtimes"].as_array().unwrap().len(), 2, "{json:#}");

    let forget = home.run(&["forget", "crashed-bot", "--yes"], &mut printed);
    assert_eq!(forget.status.code(), Some(1), "{forget:?}");
    assert!(
        String::from_utf8_lossy(&forget.stderr).contains("dismiss it instead"),
        "{forget:?}"
    );
    let not_exited = home.run(&["dismiss", "leftover"], &mut printed);
    assert_eq!(not_exited.status.code(), Some(1), "{not_exited:?}");
    assert!(
        String::from_utf8_lossy(&not_exited.stderr)
            .contains("Only a runtime that has exited can be dismissed"),
        "{not_exited:?}"
    );

    let dismissed = home.run(&["dismiss", "crashed-bot"], &mut printed);
    assert!(dismissed.status.success(), "{dismissed:?}");
    assert!(
        String::from_utf8_lossy(&dismissed.stdout).contains("Dismissed \"crashed-bot\"."),
        "{dismissed:?}"
    );
    let text = String::from_utf8_lossy(&home.run(&["list"], &mut printed).stdout).into_owned();
    assert!(!text.contains("crashed-bot"), "{text}");
    assert!(text.contains("leftover"), "{text}");
    let again = home.run(&["dismiss", endpoint.as_str()], &mut printed);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY, "127.0.0.1:9"]);
}

/// Issue 13: `revive` prints the plan (absolute program, each argument, working directory, every
/// variable), runs nothing without `--yes` when stdin is not a terminal, refuses `LD_PRELOAD`
/// with its reason until `--allow-env LD_PRELOAD`, and remembers that allow; a harmless `LANG`
/// needs no allow (issue 29).
#[test]
fn revive_prints_the_plan_asks_for_yes_and_refuses_ld_preload_until_allowed() {
    let home = Home::new();
    let marker = home.path("workspace").join("ran");
    let script = format!("echo ran > '{}'; exit 3", marker.display());
    let receipt = stale_receipt(
        &home,
        &["sh", "-c", &script],
        serde_json::json!({ "LD_PRELOAD": "/nonexistent/hook.so", "LANG": "C.UTF-8" }),
    );
    let id = receipt.endpoint.as_str();
    let mut printed = String::new();

    let refused = home.run(&["revive", id, "--yes"], &mut printed);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let plan = String::from_utf8_lossy(&refused.stdout).into_owned();
    let program = plan
        .lines()
        .find_map(|l| l.trim().strip_prefix("program:"))
        .map(|p| p.trim().trim_matches('"').to_owned())
        .unwrap_or_else(|| panic!("no program line: {plan}"));
    assert!(
        program.starts_with('/') && program.ends_with("/sh"),
        "{plan}"
    );
    assert!(
        plan.contains("(recorded as \"sh\", found on PATH)"),
        "{plan}"
    );
    assert!(plan.contains(" 1. \"-c\""), "{plan}");
    assert!(plan.contains(&format!(" 2. {script:?}")), "{plan}");
    let workspace = home.path("workspace").display().to_string();
    assert!(
        plan.contains(&format!("working directory: {workspace:?}")),
        "{plan}"
    );
    assert!(plan.contains("    LANG=\"C.UTF-8\"\n"), "{plan}");
    assert!(
        plan.contains(
            "LD_PRELOAD=\"/nonexistent/hook.so\"  NEEDS --allow-env: LD_PRELOAD is not one of the few harmless variables"
        ),
        "{plan}"
    );
    let stderr = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(stderr.contains("--allow-env LD_PRELOAD"), "{stderr}");
    assert!(!marker.exists(), "a refused plan ran");

    let unconfirmed = home.run(&["revive", id, "--allow-env", "LD_PRELOAD"], &mut printed);
    assert_eq!(unconfirmed.status.code(), Some(1), "{unconfirmed:?}");
    let stderr = String::from_utf8_lossy(&unconfirmed.stderr).into_owned();
    assert!(stderr.contains("run again with --yes"), "{stderr}");
    assert!(!marker.exists(), "ran without a confirmation");

    let allowed = home.run(
        &["revive", id, "--yes", "--allow-env", "LD_PRELOAD"],
        &mut printed,
    );
    let stderr = String::from_utf8_lossy(&allowed.stderr).into_owned();
    assert!(stderr.contains("exited before it came up"), "{stderr}");
    assert!(marker.exists(), "the allowed plan ran");

    std::fs::remove_file(&marker).unwrap();
    let remembered = home.run(&["revive", id, "--yes"], &mut printed);
    let stdout = String::from_utf8_lossy(&remembered.stdout).into_owned();
    assert!(stdout.contains("(allowed for this runtime)"), "{stdout}");
    assert!(marker.exists(), "the allow was remembered");
}

/// A display name that, printed raw, erases its line, forges the plan's program line and a line
/// of its own, starts a C1 control sequence and reverses what follows (issue 29).
const HOSTILE_NAME: &str =
    "planned\u{1b}[2K\r  program:           \"/usr/local/bin/canon-agent\"\n\u{9b}31m\u{202e}evil";
/// An argument that, printed raw, moves up a line and rewrites the first argument.
const HOSTILE_ARG: &str = "\u{1b}[1A\u{1b}[2K     1. \"serve\"\u{2066}";

/// The characters in `text` a terminal would act on rather than show: C0 controls other than a
/// line break (`\n`, or the `\r\n` a terminal's output processing makes of it), DEL, the C1
/// controls and the bidirectional overrides, embeddings, isolates and marks. Written out here,
/// apart from the app's own rule, so the check does not trust what it checks.
fn raw_controls(text: &str) -> Vec<(usize, char)> {
    let chars: Vec<char> = text.chars().collect();
    chars
        .iter()
        .enumerate()
        .filter(|&(i, &c)| match c {
            '\n' => false,
            '\r' => chars.get(i + 1) != Some(&'\n'),
            c if c < ' ' => true,
            '\u{7f}'..='\u{9f}' => true,
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' => true,
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
            _ => false,
        })
        .map(|(i, &c)| (i, c))
        .collect()
}

/// Runs `supercode-tray ARGS` on a real pseudo-terminal (util-linux `script`), typing `answer`;
/// returns its exit code and everything the terminal was sent.
fn run_on_a_terminal(home: &Home, args: &[&str], answer: &str) -> (Option<i32>, String) {
    use std::io::Write as _;
    let mut line = shell_quote(TRAY);
    for arg in args {
        line.push(' ');
        line.push_str(&shell_quote(arg));
    }
    let mut command = Command::new("script");
    command.args(["--quiet", "--return", "--command", &line, "/dev/null"]);
    private_env(&mut command, home.dir.path());
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = command
        .spawn()
        .expect("util-linux `script` runs the command on a pseudo-terminal");
    // Held open until it exits: `script` may end the session when its input ends.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(answer.as_bytes()).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`supercode-tray {}` on a terminal did not end",
                args.join(" ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    let bytes = reader.join().unwrap();
    (status.code(), String::from_utf8_lossy(&bytes).into_owned())
}

fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Issue 29: on a real terminal, the revive plan of a record whose name and argument carry
/// escape sequences, a carriage return, a newline, C1 and bidirectional controls shows each as a
/// visible `\u{..}` escape: the terminal receives none of them, the plan has one program line
/// (the real one), and the record's text stays on its own line. Answered no, nothing runs.
#[test]
fn issue_29_a_hostile_records_revive_plan_reaches_a_real_terminal_escaped() {
    let home = Home::new();
    let marker = home.path("workspace").join("ran");
    let script = format!("echo ran > '{}'", marker.display());
    let receipt = stale_receipt_named(
        &home,
        HOSTILE_NAME,
        &["sh", "-c", &script, HOSTILE_ARG],
        serde_json::json!({ "LANG": "C.UTF-8" }),
    );
    let (code, terminal) = run_on_a_terminal(&home, &["revive", &receipt.endpoint], "n\n");

    assert_eq!(raw_controls(&terminal), [], "{terminal:?}");
    assert_eq!(code, Some(1), "{terminal}");
    assert!(
        terminal.contains(
            r#"Revive planned\u{1b}[2K\u{d}  program:           "/usr/local/bin/canon-agent"\u{a}\u{9b}31m\u{202e}evil will run:"#
        ),
        "{terminal}"
    );
    let programs: Vec<&str> = terminal
        .lines()
        .filter(|l| l.trim_start().starts_with("program:"))
        .collect();
    assert_eq!(programs.len(), 1, "{terminal}");
    assert!(programs[0].trim_end().ends_with(r#"/sh""#), "{terminal}");
    assert!(
        terminal.contains(r#" 3. "\u{1b}[1A\u{1b}[2K     1. \"serve\"\u{2066}""#),
        "{terminal}"
    );
    assert!(
        terminal.contains(r#"LANG="C.UTF-8""#),
        "a harmless variable: {terminal}"
    );
    assert!(
        terminal.contains(r#"\u{202e}evil? [y/N]"#),
        "asked: {terminal}"
    );
    assert!(terminal.contains("was not revived"), "{terminal}");
    assert!(!marker.exists(), "answered no, yet it ran");
}

/// Issue 29: a record that sets a variable whose name is not `[A-Za-z_][A-Za-z0-9_]*` (an
/// escape sequence in it, or bash's exported-function form) is refused with the reason, the
/// name shown escaped, and nothing runs.
#[test]
fn issue_29_a_variable_name_that_is_not_plain_refuses_the_revive_with_the_reason() {
    let home = Home::new();
    let marker = home.path("workspace").join("ran");
    let script = format!("echo ran > '{}'", marker.display());
    for (name, shown) in [
        ("X\u{1b}[2K\rPATH", r#""X\u{1b}[2K\rPATH""#),
        ("BASH_FUNC_x%%", r#""BASH_FUNC_x%%""#),
    ] {
        let receipt = stale_receipt(
            &home,
            &["sh", "-c", &script],
            serde_json::json!({ name: "() { echo evil; }" }),
        );
        let mut printed = String::new();
        let refused = home.run(
            &["revive", &receipt.endpoint, "--yes", "--allow-env", name],
            &mut printed,
        );
        assert_eq!(refused.status.code(), Some(1), "{refused:?}");
        assert_eq!(raw_controls(&printed), [], "{printed:?}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.contains(&format!(
                "sets an environment variable named {shown}, which is not a plain name"
            )),
            "{stderr}"
        );
        assert!(!marker.exists(), "{name:?} ran");
    }
}

/// Issue 29: `list` shows a hostile record's name, runtime id and workspace with each control
/// as a visible escape, and `list --json` carries them as JSON escapes that parse back to the
/// very text recorded; neither sends the terminal a raw control.
#[test]
fn issue_29_list_and_list_json_print_a_hostile_records_text_escaped() {
    let home = Home::new();
    let receipt = stale_receipt_named(&home, HOSTILE_NAME, &["sleep", "1"], serde_json::json!({}));
    let hostile_workspace = "/w\u{1b}]0;owned\u{7}\u{202e}kcatta";
    let path = home
        .path("receipts")
        .join(format!("{}.json", receipt.endpoint));
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    record["source"]["workspace"] = serde_json::json!(hostile_workspace);
    test_support::write_receipt_file(
        &home.path("receipts"),
        &format!("{}.json", receipt.endpoint),
        &record,
    );
    let mut printed = String::new();

    let table = home.run(&["list"], &mut printed);
    assert!(table.status.success(), "{table:?}");
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert_eq!(raw_controls(&table), [], "{table:?}");
    let row = table
        .lines()
        .find(|l| l.starts_with(&receipt.endpoint))
        .unwrap_or_else(|| panic!("no row: {table}"));
    assert!(
        row.contains(r#"planned\u{1b}[2K\u{d}  program:           "/usr/local/bin/canon-agent"\u{a}\u{9b}31m\u{202e}evil"#),
        "{row}"
    );
    assert!(
        row.ends_with(r"/w\u{1b}]0;owned\u{7}\u{202e}kcatta"),
        "{row}"
    );

    let json = home.run(&["list", "--json"], &mut printed);
    assert!(json.status.success(), "{json:?}");
    let text = String::from_utf8_lossy(&json.stdout).into_owned();
    assert_eq!(raw_controls(&text), [], "{text:?}");
    assert!(text.contains(r"\u009b31m\u202eevil"), "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    let shown = runtimes(&list)
        .iter()
        .find(|r| r["id"] == receipt.endpoint.as_str())
        .unwrap_or_else(|| panic!("not listed: {list:#}"));
    assert_eq!(
        shown["name"], HOSTILE_NAME,
        "the same text, escaped for JSON"
    );
    assert_eq!(shown["workspace"], hostile_workspace);
}

/// Runs a subcommand, failing the test (and killing it) if it has not ended within `deadline`:
/// a FIFO opened without `O_NONBLOCK` or `/dev/zero` read without a cap would hang it forever.
fn run_within(home: &Home, args: &[&str], deadline: Duration) -> Output {
    let what = format!("`supercode-tray {}`", args.join(" "));
    test_support::output_within(home.command(args), &what, deadline)
}

/// A `$CANON_HOME` with two good catalog entries (one whose profile exists, one whose profile is
/// missing) and every kind of hostile file next to them; returns the bad files and the reason
/// each must be listed with.
fn hostile_canon_home(canon: &Path) -> Vec<(&'static str, &'static str)> {
    use std::os::unix::fs::PermissionsExt;
    let write = |path: &Path, text: &str, mode: u32| {
        std::fs::write(path, text).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    let entry = |profile: &str| {
        serde_json::json!({
            "id": format!("sdk:{profile}:0123456789abcdef"), "runtime": "sdk", "profile": profile,
            "cwd": canon.display().to_string(), "launchCommand": ["/bin/true", profile],
            "status": "offline", "reviveCapability": "revivable",
            "lastStoppedAt": "2026-12-01T10:00:00.000Z"
        })
        .to_string()
    };
    let runtimes = canon.join("runtimes");
    std::fs::create_dir_all(&runtimes).unwrap();
    std::fs::create_dir_all(canon.join("locks")).unwrap();
    write(
        &canon.join("agents.json"),
        r#"{"alpha": {"apiKey": "k", "agentId": "a", "agentName": "alpha", "registeredAt": "2026-12-01T09:00:00.000Z"}}"#,
        0o600,
    );
    write(&runtimes.join("alpha.json"), &entry("alpha"), 0o600);
    write(&runtimes.join("gone.json"), &entry("gone"), 0o600);
    // Used, but reported: others may read it.
    write(&runtimes.join("wide.json"), &entry("wide"), 0o644);

    let mut bad = Vec::new();
    mkfifo(&runtimes.join("fifo.json"));
    bad.push(("runtimes/fifo.json", "not a regular file (a FIFO)"));
    std::os::unix::fs::symlink("/dev/zero", runtimes.join("zero.json")).unwrap();
    bad.push(("runtimes/zero.json", "symbolic link"));
    sparse_file(&runtimes.join("huge.json"), b"{", 100 * 1024 * 1024);
    bad.push((
        "runtimes/huge.json",
        "over the 1048576-byte Canon file limit",
    ));
    write(&runtimes.join("deep.json"), &"[".repeat(200_000), 0o600);
    bad.push(("runtimes/deep.json", "nested too deeply"));
    let foreign = runtimes.join("foreign.json");
    write(&foreign, &entry("foreign"), 0o600);
    std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
    bad.push(("runtimes/foreign.json", "owned by uid 65534"));
    mkfifo(&canon.join("pending-registrations.json"));
    bad.push(("pending-registrations.json", "not a regular file (a FIFO)"));
    std::os::unix::fs::symlink("/dev/zero", canon.join("locks/other.lock")).unwrap();
    bad.push(("locks/other.lock", "symbolic link"));
    bad
}

/// How long `list` or `doctor` may take over a hostile `$CANON_HOME`: a correct read takes
/// milliseconds; a hung one never ends. Generous for a loaded CI machine.
const HOSTILE_READ_DEADLINE: Duration = Duration::from_secs(20);

/// Issue 13: with a FIFO, links to `/dev/zero`, a 100 MB file, a deep nest, another user's file
/// and a 0644 file in `$CANON_HOME`, `list --json` returns promptly, lists the good catalog
/// entries with the package's derived `reviveCapability` and `status` next to the tray's own
/// revive availability, lists each bad file with its reason and the 0644 one as a warning; `list`
/// and `doctor` say the same in words.
#[test]
fn issue_13_list_and_doctor_return_promptly_over_a_hostile_canon_home() {
    let home = Home::new();
    let bad = hostile_canon_home(&home.path("canon"));

    let output = run_within(&home, &["list", "--json"], HOSTILE_READ_DEADLINE);
    assert!(output.status.success(), "{output:?}");
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    let entry = |profile: &str| {
        runtimes(&list)
            .iter()
            .find(|r| r["profile"] == profile)
            .unwrap_or_else(|| panic!("{profile} not listed: {list:#}"))
    };
    let alpha = entry("alpha");
    assert_eq!(alpha["origin"], "catalog");
    assert_eq!(alpha["catalogStatus"], "offline");
    assert_eq!(alpha["reviveCapability"], "revivable");
    assert_eq!(alpha["revive"]["available"], true, "{alpha:#}");
    let gone = entry("gone");
    assert_eq!(gone["reviveCapability"], "missing-profile");
    assert_eq!(gone["catalogStatus"], "offline");
    assert_eq!(gone["revive"]["available"], false);
    assert!(gone["revive"]["reason"]
        .as_str()
        .unwrap()
        .contains("missing from agents.json"));
    assert_eq!(entry("wide")["reviveCapability"], "missing-profile");
    assert_eq!(runtimes(&list).len(), 3, "{list:#}");

    let ignored = list["ignored"].as_array().unwrap();
    for (file, reason) in &bad {
        let found = ignored
            .iter()
            .find(|i| i["location"] == "canon" && i["file"] == *file)
            .unwrap_or_else(|| panic!("{file} not listed as ignored: {ignored:#?}"));
        assert!(
            found["reason"].as_str().unwrap().contains(reason),
            "{file}: {found} lacks {reason:?}"
        );
    }
    assert_eq!(ignored.len(), bad.len(), "{ignored:#?}");
    let warnings = list["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert_eq!(warnings[0]["file"], "runtimes/wide.json");
    assert!(warnings[0]["reason"]
        .as_str()
        .unwrap()
        .contains("permissions (644)"));

    let output = run_within(&home, &["list"], HOSTILE_READ_DEADLINE);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        text.contains("ignored runtimes/fifo.json: it is not a regular file (a FIFO)"),
        "{text}"
    );
    assert!(
        text.contains("warning runtimes/wide.json: its permissions (644)"),
        "{text}"
    );

    let output = run_within(&home, &["doctor", "--json"], HOSTILE_READ_DEADLINE);
    let doctor: Value = serde_json::from_slice(&output.stdout).unwrap();
    let checks = doctor["checks"].as_array().unwrap();
    let canon = checks.iter().find(|c| c["name"] == "CANON_HOME").unwrap();
    assert_eq!(canon["status"], "warn", "{canon:#}");
    let detail = canon["detail"].as_str().unwrap();
    assert!(
        detail.contains(&format!("{} file(s) ignored", bad.len())),
        "{detail}"
    );
    assert!(detail.contains("runtimes/wide.json"), "{detail}");
    // Each ignored file is a warning of its own, with its reason (issue 31 item 7).
    let ignored: Vec<&str> = checks
        .iter()
        .filter(|c| c["name"] == "ignored file" && c["status"] == "warn")
        .map(|c| c["detail"].as_str().unwrap())
        .collect();
    assert_eq!(ignored.len(), bad.len(), "{ignored:#?}");
    for (file, reason) in &bad {
        assert!(
            ignored
                .iter()
                .any(|d| d.contains(&format!("/{file}: ")) && d.contains(reason)),
            "doctor does not name {file} with {reason:?}: {ignored:#?}"
        );
    }
}

/// The `state` object `list --json` gives the runtime `endpoint`.
pub(crate) fn agent_state<'a>(list: &'a Value, endpoint: &str) -> Option<&'a Value> {
    runtimes(list)
        .iter()
        .find(|r| r["endpoint"] == endpoint)
        .map(|r| &r["state"])
}

/// Issue 15: `list --json` gives a running runtime its `state` (and the table a STATE column),
/// `act` refuses a destructive action without `--yes` off a terminal, approves with exit 0 and
/// refuses what is no longer offered with exit 1, and `events --json` prints the change as JSON
/// lines; the canary token is in none of it.
#[test]
fn list_shows_agent_state_act_approves_and_events_streams_the_change() {
    let home = Home::new();
    let token_file = home.path("token");
    std::fs::write(&token_file, TOKEN_CANARY).unwrap();
    let demo = home.start_demo_with("agent", &token_file, &["--scenario", "approval"]);
    let endpoint = demo.endpoint.clone();
    let mut printed = String::new();
    let deadline = std::time::Instant::now() + START_TIMEOUT;
    let list = loop {
        let list = home.list_json(&mut printed);
        if agent_state(&list, &endpoint).is_some_and(|s| s["value"] == "needs-approval") {
            break list;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never needs-approval: {list}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let state = agent_state(&list, &endpoint).unwrap();
    assert_eq!(state["title"], "Run the test suite?");
    assert_eq!(state["actions"][0]["id"], "approve");
    assert_eq!(state["actions"][1]["destructive"], true);
    assert_eq!(state["controller"]["kind"], "none");
    let table = home.run(&["list"], &mut printed);
    let table = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(table.contains("STATE"), "{table}");
    assert!(table.contains("needs-approval"), "{table}");

    // Destructive, stdin not a terminal, no --yes: refused before anything is sent.
    let deny = home.run(&["act", &endpoint, "deny"], &mut printed);
    assert_eq!(deny.status.code(), Some(1), "{deny:?}");
    assert!(String::from_utf8_lossy(&deny.stderr).contains("--yes"));

    let mut events = home
        .command(&["events", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = events.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let next_line = |lines: &mut Vec<String>| {
        let line = rx
            .recv_timeout(START_TIMEOUT)
            .expect("events printed a line");
        lines.push(line.clone());
        serde_json::from_str::<Value>(&line).expect("every line is JSON")
    };
    // The first snapshot says where it is now; then the approval moves it on.
    loop {
        let event = next_line(&mut lines);
        if event["type"] == "snapshot" {
            break;
        }
    }
    let approve = home.run(&["act", &endpoint, "approve"], &mut printed);
    assert!(approve.status.success(), "{approve:?}");
    assert!(String::from_utf8_lossy(&approve.stdout).contains("accepted Approve"));
    loop {
        let event = next_line(&mut lines);
        let state = event["snapshot"]["runtimes"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["endpoint"] == endpoint))
            .map(|r| r["state"]["value"].clone());
        if state.as_ref().is_some_and(|v| v == "needs-input") {
            break;
        }
    }
    let _ = events.kill();
    let _ = events.wait();

    let again = home.run(&["act", &endpoint, "approve"], &mut printed);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("does not offer"));

    printed.push_str(&lines.join("\n"));
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
    assert_clean("the log", &home.files_text("logs"), &[TOKEN_CANARY]);
}

/// Issue 29, reproduced as reported: a runtime (a raw-socket one that takes every action
/// posted, whatever its revision) answers the first look with "Run the unit tests?" (nothing to
/// ask) and every later one with "Drop the production database?" (destructive, asked).
/// `act ID approve </dev/null` decides and sends from one look: the prompt changed after it, so
/// it exits 1 saying so and nothing reaches the runtime. Looking again, the question needs a
/// terminal or `--yes`; with `--yes` the revision of that look is what is sent.
#[test]
fn issue_29_act_sends_nothing_when_the_prompt_changed_after_its_look() {
    use live_runtime::test_support::prompt_runtime::{bait_and_switch, Posted, PromptRuntime};
    use live_runtime::{LiveRuntimeMetadata, LiveRuntimeSource, ReceiptDir, SecretStore};

    let home = Home::new();
    let receipts = ReceiptDir::new(
        home.path("receipts"),
        SecretStore::file(home.path("secrets")),
    );
    let runtime = PromptRuntime::start(TOKEN_CANARY, bait_and_switch());
    let registration = live_runtime::register_live_runtime_with_metadata(
        &receipts,
        "test:switcher",
        LiveRuntimeSource {
            session_id: "session-switcher".into(),
            workspace: home.path("workspace"),
        },
        runtime.address(),
        live_runtime::Sensitive::new(TOKEN_CANARY.to_owned()),
        LiveRuntimeMetadata {
            runtime_kind: "sdk".into(),
            display_name: Some("switcher".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let endpoint = registration.endpoint().to_string();
    runtime.advance_after_gets(1);
    let mut printed = String::new();

    let act = home.run(&["act", &endpoint, "approve"], &mut printed);
    let stderr = String::from_utf8_lossy(&act.stderr);
    assert_eq!(act.status.code(), Some(1), "{act:?}");
    assert!(stderr.contains("changed since it was shown"), "{stderr}");
    assert!(stderr.contains("look again"), "{stderr}");
    assert_eq!(runtime.posted(), [], "nothing reached the runtime");

    let asked = home.run(&["act", &endpoint, "approve"], &mut printed);
    let stderr = String::from_utf8_lossy(&asked.stderr);
    assert_eq!(asked.status.code(), Some(1), "{asked:?}");
    assert!(stderr.contains("Drop the production database?"), "{stderr}");
    assert!(stderr.contains("--yes"), "{stderr}");
    assert_eq!(runtime.posted(), [], "nothing reached the runtime");

    let yes = home.run(&["act", &endpoint, "approve", "--yes"], &mut printed);
    assert!(yes.status.success(), "{yes:?}");
    assert_eq!(
        runtime.posted(),
        [Posted {
            action: "approve".into(),
            revision: Some(2)
        }],
        "the revision of the look it decided from"
    );
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}

// Proves: `forget NAME` removes a stale Canon runtime entry's one file, as the package's
// `removeLocalRuntimeEntry` does, and leaves agents.json, locks and the other entries as they were;
// an entry that stopped normally is refused with a reason in plain words.
#[test]
fn issue_31_forget_removes_a_stale_canon_entry_by_name_and_nothing_else() {
    let home = Home::new();
    let mut printed = String::new();
    let canon = home.path("canon");
    let home_canon = canon_local::CanonHome::at(canon.clone()).unwrap();
    let dead_pid = {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    };
    let entry = |name: &str, status: &str, pid: Option<u32>| {
        let id = format!("sdk:{name}:0123456789abcdef");
        let mut value = serde_json::json!({
            "id": id, "runtime": "sdk", "profile": name, "agentName": name,
            "cwd": canon.display().to_string(), "launchCommand": ["/bin/true", name],
            "status": status, "reviveCapability": "revivable",
            "lastStartedAt": "2026-12-01T10:00:00.000Z"
        });
        if let Some(pid) = pid {
            value["pid"] = pid.into();
        }
        let path = home_canon.runtime_path(&id);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
        path
    };
    let crashed = entry("crashed", "running", Some(dead_pid));
    let stopped = entry("stopped", "offline", None);
    std::fs::write(
        canon.join("agents.json"),
        r#"{"crashed": {"apiKey": "k"}, "stopped": {"apiKey": "k"}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(canon.join("locks")).unwrap();
    // Held by a live process (a dead holder's lock is cleared by any reader, as the package does).
    std::fs::write(
        canon.join("locks/stopped.lock"),
        format!("{{\"pid\":{}}}", std::process::id()),
    )
    .unwrap();
    let read = |p: &Path| std::fs::read(p).unwrap();
    let kept = [
        (canon.join("agents.json"), read(&canon.join("agents.json"))),
        (
            canon.join("locks/stopped.lock"),
            read(&canon.join("locks/stopped.lock")),
        ),
        (stopped.clone(), read(&stopped)),
    ];

    let refused = home.run(&["forget", "stopped"], &mut printed);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let message = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(message.contains("stopped normally"), "{message}");
    assert!(!message.contains("catalog"), "{message}");

    let forgot = home.run(&["forget", "crashed", "--yes"], &mut printed);
    assert!(forgot.status.success(), "{forgot:?}");
    assert!(
        String::from_utf8_lossy(&forgot.stdout).contains("Forgot \"crashed\""),
        "{forgot:?}"
    );
    assert!(!crashed.exists());
    for (path, bytes) in &kept {
        assert_eq!(&read(path), bytes, "{}", path.display());
    }
    assert_eq!(
        std::fs::read_dir(canon.join("runtimes")).unwrap().count(),
        1
    );
}
