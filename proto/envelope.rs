//! The 2026-07-28 per-request envelope: reading a request's `params._meta`
//! (`io.modelcontextprotocol/protocolVersion`, `clientCapabilities`, `clientInfo`, `logLevel`),
//! the validation ladder a server runs on it, the errors the revision defines for it (-32602,
//! -32020 `HeaderMismatch`, -32021 `MissingRequiredClientCapability`, -32022
//! `UnsupportedProtocolVersion`) with their HTTP statuses, the Streamable HTTP request headers
//! (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` from `x-mcp-header`, the `=?base64?…?=` value
//! encoding), and the members every 2026 result carries (`resultType`, caching fields).
//!
//! A request is of the 2026 era when its `_meta` names a protocol version; telling that costs a
//! substring search of the params' text, not a parse, so handshake-era requests pay next to
//! nothing ([`mentions_envelope`]).
//!
//! Not here: IO (headers are read through a closure), what a method means, or the typed
//! `_meta` structs themselves ([`RequestMeta`] and friends in `mcp_types`).
//!
//! Spec (2026-07-28): `basic/index` ("Per-request protocol fields", "Error Codes"),
//! `basic/versioning`, `basic/transports/streamable-http` ("Request Metadata").

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::jsonrpc::{Body, ErrorCode, ErrorObject};
use super::mcp_types::{
    CacheScope, CallToolOutput, CallToolRequestParams, CallToolResult, ClientCapabilities, Implementation,
    LoggingLevel, RequestMeta, UnsupportedProtocolVersionData, HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use super::request_headers::{param_headers, ParamHeader};
use super::version::ProtocolVersion;

/// `_meta` key of the request's protocol version.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's name and version.
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the log level the client wants for this request.
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key of the server's name and version.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key naming the `subscriptions/listen` stream it belongs to.
pub const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// Whether `_meta` key `key` is reserved for MCP: its prefix's second label is
/// `modelcontextprotocol` or `mcp` (`io.modelcontextprotocol/…`, `dev.mcp/…`; not
/// `com.example.mcp/…`), per the
/// [`_meta` rules](https://modelcontextprotocol.io/specification/2026-07-28/basic/index#meta).
pub fn is_reserved_meta_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else { return false };
    prefix.split('.').nth(1).is_some_and(|label| label == "modelcontextprotocol" || label == "mcp")
}

/// The HTTP header carrying the JSON-RPC method.
pub const METHOD_HEADER: &str = "mcp-method";
/// The HTTP header carrying `params.name` / `params.uri`.
pub const NAME_HEADER: &str = "mcp-name";
/// The HTTP header carrying the protocol version.
pub const VERSION_HEADER: &str = "mcp-protocol-version";
/// Prefix of the headers that mirror `x-mcp-header` tool arguments.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";
/// The JSON Schema annotation naming an argument's `Mcp-Param-*` header.
pub const X_MCP_HEADER: &str = "x-mcp-header";

/// What a 2026-07-28 request says about its client, read from its `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The revision the request speaks.
    pub protocol_version: ProtocolVersion,
    /// The client's capabilities for this request.
    pub client_capabilities: ClientCapabilities,
    /// Who the client is (optional: a SHOULD of the revision).
    pub client_info: Option<Implementation>,
    /// The log level the client wants; `None`: no `notifications/message` for this request.
    pub log_level: Option<LoggingLevel>,
}

/// Whether `params` may carry a `_meta` protocol version. `false` is certain; `true` means
/// "parse to know". A substring search: `"…/protocolVersion"` (also matches an escaped `\/`),
/// or any `\u` escape, which could spell the key otherwise.
pub fn mentions_envelope(params: &Body) -> bool {
    if let Some(call) = params.typed_as::<CallToolRequestParams>() {
        return call.meta.as_ref().is_some_and(|m| m.protocol_version.is_some());
    }
    match params.to_raw() {
        Ok(raw) => {
            let text = raw.get().as_bytes();
            contains(text, b"/protocolVersion\"") || contains(text, b"\\u")
        }
        Err(_) => false,
    }
}

#[cfg(feature = "framing")]
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(not(feature = "framing"))]
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether a request's `_meta` names a protocol version: it is of the per-request era.
pub fn names_revision(params: Option<&Body>) -> bool {
    params.is_some_and(|p| {
        mentions_envelope(p) && request_meta(p).is_ok_and(|m| m.is_some_and(|m| m.protocol_version.is_some()))
    })
}

/// Whether a notification's `_meta` names a `subscriptions/listen` stream (2026-07-28).
pub fn names_subscription(params: Option<&Body>) -> bool {
    #[derive(Deserialize)]
    struct Meta {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        subscription_id: Option<IgnoredAny>,
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Meta>,
    }
    let Some(raw) = params.and_then(|p| p.to_raw().ok()) else { return false };
    contains(raw.get().as_bytes(), b"subscriptionId")
        && serde_json::from_str::<Params>(raw.get()).is_ok_and(|p| p.meta.is_some_and(|m| m.subscription_id.is_some()))
}

