//! A runtime's status API (`docs/runtime-api.md`) served over a raw socket from a script of
//! documents, for the tests of what the user acts on (issue 29): the runtime moves from one
//! prompt to the next when the test says, or on its own after a number of `GET`s (the runtime
//! that answered the first look with one question and every later one with another).
//!
//! By default it is a naive runtime: it takes every action posted, whatever revision the body
//! carries and whatever it offers, and records each one. So a test proves what the client sent,
//! and that the client itself refused; a runtime keeping the `stale-revision` rule would hide
//! a client that does not. [`PromptRuntime::keep_stale_revision`] makes it keep that rule (any
//! revision but the current one is stale), and [`PromptRuntime::advance_unannounced`] moves on
//! without telling its streams, for the client that has not heard of the change yet.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

/// How often an open stream re-checks whether the runtime stopped: a test's drop waits for
/// nothing, this only bounds how long a stream thread outlives it.
const STREAM_RECHECK: Duration = Duration::from_millis(200);

/// Largest request head read: a client's request is a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;

/// One action the runtime was asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Posted {
    /// The action id from the path.
    pub action: String,
    /// The `revision` the body carried (`None`: no body, or none in it).
    pub revision: Option<u64>,
}

#[derive(Default)]
struct Script {
    documents: Vec<Value>,
    /// Index into `documents` of what the runtime shows now.
    current: usize,
    /// Index into `documents` of what its streams were told.
    announced: usize,
    /// Refuse an action whose revision is not the current one (`409` `stale-revision`).
    keep_stale_revision: bool,
    /// Move on to the next document after this many more `GET /supercode/v1/status`.
    advance_after_gets: Option<usize>,
    posted: Vec<Posted>,
}

struct Shared {
    token: String,
    script: Mutex<Script>,
    changed: Condvar,
    stopped: AtomicBool,
}

impl Shared {
    fn script(&self) -> MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The running runtime; dropping it stops it.
pub struct PromptRuntime {
    address: SocketAddr,
    shared: Arc<Shared>,
}

/// A version-1 status document asking `title` of the user, with `actions` (each
/// `(id, label, destructive, confirm)`).
pub fn prompt(revision: u64, title: &str, actions: &[(&str, &str, bool, Option<&str>)]) -> Value {
    let actions: Vec<Value> = actions
        .iter()
        .map(|(id, label, destructive, confirm)| {
            let mut action = json!({ "id": id, "label": label, "destructive": destructive });
            if let Some(confirm) = confirm {
                action["confirm"] = json!(confirm);
            }
            action
        })
        .collect();
    json!({
        "version": 1,
        "revision": revision,
        "state": "needs-approval",
        "title": title,
        "since": "2026-12-03T08:30:01.000Z",
        "actions": actions,
        "controller": { "kind": "terminal" },
        "observers": 0,
    })
}

/// The bait and switch of issue 29: revision 1 asks "Run the unit tests?" (`approve`, not
/// destructive), revision 2 "Drop the production database?" (`approve`, destructive, with a
/// question).
pub fn bait_and_switch() -> Vec<Value> {
    vec![
        prompt(
            1,
            "Run the unit tests?",
            &[("approve", "Approve", false, None)],
        ),
        prompt(
            2,
            "Drop the production database?",
            &[(
                "approve",
                "Approve",
                true,
                Some("Drop the production database?"),
            )],
        ),
    ]
}

impl PromptRuntime {
    /// Serves `documents` on `127.0.0.1`, port 0, to clients with `Bearer token`, showing the
    /// first one.
    pub fn start(token: &str, documents: Vec<Value>) -> Self {
        assert!(!documents.is_empty(), "a runtime shows some document");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            token: token.to_owned(),
            script: Mutex::new(Script {
                documents,
                ..Script::default()
            }),
            changed: Condvar::new(),
            stopped: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for connection in listener.incoming() {
                if accepting.stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(connection) = connection else { continue };
                let shared = accepting.clone();
                std::thread::spawn(move || serve(&shared, connection));
            }
        });
        Self { address, shared }
    }

    /// Where it listens (register it in the receipt).
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Moves on to the next document after `gets` more one-shot looks
    /// (`GET /supercode/v1/status`): `1` is the runtime that answers the first look with one
    /// prompt and every later one with the next.
    pub fn advance_after_gets(&self, gets: usize) {
        self.shared.script().advance_after_gets = Some(gets);
    }

    /// Moves on to the next document now; open streams send it.
    pub fn advance(&self) {
        let mut script = self.shared.script();
        advance(&mut script);
        drop(script);
        self.shared.changed.notify_all();
    }

    /// Moves on to the next document now without telling open streams (its `GET` and its
    /// actions see it; a stream shows it only after a later [`PromptRuntime::advance`]).
    pub fn advance_unannounced(&self) {
        let mut script = self.shared.script();
        script.current = (script.current + 1).min(script.documents.len() - 1);
    }

    /// Refuses from now on an action whose revision is not the current document's, as a runtime
    /// keeping the API's `stale-revision` rule does.
    pub fn keep_stale_revision(&self) {
        self.shared.script().keep_stale_revision = true;
    }

    /// The revision of the document it shows now.
    pub fn revision(&self) -> u64 {
        let script = self.shared.script();
        script.documents[script.current]["revision"]
            .as_u64()
            .unwrap()
    }

    /// Every action it was asked for, in order (those it refused included).
    pub fn posted(&self) -> Vec<Posted> {
        self.shared.script().posted.clone()
    }
}

