//! Test support (feature `test-support`): a second OS user of this machine, and what it tries.
//!
//! Tests that prove "nothing of a runtime reaches another user" need a real other user. As root
//! (CI runs the suite as root) [`OtherUser::get`] creates a system user once and runs roles as
//! it: the test binary re-runs itself for one ignored entry test with the user's uid and gid,
//! and that entry calls [`run_requested_role`]. Without root it returns `None` and the test says
//! it is skipped, unless `SUPERCODE_REQUIRE_OTHER_USER=1`, which makes that a failure.
//!
//! The roles are what such a user can do without any privilege: connect to a loopback port and
//! send bytes ([`Role::Talk`]), listen on a port a runtime has closed ([`Role::Listen`]), and read
//! every process's command line looking for attach links and try each one ([`Role::Snoop`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The user the tests create. A system account without a home or a login shell.
pub const USER_NAME: &str = "supercode-test-peer";

/// Environment variable naming the role a re-run test binary plays.
const ROLE_ENV: &str = "SUPERCODE_OTHER_USER_ROLE";
/// Environment variable carrying the role's argument (an address, or a duration).
const ARG_ENV: &str = "SUPERCODE_OTHER_USER_ARG";
/// Environment variable carrying the bytes a talking role sends.
const SEND_ENV: &str = "SUPERCODE_OTHER_USER_SEND";

/// How long a role reads an answer before it counts the silence as the answer.
const READ_TIMEOUT: Duration = Duration::from_secs(3);

/// Prefix of the one stdout line that carries a role's result.
const RESULT_PREFIX: &str = "OTHER-USER-RESULT ";
/// Printed by [`Role::Listen`] once it listens.
const LISTENING: &str = "OTHER-USER-LISTENING";

/// What the second user does.
#[derive(Debug, Clone)]
pub enum Role {
    /// Connect to the address, send the bytes, and report every byte that came back.
    Talk {
        /// Where to connect.
        addr: SocketAddr,
        /// What to send.
        send: String,
    },
    /// Connect to the Unix socket at the path, send the bytes, and report every byte that came
    /// back (a session host's hook socket, `agent-hooks`).
    TalkUnix {
        /// The socket's path.
        path: PathBuf,
        /// What to send.
        send: String,
    },
    /// Listen on the address until stdin closes, and report every byte any client sent.
    Listen {
        /// Where to listen.
        addr: SocketAddr,
    },
    /// For `duration`, read every process's command line; try every attach link found.
    Snoop {
        /// How long to watch.
        duration: Duration,
    },
}

/// A second OS user, created on first use.
#[derive(Debug, Clone, Copy)]
pub struct OtherUser {
    /// Its uid.
    pub uid: u32,
    /// Its primary gid.
    pub gid: u32,
}

impl OtherUser {
    /// The other user, or `None` (with the reason printed) when this process cannot create one.
    pub fn get() -> Option<OtherUser> {
        static USER: OnceLock<Result<OtherUser, String>> = OnceLock::new();
        match USER.get_or_init(create) {
            Ok(user) => Some(*user),
            Err(why) => {
                assert!(
                    std::env::var("SUPERCODE_REQUIRE_OTHER_USER").as_deref() != Ok("1"),
                    "SUPERCODE_REQUIRE_OTHER_USER=1 but no second user: {why}"
                );
                eprintln!("skipping the second-user test: {why}");
                None
            }
        }
    }

