//! The JSON-RPC 2.0 message model that MCP runs on: requests, notifications, responses and
//! error responses, decoded with validation and encoded without re-serializing payloads.
//!
//! `params` and `result` are a [`Body`]: raw JSON ([`RawValue`]) as read from the wire, or a
//! Rust value not serialized yet. Decoding an envelope validates the whole text once and copies
//! each payload once; routing or forwarding a message never parses or re-encodes its payload;
//! an in-process transport hands typed bodies across without serializing them at all. Typed
//! decoding of a payload happens where it is needed, through [`Request::params_as`] and friends;
//! where the receiver is known to decode a large payload anyway, [`decode_typed`] (params, by
//! method) and [`decode_answer`] (a result, by the method it answers) decode it into its type in
//! the envelope's pass. `error.data` is always raw JSON.
//!
//! What this module does not do: framing (see `framing`), UTF-8 checks beyond what a `&str`
//! already guarantees, or MCP semantics (see `mcp_types`). A JSON array (batch) is accepted only
//! by [`decode`] and only where the session's revision allows it (2025-03-26).
//!
//! Spec: JSON-RPC 2.0 (<https://www.jsonrpc.org/specification>) as profiled by MCP
//! (`basic/index` "Messages": ids are strings or integers, never null, never reused).

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::proto::version::ProtocolVersion;

/// A request id: an integer or a string, kept as the peer wrote it (`1` and `"1"` differ).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Id {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(String),
}

impl From<i64> for Id {
    fn from(n: i64) -> Self {
        Id::Number(n)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id::String(s.to_owned())
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id::String(s)
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Number(n) => write!(f, "{n}"),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// A JSON-RPC error code. Open: any `i32` is valid on the wire; the constants name the ones
/// JSON-RPC and MCP define.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// Invalid method parameters.
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// MCP: the requested resource does not exist (`resources/read`).
    pub const RESOURCE_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// MCP 2025-11-25: the request needs a URL-mode elicitation to complete first.
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
    /// MCP 2026-07-28: HTTP headers disagree with the body, or are missing or malformed.
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// MCP 2026-07-28: the request needs a client capability the client did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// MCP 2026-07-28: the request's protocol version is unknown or unsupported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// Not MCP's: mcpwire's refusal of a request or call over a rate limit (see
    /// [`ErrorObject::rate_limited`]), in the server-defined range JSON-RPC leaves open.
    pub const RATE_LIMITED: ErrorCode = ErrorCode(-32029);

    /// The conventional message for a code this crate knows, for building error responses.
    pub fn default_message(self) -> &'static str {
        match self {
            Self::PARSE_ERROR => "Parse error",
            Self::INVALID_REQUEST => "Invalid Request",
            Self::METHOD_NOT_FOUND => "Method not found",
            Self::INVALID_PARAMS => "Invalid params",
            Self::INTERNAL_ERROR => "Internal error",
            Self::RESOURCE_NOT_FOUND => "Resource not found",
            Self::URL_ELICITATION_REQUIRED => "URL elicitation required",
            Self::HEADER_MISMATCH => "Header mismatch",
            Self::MISSING_REQUIRED_CLIENT_CAPABILITY => "Missing required client capability",
            Self::UNSUPPORTED_PROTOCOL_VERSION => "Unsupported protocol version",
            _ => "Error",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The `error` member of an error response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    /// What kind of error.
    pub code: ErrorCode,
    /// A short description.
    pub message: String,
    /// Anything else the sender attached, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl ErrorObject {
    /// An error with `code` and `message` and no data.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorObject { code, message: message.into(), data: None }
    }

    /// The -32601 "Method not found" error: the answer to a request no handler takes.
    pub fn method_not_found() -> Self {
        ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, ErrorCode::METHOD_NOT_FOUND.default_message())
    }

    /// The -32029 refusal of a request over the rate limit `limit`: `message` as given, `data`
    /// `{"limit": limit, "retryAfterMs": retry_after_ms}` (what a client reads to wait and retry).
    pub fn rate_limited(message: impl Into<String>, limit: &str, retry_after_ms: u64) -> Self {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Data<'a> {
            limit: &'a str,
            retry_after_ms: u64,
        }
        let error = ErrorObject::new(ErrorCode::RATE_LIMITED, message);
        let data = Data { limit, retry_after_ms };
        error.clone().with_data(&data).unwrap_or(error)
    }

    /// Attaches `data`, serialized once here.
    ///
    /// # Errors
    /// When `data` cannot be serialized to JSON.
    pub fn with_data(mut self, data: &impl Serialize) -> Result<Self, serde_json::Error> {
        self.data = Some(serde_json::value::to_raw_value(data)?);
        Ok(self)
    }
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A Rust value that can stand as a message body without being serialized yet.
///
/// Implemented for every `Serialize + Send + Sync + 'static` type; there is nothing to implement.
pub trait TypedBody: Send + Sync + 'static {
    /// Serializes the value.
    ///
    /// # Errors
    /// When the value cannot be represented as JSON.
    fn to_raw(&self) -> Result<Box<RawValue>, serde_json::Error>;
    /// Serializes the value straight into `out`.
    ///
    /// # Errors
    /// When the value cannot be represented as JSON, or `out` fails.
    fn write_json(&self, out: &mut dyn std::io::Write) -> Result<(), serde_json::Error>;
    /// The value, for downcasting.
    fn as_any(&self) -> &dyn Any;
    /// The value, for downcasting by ownership.
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync>;
    /// The Rust type's name, for debugging.
    fn type_name(&self) -> &'static str;
    /// About how long the value's JSON is (to size the buffer it is written into).
    fn estimated_len(&self) -> usize;
}

impl<T: Serialize + Send + Sync + 'static> TypedBody for T {
    fn to_raw(&self) -> Result<Box<RawValue>, serde_json::Error> {
        serde_json::value::to_raw_value(self)
    }
    fn write_json(&self, out: &mut dyn std::io::Write) -> Result<(), serde_json::Error> {
        super::json_write::to_writer(out, self)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn into_any(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<T>()
    }
    fn estimated_len(&self) -> usize {
        super::json_write::estimated_len(self)
    }
}

/// The `params` or `result` of a message.
#[derive(Clone)]
pub enum Body {
    /// JSON text as read from the wire (or produced by serializing once).
    Raw(Box<RawValue>),
    /// A Rust value handed over in process; serialized only if it ever reaches a wire.
    Typed(Arc<dyn TypedBody>),
}

