//! The gateway as the downstream server's forwarder ([`Forwarding`]): each forwarded request
//! routed to the server that listed its name, URI or template, checked against the policy and
//! the rate limits first, its answer passed on as written (less its stamps, its URIs mapped),
//! progress relayed, and observed once (audit log, live feed, metrics) however it ends.
//!
//! Not here: the catalog (`view.rs`), the client's requests of an upstream (`callers.rs`).

use super::*;

/// The gateway as the downstream server's forwarder.
pub(crate) struct Forwarding(pub(crate) Arc<Gateway>, pub(crate) Option<Arc<Served>>);

impl Forwarder for Forwarding {
    fn forward(&self, request: Forwarded) -> ForwardFuture {
        let gateway = self.0.clone();
        let scope = gateway.scope(self.1.as_ref());
        let Forwarded { method, params, context, .. } = request;
        // `tools/call` feeds the live view and the audit log itself; the other methods are
        // observed here, only while someone listens or (`prompts/get`, `resources/read`) the
        // audit log is on.
        let audited = gateway.audit.get().is_some() && AUDITED.contains(&method);
        if method == "tools/call" || !(gateway.live.listening() || audited) {
            return Forwarding::route(gateway, scope, method, params, context);
        }
        let (server, name) = scope.view.target(method, params.as_ref());
        let endpoint = self.1.as_ref().map(|e| e.name.clone());
        let started = Instant::now();
        let observed_context = context.clone();
        let answer = Forwarding::route(gateway.clone(), scope, method, params, context);
        Box::pin(async move {
            // Observed when it ends, or as cancelled when a cancellation drops this future first.
            let mut unanswered = Unanswered {
                gateway: &gateway,
                endpoint: endpoint.as_deref(),
                context: &observed_context,
                method,
                server: &server,
                tool: &name,
                arguments: None,
                started,
                ended: None,
            };
            let answer = answer.await;
            unanswered.ended = Some(answer.as_ref().map_or_else(outcome_of, |_| AuditOutcome::Ok));
            drop(unanswered);
            answer
        })
    }
}

impl Forwarding {
    pub(super) fn route(
        gateway: Arc<Gateway>,
        scope: Scope,
        method: &'static str,
        params: Option<Body>,
        context: Context,
    ) -> ForwardFuture {
        // Each kind of method's future is boxed on its own, as the future of an async fn given
        // everything by value (no async block around it: that would hold its arguments twice):
        // one future holding every method's states would be as large as the largest, and be
        // moved whole into its box on every call.
        match method {
            // Observes its own duration (with its tool's name).
            "tools/call" => Box::pin(gateway.call_tool(scope, params, Arc::new(context))),
            "prompts/get" | "resources/read" | "completion/complete" => {
                Box::pin(gateway.answer(scope, method, params, Arc::new(context)))
            }
            listing => {
                let started = Instant::now();
                let answer = gateway.listing(&scope, listing, &context);
                gateway.served(method, started, &answer);
                Box::pin(std::future::ready(answer))
            }
        }
    }
}

impl Gateway {
    /// The answer to a `prompts/get`, `resources/read` or `completion/complete`, its duration
    /// observed.
    pub(super) async fn answer(
        self: Arc<Self>,
        scope: Scope,
        method: &'static str,
        params: Option<Body>,
        context: Arc<Context>,
    ) -> Result<Body, ErrorObject> {
        if method == "prompts/get" {
            // Observes its own duration (with its prompt's name).
            return self.get_prompt(&scope, params, &context).await;
        }
        let started = Instant::now();
        let answer = match method {
            "resources/read" => self.read_resource(&scope, params, &context).await,
            _ => self.complete(&scope, params, &context).await,
        };
        self.served(method, started, &answer);
        answer
    }

    /// Observes the duration of a downstream `method` request, which got `answer`, `started`
    /// then, labelled with no tool or prompt (a `tools/call` or `prompts/get` whose target is
    /// known observes its own, with the name).
    pub(super) fn served(&self, method: &'static str, started: Instant, answer: &Result<Body, ErrorObject>) {
        let ended = Ended::of(answer);
        self.metrics.server_operation(Operation { method, tool: "", ended }, started.elapsed());
    }
}

/// The methods the audit log has a line for: those that use a tool, a prompt or a resource.
pub(super) const AUDITED: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// How a call that failed with `error` ended, as the audit log and the live view say it.
pub(super) fn outcome_of(error: &ErrorObject) -> AuditOutcome {
    match error.code {
        DENIED => AuditOutcome::Denied,
        RATE_LIMITED => AuditOutcome::RateLimited,
        _ => AuditOutcome::Error,
    }
}

/// A routed request on its way (`tools/call`, and the others while they are observed):
/// observed once, when dropped, with how it ended, or as [`AuditOutcome::Cancelled`] when it
/// never did (its future dropped by a cancellation).
pub(super) struct Unanswered<'a> {
    pub(super) gateway: &'a Gateway,
    pub(super) endpoint: Option<&'a str>,
    pub(super) context: &'a Context,
    pub(super) method: &'static str,
    pub(super) server: &'a str,
    pub(super) tool: &'a str,
    pub(super) arguments: Option<&'a serde_json::Map<String, serde_json::Value>>,
    pub(super) started: Instant,
    pub(super) ended: Option<AuditOutcome>,
}

