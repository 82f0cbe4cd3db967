//! The programs that measure Supercode Tray, kept apart from the product crates so that those
//! carry no measuring code or dev-dependencies. Their figures, targets and exact commands are in
//! `docs/BENCHMARKS.md`; what they share (percentiles, `/proc` readers, the inventory's floor)
//! is in `bench-support`. This library holds nothing: the programs are this crate's benches and
//! examples.
//!
//! # Layout
//!
//! Benches (`cargo bench -p benchmarks --bench NAME`, all `harness = false`):
//!
//! - `attach_bench`: the attach proxy beside direct, nginx and a byte relay in front of the same
//!   demo runtime; timed (requests/s, latency, CPU per request, 10 MB bodies, WebSocket echo),
//!   or counted (`-- --instructions`, `-- --syscalls`). One binary, a module per role.
//! - `owner_check`: what asking the kernel who owns a connection's peer costs per connection.
//! - `session_digest`: the session digest's cost on the real CPU (valgrind counts it in software).
//! - `inventory`: `list_live_runtimes` at 10 to 10,000 receipts beside the floor; also writes the
//!   receipt mixes the other inventory measurements read (`-- --populate DIR SIZE`) and runs one
//!   pass of a kind for counting (`-- --once none|floor|list DIR`).
//!
//! Examples (`cargo run --release -p benchmarks --example NAME`):
//!
//! - `rescan`: the app's full rescan of a populated directory beside the floor, and its memory.
//! - `watch_latency`: a receipt change or a process exit → the watcher's snapshot.
//! - `attach_latency`: attach end to end, to the first byte in a real headless Chromium.
//! - `app_figures`: the real app from outside: start-up, idle CPU, memory.
//! - `flood_latency`: another runtime's state change while one runtime floods its stream.
#![deny(missing_docs)]