impl Body {
    /// A body holding `value` unserialized.
    pub fn typed<T: Serialize + Send + Sync + 'static>(value: T) -> Body {
        Body::Typed(Arc::new(value))
    }

    /// A body holding `value` serialized to JSON now.
    ///
    /// # Errors
    /// When `value` cannot be serialized.
    pub fn serialized(value: &impl Serialize) -> Result<Body, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(Body::Raw)
    }

    /// The value, if this body is typed and holds a `T`.
    pub fn typed_as<T: 'static>(&self) -> Option<&T> {
        match self {
            Body::Typed(value) => value.as_any().downcast_ref(),
            Body::Raw(_) => None,
        }
    }

    /// The JSON text, if this body is raw.
    pub fn as_raw(&self) -> Option<&RawValue> {
        match self {
            Body::Raw(raw) => Some(raw),
            Body::Typed(_) => None,
        }
    }

    /// The body as JSON text, serializing a typed body.
    ///
    /// # Errors
    /// When a typed body cannot be serialized.
    pub fn to_raw(&self) -> Result<Cow<'_, RawValue>, serde_json::Error> {
        match self {
            Body::Raw(raw) => Ok(Cow::Borrowed(raw)),
            Body::Typed(value) => value.to_raw().map(Cow::Owned),
        }
    }

    /// Decodes the body as `T`: a typed body holding a `T` is cloned, anything else is decoded
    /// from JSON.
    ///
    /// # Errors
    /// When the body does not fit `T`.
    pub fn decode<T: DeserializeOwned + Clone + 'static>(&self) -> Result<T, serde_json::Error> {
        match self {
            Body::Raw(raw) => serde_json::from_str(raw.get()),
            Body::Typed(value) => match value.as_any().downcast_ref::<T>() {
                Some(t) => Ok(t.clone()),
                None => serde_json::from_str(value.to_raw()?.get()),
            },
        }
    }

    /// Like [`Body::decode`], but takes the value out of a typed body without copying it when
    /// this is its only owner.
    ///
    /// # Errors
    /// When the body does not fit `T`.
    // Inlined: the value (tools/call params are most of a kilobyte) is then copied out of the
    // `Arc` once, straight to where the caller keeps it, rather than once per layer between.
    #[inline]
    pub fn into_decoded<T: DeserializeOwned + Clone + Send + Sync + 'static>(self) -> Result<T, serde_json::Error> {
        match self {
            Body::Raw(raw) => serde_json::from_str(raw.get()),
            Body::Typed(value) if value.as_any().is::<T>() => {
                Ok(Arc::unwrap_or_clone(value.into_any().downcast::<T>().expect("type checked above")))
            }
            Body::Typed(value) => reencoded(&*value),
        }
    }

    fn len_hint(&self) -> usize {
        match self {
            Body::Raw(raw) => raw.get().len(),
            Body::Typed(value) => value.estimated_len(),
        }
    }

    /// Writes the body's JSON text to `out`: raw text as is, a typed value serialized straight
    /// into `out` (one pass, no intermediate string).
    ///
    /// # Errors
    /// When a typed value cannot be serialized, or `out` fails.
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> Result<(), serde_json::Error> {
        match self {
            Body::Raw(raw) => out.write_all(raw.get().as_bytes()).map_err(serde_json::Error::io),
            Body::Typed(value) => value.write_json(out),
        }
    }
}

/// A typed body of another type than asked for, decoded from its JSON (out of line: rare).
#[inline(never)]
fn reencoded<T: DeserializeOwned>(value: &dyn TypedBody) -> Result<T, serde_json::Error> {
    serde_json::from_str(value.to_raw()?.get())
}

impl From<Box<RawValue>> for Body {
    fn from(raw: Box<RawValue>) -> Self {
        Body::Raw(raw)
    }
}

impl fmt::Debug for Body {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Body::Raw(raw) => write!(f, "Raw({})", raw.get()),
            Body::Typed(value) => write!(f, "Typed({})", value.type_name()),
        }
    }
}

impl Serialize for Body {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Body::Raw(raw) => raw.serialize(s),
            Body::Typed(value) => value.to_raw().map_err(serde::ser::Error::custom)?.serialize(s),
        }
    }
}

/// A request: expects exactly one response with the same id.
#[derive(Debug, Clone)]
pub struct Request {
    /// Chosen by the sender, unique among its requests in flight.
    pub id: Id,
    /// The method name, e.g. `tools/call`.
    pub method: String,
    /// The params object, if any.
    pub params: Option<Body>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    /// The method name, e.g. `notifications/progress`.
    pub method: String,
    /// The params object, if any.
    pub params: Option<Body>,
}

/// A successful response.
#[derive(Debug, Clone)]
pub struct Response {
    /// The id of the request it answers.
    pub id: Id,
    /// The result.
    pub result: Body,
}

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request it answers; `None` when the request's id could not be read
    /// (JSON-RPC writes `null` there; MCP 2026-07-28 omits the member, and so do we).
    pub id: Option<Id>,
    /// What went wrong.
    pub error: ErrorObject,
}

/// Any JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    Error(ErrorResponse),
}

/// What one frame held: a message, or (2025-03-26 only) a batch of them.
#[derive(Debug, Clone)]
pub enum Payload {
    /// One message.
    Single(Message),
    /// A JSON array of messages, in order.
    Batch(Vec<Message>),
}

/// Why a frame is not a valid JSON-RPC message. One variant per violation.
#[derive(Debug)]
#[non_exhaustive]
pub enum DecodeError {
    /// The bytes are not UTF-8.
    InvalidUtf8 {
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
    /// The text is not JSON.
    InvalidJson(serde_json::Error),
    /// The JSON is neither an object nor (where allowed) an array.
    NotAnObject,
    /// The `jsonrpc` member is missing.
    MissingVersion,
    /// The `jsonrpc` member is not `"2.0"`.
    WrongVersion(String),
    /// The `id` member is neither an integer nor a string (e.g. a fraction, a boolean).
    InvalidId(String),
    /// A request has `"id": null`, which MCP forbids.
    NullRequestId,
    /// A response has no usable id.
    MissingResponseId,
    /// `method` is not a string.
    InvalidMethod,
    /// A message has `method` and also `result` or `error`.
    MethodWithResult,
    /// A response has both `result` and `error`.
    ResultAndError,
    /// An object with none of `method`, `result`, `error`.
    NotAMessage,
    /// `params` is present but neither an object nor an array.
    InvalidParams,
    /// `error` is not an object with an integer `code` and a string `message`.
    InvalidError(serde_json::Error),
    /// A batch arrived where the session's revision does not allow batches.
    BatchNotAllowed {
        /// The session's revision, if known.
        version: Option<ProtocolVersion>,
    },
    /// An empty JSON array.
    EmptyBatch,
    /// Two requests of one batch carry the same id: their answers could not be told apart.
    DuplicateIdInBatch(Id),
}

impl DecodeError {
    /// The error code to answer with: -32700 for text that is not JSON, -32600 otherwise.
    pub fn code(&self) -> ErrorCode {
        match self {
            DecodeError::InvalidUtf8 { .. } | DecodeError::InvalidJson(_) => ErrorCode::PARSE_ERROR,
            _ => ErrorCode::INVALID_REQUEST,
        }
    }

