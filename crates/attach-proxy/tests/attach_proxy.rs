//! Integration tests for the attach proxy, one binary with a module per area.
//!
//! The upstream is always a real demo runtime on loopback; clients are real HTTP, WebSocket and
//! raw-socket clients, and `browser` drives a real headless Chromium.

#[path = "attach_proxy/support.rs"]
mod support;

#[path = "attach_proxy/browser.rs"]
mod browser;
#[path = "attach_proxy/flow.rs"]
mod flow;
#[path = "attach_proxy/forwarding.rs"]
mod forwarding;
#[path = "attach_proxy/lifecycle.rs"]
mod lifecycle;
#[path = "attach_proxy/other_user.rs"]
mod other_user;
#[path = "attach_proxy/refusals.rs"]
mod refusals;
