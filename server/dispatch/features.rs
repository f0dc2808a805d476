//! The dispatch of resources, prompts, completion and logging: one more `impl` of the
//! connection's [`Dispatcher`], kept apart from the tool dispatch.
//!
//! Lists and `logging/setLevel`/`resources/(un)subscribe` are answered at once; reads, prompt
//! renders and completions run their handler in a task of their own (tracked, so that shutdown
//! waits for them). Which request comes here is the method table's business: a method of a
//! capability the server does not advertise never does.
//!
//! Logging (`logging/setLevel`): the level is stored per session and filters what
//! [`Server::log`](crate::server::Server::log) sends to it; before any setLevel the session gets every
//! message (the spec leaves the default to the server).

use std::future::Future;
use std::sync::{Arc, RwLock};

use super::{input_required, invalid_params, params_or_default, write_arguments, Dispatcher, Era, Round, RoundOf};
use crate::peer::Peer;
use crate::proto::jsonrpc::{Body, ErrorCode, ErrorObject, Id};
use crate::proto::mcp_types::{
    CompleteRequestParams, EmptyResult, GetPromptRequestParams, ListPromptsRequestParams, ListPromptsResult,
    ListResourceTemplatesRequestParams, ListResourceTemplatesResult, ListResourcesRequestParams, ListResourcesResult,
    ReadResourceRequestParams, SetLevelRequestParams, SubscribeRequestParams,
};
use crate::server::context::UntilInput;
use crate::server::method_table::Resources;
use crate::server::registry::Registrations;
use crate::server::{completion, pagination, prompts, resources};
use crate::transport::Transport;
use serde_json::Value;

fn required<T: serde::de::DeserializeOwned + Clone + Send + Sync + 'static>(
    method: &str,
    params: Option<Body>,
) -> Result<T, ErrorObject> {
    match params {
        None => Err(invalid_params(format!("{method} needs params"))),
        Some(body) => body.into_decoded().map_err(invalid_params),
    }
}

