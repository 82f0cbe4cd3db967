//! Issue 31 item 6, "The CLI by name", as a user runs it: the real `supercode-tray` binary
//! against real demo runtimes and hand-written receipts. `act`, `attach`, `forget` and `revive`
//! take the NAME `list` shows (or an id); a name several runtimes share picks none and lists
//! them; "no such runtime" has one wording; the error texts say what is offered or why not.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use live_runtime::test_support::ChildGuard;
use serde_json::{json, Value};

use crate::cli::{
    agent_state, assert_clean, proxy_address, stale_receipt_named, Home, START_TIMEOUT,
    TOKEN_CANARY,
};

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Waits until `list --json` shows the runtime `endpoint` in agent state `value`.
fn wait_for_state(home: &Home, endpoint: &str, value: &str, printed: &mut String) -> Value {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let list = home.list_json(printed);
        if agent_state(&list, endpoint).is_some_and(|s| s["value"] == value) {
            return list;
        }
        assert!(Instant::now() < deadline, "never {value}: {list}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A running `attach`, its URL (the first line of stdout) and what it said on stderr up to
/// "Serving".
struct Attached {
    child: Child,
    url: String,
    said: String,
}

impl Attached {
    fn start(home: &Home, args: &[&str], browser: Option<&str>) -> Self {
        let mut command = home.command(args);
        if let Some(browser) = browser {
            command.env("SUPERCODE_BROWSER", browser);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        let mut said = String::new();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        while !said.contains("Serving") {
            if err.read_line(&mut said).unwrap() == 0 {
                break;
            }
        }
        Self {
            child,
            url: url.trim().to_owned(),
            said,
        }
    }

    /// The status line of a GET of the link (one redeem: 303 to the page).
    fn open_link(&self) -> String {
        let address = proxy_address(&self.url);
        let path = &self.url[self.url.find("/__attach/").expect("an attach URL")..];
        let mut stream = std::net::TcpStream::connect_timeout(&address, START_TIMEOUT).unwrap();
        stream.set_read_timeout(Some(START_TIMEOUT)).unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut status = String::new();
        BufReader::new(stream).read_line(&mut status).unwrap();
        status
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// Proves: with two runtimes running, `act`, `attach` and `forget` take the NAME `list` shows and
// reach that runtime (an id still works); `list` shows what the agent asks and the actions it
// offers; `act` with an action not offered lists the offered ones; `attach --no-open` says the
// link works once within 30 s; a refused action says why in the inventory's words.
#[test]
fn issue_31_act_attach_and_forget_take_the_name_list_shows() {
    let home = Home::new();
    let token_file = home.canary_token_file();
    let agent = home.start_demo_with("agent", &token_file, &["--scenario", "approval"]);
    let other = home.start_demo("other", &token_file);
    let mut printed = String::new();
    wait_for_state(&home, &agent.endpoint, "needs-approval", &mut printed);

    let table = stdout(&home.run(&["list"], &mut printed));
    let row = table
        .lines()
        .position(|l| l.starts_with(&agent.endpoint))
        .unwrap_or_else(|| panic!("no row for agent: {table}"));
    let asks = table.lines().nth(row + 1).unwrap_or_default();
    assert!(
        asks.contains("\"Run the test suite?\"") && asks.contains("act: approve, deny"),
        "the line under the row says what the agent asks and offers: {table}"
    );

    let bogus = home.run(&["act", "agent", "launch-rockets"], &mut printed);
    assert_eq!(bogus.status.code(), Some(1), "{bogus:?}");
    let message = stderr(&bogus);
    assert!(
        message.contains("does not offer \"launch-rockets\"")
            && message.contains("it offers: approve, deny"),
        "{message}"
    );
    let not_an_id = home.run(&["act", "agent", "Not An Id!"], &mut printed);
    assert!(
        stderr(&not_an_id).contains("it offers: approve, deny"),
        "{not_an_id:?}"
    );

    let approve = home.run(&["act", "agent", "approve"], &mut printed);
    assert!(approve.status.success(), "{approve:?}");
    assert!(stdout(&approve).contains("accepted Approve"), "{approve:?}");

    let attached = Attached::start(&home, &["attach", "other", "--no-open"], None);
    assert!(
        attached.url.contains("/__attach/"),
        "the URL first: {:?}",
        attached.url
    );
    assert!(
        attached.said.contains("works once, within 30 s"),
        "{}",
        attached.said
    );
    assert!(attached.open_link().contains(" 303 "), "the link redeems");
    let by_id = Attached::start(&home, &["attach", &other.endpoint, "--no-open"], None);
    assert!(by_id.url.contains("/__attach/"), "an id still works");

    let forget = home.run(&["forget", "other"], &mut printed);
    assert_eq!(forget.status.code(), Some(1), "{forget:?}");
    let message = stderr(&forget);
    assert!(
        message.contains("\"other\" cannot be forgotten: It is running"),
        "{message}"
    );

    printed.push_str(&attached.url);
    printed.push_str(&attached.said);
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}

// Proves: a name two runtimes share (one running, one stale) picks neither: `attach`, `act`,
// `forget` and `revive` each exit 1 listing both ids and change nothing; each id then works; a
// name whose text would forge a line in that list shows escaped.
#[test]
fn issue_31_an_ambiguous_name_picks_none_and_lists_the_candidates() {
    let home = Home::new();
    let token_file = home.canary_token_file();
    let running = home.start_demo("twin", &token_file);
    let stale = stale_receipt_named(&home, "twin", &["/bin/true"], json!({}));
    let hostile_name = "forged\nlre_00000000000000000000000000000000  running  \"x\"";
    let hostile = stale_receipt_named(&home, hostile_name, &["/bin/true"], json!({}));
    let _also = stale_receipt_named(&home, hostile_name, &["/bin/true"], json!({}));
    let mut printed = String::new();

    for args in [
        &["attach", "twin", "--no-open"][..],
        &["act", "twin", "approve", "--yes"],
        &["forget", "twin"],
        &["revive", "twin", "--yes"],
    ] {
        let output = home.run(args, &mut printed);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        assert!(stdout(&output).is_empty(), "{args:?} printed {output:?}");
        let message = stderr(&output);
        assert!(
            message.contains("\"twin\" names 2 runtimes, so none was picked"),
            "{args:?}: {message}"
        );
        for endpoint in [&running.endpoint, &stale.endpoint] {
            assert!(message.contains(endpoint.as_str()), "{args:?}: {message}");
        }
    }
    let list = home.list_json(&mut printed);
    assert_eq!(
        crate::cli::runtimes(&list).len(),
        4,
        "nothing was forgotten or revived: {list}"
    );

    // The hostile name's candidates: one line each, its line break shown as an escape.
    let output = home.run(&["forget", hostile_name], &mut printed);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(message.contains(&hostile.endpoint), "{message}");
    assert!(message.contains("forged\\u{a}lre_"), "{message}");
    assert_eq!(
        message.lines().count(),
        3,
        "a heading and one line per candidate: {message}"
    );

    let forget = home.run(&["forget", &stale.endpoint, "--yes"], &mut printed);
    assert!(forget.status.success(), "{forget:?}");
    assert!(stdout(&forget).contains("Forgot \"twin\""), "{forget:?}");
    // One runtime has the name now: it is the one.
    let attached = Attached::start(&home, &["attach", "twin", "--no-open"], None);
    assert!(attached.url.contains("/__attach/"), "{}", attached.said);
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}

// Proves: "no such runtime" is one wording, whichever command and whether a name or an id was
// given, and it names what was typed, not a runtime.
#[test]
fn issue_31_no_such_runtime_has_one_wording() {
    let home = Home::new();
    let mut printed = String::new();
    for args in [
        &["attach", "nobody", "--no-open"][..],
        &["act", "nobody", "approve"],
        &["forget", "nobody"],
        &["revive", "nobody", "--yes"],
        &["forget", "lre_00000000000000000000000000000000"],
        &["attach", "sdk:nobody:0123456789abcdef"],
    ] {
        let output = home.run(args, &mut printed);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {output:?}");
        let message = stderr(&output);
        let asked = args[1];
        assert_eq!(
            message.trim_end(),
            format!(
                "error: no runtime is named \"{asked}\" or has that id; `supercode-tray list` shows each runtime's NAME and ID"
            ),
            "{args:?}"
        );
    }
}

// Proves: `reject` of a registration that does not exist exits 1 and says so; an existing one
// is dismissed with exit 0.
#[test]
fn issue_31_reject_of_a_registration_that_does_not_exist_exits_1() {
    let home = Home::new();
    let mut printed = String::new();
    let missing = home.run(&["reject", "nobody"], &mut printed);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(
        stderr(&missing).contains("no pending registration for \"nobody\""),
        "{missing:?}"
    );

    let canon = canon_local::CanonHome::at(home.path("canon")).unwrap();
    canon_local::get_or_create_pending_registration(&canon, "real", None).unwrap();
    let listed = home.run(&["pending"], &mut printed);
    assert!(stdout(&listed).contains("real"), "{listed:?}");
    let dismissed = home.run(&["reject", "real"], &mut printed);
    assert!(dismissed.status.success(), "{dismissed:?}");
    let again = home.run(&["reject", "real"], &mut printed);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
}

// Proves: a `SUPERCODE_BROWSER` that cannot run is named in what `attach` says, and the link it
// printed is still served (it redeems) until interrupted.
#[test]
fn issue_31_a_failing_browser_is_named_and_the_link_stays_served() {
    let home = Home::new();
    let token_file = home.canary_token_file();
    let _demo = home.start_demo("seen", &token_file);
    let browser = home.path("no-such-browser");
    let mut attached = Attached::start(&home, &["attach", "seen"], browser.to_str());
    assert!(attached.url.contains("/__attach/"), "{}", attached.said);
    assert!(
        attached.said.contains(browser.to_str().unwrap()),
        "the browser is named: {}",
        attached.said
    );
    assert!(attached.said.contains("works once"), "{}", attached.said);
    assert!(
        attached.child.try_wait().unwrap().is_none(),
        "attach keeps serving"
    );
    assert!(attached.open_link().contains(" 303 "), "the link redeems");
    assert_clean(
        "attach's output",
        &format!("{}{}", attached.url, attached.said),
        &[TOKEN_CANARY],
    );
}

// Proves: `events --json` starts from the current state: its first line is a snapshot that
// already shows the agent's `needs-approval` (not `unknown`), that state, which began before it
// started, is not alerted, no snapshot repeats the one before it, and a state entered after it
// started is alerted.
#[test]
fn issue_31_events_starts_from_the_current_state() {
    let home = Home::new();
    let token_file = home.canary_token_file();
    let agent = home.start_demo_with("agent", &token_file, &["--scenario", "approval"]);
    let mut printed = String::new();
    wait_for_state(&home, &agent.endpoint, "needs-approval", &mut printed);

    // Killed on drop, also when an assertion below fails.
    let mut events = ChildGuard(
        home.command(&["events", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let out = events.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let state_in = |line: &str| -> Option<String> {
        let event: Value = serde_json::from_str(line).expect("every line is JSON");
        let runtimes = event["snapshot"]["runtimes"].as_array()?;
        let runtime = runtimes.iter().find(|r| r["endpoint"] == agent.endpoint)?;
        runtime["state"]["value"].as_str().map(str::to_owned)
    };
    let mut lines = vec![rx.recv_timeout(START_TIMEOUT).expect("a first line")];
    assert_eq!(
        state_in(&lines[0]).as_deref(),
        Some("needs-approval"),
        "the first line is a snapshot of the current state: {}",
        lines[0]
    );
    // Longer than the alert interval (3 s) and the settling wait (2 s): whatever it would print
    // about the state it started in.
    let quiet_until = Instant::now() + Duration::from_secs(4);
    while let Some(left) = quiet_until.checked_duration_since(Instant::now()) {
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(_) => break,
        }
    }
    assert!(
        lines.iter().all(|l| !l.contains("\"agent-alert\"")),
        "no alert for the state it started in: {lines:#?}"
    );

    let approve = home.run(&["act", "agent", "approve"], &mut printed);
    assert!(approve.status.success(), "{approve:?}");
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx.recv_timeout(left).expect("an alert for needs-input");
        lines.push(line.clone());
        if line.contains("\"agent-alert\"") && line.contains("needs-input") {
            break;
        }
    }
    drop(events);
    let snapshots: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("\"snapshot\""))
        .collect();
    for pair in snapshots.windows(2) {
        assert_ne!(pair[0], pair[1], "a snapshot repeated: {lines:#?}");
    }
    printed.push_str(&lines.join("\n"));
    assert_clean("the CLI's output", &printed, &[TOKEN_CANARY]);
}
