//! Resources and resource templates: a static text resource, a resource read by a handler
//! each time, and a template (`greeting://{name}`) whose variables reach the handler, with
//! completion of the template's variable.
//!
//! Run: `cargo run --example resources` (MCP on stdin/stdout); read `file:///readme.txt`,
//! `counter://reads` or `greeting://Ada`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mcpwire::server::{prefix_matches, resource, resource_template, text_contents, Server};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut readme = resource("file:///readme.txt", "readme");
    readme.mime_type = Some("text/plain".into());
    let reads = Arc::new(AtomicU64::new(0));
    let server = Server::builder()
        .name("resources")
        .resource_text(readme, "mcpwire serves resources.")
        .resource(resource("counter://reads", "reads"), move |request| {
            let n = reads.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok(text_contents(request.uri, Some("text/plain"), n.to_string())) }
        })
        .resource_template(resource_template("greeting://{name}", "greeting"), |request| async move {
            let name = request.variables.get("name").cloned().unwrap_or_default();
            Ok(text_contents(request.uri, Some("text/plain"), format!("Hello, {name}!")))
        })
        .complete_template_variable("greeting://{name}", "name", |request| async move {
            Ok(prefix_matches(&["Ada", "Alan", "Grace"], &request.value))
        })
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