/// The request's `_meta`, when its params are an object that has one; `Err` when the params or
/// `_meta` do not decode.
///
/// Borrowed from a `tools/call` decoded in the framing pass (the hot path: no copy of the
/// capabilities and client info only to look at them).
fn request_meta(params: &Body) -> Result<Option<Cow<'_, RequestMeta>>, String> {
    if let Some(call) = params.typed_as::<CallToolRequestParams>() {
        return Ok(call.meta.as_deref().map(Cow::Borrowed));
    }
    #[derive(Deserialize)]
    struct Params {
        #[serde(rename = "_meta", default)]
        meta: Option<Box<RawValue>>,
    }
    let raw = params.to_raw().map_err(|e| e.to_string())?;
    let parsed: Params = serde_json::from_str(raw.get()).map_err(|e| format!("params: {e}"))?;
    match parsed.meta {
        None => Ok(None),
        Some(meta) => {
            serde_json::from_str(meta.get()).map(|m| Some(Cow::Owned(m))).map_err(|e| format!("params._meta: {e}"))
        }
    }
}

/// -32602 with `message`.
fn invalid_params(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(ErrorCode::INVALID_PARAMS, message)
}

/// Reads the envelope of a request whose params name a protocol version: `None` when they do
/// not (a handshake-era request), `Some(Err)` when the envelope is refused (see [`check`]).
pub fn read(params: Option<&Body>, supported: &[ProtocolVersion]) -> Option<Result<Envelope, ErrorObject>> {
    let params = params?;
    if !mentions_envelope(params) {
        return None;
    }
    match request_meta(params) {
        Ok(Some(meta)) if meta.protocol_version.is_some() => Some(from_meta(&meta, supported)),
        Ok(_) => None,
        // Text that mentions the key but does not decode: the 2026 ladder speaks for it.
        Err(e) => Some(Err(invalid_params(format!("Invalid params: {e}")))),
    }
}

/// As [`read`], answering with `previous` itself when the request's envelope says just what it
/// says (its version, capabilities, client info and log level compare equal): a client stamps
/// the same envelope on every request, so a connection keeps the last one it read and its
/// requests share it, where each would otherwise copy the capabilities and client info into an
/// envelope of its own. `previous` must have been read with the same `supported`.
pub fn read_shared(
    params: Option<&Body>,
    supported: &[ProtocolVersion],
    previous: Option<&Arc<Envelope>>,
) -> Option<Result<Arc<Envelope>, ErrorObject>> {
    let params = params?;
    if !mentions_envelope(params) {
        return None;
    }
    match request_meta(params) {
        Ok(Some(meta)) if meta.protocol_version.is_some() => match previous {
            Some(previous) if previous.says_what(&meta) => Some(Ok(previous.clone())),
            _ => Some(from_meta(&meta, supported).map(Arc::new)),
        },
        Ok(_) => None,
        Err(e) => Some(Err(invalid_params(format!("Invalid params: {e}")))),
    }
}

impl Envelope {
    /// Whether `meta` reads as this envelope: the same version string, capabilities, client
    /// info and log level (an accepted envelope, so the version was one served).
    fn says_what(&self, meta: &RequestMeta) -> bool {
        meta.protocol_version.as_deref() == Some(self.protocol_version.as_str())
            && meta.client_capabilities.as_ref() == Some(&self.client_capabilities)
            && meta.client_info == self.client_info
            && meta.log_level.as_deref().and_then(log_level) == self.log_level
    }
}

/// The level a `logLevel` string asks for; `None` for one this crate does not know (it asks
/// for nothing we can honour: no log messages).
fn log_level(level: &str) -> Option<LoggingLevel> {
    // The set is closed and its wire names are `as_str`'s: no decoder (and no copy of the
    // string into a `Value`) on every request that names a level.
    LoggingLevel::ALL.into_iter().find(|known| known.as_str() == level)
}

/// The ladder for a request known to be of the 2026 era (over HTTP: its `MCP-Protocol-Version`
/// header said so): `_meta` with a protocol version and client capabilities (else -32602), a
/// version this server serves per request (else -32022).
///
/// # Errors
/// The error object to answer with.
pub fn check(params: Option<&Body>, supported: &[ProtocolVersion]) -> Result<Envelope, ErrorObject> {
    let meta = match params.map(request_meta) {
        None | Some(Ok(None)) => {
            return Err(invalid_params(format!(
                "params._meta must be an object carrying {PROTOCOL_VERSION_KEY:?} and {CLIENT_CAPABILITIES_KEY:?}"
            )))
        }
        Some(Err(e)) => return Err(invalid_params(format!("Invalid params: {e}"))),
        Some(Ok(Some(meta))) => meta,
    };
    from_meta(&meta, supported)
}

