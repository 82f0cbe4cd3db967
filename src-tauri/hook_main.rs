//! `supercode-tray-hook claude-code|codex`: the command an agent runs for each hook event
//! (`agent_hooks::hook`). A program of its own because the agent waits for it on every tool
//! call: it links neither the CLI's nor the app's libraries and starts in about a millisecond.

fn main() -> std::process::ExitCode {
    agent_hooks::hook::main()
}
