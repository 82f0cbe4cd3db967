//! `canon-test-server`: a fake Canon registration API on `127.0.0.1:<ephemeral>` for tests and
//! demos. The first stdout line is `listening http://127.0.0.1:PORT`; it runs until Ctrl-C.

use std::io::Write;
use std::time::Duration;

use canon_local::test_server::{TestServer, TestServerConfig};
use clap::Parser;

/// Fake Canon registration API (see `canon_local::test_server`).
#[derive(Debug, Parser)]
#[command(name = "canon-test-server")]
struct Args {
    /// `pending` answers before the next phase.
    #[arg(long, default_value_t = 0)]
    pending_polls: u32,
    /// `approving` answers after the pending ones.
    #[arg(long, default_value_t = 0)]
    approving_polls: u32,
    /// Reject instead of approving.
    #[arg(long)]
    reject: bool,
    /// The first N status polls answer 503.
    #[arg(long, default_value_t = 0)]
    status_errors: u32,
    /// The first N registrations answer 503.
    #[arg(long, default_value_t = 0)]
    register_errors: u32,
    /// Delay every status answer by this many milliseconds.
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
    /// The API key to issue (read from this environment variable, so it is not on the command
    /// line).
    #[arg(long, default_value = "CANON_TEST_API_KEY")]
    api_key_env: String,
    /// The agent id to issue.
    #[arg(long, default_value = "agent-test-1")]
    agent_id: String,
    /// Answer `approved` without an API key.
    #[arg(long)]
    withhold_key: bool,
    /// Send `pollIntervalMs` with every status answer.
    #[arg(long)]
    poll_interval_ms: Option<u64>,
    /// Send `Retry-After` (seconds) with every status answer.
    #[arg(long)]
    retry_after_secs: Option<u64>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let defaults = TestServerConfig::default();
    let config = TestServerConfig {
        pending_polls: args.pending_polls,
        approving_polls: args.approving_polls,
        reject: args.reject,
        status_errors: args.status_errors,
        register_errors: args.register_errors,
        delay: Duration::from_millis(args.delay_ms),
        api_key: std::env::var(&args.api_key_env).unwrap_or(defaults.api_key),
        agent_id: args.agent_id,
        withhold_key: args.withhold_key,
        poll_interval_ms: args.poll_interval_ms,
        retry_after_secs: args.retry_after_secs,
        request_id: None,
    };
    let server = TestServer::start(config).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening {}", server.base_url())?;
    stdout.flush()?;
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
