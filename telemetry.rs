//! OpenTelemetry traces of MCP requests (feature `otel`): one span per request served and per
//! request sent, named and attributed as OpenTelemetry's semantic conventions for MCP say, and
//! the W3C trace context carried in `params._meta` across processes.
//!
//! The spans are `tracing` spans at DEBUG level under the target [`TARGET`]. An application
//! that installs a subscriber with `tracing_opentelemetry::OpenTelemetryLayer` (and an
//! exporter: `mcp-bridge serve --otlp-endpoint`) gets them as OpenTelemetry spans:
//! - a request served ([`crate::peer::Peer`]'s dispatch of the peer's request) gets a span of
//!   kind server that continues the trace found in the request's `params._meta`
//!   ([`PROPAGATION_KEYS`]) or, over HTTP, in the `traceparent` header; it ends when the answer
//!   is recorded, and the server's work for the request runs inside it, so a request the
//!   handler sends (the gateway forwarding a call upstream) is its child;
//! - a request sent gets a span of kind client, child of the current span, whose context is
//!   injected into the request's `params._meta` before it goes out;
//! - a request an upstream makes of the client during a call that the gateway forwards
//!   (sampling, elicitation, roots), relayed to the caller's client, is sent under
//!   `relay_parent`: in the call's trace whether or not the upstream propagated it.
//!
//! Without the layer nothing is created past a disabled callsite, and nothing is injected (a
//! span with no OpenTelemetry context has nothing to propagate). Attributes per the
//! conventions: `mcp.method.name`, `gen_ai.tool.name`, `gen_ai.prompt.name`,
//! `mcp.resource.uri`, `jsonrpc.request.id`, `rpc.response.status_code` and `error.type` on an
//! error (`tool_error` for a tool result with `isError`), `mcp.protocol.version`,
//! `mcp.session.id`, `network.transport` (`pipe` for stdio, `tcp` for HTTP), `server.address`
//! and `server.port` (of the server an HTTP client reaches) and
//! `gen_ai.operation.name = execute_tool` for `tools/call`; the span's name is
//! `{mcp.method.name} {target}`, the target being the tool or prompt name or the resource URI
//! where there is one.
//!
//! Not here: the subscriber, the SDK, the exporter or the sampler (the application's), tool
//! arguments and results as attributes (never recorded), the conventions' duration metrics
//! (the gateway's `gateway::metrics::bridge` measures them; `mcp-bridge` exports them).

use std::fmt::Write as _;

use opentelemetry::baggage::BaggageExt;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use opentelemetry::{Context, KeyValue};
use serde::Deserialize;
use serde_json::{Map, Value};
use tracing::field::Empty;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::proto::envelope::PROTOCOL_VERSION_KEY;
use crate::proto::jsonrpc::{Body, ErrorObject, Id};

/// The `tracing` target of every span this module creates: filter on it to keep or drop them.
pub const TARGET: &str = "mcpwire::telemetry";

/// The `params._meta` keys that carry the W3C trace context, as the MCP conventions name them.
pub const PROPAGATION_KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

/// What the transport under a peer says about itself, for the spans' attributes.
#[derive(Debug, Default, Clone)]
pub(crate) struct Connection {
    pub(crate) network_transport: Option<&'static str>,
    /// The peer's `server.address` and `server.port` (an HTTP client's, of the server it reaches).
    pub(crate) server_endpoint: Option<(String, u16)>,
    pub(crate) session_id: Option<String>,
    pub(crate) protocol_version: Option<String>,
}

/// The fields of a request's params that name its target and carry its context.
#[derive(Deserialize, Default, Clone)]
struct Peek {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default, rename = "_meta")]
    meta: Option<Map<String, Value>>,
}

fn peek(params: Option<&Body>) -> Peek {
    params.and_then(|p| p.decode::<Peek>().ok()).unwrap_or_default()
}

/// A DEBUG span of ours named `$name` (renamed `{method} {target}` by `otel.name`), with every
/// attribute of the conventions declared (tracing records only fields declared at creation).
macro_rules! mcp_span {
    ($name:literal, $kind:literal, $method:expr) => {
        tracing::debug_span!(target: TARGET, $name,
            otel.name = Empty, otel.kind = $kind, otel.status_code = Empty,
            mcp.method.name = $method, gen_ai.tool.name = Empty, gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty, jsonrpc.request.id = Empty, rpc.response.status_code = Empty,
            error.type = Empty, mcp.protocol.version = Empty, mcp.session.id = Empty,
            network.transport = Empty, gen_ai.operation.name = Empty, server.address = Empty,
            server.port = Empty)
    };
}

