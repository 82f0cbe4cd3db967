//! Logging: a daily-rolling file in the platform's log directory, plus stderr, filtered by `RUST_LOG`.
//!
//! Nothing secret is ever logged: secrets live in `Sensitive` values whose `Debug` is redacted and
//! which have no `Display`, so they cannot be formatted into a log line by accident.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{fmt, layer::SubscriberExt, util::SubscriberInitExt, EnvFilter};

/// The log level when `RUST_LOG` is unset: enough to follow what the app did.
const DEFAULT_FILTER: &str = "info";

/// How many daily log files are kept before the oldest is deleted.
const KEPT_LOG_FILES: usize = 7;

/// How many lines the tray app's log buffers for its writer thread (tracing-appender's default):
/// the app runs for days, and a burst (a rescan of thousands of receipts) must not lose lines.
pub const APP_BUFFERED_LINES: usize = tracing_appender::non_blocking::DEFAULT_BUFFERED_LINES_LIMIT;

/// How many lines a subcommand's log buffers. The buffer is allocated and initialised up front
/// (32 bytes a line: the default 128,000 lines are 4 MB, most of a subcommand's memory), and a
/// subcommand logs a handful of lines.
pub const CLI_BUFFERED_LINES: usize = 1024;

/// Starts logging to `log_dir/supercode-tray.log.<date>` and to stderr, with room for
/// `buffered_lines` lines between the logging threads and the file writer
/// ([`APP_BUFFERED_LINES`], [`CLI_BUFFERED_LINES`]). Keep the guard alive for the life of the
/// process: dropping it flushes and stops the file writer.
pub fn init(log_dir: &Path, to_stderr: bool, buffered_lines: usize) -> Option<WorkerGuard> {
    let filter =
        || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let appender = std::fs::create_dir_all(log_dir).ok().and_then(|()| {
        tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix("supercode-tray")
            .filename_suffix("log")
            .max_log_files(KEPT_LOG_FILES)
            .build(log_dir)
            .ok()
    });
    let (file_layer, guard) = match appender {
        Some(appender) => {
            let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
                .buffered_lines_limit(buffered_lines)
                .finish(appender);
            (
                Some(
                    fmt::layer()
                        .with_ansi(false)
                        .with_writer(writer)
                        .with_filter(filter()),
                ),
                Some(guard),
            )
        }
        None => (None, None),
    };
    let stderr_layer = to_stderr.then(|| {
        fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(filter())
    });
    let _ = tracing_subscriber::registry()
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    guard
}

use tracing_subscriber::Layer as _;