impl Drop for Unanswered<'_> {
    fn drop(&mut self) {
        let ended = self.ended.unwrap_or(AuditOutcome::Cancelled);
        let mut entry = observed(self.context, self.method, self.server, self.tool, ended, self.started);
        entry.arguments = self.arguments;
        entry.endpoint = self.endpoint;
        self.gateway.observe(&entry);
    }
}

/// The entry of the `method` request of `context` to `name` of `server` (empty: none), which
/// ended with `outcome`, `started` then.
pub(super) fn observed<'a>(
    context: &'a Context,
    method: &'a str,
    server: &'a str,
    name: &'a str,
    outcome: AuditOutcome,
    started: Instant,
) -> AuditEntry<'a> {
    AuditEntry {
        caller: context.principal(),
        session: context.session_id(),
        endpoint: None,
        method,
        server,
        name,
        outcome,
        latency: started.elapsed(),
        id: serde_json::to_value(context.request_id()).unwrap_or_default(),
        arguments: None,
    }
}

/// A route's server and name as borrowed strings.
pub(super) fn pair(route: Option<&(String, String)>) -> Option<(&str, &str)> {
    route.map(|(s, n)| (s.as_str(), n.as_str()))
}

impl Gateway {
    /// The answer to one of the list methods, from the current view, less what the policy
    /// denies the caller of `context`.
    pub(super) fn listing(&self, scope: &Scope, method: &str, context: &Context) -> Result<Body, ErrorObject> {
        let view = &scope.view;
        let policy = &scope.policy;
        let caller = context.principal();
        let allowed = |kind: Kind, route: Option<(&str, &str)>| match (&policy, route) {
            (None, _) => true,
            (Some(policy), Some((server, name))) => policy.decide(caller, kind, server, name).allowed(),
            (Some(_), None) => false,
        };
        match method {
            "tools/list" => {
                let tools = view.tools.iter().filter(|t| allowed(Kind::Tool, pair(view.tool_routes.get(&t.name))));
                Ok(Body::typed(ListToolsResult { tools: tools.cloned().collect(), ..ListToolsResult::default() }))
            }
            "prompts/list" => Ok(Body::typed(ListPromptsResult {
                prompts: view
                    .prompts
                    .iter()
                    .filter(|p| allowed(Kind::Prompt, pair(view.prompt_routes.get(&p.name))))
                    .cloned()
                    .collect(),
                next_cursor: None,
                meta: None,
                extra: Default::default(),
            })),
            "resources/list" => Ok(Body::typed(ListResourcesResult {
                resources: view
                    .resources
                    .iter()
                    .filter(|r| allowed(Kind::Resource, pair(view.resolve_uri(&r.uri).as_ref())))
                    .cloned()
                    .collect(),
                next_cursor: None,
                meta: None,
                extra: Default::default(),
            })),
            "resources/templates/list" => Ok(Body::typed(ListResourceTemplatesResult {
                resource_templates: view
                    .templates
                    .iter()
                    .filter(|t| allowed(Kind::Resource, pair(view.resolve_uri(&t.uri_template).as_ref())))
                    .cloned()
                    .collect(),
                next_cursor: None,
                meta: None,
                extra: Default::default(),
            })),
            _ => Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, "Method not found")),
        }
    }
}

