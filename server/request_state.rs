//! Sealing and opening the `requestState` of a multi-round request (2026-07-28 MRTR): pure
//! functions over a keyed MAC (HMAC-SHA256), tested on their own.
//!
//! How a handler's progress is carried: by a deterministic re-run. A handler that asks the
//! client for something ([`Context::elicit`](super::Context::elicit), `create_message`,
//! `list_roots`) in a 2026-07-28 request does not wait for an answer on a back channel (there is
//! none): the ask is recorded, the handler is dropped, and the request is answered with an
//! `InputRequiredResult` listing every ask of that run plus a `requestState` holding every
//! answer received so far. The retry runs the handler again from the start; this time the
//! asks already answered return their answers at once, and the handler gets further. Nothing
//! is kept in the server's memory between rounds, so the retry may reach another process
//! configured with the same secret (a load balancer without sticky sessions). The price: a
//! handler runs once per round, so what it does before its asks should be cheap and free of
//! side effects (or keyed on the answers). The state is a few hundred bytes per answer; the
//! alternative, keeping suspended handlers in memory, would tie the retry to one process.
//!
//! What the MAC covers: the method, the target (tool or prompt name, resource URI), a digest
//! of the arguments, an expiry and the answers. A state that was altered, minted by another
//! secret, made for another request, or is past its expiry does not open; a replay within
//! the expiry yields only the answers the same client already gave for the same request.
//!
//! Not here: running handlers or building results (the dispatch), the wire types
//! (`proto::mcp_types::input`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ring::{digest, hmac, rand};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::proto::envelope::{decode_base64_strict, encode_base64};

/// How long a `requestState` may be echoed back: 10 minutes (a person may be answering).
pub const STATE_LIFETIME: Duration = Duration::from_secs(600);

/// The server's secret for `requestState` MACs.
pub(crate) struct StateKey {
    key: hmac::Key,
}

/// What a `requestState` is bound to: the request it was issued for. The arguments are kept
/// as the JSON text they digest (a `serde_json::Map` writes its keys in order, so equal
/// arguments write equally), written beside the target in one buffer: a 2026-07-28 call whose
/// handler asks nothing (most of them) pays for one small write, not a copy of its arguments'
/// tree, and no SHA-256 (made only when a state is sealed or opened).
#[derive(Debug)]
pub(crate) struct Binding {
    pub(crate) method: &'static str,
    /// The target (tool or prompt name, resource URI), then the arguments' JSON.
    target_and_arguments: String,
    target_len: usize,
    digest: std::sync::OnceLock<String>,
}

impl Binding {
    /// The binding of `method` on `target` with the arguments `write_arguments` writes as JSON
    /// (keys in order).
    pub(crate) fn new(method: &'static str, target: &str, write_arguments: impl FnOnce(&mut Vec<u8>)) -> Binding {
        let mut text = Vec::with_capacity(target.len() + 64);
        text.extend_from_slice(target.as_bytes());
        write_arguments(&mut text);
        // The target is a `str` and both writers write UTF-8; a writer that failed midway
        // (never, into a Vec) would leave a digest no other request matches.
        let target_and_arguments = String::from_utf8(text).unwrap_or_default();
        Binding { method, target_len: target.len(), target_and_arguments, digest: Default::default() }
    }

    /// The binding of `method` on `target` with `arguments`.
    #[cfg(test)]
    pub(crate) fn of_value(method: &'static str, target: &str, arguments: &Value) -> Binding {
        Binding::new(method, target, |out| {
            let _ = crate::proto::json_write::to_writer(out, arguments);
        })
    }

    /// The tool or prompt name, or the resource URI.
    pub(crate) fn target(&self) -> &str {
        self.target_and_arguments.get(..self.target_len).unwrap_or_default()
    }

    /// A digest of the arguments' JSON, made on first use.
    pub(crate) fn arguments_digest(&self) -> &str {
        self.digest.get_or_init(|| {
            let text = self.target_and_arguments.as_bytes().get(self.target_len..).unwrap_or_default();
            encode_base64(digest::digest(&digest::SHA256, text).as_ref())
        })
    }
}

#[derive(Serialize, Deserialize)]
struct Payload {
    #[serde(rename = "m")]
    method: String,
    #[serde(rename = "t")]
    target: String,
    #[serde(rename = "d")]
    arguments_digest: String,
    /// Expiry, seconds since the Unix epoch.
    #[serde(rename = "x")]
    expires: u64,
    #[serde(rename = "a")]
    answers: Map<String, Value>,
}