    /// The error object to answer with.
    pub fn to_error_object(&self) -> ErrorObject {
        ErrorObject::new(self.code(), self.to_string())
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::InvalidUtf8 { valid_up_to } => {
                write!(f, "invalid utf-8 after {valid_up_to} bytes")
            }
            DecodeError::InvalidJson(e) => write!(f, "invalid json: {e}"),
            DecodeError::NotAnObject => f.write_str("a json-rpc message must be a json object"),
            DecodeError::MissingVersion => f.write_str("missing \"jsonrpc\": \"2.0\""),
            DecodeError::WrongVersion(v) => write!(f, "\"jsonrpc\" must be \"2.0\", got {v}"),
            DecodeError::InvalidId(v) => write!(f, "id must be an integer or a string, got {v}"),
            DecodeError::NullRequestId => f.write_str("a request id must not be null"),
            DecodeError::MissingResponseId => f.write_str("a successful response must carry the request's id"),
            DecodeError::InvalidMethod => f.write_str("\"method\" must be a string"),
            DecodeError::MethodWithResult => {
                f.write_str("a message cannot have both \"method\" and \"result\"/\"error\"")
            }
            DecodeError::ResultAndError => f.write_str("a response must have exactly one of \"result\" and \"error\""),
            DecodeError::NotAMessage => {
                f.write_str("not a request, notification or response: no \"method\", \"result\" or \"error\"")
            }
            DecodeError::InvalidParams => f.write_str("\"params\" must be an object or an array"),
            DecodeError::InvalidError(e) => write!(f, "invalid \"error\" member: {e}"),
            DecodeError::BatchNotAllowed { version: Some(v) } => {
                write!(f, "json-rpc batches are not allowed in protocol version {v} (only 2025-03-26)")
            }
            DecodeError::BatchNotAllowed { version: None } => {
                f.write_str("json-rpc batches are not allowed before a 2025-03-26 session is established")
            }
            DecodeError::EmptyBatch => f.write_str("empty json-rpc batch"),
            DecodeError::DuplicateIdInBatch(id) => {
                write!(f, "two requests of one json-rpc batch carry the id {id}: each request needs its own")
            }
        }
    }
}

impl std::error::Error for DecodeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DecodeError::InvalidJson(e) | DecodeError::InvalidError(e) => Some(e),
            _ => None,
        }
    }
}

/// Deserializes a member that is present (even as `null`) into `Some`, leaving absence to
/// `#[serde(default)]`. Plain `Option` would read `null` as absent.
fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// The members of a message object, borrowed from the input. Unknown members are ignored.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// `Some(None)` for a JSON `null` id.
fn parse_id(raw: &RawValue) -> Result<Option<Id>, DecodeError> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"') => {
            serde_json::from_str::<String>(text).map(|s| Some(Id::String(s))).map_err(DecodeError::InvalidJson)
        }
        Some(b'-' | b'0'..=b'9') => {
            text.parse::<i64>().map(|n| Some(Id::Number(n))).map_err(|_| DecodeError::InvalidId(text.to_owned()))
        }
        _ if text == "null" => Ok(None),
        _ => Err(DecodeError::InvalidId(text.to_owned())),
    }
}

fn parse_method(raw: &RawValue) -> Result<String, DecodeError> {
    if !raw.get().starts_with('"') {
        return Err(DecodeError::InvalidMethod);
    }
    let method: Cow<'_, str> = serde_json::from_str(raw.get()).map_err(DecodeError::InvalidJson)?;
    Ok(method.into_owned())
}

fn own_params(raw: Option<&RawValue>) -> Result<Option<Body>, DecodeError> {
    match raw {
        None => Ok(None),
        Some(p) if p.get().starts_with(['{', '[']) => Ok(Some(Body::Raw(p.to_owned()))),
        Some(_) => Err(DecodeError::InvalidParams),
    }
}

impl<'a> Envelope<'a> {
    fn into_message(self) -> Result<Message, DecodeError> {
        self.into_message_with(Typed::default())
    }

    /// As [`Envelope::into_message`], with the params or result that were decoded into their
    /// type in the envelope's pass.
    fn into_message_with(self, typed: Typed) -> Result<Message, DecodeError> {
        match self.jsonrpc.map(RawValue::get) {
            None => return Err(DecodeError::MissingVersion),
            Some("\"2.0\"") => {}
            Some(other) => return Err(DecodeError::WrongVersion(other.to_owned())),
        }
        let id = self.id.map(parse_id).transpose()?;
        let has_result = self.result.is_some() || typed.result.is_some();
        if let Some(method) = self.method {
            if has_result || self.error.is_some() {
                return Err(DecodeError::MethodWithResult);
            }
            let method = parse_method(method)?;
            let params = match typed.params {
                Some(body) => Some(body),
                None => own_params(self.params)?,
            };
            return match id {
                None => Ok(Message::Notification(Notification { method, params })),
                Some(None) => Err(DecodeError::NullRequestId),
                Some(Some(id)) => Ok(Message::Request(Request { id, method, params })),
            };
        }
        match (has_result, self.error) {
            (true, Some(_)) => Err(DecodeError::ResultAndError),
            (false, None) => Err(DecodeError::NotAMessage),
            (true, None) => match id {
                Some(Some(id)) => {
                    let result = match (typed.result, self.result) {
                        (Some(body), _) => body,
                        (None, raw) => Body::Raw(raw.expect("a result is present").to_owned()),
                    };
                    Ok(Message::Response(Response { id, result }))
                }
                _ => Err(DecodeError::MissingResponseId),
            },
            (false, Some(error)) => {
                let error: ErrorObject = serde_json::from_str(error.get()).map_err(DecodeError::InvalidError)?;
                Ok(Message::Error(ErrorResponse { id: id.flatten(), error }))
            }
        }
    }
}

fn first_significant_byte(text: impl AsRef<[u8]>) -> Option<u8> {
    text.as_ref().iter().copied().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

fn decode_object(text: &str) -> Result<Message, DecodeError> {
    let envelope: Envelope<'_> = serde_json::from_str(text).map_err(DecodeError::InvalidJson)?;
    envelope.into_message()
}

/// Decodes an object straight from bytes: serde_json checks the UTF-8 of every string and raw
/// payload it reads, so a separate validation pass over the whole frame is not needed.
fn decode_object_bytes(bytes: &[u8]) -> Result<Message, DecodeError> {
    match serde_json::from_slice::<Envelope<'_>>(bytes) {
        Ok(envelope) => envelope.into_message(),
        Err(e) => Err(match std::str::from_utf8(bytes) {
            Err(bad) => DecodeError::InvalidUtf8 { valid_up_to: bad.valid_up_to() },
            Ok(_) => DecodeError::InvalidJson(e),
        }),
    }
}

