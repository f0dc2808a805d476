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
//! [`NamedTokens`]: several static tokens, each standing for a named caller (`ci`, `dev` …);
//! the one presented is found by comparing it with every configured token, each in constant
//! time, without stopping at a match, and the request then carries a
//! [`Principal`] with that [`token_name`](Principal::token_name) (never the token).
//!
//! Not here: OAuth (JWT and introspection verifiers, scopes, resource metadata: see
//! [`crate::auth`]; [`crate::auth::StaticTokenVerifier`] puts this token behind the same
//! trait), per-session tokens.

use std::sync::Arc;

use crate::transport::principal::Principal;

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

/// Several static bearer tokens, each with a name: a request presenting one of them is
/// accepted as [`Principal::named_token`] of its name. `Debug` shows the names only.
#[derive(Clone, Default)]
pub struct NamedTokens(Vec<(BearerToken, Arc<Principal>)>);

impl std::fmt::Debug for NamedTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Why a named token cannot be added to [`NamedTokens`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BadNamedToken {
    /// The token itself is not a valid one.
    Token(BadToken),
    /// Another name has the same token: the caller could not be told.
    SameToken {
        /// The name given first.
        first: String,
    },
    /// The name is given twice.
    SameName,
}

impl std::fmt::Display for BadNamedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadNamedToken::Token(e) => e.fmt(f),
            BadNamedToken::SameToken { first } => write!(f, "the token is the same as the one named {first}"),
            BadNamedToken::SameName => f.write_str("the name is given twice"),
        }
    }
}

impl std::error::Error for BadNamedToken {}

impl NamedTokens {
    /// No token.
    pub fn new() -> NamedTokens {
        NamedTokens::default()
    }

    /// These tokens and `token`, standing for the caller `name`.
    ///
    /// # Errors
    /// [`BadNamedToken`]: a token a header cannot carry, one another name has, or a name given
    /// twice.
    pub fn with(mut self, name: impl Into<String>, token: impl Into<String>) -> Result<NamedTokens, BadNamedToken> {
        let name = name.into();
        let token = BearerToken::new(token).map_err(BadNamedToken::Token)?;
        for (held, principal) in &self.0 {
            let held_name = principal.token_name.as_deref().unwrap_or_default();
            if held_name == name {
                return Err(BadNamedToken::SameName);
            }
            if held.matches(token.0.as_bytes()) {
                return Err(BadNamedToken::SameToken { first: held_name.to_owned() });
            }
        }
        self.0.push((token, Arc::new(Principal::named_token(name))));
        Ok(self)
    }

    /// Whether there is no token.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, in the order given.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(_, p)| p.token_name.as_deref().unwrap_or_default())
    }

    /// The principal of the token `presented` is, comparing it with every token (each in
    /// constant time, none skipped after a match).
    fn find(&self, presented: &[u8]) -> Option<Arc<Principal>> {
        let mut found = usize::MAX;
        for (i, (token, _)) in self.0.iter().enumerate() {
            let hit = std::hint::black_box(usize::from(token.matches(presented)));
            // found = i where hit, without a branch on it.
            found = (found & hit.wrapping_sub(1)) | (i & hit.wrapping_neg());
        }
        self.0.get(found).map(|(_, principal)| principal.clone())
    }
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

/// Checks the `Authorization` header values of one request (all of them) against `token` (when set) and
/// every named token; the principal of the named token presented, if it is one.
pub(crate) fn check_any<'a>(
    token: Option<&BearerToken>,
    named: &NamedTokens,
    values: impl Iterator<Item = &'a [u8]>,
) -> (BearerCheck, Option<Arc<Principal>>) {
    let mut found = None;
    let verdict = check_with(values, |presented| {
        let plain = token.is_some_and(|t| t.matches(presented));
        found = named.find(presented);
        plain || found.is_some()
    });
    (verdict, found)
}

/// The shape checks of [`check`], with `accept` deciding on the presented token.
fn check_with<'a>(mut values: impl Iterator<Item = &'a [u8]>, accept: impl FnOnce(&[u8]) -> bool) -> BearerCheck {
    let Some(first) = values.next() else { return BearerCheck::Missing };
    if values.next().is_some() {
        return BearerCheck::Invalid;
    }
    // The scheme is case-insensitive (RFC 9110 §11.1); one or more spaces follow it.
    let Some(scheme) = first.get(..7) else { return BearerCheck::Missing };
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return BearerCheck::Missing;
    }
    if accept(first[7..].trim_ascii()) {
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
        let none = NamedTokens::new();
        let judge = |values: &[&str]| check_any(Some(&t), &none, values.iter().map(|v| v.as_bytes())).0;
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

    #[test]
    fn a_named_token_is_found_among_several_and_names_its_caller() {
        let named = NamedTokens::new().with("ci", "ci-token-1").unwrap().with("dev", "dev-token-2").unwrap();
        let judge = |value: &str| {
            let (verdict, principal) = check_any(None, &named, std::iter::once(value.as_bytes()));
            (verdict, principal.and_then(|p| p.token_name.clone()))
        };
        assert_eq!(judge("Bearer ci-token-1"), (BearerCheck::Accepted, Some("ci".to_owned())));
        assert_eq!(judge("Bearer dev-token-2"), (BearerCheck::Accepted, Some("dev".to_owned())));
        assert_eq!(judge("Bearer dev-token-"), (BearerCheck::Invalid, None));
        assert_eq!(judge("Basic ci-token-1"), (BearerCheck::Missing, None));
        // With the single token too: either is accepted, only a named one names a caller.
        let single = BearerToken::new("plain").unwrap();
        let (verdict, principal) = check_any(Some(&single), &named, std::iter::once(&b"Bearer plain"[..]));
        assert_eq!((verdict, principal), (BearerCheck::Accepted, None));
        assert_eq!(format!("{named:?}"), r#"["ci", "dev"]"#);
        assert!(matches!(named.clone().with("ci", "other"), Err(BadNamedToken::SameName)));
        assert_eq!(
            named.clone().with("ops", "dev-token-2").unwrap_err(),
            BadNamedToken::SameToken { first: "dev".to_owned() }
        );
        assert_eq!(named.with("ops", "a b").unwrap_err(), BadNamedToken::Token(BadToken::BadCharacter));
    }
}