    /// Re-runs the current test binary's `entry_test` (an ignored test that calls
    /// [`run_requested_role`]) as this user, playing `role`. Stdout is piped.
    pub fn spawn(&self, entry_test: &str, role: &Role) -> Child {
        // setpriv (util-linux) drops root's supplementary groups too, which std cannot yet.
        let mut command = Command::new("setpriv");
        command
            .args([
                "--reuid",
                &self.uid.to_string(),
                "--regid",
                &self.gid.to_string(),
            ])
            .args(["--clear-groups", "--"])
            .arg(runnable_by_anyone())
            .args([
                entry_test,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        match role {
            Role::Talk { addr, send } => command
                .env(ROLE_ENV, "talk")
                .env(ARG_ENV, addr.to_string())
                .env(SEND_ENV, send),
            Role::TalkUnix { path, send } => command
                .env(ROLE_ENV, "talk-unix")
                .env(ARG_ENV, path)
                .env(SEND_ENV, send),
            Role::Listen { addr } => command
                .env(ROLE_ENV, "listen")
                .env(ARG_ENV, addr.to_string()),
            Role::Snoop { duration } => command
                .env(ROLE_ENV, "snoop")
                .env(ARG_ENV, duration.as_millis().to_string()),
        };
        command
            .spawn()
            .expect("the test binary runs as the other user")
    }

    /// Runs `role` to completion and returns its result line.
    pub fn run(&self, entry_test: &str, role: &Role) -> String {
        let child = self.spawn(entry_test, role);
        finish(child)
    }
}

/// Waits until a [`Role::Listen`] child listens.
pub fn wait_listening(child: &mut Child) -> BufReader<std::process::ChildStdout> {
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut line = String::new();
    loop {
        line.clear();
        let read = lines.read_line(&mut line).expect("the child's stdout");
        assert!(
            read > 0,
            "the other user's listener exited before listening"
        );
        if line.trim() == LISTENING {
            return lines;
        }
    }
}

/// Tells a [`Role::Listen`] child to stop (closes its stdin) and returns its result line.
pub fn stop_listening(mut child: Child, mut lines: BufReader<std::process::ChildStdout>) -> String {
    drop(child.stdin.take());
    let mut rest = String::new();
    lines.read_to_string(&mut rest).expect("the child's stdout");
    let status = child.wait().expect("the child ends");
    assert!(status.success(), "the other user's role failed: {status}");
    result_line(&rest)
}

/// Closes stdin, collects stdout and returns the child's result line.
pub fn finish(mut child: Child) -> String {
    drop(child.stdin.take());
    let output = child.wait_with_output().expect("the child ends");
    assert!(
        output.status.success(),
        "the other user's role failed: {}",
        output.status
    );
    result_line(&String::from_utf8_lossy(&output.stdout))
}

fn result_line(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(RESULT_PREFIX))
        .unwrap_or_else(|| panic!("the other user's role printed no result: {stdout}"))
        .to_owned()
}

/// The test binary at a path every user can run: itself when every directory above it lets
/// others through (a usual checkout), else a copy in the system's temp directory, made once.
fn runnable_by_anyone() -> PathBuf {
    static RUNNABLE: OnceLock<PathBuf> = OnceLock::new();
    RUNNABLE
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test binary");
            let open_to_others = |path: &Path, bits: u32| {
                std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & bits == bits)
            };
            if open_to_others(&exe, 0o005)
                && exe.ancestors().skip(1).all(|d| open_to_others(d, 0o001))
            {
                return exe;
            }
            let dir =
                std::env::temp_dir().join(format!("supercode-other-user-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a directory for the copy");
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            let copy = dir.join(exe.file_name().expect("a file name"));
            std::fs::copy(&exe, &copy).expect("the test binary copies");
            std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
            copy
        })
        .clone()
}

fn create() -> Result<OtherUser, String> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Err("creating a second OS user needs root (CI runs the suite as root)".into());
    }
    let lookup = || -> Option<OtherUser> {
        let id = |flag: &str| -> Option<u32> {
            let output = Command::new("id").args([flag, USER_NAME]).output().ok()?;
            String::from_utf8(output.stdout).ok()?.trim().parse().ok()
        };
        Some(OtherUser {
            uid: id("-u")?,
            gid: id("-g")?,
        })
    };
    if let Some(user) = lookup() {
        return Ok(user);
    }
    let status = Command::new("useradd")
        .args(["--system", "--user-group", "--no-create-home"])
        .args(["--shell", "/usr/sbin/nologin", USER_NAME])
        .status()
        .map_err(|e| format!("useradd could not run: {e}"))?;
    // Another test binary may have created it meanwhile; either way it must exist now.
    lookup().ok_or_else(|| format!("useradd {USER_NAME} failed ({status})"))
}

/// The body of the ignored entry test: plays the role named in the environment, if any.
/// Returns at once in a normal test run.
pub fn run_requested_role() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let arg = std::env::var(ARG_ENV).unwrap_or_default();
    let result = match role.as_str() {
        "talk" => talk(
            arg.parse().expect("an address"),
            &std::env::var(SEND_ENV).unwrap_or_default(),
        ),
        "talk-unix" => talk_unix(
            Path::new(&arg),
            &std::env::var(SEND_ENV).unwrap_or_default(),
        ),
        "listen" => listen(arg.parse().expect("an address")),
        "snoop" => snoop(Duration::from_millis(arg.parse().expect("milliseconds"))),
        other => panic!("unknown role {other}"),
    };
    // libtest has printed "test NAME ... " without a newline: start a line of our own.
    println!("\n{RESULT_PREFIX}{result}");
}