impl Message {
    /// Decodes one message (a batch is an error: use [`decode`] where batches may occur).
    ///
    /// # Errors
    /// A [`DecodeError`] naming the first violation found.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(text: &str) -> Result<Message, DecodeError> {
        match first_significant_byte(text) {
            Some(b'{') => decode_object(text),
            Some(b'[') => Err(DecodeError::BatchNotAllowed { version: None }),
            _ => Err(match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Err(e) => DecodeError::InvalidJson(e),
                Ok(_) => DecodeError::NotAnObject,
            }),
        }
    }

    /// Like [`Message::from_str`], checking UTF-8 first.
    ///
    /// # Errors
    /// [`DecodeError::InvalidUtf8`], or any error of [`Message::from_str`].
    pub fn from_slice(bytes: &[u8]) -> Result<Message, DecodeError> {
        match first_significant_byte(bytes) {
            Some(b'{') => decode_object_bytes(bytes),
            _ => Message::from_str(utf8(bytes)?),
        }
    }

    /// The method name of a request or notification.
    pub fn method(&self) -> Option<&str> {
        match self {
            Message::Request(r) => Some(&r.method),
            Message::Notification(n) => Some(&n.method),
            Message::Response(_) | Message::Error(_) => None,
        }
    }

    /// The id of a request or response.
    pub fn id(&self) -> Option<&Id> {
        match self {
            Message::Request(r) => Some(&r.id),
            Message::Response(r) => Some(&r.id),
            Message::Error(e) => e.id.as_ref(),
            Message::Notification(_) => None,
        }
    }

    /// Writes the compact JSON text of this message to `out`: raw payloads copied as written,
    /// typed ones serialized straight into `out` (the generic `Serialize` impl has to go through
    /// an intermediate string for those).
    ///
    /// # Errors
    /// When a typed body cannot be serialized, or `out` fails.
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> Result<(), serde_json::Error> {
        let io = serde_json::Error::io;
        out.write_all(b"{\"jsonrpc\":\"2.0\"").map_err(io)?;
        let (id, method, params, result, error) = match self {
            Message::Request(r) => (Some(&r.id), Some(&r.method), r.params.as_ref(), None, None),
            Message::Notification(n) => (None, Some(&n.method), n.params.as_ref(), None, None),
            Message::Response(r) => (Some(&r.id), None, None, Some(&r.result), None),
            Message::Error(e) => (e.id.as_ref(), None, None, None, Some(&e.error)),
        };
        if let Some(id) = id {
            out.write_all(b",\"id\":").map_err(io)?;
            serde_json::to_writer(&mut *out, id)?;
        }
        if let Some(method) = method {
            out.write_all(b",\"method\":").map_err(io)?;
            super::json_write::write_str(&mut *out, method)?;
        }
        if let Some(params) = params {
            out.write_all(b",\"params\":").map_err(io)?;
            params.write_json(out)?;
        }
        if let Some(result) = result {
            out.write_all(b",\"result\":").map_err(io)?;
            result.write_json(out)?;
        }
        if let Some(error) = error {
            out.write_all(b",\"error\":").map_err(io)?;
            super::json_write::to_writer(&mut *out, error)?;
        }
        out.write_all(b"}").map_err(io)
    }

    /// Appends the compact JSON text of this message to `out`. Payloads are copied as written.
    ///
    /// # Panics
    /// When a typed body fails to serialize (a `Serialize` impl that errors, e.g. a map with
    /// non-string keys): a programming error, never caused by input.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        self.write_json(out).expect("a typed message body failed to serialize");
    }

    /// The compact JSON text of this message.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len_hint());
        self.write_to(&mut out);
        out
    }

    /// About how long this message's JSON is, to size the buffer it is written into.
    pub fn encoded_len_hint(&self) -> usize {
        let payload = match self {
            Message::Request(r) => r.params.as_ref().map_or(0, Body::len_hint) + r.method.len(),
            Message::Notification(n) => n.params.as_ref().map_or(0, Body::len_hint) + n.method.len(),
            Message::Response(r) => r.result.len_hint(),
            Message::Error(e) => e.error.message.len() + e.error.data.as_ref().map_or(0, |d| d.get().len()),
        };
        payload + 64
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.to_vec();
        f.write_str(std::str::from_utf8(&bytes).map_err(|_| fmt::Error)?)
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(bytes).map_err(|e| DecodeError::InvalidUtf8 { valid_up_to: e.valid_up_to() })
}

/// Params decoded straight into a Rust type in the pass that reads the envelope, for the
/// methods an application names ([`decode_typed`]): a large `tools/call` is then read once and
/// its text copied once, instead of being kept as raw JSON and decoded again.
pub trait TypedParams {
    /// Whether `method`'s params are decoded here.
    fn wants(method: &str) -> bool;
    /// Decodes `method`'s params (one that [`wants`](TypedParams::wants)) into a body.
    ///
    /// # Errors
    /// When the params do not fit the type.
    fn decode<'de, D: serde::Deserializer<'de>>(method: &str, params: D) -> Result<Body, D::Error>;
}

/// Results decoded straight into a Rust type in the pass that reads the envelope, for the
/// requests an application names ([`decode_answer`]): the receiving side of [`TypedParams`].
/// A response does not say which method it answers, so the caller tells.
pub trait TypedResults {
    /// Whether the results of `method` (the request's) are decoded here.
    fn wants(method: &str) -> bool;
    /// Decodes the result of a `method` request (one that [`wants`](TypedResults::wants)).
    ///
    /// # Errors
    /// When the result does not fit the type.
    fn decode<'de, D: serde::Deserializer<'de>>(method: &str, result: D) -> Result<Body, D::Error>;
}

/// Nothing is typed: params and results stay raw.
impl TypedParams for () {
    fn wants(_: &str) -> bool {
        false
    }
    fn decode<'de, D: serde::Deserializer<'de>>(_: &str, _: D) -> Result<Body, D::Error> {
        Err(serde::de::Error::custom("no typed params"))
    }
}

/// Nothing is typed: params and results stay raw.
impl TypedResults for () {
    fn wants(_: &str) -> bool {
        false
    }
    fn decode<'de, D: serde::Deserializer<'de>>(_: &str, _: D) -> Result<Body, D::Error> {
        Err(serde::de::Error::custom("no typed results"))
    }
}

/// Like [`decode`], but the params of a request or notification whose method `P` wants come
/// typed ([`Body::Typed`]) instead of raw. Whatever the typed pass cannot take (params before
/// the method, params that do not fit the type, a batch, any error) is decoded by [`decode`],
/// so errors and raw results are exactly [`decode`]'s.
///
/// Typed params are re-serialized when something asks for their JSON: use this where the
/// receiver decodes them anyway, not where the exact bytes matter (a proxy, a recorder).
///
/// # Errors
/// As [`decode`].
pub fn decode_typed<P: TypedParams>(bytes: &[u8], version: Option<ProtocolVersion>) -> Result<Payload, DecodeError> {
    decode_with::<P, ()>(bytes, version, None)
}

