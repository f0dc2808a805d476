//! The decisions of `decide.rs` driven with built `http::Request` heads: every refusal with
//! its status, headers and JSON-RPC error, and every path. No listener, no socket, no runtime
//! (a built body is complete at its first poll).

// The closures return decide.rs's refusals: whole HTTP answers, large by nature.
#![allow(clippy::result_large_err)]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::HeaderMap;
use hyper::Request;
use serde_json::{json, Value};

use super::*;
use crate::transport::sse_http::routes::RouteResponse;
use crate::transport::sse_http::server::reply::read_body;

fn head(method: &str, uri: &str, headers: &[(&str, &str)]) -> Parts {
    let mut builder = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(()).expect("a valid head").into_parts().0
}

/// A POST on `/mcp` from a loopback client with the headers every SDK sends, and `extra`.
fn post_head(extra: &[(&str, &str)]) -> Parts {
    let mut headers = vec![
        ("host", "127.0.0.1:3000"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];
    headers.extend_from_slice(extra);
    head("POST", "/mcp", &headers)
}

/// Runs a future that needs no waking (built bodies, no timers) to its end.
fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the future waits on something: not IO-free"),
    }
}

/// Status, headers and body of an answer.
fn open(answer: Refused) -> (u16, HeaderMap, Bytes) {
    let (parts, body) = answer.into_parts();
    let bytes = ready(body.collect()).expect("an infallible body").to_bytes();
    (parts.status.as_u16(), parts.headers, bytes)
}

/// Status and the JSON-RPC error (`code`, `message`) of a refusal with a JSON body; the body
/// must be a JSON-RPC error response with no id.
fn rpc(answer: Refused) -> (u16, i64, String) {
    let (status, headers, body) = open(answer);
    assert_eq!(headers["content-type"], "application/json");
    let body: Value = serde_json::from_slice(&body).expect("a JSON body");
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], Value::Null);
    let error = &body["error"];
    (status, error["code"].as_i64().expect("a code"), error["message"].as_str().expect("a message").to_owned())
}

#[test]
fn host_must_be_loopback_or_listed_and_h2_authority_counts_as_host() {
    let config = HttpServerConfig::default();
    for host in ["localhost", "localhost:3000", "127.0.0.1:8080", "[::1]:9", "app.localhost"] {
        assert!(screen(&config, &head("POST", "/mcp", &[("host", host)])).is_ok(), "{host}");
    }
    for host in ["evil.example", "evil.example:3000", "127.0.0.1.evil.example"] {
        let refused = screen(&config, &head("POST", "/mcp", &[("host", host)])).expect_err(host);
        assert_eq!(rpc(refused), (403, -32000, "Forbidden: Host not allowed".into()), "{host}");
    }
    let refused = screen(&config, &head("POST", "/mcp", &[])).expect_err("no Host at all");
    assert_eq!(rpc(refused).0, 403);
    // HTTP/2: `:authority` in the URI, no `Host` header.
    assert!(screen(&config, &head("POST", "http://127.0.0.1:3000/mcp", &[])).is_ok());
    assert_eq!(rpc(screen(&config, &head("POST", "http://evil.example/mcp", &[])).unwrap_err()).0, 403);

    let listed = HttpServerConfig::default().hosts(HostCheck::Loopback(vec!["mcp.example".into()]));
    assert!(screen(&listed, &head("POST", "/mcp", &[("host", "MCP.example:443")])).is_ok());
    let any = HttpServerConfig::default().hosts(HostCheck::Any);
    assert!(screen(&any, &head("POST", "/mcp", &[("host", "evil.example")])).is_ok());
}