/// The span of a request we serve, continuing the trace of its `_meta` or, when that has
/// none, of `header_traceparent` / `header_tracestate` (the HTTP request's headers). Disabled
/// (and nothing parsed) when no subscriber wants it.
pub(crate) fn server_span(
    method: &str,
    id: &Id,
    params: Option<&Body>,
    connection: impl FnOnce() -> Connection,
    headers: impl FnOnce() -> Option<(String, Option<String>)>,
) -> Span {
    let span = mcp_span!("mcp.server", "server", method);
    if span.is_disabled() {
        return span;
    }
    let peeked = peek(params);
    describe(&span, method, Some(id), &peeked, connection());
    let mut parent = peeked.meta.as_ref().map(extract).filter(|cx| cx.span().span_context().is_valid());
    if parent.is_none() {
        if let Some((traceparent, tracestate)) = headers() {
            let mut carrier = Map::new();
            carrier.insert("traceparent".into(), Value::String(traceparent));
            if let Some(state) = tracestate {
                carrier.insert("tracestate".into(), Value::String(state));
            }
            parent = Some(extract(&carrier)).filter(|cx| cx.span().span_context().is_valid());
        }
    }
    if let Some(parent) = parent {
        let _ = span.set_parent(parent);
    }
    span
}

/// The span of a request we send, child of the current span. Disabled when no subscriber
/// wants it.
pub(crate) fn client_span(method: &str, params: Option<&Body>, connection: impl FnOnce() -> Connection) -> Span {
    let span = mcp_span!("mcp.client", "client", method);
    if span.is_disabled() {
        return span;
    }
    describe(&span, method, None, &peek(params), connection());
    span
}

/// Records the id of a request sent under `span` once the session has allocated it.
pub(crate) fn record_id(span: &Span, id: &Id) {
    if !span.is_disabled() {
        span.record("jsonrpc.request.id", tracing::field::display(id));
    }
}

fn describe(span: &Span, method: &str, id: Option<&Id>, peeked: &Peek, connection: Connection) {
    let target = match method {
        "tools/call" => {
            span.record("gen_ai.operation.name", "execute_tool");
            peeked.name.as_deref().inspect(|name| {
                span.record("gen_ai.tool.name", *name);
            })
        }
        "prompts/get" => peeked.name.as_deref().inspect(|name| {
            span.record("gen_ai.prompt.name", *name);
        }),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => peeked.uri.as_deref().inspect(|uri| {
            span.record("mcp.resource.uri", *uri);
        }),
        _ => None,
    };
    let name = match target {
        Some(target) => format!("{method} {target}"),
        None => method.to_owned(),
    };
    span.record("otel.name", name.as_str());
    if let Some(id) = id {
        span.record("jsonrpc.request.id", tracing::field::display(id));
    }
    let version = peeked
        .meta
        .as_ref()
        .and_then(|meta| meta.get(PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or(connection.protocol_version);
    if let Some(version) = version {
        span.record("mcp.protocol.version", version.as_str());
    }
    if let Some(session) = connection.session_id {
        span.record("mcp.session.id", session.as_str());
    }
    if let Some(transport) = connection.network_transport {
        span.record("network.transport", transport);
    }
    if let Some((address, port)) = connection.server_endpoint {
        span.record("server.address", address.as_str());
        span.record("server.port", i64::from(port));
    }
}

/// Records how the request of `span` ended: an error's code, or a tool result with `isError`.
pub(crate) fn record_outcome(span: &Span, method: &str, outcome: Result<&Body, &ErrorObject>) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Err(error) => {
            let code = error.code.0.to_string();
            span.record("rpc.response.status_code", code.as_str());
            span.record("error.type", code.as_str());
            span.record("otel.status_code", "ERROR");
        }
        Ok(body) if method == "tools/call" => {
            #[derive(Deserialize, Clone)]
            struct ToolOutcome {
                #[serde(default, rename = "isError")]
                is_error: bool,
            }
            if body.decode::<ToolOutcome>().is_ok_and(|o| o.is_error) {
                span.record("error.type", "tool_error");
                span.record("otel.status_code", "ERROR");
            }
        }
        Ok(_) => {}
    }
}