/// Like [`decode`], but the result of a response comes typed ([`Body::Typed`]) when it answers
/// a request of `method` that `R` wants, as an answer the caller expects would. The response's
/// id is not checked against the request's (it may come after the result): the caller checks
/// it and decodes again with [`decode`] if it needs to. Whatever the typed pass cannot take (a
/// result that does not fit the type, a batch, any error) is decoded by [`decode`], so errors
/// and raw results are exactly [`decode`]'s.
///
/// Typed results are re-serialized when something asks for their JSON: use this where the
/// receiver decodes them anyway, not where the exact bytes matter (a proxy, a recorder).
///
/// # Errors
/// As [`decode`].
pub fn decode_answer<R: TypedResults>(
    bytes: &[u8],
    version: Option<ProtocolVersion>,
    method: &str,
) -> Result<Payload, DecodeError> {
    decode_with::<(), R>(bytes, version, Some(method))
}

fn decode_with<P: TypedParams, R: TypedResults>(
    bytes: &[u8],
    version: Option<ProtocolVersion>,
    answers: Option<&str>,
) -> Result<Payload, DecodeError> {
    match decode_fast::<P, R>(bytes, answers) {
        Some(message) => Ok(Payload::Single(message)),
        None => decode(bytes, version),
    }
}

/// The members of a message object, as [`decode_fast`] sorts them.
enum Member {
    Jsonrpc,
    Id,
    Method,
    Error,
    Params,
    Result,
    Other,
}

/// One message read with [`json_read`](super::json_read), with its params typed when the
/// method came first and `P` wants it, or its result typed when `R` wants the results of the
/// method it `answers`. `None` for anything else (raw params or results, any error), which
/// [`decode`] then reads.
fn decode_fast<P: TypedParams, R: TypedResults>(bytes: &[u8], answers: Option<&str>) -> Option<Message> {
    use super::json_read::Reader;
    let mut reader = Reader::new(bytes);
    let mut envelope = Envelope { jsonrpc: None, id: None, method: None, params: None, result: None, error: None };
    let mut typed = Typed::default();
    let mut more = !reader.begin_object().ok()?;
    while more {
        let member = reader
            .key(|key| match key {
                "jsonrpc" => Member::Jsonrpc,
                "id" => Member::Id,
                "method" => Member::Method,
                "error" => Member::Error,
                "params" => Member::Params,
                "result" => Member::Result,
                _ => Member::Other,
            })
            .ok()?;
        let slot = match member {
            Member::Jsonrpc => &mut envelope.jsonrpc,
            Member::Id => &mut envelope.id,
            Member::Method => &mut envelope.method,
            Member::Error => &mut envelope.error,
            Member::Params => {
                // Typed only after the method, and never for a method name with escapes.
                let method = envelope.method.map(RawValue::get)?.strip_prefix('"')?.strip_suffix('"')?;
                if typed.params.is_some() || method.contains('\\') || !P::wants(method) {
                    return None;
                }
                typed.params = Some(P::decode(method, &mut reader).ok()?);
                more = reader.next_member().ok()?;
                continue;
            }
            Member::Result => {
                let method = answers.filter(|m| R::wants(m))?;
                if typed.result.is_some() {
                    return None;
                }
                typed.result = Some(R::decode(method, &mut reader).ok()?);
                more = reader.next_member().ok()?;
                continue;
            }
            Member::Other => {
                reader.value_text().ok()?;
                more = reader.next_member().ok()?;
                continue;
            }
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(serde_json::from_str::<&RawValue>(reader.value_text().ok()?).ok()?);
        more = reader.next_member().ok()?;
    }
    reader.end().ok()?;
    envelope.into_message_with(typed).ok()
}

/// The params or result read typed by [`decode_fast`].
#[derive(Default)]
struct Typed {
    params: Option<Body>,
    result: Option<Body>,
}

/// Decodes one frame: a message, or a batch where `version` allows batches (2025-03-26).
///
/// # Errors
/// [`DecodeError::BatchNotAllowed`] for an array in any other revision (or before the
/// revision is known), [`DecodeError::EmptyBatch`] for `[]`,
/// [`DecodeError::DuplicateIdInBatch`] for two requests of one batch with the same id, or the
/// first violation found in the message (for a batch: in the first invalid element).
pub fn decode(bytes: &[u8], version: Option<ProtocolVersion>) -> Result<Payload, DecodeError> {
    if first_significant_byte(bytes) != Some(b'[') {
        return Message::from_slice(bytes).map(Payload::Single);
    }
    let text = utf8(bytes)?;
    if !version.is_some_and(ProtocolVersion::allows_batches) {
        // Still report text that is not JSON as such.
        serde_json::from_str::<serde::de::IgnoredAny>(text).map_err(DecodeError::InvalidJson)?;
        return Err(DecodeError::BatchNotAllowed { version });
    }
    let items: Vec<&RawValue> = serde_json::from_str(text).map_err(DecodeError::InvalidJson)?;
    if items.is_empty() {
        return Err(DecodeError::EmptyBatch);
    }
    let messages = items.into_iter().map(|item| Message::from_str(item.get())).collect::<Result<Vec<_>, _>>()?;
    let mut ids = std::collections::HashSet::new();
    for message in &messages {
        if let Message::Request(request) = message {
            if !ids.insert(&request.id) {
                return Err(DecodeError::DuplicateIdInBatch(request.id.clone()));
            }
        }
    }
    Ok(Payload::Batch(messages))
}

/// The wire form of a message, borrowing everything.
#[derive(Serialize)]
struct Outgoing<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Body>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Body>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = Outgoing { jsonrpc: "2.0", id: None, method: None, params: None, result: None, error: None };
        match self {
            Message::Request(r) => {
                out.id = Some(&r.id);
                out.method = Some(&r.method);
                out.params = r.params.as_ref();
            }
            Message::Notification(n) => {
                out.method = Some(&n.method);
                out.params = n.params.as_ref();
            }
            Message::Response(r) => {
                out.id = Some(&r.id);
                out.result = Some(&r.result);
            }
            Message::Error(e) => {
                out.id = e.id.as_ref();
                out.error = Some(&e.error);
            }
        }
        out.serialize(s)
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        Message::from_str(raw.get()).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Payload::Single(m) => m.serialize(s),
            Payload::Batch(ms) => ms.serialize(s),
        }
    }
}

fn params_as<T: DeserializeOwned + Clone + 'static>(params: Option<&Body>) -> Result<T, serde_json::Error> {
    match params {
        Some(body) => body.decode(),
        None => serde_json::from_str("{}"),
    }
}

impl Request {
    /// A request with params serialized once here.
    ///
    /// # Errors
    /// When `params` cannot be serialized.
    pub fn new(
        id: impl Into<Id>,
        method: impl Into<String>,
        params: &impl Serialize,
    ) -> Result<Request, serde_json::Error> {
        Ok(Request { id: id.into(), method: method.into(), params: Some(Body::serialized(params)?) })
    }

