//! Integration tests for `live_runtime`, one module per area. Everything is real: files in temp
//! directories, spawned processes, and the OS keychain (Secret Service) when one is reachable.
//!
//! Keychain tests skip with a message when no Secret Service answers, and fail instead when
//! `SUPERCODE_REQUIRE_KEYCHAIN=1` (CI). Run them locally with a private session:
//! `dbus-run-session -- sh -c 'echo -n testpass | gnome-keyring-daemon --unlock --components=secrets >/dev/null; cargo test -p live-runtime'`

mod canary;
mod common;
mod concurrency;
mod file_store;
mod foreign;
mod hostile;
mod incremental;
mod keychain;
mod killed_writer;
mod processes;
mod read_only_dir;
mod registration_storm;
mod round_trip;
mod round_trip_properties;