impl Dispatcher {
    /// Answers a `resources/*` request (`name` is its method).
    pub(super) fn resources<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: Id,
        (method, name): (Resources, &str),
        params: Option<Body>,
        era: &Era,
    ) {
        match method {
            Resources::List => {
                let outcome = self.list_resources(params);
                self.answer(peer, id, era, outcome);
            }
            Resources::ListTemplates => {
                let outcome = self.list_templates(params);
                self.answer(peer, id, era, outcome);
            }
            Resources::Read => self.read_resource(peer, id, params, era),
            Resources::Subscribe | Resources::Unsubscribe => {
                let outcome = required::<SubscribeRequestParams>(name, params).map(|p| {
                    let mut subscriptions = self.session.1.subscriptions.lock().expect("subscriptions lock");
                    if method == Resources::Subscribe {
                        subscriptions.insert(p.uri);
                    } else {
                        subscriptions.remove(&p.uri);
                    }
                    Body::typed(EmptyResult::default())
                });
                self.answer(peer, id, era, outcome);
            }
        }
    }

    /// `logging/setLevel`.
    pub(super) fn set_level(&self, params: Option<Body>) -> Result<Body, ErrorObject> {
        required::<SetLevelRequestParams>("logging/setLevel", params).map(|p| {
            // One level for both log paths: `Server::log` and handlers' `Context::log`.
            self.connection.set_log_level(p.level);
            *self.session.1.level.lock().expect("level lock") = Some(p.level);
            Body::typed(EmptyResult::default())
        })
    }

    /// Runs `work` in a tracked task and answers `id` with its outcome.
    /// Answers `id` later with what `work` gives or, when the work stopped to ask the client
    /// (a 2026-07-28 round, `input`), with that round's `InputRequiredResult`.
    fn answer_or_ask<T: Transport, R: serde::Serialize + Send + Sync + 'static>(
        &self,
        peer: &Peer<T>,
        id: Id,
        era: &Era,
        input: Option<Round>,
        work: impl Future<Output = Result<R, ErrorObject>> + Unpin + Send + 'static,
    ) {
        let inner = self.inner.clone();
        self.answer_later(peer, id, era, async move {
            let round = input.as_ref().map(|(round, _)| round.clone());
            match (UntilInput { work, round }).await {
                Some(outcome) => outcome.map(Body::typed),
                None => {
                    let (round, binding) = input.as_ref().expect("only a request with a round stops for input");
                    Ok(input_required(&inner, round, binding))
                }
            }
        });
    }

    fn answer_later<T: Transport>(
        &self,
        peer: &Peer<T>,
        id: Id,
        era: &Era,
        work: impl Future<Output = Result<Body, ErrorObject>> + Send + 'static,
    ) {
        let guard = self.tracker.enter();
        let peer = peer.clone();
        let era = era.clone();
        crate::transport::task::spawn_for_request(async move {
            let outcome = era.finish(work.await);
            let _ = peer.respond(&id, outcome).await;
            drop(guard);
        });
    }

    /// One page of `registered`, after the cursor of a list request's `params`, each entry
    /// made into what the list carries by `item`.
    fn page_of<E, T>(
        &self,
        registered: &RwLock<Registrations<E>>,
        cursor: Option<&str>,
        item: impl Fn(&E) -> T,
    ) -> Result<(Vec<T>, Option<String>), ErrorObject> {
        let all: Vec<Arc<E>> = registered.read().expect("registrations lock").values().cloned().collect();
        let (page, next_cursor) = pagination::page(&all, cursor, self.inner.page_size)?;
        Ok((page.iter().map(|entry| item(entry)).collect(), next_cursor))
    }

    fn list_resources(&self, params: Option<Body>) -> Result<Body, ErrorObject> {
        let params: ListResourcesRequestParams = params_or_default(params)?;
        let registered = &self.inner.registry.resources;
        let (resources, next_cursor) = self.page_of(registered, params.cursor.as_deref(), |e| e.resource.clone())?;
        Ok(Body::typed(ListResourcesResult { resources, next_cursor, meta: None, extra: Default::default() }))
    }

    fn list_templates(&self, params: Option<Body>) -> Result<Body, ErrorObject> {
        let params: ListResourceTemplatesRequestParams = params_or_default(params)?;
        let registered = &self.inner.registry.templates;
        let (resource_templates, next_cursor) =
            self.page_of(registered, params.cursor.as_deref(), |e| e.template.clone())?;
        Ok(Body::typed(ListResourceTemplatesResult {
            resource_templates,
            next_cursor,
            meta: None,
            extra: Default::default(),
        }))
    }

    pub(super) fn list_prompts(&self, params: Option<Body>) -> Result<Body, ErrorObject> {
        let params: ListPromptsRequestParams = params_or_default(params)?;
        let registered = &self.inner.registry.prompts;
        let (prompts, next_cursor) = self.page_of(registered, params.cursor.as_deref(), |e| e.prompt.clone())?;
        Ok(Body::typed(ListPromptsResult { prompts, next_cursor, meta: None, extra: Default::default() }))
    }

    fn read_resource<T: Transport>(&self, peer: &Peer<T>, id: Id, params: Option<Body>, era: &Era) {
        let params: ReadResourceRequestParams = match required("resources/read", params) {
            Ok(params) => params,
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
        let Some((read, variables)) = resources::find(&self.inner, &params.uri) else {
            let mut error = resources::resource_not_found(&params.uri);
            if matches!(era, Era::PerRequest(_)) {
                // 2026-07-28 (SEP-2164) answers an unknown resource -32602, keeping `data.uri`.
                error.code = ErrorCode::INVALID_PARAMS;
            }
            return self.answer(peer, id, era, Err(error));
        };
        let responses = params.input_responses.as_ref().and_then(|r| serde_json::to_value(r).ok());
        let round = RoundOf {
            method: "resources/read",
            target: &params.uri,
            arguments: |out: &mut Vec<u8>| out.extend_from_slice(b"{}"),
            responses: responses.as_ref().and_then(Value::as_object),
            state: params.request_state.as_deref(),
        };
        let (context, _, input) =
            match self.context_with_round(peer, &id, era, params.meta.clone().map(Box::new), round) {
                Ok(opened) => opened,
                Err(e) => return self.answer(peer, id, era, Err(e)),
            };
        let request =
            resources::ResourceRequest { uri: params.uri, variables, meta: params.meta, context: Some(context) };
        self.answer_or_ask(peer, id, era, input, read(request));
    }

    pub(super) fn get_prompt<T: Transport>(&self, peer: &Peer<T>, id: Id, params: Option<Body>, era: &Era) {
        let params: GetPromptRequestParams = match required("prompts/get", params) {
            Ok(params) => params,
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
        let Some(entry) = self.inner.registry.prompts.read().expect("prompts lock").get(&params.name) else {
            let error = ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Prompt {} not found", params.name));
            return self.answer(peer, id, era, Err(error));
        };
        let arguments = params.arguments.unwrap_or_default();
        if let Err(e) = prompts::check_arguments(&entry.prompt, &arguments) {
            return self.answer(peer, id, era, Err(e));
        }
        let responses = params.input_responses.as_ref().and_then(|r| serde_json::to_value(r).ok());
        let round = RoundOf {
            method: "prompts/get",
            target: &params.name,
            // Through a `Value`, whose map writes its keys in order.
            arguments: |out: &mut Vec<u8>| write_arguments(out, &serde_json::to_value(&arguments).unwrap_or_default()),
            responses: responses.as_ref().and_then(Value::as_object),
            state: params.request_state.as_deref(),
        };
        let (context, _, input) =
            match self.context_with_round(peer, &id, era, params.meta.clone().map(Box::new), round) {
                Ok(opened) => opened,
                Err(e) => return self.answer(peer, id, era, Err(e)),
            };
        let request =
            prompts::PromptRequest { name: params.name, arguments, meta: params.meta, context: Some(context) };
        let get = entry.get.clone();
        self.answer_or_ask(peer, id, era, input, get(request));
    }

    pub(super) fn complete<T: Transport>(&self, peer: &Peer<T>, id: Id, params: Option<Body>, era: &Era) {
        let resolved = required::<CompleteRequestParams>("completion/complete", params)
            .and_then(|params| completion::resolve(&self.inner, &params));
        let (completer, request) = match resolved {
            Ok(resolved) => resolved,
            Err(e) => return self.answer(peer, id, era, Err(e)),
        };
        #[cfg(feature = "http")]
        let request = completion::CompletionRequest { http: peer.transport().http_request(&id), ..request };
        self.answer_later(peer, id, era, async move {
            let values = match completer {
                Some(completer) => completer(request).await?,
                None => Vec::new(),
            };
            Ok(Body::typed(completion::result(values)))
        });
    }
}
