//! JWT access tokens ([RFC 9068](https://www.rfc-editor.org/rfc/rfc9068)): the compact JWS is
//! split, its signature verified with `ring` against a JSON Web Key
//! ([RFC 7517](https://www.rfc-editor.org/rfc/rfc7517)), and its claims checked (`iss`, `aud`,
//! `exp`, `nbf`, with a leeway). Pure functions: the key set comes in, the time comes in.
//!
//! The header's `typ`, when present, must be `at+jwt` (RFC 9068), `application/at+jwt` or
//! plain `JWT` (what most authorization servers still send): any other type names another kind
//! of JWT, which is refused even when signed by the right key.
//!
//! Algorithms accepted: RS256/384/512 (RSA PKCS#1 v1.5, 2048 bits at least), PS256/384/512
//! (RSA-PSS), ES256 and ES384 (ECDSA on P-256/P-384), EdDSA (Ed25519). Never `none`, never
//! HMAC (a resource server holds no shared secret), and the key's own `kty`/`alg` must fit the
//! token's `alg` (no algorithm confusion).
//!
//! Why ring directly and not `jsonwebtoken`: ring is already the crate's crypto provider
//! (rustls); the current `jsonwebtoken` (12.x) no longer builds on ring (it wants aws-lc-rs or
//! the RustCrypto crates, a second crypto stack) and needs Rust 1.88 where we promise 1.82; the
//! older ring-based 9.x line is superseded. The JWS part is small: split, decode, one
//! `verify` call, and the allow-list above is then ours to state.
//!
//! Not here: fetching keys (see [`super::jwks`]), encrypted tokens (JWE), nested JWTs.

use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{self, UnparsedPublicKey};
use serde_json::{Map, Value};

use super::principal::{Principal, Refusal};
pub use super::resource::canonical_resource;

/// A JWS signature algorithm we verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// RSASSA-PSS with SHA-256.
    Ps256,
    /// RSASSA-PSS with SHA-384.
    Ps384,
    /// RSASSA-PSS with SHA-512.
    Ps512,
    /// ECDSA P-256 with SHA-256.
    Es256,
    /// ECDSA P-384 with SHA-384.
    Es384,
    /// Ed25519.
    EdDsa,
}

impl Algorithm {
    /// The algorithm named `alg` in a JWS header, if we accept it.
    pub fn from_name(alg: &str) -> Option<Algorithm> {
        Some(match alg {
            "RS256" => Algorithm::Rs256,
            "RS384" => Algorithm::Rs384,
            "RS512" => Algorithm::Rs512,
            "PS256" => Algorithm::Ps256,
            "PS384" => Algorithm::Ps384,
            "PS512" => Algorithm::Ps512,
            "ES256" => Algorithm::Es256,
            "ES384" => Algorithm::Es384,
            "EdDSA" => Algorithm::EdDsa,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Algorithm::Rs256 => "RS256",
            Algorithm::Rs384 => "RS384",
            Algorithm::Rs512 => "RS512",
            Algorithm::Ps256 => "PS256",
            Algorithm::Ps384 => "PS384",
            Algorithm::Ps512 => "PS512",
            Algorithm::Es256 => "ES256",
            Algorithm::Es384 => "ES384",
            Algorithm::EdDsa => "EdDSA",
        }
    }
}

/// The public part of one JSON Web Key, as far as verification needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jwk {
    /// `kid`, when the key set names its keys.
    pub kid: Option<String>,
    /// `alg`, when the key is restricted to one algorithm.
    pub alg: Option<String>,
    material: KeyMaterial,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyMaterial {
    Rsa {
        n: Vec<u8>,
        e: Vec<u8>,
    },
    /// An uncompressed point (0x04 || x || y) on `crv`.
    Ec {
        crv: String,
        point: Vec<u8>,
    },
    Ed25519(Vec<u8>),
}

impl Jwk {
    /// Reads one key of a JWKS `keys` array. `None` for a key we cannot use for verification
    /// (another `kty`, `use` other than `sig`, a private or symmetric key, bad base64): such
    /// keys are skipped, not fatal, so a key set may hold keys for other purposes.
    pub fn from_json(key: &Value) -> Option<Jwk> {
        let text = |name: &str| key.get(name).and_then(Value::as_str);
        let bytes = |name: &str| text(name).and_then(|t| URL_SAFE_NO_PAD.decode(t.trim_end_matches('=')).ok());
        if text("use").is_some_and(|u| u != "sig") {
            return None;
        }
        let material = match text("kty")? {
            "RSA" => KeyMaterial::Rsa { n: bytes("n")?, e: bytes("e")? },
            "EC" => {
                let crv = text("crv")?.to_owned();
                let (x, y) = (bytes("x")?, bytes("y")?);
                let size = match crv.as_str() {
                    "P-256" => 32,
                    "P-384" => 48,
                    _ => return None,
                };
                if x.len() != size || y.len() != size {
                    return None;
                }
                let mut point = vec![4u8];
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                KeyMaterial::Ec { crv, point }
            }
            "OKP" if text("crv") == Some("Ed25519") => KeyMaterial::Ed25519(bytes("x")?),
            _ => return None,
        };
        Some(Jwk { kid: text("kid").map(str::to_owned), alg: text("alg").map(str::to_owned), material })
    }

