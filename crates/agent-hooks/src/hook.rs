//! The hook program (`supercode-tray-hook claude-code|codex`): what the agent runs for each event.
//!
//! It reads the event from stdin (capped), hands it to the session's host over the session's
//! socket (starting the host if there is none yet), and for a permission request of an
//! attended session waits for the user's answer from the tray and prints the agent's decision
//! JSON. Whatever goes wrong (no host, a refused socket, a bad input, a host killed mid-request)
//! it prints nothing and exits 0 at once, so the agent goes on exactly as without the hook and
//! asks in its terminal as usual: the hook never makes a decision the user did not make, never
//! prints noise and never makes the agent fail.
//!
//! The agent waits for it on every tool call, and most of that wait is the program starting
//! (docs/BENCHMARKS.md, "Claude Code hooks"). So it is a program of its own beside
//! `supercode-tray`, with blocking standard-library I/O only: no async runtime, no argument
//! parser and no D-Bus client library to load. The host it starts is `supercode-tray hook-host`.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use live_runtime::ProcessIdentity;

use crate::agent::Agent;
use crate::channel::{self, Reply, Request, MAX_LINE};
use crate::claude_code::Decision;
use crate::event::{EventKind, HookEvent};

/// The hook program's name; it lives beside `supercode-tray`.
pub const PROGRAM: &str = "supercode-tray-hook";

/// The largest hook input read. Claude Code's are a few KiB (a tool's input included); a bigger
/// one (a huge file write) is not needed whole: the event is dropped, and the session's state
/// catches up at its next event.
pub const MAX_INPUT: u64 = 1024 * 1024;

/// How long a hook waits for a host it just started to listen. Starting one takes a few
/// milliseconds (plus a keychain round trip before its first answer); past this the event is
/// dropped rather than holding the agent.
const HOST_START_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the hook looks for the new host's socket while it starts.
const HOST_START_POLL: Duration = Duration::from_millis(5);
/// How long an ordinary event waits for the host to take it in (the host answers at once; the
/// wait keeps the events of a session in order).
const REPLY_TIMEOUT: Duration = Duration::from_secs(2);

/// The environment variables the host keeps: what locates the user's directories, keychain and
/// our own settings. Nothing else of the agent's environment (its API key) reaches the host.
const HOST_ENV: &[&str] = &[
    "HOME",
    "USER",
    "LOGNAME",
    "XDG_RUNTIME_DIR",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CONFIG_HOME",
    "DBUS_SESSION_BUS_ADDRESS",
    "SUPERCODE_RUNTIME_DIR",
    "SUPERCODE_SECRET_STORE",
    "SUPERCODE_SECRET_DIR",
    "SUPERCODE_KEYCHAIN_TIMEOUT_MS",
];

/// The hook program's `main`: its one argument names the agent. Always exits 0: an unknown
/// agent, like any other failure, leaves the agent as without the hook.
pub fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let agent = args.next().and_then(|name| Agent::named(name.to_str()?));
    if let (Some(agent), None) = (agent, args.next()) {
        run(agent);
    }
    ExitCode::SUCCESS
}

/// Runs `agent`'s hook: stdin in, maybe a decision out. Never fails.
pub fn run(agent: Agent) {
    let Some(mut event) = read_event(agent, std::io::stdin().lock()) else {
        return;
    };
    // The agent's process: the session's host runs for it, and the hook's start is told by the
    // process the agent forked for it.
    let process = rustix::process::getppid()
        .and_then(|parent| agent.process(parent.as_raw_pid().unsigned_abs()));
    event.spawned = process.and_then(crate::event::Spawned::forked_by);
    if let Some(decision) = deliver(agent, process, agent.request(event)) {
        println!("{}", agent.decision_output(&decision));
    }
}

/// The event in the hook's input, or `None` for input that is too big or not an event.
pub fn read_event(agent: Agent, input: impl Read) -> Option<HookEvent> {
    let mut bytes = Vec::new();
    input.take(MAX_INPUT + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_INPUT {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    agent.parse(&value)
}

fn deliver(agent: Agent, process: Option<u32>, request: Request) -> Option<Decision> {
    let event = &request.event;
    let dir = channel::socket_dir();
    let path = channel::socket_path(&dir, agent.name(), &event.session_id);
    let stream = match connect(&dir, &path) {
        Some(stream) => stream,
        // A session that ends with no host needs none; nor does an event the agent did not wait
        // for, which may come after the session's end (the session's next waited-for event
        // starts its host).
        None if event.kind == EventKind::SessionEnd || agent.runs_in_background(&event.kind) => {
            return None
        }
        None => {
            start_host(agent, process?, &dir, event)?;
            let deadline = Instant::now() + HOST_START_TIMEOUT;
            loop {
                if let Some(stream) = connect(&dir, &path) {
                    break stream;
                }
                if Instant::now() >= deadline {
                    return None;
                }
                std::thread::sleep(HOST_START_POLL);
            }
        }
    };
    exchange(stream, &request)
}

/// Hands `request` to the host of its event's session in `dir`, if one runs (none is started),
/// and returns the decision it answers with. What the hook does once connected; tests drive a
/// host with it.
pub fn send(agent: Agent, dir: &Path, request: &Request) -> Option<Decision> {
    let path = channel::socket_path(dir, agent.name(), &request.event.session_id);
    exchange(connect(dir, &path)?, request)
}

fn exchange(mut stream: UnixStream, request: &Request) -> Option<Decision> {
    if !channel::peer_is_own(&stream) {
        return None;
    }
    let wait = request.wait;
    let mut line = serde_json::to_string(request).ok()?;
    line.push('\n');
    stream.write_all(line.as_bytes()).ok()?;
    // Only a permission request waits, and only for the user: the host answers when the tray
    // does, or with no decision when the terminal answered first.
    if !wait {
        stream.set_read_timeout(Some(REPLY_TIMEOUT)).ok()?;
    }
    let mut answer = String::new();
    BufReader::new(stream.take(MAX_LINE))
        .read_line(&mut answer)
        .ok()?;
    serde_json::from_str::<Reply>(&answer).ok()?.decision
}

fn connect(dir: &Path, path: &Path) -> Option<UnixStream> {
    channel::check_dir(dir).ok()?;
    UnixStream::connect(path).ok()
}

/// Starts the session's host for the agent's process `pid`, detached: its own session, no stdio,
/// `/` as its directory, and only [`HOST_ENV`] of the agent's environment. `None` when the
/// process is gone.
fn start_host(agent: Agent, pid: u32, dir: &Path, event: &HookEvent) -> Option<()> {
    let process = ProcessIdentity::of(pid)?;
    channel::ensure_dir(dir).ok()?;
    let mut command = Command::new(host_program()?);
    command
        .args(["hook-host", agent.name(), "--session"])
        .arg(&event.session_id)
        .arg("--cwd")
        .arg(&event.cwd)
        .arg("--pid")
        .arg(process.pid.to_string())
        .arg("--start-time")
        .arg(process.start_time.to_string())
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for name in HOST_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    command.spawn().ok().map(|_| ())
}

/// The `supercode-tray` command beside the running program: hosts are started from it.
fn host_program() -> Option<PathBuf> {
    beside("supercode-tray")
}

/// The hook program beside the running binary, which `hooks install` writes into the agent's
/// settings; `None` when there is none (then there is nothing to install).
pub fn hook_program() -> Option<PathBuf> {
    beside(PROGRAM)
}

fn beside(name: &str) -> Option<PathBuf> {
    let program = std::env::current_exe().ok()?.with_file_name(name);
    program.is_file().then_some(program)
}