/// The whole ladder over Streamable HTTP, in the spec's order: the `_meta` pair (-32602), then
/// the headers against the body ([`check_headers`], -32020), then the version (-32022) — so a
/// client whose header and body disagree is told that rather than that its body's version is
/// unsupported.
///
/// # Errors
/// The error object to answer with.
pub fn check_http<'h>(
    method: &str,
    params: Option<&Body>,
    supported: &[ProtocolVersion],
    header: impl Fn(&str) -> Result<Option<&'h str>, ()>,
) -> Result<Envelope, ErrorObject> {
    let meta = match params.map(request_meta) {
        None | Some(Ok(None)) => {
            return Err(invalid_params(format!(
                "params._meta must be an object carrying {PROTOCOL_VERSION_KEY:?} and {CLIENT_CAPABILITIES_KEY:?}"
            )))
        }
        Some(Err(e)) => return Err(invalid_params(format!("Invalid params: {e}"))),
        Some(Ok(Some(meta))) => meta,
    };
    required_pair(&meta)?;
    check_headers(method, params, meta.protocol_version.as_deref().unwrap_or_default(), header)?;
    from_meta(&meta, supported)
}

/// -32602 unless `_meta` has both a protocol version and client capabilities.
fn required_pair(meta: &RequestMeta) -> Result<(), ErrorObject> {
    let missing: Vec<&str> = [
        (meta.protocol_version.is_none(), PROTOCOL_VERSION_KEY),
        (meta.client_capabilities.is_none(), CLIENT_CAPABILITIES_KEY),
    ]
    .into_iter()
    .filter_map(|(absent, key)| absent.then_some(key))
    .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(invalid_params(format!("params._meta is missing {}", missing.join(" and "))))
    }
}

fn from_meta(meta: &RequestMeta, supported: &[ProtocolVersion]) -> Result<Envelope, ErrorObject> {
    required_pair(meta)?;
    let requested = meta.protocol_version.as_deref().expect("checked above");
    let protocol_version = match requested.parse::<ProtocolVersion>() {
        Ok(v) if supported.contains(&v) => v,
        _ => return Err(unsupported_version(requested, supported)),
    };
    Ok(Envelope {
        protocol_version,
        client_capabilities: meta.client_capabilities.clone().expect("checked above"),
        client_info: meta.client_info.clone(),
        log_level: meta.log_level.as_deref().and_then(log_level),
    })
}

/// -32022 `UnsupportedProtocolVersion`, listing `supported` and echoing `requested`.
pub fn unsupported_version(requested: &str, supported: &[ProtocolVersion]) -> ErrorObject {
    let data = UnsupportedProtocolVersionData {
        supported: supported.iter().map(|v| v.as_str().to_owned()).collect(),
        requested: requested.to_owned(),
        extra: Map::new(),
    };
    ErrorObject::new(ErrorCode(UNSUPPORTED_PROTOCOL_VERSION), "Unsupported protocol version")
        .with_data(&data)
        .expect("strings serialize")
}

/// -32021 `MissingRequiredClientCapability`: `required` (e.g. `{"sampling": {}}`) in `data`.
pub fn missing_capability(required: &ClientCapabilities, what: &str) -> ErrorObject {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Data<'a> {
        required_capabilities: &'a ClientCapabilities,
    }
    ErrorObject::new(
        ErrorCode(MISSING_REQUIRED_CLIENT_CAPABILITY),
        format!("Missing required client capability: {what}"),
    )
    .with_data(&Data { required_capabilities: required })
    .expect("capabilities serialize")
}

/// -32020 `HeaderMismatch` with `message`.
pub fn header_mismatch(message: impl Into<String>) -> ErrorObject {
    ErrorObject::new(ErrorCode(HEADER_MISMATCH), message.into())
}

/// The HTTP status a 2026-07-28 error answer goes out with: 404 for -32601, 400 for the
/// envelope and header errors, parse errors and invalid requests; `None` (200) otherwise.
pub fn http_status(code: ErrorCode) -> Option<u16> {
    match code.0 {
        -32601 => Some(404),
        -32700 | -32600 | -32602 => Some(400),
        c if c == HEADER_MISMATCH || c == MISSING_REQUIRED_CLIENT_CAPABILITY || c == UNSUPPORTED_PROTOCOL_VERSION => {
            Some(400)
        }
        _ => None,
    }
}

