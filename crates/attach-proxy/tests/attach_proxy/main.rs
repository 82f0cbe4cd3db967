//! Integration tests for the attach proxy, one binary with a module per area.
//!
//! The upstream is always a real demo runtime on loopback; clients are real HTTP, WebSocket and
//! raw-socket clients, and `browser` drives a real headless Chromium. `framing` and
//! `runtime_side` put a scripted runtime (`scripted`) on a raw socket behind the proxy instead,
//! to control every byte it answers with.

mod support;

mod browser;

mod flow;

mod forwarding;

mod framing;

mod lifecycle;

mod other_user;

mod refusals;

mod runtime_side;

mod scripted;
