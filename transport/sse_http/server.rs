//! The HTTP server side: [`HttpServer`] serves the Streamable HTTP transport on one endpoint
//! (default `/mcp`) and the legacy HTTP+SSE transport (`GET /sse`, `POST /message`), and hands
//! each MCP session to the application as a [`ServerTransport`].
//!
//! How HTTP exchanges map onto the transport
//! ([2025-11-25 transports](https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#streamable-http)):
//!
//! - A POST without `Mcp-Session-Id` carrying `initialize` creates a session: a new
//!   [`ServerTransport`] is handed to the application callback, and the initialize response
//!   carries the session id. Every message POSTed later with that id comes out of the same
//!   transport's [`recv`](crate::transport::Transport::recv).
//! - A POST holding only notifications and responses is answered 202 with no body. A POST
//!   holding requests is answered with an SSE stream (or one JSON body in JSON-response mode):
//!   the responses the application [`send`](crate::transport::Transport::send)s for those requests go there, with
//!   progress notifications whose token one of them carried; the stream ends after the last
//!   response.
//! - Other server-initiated messages go to the standalone stream opened by GET; when none is
//!   open, to the newest POST stream still waiting for a response; otherwise they are queued
//!   (at most [`QUEUED_FOR_GET`], the oldest dropped beyond) and sent when the client opens the
//!   standalone stream, and stored for a `Last-Event-ID` resumption of it. The spec leaves this
//!   open (the server MAY send on the GET stream); the TypeScript SDK drops such messages unless
//!   an event store keeps them for a resumption, which loses, e.g., a `roots/list` sent right
//!   after `notifications/initialized` by a client that opens its GET stream a moment later.
//! - Stateless mode: a POST's answer is one JSON body when only responses come; when a message
//!   related to one of its requests comes first (progress, a log), there is no other stream to
//!   carry it, so the answer becomes an SSE stream (without event ids: nothing can resume).
//! - 2026-07-28 (`MCP-Protocol-Version` naming it, or an unknown version; without a session,
//!   also a body whose `_meta` names it): each POST stands alone, like stateless mode, after
//!   the per-request checks of [`envelope::check_http`](crate::proto::envelope::check_http) (`_meta`, the `MCP-Protocol-Version`,
//!   `Mcp-Method` and `Mcp-Name` headers against the body, the version); a refusal or an error
//!   answer goes out with the revision's status (400, 404 for -32601). No session id is
//!   minted, GET and DELETE are 405, the `Mcp-Param-*` headers are kept for the application
//!   ([`Transport::param_headers`](crate::transport::Transport::param_headers)), and a client that goes away before its answer ends the
//!   exchange's transport (its request is cancelled).
//! - DELETE, idle expiry, and [`Transport::close`](crate::transport::Transport::close) by the application end the session: the
//!   transport's `recv` returns `None`, every stream ends, and the id is answered 404 from then on.
//! - Sessions shared with other replicas ([`HttpServerConfig::session_store`]): a replica that
//!   does not hold a session rebuilds it from the store. The application's requests to the
//!   client go out under ids `<replica>-<n>` naming this replica; a response naming another
//!   replica is relayed to it through the store ([`SessionStore::relay`](crate::transport::sse_http::SessionStore::relay)) and the POST gets
//!   202, one naming this replica gets the application's id back. A message for the standalone
//!   stream while this replica's GET is not open goes to the replica that last opened it
//!   ([`SessionStore::stream_holder`](crate::transport::sse_http::SessionStore::stream_holder); renewed with the session's record while the GET stays
//!   open), else stays here as above. Dropped with a log line
//!   (`tracing`): a response for a replica that is gone or never was, one that answers no
//!   request of its session, a relayed message for a session not held here. The store
//!   unreachable while a response must be relayed: 503 with a JSON-RPC error body, nothing of
//!   that POST handed on. None of this runs without a session store.
//!
//! Checks, in order: `Host` (DNS rebinding, 403), `Origin` (403), the bearer token when one is
//! configured ([`HttpServerConfig::bearer_token`]; 401 with `WWW-Authenticate: Bearer`, on the
//! MCP and legacy endpoints and on guarded [extra routes](super::routes)) or the OAuth access
//! token of a [protected resource](HttpServerConfig::protected_resource) (401 with
//! `resource_metadata` and `scope`, 503 when the authorization server cannot be asked; its
//! metadata path answers before this check), method (405),
//! `Accept` (406), `Content-Type` (415), body size (413), session id (400 missing, 404
//! unknown), `MCP-Protocol-Version` (400 unsupported), JSON-RPC decoding (400 with a -32700 or
//! -32600 error body), and for a protected resource the scopes the decoded requests need (403
//! `insufficient_scope`) and the session's holder (404 for another holder's token).
//!
//! Slow and idle clients: a request's head must arrive within
//! [`HttpServerConfig::header_read_timeout`] (30 s, counted while the server waits for a head,
//! so it also closes a keep-alive connection idle that long), its body within
//! [`HttpServerConfig::body_read_timeout`] (30 s, else 408); hyper answers 431 to more than
//! 100 headers or a head over 408 KiB. Each holds only its own connection meanwhile.
//!
//! Why the token comes third: `Host` and `Origin` cost nothing and refuse a DNS-rebinding page
//! or a foreign browser origin before it can even learn whether a token is wanted (no 401 vs
//! 403 oracle for them); every later check either reads the body (up to 4 MiB buffered for a
//! stranger) or answers something about the endpoint (405, 406, 415, 404 of a session id),
//! which an unauthenticated client should not get. Paths that are neither an MCP endpoint nor
//! a guarded route are not guarded: unknown paths answer 404 as before, public routes answer.
//!
//! The principal a handler sees is the one of the HTTP request that carried its own request;
//! the session keeps the one of its latest request (a refreshed token
//! of the same holder replaces it); every request is verified anew, and a stream ends when the
//! token that opened it expires (`token_expiry.rs`): the client reconnects with a fresh
//! token and resumes with `Last-Event-ID`.
//!
//! The listener ([`HttpServer`]) serves HTTP/1.1 and HTTP/2 on one port; the same handling is
//! the [`HttpService`](crate::transport::sse_http::HttpService) an application mounts in its own stack ([`super::service`]).
//!
//! Not here: verifying tokens ([`crate::auth`]), what the messages mean.
//!
//! The parts, one job each, in `server/`:
//! - `config`: [`HttpServerConfig`] and its builder.
//! - `listener`: [`HttpServer`], the accept loop, HTTP/1.1 and HTTP/2 per connection.
//! - `router`: the guards in order, then the handler a request goes to.
//! - `decide`: the request's decisions as pure functions of its head and the configuration
//!   (Host and Origin, path and method, media types, the era of a POST, version headers,
//!   session lookups, admission, the 2026-07-28 checks), unit-tested without a socket.
//! - `guards`: the bearer token and the protected resource's checks and answers.
//! - `post`, `per_request` (2026-07-28), `get_delete` (the standalone stream, resumption,
//!   DELETE), `legacy` (HTTP+SSE), `routes_served`: the handlers.
//! - `answer`: a POST's answer (202, an SSE stream, one JSON body).
//! - `session`, `stream`, `cancelled`: one session, its streams, cancelled requests.
//! - `bookkeeping`: their state and decisions as plain data and pure functions fed `now`
//!   (resumption targets, idle expiry, streams kept, the queue for a GET, replica relays),
//!   unit-tested without a runtime.
//! - `registry`: the sessions' table, admission, idle expiry, shutdown.
//! - `replicas`: sessions shared with other replicas through a session store.
//! - `reply`: the small answers and readers the handlers share.

