//! Completion (`completion/complete`): suggestions for a prompt argument (`ref/prompt`) or a
//! resource template variable (`ref/resource`, whose `uri` is the template), given what has
//! been typed and the other arguments already resolved (`context.arguments`).
//!
//! A completer is registered per (prompt, argument) or (template, variable). The answer holds
//! at most [`MAX_VALUES`] values (the spec's cap), with `total` (every value the completer
//! gave) and `hasMore`. A reference to an unknown prompt or template is -32602; an argument
//! with no completer gets no values.
//!
//! Not here: ranking: the completer's order is kept.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::registry::CompletionKey;
use super::{Server, ServerBuilder};
use crate::proto::jsonrpc::{ErrorCode, ErrorObject};
use crate::proto::mcp_types::{CompleteRequestParams, CompleteResult, Completion, CompletionReference};

/// Values sent in one answer at most.
pub const MAX_VALUES: usize = 100;

/// The future a completer returns, boxed.
pub type CompleteFuture = Pin<Box<dyn Future<Output = Result<Vec<String>, ErrorObject>> + Send>>;

pub(crate) type CompleteFn = Arc<dyn Fn(CompletionRequest) -> CompleteFuture + Send + Sync>;

/// What a completer is asked to complete.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The argument (or template variable) being completed.
    pub argument: String,
    /// What has been typed so far.
    pub value: String,
    /// The other arguments already resolved (`context.arguments`).
    pub context: BTreeMap<String, String>,
    #[cfg(feature = "http")]
    pub(crate) http: Option<std::sync::Arc<crate::transport::sse_http::HttpRequestParts>>,
}

impl PartialEq for CompletionRequest {
    /// Equal argument, value and context (the HTTP request is no value).
    fn eq(&self, other: &Self) -> bool {
        (&self.argument, &self.value, &self.context) == (&other.argument, &other.value, &other.context)
    }
}

impl CompletionRequest {
    /// The HTTP request the `completion/complete` request arrived in, as
    /// [`Context::http_request`](super::Context::http_request) gives it.
    #[cfg(feature = "http")]
    pub fn http_request(&self) -> Option<&crate::transport::sse_http::HttpRequestParts> {
        self.http.as_deref()
    }
}

/// The `candidates` that start with `value`, ignoring ASCII case, in their order.
pub fn prefix_matches<S: AsRef<str>>(candidates: &[S], value: &str) -> Vec<String> {
    let value = value.to_ascii_lowercase();
    candidates
        .iter()
        .map(AsRef::as_ref)
        .filter(|c| c.to_ascii_lowercase().starts_with(&value))
        .map(str::to_owned)
        .collect()
}

fn boxed<F, Fut>(completer: F) -> CompleteFn
where
    F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<String>, ErrorObject>> + Send + 'static,
{
    Arc::new(move |request| Box::pin(completer(request)) as CompleteFuture)
}

impl ServerBuilder {
    /// Completes argument `argument` of prompt `prompt` with `completer`.
    pub fn complete_prompt_argument<F, Fut>(
        mut self,
        prompt: impl Into<String>,
        argument: impl Into<String>,
        completer: F,
    ) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorObject>> + Send + 'static,
    {
        self.pending.completers.push((CompletionKey::Prompt(prompt.into(), argument.into()), boxed(completer)));
        self
    }

    /// Completes variable `variable` of the resource template `uri_template` with `completer`.
    pub fn complete_template_variable<F, Fut>(
        mut self,
        uri_template: impl Into<String>,
        variable: impl Into<String>,
        completer: F,
    ) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorObject>> + Send + 'static,
    {
        self.pending.completers.push((CompletionKey::Template(uri_template.into(), variable.into()), boxed(completer)));
        self
    }
}

impl Server {
    /// Sets (or replaces) the completer of a prompt argument while serving.
    pub fn set_prompt_completion<F, Fut>(&self, prompt: impl Into<String>, argument: impl Into<String>, completer: F)
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ErrorObject>> + Send + 'static,
    {
        let key = CompletionKey::Prompt(prompt.into(), argument.into());
        self.inner.registry.completers.write().expect("completers lock").insert(key, boxed(completer));
    }
}

/// The completer for a request, after checking that its reference exists.
///
/// # Errors
/// -32602 for an unknown prompt or template, or a reference of another kind.
pub(crate) fn resolve(
    server: &super::Inner,
    params: &CompleteRequestParams,
) -> Result<(Option<CompleteFn>, CompletionRequest), ErrorObject> {
    let registry = &server.registry;
    let key = match &params.reference {
        CompletionReference::Prompt(p) => {
            if !registry.prompts.read().expect("prompts lock").contains(&p.name) {
                return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, format!("Prompt {} not found", p.name)));
            }
            CompletionKey::Prompt(p.name.clone(), params.argument.name.clone())
        }
        CompletionReference::ResourceTemplate(r) => {
            if !registry.templates.read().expect("templates lock").contains(&r.uri) {
                return Err(ErrorObject::new(
                    ErrorCode::INVALID_PARAMS,
                    format!("Resource template {} not found", r.uri),
                ));
            }
            CompletionKey::Template(r.uri.clone(), params.argument.name.clone())
        }
        CompletionReference::Other(_) => {
            return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "Invalid params: unknown completion reference"))
        }
    };
    let completer = registry.completers.read().expect("completers lock").get(&key).cloned();
    let request = CompletionRequest {
        argument: params.argument.name.clone(),
        value: params.argument.value.clone(),
        context: params.context.as_ref().and_then(|c| c.arguments.clone()).unwrap_or_default(),
        #[cfg(feature = "http")]
        http: None,
    };
    Ok((completer, request))
}

/// The result for `values`: the first [`MAX_VALUES`], the total and whether there are more.
pub(crate) fn result(values: Vec<String>) -> CompleteResult {
    let total = values.len();
    let values: Vec<String> = values.into_iter().take(MAX_VALUES).collect();
    CompleteResult {
        completion: Completion {
            has_more: Some(total > values.len()),
            total: Some(total as u64),
            values,
            extra: Default::default(),
        },
        meta: None,
        extra: Default::default(),
    }
}