    /// Decodes the params as `T`; absent params decode as `{}`.
    ///
    /// # Errors
    /// When the params do not fit `T`.
    pub fn params_as<T: DeserializeOwned + Clone + 'static>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params.as_ref())
    }
}

impl Notification {
    /// A notification with params serialized once here.
    ///
    /// # Errors
    /// When `params` cannot be serialized.
    pub fn new(method: impl Into<String>, params: &impl Serialize) -> Result<Notification, serde_json::Error> {
        Ok(Notification { method: method.into(), params: Some(Body::serialized(params)?) })
    }

    /// Decodes the params as `T`; absent params decode as `{}`.
    ///
    /// # Errors
    /// When the params do not fit `T`.
    pub fn params_as<T: DeserializeOwned + Clone + 'static>(&self) -> Result<T, serde_json::Error> {
        params_as(self.params.as_ref())
    }
}

impl Response {
    /// A successful response with the result serialized once here.
    ///
    /// # Errors
    /// When `result` cannot be serialized.
    pub fn new_ok(id: Id, result: &impl Serialize) -> Result<Response, serde_json::Error> {
        Ok(Response { id, result: Body::serialized(result)? })
    }

    /// Decodes the result as `T`.
    ///
    /// # Errors
    /// When the result does not fit `T`.
    pub fn result_as<T: DeserializeOwned + Clone + 'static>(&self) -> Result<T, serde_json::Error> {
        self.result.decode()
    }
}

