//! DPoP proofs ([RFC 9449](https://www.rfc-editor.org/rfc/rfc9449)): a P-256 key per
//! [`OAuthClient`](super::OAuthClient), and the `dpop+jwt` proof of one HTTP request — at the
//! token endpoint (§5), which binds the token to the key, and with every request that presents a
//! DPoP-bound token (§7.1, with `ath`, the token's hash), carrying the server's nonce once it
//! asked for one (§8, §9).
//!
//! The key's PKCS#8 document travels with the tokens it bound
//! ([`TokenSet::dpop_key`](super::TokenSet::dpop_key)), so a restarted process presents and
//! refreshes them with the same key.
//!
//! Not here: when to use DPoP (the authorization server advertising ES256 in
//! `dpop_signing_alg_values_supported`), nonce bookkeeping (the callers).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_FIXED_SIGNING};

use super::authorization::random_token;
use super::{unix_now, AuthError, Secret};

/// The JWS algorithm of our proofs.
pub(crate) const ALGORITHM: &str = "ES256";

/// A DPoP key pair; `Debug` shows only the public key's thumbprint input.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    jwk: serde_json::Value,
    /// The PKCS#8 document, base64url.
    pkcs8: Secret,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey").field("jwk", &self.jwk).finish()
    }
}

impl DpopKey {
    /// A fresh P-256 key from the operating system's random source.
    pub(crate) fn generate() -> Result<DpopKey, AuthError> {
        let rng = ring::rand::SystemRandom::new();
        let failed = |e: &dyn std::fmt::Display| AuthError::Config(format!("dpop key: {e}"));
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).map_err(|e| failed(&e))?;
        DpopKey::from_pkcs8(&Secret::new(URL_SAFE_NO_PAD.encode(pkcs8.as_ref())))
    }

    /// The key of a PKCS#8 document (base64url), as [`DpopKey::pkcs8`] gives it.
    pub(crate) fn from_pkcs8(pkcs8: &Secret) -> Result<DpopKey, AuthError> {
        let rng = ring::rand::SystemRandom::new();
        let failed = |e: &dyn std::fmt::Display| AuthError::Config(format!("dpop key: {e}"));
        let der = URL_SAFE_NO_PAD.decode(pkcs8.expose()).map_err(|e| failed(&e))?;
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng).map_err(|e| failed(&e))?;
        // The public key is the uncompressed point: 0x04, then x and y, 32 bytes each.
        let point = pair.public_key().as_ref();
        let jwk = serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        Ok(DpopKey { pair, jwk, pkcs8: pkcs8.clone() })
    }

    /// The PKCS#8 document, base64url, to keep with the tokens this key binds.
    pub(crate) fn pkcs8(&self) -> &Secret {
        &self.pkcs8
    }

    /// The proof of one request: `method` to `url` (query and fragment dropped, §4.2), with the
    /// server's `nonce` and, when presenting a token, its hash.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        nonce: Option<&str>,
        access_token: Option<&str>,
    ) -> Result<String, AuthError> {
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let header = serde_json::json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk});
        let mut claims = serde_json::json!({"jti": random_token(), "htm": method, "htu": htu, "iat": unix_now()});
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        if let Some(token) = access_token {
            let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
            claims["ath"] = URL_SAFE_NO_PAD.encode(digest.as_ref()).into();
        }
        let input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let rng = ring::rand::SystemRandom::new();
        let signature =
            self.pair.sign(&rng, input.as_bytes()).map_err(|e| AuthError::Config(format!("dpop proof: {e}")))?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref())))
    }

    /// Whether `server` takes our proofs.
    pub(crate) fn accepted_by(server: &super::AuthorizationServerMetadata) -> bool {
        server.dpop_signing_alg_values_supported.as_ref().is_some_and(|algs| algs.iter().any(|a| a == ALGORITHM))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(jwt: &str, i: usize) -> serde_json::Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(jwt.split('.').nth(i).unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn proofs_are_signed_dpop_jwts_for_one_request() {
        let key = DpopKey::generate().unwrap();
        let proof = key.proof("POST", "https://mcp.example/mcp?x=1#f", Some("n-1"), Some("at-1")).unwrap();
        let header = part(&proof, 0);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["jwk"]["kty"], "EC");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        let claims = part(&proof, 1);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["nonce"], "n-1");
        let digest = ring::digest::digest(&ring::digest::SHA256, b"at-1");
        assert_eq!(claims["ath"], URL_SAFE_NO_PAD.encode(digest.as_ref()));
        // The signature verifies with the key in the header.
        let x = URL_SAFE_NO_PAD.decode(header["jwk"]["x"].as_str().unwrap()).unwrap();
        let y = URL_SAFE_NO_PAD.decode(header["jwk"]["y"].as_str().unwrap()).unwrap();
        let point = [&[4u8][..], &x, &y].concat();
        let public = ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, point);
        let (input, signature) = proof.rsplit_once('.').unwrap();
        public.verify(input.as_bytes(), &URL_SAFE_NO_PAD.decode(signature).unwrap()).unwrap();
        let again =
            DpopKey::from_pkcs8(key.pkcs8()).unwrap().proof("POST", "https://mcp.example/mcp", None, None).unwrap();
        assert_eq!(part(&again, 0)["jwk"], header["jwk"], "the same key after a round trip through its pkcs8");
        assert_ne!(part(&again, 1)["jti"], claims["jti"], "a fresh jti per proof");
        assert!(part(&again, 1).get("ath").is_none() && part(&again, 1).get("nonce").is_none());
    }
}