#[test]
fn origin_when_present_must_be_loopback_or_listed() {
    let config = HttpServerConfig::default();
    let with_origin = |origin| head("POST", "/mcp", &[("host", "localhost"), ("origin", origin)]);
    assert!(screen(&config, &head("POST", "/mcp", &[("host", "localhost")])).is_ok(), "no Origin: not a browser");
    for origin in ["http://localhost:5173", "https://127.0.0.1", "http://[::1]:8"] {
        assert!(screen(&config, &with_origin(origin)).is_ok(), "{origin}");
    }
    for origin in ["https://evil.example", "null", "file://localhost", "http://localhost.evil.example"] {
        let refused = screen(&config, &with_origin(origin)).expect_err(origin);
        assert_eq!(rpc(refused), (403, -32000, "Forbidden: Origin not allowed".into()), "{origin}");
    }
    let only = HttpServerConfig::default().origins(OriginCheck::Only(vec!["https://app.example".into()]));
    assert!(screen(&only, &with_origin("https://APP.example")).is_ok());
    assert!(screen(&only, &with_origin("http://localhost:5173")).is_err(), "Only lists, no loopback");
    // Host is checked first: a foreign Host is refused whatever the Origin.
    let refused = screen(&config, &head("POST", "/mcp", &[("host", "evil.example"), ("origin", "http://localhost")]));
    assert_eq!(rpc(refused.unwrap_err()).2, "Forbidden: Host not allowed");
}

#[test]
fn path_and_method_lead_to_their_handler() {
    let config = HttpServerConfig::default()
        .route("/health", || async { RouteResponse::text(200, "ok") })
        .route_public("/metrics", || async { RouteResponse::text(200, "") });
    let get = Method::GET;
    assert_eq!(target(&config, &Method::POST, "/mcp"), Target::Post);
    assert_eq!(target(&config, &get, "/mcp"), Target::Get);
    assert_eq!(target(&config, &Method::DELETE, "/mcp"), Target::Delete);
    assert_eq!(target(&config, &Method::PUT, "/mcp"), Target::OtherMethod);
    assert_eq!(target(&config, &get, "/sse"), Target::LegacyStream);
    assert_eq!(target(&config, &Method::POST, "/message"), Target::LegacyMessage);
    assert_eq!(target(&config, &Method::POST, "/sse"), Target::NotFound);
    assert_eq!(target(&config, &get, "/message"), Target::NotFound);
    assert_eq!(target(&config, &get, "/mcp/"), Target::NotFound);
    assert_eq!(target(&config, &get, "/.well-known/oauth-protected-resource"), Target::NotFound, "not protected");
    assert!(matches!(target(&config, &get, "/health"), Target::Route(r) if r.path == "/health"));
    assert!(matches!(target(&config, &Method::POST, "/metrics"), Target::Route(_)), "405 is the route's to answer");

    assert!(needs_token(&config, "/mcp"));
    assert!(needs_token(&config, "/sse") && needs_token(&config, "/message"), "any method: checked before the 404");
    assert!(needs_token(&config, "/health"));
    assert!(!needs_token(&config, "/metrics"), "a public route");
    assert!(!needs_token(&config, "/elsewhere"), "unknown paths answer 404 unguarded");

    let stateless = HttpServerConfig::default().stateless(true);
    assert_eq!(target(&stateless, &get, "/sse"), Target::NotFound, "no legacy transport without sessions");
    assert!(!needs_token(&stateless, "/sse"));
    let no_legacy = HttpServerConfig::default().legacy_sse(false);
    assert_eq!(target(&no_legacy, &Method::POST, "/message"), Target::NotFound);
    let elsewhere = HttpServerConfig::default().path("/api/mcp");
    assert_eq!(target(&elsewhere, &Method::POST, "/api/mcp"), Target::Post);
    assert_eq!(target(&elsewhere, &Method::POST, "/mcp"), Target::NotFound);
}

#[test]
fn method_not_allowed_names_the_methods_of_the_mode() {
    let allow = |config: &HttpServerConfig| {
        let (status, headers, _) = open(method_not_allowed(config));
        assert_eq!(status, 405);
        headers["allow"].to_str().unwrap().to_owned()
    };
    assert_eq!(allow(&HttpServerConfig::default()), "GET, POST, DELETE");
    assert_eq!(allow(&HttpServerConfig::default().stateless(true)), "POST, DELETE");
    assert_eq!(allow(&HttpServerConfig::default().standalone_get(false)), "POST, DELETE");
    assert_eq!(rpc(method_not_allowed(&HttpServerConfig::default())), (405, -32000, "Method not allowed".into()));
}