/// Records a request of ours that got no answer (`timeout`, `connection_closed` …) as failed.
pub(crate) fn record_error_type(span: &Span, error_type: &str) {
    if !span.is_disabled() {
        span.record("error.type", error_type);
        span.record("otel.status_code", "ERROR");
    }
}

/// Puts the OpenTelemetry context of `span` into `params._meta` ([`PROPAGATION_KEYS`]),
/// replacing any found there; `params` unchanged when the span has no valid context (no
/// OpenTelemetry layer) or the params are not an object.
pub(crate) fn inject_params(span: &Span, params: Option<Body>) -> Option<Body> {
    if span.is_disabled() {
        return params;
    }
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return params;
    }
    let mut object = match &params {
        None => Map::new(),
        Some(body) => match body.decode::<Value>() {
            Ok(Value::Object(object)) => object,
            _ => return params,
        },
    };
    let meta = object.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(meta) = meta else { return params };
    inject(&cx, meta);
    Body::serialized(&object).ok().or(params)
}

/// Writes the W3C trace context of `cx` (its span's `traceparent` and `tracestate`, its
/// `baggage`) into `meta`, replacing what the keys held. Writes nothing for a context without
/// a valid span.
pub fn inject(cx: &Context, meta: &mut Map<String, Value>) {
    for key in PROPAGATION_KEYS {
        meta.remove(key);
    }
    let span = cx.span();
    let context = span.span_context();
    if !context.is_valid() {
        return;
    }
    meta.insert(
        "traceparent".into(),
        Value::String(format!("00-{}-{}-{:02x}", context.trace_id(), context.span_id(), context.trace_flags().to_u8())),
    );
    let state = context.trace_state().header();
    if !state.is_empty() {
        meta.insert("tracestate".into(), Value::String(state));
    }
    let baggage = cx.baggage();
    if !baggage.is_empty() {
        let mut header = String::new();
        for (key, (value, _)) in baggage {
            if !header.is_empty() {
                header.push(',');
            }
            let _ = write!(header, "{}={}", key.as_str(), percent_encode(value.as_str()));
        }
        meta.insert("baggage".into(), Value::String(header));
    }
}

/// The remote context that `meta`'s W3C keys describe; an empty context when `traceparent` is
/// absent or malformed (a malformed `tracestate` is dropped, the parent kept; baggage entries
/// that do not parse are skipped).
pub fn extract(meta: &Map<String, Value>) -> Context {
    let Some(parent) = meta.get("traceparent").and_then(Value::as_str).and_then(parse_traceparent) else {
        return Context::new();
    };
    let (trace_id, span_id, flags) = parent;
    let state =
        meta.get("tracestate").and_then(Value::as_str).and_then(|s| s.parse::<TraceState>().ok()).unwrap_or_default();
    let cx = Context::new().with_remote_span_context(SpanContext::new(trace_id, span_id, flags, true, state));
    let entries: Vec<KeyValue> = meta
        .get("baggage")
        .and_then(Value::as_str)
        .map(|header| {
            header
                .split(',')
                .filter_map(|member| {
                    let pair = member.split(';').next()?;
                    let (key, value) = pair.split_once('=')?;
                    let key = key.trim();
                    (!key.is_empty()).then(|| KeyValue::new(key.to_owned(), percent_decode(value.trim())))
                })
                .collect()
        })
        .unwrap_or_default();
    if entries.is_empty() {
        cx
    } else {
        cx.with_baggage(entries)
    }
}

/// `version-traceid-parentid-flags` per W3C Trace Context: version `ff`, an all-zero id, or
/// anything but lowercase hex of the right lengths is refused; a future version's extra
/// fields are ignored, as the spec asks.
fn parse_traceparent(header: &str) -> Option<(TraceId, SpanId, TraceFlags)> {
    let mut parts = header.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let lower_hex =
        |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !lower_hex(version, 2)
        || version == "ff"
        || !lower_hex(trace, 32)
        || !lower_hex(span, 16)
        || !lower_hex(flags, 2)
    {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let trace_id = TraceId::from_hex(trace).ok().filter(|id| *id != TraceId::INVALID)?;
    let span_id = SpanId::from_hex(span).ok().filter(|id| *id != SpanId::INVALID)?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some((trace_id, span_id, TraceFlags::new(flags) & TraceFlags::SAMPLED))
}

fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&'()*+-./:<>?@[]^_`{|}~".contains(&byte) {
            out.push(byte as char);
        } else {
            let _ = write!(out, "%{byte:02X}");
        }
    }
    out
}

