//! Prompts and argument completion: a `review` prompt with a required `language` argument,
//! rendered by a handler, and a completer suggesting languages as the user types.
//!
//! Run: `cargo run --example prompts` (MCP on stdin/stdout); get `review` with
//! `{"language": "rust"}`, or complete its `language` argument from `"r"`.

use mcpwire::proto::mcp_types::{ContentBlock, Role, TextContent};
use mcpwire::server::{prefix_matches, prompt, prompt_argument, prompt_message, prompt_result, Server};

const LANGUAGES: [&str; 4] = ["python", "ruby", "rust", "typescript"];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let review = prompt("review", "Asks for a code review", vec![prompt_argument("language", "The language", true)]);
    let server = Server::builder()
        .name("prompts")
        .prompt(review, |request| async move {
            let language = &request.arguments["language"];
            let text = format!("Please review this {language} code for correctness and style.");
            let content = ContentBlock::Text(TextContent { text, ..Default::default() });
            Ok(prompt_result(vec![prompt_message(Role::User, content)]))
        })
        .complete_prompt_argument("review", "language", |request| async move {
            Ok(prefix_matches(&LANGUAGES, &request.value))
        })
        .build()?;
    server.serve_stdio().await?;
    Ok(())
}
