//! The catalog of checks: for each, its id, a one-line title, where the rule comes from (the
//! section of the specification, the same path in every revision it applies to), its level and
//! the sentence of the specification it enforces, quoted. The battery (`battery.rs`) records one
//! finding per check and era; this table is all the report says about a rule.
//!
//! Levels are the specification's: a rule the text states with MUST (or that the revision's
//! JSON schema requires) is `Must`; SHOULD, and behaviour the text describes without a keyword,
//! is `Should`. Only a failed `Must` fails a run, unless `--strict`.

/// How binding a rule is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// MUST, MUST NOT, or required by the revision's schema.
    Must,
    /// SHOULD, SHOULD NOT, or described behaviour.
    Should,
}

impl Level {
    /// `MUST` or `SHOULD`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        }
    }
}

/// Where a rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every era, every transport.
    All,
    /// The handshake era (`initialize`, up to 2025-11-25), every transport.
    Handshake,
    /// 2026-07-28, every transport.
    Modern,
    /// stdio only, every era.
    Stdio,
    /// Streamable HTTP, every era.
    Http,
    /// Streamable HTTP in the handshake era.
    HttpHandshake,
    /// Streamable HTTP at 2026-07-28.
    HttpModern,
}

/// The transport a run speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A child process's stdin and stdout.
    Stdio,
    /// Streamable HTTP.
    StreamableHttp,
    /// The legacy HTTP+SSE transport of 2024-11-05 (no rule of Streamable HTTP applies).
    LegacySse,
}

impl Scope {
    /// Whether the rule applies to a run in `modern` (2026-07-28) or not, over `transport`.
    pub fn applies(self, modern: bool, transport: Transport) -> bool {
        let http = transport == Transport::StreamableHttp;
        match self {
            Scope::All => true,
            Scope::Handshake => !modern,
            Scope::Modern => modern,
            Scope::Stdio => transport == Transport::Stdio,
            Scope::Http => http,
            Scope::HttpHandshake => http && !modern,
            Scope::HttpModern => http && modern,
        }
    }
}

/// One rule the checker enforces.
#[derive(Debug)]
pub struct Rule {
    /// Stable id, `area.name` (what `--expected-failures` lists).
    pub id: &'static str,
    /// What a passing server does, in one line.
    pub title: &'static str,
    /// MUST or SHOULD.
    pub level: Level,
    /// The section of the specification, under `docs/specification/REV/`.
    pub section: &'static str,
    /// The sentence enforced, quoted from the specification (or naming the schema definition).
    pub quote: &'static str,
    /// Where it applies.
    pub scope: Scope,
}

impl Rule {
    /// The area: the id up to its first dot.
    pub fn area(&self) -> &'static str {
        self.id.split('.').next().unwrap_or(self.id)
    }
}

/// The rule with `id`.
///
/// # Panics
/// When no rule has that id (a bug in the battery).
pub fn rule(id: &str) -> &'static Rule {
    RULES.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("no check {id}"))
}

use Level::{Must, Should};

