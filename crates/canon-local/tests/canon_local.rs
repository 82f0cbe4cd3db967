//! Integration tests for `canon-local`, one module per area. Cross-checks run the reference
//! implementation (`tests/reference/*.js`, reconstructed verbatim from `@canonmsg/core` 0.13)
//! under Node: they are skipped when `node` is missing, unless `SUPERCODE_REQUIRE_NODE=1`.

#[path = "canon_local/support.rs"]
mod support;

#[path = "canon_local/approval.rs"]
mod approval;
#[path = "canon_local/catalog.rs"]
mod catalog;
#[path = "canon_local/hostile.rs"]
mod hostile;
#[path = "canon_local/json_format.rs"]
mod json_format;
#[path = "canon_local/locks.rs"]
mod locks;
#[path = "canon_local/pending.rs"]
mod pending;
#[path = "canon_local/profiles.rs"]
mod profiles;
#[path = "canon_local/server_binary.rs"]
mod server_binary;
#[path = "canon_local/tls_only.rs"]
mod tls_only;
