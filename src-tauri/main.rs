//! `supercode-tray`: the display-free subcommands, or, with none, the tray app (exec'd).
//!
//! Only `supercode-cli` is used here, never this package's library, so this binary links no
//! GTK or WebKitGTK and starts at once (docs/ARCHITECTURE.md, "The binaries").

fn main() -> std::process::ExitCode {
    supercode_cli::run(supercode_cli::launch::exec_app)
}