/// The params member mirrored into `Mcp-Name` for `method`, if any.
pub fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        // The tasks extension (SEP-2663).
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// The header rungs of the ladder (Streamable HTTP, "Server Validation"): `MCP-Protocol-Version`
/// equals the `_meta` version, `Mcp-Method` the method, `Mcp-Name` (decoded) the name or URI.
/// `header` returns a header's value (names in lowercase), `Err(())` when it appears more than
/// once. Values are compared after trimming surrounding whitespace.
///
/// # Errors
/// -32020 naming the first header that does not match.
pub fn check_headers<'h>(
    method: &str,
    params: Option<&Body>,
    version: &str,
    header: impl Fn(&str) -> Result<Option<&'h str>, ()>,
) -> Result<(), ErrorObject> {
    let get = |name: &str| {
        header(name)
            .map(|v| v.map(str::trim))
            .map_err(|()| header_mismatch(format!("Header mismatch: {name} appears more than once")))
    };
    if get(VERSION_HEADER)? != Some(version) {
        return Err(header_mismatch(
            "Header mismatch: MCP-Protocol-Version does not match params._meta's protocol version",
        ));
    }
    if get(METHOD_HEADER)? != Some(method) {
        return Err(header_mismatch("Header mismatch: Mcp-Method does not match the request's method"));
    }
    let Some(member) = name_member(method) else { return Ok(()) };
    let Some(body_value) = params.and_then(|p| string_member(p, member)) else { return Ok(()) };
    match get(NAME_HEADER)?.map(decode_header_value) {
        Some(Some(value)) if value == body_value => Ok(()),
        Some(_) => Err(header_mismatch(format!("Header mismatch: Mcp-Name does not match params.{member}"))),
        None => Err(header_mismatch(format!("Header mismatch: Mcp-Name is required for {method}"))),
    }
}

/// A top-level string member of `params`.
fn string_member(params: &Body, member: &str) -> Option<String> {
    if let Some(call) = params.typed_as::<CallToolRequestParams>() {
        return (member == "name").then(|| call.name.clone());
    }
    let raw = params.to_raw().ok()?;
    let map: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    map.get(member)?.as_str().map(str::to_owned)
}

/// Decodes a header value that may use the `=?base64?…?=` sentinel; `None` for a malformed
/// sentinel (bad or non-canonical base64, not UTF-8). Other values are returned as they are.
pub fn decode_header_value(value: &str) -> Option<String> {
    match value.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) {
        None => Some(value.to_owned()),
        Some(payload) => String::from_utf8(decode_base64_strict(payload)?).ok(),
    }
}

/// A value as a header carries it (Streamable HTTP, "Value Encoding"): as it is when it is
/// plain visible ASCII (spaces inside allowed) without surrounding whitespace and not itself
/// of the sentinel's shape; else `=?base64?{UTF-8 as Base64}?=`.
pub fn encode_header_value(value: &str) -> Cow<'_, str> {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("=?base64?{}?=", encode_base64(value.as_bytes())))
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

pub(crate) fn encode_base64(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 with padding; `None` unless `text` is exactly what [`encode_base64`] would
/// write for the bytes it holds (length a multiple of 4, only alphabet characters, zero
/// trailing bits).
pub(crate) fn decode_base64_strict(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    if bytes.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for (i, chunk) in bytes.chunks(4).enumerate() {
        let last = i + 1 == bytes.len() / 4;
        let pad = chunk.iter().rev().take_while(|&&b| b == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n: u32 = 0;
        for &b in &chunk[..4 - pad] {
            let v = BASE64.iter().position(|&c| c == b)? as u32;
            n = (n << 6) | v;
        }
        n <<= 6 * pad as u32;
        let decoded = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&decoded[..3 - pad]);
    }
    (encode_base64(&out) == text).then_some(out)
}

/// Checks a `tools/call`'s `Mcp-Param-*` headers against its arguments, for the annotated
/// properties of the tool's input schema: present together and equal after decoding (integers
/// compared as numbers), or absent together (`null` counts as absent).
///
/// # Errors
/// -32020 naming the first header that fails.
pub fn check_param_headers<'h>(
    input_schema: &Value,
    arguments: &Map<String, Value>,
    header: impl Fn(&str) -> Result<Option<&'h str>, ()>,
) -> Result<(), ErrorObject> {
    // Declarations a client must refuse (tools, "x-mcp-header") designate nothing: a
    // conforming client drops such a tool rather than send its headers.
    for ParamHeader { name: token, path, integer } in param_headers(input_schema).unwrap_or_default() {
        let name = format!("Mcp-Param-{token}");
        let raw = header(&name.to_ascii_lowercase())
            .map_err(|()| header_mismatch(format!("Header mismatch: {name} appears more than once")))?
            .map(str::trim);
        let mut value = Some(arguments.get(&path[0]).unwrap_or(&Value::Null));
        for key in &path[1..] {
            value = value.and_then(|v| v.get(key));
        }
        let value = value.filter(|v| !v.is_null());
        let rendered = value.and_then(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Bool(b) => Some(b.to_string()),
            Value::Number(n) => Some(n.to_string()),
            _ => None,
        });
        let argument = path.join(".");
        match (raw, rendered) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(header_mismatch(format!("Header mismatch: {name} is present but {argument} is not")))
            }
            (None, Some(_)) => {
                return Err(header_mismatch(format!("Header mismatch: {name} is missing but {argument} is present")))
            }
            (Some(raw), Some(rendered)) => {
                let Some(decoded) = decode_header_value(raw) else {
                    return Err(header_mismatch(format!("Header mismatch: {name} is not valid base64")));
                };
                let numeric = integer
                    && value.and_then(Value::as_f64).zip(decoded.parse::<f64>().ok()).is_some_and(|(a, b)| a == b);
                if decoded != rendered && !numeric {
                    return Err(header_mismatch(format!("Header mismatch: {name} does not match {argument}")));
                }
            }
        }
    }
    Ok(())
}

