//! Integration tests for `canon-local`, one module per area. Cross-checks run the reference
//! implementation (`tests/reference/*.js`, reconstructed verbatim from `@canonmsg/core` 0.13)
//! under Node: they are skipped when `node` is missing, unless `SUPERCODE_REQUIRE_NODE=1`.

mod support;

mod approval;

mod catalog;

mod hostile;

mod json_format;

mod locks;

mod pending;

mod profiles;

mod server_binary;

mod tls_only;