#[test]
fn get_and_delete_are_refused_where_there_is_no_session_or_stream() {
    let default = HttpServerConfig::default();
    let get = head("GET", "/mcp", &[("mcp-session-id", "s")]);
    let delete = head("DELETE", "/mcp", &[("mcp-session-id", "s")]);
    assert!(stream_method_refusal(&default, &get).is_none());
    assert!(stream_method_refusal(&default, &delete).is_none());

    let stateless = HttpServerConfig::default().stateless(true);
    for parts in [&get, &delete] {
        let (status, headers, _) = open(stream_method_refusal(&stateless, parts).expect("405 in stateless mode"));
        assert_eq!((status, headers["allow"].to_str().unwrap()), (405, "POST, DELETE"));
    }
    let no_stream = HttpServerConfig::default().standalone_get(false);
    assert!(stream_method_refusal(&no_stream, &get).is_some());
    assert!(stream_method_refusal(&no_stream, &delete).is_none(), "DELETE still ends a session");

    // 2026-07-28 has neither; a handshake-era or unknown version header changes nothing.
    for method in ["GET", "DELETE"] {
        let per_request = head(method, "/mcp", &[("mcp-protocol-version", " 2026-07-28 ")]);
        assert_eq!(open(stream_method_refusal(&default, &per_request).expect(method)).0, 405);
        let handshake = head(method, "/mcp", &[("mcp-protocol-version", "2025-11-25")]);
        assert!(stream_method_refusal(&default, &handshake).is_none());
        let unknown = head(method, "/mcp", &[("mcp-protocol-version", "2099-01-01")]);
        assert!(stream_method_refusal(&default, &unknown).is_none(), "answered 400 later by header_version");
    }
}

#[test]
fn a_post_must_accept_json_and_sse_and_send_json() {
    assert!(post_media(&post_head(&[])).is_ok());
    let with = |accept: &str, content_type: &str| {
        post_media(&head("POST", "/mcp", &[("accept", accept), ("content-type", content_type)]))
    };
    assert!(with("text/event-stream;q=0.9, application/json", "application/json; charset=utf-8").is_ok());
    assert!(with("*/*", "APPLICATION/JSON").is_ok());
    assert!(with("application/*, text/*", "application/json").is_ok());
    let not_acceptable =
        (406, -32000, "Not Acceptable: Client must accept both application/json and text/event-stream".to_owned());
    assert_eq!(rpc(with("application/json", "application/json").unwrap_err()), not_acceptable);
    assert_eq!(rpc(with("text/event-stream", "application/json").unwrap_err()), not_acceptable);
    assert_eq!(rpc(post_media(&head("POST", "/mcp", &[("content-type", "application/json")])).unwrap_err()).0, 406);
    let unsupported = (415, -32000, "Unsupported Media Type: Content-Type must be application/json".to_owned());
    assert_eq!(rpc(with("*/*", "text/plain").unwrap_err()), unsupported);
    assert_eq!(rpc(post_media(&head("POST", "/mcp", &[("accept", "*/*")])).unwrap_err()), unsupported);
    // Accept is judged first.
    assert_eq!(rpc(with("text/html", "text/plain").unwrap_err()).0, 406);
}

#[test]
fn streams_must_accept_sse_and_legacy_posts_send_json() {
    assert!(stream_accept(&head("GET", "/mcp", &[("accept", "text/event-stream")])).is_ok());
    let sse_406 = (406, -32000, "Not Acceptable: Client must accept text/event-stream".to_owned());
    assert_eq!(rpc(stream_accept(&head("GET", "/mcp", &[])).unwrap_err()), sse_406);
    assert_eq!(rpc(stream_accept(&head("GET", "/mcp", &[("accept", "application/json")])).unwrap_err()), sse_406);
    // The legacy stream lets an absent Accept through (old clients send none).
    assert!(legacy_stream_accept(&head("GET", "/sse", &[])).is_ok());
    assert_eq!(rpc(legacy_stream_accept(&head("GET", "/sse", &[("accept", "text/html")])).unwrap_err()), sse_406);
    assert!(legacy_post_media(&head("POST", "/message", &[("content-type", "application/json")])).is_ok());
    let (status, headers, body) = open(legacy_post_media(&head("POST", "/message", &[])).unwrap_err());
    assert_eq!(
        (status, headers["content-type"].to_str().unwrap(), &body[..]),
        (415, "text/plain", &b"Unsupported Media Type"[..])
    );
}

