//! An agent exposed as an MCP server, the way codex exposes itself: the tool `run_agent
//! {goal, root?}` runs a multi-step loop in which the host's model (asked through
//! `sampling/createMessage`, with the local actions `list_dir`, `read_file`, `search_text` and
//! `write_file` offered as sampling tools) chooses what to do next; the actions run under
//! `root` (paths that escape it are refused), every write is approved by the user first
//! (`elicitation/create`, a boolean `approve`), progress and log notifications stream while it
//! works, a cancelled call stops at once, and the result is structured (`steps`,
//! `filesTouched`, `answer`, with an output schema). A typed tool: both schemas are derived from
//! `AgentArgs` and `Outcome`, the approval form from `Approval`.
//!
//! Each call is its own run: its sampling and elicitation requests are made on behalf of the
//! call's request id (over HTTP they travel on that request's stream), so concurrent runs
//! never mix, and cancelling one call aborts only its run.
//!
//! Served by the `agent` example (stdio or HTTP) and by `mcp-bridge serve`'s embedded default.
//!
//! Not here: transports (the example and the bridge choose).

// Shared by the bridge, its examples, the tests and the benches, each using a part of it.
#![allow(dead_code)]

use std::path::{Component, Path, PathBuf};

use mcpwire::proto::mcp_types::{
    ContentBlock, CreateMessageRequestParams, Role, SamplingMessage, SamplingMessageContentBlock, Tool, ToolChoiceMode,
    ToolUseContent,
};
use mcpwire::schemars::{self, JsonSchema};
use mcpwire::server::{ClientRequestError, Context, Elicited, Form, Json, Server, ToolError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// The most model turns one run may take.
const MAX_STEPS: usize = 16;
/// The most bytes `read_file` returns.
const MAX_READ: usize = 64 * 1024;

fn action_tools() -> Vec<Tool> {
    let path = json!({"type": "string"});
    let schema = |properties: Value, required: &[&str]| {
        let mut schema = json!({"type": "object", "properties": properties});
        if !required.is_empty() {
            schema["required"] = json!(required);
        }
        schema
    };
    vec![
        Tool::new("list_dir", schema(json!({"path": path}), &[]))
            .description("List the entries of a directory under the root"),
        Tool::new("read_file", schema(json!({"path": path}), &["path"]))
            .description("Read a UTF-8 text file under the root"),
        Tool::new("search_text", schema(json!({"query": {"type": "string"}, "path": path}), &["query"]))
            .description("Find lines containing a text in the files under the root"),
        Tool::new("write_file", schema(json!({"path": path, "content": {"type": "string"}}), &["path", "content"]))
            .description("Write a text file under the root (the user approves it first)"),
    ]
}

/// `relative` under `root`, refusing absolute paths, `..` and symlinks that lead outside.
fn resolve(root: &Path, relative: &str) -> Result<PathBuf, String> {
    let rel = Path::new(relative);
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("path {relative:?} escapes the root"));
    }
    let path = root.join(rel);
    // The deepest existing ancestor must still be inside the root once symlinks are resolved.
    let mut existing = path.as_path();
    while !existing.exists() {
        existing = existing.parent().unwrap_or(root);
    }
    let real = existing.canonicalize().map_err(|e| format!("{relative}: {e}"))?;
    if !real.starts_with(root) {
        return Err(format!("path {relative:?} escapes the root"));
    }
    Ok(path)
}

fn search(root: &Path, dir: &Path, query: &str, hits: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if hits.len() >= 100 {
            return;
        }
        if path.is_dir() {
            search(root, &path, query, hits);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            for (n, line) in text.lines().enumerate() {
                if line.contains(query) {
                    let shown = path.strip_prefix(root).unwrap_or(&path).display();
                    hits.push(format!("{shown}:{}: {line}", n + 1));
                }
            }
        }
    }
}

/// A run in progress.
struct Run {
    ctx: Context,
    approval: Form<Approval>,
    root: PathBuf,
    touched: Vec<String>,
}