/// Why a `requestState` was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StateError {
    /// Not of our format.
    Malformed,
    /// The MAC does not match: altered, or sealed with another secret.
    Tampered,
    /// Made for another request.
    Foreign,
    /// Past its expiry.
    Expired,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StateError::Malformed => "requestState is malformed",
            StateError::Tampered => "requestState failed its integrity check",
            StateError::Foreign => "requestState belongs to another request",
            StateError::Expired => "requestState has expired",
        })
    }
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

impl StateKey {
    /// A key from a configured secret (any length; 32 random bytes or more is right).
    pub(crate) fn from_secret(secret: &[u8]) -> StateKey {
        StateKey { key: hmac::Key::new(hmac::HMAC_SHA256, secret) }
    }

    /// A fresh random key: states survive only as long as this process.
    pub(crate) fn generate() -> StateKey {
        let key = hmac::Key::generate(hmac::HMAC_SHA256, &rand::SystemRandom::new()).expect("system randomness");
        StateKey { key }
    }

    /// Seals `answers` for `binding`, valid until `now` + [`STATE_LIFETIME`].
    pub(crate) fn seal(&self, binding: &Binding, answers: &Map<String, Value>, now: SystemTime) -> String {
        let payload = Payload {
            method: binding.method.to_owned(),
            target: binding.target().to_owned(),
            arguments_digest: binding.arguments_digest().to_owned(),
            expires: seconds(now + STATE_LIFETIME),
            answers: answers.clone(),
        };
        let text = serde_json::to_vec(&payload).expect("JSON values serialize");
        let tag = hmac::sign(&self.key, &text);
        format!("{}.{}", encode_base64(&text), encode_base64(tag.as_ref()))
    }

    /// Opens a state sealed by [`StateKey::seal`] for `binding`: its answers.
    ///
    /// # Errors
    /// [`StateError`] saying why it was refused.
    pub(crate) fn open(
        &self,
        token: &str,
        binding: &Binding,
        now: SystemTime,
    ) -> Result<Map<String, Value>, StateError> {
        let (text, tag) = token.split_once('.').ok_or(StateError::Malformed)?;
        let text = decode_base64_strict(text).ok_or(StateError::Malformed)?;
        let tag = decode_base64_strict(tag).ok_or(StateError::Malformed)?;
        hmac::verify(&self.key, &text, &tag).map_err(|_| StateError::Tampered)?;
        let payload: Payload = serde_json::from_slice(&text).map_err(|_| StateError::Malformed)?;
        if payload.method != binding.method
            || payload.target != binding.target()
            || payload.arguments_digest != binding.arguments_digest()
        {
            return Err(StateError::Foreign);
        }
        if payload.expires < seconds(now) {
            return Err(StateError::Expired);
        }
        Ok(payload.answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answers() -> Map<String, Value> {
        json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}}).as_object().unwrap().clone()
    }

    #[test]
    fn a_sealed_state_opens_for_its_request_only() {
        let key = StateKey::from_secret(b"a secret of the deployment");
        let now = SystemTime::now();
        let binding = Binding::of_value("tools/call", "greet", &json!({"a": 1}));
        let token = key.seal(&binding, &answers(), now);
        assert_eq!(key.open(&token, &binding, now), Ok(answers()));
        // The same secret in another process opens it too.
        assert_eq!(StateKey::from_secret(b"a secret of the deployment").open(&token, &binding, now), Ok(answers()));

        let other_tool = Binding::of_value("tools/call", "other", &json!({"a": 1}));
        assert_eq!(key.open(&token, &other_tool, now), Err(StateError::Foreign));
        let other_args = Binding::of_value("tools/call", "greet", &json!({"a": 2}));
        assert_eq!(key.open(&token, &other_args, now), Err(StateError::Foreign));
        let later = now + STATE_LIFETIME + Duration::from_secs(2);
        assert_eq!(key.open(&token, &binding, later), Err(StateError::Expired));
        assert_eq!(StateKey::generate().open(&token, &binding, now), Err(StateError::Tampered));
    }

    #[test]
    fn an_altered_state_is_refused() {
        let key = StateKey::generate();
        let now = SystemTime::now();
        let binding = Binding::of_value("prompts/get", "p", &json!({}));
        let token = key.seal(&binding, &answers(), now);
        let (text, tag) = token.split_once('.').unwrap();
        let mut payload: Value = serde_json::from_slice(&decode_base64_strict(text).unwrap()).unwrap();
        payload["a"]["user_name"]["content"]["name"] = json!("Mallory");
        let forged = format!("{}.{tag}", encode_base64(&serde_json::to_vec(&payload).unwrap()));
        assert_eq!(key.open(&forged, &binding, now), Err(StateError::Tampered));
        assert_eq!(key.open("not a state", &binding, now), Err(StateError::Malformed));
        assert_eq!(key.open(&format!("{token}x"), &binding, now), Err(StateError::Malformed));
    }
}
