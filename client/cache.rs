//! The list cache: pages of `tools/list`, `prompts/list`, `resources/list` and
//! `resources/templates/list` that carry a positive `ttlMs` (2026-07-28), kept by method and
//! cursor until it passes or a list-changed notification evicts them, and the pagination loop
//! that reads every page. Also each listed tool's output schema, for typed calls. Not here:
//! the list calls themselves (`calls`).

use super::{typed, Client, ClientError};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::proto::mcp_types::{
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListTasksResult, ListToolsResult, Method,
};
use crate::proto::session::RequestOptions;
use crate::transport::Transport;

/// List pages kept while their `ttlMs` lasts, by method and cursor; and the output schema of
/// each tool listed (for typed calls).
#[derive(Default)]
pub(super) struct ListCache {
    pub(super) pages: HashMap<(&'static str, Option<String>), CachedPage>,
    pub(super) outputs: HashMap<String, Option<Arc<typed::KnownOutput>>>,
}

pub(super) struct CachedPage {
    pub(super) page: Arc<dyn std::any::Any + Send + Sync>,
    pub(super) fresh_until: tokio::time::Instant,
}

impl ListCache {
    /// Drops the pages a list-changed notification makes stale.
    pub(super) fn evict_for(&mut self, notification: &str) {
        let methods: &[&str] = match notification {
            "notifications/tools/list_changed" => &["tools/list"],
            "notifications/prompts/list_changed" => &["prompts/list"],
            "notifications/resources/list_changed" => &["resources/list", "resources/templates/list"],
            _ => return,
        };
        self.pages.retain(|(method, _), _| !methods.contains(method));
        if methods.contains(&"tools/list") {
            self.outputs.clear();
        }
    }
}

/// The `ttlMs` of a list result (2026-07-28), where a list has one.
pub(super) trait CacheHint {
    fn ttl_ms(&self) -> Option<u64>;
}

impl CacheHint for ListToolsResult {
    fn ttl_ms(&self) -> Option<u64> {
        self.ttl_ms
    }
}

macro_rules! ttl_in_extra {
    ($($ty:ty),*) => {$(
        impl CacheHint for $ty {
            fn ttl_ms(&self) -> Option<u64> {
                self.extra.get("ttlMs").and_then(Value::as_u64)
            }
        }
    )*};
}
ttl_in_extra!(ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult);

impl CacheHint for ListTasksResult {
    fn ttl_ms(&self) -> Option<u64> {
        None
    }
}

impl<T: Transport> Client<T> {
    /// One page of a list method: the cached one while it is fresh, else fetched (and kept
    /// when it carries a positive `ttlMs`).
    pub(super) async fn list_page<M>(&self, params: M::Params, cursor: Option<String>) -> Result<M::Output, ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: CacheHint + Clone + Send + Sync + 'static,
    {
        let key = (M::NAME, cursor);
        let now = tokio::time::Instant::now();
        {
            let mut cache = self.inner.cache.lock().expect("never poisoned");
            match cache.pages.get(&key) {
                Some(c) if c.fresh_until > now => {
                    if let Some(page) = c.page.downcast_ref::<M::Output>() {
                        return Ok(page.clone());
                    }
                }
                Some(_) => {
                    cache.pages.remove(&key);
                }
                None => {}
            }
        }
        let page = self.request::<M>(params, RequestOptions::default()).await?;
        if let Some(ttl) = page.ttl_ms().filter(|&ttl| ttl > 0) {
            let fresh_until = tokio::time::Instant::now() + Duration::from_millis(ttl);
            let cached = CachedPage { page: Arc::new(page.clone()), fresh_until };
            self.inner.cache.lock().expect("never poisoned").pages.insert(key, cached);
        }
        Ok(page)
    }

    /// Forgets every cached list page: the next list call asks the server.
    pub fn clear_list_cache(&self) {
        self.inner.cache.lock().expect("never poisoned").pages.clear();
    }

    /// Reads every page of a list method.
    pub(super) async fn list_all<M, I>(
        &self,
        page: impl Fn(Option<String>) -> M::Params,
        split: impl Fn(M::Output) -> (Vec<I>, Option<String>),
    ) -> Result<Vec<I>, ClientError>
    where
        M: Method,
        M::Params: Send + Sync + 'static,
        M::Output: CacheHint + Clone + Send + Sync + 'static,
    {
        let mut items = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for pages in 1.. {
            let params = page(cursor.clone());
            let (mut more, next) = split(self.list_page::<M>(params, cursor.take()).await?);
            items.append(&mut more);
            let Some(next) = next else { return Ok(items) };
            if !seen.insert(next.clone()) || pages >= self.inner.max_pages {
                return Err(ClientError::Pagination { method: M::NAME.to_owned(), cursor: next, pages });
            }
            cursor = Some(next);
        }
        unreachable!("the page loop only ends by returning")
    }
}
