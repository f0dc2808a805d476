//! A static bearer token that the HTTP server requires
//! ([RFC 6750](https://www.rfc-editor.org/rfc/rfc6750)): the secret's type, the check of an
//! `Authorization` header against it, and the 401 answers.
//!
//! The comparison is constant time in the bytes of both tokens: no early exit at the first
//! difference, no branch on a byte, every byte of the configured token read whatever was
//! presented (a hand-written compare: `ring` is not a dependency of the `http` feature, and
//! `ring::constant_time` is deprecated). What it may reveal through timing is the configured
//! token's length, never its content. The token never shows in
//! `Debug` output and nothing here logs.
//!
//! Not here: OAuth (JWT and introspection verifiers, scopes, resource metadata: see
//! [`crate::auth`]; [`crate::auth::StaticTokenVerifier`] puts this token behind the same
//! trait), per-session or per-user tokens.

use std::sync::Arc;

/// The secret a client must present as `Authorization: Bearer <token>`. `Debug` shows
/// `BearerToken(<redacted>)`.
#[derive(Clone)]
pub struct BearerToken(Arc<str>);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

/// Why a string cannot be a bearer token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BadToken {
    /// The token is empty.
    Empty,
    /// The token holds a character outside RFC 6750's `b64token` alphabet (letters, digits,
    /// `-._~+/`, trailing `=`), e.g. a space or a line end.
    BadCharacter,
}

impl std::fmt::Display for BadToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadToken::Empty => f.write_str("the bearer token is empty"),
            BadToken::BadCharacter => {
                f.write_str("the bearer token holds a character outside letters, digits and -._~+/=")
            }
        }
    }
}

impl std::error::Error for BadToken {}

impl BearerToken {
    /// A token, checked against RFC 6750's `b64token` syntax so that every client can send it
    /// in a header.
    ///
    /// # Errors
    /// [`BadToken`] for an empty token or one with a character outside the syntax.
    pub fn new(token: impl Into<String>) -> Result<BearerToken, BadToken> {
        let token = token.into();
        let body = token.trim_end_matches('=');
        if body.is_empty() {
            return Err(BadToken::Empty);
        }
        if !body.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b)) {
            return Err(BadToken::BadCharacter);
        }
        Ok(BearerToken(token.into()))
    }

    /// Whether `presented` is this token, in time that depends on this token's length only.
    pub fn matches(&self, presented: &[u8]) -> bool {
        constant_time_eq(self.0.as_bytes(), presented)
    }
}

/// `expected == presented`, reading every byte of `expected` whatever `presented` holds: no
/// early exit, no branch on the data, the length difference folded into the same accumulator.
fn constant_time_eq(expected: &[u8], presented: &[u8]) -> bool {
    let mut difference = u8::from(expected.len() != presented.len());
    for (i, &e) in expected.iter().enumerate() {
        // A shorter presented token is compared against zeros (and already differs by length).
        let p = presented.get(i).copied().unwrap_or(0);
        difference |= std::hint::black_box(e ^ p);
    }
    std::hint::black_box(difference) == 0
}

/// What an `Authorization` header says, as far as the bearer check cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BearerCheck {
    /// The right token.
    Accepted,
    /// No `Authorization: Bearer …` at all (absent, or another scheme): 401 without an error
    /// code (RFC 6750 §3.1: a request without credentials gets none).
    Missing,
    /// A bearer token that is not ours, or several `Authorization` headers: 401
    /// `error="invalid_token"`.
    Invalid,
}

/// Checks the `Authorization` header values of one request (all of them) against `token`.
pub(crate) fn check<'a>(token: &BearerToken, mut values: impl Iterator<Item = &'a [u8]>) -> BearerCheck {
    let Some(first) = values.next() else { return BearerCheck::Missing };
    if values.next().is_some() {
        return BearerCheck::Invalid;
    }
    // The scheme is case-insensitive (RFC 9110 §11.1); one or more spaces follow it.
    let Some(scheme) = first.get(..7) else { return BearerCheck::Missing };
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return BearerCheck::Missing;
    }
    let presented = first[7..].trim_ascii();
    if token.matches(presented) {
        BearerCheck::Accepted
    } else {
        BearerCheck::Invalid
    }
}

/// The `WWW-Authenticate` value and body of the 401 for a refused verdict.
pub(crate) fn challenge(verdict: BearerCheck) -> (&'static str, &'static str) {
    match verdict {
        BearerCheck::Invalid => (
            r#"Bearer error="invalid_token""#,
            r#"{"error":"invalid_token","error_description":"Invalid bearer token"}"#,
        ),
        _ => ("Bearer", r#"{"error":"invalid_request","error_description":"Missing bearer token"}"#),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token() -> BearerToken {
        BearerToken::new("s3cr3t-T0ken").unwrap()
    }

    #[test]
    fn tokens_are_checked_for_header_safe_syntax() {
        assert_eq!(BearerToken::new("").unwrap_err(), BadToken::Empty);
        assert_eq!(BearerToken::new("==").unwrap_err(), BadToken::Empty);
        assert_eq!(BearerToken::new("a b").unwrap_err(), BadToken::BadCharacter);
        assert_eq!(BearerToken::new("a\r\nX-Evil: 1").unwrap_err(), BadToken::BadCharacter);
        assert_eq!(BearerToken::new("a=b").unwrap_err(), BadToken::BadCharacter, "= only at the end");
        assert!(BearerToken::new("abc.DEF-_~+/09==").is_ok());
    }

    #[test]
    fn debug_never_shows_the_token() {
        assert_eq!(format!("{:?}", token()), "BearerToken(<redacted>)");
        assert!(!format!("{:?}", Some(token())).contains("s3cr3t"));
    }

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
        assert!(!constant_time_eq(b"abc", b"abc\0"));
        assert!(!constant_time_eq(b"abc", b""));
        assert!(!constant_time_eq(b"ab\0", b"ab"), "a shorter token is not its zero-padded self");
    }

    #[test]
    fn authorization_headers_are_judged() {
        let t = token();
        let judge = |values: &[&str]| check(&t, values.iter().map(|v| v.as_bytes()));
        assert_eq!(judge(&[]), BearerCheck::Missing);
        assert_eq!(judge(&["Basic dXNlcjpwYXNz"]), BearerCheck::Missing);
        assert_eq!(judge(&["Bearer"]), BearerCheck::Missing);
        assert_eq!(judge(&["Bearer s3cr3t-T0ken"]), BearerCheck::Accepted);
        assert_eq!(judge(&["bearer   s3cr3t-T0ken "]), BearerCheck::Accepted, "scheme case and spacing");
        assert_eq!(judge(&["Bearer s3cr3t-T0kem"]), BearerCheck::Invalid);
        assert_eq!(judge(&["Bearer s3cr3t-T0ken2"]), BearerCheck::Invalid);
        assert_eq!(judge(&["Bearer "]), BearerCheck::Invalid);
        assert_eq!(judge(&["Bearer s3cr3t-T0ken", "Bearer s3cr3t-T0ken"]), BearerCheck::Invalid);
        assert_eq!(challenge(BearerCheck::Missing).0, "Bearer");
        assert_eq!(challenge(BearerCheck::Invalid).0, r#"Bearer error="invalid_token""#);
    }
}