/// The members a 2026-07-28 result gets when its handler did not set them.
#[derive(Debug, Clone, Default)]
pub struct ResultStamp {
    /// `ttlMs` (cacheable results only).
    pub ttl_ms: Option<u64>,
    /// `cacheScope` (cacheable results only).
    pub cache_scope: Option<CacheScope>,
    /// `_meta["io.modelcontextprotocol/serverInfo"]`, written once ([`ServerInfoMeta::new`]).
    pub server_info: Option<ServerInfoMeta>,
}

/// The `_meta` member a 2026-07-28 result gets, `{"io.modelcontextprotocol/serverInfo": …}`,
/// as JSON text written once per server (a clone is a reference count), not once per result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfoMeta(Arc<str>);

impl ServerInfoMeta {
    /// The member's value for `info`.
    ///
    /// # Errors
    /// When `info` cannot be serialized (an icon or other member that does not).
    pub fn new(info: &Implementation) -> Result<ServerInfoMeta, serde_json::Error> {
        Ok(ServerInfoMeta(format!("{{\"{SERVER_INFO_KEY}\":{}}}", serde_json::to_string(info)?).into()))
    }
}

/// Adds `resultType: "complete"` (and the stamp's members) to a result object that lacks them.
/// The result's text is not re-encoded: its top-level keys are read (values skipped) and the
/// new members are written in front. A result that is not an object is returned unchanged.
///
/// # Errors
/// When a typed body cannot be serialized.
pub fn stamp_result(body: Body, stamp: &ResultStamp) -> Result<Body, serde_json::Error> {
    if let Some(stamped) = StampedCall::new(&body, stamp) {
        return Ok(Body::typed(stamped));
    }
    // A typed result is written with our writer (its string escaper is the fast one), not
    // serde_json's: a 64 KiB tool result is written once here and never again.
    let written;
    let text = match &body {
        Body::Raw(raw) => raw.get(),
        Body::Typed(value) => {
            let mut out = Vec::with_capacity(value.estimated_len() + 64);
            value.write_json(&mut out)?;
            written = String::from_utf8(out).expect("JSON is UTF-8");
            written.as_str()
        }
    };
    let Ok(keys) = top_level_keys(text) else { return Ok(body) };
    let has = |k: &str| keys.iter().any(|key| key == k);
    let mut members = String::new();
    let mut push = |key: &str, value: &str| {
        members.push('"');
        members.push_str(key);
        members.push_str("\":");
        members.push_str(value);
        members.push(',');
    };
    if !has("resultType") {
        push("resultType", "\"complete\"");
    }
    if let (Some(ttl), false) = (stamp.ttl_ms, has("ttlMs")) {
        push("ttlMs", &ttl.to_string());
    }
    if let (Some(scope), false) = (&stamp.cache_scope, has("cacheScope")) {
        push("cacheScope", &serde_json::to_string(scope)?);
    }
    if let (Some(info), false) = (&stamp.server_info, has("_meta")) {
        push("_meta", &info.0);
    }
    if members.is_empty() {
        return Ok(body);
    }
    let rest = text.trim_start().strip_prefix('{').expect("an object");
    if rest.trim_start().starts_with('}') {
        members.pop();
    }
    let mut out = String::with_capacity(1 + members.len() + rest.len());
    out.push('{');
    out.push_str(&members);
    out.push_str(rest);
    Ok(Body::typed(Written(out)))
}

/// A tool's typed result (a [`CallToolOutput::Result`] none of whose members the stamp adds)
/// with the stamp's members: written in front of the result's own, in the same pass, by
/// whichever serializer writes the message. Its members are known from its fields, so there
/// is no text to write first and scan for them, and nothing is copied.
struct StampedCall {
    /// The typed body holding the result.
    call: Body,
    ttl_ms: Option<u64>,
    cache_scope: Option<CacheScope>,
    server_info: Option<ServerInfoMeta>,
}

