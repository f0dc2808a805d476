//! [`Callers`]: which downstream request an upstream's request to the client (sampling,
//! elicitation, roots) belongs to, answered by that request's client within a deadline, in the
//! call's trace; one that cannot be attributed is refused.
//!
//! Not here: forwarding the call itself (`routing.rs`).

use super::*;

/// How long a request an upstream makes of the client (sampling, elicitation, roots), relayed to
/// a downstream client, waits for that client's answer unless told otherwise
/// ([`Callers::with_deadline`]): two minutes, time for a person to fill a form. Past it the
/// downstream request is cancelled (`notifications/cancelled`) and the upstream gets an error
/// naming the deadline, so that a client that went away (a dropped stream nobody resumes)
/// cannot hold the calls waiting on it, nor the session's slots, for ever.
pub const DEFAULT_CLIENT_REQUEST_DEADLINE: Duration = Duration::from_secs(120);

/// The downstream requests being forwarded, by caller: an upstream's request to the client made
/// while one of them runs is answered by that request's downstream client (its [`Context`]),
/// within a deadline ([`DEFAULT_CLIENT_REQUEST_DEADLINE`] unless set).
pub struct Callers {
    next: AtomicU64,
    contexts: Mutex<super::view::OwnKeyMap<CallerId, Caller>>,
    deadline: Duration,
    pending: Arc<pending::Pending>,
    max_pending: usize,
}

impl Default for Callers {
    fn default() -> Self {
        Callers::with_deadline(DEFAULT_CLIENT_REQUEST_DEADLINE)
    }
}

/// A downstream request being forwarded: its context, and the span it is served in (with
/// feature `otel`, what a request relayed to its client on its behalf stays in the trace of).
#[derive(Clone)]
pub(super) struct Caller {
    context: Arc<Context>,
    span: tracing::Span,
}

/// A forwarded request's entry in [`Callers`], removed when dropped.
pub(super) struct CallerGuard<'a> {
    pub(super) callers: &'a Callers,
    pub(super) id: CallerId,
}

impl Drop for CallerGuard<'_> {
    fn drop(&mut self) {
        self.callers.contexts.lock().expect("callers lock").remove(&self.id);
    }
}

/// Why an upstream's request to the client cannot be answered downstream.
pub(super) fn unrelated(method: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!(
            "mcp-bridge: {method} is not related to a downstream request in flight (or to several at once), \
             so no downstream client can answer it"
        ),
    )
}

/// What the downstream client answered to `asked` (a relayed request `method`), or, when it did
/// not within `deadline`, an error naming the deadline; `asked` is then dropped, which cancels
/// the downstream request.
async fn answered_within<R>(
    deadline: Duration,
    method: &str,
    asked: impl std::future::Future<Output = Result<R, ClientRequestError>>,
) -> Result<R, ErrorObject> {
    match tokio::time::timeout(deadline, asked).await {
        Ok(answer) => answer.map_err(refused),
        Err(_) => Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!(
                "mcp-bridge: the downstream client did not answer {method} within {} ms (the bridge's deadline \
                 for requests to a client)",
                deadline.as_millis()
            ),
        )),
    }
}

/// `asked` (a request relayed to the downstream client of `call`), sent so that it stays in
/// the trace of the call it is made on behalf of, whether or not the upstream propagated that
/// trace (`telemetry::relay_parent`); as it is without feature `otel`.
pub(super) fn in_trace_of<F: std::future::Future>(
    call: &tracing::Span,
    asked: F,
) -> impl std::future::Future<Output = F::Output> {
    #[cfg(feature = "otel")]
    {
        tracing::Instrument::instrument(asked, crate::telemetry::relay_parent(call))
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = call;
        asked
    }
}

/// A downstream client's refusal, as the upstream gets it.
pub(super) fn refused(e: ClientRequestError) -> ErrorObject {
    match e {
        ClientRequestError::Request(crate::peer::RequestError::Rpc(error)) => error,
        ClientRequestError::NotSupported { .. } | ClientRequestError::MissingCapability { .. } => {
            ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("mcp-bridge: the downstream client: {e}"))
        }
        e => ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("mcp-bridge: the downstream client: {e}")),
    }
}

