//! The bearer check in front of every route.
//!
//! The expected token is kept only as a SHA-256 digest, and presented tokens are hashed before a
//! constant-time comparison, so neither the token's value nor its length leaks through timing.
//! Refusals are a bare 401 with `WWW-Authenticate: Bearer` that never echoes the request.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The digest of the one token a runtime accepts.
pub struct ExpectedToken {
    digest: [u8; 32],
}

impl ExpectedToken {
    /// The digest of `token`, the one token accepted.
    pub fn new(token: &str) -> Self {
        Self {
            digest: Sha256::digest(token.as_bytes()).into(),
        }
    }

    /// True when `authorization` is exactly `Bearer <the token>`.
    fn accepts(&self, authorization: &[u8]) -> bool {
        let Some(presented) = authorization.strip_prefix(b"Bearer ") else {
            return false;
        };
        let presented: [u8; 32] = Sha256::digest(presented).into();
        presented
            .iter()
            .zip(self.digest.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// Middleware: passes the request on only when it carries exactly one matching `Authorization`.
pub async fn require_bearer(
    State(expected): State<Arc<ExpectedToken>>,
    request: Request,
    next: Next,
) -> Response {
    let mut values = request.headers().get_all(header::AUTHORIZATION).iter();
    let authorized = match (values.next(), values.next()) {
        // A second Authorization header is ambiguous; refuse rather than guess which one counts.
        (Some(value), None) => expected.accepts(value.as_bytes()),
        _ => false,
    };
    if authorized {
        next.run(request).await
    } else {
        unauthorized()
    }
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [
            (header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-store")),
        ],
        "bearer token required\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::ExpectedToken;

    #[test]
    fn accepts_only_the_exact_bearer_value() {
        let expected = ExpectedToken::new("s3cret");
        assert!(expected.accepts(b"Bearer s3cret"));
        assert!(!expected.accepts(b"Bearer s3cret "));
        assert!(!expected.accepts(b"bearer s3cret"));
        assert!(!expected.accepts(b"Basic s3cret"));
        assert!(!expected.accepts(b"Bearer "));
        assert!(!expected.accepts(b""));
    }
}
