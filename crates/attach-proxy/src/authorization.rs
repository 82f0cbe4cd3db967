//! The `Authorization` header: the one form in which a runtime's bearer token leaves this
//! process, and only ever towards that runtime.

use hyper::header::HeaderValue;
use live_runtime::BearerToken;

use crate::error::AttachError;

/// `Bearer <token>`, marked sensitive so hyper never logs or indexes it; a token that cannot
/// be a header value is [`AttachError::InvalidToken`].
pub(crate) fn bearer_header(token: &BearerToken) -> Result<HeaderValue, AttachError> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose()))
        .map_err(|_| AttachError::InvalidToken)?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use live_runtime::Sensitive;

    use super::*;

    #[test]
    fn tokens_that_cannot_be_headers_are_refused() {
        let bad = Sensitive::new("line\nbreak".to_owned());
        assert!(matches!(
            bearer_header(&bad),
            Err(AttachError::InvalidToken)
        ));
        let good = bearer_header(&Sensitive::new("abc".to_owned())).unwrap();
        assert!(good.is_sensitive());
    }
}
