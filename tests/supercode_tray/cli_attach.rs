//! `attach` as a user runs it: the one-time URL, the proxy closing with its runtime, and a
//! second OS user who reads the link off a command line getting nothing with it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use live_runtime::test_support::wait_until;

use crate::cli::{assert_clean, proxy_address, Home, START_TIMEOUT, TOKEN_CANARY};

fn accepts(address: std::net::SocketAddr) -> bool {
    std::net::TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_ok()
}

// Proves (issue 5): `attach ID --no-open` prints the one-time URL first and serves; when its
// runtime dies (SIGKILL), the proxy closes and the command ends with exit 1 and a message
// instead of serving 502 pages until someone presses Ctrl-C.
#[test]
fn attach_serves_until_its_runtime_dies_then_exits_1_and_closes_the_proxy() {
    let home = Home::new();
    let token_file = home.canary_token_file();
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
    let token_file = home.canary_token_file();
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
    let snooper = other.spawn("cli_attach::as_the_other_user", &snoop);
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
