//! A real terminal for the real agents' walks (`claude_code`, `codex`): a private tmux server
//! with one window the agent runs in, driven as a user types, and read as a user sees it.

use std::io::BufRead;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether tmux can be run here.
pub fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A tmux server of the test's own (`-L`), killed on drop, and the window the agent runs in.
pub struct Terminal {
    server: String,
    window: &'static str,
    /// How long a step waits for what it expects on the screen.
    step_timeout: Duration,
    /// The pause between typing a line and pressing Enter (an agent's prompt drops an Enter
    /// that arrives with the text).
    typing_pause: Duration,
}

impl Terminal {
    pub fn new(
        server: String,
        window: &'static str,
        step_timeout: Duration,
        typing_pause: Duration,
    ) -> Self {
        Self {
            server,
            window,
            step_timeout,
            typing_pause,
        }
    }

    /// Runs one tmux command on this server.
    pub fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .args(["-L", &self.server, "-f", "/dev/null"])
            .args(args)
            .output()
            .unwrap()
    }

    /// Starts `program` in the window, 160 columns by 50 lines.
    pub fn start(&self, program: &str) {
        let started = self.tmux(&[
            "new-session",
            "-d",
            "-s",
            self.window,
            "-x",
            "160",
            "-y",
            "50",
            program,
        ]);
        assert!(started.status.success(), "{started:?}");
    }

    /// What the window shows now.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.tmux(&["capture-pane", "-p", "-t", self.window]).stdout)
            .into_owned()
    }

    /// Waits until the window shows `text`; fails with the screen otherwise.
    pub fn wait_screen(&self, what: &str, text: &str) {
        let deadline = Instant::now() + self.step_timeout;
        while !self.screen().contains(text) {
            assert!(
                Instant::now() < deadline,
                "{what}: {text:?} never showed:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Presses `keys` (tmux key names) one by one, as a user would.
    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.tmux(&["send-keys", "-t", self.window, key]);
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Types `text`, then Enter.
    pub fn type_line(&self, text: &str) {
        self.tmux(&["send-keys", "-t", self.window, "-l", text]);
        std::thread::sleep(self.typing_pause);
        self.tmux(&["send-keys", "-t", self.window, "Enter"]);
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The pids of processes whose command line contains `text`.
pub fn processes_running(text: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
                && std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                    String::from_utf8_lossy(&c)
                        .replace('\0', " ")
                        .contains(text)
                })
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Starts `command`, an `attach ID --no-open`, and reads the one-time link it prints first:
/// the process (which serves the link until it is killed), the link and the proxy's origin.
pub fn attach_link(mut command: Command) -> (Child, String, String) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let url = url.trim().to_owned();
    assert!(url.contains("/__attach/"), "first line is the URL: {url:?}");
    let origin = url[..url.find("/__attach/").unwrap()].to_owned();
    (child, url, origin)
}
