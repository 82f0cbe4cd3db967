//! Live agent state (issue 15): what each running runtime's agent is doing, read from the
//! runtime's own status API (`docs/runtime-api.md`).
//!
//! - [`document`]: parsing, validating and sanitizing one status document.
//! - [`client`]: the HTTP client of the API (status, stream, actions) over a checked connection.
pub mod client;
pub mod document;
