//! Integration tests of the app package, one binary with a module per area: the `cli_*` modules
//! (`list`, `approve`, `attach`, `forget` and `dismiss`, `revive`, `act` and `events`) run the
//! real `supercode-tray` binary as a user would, on the harness in `cli`; `crowded` runs our
//! servers (`demo-runtime`, a session's `hook-host`) out of file descriptors; `doctor` runs its
//! doctor on private session buses, `launch` checks what splitting it from the app's binary must
//! keep (no display library loaded, the same output, the exec into the app), and `app_commands`
//! drives every IPC command on Tauri's mock runtime. The `cli_*` modules and `app_commands`
//! check everything they see for the canary secrets.
//!
//! `app_commands` sets process-global variables (`SUPERCODE_BROWSER`, `CANON_BASE_URL`); the
//! `cli_*` tests give every child they start its own environment, so sharing the binary is safe.

mod app_commands;
mod by_name;
mod claude_code;
mod cli;
mod cli_act;
mod cli_approve;
mod cli_attach;
mod cli_forget;
mod cli_list;
mod cli_revive;
mod codex;
mod crowded;
mod doctor;
mod launch;
mod terminal;

/// Set by `scripts/test-env.sh`: the real-agent tests (`claude_code`, `codex`) fail instead of
/// skipping when the pinned CLIs or tmux are missing, so the suite cannot pass without them.
const REQUIRE_AGENTS: &str = "SUPERCODE_REQUIRE_AGENTS";