    /// Every usable key of a JWKS document (`{"keys": [...]}`).
    pub fn set_from_json(document: &Value) -> Vec<Jwk> {
        document
            .get("keys")
            .and_then(Value::as_array)
            .map(|keys| keys.iter().filter_map(Jwk::from_json).collect())
            .unwrap_or_default()
    }

    /// Whether this key may verify a signature of `alg`.
    fn fits(&self, alg: Algorithm) -> bool {
        if self.alg.as_deref().is_some_and(|a| a != alg.name()) {
            return false;
        }
        match (&self.material, alg) {
            (KeyMaterial::Rsa { .. }, Algorithm::Rs256 | Algorithm::Rs384 | Algorithm::Rs512) => true,
            (KeyMaterial::Rsa { .. }, Algorithm::Ps256 | Algorithm::Ps384 | Algorithm::Ps512) => true,
            (KeyMaterial::Ec { crv, .. }, Algorithm::Es256) => crv == "P-256",
            (KeyMaterial::Ec { crv, .. }, Algorithm::Es384) => crv == "P-384",
            (KeyMaterial::Ed25519(_), Algorithm::EdDsa) => true,
            _ => false,
        }
    }

    fn verify(&self, alg: Algorithm, message: &[u8], signature: &[u8]) -> bool {
        match &self.material {
            KeyMaterial::Rsa { n, e } => {
                let params: &signature::RsaParameters = match alg {
                    Algorithm::Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
                    Algorithm::Rs384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                    Algorithm::Rs512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                    Algorithm::Ps256 => &signature::RSA_PSS_2048_8192_SHA256,
                    Algorithm::Ps384 => &signature::RSA_PSS_2048_8192_SHA384,
                    Algorithm::Ps512 => &signature::RSA_PSS_2048_8192_SHA512,
                    _ => return false,
                };
                signature::RsaPublicKeyComponents { n: n.as_slice(), e: e.as_slice() }
                    .verify(params, message, signature)
                    .is_ok()
            }
            KeyMaterial::Ec { point, .. } => {
                let params: &signature::EcdsaVerificationAlgorithm = match alg {
                    Algorithm::Es256 => &signature::ECDSA_P256_SHA256_FIXED,
                    Algorithm::Es384 => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                UnparsedPublicKey::new(params, point).verify(message, signature).is_ok()
            }
            KeyMaterial::Ed25519(key) => {
                UnparsedPublicKey::new(&signature::ED25519, key).verify(message, signature).is_ok()
            }
        }
    }
}

/// A compact JWS split and decoded, its signature not yet checked.
#[derive(Debug)]
pub struct Unverified<'t> {
    /// The header's `alg`, accepted by us.
    pub alg: Algorithm,
    /// The header's `kid`.
    pub kid: Option<String>,
    claims: Map<String, Value>,
    signing_input: &'t [u8],
    signature: Vec<u8>,
}

impl<'t> Unverified<'t> {
    /// Splits and decodes `token` (`header.payload.signature`, base64url without padding).
    ///
    /// # Errors
    /// [`Refusal::Malformed`] for anything that is not such a JWS with a JSON object payload;
    /// [`Refusal::UnsupportedAlgorithm`] for `none`, HMAC or an unknown `alg`, and for a `crit`
    /// header (no extension is understood here).
    pub fn parse(token: &'t str) -> Result<Unverified<'t>, Refusal> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refusal::Malformed);
        };
        let decode = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| Refusal::Malformed);
        let header: Map<String, Value> = serde_json::from_slice(&decode(header)?).map_err(|_| Refusal::Malformed)?;
        let claims: Map<String, Value> = serde_json::from_slice(&decode(payload)?).map_err(|_| Refusal::Malformed)?;
        let alg = header.get("alg").and_then(Value::as_str).ok_or(Refusal::Malformed)?;
        let alg = Algorithm::from_name(alg).ok_or(Refusal::UnsupportedAlgorithm)?;
        if header.contains_key("crit") {
            return Err(Refusal::UnsupportedAlgorithm);
        }
        match header.get("typ") {
            None => {}
            Some(Value::String(typ))
                if ["jwt", "at+jwt", "application/at+jwt"].iter().any(|t| typ.eq_ignore_ascii_case(t)) => {}
            Some(_) => return Err(Refusal::NotAnAccessToken),
        }
        let kid = match header.get("kid") {
            None => None,
            Some(Value::String(kid)) => Some(kid.clone()),
            Some(_) => return Err(Refusal::Malformed),
        };
        let signing_input = &token.as_bytes()[..token.len() - signature.len() - 1];
        Ok(Unverified { alg, kid, claims, signing_input, signature: decode(signature)? })
    }

    /// The keys of `keys` this token may be verified with: the one with its `kid`, or, for a
    /// token without `kid`, every key that fits its algorithm.
    pub fn candidates<'k>(&self, keys: &'k [Jwk]) -> Vec<&'k Jwk> {
        keys.iter()
            .filter(|k| match &self.kid {
                Some(kid) => k.kid.as_deref() == Some(kid.as_str()),
                None => true,
            })
            .collect()
    }

    /// Verifies the signature with `key` and returns the claims.
    ///
    /// # Errors
    /// [`Refusal::BadSignature`] when it does not verify, or the key does not fit the algorithm.
    pub fn verify_with(self, keys: &[&Jwk]) -> Result<Map<String, Value>, Refusal> {
        let verified = keys.iter().any(|k| k.fits(self.alg) && k.verify(self.alg, self.signing_input, &self.signature));
        if verified {
            Ok(self.claims)
        } else {
            Err(Refusal::BadSignature)
        }
    }
}