mod answer;
mod bookkeeping;
mod cancelled;
mod config;
mod decide;
mod get_delete;
mod guards;
mod legacy;
mod listener;
mod per_request;
mod post;
mod registry;
mod replicas;
mod reply;
mod router;
mod routes_served;
mod session;
mod stream;

pub use bookkeeping::QUEUED_FOR_GET;
pub use config::{
    HostCheck, HttpServerConfig, OriginCheck, RequestLimit, RequestRefused, ResponseMode, DEFAULT_MAX_SESSIONS,
};
pub use listener::HttpServer;
pub use session::ServerTransport;

pub(super) use listener::serve_listener;
pub(super) use registry::Shared;
pub(super) use router::handle;

#[cfg(test)]
mod core_tests;

#[cfg(test)]
mod tests {
    use super::answer::is_response;
    use super::session::params_progress_token;
    use crate::proto::jsonrpc::Body;

    #[test]
    fn progress_tokens_are_found_under_meta_even_with_escaped_keys_and_absent_otherwise() {
        let raw = |text: &str| Body::Raw(serde_json::value::RawValue::from_string(text.to_owned()).unwrap());
        let token = |text: &str, in_meta| params_progress_token(&raw(text), in_meta);
        let big = "x".repeat(70_000);
        assert_eq!(
            token(&format!(r#"{{"arguments":{{"text":"{big}"}},"_meta":{{"progressToken":7}}}}"#), true),
            Some("7".into())
        );
        assert_eq!(token(&format!(r#"{{"arguments":{{"text":"{big}"}}}}"#), true), None);
        assert_eq!(token(r#"{"_meta":{"progress\u0054oken":"t"}}"#, true), Some(r#""t""#.into()));
        assert_eq!(token(r#"{"progressToken":"t","progress":1}"#, false), Some(r#""t""#.into()));
        assert_eq!(token(r#"{"progressToken":"t"}"#, true), None, "a request's token is under _meta");
        let typed = Body::typed(serde_json::json!({"_meta": {"progressToken": "p"}}));
        assert_eq!(params_progress_token(&typed, true), Some(r#""p""#.into()));
        // Typed tools/call params (decode_typed's) are read without being written out.
        let call: crate::proto::mcp_types::CallToolRequestParams =
            serde_json::from_str(r#"{"name":"echo","_meta":{"progressToken":7}}"#).unwrap();
        assert_eq!(params_progress_token(&Body::typed(call.clone()), true), Some("7".into()));
        let call = crate::proto::mcp_types::CallToolRequestParams { meta: None, ..call };
        assert_eq!(params_progress_token(&Body::typed(call), true), None);
    }

    #[test]
    fn responses_are_told_from_requests_by_the_first_deciding_member() {
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"result":{"text":"x"}}"#));
        assert!(is_response(br#"{"result":{},"jsonrpc":"2.0","id":1}"#));
        assert!(is_response(br#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#));
        // Members named alike inside params are not the message's own.
        assert!(!is_response(br#"{"params":{"result":1},"jsonrpc":"2.0","id":3,"method":"sampling/createMessage"}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","\u006dethod":"ping","id":1}"#));
        // Anything else is taken for a response, as before.
        assert!(is_response(b"[]"));
    }
}