#[test]
fn the_era_and_path_of_a_post() {
    let config = HttpServerConfig::default();
    let meta_body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    }}})
    .to_string();
    let plain_body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    let v2026 = ("mcp-protocol-version", "2026-07-28");
    let session = ("mcp-session-id", "abc");

    assert_eq!(post_era(&config, &post_head(&[]), plain_body), PostEra::Opening);
    assert_eq!(post_era(&config, &post_head(&[session]), plain_body), PostEra::InSession);
    assert_eq!(post_era(&config, &post_head(&[v2026]), plain_body), PostEra::PerRequest);
    assert_eq!(post_era(&config, &post_head(&[v2026, session]), plain_body), PostEra::PerRequest);
    assert_eq!(post_era(&config, &post_head(&[("mcp-protocol-version", "2025-11-25")]), plain_body), PostEra::Opening);
    // A version we do not know: the 2026 ladder answers it, unless a session is named (its
    // own version rule answers 400 then).
    let unknown = ("mcp-protocol-version", "2099-01-01");
    assert_eq!(post_era(&config, &post_head(&[unknown]), plain_body), PostEra::PerRequest);
    assert_eq!(post_era(&config, &post_head(&[unknown, session]), plain_body), PostEra::InSession);
    // The body's `_meta` alone moves a POST without a session; with one, only the header does.
    assert_eq!(post_era(&config, &post_head(&[]), meta_body.as_bytes()), PostEra::PerRequest);
    assert_eq!(post_era(&config, &post_head(&[session]), meta_body.as_bytes()), PostEra::InSession);
    assert_eq!(post_era(&config, &post_head(&[]), b"{not json /protocolVersion\""), PostEra::Opening);

    let stateless = HttpServerConfig::default().stateless(true);
    assert_eq!(post_era(&stateless, &post_head(&[]), plain_body), PostEra::Stateless);
    assert_eq!(post_era(&stateless, &post_head(&[session]), plain_body), PostEra::Stateless);
    assert_eq!(post_era(&stateless, &post_head(&[]), meta_body.as_bytes()), PostEra::Stateless, "header only");
    assert_eq!(post_era(&stateless, &post_head(&[v2026]), plain_body), PostEra::PerRequest);
}

#[test]
fn the_protocol_version_header() {
    let config = HttpServerConfig::default();
    let version = |value: Option<&str>| {
        let parts = match value {
            Some(v) => post_head(&[("mcp-protocol-version", v)]),
            None => post_head(&[]),
        };
        header_version(&config, &parts)
    };
    assert_eq!(version(None).unwrap(), ProtocolVersion::HTTP_HEADER_DEFAULT);
    assert_eq!(version(Some("2025-06-18")).unwrap(), ProtocolVersion::V2025_06_18);
    assert_eq!(version(Some(" 2025-11-25 ")).unwrap(), ProtocolVersion::V2025_11_25);
    let refused = version(Some("1999-01-01")).unwrap_err();
    assert_eq!(rpc(refused), (400, -32000, "Bad Request: Unsupported protocol version: 1999-01-01".into()));
    let narrow = HttpServerConfig { versions: vec![ProtocolVersion::V2025_11_25], ..HttpServerConfig::default() };
    let parts = post_head(&[("mcp-protocol-version", "2025-06-18")]);
    assert_eq!(rpc(header_version(&narrow, &parts).unwrap_err()).0, 400, "known but not served");

    // In a session: the header must name the session's version (absent: the session's applies).
    let session = Some(ProtocolVersion::V2025_06_18);
    assert!(session_version_refusal(&config, &post_head(&[]), session).is_none());
    let same = post_head(&[("mcp-protocol-version", "2025-06-18")]);
    assert!(session_version_refusal(&config, &same, session).is_none());
    let other = post_head(&[("mcp-protocol-version", "2025-11-25")]);
    let (status, code, message) = rpc(session_version_refusal(&config, &other, session).expect("another version"));
    assert_eq!((status, code), (400, -32000));
    assert!(message.contains("2025-11-25") && message.contains("2025-06-18"), "{message}");
    let unknown = post_head(&[("mcp-protocol-version", "2099-01-01")]);
    assert_eq!(rpc(session_version_refusal(&config, &unknown, session).expect("unknown")).0, 400);
}