impl Callers {
    /// No callers yet; each relayed request waits at most `deadline` for the downstream
    /// client's answer.
    pub fn with_deadline(deadline: Duration) -> Callers {
        Callers {
            next: AtomicU64::new(0),
            contexts: Mutex::default(),
            deadline,
            pending: Arc::default(),
            max_pending: DEFAULT_MAX_PENDING_CLIENT_REQUESTS,
        }
    }

    /// At most `max` relayed requests wait for one downstream connection's answers at once
    /// (default [`DEFAULT_MAX_PENDING_CLIENT_REQUESTS`]); past it the upstream's request gets a
    /// -32603 error naming the limit (`data.limit` = `"max_pending_client_requests"`).
    pub fn with_max_pending(mut self, max: usize) -> Callers {
        self.max_pending = max;
        self
    }

    /// How long a relayed request waits for the downstream client's answer.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Registers `context` as a caller for as long as the guard lives.
    pub(super) fn enter(&self, context: &Arc<Context>) -> CallerGuard<'_> {
        let id = CallerId(self.next.fetch_add(1, Ordering::Relaxed));
        let caller = Caller { context: context.clone(), span: tracing::Span::current() };
        self.contexts.lock().expect("callers lock").insert(id, caller);
        CallerGuard { callers: self, id }
    }

    /// The caller the client layer attributed the current request to.
    pub(super) fn current(&self, method: &str) -> Result<Caller, ErrorObject> {
        let id = current_caller().ok_or_else(|| unrelated(method))?;
        self.contexts.lock().expect("callers lock").get(&id).cloned().ok_or_else(|| unrelated(method))
    }

    /// As [`current`](Self::current), with a place among the requests waiting on that
    /// caller's downstream connection, held until the answer.
    pub(super) fn current_with_slot(&self, method: &str) -> Result<(Caller, pending::Slot), ErrorObject> {
        let caller = self.current(method)?;
        let slot = self.pending.reserve(&caller.context, method, self.max_pending)?;
        Ok((caller, slot))
    }

    /// `options` with handlers that answer every upstream's sampling, elicitation (form and URL)
    /// and roots requests through the downstream client whose request caused them, each within
    /// [`Callers::deadline`].
    pub fn handlers(self: &Arc<Self>, options: SetOptions) -> SetOptions {
        let (sampling, elicitation, roots) = (self.clone(), self.clone(), self.clone());
        let deadline = self.deadline;
        options
            .with_sampling(move |_server: String, params: CreateMessageRequestParams| {
                const METHOD: &str = "sampling/createMessage";
                let caller = sampling.current_with_slot(METHOD);
                async move {
                    let (caller, _slot) = caller?;
                    let asked = in_trace_of(&caller.span, caller.context.create_message(params));
                    answered_within(deadline, METHOD, asked).await
                }
            })
            .with_elicitation_modes(
                move |_server: String, params: ElicitRequestParams| {
                    const METHOD: &str = "elicitation/create";
                    let caller = elicitation.current_with_slot(METHOD);
                    async move {
                        let (caller, _slot) = caller?;
                        let asked = in_trace_of(&caller.span, caller.context.elicit_with(params));
                        answered_within(deadline, METHOD, asked).await
                    }
                },
                ElicitationModes { form: true, url: true },
            )
            .with_roots_handler(move |_server: String| {
                // Unrelated (a server asks right after connecting): the bridge's own roots, none.
                let caller = match roots.current("roots/list") {
                    Ok(_) => roots.current_with_slot("roots/list").map(Some),
                    Err(_) => Ok(None),
                };
                async move {
                    let Some((caller, _slot)) = caller? else { return Ok(Vec::new()) };
                    let asked = in_trace_of(&caller.span, caller.context.list_roots());
                    let roots: Vec<Root> = answered_within(deadline, "roots/list", asked).await?;
                    Ok(roots)
                }
            })
    }
}
