//! Secret values in a type that cannot leak them: [`Sensitive`] redacts `Debug`, has no `Display`
//! and no `Serialize`, so a token reaching the webview, a log or stdout is a compile error.

use std::fmt;

/// A secret value: redacted in `Debug`, no `Display`, no `Serialize`.
///
/// Get at the value only where it is really used (an `Authorization` header, the keychain) with
/// [`Sensitive::expose`] or [`Sensitive::into_inner`].
#[derive(Clone, PartialEq, Eq)]
pub struct Sensitive<T>(T);

impl<T> Sensitive<T> {
    /// Wraps a secret value.
    pub fn new(v: T) -> Self {
        Sensitive(v)
    }

    /// Borrows the secret value. Never log or serialize what this returns.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// Unwraps the secret value. Never log or serialize what this returns.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for Sensitive<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sensitive(<redacted>)")
    }
}

/// The HTTP bearer token a runtime requires on every request.
pub type BearerToken = Sensitive<String>;