fn percent_decode(value: &str) -> String {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The span under which a request that an upstream made of the client (sampling, elicitation,
/// roots) is relayed to the downstream client whose call (served in `call`) caused it: the
/// current span (ours, of the upstream's request) when it continues the call's trace, because
/// the upstream propagated it, so the relayed request is the upstream's request's grandchild;
/// else `call`, so that the relayed request stays in the call's trace whatever the upstream
/// propagates (nothing, or a trace of its own).
#[cfg(feature = "gateway")]
pub(crate) fn relay_parent(call: &Span) -> Span {
    let current = Span::current();
    if call.is_disabled() {
        return current;
    }
    let ours = current.metadata().is_some_and(|m| m.target() == TARGET);
    let trace_of = |span: &Span| span.context().span().span_context().trace_id();
    if ours && trace_of(&current) == trace_of(call) {
        current
    } else {
        call.clone()
    }
}

/// The future, inside the current span when that is one of ours (a request being served), so
/// that the work a server spawns for a request stays in its trace. Only for per-request work:
/// a task that outlives the request would keep its span open.
#[cfg(feature = "server")]
pub(crate) fn in_request_span(future: crate::transport::task::TaskFuture) -> crate::transport::task::TaskFuture {
    use tracing::Instrument;
    let current = Span::current();
    if current.metadata().is_some_and(|m| m.target() == TARGET) {
        Box::pin(future.instrument(current))
    } else {
        future
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object literal"),
        }
    }

    #[test]
    fn a_context_survives_inject_then_extract() {
        let incoming = meta(json!({
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "tracestate": "vendor=abc,other=x",
            "baggage": "user=alice,note=a%20b;prop=1",
        }));
        let cx = extract(&incoming);
        let span = cx.span();
        let context = span.span_context();
        assert_eq!(context.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(context.span_id().to_string(), "00f067aa0ba902b7");
        assert!(context.is_sampled() && context.is_remote());
        assert_eq!(cx.baggage().get("note").map(|v| v.as_str().to_owned()), Some("a b".to_owned()));

        let mut out = meta(json!({"traceparent": "stale", "io.modelcontextprotocol/protocolVersion": "2026-07-28"}));
        inject(&cx, &mut out);
        assert_eq!(out["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(out["tracestate"], "vendor=abc,other=x");
        assert_eq!(out["io.modelcontextprotocol/protocolVersion"], "2026-07-28");
        let again = extract(&out);
        assert_eq!(again.baggage().get("user").map(|v| v.as_str().to_owned()), Some("alice".to_owned()));
        assert_eq!(again.baggage().get("note").map(|v| v.as_str().to_owned()), Some("a b".to_owned()));
    }

    #[test]
    fn an_unsampled_parent_stays_unsampled() {
        let cx = extract(&meta(json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"})));
        assert!(cx.span().span_context().is_valid());
        assert!(!cx.span().span_context().is_sampled());
        let mut out = Map::new();
        inject(&cx, &mut out);
        assert_eq!(out["traceparent"], "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    }

    #[test]
    fn a_malformed_traceparent_is_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bz-01",
        ] {
            let cx = extract(&meta(json!({ "traceparent": bad })));
            assert!(!cx.span().span_context().is_valid(), "{bad:?} was taken");
            let mut out = Map::new();
            inject(&cx, &mut out);
            assert!(out.is_empty(), "{bad:?} was propagated");
        }
        let not_a_string = extract(&meta(json!({"traceparent": 7})));
        assert!(!not_a_string.span().span_context().is_valid());
    }

    #[test]
    fn a_future_version_with_more_fields_is_taken() {
        let cx = extract(&meta(json!({"traceparent": "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"})));
        assert!(cx.span().span_context().is_valid());
    }

    #[test]
    fn a_malformed_tracestate_drops_only_the_state() {
        let cx = extract(&meta(json!({
            "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "tracestate": "=,,no equals",
        })));
        assert!(cx.span().span_context().is_valid());
        assert_eq!(cx.span().span_context().trace_state().header(), "");
    }
}