impl Drop for PromptRuntime {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        self.shared.changed.notify_all();
        // Wakes the accepting thread, which then sees `stopped`.
        let _ = TcpStream::connect(self.address);
    }
}

fn advance(script: &mut Script) {
    script.current = (script.current + 1).min(script.documents.len() - 1);
    script.announced = script.current;
}

fn serve(shared: &Shared, connection: TcpStream) {
    let mut reader = BufReader::new(connection.try_clone().unwrap());
    let mut head = String::new();
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        head.push_str(&line);
        if line == "\r\n" || line == "\n" {
            break;
        }
        if head.len() > MAX_HEAD {
            return;
        }
    }
    let mut lines = head.lines();
    let request = lines.next().unwrap_or_default().to_owned();
    let mut content_length = 0;
    let mut authorized = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("content-length") {
            content_length = value.parse().unwrap_or(0);
        } else if name.eq_ignore_ascii_case("authorization") {
            authorized = value == format!("Bearer {}", shared.token);
        }
    }
    let mut body = vec![0; content_length.min(MAX_HEAD)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let mut out = connection;
    if !authorized {
        return answer(
            &mut out,
            "401 Unauthorized",
            "text/plain",
            b"bearer token required",
        );
    }
    let mut parts = request.split(' ');
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    match (method, path) {
        ("GET", "/supercode/v1/status") => {
            let document = {
                let mut script = shared.script();
                let document = script.documents[script.current].to_string();
                match script.advance_after_gets {
                    Some(0 | 1) => {
                        script.advance_after_gets = None;
                        advance(&mut script);
                        shared.changed.notify_all();
                    }
                    Some(n) => script.advance_after_gets = Some(n - 1),
                    None => {}
                }
                document
            };
            answer(&mut out, "200 OK", "application/json", document.as_bytes());
        }
        ("GET", "/supercode/v1/status/stream") => stream(shared, &mut out),
        ("POST", path) if path.starts_with("/supercode/v1/actions/") => {
            let action = path["/supercode/v1/actions/".len()..].to_owned();
            let revision = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|b| b["revision"].as_u64());
            let (current, stale) = {
                let mut script = shared.script();
                script.posted.push(Posted {
                    action: action.clone(),
                    revision,
                });
                let current = script.documents[script.current]["revision"].as_u64();
                let stale =
                    script.keep_stale_revision && revision.is_some_and(|r| Some(r) != current);
                (current, stale)
            };
            if stale {
                let refusal =
                    br#"{"error":{"code":"stale-revision","message":"the status changed"}}"#;
                return answer(&mut out, "409 Conflict", "application/json", refusal);
            }
            let reply = json!({ "action": action, "revision": current }).to_string();
            answer(
                &mut out,
                "202 Accepted",
                "application/json",
                reply.as_bytes(),
            );
        }
        _ => answer(
            &mut out,
            "404 Not Found",
            "application/json",
            br#"{"error":{"code":"not-found","message":"no such route"}}"#,
        ),
    }
}

fn answer(out: &mut TcpStream, status: &str, content_type: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncache-control: no-store\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = out
        .write_all(head.as_bytes())
        .and_then(|()| out.write_all(body));
    let _ = out.shutdown(Shutdown::Write);
}

/// The stream: the current document at once, then each one the script moves to.
fn stream(shared: &Shared, out: &mut TcpStream) {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-store\r\nconnection: close\r\n\r\n";
    if out.write_all(head.as_bytes()).is_err() {
        return;
    }
    let mut sent: Option<usize> = None;
    let mut script = shared.script();
    loop {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        if sent != Some(script.announced) {
            sent = Some(script.announced);
            let document = &script.documents[script.announced];
            let event = format!(
                "event: status\nid: {}\ndata: {document}\n\n",
                document["revision"]
            );
            drop(script);
            if out.write_all(event.as_bytes()).is_err() {
                return;
            }
            script = shared.script();
            continue;
        }
        script = shared
            .changed
            .wait_timeout(script, STREAM_RECHECK)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}