/// `connected=BOOL received=N text=...`: what came back (nothing, for a closed connection).
fn talk(addr: SocketAddr, send: &str) -> String {
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return "connected=false received=0 text=".into();
    };
    // Either may fail once the proxy has closed the connection: that is the expected answer.
    let _ = stream.write_all(send.as_bytes());
    let received = read_all(&mut stream);
    format!(
        "connected=true received={} text={}",
        received.len(),
        String::from_utf8_lossy(&received).escape_debug()
    )
}

/// `connected=false error=KIND`, or as [`talk`] says what came back.
fn talk_unix(path: &Path, send: &str) -> String {
    let mut stream = match std::os::unix::net::UnixStream::connect(path) {
        Ok(stream) => stream,
        Err(e) => return format!("connected=false error={:?}", e.kind()),
    };
    let _ = stream.write_all(send.as_bytes());
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let mut received = Vec::new();
    let _ = stream.read_to_end(&mut received);
    format!(
        "connected=true received={} text={}",
        received.len(),
        String::from_utf8_lossy(&received).escape_debug()
    )
}

fn read_all(stream: &mut TcpStream) -> Vec<u8> {
    let _ = stream.set_read_timeout(Some(READ_TIMEOUT));
    let mut received = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buf) {
        if n == 0 {
            break;
        }
        received.extend_from_slice(&buf[..n]);
    }
    received
}

/// `connections=N received=N text=...`: every byte clients sent to the grabbed port.
fn listen(addr: SocketAddr) -> String {
    let listener = TcpListener::bind(addr).expect("the port is free to take");
    listener.set_nonblocking(true).unwrap();
    println!("\n{LISTENING}");
    std::io::stdout().flush().unwrap();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        let _ = stop_tx.send(());
    });
    let (mut connections, mut received) = (0, Vec::new());
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        // Take every queued connection, also after the stop: one may have come just before.
        while let Ok((mut stream, _)) = listener.accept() {
            connections += 1;
            let _ = stream.set_nonblocking(false);
            received.extend(read_all(&mut stream));
        }
        if stop_rx.try_recv().is_ok() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    format!(
        "connections={connections} received={} text={}",
        received.len(),
        String::from_utf8_lossy(&received).escape_debug()
    )
}

/// `seen=N tried=N answered=N text=...`: attach links found on command lines, and what trying
/// each gave (any answer at all counts).
fn snoop(duration: Duration) -> String {
    let deadline = Instant::now() + duration;
    let mut seen: Vec<String> = Vec::new();
    let mut answers = Vec::new();
    while Instant::now() < deadline {
        for url in attach_links_on_command_lines() {
            if seen.contains(&url) {
                continue;
            }
            let answer = try_link(&url);
            seen.push(url);
            answers.push(answer);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let answered = answers.iter().filter(|a| !a.is_empty()).count();
    format!(
        "seen={} tried={} answered={answered} text={}",
        seen.len(),
        answers.len(),
        answers.concat().escape_debug()
    )
}

fn attach_links_on_command_lines() -> Vec<String> {
    let mut links = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return links;
    };
    for entry in entries.flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        for arg in cmdline.split(|b| *b == 0) {
            let arg = String::from_utf8_lossy(arg);
            if let Some(at) = arg.find("http://127.0.0.1:") {
                let url = &arg[at..];
                if url.contains("/__attach/") {
                    links.push(url.to_owned());
                }
            }
        }
    }
    links
}

/// GETs the link as a browser would, and returns whatever came back (empty for nothing).
fn try_link(url: &str) -> String {
    let rest = url.trim_start_matches("http://");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let Ok(addr) = authority.parse::<SocketAddr>() else {
        return String::new();
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    let Ok(mut stream) = TcpStream::connect(addr) else {
        return String::new();
    };
    let _ = stream.write_all(request.as_bytes());
    String::from_utf8_lossy(&read_all(&mut stream)).into_owned()
}