impl StampedCall {
    /// Members the stamp may add; a result that has one of them goes the general way.
    const MEMBERS: [&'static str; 4] = ["resultType", "ttlMs", "cacheScope", "_meta"];

    fn new(body: &Body, stamp: &ResultStamp) -> Option<StampedCall> {
        let CallToolOutput::Result(result) = body.typed_as::<CallToolOutput>()? else { return None };
        if result.result_type.is_some()
            || result.meta.is_some()
            || Self::MEMBERS.iter().any(|member| result.extra.contains_key(*member))
        {
            return None;
        }
        Some(StampedCall {
            call: body.clone(),
            ttl_ms: stamp.ttl_ms,
            cache_scope: stamp.cache_scope.clone(),
            server_info: stamp.server_info.clone(),
        })
    }
}

impl serde::Serialize for StampedCall {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Stamped<'a> {
            #[serde(rename = "resultType")]
            result_type: &'static str,
            #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
            ttl_ms: Option<u64>,
            #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
            cache_scope: Option<&'a CacheScope>,
            #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
            meta: Option<Verbatim<'a>>,
            #[serde(flatten)]
            result: &'a CallToolResult,
        }
        let Some(CallToolOutput::Result(result)) = self.call.typed_as::<CallToolOutput>() else {
            unreachable!("StampedCall::new checked the body")
        };
        Stamped {
            result_type: "complete",
            ttl_ms: self.ttl_ms,
            cache_scope: self.cache_scope.as_ref(),
            meta: self.server_info.as_ref().map(|info| Verbatim(&info.0)),
            result,
        }
        .serialize(serializer)
    }
}

/// JSON text serialized verbatim (see [`Written`]).
struct Verbatim<'a>(&'a str);

impl serde::Serialize for Verbatim<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let token = super::json_write::RAW_VALUE_TOKEN;
        let mut raw = serializer.serialize_struct(token, 1)?;
        raw.serialize_field(token, self.0)?;
        raw.end()
    }
}

/// JSON text `stamp_result` put together from valid parts, serialized verbatim, as serde_json's
/// `RawValue` is (through the private token both writers know): a `RawValue` made from it
/// would be validated again, a second full scan of a 64 KiB result.
struct Written(String);

impl serde::Serialize for Written {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Verbatim(&self.0).serialize(serializer)
    }
}