#[test]
fn bodies_that_hold_no_message_are_400_with_the_decoders_error() {
    let config = HttpServerConfig::default();
    let (status, code, _) = rpc(decode(&config, b"{\"jsonrpc\":", None).unwrap_err());
    assert_eq!((status, code), (400, -32700));
    let (status, code, _) = rpc(decode(&config, br#"{"jsonrpc":"2.0","id":1}"#, None).unwrap_err());
    assert_eq!((status, code), (400, -32600));
    let batch = br#"[{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
    assert_eq!(decode(&config, batch, Some(ProtocolVersion::V2025_03_26)).unwrap().len(), 2);
    assert_eq!(rpc(decode(&config, batch, Some(ProtocolVersion::V2025_06_18)).unwrap_err()).0, 400, "no batches");
    let untyped = HttpServerConfig::default().typed_params(false);
    assert_eq!(decode(&untyped, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, None).unwrap().len(), 1);
}

#[test]
fn a_session_opens_with_a_lone_initialize_and_is_named_afterwards() {
    let config = HttpServerConfig::default();
    let init = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#;
    let messages = decode(&config, init, None).unwrap();
    assert_eq!(opening_request(&messages).unwrap(), Some(ProtocolVersion::V2025_06_18));
    let odd = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1999"}}"#;
    assert_eq!(opening_request(&decode(&config, odd, None).unwrap()).unwrap(), None);
    let required = (400, -32000, "Bad Request: Mcp-Session-Id header is required".to_owned());
    let ping = decode(&config, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, None).unwrap();
    assert_eq!(rpc(opening_request(&ping).unwrap_err()), required);

    assert_eq!(session_id(&head("GET", "/mcp", &[("mcp-session-id", "abc")])).unwrap(), "abc");
    assert_eq!(rpc(session_id(&head("DELETE", "/mcp", &[])).unwrap_err()), required);
}

#[test]
fn unknown_and_foreign_sessions_get_the_same_404() {
    let unknown = open(not_held(NotHeld::Unknown));
    let foreign = open(not_held(NotHeld::OtherHolder));
    assert_eq!(unknown.0, 404);
    assert_eq!((unknown.0, &unknown.2), (foreign.0, &foreign.2), "no oracle for other holders' sessions");
    assert_eq!(rpc(not_held(NotHeld::Unknown)), (404, -32001, "Session not found".into()));
}

#[test]
fn admission_past_max_sessions_is_503_with_retry_after() {
    let config = HttpServerConfig::default().max_sessions(2).sessions_retry_after(Duration::from_secs(7));
    assert!(room_for_session(&config, 0) && room_for_session(&config, 1));
    assert!(!room_for_session(&config, 2) && !room_for_session(&config, 3));
    let (status, headers, _) = open(too_many_sessions(&config));
    assert_eq!((status, headers["retry-after"].to_str().unwrap()), (503, "7"));
    let (_, code, message) = rpc(too_many_sessions(&config));
    assert_eq!(code, -32000);
    assert!(message.contains("max_sessions = 2"), "{message}");
    let soon = HttpServerConfig::default().sessions_retry_after(Duration::from_millis(10));
    assert_eq!(open(too_many_sessions(&soon)).1["retry-after"], "1", "never 0: at least a second");
    assert!(!room_for_session(&HttpServerConfig::default().max_sessions(0), 0));
}

#[test]
fn a_2026_post_carries_one_request() {
    let config = HttpServerConfig::default();
    let messages = |body: &[u8]| decode(&config, body, Some(ProtocolVersion::V2026_07_28)).unwrap();
    let request = messages(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    assert!(matches!(per_request_message(request), Ok(Message::Request(r)) if r.method == "tools/list"));
    let (status, headers, body) =
        open(per_request_message(messages(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#)).unwrap_err());
    assert_eq!((status, headers.len(), body.len()), (202, 0, 0));
    let response = messages(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    assert_eq!(
        rpc(per_request_message(response).unwrap_err()),
        (400, -32600, "Clients must not POST responses".into())
    );
    let ping = jsonrpc::Request { id: Id::Number(1), method: "ping".into(), params: None };
    let two = vec![Message::Request(ping.clone()), Message::Request(ping)];
    let (status, code, message) = rpc(per_request_message(two).unwrap_err());
    assert_eq!(
        (status, code, message.as_str()),
        (400, -32600, "Body must be a single JSON-RPC request or notification")
    );
}

#[test]
fn a_2026_request_must_agree_with_its_headers() {
    let config = HttpServerConfig::default();
    let call = |meta_version: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "echo", "_meta": {
            "io.modelcontextprotocol/protocolVersion": meta_version,
            "io.modelcontextprotocol/clientCapabilities": {}
        }}});
        let [Message::Request(request)] = &decode(&config, body.to_string().as_bytes(), None).unwrap()[..] else {
            panic!("one request")
        };
        request.clone()
    };
    let good = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
    let kept = per_request_check(
        &config,
        &post_head(&[good[0], good[1], good[2], ("mcp-param-city", "Oslo")]),
        &call("2026-07-28"),
    );
    assert_eq!(kept.unwrap(), vec![("mcp-param-city".to_owned(), "Oslo".to_owned())]);

    // Each refusal is the error under the request's id, with the revision's status.
    let refused = |extra: &[(&str, &str)], version: &str| {
        let (status, headers, body) = open(per_request_check(&config, &post_head(extra), &call(version)).unwrap_err());
        assert_eq!(headers["content-type"], "application/json");
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["id"], 7);
        (status, body["error"]["code"].as_i64().unwrap())
    };
    assert_eq!(refused(&[good[0], good[1], ("mcp-name", "other")], "2026-07-28"), (400, -32020));
    assert_eq!(refused(&[good[0], good[1]], "2026-07-28"), (400, -32020), "Mcp-Name is required for tools/call");
    assert_eq!(refused(&[good[0], ("mcp-method", "tools/list"), good[2]], "2026-07-28"), (400, -32020));
    assert_eq!(refused(&[good[0], good[1], good[1], good[2]], "2026-07-28"), (400, -32020), "a repeated header");
    assert_eq!(refused(&[("mcp-protocol-version", "2099-01-01"), good[1], good[2]], "2099-01-01"), (400, -32022));
    let no_meta = jsonrpc::Request { id: Id::Number(7), method: "tools/list".into(), params: None };
    let (status, _, _) = open(per_request_check(&config, &post_head(&good), &no_meta).unwrap_err());
    assert_eq!(status, 400, "-32602: _meta is required");
}

#[test]
fn the_head_handed_on_loses_the_token_the_server_checked() {
    let with_token = post_head(&[("authorization", "Bearer s3cret"), ("x-tenant", "t1")]);
    let open_server = handed_on_head(&HttpServerConfig::default(), with_token.clone());
    assert_eq!(open_server.headers["authorization"], "Bearer s3cret", "not ours to check: the app's");
    let guarded = HttpServerConfig::default().bearer_token(Some("s3cret".into()));
    let kept = handed_on_head(&guarded, with_token);
    assert!(kept.headers.get("authorization").is_none());
    assert_eq!(kept.headers["x-tenant"], "t1");
}

#[test]
fn bodies_past_the_cap_are_413() {
    let config = HttpServerConfig::default().max_body_bytes(8).body_read_timeout(None);
    let full = |bytes: &'static [u8]| http_body_util::Full::new(Bytes::from_static(bytes));
    assert_eq!(ready(read_body(&config, full(b"12345678"))).unwrap(), Bytes::from_static(b"12345678"));
    let refused = ready(read_body(&config, full(b"123456789"))).unwrap_err();
    assert_eq!(rpc(refused), (413, -32000, "Payload Too Large".into()));
}

#[test]
fn a_protected_resource_publishes_its_metadata_before_any_token_check() {
    use crate::transport::sse_http::verifier::StaticTokenVerifier;
    let verifier = std::sync::Arc::new(StaticTokenVerifier::new("t0ken").unwrap());
    let config =
        HttpServerConfig::default().protected_resource(ProtectedResource::new("https://mcp.example/mcp", verifier));
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        assert!(matches!(target(&config, &Method::GET, path), Target::ResourceMetadata(_)), "{path}");
        assert!(!needs_token(&config, path), "{path}");
    }
    assert_eq!(target(&config, &Method::POST, "/mcp"), Target::Post);
    assert!(needs_token(&config, "/mcp"));
}
