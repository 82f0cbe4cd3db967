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

/// Starts logging to `log_dir/supercode-tray.log.<date>` and to stderr. Keep the guard alive for
/// the life of the process: dropping it flushes and stops the file writer.
pub fn init(log_dir: &Path, to_stderr: bool) -> Option<WorkerGuard> {
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
            let (writer, guard) = tracing_appender::non_blocking(appender);
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
