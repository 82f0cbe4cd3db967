//! Integration tests for the demo runtime, one module per area: a real server on loopback, a
//! real HTTP client.

mod support;

mod routes;

mod status_api;
