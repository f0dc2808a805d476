//! The bound on requests an upstream makes of the client (sampling, elicitation, roots) that
//! wait, relayed, for one downstream connection's answers: past
//! [`Callers::with_max_pending`](super::Callers::with_max_pending) at once
//! ([`DEFAULT_MAX_PENDING_CLIENT_REQUESTS`]), the upstream's request gets a JSON-RPC error
//! naming the limit at once and nothing is sent downstream, so a client that never answers
//! holds at most that many of them (each also ends at the deadline). Not here: the deadline
//! itself, and which downstream request a relayed one belongs to (the rest of `Callers`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::proto::jsonrpc::{ErrorCode, ErrorObject};
use crate::server::Context;

/// The default of [`Callers::with_max_pending`](super::Callers::with_max_pending): 16 requests
/// to one downstream client waiting for its answers at once.
pub const DEFAULT_MAX_PENDING_CLIENT_REQUESTS: usize = 16;

/// Relayed requests waiting, by downstream connection.
#[derive(Default)]
pub(super) struct Pending {
    waiting: Mutex<HashMap<usize, usize>>,
}

/// One relayed request's place among its connection's, given back when dropped.
pub(super) struct Slot {
    pending: Arc<Pending>,
    key: usize,
    /// Keeps the connection (and so its key) alive while the place is held.
    _connection: Arc<dyn std::any::Any + Send + Sync>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut waiting = self.pending.waiting.lock().expect("pending lock");
        if let Some(n) = waiting.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                waiting.remove(&self.key);
            }
        }
    }
}

impl Pending {
    /// A place for a relayed `method` on `context`'s downstream connection, or the error the
    /// upstream gets when `max` of them wait already.
    pub(super) fn reserve(self: &Arc<Self>, context: &Context, method: &str, max: usize) -> Result<Slot, ErrorObject> {
        let connection: Arc<dyn std::any::Any + Send + Sync> = context.connection.clone();
        let key = Arc::as_ptr(&connection) as *const () as usize;
        let mut waiting = self.waiting.lock().expect("pending lock");
        let n = waiting.entry(key).or_default();
        if *n >= max {
            tracing::debug!(method, max, "a relayed request refused: max_pending_client_requests reached");
            let message = format!(
                "mcp-bridge: {method} not relayed: the downstream client has {max} requests of upstreams waiting for \
                 its answers already (the limit max_pending_client_requests = {max}); try again when one is answered"
            );
            let data = serde_json::json!({"limit": "max_pending_client_requests", "max": max});
            let error = ErrorObject::new(ErrorCode::INTERNAL_ERROR, message);
            return Err(error.clone().with_data(&data).unwrap_or(error));
        }
        *n += 1;
        Ok(Slot { pending: self.clone(), key, _connection: connection })
    }
}