pub(super) fn decode<T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static>(
    params: Option<Body>,
    method: &str,
) -> Result<T, ErrorObject> {
    let Some(params) = params else {
        return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {method} needs params")));
    };
    params.into_decoded().map_err(|e| ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {e}")))
}

/// The tool a `tools/call`'s `params` name and its arguments: all the gateway forwards of
/// them (the rest dropped here, not held by the call's future).
pub(super) fn name_and_arguments(
    params: Option<Body>,
) -> Result<(String, Option<serde_json::Map<String, serde_json::Value>>), ErrorObject> {
    let CallToolRequestParams { name, arguments, .. } = decode(params, "tools/call")?;
    Ok((name, arguments))
}

/// `server`'s tool result `body` as the downstream client gets it, and whether it is a tool's
/// failure (`isError`): passed on as written where only stamps are to go
/// ([`tool_result::rewrite`]), else decoded and edited ([`edit_typed`]).
pub(super) fn pass_on(view: &View, server: &str, body: Body) -> Result<(Body, bool), SetError> {
    let uris_mapped = view.slug_of.contains_key(server);
    let body = match body {
        Body::Raw(raw) => match tool_result::rewrite(raw.get(), uris_mapped) {
            ResultCheck::AsWritten { is_error } => return Ok((Body::Raw(raw), is_error)),
            ResultCheck::Rewritten { raw, is_error } => return Ok((Body::Raw(raw), is_error)),
            ResultCheck::Typed => Body::Raw(raw),
        },
        typed => typed,
    };
    edit_typed(view, server, body)
}

/// [`pass_on`] through the typed result: decoded (an upstream result that is no final tool
/// result is the error [`ConnectionSet::call_tool_on`] gives), its stamps taken off, its
/// content's URIs mapped.
pub(super) fn edit_typed(view: &View, server: &str, body: Body) -> Result<(Body, bool), SetError> {
    let mut result =
        decode_tool_result(body).map_err(|source| SetError::Client { server: server.to_owned(), source })?;
    let is_error = result.is_error == Some(true);
    result.result_type = None;
    unstamp(&mut result.meta, &mut result.extra);
    if view.slug_of.contains_key(server) {
        map_content_uris(view, server, &mut result);
    }
    Ok((Body::typed(result), is_error))
}

/// The error of a request the policy refuses: -32003, naming the target and the rule
/// (`data`: `rule`, `kind`, `name`).
pub(super) fn denied(kind: Kind, name: &str, decision: &Decision) -> ErrorObject {
    let rule = decision.rule_name();
    let message = match &decision.rule {
        Some(rule) => format!(
            "mcp-bridge: {} {} is denied to this caller by policy rule {}",
            kind.as_str(),
            name,
            printable(rule)
        ),
        None => format!("mcp-bridge: {} {} is denied to this caller by the policy's default", kind.as_str(), name),
    };
    let error = ErrorObject::new(DENIED, message);
    let data = serde_json::json!({"rule": rule, "kind": kind.as_str(), "name": name});
    error.clone().with_data(&data).unwrap_or(error)
}

/// The code of a request the gateway's policy refuses.
pub const DENIED: ErrorCode = ErrorCode(-32003);

/// The code of a call a rate limit refuses (`data`: `limit`, `retryAfterMs`).
pub const RATE_LIMITED: ErrorCode = ErrorCode::RATE_LIMITED;

/// What a downstream client gets for an upstream failure: the upstream's own JSON-RPC error as
/// it is, anything else -32603 naming the server.
pub(super) fn upstream_error(server: &str, e: SetError) -> ErrorObject {
    if let SetError::Client { source: ClientError::Rpc { error, .. }, .. } = e {
        return error;
    }
    let mut error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("mcp-bridge: {e}"));
    if let Ok(with) = error.clone().with_data(&serde_json::json!({ "server": server })) {
        error = with;
    }
    error
}

/// Takes off a result what was the upstream's to say, not ours: its identity (2026-07-28
/// `_meta` serverInfo) and its era's stamps (`resultType`, `ttlMs`, `cacheScope`); the
/// downstream server stamps its own where the downstream era has them. `meta` is a result's `_meta`, inline or boxed (a tool result's).
pub(super) fn unstamp<M: std::borrow::BorrowMut<ResultMeta>>(
    meta: &mut Option<M>,
    extra: &mut serde_json::Map<String, serde_json::Value>,
) {
    if let Some(m) = meta {
        let m = m.borrow_mut();
        m.server_info = None;
        if m.related_task.is_none() && m.extra.is_empty() {
            *meta = None;
        }
    }
    for key in ["resultType", "ttlMs", "cacheScope"] {
        extra.remove(key);
    }
}

/// What the progress relay's task is given: a notification to send, or a flush to answer once
/// everything before it is sent.
pub(super) enum Relayed {
    Progress(crate::peer::Progress),
    Flush(tokio::sync::oneshot::Sender<()>),
}

/// A progress callback that sends each upstream progress notification downstream, in order,
/// under the downstream request's own token; and the relay's queue, so that the caller can wait
/// for every notification to be sent before the result goes out ([`flush`]).
pub(super) fn relay_progress(
    context: Arc<Context>,
) -> (impl Fn(crate::peer::Progress) + Send + Sync + 'static, tokio::sync::mpsc::UnboundedSender<Relayed>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Relayed>();
    crate::transport::task::spawn(async move {
        while let Some(relayed) = rx.recv().await {
            match relayed {
                Relayed::Progress(p) => {
                    let progress = p.progress.as_f64().unwrap_or_default();
                    let _ = context.progress(progress, p.total.and_then(|t| t.as_f64()), p.message).await;
                }
                Relayed::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    let queue = tx.clone();
    (
        move |p| {
            let _ = tx.send(Relayed::Progress(p));
        },
        queue,
    )
}

/// Waits until the relay has sent every notification queued so far.
pub(super) async fn flush(queue: &tokio::sync::mpsc::UnboundedSender<Relayed>) {
    let (done, sent) = tokio::sync::oneshot::channel();
    if queue.send(Relayed::Flush(done)).is_ok() {
        let _ = sent.await;
    }
}

/// Maps the URIs of resource links and embedded resources in a result to their downstream form.
pub(super) fn map_content_uris(view: &View, server: &str, result: &mut CallToolResult) {
    for block in &mut result.content {
        match block {
            ContentBlock::ResourceLink(link) => link.uri = view.map_uri(server, &link.uri),
            ContentBlock::Resource(embedded) => match &mut embedded.resource {
                ResourceContents::Text(c) => c.uri = view.map_uri(server, &c.uri),
                ResourceContents::Blob(c) => c.uri = view.map_uri(server, &c.uri),
                ResourceContents::Other(_) => {}
            },
            _ => {}
        }
    }
}
