//! Live agent state (issue 15): what each running runtime's agent is doing, read from the
//! runtime's own status API (`docs/runtime-api.md`).
//!
//! - [`document`]: parsing, validating and sanitizing one status document.
pub mod document;