/// The keys of a JSON object, values skipped (by our reader, whose string scan is the fast one;
/// by serde_json for what it leaves to serde_json); `Err` when `text` is not an object.
fn top_level_keys(text: &str) -> Result<Vec<String>, serde_json::Error> {
    struct Keys;
    impl<'de> serde::de::Visitor<'de> for Keys {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
            let mut keys = Vec::new();
            while let Some(key) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(key);
            }
            Ok(keys)
        }
    }
    let mut reader = super::json_read::Reader::new(text.as_bytes());
    if let Ok(keys) = serde::Deserializer::deserialize_map(&mut reader, Keys) {
        if reader.end().is_ok() {
            return Ok(keys);
        }
    }
    serde::Deserializer::deserialize_map(&mut serde_json::Deserializer::from_str(text), Keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_meta_keys_are_those_whose_prefix_has_mcp_second() {
        for reserved in [
            "io.modelcontextprotocol/protocolVersion",
            "dev.mcp/x",
            "org.modelcontextprotocol.api/y",
            "com.mcp.tools/z",
        ] {
            assert!(is_reserved_meta_key(reserved), "{reserved}");
        }
        for free in ["com.example.mcp/x", "progressToken", "mcp/x", "example.com/trace", "modelcontextprotocol.io/x"] {
            assert!(!is_reserved_meta_key(free), "{free}");
        }
    }
    use serde_json::json;

    const V26: [ProtocolVersion; 1] = [ProtocolVersion::V2026_07_28];

    fn raw(v: Value) -> Body {
        Body::Raw(serde_json::value::to_raw_value(&v).unwrap())
    }

    fn envelope_params() -> Value {
        json!({"name": "echo", "_meta": {
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {"elicitation": {}},
            CLIENT_INFO_KEY: {"name": "c", "version": "1"},
            LOG_LEVEL_KEY: "info"
        }})
    }

    #[test]
    fn handshake_requests_are_told_apart_without_parsing() {
        assert!(!mentions_envelope(&raw(json!({"name": "echo", "arguments": {"text": "protocolVersion"}}))));
        assert!(read(Some(&raw(json!({"protocolVersion": "2025-11-25", "capabilities": {}}))), &V26).is_none());
        assert!(read(None, &V26).is_none());
        assert!(mentions_envelope(&raw(envelope_params())));
        // An escaped slash still spells the key.
        let escaped = Body::Raw(
            RawValue::from_string(r#"{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}"#.to_owned())
                .unwrap(),
        );
        assert_eq!(read(Some(&escaped), &V26).unwrap().unwrap().protocol_version, ProtocolVersion::V2026_07_28);
    }

    #[test]
    fn the_envelope_is_read_whole() {
        let envelope = read(Some(&raw(envelope_params())), &V26).unwrap().unwrap();
        assert!(envelope.client_capabilities.elicitation.is_some());
        assert_eq!(envelope.client_info.unwrap().name, "c");
        assert_eq!(envelope.log_level, Some(LoggingLevel::Info));
    }

    #[test]
    fn a_log_level_is_read_as_its_decoder_reads_it() {
        for level in LoggingLevel::ALL {
            assert_eq!(log_level(level.as_str()), Some(level));
        }
        for unknown in ["", "Info", "INFO", "info ", "verbose", "\"info\""] {
            assert_eq!(log_level(unknown), None, "{unknown}");
            assert!(serde_json::from_value::<LoggingLevel>(Value::String(unknown.to_owned())).is_err());
        }
    }

    #[test]
    fn the_ladder_refuses_as_the_spec_words_it() {
        let e = check(Some(&raw(json!({}))), &V26).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let e = check(None, &V26).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        let e = check(Some(&raw(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}))), &V26).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
        assert!(e.message.contains(CLIENT_CAPABILITIES_KEY));
        let e = check(Some(&raw(json!({"_meta": {PROTOCOL_VERSION_KEY: "v9", CLIENT_CAPABILITIES_KEY: {}}}))), &V26)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode(-32022));
        let data: Value = serde_json::from_str(e.data.unwrap().get()).unwrap();
        assert_eq!(data, json!({"supported": ["2026-07-28"], "requested": "v9"}));
        // A handshake revision is not served per request.
        let e = check(
            Some(&raw(json!({"_meta": {PROTOCOL_VERSION_KEY: "2025-11-25", CLIENT_CAPABILITIES_KEY: {}}}))),
            &V26,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode(-32022));
    }

    #[test]
    fn missing_capability_names_it_in_data() {
        let required = ClientCapabilities { sampling: Some(Default::default()), ..Default::default() };
        let e = missing_capability(&required, "sampling");
        assert_eq!(e.code, ErrorCode(-32021));
        let data: Value = serde_json::from_str(e.data.unwrap().get()).unwrap();
        assert_eq!(data, json!({"requiredCapabilities": {"sampling": {}}}));
        assert_eq!(http_status(e.code), Some(400));
        assert_eq!(http_status(ErrorCode::METHOD_NOT_FOUND), Some(404));
        assert_eq!(http_status(ErrorCode::INTERNAL_ERROR), None);
    }

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Result<Option<&'a str>, ()> + 'a {
        move |name| {
            let mut found = pairs.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| *v);
            let first = found.next();
            if found.next().is_some() {
                Err(())
            } else {
                Ok(first)
            }
        }
    }

    #[test]
    fn headers_must_match_the_body() {
        let params = raw(envelope_params());
        let ok = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "  echo ")];
        assert!(check_headers("tools/call", Some(&params), "2026-07-28", headers(&ok)).is_ok());
        let encoded =
            [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "=?base64?ZWNobw==?=")];
        assert!(check_headers("tools/call", Some(&params), "2026-07-28", headers(&encoded)).is_ok());
        for bad in [
            &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "TOOLS/CALL"), ("Mcp-Name", "echo")][..],
            &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Name", "other")],
            &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call")],
            &[("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "tools/call"), ("Mcp-Method", "tools/call")],
            &[("Mcp-Method", "tools/call"), ("Mcp-Name", "echo")],
        ] {
            let e = check_headers("tools/call", Some(&params), "2026-07-28", headers(bad)).unwrap_err();
            assert_eq!(e.code, ErrorCode(-32020), "{bad:?}");
        }
    }

    #[test]
    fn over_http_a_header_mismatch_is_told_before_an_unsupported_version() {
        let params = raw(json!({"_meta": {PROTOCOL_VERSION_KEY: "v9", CLIENT_CAPABILITIES_KEY: {}}}));
        let given = [("MCP-Protocol-Version", "2026-07-28"), ("Mcp-Method", "server/discover")];
        let e = check_http("server/discover", Some(&params), &V26, headers(&given)).unwrap_err();
        assert_eq!(e.code, ErrorCode(-32020));
        let given = [("MCP-Protocol-Version", "v9"), ("Mcp-Method", "server/discover")];
        let e = check_http("server/discover", Some(&params), &V26, headers(&given)).unwrap_err();
        assert_eq!(e.code, ErrorCode(-32022));
        let e = check_http("server/discover", Some(&raw(json!({}))), &V26, headers(&given)).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_PARAMS);
    }

    #[test]
    fn base64_sentinel_is_strict() {
        assert_eq!(decode_header_value("=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
        assert_eq!(decode_header_value("=?base64?SGVsbG8?="), None);
        assert_eq!(decode_header_value("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(decode_header_value("=?base64?SGVsbG9=?="), None, "non-zero trailing bits");
        assert_eq!(decode_header_value("SGVsbG8=").as_deref(), Some("SGVsbG8="));
        assert_eq!(decode_header_value("=?base64?SGVsbG8=").as_deref(), Some("=?base64?SGVsbG8="));
        for value in ["us-west1", "Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?=", ""] {
            assert_eq!(decode_header_value(&encode_header_value(value)).as_deref(), Some(value));
        }
        assert_eq!(encode_header_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
    }

    #[test]
    fn param_headers_follow_the_schema() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "query": {"type": "string"}
        }});
        let args = |v: Value| v.as_object().unwrap().clone();
        let ok = [("mcp-param-region", "us-west1"), ("Mcp-Param-Count", "42.0")];
        assert!(check_param_headers(&schema, &args(json!({"region": "us-west1", "count": 42})), headers(&ok)).is_ok());
        assert!(check_param_headers(&schema, &args(json!({"query": "x", "region": null})), headers(&[])).is_ok());
        for (arguments, given) in [
            (json!({"region": "us-west1"}), &[][..]),
            (json!({}), &[("Mcp-Param-Region", "us-west1")][..]),
            (json!({"region": "Hello"}), &[("Mcp-Param-Region", "=?base64?SGVsbG8?=")][..]),
            (json!({"region": "a"}), &[("Mcp-Param-Region", "b")][..]),
        ] {
            let e = check_param_headers(&schema, &args(arguments), headers(given)).unwrap_err();
            assert_eq!(e.code, ErrorCode(-32020));
        }
    }

    #[test]
    fn results_are_stamped_without_reencoding() {
        // The stamped text as both writers put it on the wire: ours and serde_json's.
        let text = |body: &Body| {
            let Body::Typed(value) = body else { panic!("a stamped body is written text") };
            let mut ours = Vec::new();
            value.write_json(&mut ours).unwrap();
            let theirs = body.to_raw().unwrap().get().to_owned();
            assert_eq!(String::from_utf8(ours).unwrap(), theirs);
            theirs
        };
        let stamp = ResultStamp {
            ttl_ms: Some(0),
            cache_scope: Some(CacheScope::Public),
            server_info: Some(
                ServerInfoMeta::new(&Implementation { name: "s".into(), version: "1".into(), ..Default::default() })
                    .unwrap(),
            ),
        };
        let out = stamp_result(raw(json!({"tools": []})), &stamp).unwrap();
        assert_eq!(
            text(&out),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"public","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"tools":[]}"#
        );
        let out = stamp_result(raw(json!({})), &ResultStamp::default()).unwrap();
        assert_eq!(text(&out), r#"{"resultType":"complete"}"#);
        let kept =
            stamp_result(raw(json!({"resultType": "input_required", "x": {"resultType": 1}})), &ResultStamp::default())
                .unwrap();
        assert_eq!(kept.as_raw().unwrap().get(), r#"{"resultType":"input_required","x":{"resultType":1}}"#);
        // A typed result is written by our writer, stamped, and reads back as the same value.
        let typed = Body::typed(json!({"content": [{"type": "text", "text": "a \"quoted\" é"}]}));
        let out = stamp_result(typed, &ResultStamp::default()).unwrap();
        let back: Value = serde_json::from_str(&text(&out)).unwrap();
        assert_eq!(back, json!({"resultType": "complete", "content": [{"type": "text", "text": "a \"quoted\" é"}]}));
    }

    #[test]
    fn a_typed_tool_result_is_stamped_as_its_text_would_be() {
        let text = |body: &Body| {
            let mut ours = Vec::new();
            body.write_json(&mut ours).unwrap();
            let theirs = body.to_raw().unwrap().get().to_owned();
            assert_eq!(String::from_utf8(ours).unwrap(), theirs);
            theirs
        };
        let info = ServerInfoMeta::new(&Implementation::new("s", "1")).unwrap();
        let stamps = [
            ResultStamp::default(),
            ResultStamp { server_info: Some(info.clone()), ..Default::default() },
            ResultStamp { ttl_ms: Some(5), cache_scope: Some(CacheScope::Private), server_info: Some(info) },
        ];
        let results: [Value; 5] = [
            json!({"content": [{"type": "text", "text": "a \"quoted\" é"}], "isError": true, "x-extra": [1]}),
            json!({"content": [], "structuredContent": {"n": 1}}),
            // Members the stamp would add, set by the handler: kept, the rest added around them.
            json!({"content": [], "resultType": "complete"}),
            json!({"content": [], "_meta": {"k": "v"}}),
            json!({"content": [], "ttlMs": 9}),
        ];
        for stamp in &stamps {
            for (i, result) in results.iter().enumerate() {
                let output: CallToolOutput = serde_json::from_value(result.clone()).unwrap();
                let typed = stamp_result(Body::typed(output.clone()), stamp).unwrap();
                let as_text = stamp_result(raw(serde_json::to_value(&output).unwrap()), stamp).unwrap();
                let (typed, as_text) = (text(&typed), text(&as_text));
                // The first two take the typed way: the stamp's members come first.
                assert!(i >= 2 || typed.starts_with(r#"{"resultType":"#), "{typed}");
                assert_eq!(
                    serde_json::from_str::<Value>(&typed).unwrap(),
                    serde_json::from_str::<Value>(&as_text).unwrap()
                );
            }
        }
        let stamped = stamp_result(
            Body::typed(serde_json::from_value::<CallToolOutput>(results[1].clone()).unwrap()),
            &stamps[2],
        )
        .unwrap();
        assert_eq!(
            text(&stamped),
            r#"{"resultType":"complete","ttlMs":5,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"content":[],"structuredContent":{"n":1}}"#
        );
    }
}