/// What the claims of an access token must say.
#[derive(Debug, Clone)]
pub struct ClaimRules {
    /// `iss` must be this exactly.
    pub issuer: String,
    /// `aud` (a string or an array) must hold this resource URI.
    pub audience: String,
    /// Clock skew tolerated on `exp` and `nbf`.
    pub leeway: Duration,
}

/// Checks verified claims against `rules` at time `now` and reads the principal.
///
/// # Errors
/// [`Refusal::WrongIssuer`], [`Refusal::WrongAudience`], [`Refusal::Expired`] (also for a token
/// without a numeric `exp`), [`Refusal::NotYetValid`], [`Refusal::Malformed`] for a claim of the
/// wrong type.
pub fn check_claims(claims: Map<String, Value>, rules: &ClaimRules, now: SystemTime) -> Result<Principal, Refusal> {
    if claims.get("iss").and_then(Value::as_str) != Some(rules.issuer.as_str()) {
        return Err(Refusal::WrongIssuer);
    }
    check_audience(claims.get("aud"), &rules.audience)?;
    let now = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let seconds = |name: &str| match claims.get(name) {
        None => Ok(None),
        Some(v) => v.as_f64().filter(|s| s.is_finite() && *s >= 0.0).map(Some).ok_or(Refusal::Malformed),
    };
    let leeway = rules.leeway.as_secs_f64();
    match seconds("exp")? {
        Some(exp) if now.as_secs_f64() < exp + leeway => {}
        _ => return Err(Refusal::Expired),
    }
    if let Some(nbf) = seconds("nbf")? {
        if now.as_secs_f64() + leeway < nbf {
            return Err(Refusal::NotYetValid);
        }
    }
    Ok(Principal::from_claims(claims))
}

