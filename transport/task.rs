//! Spawning the stack's background tasks (readers, writers, timers, handlers that wait) behind
//! one future type, so tokio's task machinery (the cell, the harness, the poll and drop paths)
//! is compiled once for all of them rather than once per spawned `async` block: over a hundred
//! copies of it were a tenth of the lib's generated code.
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