/// Every check, in the order of the report.
pub static RULES: &[Rule] = &[
    // lifecycle
    Rule {
        id: "lifecycle.initialize",
        title: "initialize answers with protocolVersion, capabilities and serverInfo",
        level: Must,
        section: "basic/lifecycle#initialization",
        quote: "The server MUST respond with its own capabilities and information",
        scope: Scope::Handshake,
    },
    Rule {
        id: "lifecycle.unknown-version",
        title: "an unknown protocol version offered is answered with a version the server supports",
        level: Must,
        section: "basic/lifecycle#version-negotiation",
        quote: "If the server supports the requested protocol version, it MUST respond with the same version. \
                Otherwise, the server MUST respond with another protocol version it supports.",
        scope: Scope::Handshake,
    },
    Rule {
        id: "lifecycle.before-initialize",
        title: "a request (other than ping) before initialize is refused, not served",
        level: Should,
        section: "basic/lifecycle#initialization",
        quote: "The initialization phase MUST be the first interaction between client and server. … The client \
                SHOULD NOT send requests other than pings before the server has responded to the initialize \
                request. (What the server does with one is not stated with a keyword: SHOULD.)",
        scope: Scope::Handshake,
    },
    Rule {
        id: "lifecycle.discover",
        title: "server/discover answers with supportedVersions, capabilities and serverInfo",
        level: Must,
        section: "server/discover",
        quote: "Servers MUST implement it.",
        scope: Scope::Modern,
    },
    Rule {
        id: "lifecycle.unsupported-version",
        title: "a request at an unknown protocol version gets UnsupportedProtocolVersionError (-32022) listing the supported ones",
        level: Must,
        section: "basic/versioning#protocol-version-negotiation",
        quote: "If the server does not implement the requested version (…), it MUST respond with an \
                UnsupportedProtocolVersionError listing the versions it does support",
        scope: Scope::Modern,
    },
    Rule {
        id: "lifecycle.result-type",
        title: "every result carries resultType",
        level: Must,
        section: "basic/index#responses",
        quote: "The result MUST include a resultType field to indicate the type of the result.",
        scope: Scope::Modern,
    },
    // JSON-RPC
    Rule {
        id: "jsonrpc.notifications-unanswered",
        title: "no notification of ours is answered",
        level: Must,
        section: "basic/index#notifications",
        quote: "Notifications are sent from one side to the other as a one-way message. The receiver MUST NOT send a response.",
        scope: Scope::All,
    },
    Rule {
        id: "jsonrpc.response-ids",
        title: "every response carries the id of a request we sent",
        level: Must,
        section: "basic/index#responses",
        quote: "Result responses MUST include the same ID as the request they correspond to.",
        scope: Scope::All,
    },
    Rule {
        id: "jsonrpc.response-to-nothing",
        title: "a response to no request is ignored (no answer)",
        level: Should,
        section: "basic/index#responses",
        quote: "Responses are sent in reply to requests, containing either the result or error of the operation.",
        scope: Scope::All,
    },
    Rule {
        id: "errors.unknown-method",
        title: "an unknown method gets error -32601",
        level: Must,
        section: "basic/index#error-codes",
        quote: "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification; MCP uses \
                the standard JSON-RPC 2.0 error codes (-32700, -32600 to -32603) for general protocol failures \
                (JSON-RPC 2.0: -32601 Method not found)",
        scope: Scope::All,
    },
    Rule {
        id: "errors.parse-error",
        title: "malformed JSON gets -32700 with a null id, and the server carries on",
        level: Should,
        section: "basic/index#messages",
        quote: "All messages between MCP clients and servers MUST follow the JSON-RPC 2.0 specification \
                (JSON-RPC 2.0: invalid JSON → -32700 Parse error, id null)",
        scope: Scope::Stdio,
    },
    Rule {
        id: "errors.unknown-tool",
        title: "a call of an unknown tool is refused (never a successful result)",
        level: Must,
        section: "server/tools#error-handling",
        quote: "Protocol Errors: Standard JSON-RPC errors for issues like: Unknown tools; … Servers MUST: Validate all tool inputs",
        scope: Scope::All,
    },
    Rule {
        id: "errors.unknown-tool-protocol-error",
        title: "an unknown tool is a JSON-RPC error, not a tool result with isError",
        level: Should,
        section: "server/tools#error-handling",
        quote: "Protocol Errors: Standard JSON-RPC errors for issues like: Unknown tools",
        scope: Scope::All,
    },
    Rule {
        id: "errors.invalid-params",
        title: "tools/call without a name gets -32602",
        level: Should,
        section: "server/tools#error-handling",
        quote: "Protocol Errors: Standard JSON-RPC errors for issues like: … Malformed requests (requests that fail \
                to satisfy CallToolRequest schema)",
        scope: Scope::All,
    },
    Rule {
        id: "ping.answers",
        title: "ping answers with an empty result",
        level: Must,
        section: "basic/utilities/ping#behavior-requirements",
        quote: "The receiver MUST respond promptly with an empty response",
        scope: Scope::Handshake,
    },
    // capabilities
    Rule {
        id: "capabilities.served",
        title: "each advertised list method (tools, resources, prompts) answers",
        level: Must,
        section: "server/tools#capabilities",
        quote: "Servers that declare the tools capability MUST respond to tools/list requests (2026-07-28 text; \
                resources and prompts alike)",
        scope: Scope::All,
    },
    Rule {
        id: "capabilities.unadvertised-refused",
        title: "a list method of a capability not advertised is refused with an error",
        level: Should,
        section: "basic/lifecycle#operation",
        quote: "Both parties MUST: … Only use capabilities that were successfully negotiated",
        scope: Scope::All,
    },
    // pagination
    Rule {
        id: "pagination.cursor",
        title: "following nextCursor reaches the end of every list",
        level: Must,
        section: "server/utilities/pagination#response-format",
        quote: "Pagination starts when the server sends a response that includes: The current page of results; An \
                optional nextCursor field if more results exist",
        scope: Scope::All,
    },
    Rule {
        id: "pagination.no-duplicates",
        title: "no item comes back on two pages",
        level: Should,
        section: "server/utilities/pagination#implementation-guidelines",
        quote: "Servers SHOULD: Provide stable cursors",
        scope: Scope::All,
    },
    Rule {
        id: "pagination.stable-order",
        title: "listing twice gives the same items in the same order",
        level: Should,
        section: "server/tools#listing-tools",
        quote: "Servers SHOULD return tools in a deterministic order (i.e., the same ordering across requests when the \
                underlying set of tools has not changed).",
        scope: Scope::All,
    },
    // tools
    Rule {
        id: "tools.name-length",
        title: "tool names are 1 to 128 characters",
        level: Should,
        section: "server/tools#tool-names",
        quote: "Tool names SHOULD be between 1 and 128 characters in length (inclusive).",
        scope: Scope::All,
    },
    Rule {
        id: "tools.name-charset",
        title: "tool names use only ASCII letters, digits, _, - and . (nothing else)",
        level: Should,
        section: "server/tools#tool-names",
        quote: "The following SHOULD be the only allowed characters: uppercase and lowercase ASCII letters (A-Z, a-z), \
                digits (0-9), underscore (_), hyphen (-), and dot (.)",
        scope: Scope::All,
    },
    Rule {
        id: "tools.name-unique",
        title: "tool names are unique",
        level: Should,
        section: "server/tools#tool-names",
        quote: "Tool names SHOULD be unique within a server.",
        scope: Scope::All,
    },
    Rule {
        id: "tools.input-schema-object",
        title: "every inputSchema is an object schema (root type: object)",
        level: Must,
        section: "server/tools#tool",
        quote: "inputSchema: … MUST be a valid JSON Schema object (not null); schema: Tool.inputSchema.type is \
                const \"object\"",
        scope: Scope::All,
    },
    Rule {
        id: "tools.output-schema-object",
        title: "every outputSchema is an object schema (root type: object)",
        level: Must,
        section: "server/tools#output-schema",
        quote: "schema: Tool.outputSchema.type is const \"object\"",
        scope: Scope::All,
    },
    Rule {
        id: "tools.schema-valid",
        title: "input and output schemas are valid under their dialect (2020-12 by default)",
        level: Must,
        section: "basic/index#schema-validation",
        quote: "Schemas MUST be valid according to their declared or default dialect",
        scope: Scope::All,
    },
    Rule {
        id: "tools.schema-refs",
        title: "every $ref in a schema resolves inside it",
        level: Must,
        section: "basic/index#schema-validation",
        quote: "Schemas MUST be valid according to their declared or default dialect (a $ref that resolves to \
                nothing makes the schema unusable); 2026-07-28: implementations MUST NOT fetch an absolute $ref by default",
        scope: Scope::All,
    },
    Rule {
        id: "tools.definitions",
        title: "every tool (name, title, description, annotations, icons …) matches the revision's Tool schema",
        level: Must,
        section: "schema#tool",
        quote: "the revision's JSON schema, definition Tool (its schemas are checked by the checks above)",
        scope: Scope::All,
    },
    Rule {
        id: "tools.call-result",
        title: "each --call answers with a CallToolResult; structuredContent matches the outputSchema",
        level: Must,
        section: "server/tools#output-schema",
        quote: "If an output schema is provided: Servers MUST provide structured results that conform to this schema.",
        scope: Scope::All,
    },
    Rule {
        id: "cancellation.no-response",
        title: "a cancelled request (--slow-tool) is not answered",
        level: Should,
        section: "basic/utilities/cancellation#behavior-requirements",
        quote: "Receivers of cancellation notifications SHOULD: … Not send a response for the cancelled request",
        scope: Scope::All,
    },
    // results
    Rule {
        id: "results.schema",
        title: "every result matches the revision's JSON schema (the list, read and get results, content blocks)",
        level: Must,
        section: "schema",
        quote: "the revision's schema.json: ListToolsResult, ListResourcesResult, ReadResourceResult, ListPromptsResult, \
                GetPromptResult, CompleteResult, CallToolResult, InitializeResult / DiscoverResult",
        scope: Scope::All,
    },
    // resources
    Rule {
        id: "resources.read",
        title: "a listed resource can be read",
        level: Must,
        section: "server/resources#reading-resources",
        quote: "To retrieve resource contents, clients send a resources/read request",
        scope: Scope::All,
    },
    Rule {
        id: "resources.templates",
        title: "resources/templates/list answers, each uriTemplate a well-formed RFC 6570 template",
        level: Must,
        section: "server/resources#resource-templates",
        quote: "Resource templates allow servers to expose parameterized resources using URI templates [RFC 6570].",
        scope: Scope::All,
    },
    // prompts
    Rule {
        id: "prompts.get",
        title: "a listed prompt can be got with its required arguments",
        level: Must,
        section: "server/prompts#getting-a-prompt",
        quote: "To retrieve a specific prompt, clients send a prompts/get request.",
        scope: Scope::All,
    },
    Rule {
        id: "completion.complete",
        title: "completion/complete answers with at most 100 values (when completions are advertised)",
        level: Must,
        section: "server/utilities/completion#completion-results",
        quote: "Servers return an array of completion values ranked by relevance, with: Maximum 100 items per response",
        scope: Scope::All,
    },
    Rule {
        id: "logging.set-level",
        title: "logging/setLevel answers with an empty result (when logging is advertised)",
        level: Must,
        section: "server/utilities/logging#setting-log-level",
        quote: "Servers that emit log message notifications MUST declare the logging capability; To configure the \
                minimum log level, clients MAY send a logging/setLevel request",
        scope: Scope::Handshake,
    },
    // stdio
    Rule {
        id: "stdio.stdout-messages-only",
        title: "the server writes nothing but MCP messages on stdout",
        level: Must,
        section: "basic/transports#stdio",
        quote: "The server MUST NOT write anything to its stdout that is not a valid MCP message.",
        scope: Scope::Stdio,
    },
    // http
    Rule {
        id: "http.origin",
        title: "a request with a foreign Origin gets 403",
        level: Must,
        section: "basic/transports#security-warning",
        quote: "If the Origin header is present and invalid, servers MUST respond with HTTP 403 Forbidden.",
        scope: Scope::Http,
    },
    Rule {
        id: "http.host",
        title: "a request to a local server with a foreign Host gets an HTTP error status (DNS rebinding)",
        level: Should,
        section: "basic/transports#security-warning",
        quote: "Servers MUST validate the Origin header on all incoming connections to prevent DNS rebinding \
                attacks … Without these protections, attackers could use DNS rebinding to interact with local MCP \
                servers from remote websites. (A rebound request names the attacker's host in Host; the text states \
                no Host rule: SHOULD.)",
        scope: Scope::Http,
    },
    Rule {
        id: "http.accept",
        title: "a POST whose Accept lists neither application/json nor text/event-stream gets 406",
        level: Should,
        section: "basic/transports#sending-messages-to-the-server",
        quote: "The client MUST include an Accept header, listing both application/json and text/event-stream \
                (RFC 9110: 406 Not Acceptable)",
        scope: Scope::Http,
    },
    Rule {
        id: "http.content-type",
        title: "a POST whose body is not application/json gets 415",
        level: Should,
        section: "basic/transports#sending-messages-to-the-server",
        quote: "If the server cannot accept the input, it MUST return an HTTP error status code (RFC 9110: 415 \
                Unsupported Media Type)",
        scope: Scope::Http,
    },
    Rule {
        id: "http.malformed-body",
        title: "a POST of malformed JSON gets an HTTP error status",
        level: Must,
        section: "basic/transports#sending-messages-to-the-server",
        quote: "If the server cannot accept the input, it MUST return an HTTP error status code (e.g., 400 Bad Request).",
        scope: Scope::Http,
    },
    Rule {
        id: "http.notification-accepted",
        title: "a POSTed notification gets 202 Accepted with no body",
        level: Must,
        section: "basic/transports#sending-messages-to-the-server",
        quote: "If the input is a JSON-RPC response or notification: If the server accepts the input, the server \
                MUST return HTTP status code 202 Accepted with no body.",
        scope: Scope::Http,
    },
    Rule {
        id: "http.session-required",
        title: "a request without the issued Mcp-Session-Id gets 400",
        level: Should,
        section: "basic/transports#session-management",
        quote: "Servers that require a session ID SHOULD respond to requests without an MCP-Session-Id header \
                (other than initialization) with HTTP 400 Bad Request.",
        scope: Scope::HttpHandshake,
    },
    Rule {
        id: "http.session-deleted",
        title: "after DELETE, the session's id gets 404",
        level: Must,
        section: "basic/transports#session-management",
        quote: "The server MAY terminate the session at any time, after which it MUST respond to requests \
                containing that session ID with HTTP 404 Not Found.",
        scope: Scope::HttpHandshake,
    },
    Rule {
        id: "http.resume",
        title: "when the server gives SSE event ids, a GET with Last-Event-ID resumes the stream",
        level: Should,
        section: "basic/transports#resumability-and-redelivery",
        quote: "If the client wishes to resume after a disconnection …, it SHOULD issue an HTTP GET to the MCP \
                endpoint, and include the Last-Event-ID header … The server MAY use this header to replay messages \
                that would have been sent after the last event ID, on the stream that was disconnected (event ids \
                are the server's offer to resume: SHOULD)",
        scope: Scope::HttpHandshake,
    },
    Rule {
        id: "http.get-405",
        title: "GET on the endpoint gets 405",
        level: Should,
        section: "basic/transports/streamable-http#backward-compatibility",
        quote: "A server that supports only this revision and receives such traffic from an older client SHOULD \
                respond as follows: HTTP GET or DELETE to the MCP endpoint: respond with 405 Method Not Allowed.",
        scope: Scope::HttpModern,
    },
    Rule {
        id: "http.unknown-method-404",
        title: "an unknown method gets 404 with -32601",
        level: Must,
        section: "basic/transports/streamable-http#protocol-version-header",
        quote: "If the server does not implement the requested RPC method, it MUST respond with 404 Not Found and a \
                JSON-RPC error with code -32601",
        scope: Scope::HttpModern,
    },
    Rule {
        id: "http.header-mismatch",
        title: "an Mcp-Method header that differs from the body gets 400 with -32020",
        level: Must,
        section: "basic/transports/streamable-http#server-validation",
        quote: "When rejecting a request due to header validation failure, servers MUST return HTTP status 400 Bad \
                Request and MUST include a JSON-RPC error response (-32020 HeaderMismatch)",
        scope: Scope::HttpModern,
    },
    Rule {
        id: "http.name-mismatch",
        title: "an Mcp-Name header that differs from the body's params.name gets 400 with -32020",
        level: Must,
        section: "basic/transports/streamable-http#server-validation",
        quote: "When rejecting a request due to header validation failure, servers MUST return HTTP status 400 Bad \
                Request and MUST include a JSON-RPC error response (-32020 HeaderMismatch); failure conditions \
                include: a header value does not match the corresponding request body value",
        scope: Scope::HttpModern,
    },
    Rule {
        id: "http.version-header-mismatch",
        title: "an MCP-Protocol-Version header that differs from the body's protocolVersion gets 400 with -32020",
        level: Must,
        section: "basic/transports/streamable-http#protocol-version-header",
        quote: "The header value MUST match the io.modelcontextprotocol/protocolVersion field carried in the request \
                body's _meta. If the values do not match, the server MUST reject the request with 400 Bad Request \
                and a HeaderMismatch JSON-RPC error",
        scope: Scope::HttpModern,
    },
    Rule {
        id: "http.unsupported-version-400",
        title: "a request at an unknown protocol version gets 400",
        level: Must,
        section: "basic/transports/streamable-http#protocol-version-header",
        quote: "If the server does not implement the requested protocol version (…), it MUST respond with 400 Bad \
                Request and an UnsupportedProtocolVersionError",
        scope: Scope::HttpModern,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for rule in RULES {
            assert!(seen.insert(rule.id), "{} twice", rule.id);
            assert!(rule.id.contains('.') && !rule.id.contains(' '), "{}", rule.id);
            assert!(!rule.title.ends_with('.'), "{}", rule.id);
        }
    }
}
