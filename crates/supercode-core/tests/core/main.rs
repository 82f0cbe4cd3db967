//! Integration tests of `supercode-core` against real files, real processes, a real secret store
//! and a contract-following fake Canon: one binary, one module per area.
//!
//! Tests that need the app binary (`supercode-tray demo-runtime`, for revive) find it through
//! `SUPERCODE_TRAY_BIN` or where cargo built it, beside this test binary (whatever
//! `CARGO_TARGET_DIR` says); they skip with a message when it is missing, and fail when
//! `SUPERCODE_REQUIRE_E2E=1`. Keychain variants skip without a usable Secret Service unless
//! `SUPERCODE_REQUIRE_KEYCHAIN=1`. Run everything locally with:
//!
//! ```text
//! cargo build --workspace --bins --tests --features canon-local/test-server   # the app binary too
//! scripts/test-env.sh cargo test --workspace --features canon-local/test-server --test core
//! ```

mod support;

mod agents;
mod approvals;
mod attach;
mod canary;
mod connect;
mod doctor;
mod exited;
mod forget;
mod incremental;
mod inventory;
mod resolve;
mod revive;
mod shutdown;
mod watcher;
