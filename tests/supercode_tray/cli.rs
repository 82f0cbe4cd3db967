//! What the command-line tests share (`cli_*`, `by_name` and the others that run the binary): the
//! command line as a user runs it, the real `supercode-tray` binary in a private set of
//! directories ([`Home`]), real demo runtimes started with `demo-runtime --token-file`
//! ([`Demo`]), hand-written stale receipts, a real terminal, and the canaries. What the commands
//! print is checked for the canary token, the API key and the runtimes' loopback addresses; the
//! files they leave and every process's command line and environment for the token.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use live_runtime::test_support::{self, ChildGuard};
use serde_json::Value;

pub(crate) const TRAY: &str = env!("CARGO_BIN_EXE_supercode-tray");
pub(crate) const TOKEN_CANARY: &str = "canary-cli-token-3e8b61f0d4a2";
pub(crate) const API_KEY_CANARY: &str = "canary-cli-apikey-92c4e7a1b5";
/// How long a demo runtime gets to print its endpoint (it is already compiled).
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(30);

/// `supercode-tray events --json` (`command`) running, watching every session's status stream as
/// the tray app does: a permission request whose agent's own prompt waits for the hook is held
/// for the tray only while one watches. Stopped when dropped.
pub(crate) fn watching(mut command: Command) -> ChildGuard {
    ChildGuard(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

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
    pub(crate) extra_env: Vec<(&'static str, OsString)>,
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

    /// A token file holding [`TOKEN_CANARY`], for demo runtimes (`--token-file`).
    pub(crate) fn canary_token_file(&self) -> PathBuf {
        let path = self.path("token");
        std::fs::write(&path, TOKEN_CANARY).unwrap();
        path
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
    pub(crate) fn files_text(&self, sub: &str) -> String {
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
    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops it (SIGKILL) and returns what it printed on stderr.
    pub(crate) fn kill(&mut self) -> String {
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

pub(crate) fn assert_clean(what: &str, text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{what} contains the secret {secret:?}"
        );
    }
}

/// The proxy's own loopback address, from the attach URL.
pub(crate) fn proxy_address(url: &str) -> std::net::SocketAddr {
    url.strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|authority| authority.parse().ok())
        .unwrap_or_else(|| panic!("not an attach URL: {url:?}"))
}

/// A `sleep` whose pid a hand-written receipt claims with another start time: the receipt is
/// stale (its pid now belongs to another process) and revivable from its supervisor.
pub(crate) struct StaleReceipt {
    _holder: ChildGuard,
    pub(crate) endpoint: String,
}

pub(crate) fn stale_receipt(home: &Home, argv: &[&str], env: Value) -> StaleReceipt {
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

/// A display name that, printed raw, erases its line, forges the plan's program line and a line
/// of its own, starts a C1 control sequence and reverses what follows (issue 29).
pub(crate) const HOSTILE_NAME: &str =
    "planned\u{1b}[2K\r  program:           \"/usr/local/bin/canon-agent\"\n\u{9b}31m\u{202e}evil";
/// An argument that, printed raw, moves up a line and rewrites the first argument.
pub(crate) const HOSTILE_ARG: &str = "\u{1b}[1A\u{1b}[2K     1. \"serve\"\u{2066}";

/// The characters in `text` a terminal would act on rather than show: C0 controls other than a
/// line break (`\n`, or the `\r\n` a terminal's output processing makes of it), DEL, the C1
/// controls and the bidirectional overrides, embeddings, isolates and marks. Written out here,
/// apart from the app's own rule, so the check does not trust what it checks.
pub(crate) fn raw_controls(text: &str) -> Vec<(usize, char)> {
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
pub(crate) fn run_on_a_terminal(home: &Home, args: &[&str], answer: &str) -> (Option<i32>, String) {
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

/// The `state` object `list --json` gives the runtime `endpoint`.
pub(crate) fn agent_state<'a>(list: &'a Value, endpoint: &str) -> Option<&'a Value> {
    runtimes(list)
        .iter()
        .find(|r| r["endpoint"] == endpoint)
        .map(|r| &r["state"])
}