impl Run {
    /// Executes one action the model chose; the text goes back to the model as the result.
    async fn act(&mut self, name: &str, input: &Map<String, Value>) -> Result<String, String> {
        let arg = |key: &str| input.get(key).and_then(Value::as_str);
        match name {
            "list_dir" => {
                let path = resolve(&self.root, arg("path").unwrap_or("."))?;
                let mut names: Vec<String> = std::fs::read_dir(&path)
                    .map_err(|e| e.to_string())?
                    .flatten()
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        if e.path().is_dir() {
                            format!("{name}/")
                        } else {
                            name
                        }
                    })
                    .collect();
                names.sort();
                Ok(names.join("\n"))
            }
            "read_file" => {
                let rel = arg("path").ok_or("read_file needs a path")?;
                let path = resolve(&self.root, rel)?;
                let mut text = std::fs::read_to_string(&path).map_err(|e| format!("{rel}: {e}"))?;
                if text.len() > MAX_READ {
                    let mut end = MAX_READ;
                    while !text.is_char_boundary(end) {
                        end -= 1;
                    }
                    text.truncate(end);
                }
                Ok(text)
            }
            "search_text" => {
                let query = arg("query").ok_or("search_text needs a query")?;
                let dir = resolve(&self.root, arg("path").unwrap_or("."))?;
                let mut hits = Vec::new();
                search(&self.root, &dir, query, &mut hits);
                Ok(if hits.is_empty() { "no match".to_owned() } else { hits.join("\n") })
            }
            "write_file" => {
                let rel = arg("path").ok_or("write_file needs a path")?;
                let content = arg("content").ok_or("write_file needs content")?;
                let path = resolve(&self.root, rel)?;
                let message = format!("The agent wants to write {} bytes to {rel}. Approve?", content.len());
                let approved = match self.ctx.elicit_form(message, &self.approval).await {
                    Ok(Elicited::Accept(Approval { approve })) => approve,
                    // Declined, cancelled, or an answer that is no approval.
                    Ok(_) | Err(ClientRequestError::InvalidResult(_)) => false,
                    Err(e) => return Err(format!("approval failed: {e}")),
                };
                if !approved {
                    let _ = self.ctx.info(format!("write to {rel} declined")).await;
                    return Err(format!("the user declined the write to {rel}"));
                }
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                std::fs::write(&path, content).map_err(|e| format!("{rel}: {e}"))?;
                if !self.touched.iter().any(|t| t == rel) {
                    self.touched.push(rel.to_owned());
                }
                Ok(format!("wrote {} bytes to {rel}", content.len()))
            }
            other => Err(format!("unknown action {other}")),
        }
    }
}

// `run_agent`'s arguments (no doc comment: it would be the schema's description).
#[derive(Deserialize, JsonSchema)]
struct AgentArgs {
    /// What to achieve
    goal: String,
    /// The directory to work in (default: the server's)
    // Described as a string that may be left out, as it always was (not `null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    root: Option<String>,
}

// What a run did.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Outcome {
    steps: usize,
    files_touched: Vec<String>,
    answer: String,
}

/// What the user is asked before a write.
#[derive(Deserialize, JsonSchema)]
struct Approval {
    /// Allow this write
    #[schemars(title = "Approve", extend("default" = false))]
    approve: bool,
}

async fn run_agent(
    AgentArgs { goal, root }: AgentArgs,
    ctx: Context,
    approval: Form<Approval>,
) -> Result<Json<Outcome>, ToolError> {
    let root = match root {
        Some(root) => PathBuf::from(root),
        None => std::env::current_dir().map_err(|e| ToolError::failed(e.to_string()))?,
    };
    let root = root.canonicalize().map_err(|e| ToolError::failed(format!("root {}: {e}", root.display())))?;
    let mut run = Run { ctx: ctx.clone(), approval, root, touched: Vec::new() };
    let mut messages = vec![SamplingMessage::user_text(goal.as_str())];
    let _ = ctx.info(format!("agent started: {goal}")).await;
    for step in 1..=MAX_STEPS {
        if ctx.is_cancelled() {
            return Err(ToolError::failed("cancelled"));
        }
        let _ = ctx.progress(step as f64, Some(MAX_STEPS as f64), Some(format!("step {step}: asking the model"))).await;
        let params = CreateMessageRequestParams::new(messages.clone(), 2000)
            .system_prompt(format!(
                "You are a coding agent working under {}. Use the tools, then answer.",
                run.root.display()
            ))
            .tools(action_tools())
            .tool_choice(ToolChoiceMode::Auto);
        let reply = ctx.create_message(params).await?;
        let uses: Vec<ToolUseContent> = reply.tool_uses().cloned().collect();
        if uses.is_empty() {
            let _ = ctx.info(format!("agent finished after {step} steps")).await;
            return Ok(Json(Outcome { steps: step, files_touched: run.touched, answer: reply.text() }));
        }
        messages.push(SamplingMessage::new(Role::Assistant, reply.content));
        let mut results = Vec::new();
        for call in uses {
            let _ = ctx.info(format!("step {step}: {} {}", call.name, Value::Object(call.input.clone()))).await;
            let (text, is_error) = match run.act(&call.name, &call.input).await {
                Ok(text) => (text, false),
                Err(text) => (text, true),
            };
            results.push(SamplingMessageContentBlock::tool_result(call.id, vec![ContentBlock::text(text)], is_error));
        }
        messages.push(SamplingMessage::new(Role::User, results));
    }
    Err(ToolError::failed(format!("no answer after {MAX_STEPS} steps")))
}

/// The agent server: one tool, `run_agent`.
pub fn agent_server() -> Server {
    let tool = Tool::new("run_agent", json!({})).title("Run the agent").description(
        "Works towards a goal on the files under root, step by step, with the host's model; asks before writing",
    );
    Server::builder()
        .name("mcpwire-agent")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions(
            "run_agent works on local files with your model (sampling) and asks before any write (elicitation)",
        )
        .with_form(|builder, approval: Form<Approval>| {
            builder.derived_tool_with(tool, move |args, ctx| run_agent(args, ctx, approval.clone()))
        })
        .build()
        .expect("a valid server")
}