/// `aud` (absent, a string or an array of strings) names `audience`.
pub(crate) fn check_audience(aud: Option<&Value>, audience: &str) -> Result<(), Refusal> {
    let names = |a: &str| same_resource(a, audience);
    let ok = match aud {
        Some(Value::String(a)) => names(a),
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).any(names),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(Refusal::WrongAudience)
    }
}

/// Whether two resource URIs name the same resource: equal once scheme and host are lowercased
/// and a lone trailing `/` dropped (RFC 8707 §2 canonical form; `https://a/mcp` is not
/// `https://a/mcp/x`).
pub fn same_resource(a: &str, b: &str) -> bool {
    canonical_resource(a) == canonical_resource(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
    use serde_json::json;

    fn b64(bytes: &[u8]) -> String {
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// A P-256 key pair, its JWK (kid `k1`) and a signer of compact JWS.
    fn es256() -> (EcdsaKeyPair, Jwk) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let point = pair.public_key().as_ref();
        let jwk = json!({"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
            "x": b64(&point[1..33]), "y": b64(&point[33..65])});
        (pair, Jwk::from_json(&jwk).unwrap())
    }

    fn sign(pair: &EcdsaKeyPair, header: Value, claims: Value) -> String {
        let input = format!("{}.{}", b64(header.to_string().as_bytes()), b64(claims.to_string().as_bytes()));
        let sig = pair.sign(&SystemRandom::new(), input.as_bytes()).unwrap();
        format!("{input}.{}", b64(sig.as_ref()))
    }

    fn rules() -> ClaimRules {
        ClaimRules {
            issuer: "https://as".into(),
            audience: "https://r.example/mcp".into(),
            leeway: Duration::from_secs(60),
        }
    }

    const NOW: u64 = 1_900_000_000;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn a_signed_token_verifies_and_its_claims_are_checked() {
        let (pair, jwk) = es256();
        let claims = json!({"iss": "https://as", "aud": ["other", "https://R.example/mcp/"], "sub": "u",
            "exp": NOW + 10, "scope": "a b"});
        let token = sign(&pair, json!({"alg": "ES256", "kid": "k1"}), claims.clone());
        let keys = vec![jwk.clone()];
        let unverified = Unverified::parse(&token).unwrap();
        assert_eq!(unverified.kid.as_deref(), Some("k1"));
        let found = unverified.candidates(&keys);
        assert_eq!(found.len(), 1);
        let verified = unverified.verify_with(&found).unwrap();
        let principal = check_claims(verified, &rules(), at(NOW)).unwrap();
        assert_eq!(principal.subject.as_deref(), Some("u"));
        assert_eq!(principal.scopes, ["a", "b"]);

        // One flipped bit of the payload: the signature no longer verifies.
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        parts[1] = b64(json!({"iss": "https://as", "aud": "https://r.example/mcp", "exp": NOW + 10, "sub": "v"})
            .to_string()
            .as_bytes());
        let forged = parts.join(".");
        let u = Unverified::parse(&forged).unwrap();
        assert_eq!(u.verify_with(&[&jwk]).unwrap_err(), Refusal::BadSignature);
        // Another key of the same kind does not verify it either.
        let (_, other) = es256();
        assert_eq!(Unverified::parse(&token).unwrap().verify_with(&[&other]).unwrap_err(), Refusal::BadSignature);
    }

    #[test]
    fn algorithms_outside_the_allow_list_and_mismatched_keys_are_refused() {
        let (pair, jwk) = es256();
        for alg in ["none", "HS256", "XX"] {
            let token = sign(&pair, json!({"alg": alg}), json!({}));
            assert_eq!(Unverified::parse(&token).unwrap_err(), Refusal::UnsupportedAlgorithm, "{alg}");
        }
        let token = sign(&pair, json!({"alg": "ES256", "crit": ["b64"]}), json!({}));
        assert_eq!(Unverified::parse(&token).unwrap_err(), Refusal::UnsupportedAlgorithm);
        for typ in ["JWT", "at+jwt", "application/at+JWT"] {
            assert!(Unverified::parse(&sign(&pair, json!({"alg": "ES256", "typ": typ}), json!({}))).is_ok(), "{typ}");
        }
        for typ in [json!("dpop+jwt"), json!("logout+jwt"), json!(1)] {
            let token = sign(&pair, json!({"alg": "ES256", "typ": typ}), json!({}));
            assert_eq!(Unverified::parse(&token).unwrap_err(), Refusal::NotAnAccessToken, "{typ}");
        }
        // An EC key cannot verify an RS256 header, whatever the bytes.
        let token = sign(&pair, json!({"alg": "RS256"}), json!({}));
        assert_eq!(Unverified::parse(&token).unwrap().verify_with(&[&jwk]).unwrap_err(), Refusal::BadSignature);
        for bad in ["", "a.b", "a.b.c.d", "!!.e30.", "e30.e30.@@"] {
            assert_eq!(Unverified::parse(bad).unwrap_err(), Refusal::Malformed, "{bad:?}");
        }
    }

    #[test]
    fn claims_rules_issuer_audience_expiry_and_leeway() {
        let check = |claims: Value, now| check_claims(claims.as_object().unwrap().clone(), &rules(), at(now));
        let good = json!({"iss": "https://as", "aud": "https://r.example/mcp", "exp": NOW});
        assert!(check(good.clone(), NOW + 59).is_ok(), "within the leeway");
        assert_eq!(check(good.clone(), NOW + 61).unwrap_err(), Refusal::Expired);
        assert_eq!(
            check(json!({"iss": "https://as", "aud": "https://r.example/mcp"}), NOW).unwrap_err(),
            Refusal::Expired
        );
        assert_eq!(
            check(json!({"iss": "https://evil", "aud": "https://r.example/mcp", "exp": NOW}), NOW).unwrap_err(),
            Refusal::WrongIssuer
        );
        assert_eq!(
            check(json!({"iss": "https://as", "aud": "https://r.example/mcp/x", "exp": NOW}), NOW).unwrap_err(),
            Refusal::WrongAudience
        );
        assert_eq!(check(json!({"iss": "https://as", "exp": NOW}), NOW).unwrap_err(), Refusal::WrongAudience);
        assert_eq!(
            check(json!({"iss": "https://as", "aud": "https://r.example/mcp", "exp": NOW + 999, "nbf": NOW + 61}), NOW)
                .unwrap_err(),
            Refusal::NotYetValid
        );
        assert!(check(
            json!({"iss": "https://as", "aud": "https://r.example/mcp", "exp": NOW + 999, "nbf": NOW + 59}),
            NOW
        )
        .is_ok());
        assert_eq!(
            check(json!({"iss": "https://as", "aud": "https://r.example/mcp", "exp": "soon"}), NOW).unwrap_err(),
            Refusal::Malformed
        );
    }

    #[test]
    fn resource_uris_compare_in_canonical_form() {
        assert!(same_resource("HTTPS://Example.COM/mcp", "https://example.com/mcp/"));
        assert!(same_resource("https://example.com", "https://example.com/"));
        assert!(!same_resource("https://example.com/mcp", "https://example.com/MCP"), "the path keeps its case");
        assert!(!same_resource("https://example.com:8443/mcp", "https://example.com/mcp"));
        assert!(!same_resource("http://example.com/mcp", "https://example.com/mcp"));
    }
}
