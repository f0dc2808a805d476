//! Who a request is made on behalf of: a [`CallerId`] held in a task-local scope
//! ([`with_caller`]), read by [`Peer`](super::Peer) when it sends a request so that the request
//! is tagged with it while in flight.
//!
//! A gateway serving many downstream clients wraps each call it forwards upstream in
//! `with_caller(that client, …)`; when the upstream server then asks something back (sampling,
//! elicitation, roots) the client layer finds the caller through the tag of the request it is
//! related to and runs the answering handler in the same scope, so [`current_caller`] names the
//! downstream client to ask.
//!
//! ```no_run
//! use mcpwire::client::connection_set::{ConnectionSet, SetOptions};
//! use mcpwire::client::{current_caller, with_caller, CallerId};
//! use mcpwire::proto::jsonrpc::{ErrorCode, ErrorObject};
//! use mcpwire::proto::mcp_types::{ElicitRequestParams, ElicitResult};
//!
//! // The set's elicitation handler asks whichever downstream client caused the request.
//! let options = SetOptions::default().with_elicitation(|server: String, _params: ElicitRequestParams| async move {
//!     match current_caller() {
//!         Some(CallerId(session)) => todo!("ask downstream session {session} on behalf of {server}"),
//!         None => Err::<ElicitResult, _>(ErrorObject::new(ErrorCode::INTERNAL_ERROR, "no caller to ask")),
//!     }
//! });
//! # let config: mcpwire::client::config::McpConfig = todo!();
//! let set = ConnectionSet::new(config, options);
//! # async {
//! // Each forwarded call runs in the scope of the downstream session it is made for.
//! let result = with_caller(CallerId(7), set.call_tool_on("files", "read", None, Default::default())).await;
//! # };
//! ```
//!
//! Not here: the attribution rules (the client module), the meaning of the number (the host's).

use std::future::Future;

tokio::task_local! {
    static CALLER: CallerId;
}

/// An opaque name, chosen by the host, for whoever a request is made on behalf of (a
/// downstream client of a gateway, a user, a conversation …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallerId(pub u64);

/// Runs `fut` with `caller` current: requests sent from it are tagged with `caller`, and
/// [`current_caller`] returns it inside. Scopes nest; the innermost wins. Tasks spawned from
/// `fut` do not inherit the scope.
pub async fn with_caller<F: Future>(caller: CallerId, fut: F) -> F::Output {
    CALLER.scope(caller, fut).await
}

/// The caller of the innermost [`with_caller`] scope this code runs in, if any.
pub fn current_caller() -> Option<CallerId> {
    CALLER.try_with(|caller| *caller).ok()
}

/// Runs `fut` in `caller`'s scope when there is one, as it is otherwise.
#[cfg(any(feature = "client", test))]
pub(crate) async fn with_caller_opt<F: Future>(caller: Option<CallerId>, fut: F) -> F::Output {
    match caller {
        Some(caller) => CALLER.scope(caller, fut).await,
        None => fut.await,
    }
}

/// Calls `f` with `caller` current, when there is one (to build a handler's future in the scope
/// its body may read synchronously).
#[cfg(any(feature = "client", test))]
pub(crate) fn sync_with_caller_opt<R>(caller: Option<CallerId>, f: impl FnOnce() -> R) -> R {
    match caller {
        Some(caller) => CALLER.sync_scope(caller, f),
        None => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_innermost_scope_is_current_and_none_outside() {
        assert_eq!(current_caller(), None);
        let seen = with_caller(CallerId(1), async {
            let outer = current_caller();
            let inner = with_caller(CallerId(2), async { current_caller() }).await;
            (outer, inner, current_caller())
        })
        .await;
        assert_eq!(seen, (Some(CallerId(1)), Some(CallerId(2)), Some(CallerId(1))));
        assert_eq!(with_caller_opt(None, async { current_caller() }).await, None);
        assert_eq!(sync_with_caller_opt(Some(CallerId(7)), current_caller), Some(CallerId(7)));
        // A spawned task does not inherit the scope.
        let spawned = with_caller(CallerId(3), async { tokio::spawn(async { current_caller() }).await.unwrap() }).await;
        assert_eq!(spawned, None);
    }
}
