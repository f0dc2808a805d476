//! Spawning the stack's background tasks (readers, writers, timers, handlers that wait) behind
//! one future type, so tokio's task machinery (the cell, the harness, the poll and drop paths)
//! is compiled once for all of them rather than once per spawned `async` block: over a hundred
//! copies of it were a tenth of the lib's generated code.
//!
//! Also [`poll_once`]: a future polled once before (or instead of) spawning it, for work that
//! usually finishes without waiting.
//!
//! Not here: tasks whose output someone reads through the `JoinHandle` (they keep
//! `tokio::spawn`), or any scheduling policy: this is `tokio::spawn` with the future boxed.

use std::future::Future;
use std::pin::Pin;

use tokio::task::JoinHandle;

/// A spawned task's future: any `()` future, boxed.
pub(crate) type TaskFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// `tokio::spawn(future)`, with the future boxed first: one allocation more per spawn, one
/// monomorphization of the task for every caller.
pub(crate) fn spawn<F>(future: F) -> JoinHandle<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    spawn_boxed(Box::pin(future))
}

/// Spawns a future that is boxed already (no second box).
#[inline(never)]
pub(crate) fn spawn_boxed(future: TaskFuture) -> JoinHandle<()> {
    tokio::spawn(future)
}

/// Like [`spawn`], for a server's work on one of the peer's requests: with the feature `otel`,
/// the task runs inside that request's span (see [`crate::telemetry`]), so what it sends
/// upstream joins the request's trace. Not for tasks that outlive the request.
#[cfg(feature = "server")]
pub(crate) fn spawn_for_request<F>(future: F) -> JoinHandle<()>
where
    F: Future<Output = ()> + Send + 'static,
{
    spawn_boxed_for_request(Box::pin(future))
}

/// [`spawn_for_request`] for a future that is boxed already.
#[cfg(feature = "server")]
pub(crate) fn spawn_boxed_for_request(future: TaskFuture) -> JoinHandle<()> {
    #[cfg(feature = "otel")]
    let future = crate::telemetry::in_request_span(future);
    spawn_boxed(future)
}

/// Polls `future` once with a waker that does nothing.
#[cfg(any(feature = "server", test))]
pub(crate) fn poll_once<F: std::future::Future + ?Sized>(future: std::pin::Pin<&mut F>) -> std::task::Poll<F::Output> {
    use std::task::{RawWaker, RawWakerVTable, Waker};
    const VTABLE: RawWakerVTable =
        RawWakerVTable::new(|_| RawWaker::new(std::ptr::null(), &VTABLE), |_| {}, |_| {}, |_| {});
    // SAFETY: every function of the vtable ignores the (null) data pointer.
    let waker = unsafe { Waker::from_raw(RawWaker::new(std::ptr::null(), &VTABLE)) };
    future.poll(&mut std::task::Context::from_waker(&waker))
}