impl ErrorResponse {
    /// An error response to request `id`.
    pub fn new(id: Option<Id>, error: ErrorObject) -> ErrorResponse {
        ErrorResponse { id, error }
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}

impl From<Notification> for Message {
    fn from(n: Notification) -> Self {
        Message::Notification(n)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

impl From<ErrorResponse> for Message {
    fn from(e: ErrorResponse) -> Self {
        Message::Error(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(text: &str) -> String {
        String::from_utf8(Message::from_str(text).unwrap().to_vec()).unwrap()
    }

    #[test]
    fn a_rate_limited_refusal_names_its_limit_and_the_wait() {
        let error = ErrorObject::rate_limited("over \"calls\"", "per \"caller\"", 1500);
        let Message::Error(e) = Message::from_str(
            &String::from_utf8(Message::Error(ErrorResponse::new(Some(Id::Number(3)), error)).to_vec()).unwrap(),
        )
        .unwrap() else {
            panic!("not an error response")
        };
        assert_eq!((e.error.code, e.error.message.as_str()), (ErrorCode(-32029), "over \"calls\""));
        let data: serde_json::Value = serde_json::from_str(e.error.data.unwrap().get()).unwrap();
        assert_eq!(data, json!({"limit": "per \"caller\"", "retryAfterMs": 1500}));
    }

    #[test]
    fn request_wire_shape() {
        let m = Message::from_str(
            r#"{"method":"tools/call","params":{"name":"echo","arguments":{"n":1.0}},"jsonrpc":"2.0","id":0}"#,
        )
        .unwrap();
        let Message::Request(r) = &m else { panic!("not a request: {m:?}") };
        assert_eq!(r.id, Id::Number(0));
        assert_eq!(r.method, "tools/call");
        // Params stay as written, number spelling included.
        assert_eq!(r.params.as_ref().unwrap().as_raw().unwrap().get(), r#"{"name":"echo","arguments":{"n":1.0}}"#);
        assert_eq!(
            String::from_utf8(m.to_vec()).unwrap(),
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"echo","arguments":{"n":1.0}}}"#
        );
    }

    #[test]
    fn string_and_integer_ids_stay_distinct() {
        assert_eq!(
            round_trip(r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#),
            r#"{"jsonrpc":"2.0","id":"1","method":"ping"}"#
        );
        assert_eq!(
            round_trip(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
        );
        assert_eq!(
            round_trip(r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#),
            r#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#
        );
        assert_ne!(Id::from("1"), Id::from(1));
    }

    #[test]
    fn notification_wire_shape() {
        assert_eq!(
            round_trip(r#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#),
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        );
        let n = Notification::new("notifications/progress", &json!({"progressToken": 5, "progress": 1})).unwrap();
        assert_eq!(
            Message::from(n).to_string(),
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":5}}"#
        );
    }

    #[test]
    fn response_wire_shapes() {
        assert_eq!(round_trip(r#"{"result":{},"jsonrpc":"2.0","id":1}"#), r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        // A null result is a result.
        assert_eq!(
            round_trip(r#"{"jsonrpc":"2.0","id":1,"result":null}"#),
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#
        );
        assert_eq!(
            round_trip(
                r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found","data":"ping"}}"#
            ),
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32601,"message":"Method not found","data":"ping"}}"#
        );
    }

    #[test]
    fn error_response_without_usable_id() {
        for text in [
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: No valid session ID provided"}}"#,
        ] {
            let Message::Error(e) = Message::from_str(text).unwrap() else { panic!() };
            assert_eq!(e.id, None);
            assert_eq!(e.error.code, ErrorCode(-32000));
        }
        let e = ErrorResponse::new(None, ErrorObject::new(ErrorCode::PARSE_ERROR, "Parse error"));
        assert_eq!(
            Message::from(e).to_string(),
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#
        );
    }

    #[test]
    fn validation_errors_are_typed() {
        type Check = fn(&DecodeError) -> bool;
        let cases: &[(&str, Check)] = &[
            (r#"{"id":1,"method":"ping"}"#, |e| matches!(e, DecodeError::MissingVersion)),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, |e| matches!(e, DecodeError::WrongVersion(_))),
            (r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#, |e| matches!(e, DecodeError::WrongVersion(_))),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, |e| matches!(e, DecodeError::InvalidId(_))),
            (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, |e| matches!(e, DecodeError::InvalidId(_))),
            (r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#, |e| matches!(e, DecodeError::InvalidId(_))),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, |e| matches!(e, DecodeError::NullRequestId)),
            (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, |e| matches!(e, DecodeError::InvalidMethod)),
            (r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}"#, |e| {
                matches!(e, DecodeError::ResultAndError)
            }),
            (r#"{"jsonrpc":"2.0","id":1}"#, |e| matches!(e, DecodeError::NotAMessage)),
            (r#"{"jsonrpc":"2.0","result":{}}"#, |e| matches!(e, DecodeError::MissingResponseId)),
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}"#, |e| matches!(e, DecodeError::MethodWithResult)),
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":3}"#, |e| matches!(e, DecodeError::InvalidParams)),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":"m"}}"#, |e| {
                matches!(e, DecodeError::InvalidError(_))
            }),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#, |e| matches!(e, DecodeError::InvalidError(_))),
            (r#"{"jsonrpc":"2.0","id":1,"#, |e| matches!(e, DecodeError::InvalidJson(_))),
            ("42", |e| matches!(e, DecodeError::NotAnObject)),
            (r#"[{"jsonrpc":"2.0","method":"x"}]"#, |e| matches!(e, DecodeError::BatchNotAllowed { .. })),
        ];
        for (text, check) in cases {
            let err = Message::from_str(text).expect_err(text);
            assert!(check(&err), "{text}: unexpected {err:?}");
            assert!(!err.to_string().ends_with('.'), "{err}");
        }
        assert_eq!(Message::from_str("{").unwrap_err().code(), ErrorCode::PARSE_ERROR);
        assert_eq!(Message::from_str("{}").unwrap_err().code(), ErrorCode::INVALID_REQUEST);
    }

    #[test]
    fn invalid_utf8_is_reported_as_such() {
        let err = Message::from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}").unwrap_err();
        assert!(matches!(err, DecodeError::InvalidUtf8 { valid_up_to: 27 }), "{err:?}");
        assert_eq!(err.code(), ErrorCode::PARSE_ERROR);
    }

    #[test]
    fn batches_only_in_2025_03_26() {
        let batch =
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#;
        let Payload::Batch(ms) = decode(batch, Some(ProtocolVersion::V2025_03_26)).unwrap() else { panic!() };
        assert_eq!(ms.len(), 2);
        assert_eq!(ms[0].method(), Some("ping"));
        for v in [
            None,
            Some(ProtocolVersion::V2024_11_05),
            Some(ProtocolVersion::V2025_06_18),
            Some(ProtocolVersion::V2025_11_25),
        ] {
            let err = decode(batch, v).unwrap_err();
            assert!(matches!(err, DecodeError::BatchNotAllowed { version } if version == v), "{err:?}");
        }
        assert!(matches!(decode(b"[]", Some(ProtocolVersion::V2025_03_26)), Err(DecodeError::EmptyBatch)));
        let twice = br#"[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","id":"a","method":"tools/list"}]"#;
        let err = decode(twice, Some(ProtocolVersion::V2025_03_26)).unwrap_err();
        assert!(matches!(&err, DecodeError::DuplicateIdInBatch(Id::String(s)) if s == "a"), "{err:?}");
        assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
        assert_eq!(
            err.to_string(),
            r#"two requests of one json-rpc batch carry the id "a": each request needs its own"#
        );
        // The same id on a request and on a response is not a clash: they travel in opposite directions.
        let crossing = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"result":{}}]"#;
        assert!(decode(crossing, Some(ProtocolVersion::V2025_03_26)).is_ok());
        assert!(matches!(decode(b"[1,", Some(ProtocolVersion::V2025_11_25)), Err(DecodeError::InvalidJson(_))));
        let bad_item = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"id":2}]"#;
        assert!(matches!(decode(bad_item, Some(ProtocolVersion::V2025_03_26)), Err(DecodeError::MissingVersion)));
        assert_eq!(
            serde_json::to_string(&decode(batch, Some(ProtocolVersion::V2025_03_26)).unwrap()).unwrap(),
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#
        );
    }

    #[test]
    fn unknown_top_level_members_are_ignored() {
        assert_eq!(
            round_trip(r#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":[1,2]}"#),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
        );
    }

    #[test]
    fn typed_params_and_results() {
        #[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
        struct Echo {
            text: String,
        }
        let r = Request::new(3, "tools/call", &Echo { text: "hi".into() }).unwrap();
        assert_eq!(r.params_as::<Echo>().unwrap(), Echo { text: "hi".into() });
        let resp = Response::new_ok(Id::from(3), &json!({"content": []})).unwrap();
        assert_eq!(Message::from(resp.clone()).to_string(), r#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#);
        assert_eq!(resp.result_as::<serde_json::Value>().unwrap(), json!({"content": []}));
        let ping = Message::from_str(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).unwrap();
        let Message::Request(ping) = ping else { panic!() };
        assert_eq!(ping.params_as::<serde_json::Map<String, serde_json::Value>>().unwrap().len(), 0);
    }

    #[test]
    fn typed_bodies_pass_without_serializing_and_encode_on_demand() {
        #[derive(Serialize, Deserialize, PartialEq, Debug, Clone)]
        struct Echo {
            text: String,
        }
        let body = Body::typed(Echo { text: "x".repeat(4) });
        assert!(body.as_raw().is_none());
        assert_eq!(format!("{body:?}"), format!("Typed({})", std::any::type_name::<Echo>()));
        // Same type: handed over, no JSON involved.
        let shared = body.clone();
        assert_eq!(body.decode::<Echo>().unwrap().text, "xxxx");
        assert_eq!(shared.into_decoded::<Echo>().unwrap().text, "xxxx");
        // Another type: goes through JSON.
        let as_value: serde_json::Value = body.decode().unwrap();
        assert_eq!(as_value, json!({"text": "xxxx"}));
        // On a wire it is ordinary JSON.
        let response = Message::Response(Response { id: Id::from(1), result: body });
        assert_eq!(response.to_string(), r#"{"jsonrpc":"2.0","id":1,"result":{"text":"xxxx"}}"#);
    }

    #[test]
    fn write_json_matches_the_serde_form_for_every_kind() {
        let typed = || Some(Body::typed(json!({"text": "a\nb", "n": 1.5})));
        let messages = [
            Message::Request(Request { id: Id::from(7), method: "tools/call".into(), params: typed() }),
            Message::Request(Request { id: Id::from("x"), method: "ping".into(), params: None }),
            Message::Notification(Notification { method: "notifications/progress".into(), params: typed() }),
            Message::from_str(r#"{"jsonrpc":"2.0","id":1,"result":{"a":[1,2.0]}}"#).unwrap(),
            Message::Response(Response { id: Id::from(2), result: typed().unwrap() }),
            Message::Error(ErrorResponse::new(None, ErrorObject::new(ErrorCode::PARSE_ERROR, "bad"))),
            Message::from_str(r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"m","data":{"k":null}}}"#)
                .unwrap(),
        ];
        for message in messages {
            let mut direct = Vec::new();
            message.write_json(&mut direct).unwrap();
            assert_eq!(String::from_utf8(direct).unwrap(), serde_json::to_string(&message).unwrap());
        }
    }

    #[test]
    fn a_typed_body_that_cannot_serialize_is_an_error_not_garbage() {
        let mut bad = std::collections::HashMap::new();
        bad.insert((1, 2), "tuple keys are not JSON");
        let message = Message::Response(Response { id: Id::from(1), result: Body::typed(bad) });
        assert!(message.write_json(&mut Vec::new()).is_err());
    }

    #[test]
    fn message_embeds_in_other_json() {
        #[derive(Deserialize)]
        struct Line {
            msg: Message,
        }
        let line: Line = serde_json::from_str(r#"{"seq":1,"msg":{"jsonrpc":"2.0","id":"a","method":"ping"}}"#).unwrap();
        assert_eq!(line.msg.id(), Some(&Id::from("a")));
        assert!(serde_json::from_str::<Line>(r#"{"msg":{"id":1}}"#).is_err());
    }

    /// `decode_typed` (server side) and `decode_answer` for `tools/call` (client side) against
    /// `decode`: the same message (as JSON) or the same error. Returns whether the answer came
    /// with a typed result.
    #[track_caller]
    fn typed_decodes_alike(bytes: &[u8]) -> bool {
        typed_decodes_alike_counting(bytes).1
    }

    /// As [`typed_decodes_alike`]; returns whether the params came typed, and the result.
    #[track_caller]
    fn typed_decodes_alike_counting(bytes: &[u8]) -> (bool, bool) {
        use crate::proto::mcp_types::{ClientTypedResults, ServerTypedParams};
        let version = Some(ProtocolVersion::V2025_03_26);
        let raw = || decode(bytes, version);
        let request = decode_typed::<ServerTypedParams>(bytes, version);
        let answer = decode_answer::<ClientTypedResults>(bytes, version, "tools/call");
        let typed_params = matches!(&request, Ok(Payload::Single(Message::Request(r)))
            if r.params.as_ref().is_some_and(|p| p.as_raw().is_none()));
        let typed_result = matches!(&answer, Ok(Payload::Single(Message::Response(r))) if r.result.as_raw().is_none());
        for typed in [request, answer] {
            match (raw(), typed) {
                (Ok(Payload::Single(a)), Ok(Payload::Single(b))) => {
                    let json = |m: &Message| serde_json::from_slice::<serde_json::Value>(&m.to_vec()).unwrap();
                    assert_eq!(json(&a), json(&b), "{}", String::from_utf8_lossy(bytes));
                }
                (Ok(Payload::Batch(a)), Ok(Payload::Batch(b))) => assert_eq!(a.len(), b.len()),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{}", String::from_utf8_lossy(bytes)),
                (a, b) => panic!("{}: {a:?} against {b:?}", String::from_utf8_lossy(bytes)),
            }
        }
        (typed_params, typed_result)
    }

    #[test]
    fn tools_call_results_come_typed_and_everything_else_as_decode_gives_it() {
        use crate::proto::mcp_types::{CallToolOutput, ClientTypedResults};
        // The TypeScript SDK writes the result before the id.
        let answer = br#"{"result":{"content":[{"type":"text","text":"hi \u00e9"}],"isError":false,"x":1},"jsonrpc":"2.0","id":7}"#;
        let Ok(Payload::Single(Message::Response(r))) = decode_answer::<ClientTypedResults>(answer, None, "tools/call")
        else {
            panic!("not a response")
        };
        assert_eq!(r.id, Id::Number(7));
        let Some(CallToolOutput::Result(result)) = r.result.typed_as::<CallToolOutput>() else {
            panic!("typed result")
        };
        assert_eq!(result.content.len(), 1);
        assert_eq!(result.is_error, Some(false));
        assert_eq!(result.extra["x"], 1);
        assert!(typed_decodes_alike(answer));
        // Other requests' results, and results that do not fit, stay raw.
        let listed = br#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#;
        let Ok(Payload::Single(Message::Response(r))) = decode_answer::<ClientTypedResults>(listed, None, "tools/list")
        else {
            panic!("not a response")
        };
        assert!(r.result.as_raw().is_some());
        for (text, typed) in [
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#, true),
            (
                r#"{"jsonrpc":"2.0","id":"a","result":{"task":{"taskId":"t","status":"working","createdAt":"2025-11-25T00:00:00Z","lastUpdatedAt":"2025-11-25T00:00:00Z","ttl":null}}}"#,
                true,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#, true),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":"text"}}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":[1]}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":null}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text"}]}}"#, false),
            // Messages that are not responses.
            (r#"{"jsonrpc":"2.0","id":1,"method":"elicitation/create","params":{"message":"m"}}"#, false),
            (r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}"#, false),
            // Envelope errors.
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"result":{"content":[]}}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"method":"x"}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]},"error":{"code":1,"message":"m"}}"#, false),
            (r#"{"jsonrpc":"2.0","result":{"content":[]}}"#, false),
            (r#"{"jsonrpc":"2.0","id":null,"result":{"content":[]}}"#, false),
            (r#"{"jsonrpc":"1.0","id":1,"result":{"content":[]}}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}} x"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]"#, false),
            (r#"[{"jsonrpc":"2.0","id":1,"result":{"content":[]}}]"#, false),
        ] {
            assert_eq!(typed_decodes_alike(text.as_bytes()), typed, "{text}");
        }
        assert!(!typed_decodes_alike(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}"
        ));
    }

    #[test]
    fn tools_call_params_come_typed_and_everything_else_as_decode_gives_it() {
        use crate::proto::mcp_types::{CallToolRequestParams, ServerTypedParams};
        let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi \u00e9"},"_meta":{"progressToken":3}}}"#;
        let Ok(Payload::Single(Message::Request(r))) = decode_typed::<ServerTypedParams>(call, None) else {
            panic!("not a request")
        };
        let params = r.params.as_ref().unwrap().typed_as::<CallToolRequestParams>().expect("typed params");
        assert_eq!(params.name, "echo");
        assert_eq!(params.arguments.as_ref().unwrap()["text"], "hi é");
        typed_decodes_alike(call);
        for text in [
            // Params before the method stay raw; other methods are untouched.
            r#"{"jsonrpc":"2.0","id":1,"params":{"name":"echo"},"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#,
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#,
            // Params that do not fit the type are left to the handler, raw, as before.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1,2]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"text"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":7}}"#,
            // Escaped method names and keys.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"\u006dethod":"tools/call","params":{"name":"a"}}"#,
            // Envelope errors.
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"x","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{},"params":{"name":"a"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} x"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}]"#,
            r#"[]"#,
            "",
        ] {
            typed_decodes_alike(text.as_bytes());
        }
        typed_decodes_alike(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}");
    }

    #[test]
    fn every_bundled_recording_decodes_typed_as_it_decodes_raw_on_both_sides() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/conformance/recordings");
        let (mut calls, mut typed_params, mut typed_results) = (0, 0, 0);
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                let Some(message) = value.get("msg") else { continue };
                let bytes = serde_json::to_vec(message).unwrap();
                // Every response is tried as a tools/call answer: results of other shapes must
                // come out raw and alike too.
                let (params, result) = typed_decodes_alike_counting(&bytes);
                typed_params += usize::from(params);
                typed_results += usize::from(result);
                calls += usize::from(message["method"] == "tools/call" && message["params"]["name"].is_string());
            }
        }
        assert!(calls > 20, "{calls} tools/call requests in the recordings");
        assert_eq!(typed_params, calls, "every recorded tools/call request with a name decodes typed");
        assert!(typed_results > 20, "{typed_results} typed tools/call results in the recordings");
    }
}
