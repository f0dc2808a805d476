//! Progress notifications and cancellation from a tool: `count` reports each step to a client
//! that asked for progress (`_meta.progressToken`), and a watcher notices when the client
//! cancels the call (`notifications/cancelled`: the handler is aborted, no answer is sent).
//!
//! Run: `cargo run --example progress` (MCP on stdin/stdout); call `count` with `{"to": 5}`
//! with a progress token, and cancel it to see `count: cancelled at step N` on stderr.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mcpwire::server::{text_result, Server, ToolError};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Count {
    to: u64,
    /// Pause between steps, in milliseconds (the work being reported on).
    #[serde(default = "step_ms")]
    step_ms: u64,
}

fn step_ms() -> u64 {
    100
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let schema = json!({
        "type": "object",
        "properties": {"to": {"type": "integer", "minimum": 1}, "step_ms": {"type": "integer"}},
        "required": ["to"]
    });
    let server = Server::builder()
        .name("progress")
        .typed_tool("count", "Counts to `to`, reporting progress", schema, |args: Count, ctx| async move {
            // The handler's future is dropped on cancellation; work that must clean up watches
            // `ctx.cancelled()` from a task of its own.
            let step = Arc::new(AtomicU64::new(0));
            let (watched, at) = (ctx.clone(), step.clone());
            let watcher = tokio::spawn(async move {
                watched.cancelled().await;
                eprintln!("count: cancelled at step {}", at.load(Ordering::SeqCst));
            });
            for i in 1..=args.to {
                step.store(i, Ordering::SeqCst);
                let message = Some(format!("step {i} of {}", args.to));
                ctx.progress(i as f64, Some(args.to as f64), message)
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                tokio::time::sleep(Duration::from_millis(args.step_ms)).await;
            }
            watcher.abort();
            Ok(text_result(format!("counted to {}", args.to)))
        })
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
