//! The shell's reach beyond tools, as the MCP Inspector's CLI mode has it: resources (list,
//! read, templates), prompts (list, get with arguments), completion of a prompt argument or a
//! resource-template variable, and the log level, each with `--json`.
//!
//! ```text
//! mcp-bridge resources list|templates [--json] SOURCE [--server NAME]
//! mcp-bridge resources read URI [--json] SOURCE [--server NAME]
//! mcp-bridge prompts list [--json] SOURCE [--server NAME]
//! mcp-bridge prompts get NAME [--arg K=V]... [--json] SOURCE [--server NAME]
//! mcp-bridge complete (--prompt NAME | --template URI_TEMPLATE) ARGUMENT [VALUE] [--context K=V]... SOURCE
//! mcp-bridge log-level LEVEL SOURCE [--server NAME]
//! ```
//!
//! SOURCE is one server (`-- CMD ARGS...`, `--url URL`) or `--config FILE`: then `--server`
//! picks one server, and without it the commands see the merged view: the lists of every ready
//! server (prompts under their qualified names, `mcp__SERVER__NAME`), a prompt found by its
//! qualified name (or its own, when one server has it), a URI by the server that lists it (or
//! whose template's literal part it starts with), and `log-level` sent to every ready server.
//! A name, URI or template no server has is an error naming it (exit 1), as is a server's own
//! JSON-RPC error (its message printed as it is).
//!
//! Not here: connecting, the exit codes and the `tools`/`call`/`check` commands (shell.rs).

use std::collections::BTreeMap;
use std::io::Write;

use clap::{Args, Subcommand};
use mcpwire::client::connection_set::{qualify, ConnectionSet, MergedCatalog, ServerState, SetError};
use mcpwire::client::Client;
use mcpwire::gateway::printable;
use mcpwire::proto::mcp_types::{
    Complete, CompleteArgument, CompleteContext, CompleteRequestParams, CompleteResult, CompletionReference,
    ContentBlock, GetPrompt, GetPromptRequestParams, GetPromptResult, LoggingLevel, Prompt, PromptReference,
    ReadResource, ReadResourceRequestParams, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
    ResourceTemplateReference, SetLevel, SetLevelRequestParams,
};
use mcpwire::transport::boxed::BoxTransport;
use serde_json::{json, Value};

use super::shell::Failure;

/// The subcommands, flattened into `mcp-bridge`'s own.
#[derive(Subcommand, Debug)]
pub(crate) enum ReachCommand {
    /// Resources: list them, read one, list the resource templates.
    Resources {
        #[command(subcommand)]
        action: ResourcesAction,
    },
    /// Prompts: list them, get one with arguments.
    Prompts {
        #[command(subcommand)]
        action: PromptsAction,
    },
    /// Values for an argument of a prompt, or a variable of a resource template
    /// (completion/complete), given what is typed so far (VALUE, default empty).
    Complete {
        /// The prompt whose argument it is.
        #[arg(long, value_name = "NAME", conflicts_with = "template", required_unless_present = "template")]
        prompt: Option<String>,
        /// The resource template whose variable it is, as listed (e.g. demo://resource/dynamic/text/{resourceId}).
        #[arg(long, value_name = "URI_TEMPLATE")]
        template: Option<String>,
        /// The argument's (or variable's) name.
        argument: String,
        /// What is typed so far.
        #[arg(default_value = "")]
        value: String,
        /// An argument already chosen, as context (repeatable).
        #[arg(long = "context", value_name = "KEY=VALUE", value_parser = super::parse_env)]
        context: Vec<(String, String)>,
        #[command(flatten)]
        at: At,
    },
    /// Ask the server for log messages at LEVEL and above (logging/setLevel).
    LogLevel {
        /// The least severe level wanted.
        #[arg(value_parser = level_parser())]
        level: LoggingLevel,
        #[command(flatten)]
        at: At,
    },
}

/// `mcp-bridge resources …`.
#[derive(Subcommand, Debug)]
pub(crate) enum ResourcesAction {
    /// List the resources.
    List {
        #[command(flatten)]
        at: At,
    },
    /// Read one resource: its text, or a note for binary contents (the base64 with --json).
    Read {
        /// The resource's URI.
        uri: String,
        #[command(flatten)]
        at: At,
    },
    /// List the resource templates.
    Templates {
        #[command(flatten)]
        at: At,
    },
}

/// `mcp-bridge prompts …`.
#[derive(Subcommand, Debug)]
pub(crate) enum PromptsAction {
    /// List the prompts with their arguments.
    List {
        #[command(flatten)]
        at: At,
    },
    /// Get one prompt's messages.
    Get {
        /// The prompt's name (with --config and no --server: as `prompts list` shows it).
        name: String,
        /// An argument (repeatable).
        #[arg(long = "arg", value_name = "KEY=VALUE", value_parser = super::parse_env)]
        args: Vec<(String, String)>,
        #[command(flatten)]
        at: At,
    },
}

/// Which server(s), and the options every client command has.
#[derive(Args, Debug)]
pub(crate) struct At {
    /// The one server of --config to ask (default: the merged view of every server).
    #[arg(long, value_name = "NAME")]
    pub(crate) server: Option<String>,
    #[command(flatten)]
    pub(crate) common: super::Common,
    #[command(flatten)]
    pub(crate) source: super::Source,
}

/// A log level, spelled on the command line as on the wire (`debug` … `emergency`).
fn level_parser() -> impl clap::builder::TypedValueParser<Value = LoggingLevel> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(LoggingLevel::ALL.map(LoggingLevel::as_str)).map(|name| {
        LoggingLevel::ALL.into_iter().find(|level| level.as_str() == name).expect("one of the possible values")
    })
}

/// What a prompt or a template completion is about.
#[derive(Debug, PartialEq, Clone)]
pub(crate) enum Subject {
    Prompt(String),
    Template(String),
}

/// One request of this module, checked.
#[derive(Debug, PartialEq)]
pub(crate) enum Request {
    ListResources,
    ListTemplates,
    Read { uri: String },
    ListPrompts,
    GetPrompt { name: String, arguments: BTreeMap<String, String> },
    Complete { subject: Subject, argument: String, value: String, context: BTreeMap<String, String> },
    LogLevel(LoggingLevel),
}

impl ReachCommand {
    /// The request, and where it goes.
    pub(crate) fn into_parts(self) -> (Request, At) {
        match self {
            ReachCommand::Resources { action: ResourcesAction::List { at } } => (Request::ListResources, at),
            ReachCommand::Resources { action: ResourcesAction::Templates { at } } => (Request::ListTemplates, at),
            ReachCommand::Resources { action: ResourcesAction::Read { uri, at } } => (Request::Read { uri }, at),
            ReachCommand::Prompts { action: PromptsAction::List { at } } => (Request::ListPrompts, at),
            ReachCommand::Prompts { action: PromptsAction::Get { name, args, at } } => {
                (Request::GetPrompt { name, arguments: args.into_iter().collect() }, at)
            }
            ReachCommand::Complete { prompt, template, argument, value, context, at } => {
                let subject = match (prompt, template) {
                    (Some(name), _) => Subject::Prompt(name),
                    (None, Some(template)) => Subject::Template(template),
                    (None, None) => unreachable!("clap requires --prompt or --template"),
                };
                (Request::Complete { subject, argument, value, context: context.into_iter().collect() }, at)
            }
            ReachCommand::LogLevel { level, at } => (Request::LogLevel(level), at),
        }
    }

    /// The `--config` file, if that is the source.
    pub(crate) fn config(&self) -> Option<&std::path::Path> {
        let at = match self {
            ReachCommand::Resources {
                action:
                    ResourcesAction::List { at } | ResourcesAction::Templates { at } | ResourcesAction::Read { at, .. },
            }
            | ReachCommand::Prompts { action: PromptsAction::List { at } | PromptsAction::Get { at, .. } }
            | ReachCommand::Complete { at, .. }
            | ReachCommand::LogLevel { at, .. } => at,
        };
        at.source.config.as_deref()
    }
}

fn complete_params(
    subject: Subject,
    argument: String,
    value: String,
    context: BTreeMap<String, String>,
) -> CompleteRequestParams {
    let reference = match subject {
        Subject::Prompt(name) => {
            CompletionReference::Prompt(PromptReference { name, title: None, extra: Default::default() })
        }
        Subject::Template(uri) => {
            CompletionReference::ResourceTemplate(ResourceTemplateReference { uri, extra: Default::default() })
        }
    };
    CompleteRequestParams {
        reference,
        argument: CompleteArgument { name: argument, value, extra: Default::default() },
        context: (!context.is_empty()).then(|| CompleteContext { arguments: Some(context), extra: Default::default() }),
        meta: None,
        extra: Default::default(),
    }
}

fn read_params(uri: String) -> ReadResourceRequestParams {
    ReadResourceRequestParams { uri, input_responses: None, request_state: None, meta: None, extra: Default::default() }
}

fn get_params(name: String, arguments: BTreeMap<String, String>) -> GetPromptRequestParams {
    GetPromptRequestParams {
        name,
        arguments: (!arguments.is_empty()).then_some(arguments),
        input_responses: None,
        request_state: None,
        meta: None,
        extra: Default::default(),
    }
}

/// Runs `request` against one connected server.
pub(crate) async fn run_one(client: &Client<BoxTransport>, request: Request, json: bool) -> Result<(), Failure> {
    match request {
        Request::ListResources => print_resources(&client.list_resources().await?, json)?,
        Request::ListTemplates => print_templates(&client.list_resource_templates().await?, json)?,
        Request::Read { uri } => print_contents(&client.read_resource(uri).await?, json)?,
        Request::ListPrompts => print_prompts(&client.list_prompts().await?, json)?,
        Request::GetPrompt { name, arguments } => {
            let arguments = (!arguments.is_empty()).then_some(arguments);
            print_messages(&client.get_prompt(name, arguments).await?, json)?
        }
        Request::Complete { subject, argument, value, context } => {
            print_completion(&client.complete_with(complete_params(subject, argument, value, context)).await?, json)?
        }
        Request::LogLevel(level) => {
            client.set_logging_level(level).await?;
            // A 2026-07-28 session has no logging/setLevel: the level goes with each request.
            let sent = client.protocol_version().has_initialize_handshake();
            print_level(&[(None, level, Ok(sent))], json)?
        }
    }
    Ok(())
}

/// Runs `request` against the started set: on `server`, or the merged view.
pub(crate) async fn run_set(
    set: &ConnectionSet,
    request: Request,
    server: Option<&str>,
    json: bool,
) -> Result<(), Failure> {
    set.start().await?;
    let catalog = set.catalog();
    match request {
        Request::ListResources => match server {
            Some(name) => print_resources(&only(&catalog.resources, name), json)?,
            None => print_merged(&catalog.resources, json, "resource", resource_line)?,
        },
        Request::ListTemplates => match server {
            Some(name) => print_templates(&only(&catalog.resource_templates, name), json)?,
            None => print_merged(&catalog.resource_templates, json, "resourceTemplate", template_line)?,
        },
        Request::ListPrompts => match server {
            Some(name) => print_prompts(&only(&catalog.prompts, name), json)?,
            None => print_merged_prompts(&catalog, json)?,
        },
        Request::Read { uri } => {
            let server = match server {
                Some(name) => name.to_owned(),
                None => server_of_uri(&catalog, &uri)?,
            };
            let result = set.request_on::<ReadResource>(&server, read_params(uri)).await?;
            print_contents(&result, json)?
        }
        Request::GetPrompt { name, arguments } => {
            let (server, name) = match server {
                Some(server) => (server.to_owned(), name),
                None => server_of_prompt(&catalog, &name)?,
            };
            let result = set.request_on::<GetPrompt>(&server, get_params(name, arguments)).await?;
            print_messages(&result, json)?
        }
        Request::Complete { subject, argument, value, context } => {
            let (server, subject) = match (server, subject) {
                (Some(server), subject) => (server.to_owned(), subject),
                (None, Subject::Prompt(name)) => {
                    let (server, name) = server_of_prompt(&catalog, &name)?;
                    (server, Subject::Prompt(name))
                }
                (None, Subject::Template(template)) => {
                    (server_of_template(&catalog, &template)?, Subject::Template(template))
                }
            };
            let params = complete_params(subject, argument, value, context);
            let result = set.request_on::<Complete>(&server, params).await?;
            print_completion(&result, json)?
        }
        Request::LogLevel(level) => {
            let summary = set.summary();
            let targets: Vec<_> = summary
                .servers
                .iter()
                .filter(|s| s.state == ServerState::Ready)
                // The merged view asks the servers that offer logging; a named one is asked.
                .filter(|s| match server {
                    Some(name) => s.name == name,
                    None => set.server_offer(&s.name).is_some_and(|(offer, _)| offer.logging.is_some()),
                })
                .collect();
            if targets.is_empty() {
                return Err(Failure::Other(match server {
                    Some(name) => format!("server {} is not ready", printable(name)),
                    None => "no ready server offers logging".to_owned(),
                }));
            }
            let mut outcomes = Vec::new();
            for status in targets {
                let offers = set.server_offer(&status.name).is_some_and(|(offer, _)| offer.logging.is_some());
                let outcome = if offers && status.protocol_version.is_some_and(|v| !v.has_initialize_handshake()) {
                    // No logging/setLevel in a stateless session; the set's requests carry none.
                    Ok(false)
                } else {
                    let params = SetLevelRequestParams { level, meta: None, extra: Default::default() };
                    set.request_on::<SetLevel>(&status.name, params).await.map(|_| true)
                };
                outcomes.push((Some(status.name.clone()), level, outcome));
            }
            print_level(&outcomes, json)?;
            if outcomes.iter().any(|(_, _, outcome)| outcome.is_err()) {
                return Err(Failure::Other("the level was not set on every server".to_owned()));
            }
        }
    }
    Ok(())
}

/// The items of `server` alone.
fn only<T: Clone>(items: &[(String, T)], server: &str) -> Vec<T> {
    items.iter().filter(|(s, _)| s == server).map(|(_, item)| item.clone()).collect()
}

/// One server among `servers`, or an error naming what was looked for.
fn the_one(mut servers: Vec<String>, what: &str) -> Result<String, Failure> {
    servers.sort();
    servers.dedup();
    match servers.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(Failure::Other(format!("no server has {}", printable(what)))),
        several => Err(Failure::Other(format!(
            "{} is offered by {}: name one with --server",
            printable(what),
            printable(&several.join(" and "))
        ))),
    }
}

fn server_of_uri(catalog: &MergedCatalog, uri: &str) -> Result<String, Failure> {
    let listed: Vec<String> = catalog.resources.iter().filter(|(_, r)| r.uri == uri).map(|(s, _)| s.clone()).collect();
    if !listed.is_empty() {
        return the_one(listed, &format!("resource {uri}"));
    }
    let templated = catalog
        .resource_templates
        .iter()
        .filter(|(_, t)| {
            let literal = t.uri_template.split('{').next().unwrap_or_default();
            !literal.is_empty() && uri.starts_with(literal)
        })
        .map(|(s, _)| s.clone())
        .collect();
    the_one(templated, &format!("resource {uri}"))
}

fn server_of_template(catalog: &MergedCatalog, template: &str) -> Result<String, Failure> {
    let servers =
        catalog.resource_templates.iter().filter(|(_, t)| t.uri_template == template).map(|(s, _)| s.clone()).collect();
    the_one(servers, &format!("resource template {template}"))
}

/// The server of prompt `name` (qualified, or its own name on one server) and its own name.
fn server_of_prompt(catalog: &MergedCatalog, name: &str) -> Result<(String, String), Failure> {
    let qualified = qualify(catalog.prompts.iter().map(|(s, p)| (s.as_str(), p.name.as_str())));
    if let Some(((server, prompt), _)) = catalog.prompts.iter().zip(&qualified).find(|(_, q)| q.as_str() == name) {
        return Ok((server.clone(), prompt.name.clone()));
    }
    let servers = catalog.prompts.iter().filter(|(_, p)| p.name == name).map(|(s, _)| s.clone()).collect();
    Ok((the_one(servers, &format!("prompt {name}"))?, name.to_owned()))
}

fn first_line(text: Option<&str>) -> Option<&str> {
    text.and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()))
}

fn described(head: &str, name: &str, description: Option<&str>) -> String {
    match first_line(description) {
        Some(description) => format!("{} — {}: {}", printable(head), printable(name), printable(description)),
        None => format!("{} — {}", printable(head), printable(name)),
    }
}

fn resource_line(r: &Resource) -> String {
    described(&r.uri, r.title.as_deref().unwrap_or(&r.name), r.description.as_deref())
}

fn template_line(t: &ResourceTemplate) -> String {
    described(&t.uri_template, t.title.as_deref().unwrap_or(&t.name), t.description.as_deref())
}

fn write_json(value: &impl serde::Serialize) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, value)?;
    writeln!(out)?;
    out.flush()
}

fn write_lines(lines: impl IntoIterator<Item = String>) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for line in lines {
        writeln!(out, "{line}")?;
    }
    out.flush()
}

fn print_resources(resources: &[Resource], json: bool) -> std::io::Result<()> {
    if json {
        return write_json(&resources);
    }
    write_lines(resources.iter().map(resource_line))
}

fn print_templates(templates: &[ResourceTemplate], json: bool) -> std::io::Result<()> {
    if json {
        return write_json(&templates);
    }
    write_lines(templates.iter().map(template_line))
}

/// The items of every server: JSON `{"server", KEY: item}` each; lines `SERVER: line`.
fn print_merged<T: serde::Serialize>(
    items: &[(String, T)],
    json: bool,
    key: &str,
    line: impl Fn(&T) -> String,
) -> std::io::Result<()> {
    if json {
        let items: Vec<Value> = items.iter().map(|(server, item)| json!({"server": server, key: item})).collect();
        return write_json(&items);
    }
    write_lines(items.iter().map(|(server, item)| format!("{}: {}", printable(server), line(item))))
}

fn prompt_lines(name: &str, prompt: &Prompt) -> Vec<String> {
    let mut lines = vec![match first_line(prompt.description.as_deref()) {
        Some(description) => format!("{} — {}", printable(name), printable(description)),
        None => printable(name).into_owned(),
    }];
    for argument in prompt.arguments.iter().flatten() {
        let required = if argument.required == Some(true) { " (required)" } else { "" };
        lines.push(match first_line(argument.description.as_deref()) {
            Some(description) => format!("  {}{required} — {}", printable(&argument.name), printable(description)),
            None => format!("  {}{required}", printable(&argument.name)),
        });
    }
    lines
}

fn print_prompts(prompts: &[Prompt], json: bool) -> std::io::Result<()> {
    if json {
        return write_json(&prompts);
    }
    write_lines(prompts.iter().flat_map(|p| prompt_lines(&p.name, p)))
}

fn print_merged_prompts(catalog: &MergedCatalog, json: bool) -> std::io::Result<()> {
    let qualified = qualify(catalog.prompts.iter().map(|(s, p)| (s.as_str(), p.name.as_str())));
    if json {
        let items: Vec<Value> = catalog
            .prompts
            .iter()
            .zip(&qualified)
            .map(|((server, prompt), name)| json!({"name": name, "server": server, "prompt": prompt}))
            .collect();
        return write_json(&items);
    }
    write_lines(catalog.prompts.iter().zip(&qualified).flat_map(|((_, prompt), name)| prompt_lines(name, prompt)))
}

fn contents_text(contents: &ResourceContents) -> String {
    match contents {
        ResourceContents::Text(text) => text.text.clone(),
        ResourceContents::Blob(blob) => format!(
            "[blob: {}, {} bytes of base64; use --json to see it]",
            blob.mime_type.as_deref().unwrap_or("no MIME type"),
            blob.blob.len()
        ),
        ResourceContents::Other(_) => "[contents with neither text nor blob; use --json to see them]".to_owned(),
    }
}

fn print_contents(result: &ReadResourceResult, json: bool) -> std::io::Result<()> {
    if json {
        return write_json(result);
    }
    write_lines(result.contents.iter().map(contents_text))
}

fn content_text(content: &ContentBlock) -> String {
    match content {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image: {}, {} bytes of base64]", image.mime_type, image.data.len()),
        ContentBlock::Audio(audio) => format!("[audio: {}, {} bytes of base64]", audio.mime_type, audio.data.len()),
        ContentBlock::ResourceLink(link) => format!("[resource link: {}]", link.uri),
        ContentBlock::Resource(embedded) => {
            let uri = match &embedded.resource {
                ResourceContents::Text(text) => text.uri.as_str(),
                ResourceContents::Blob(blob) => blob.uri.as_str(),
                ResourceContents::Other(_) => "?",
            };
            format!("[resource {uri}]\n{}", contents_text(&embedded.resource))
        }
        ContentBlock::Other(map) => {
            let kind = map.get("type").and_then(Value::as_str).unwrap_or("unknown");
            format!("[{kind} content; use --json to see it]")
        }
    }
}

fn print_messages(result: &GetPromptResult, json: bool) -> std::io::Result<()> {
    if json {
        return write_json(result);
    }
    write_lines(result.messages.iter().map(|m| format!("{}: {}", m.role.as_str(), content_text(&m.content))))
}

fn print_completion(result: &CompleteResult, json: bool) -> std::io::Result<()> {
    if json {
        return write_json(result);
    }
    write_lines(result.completion.values.iter().map(|v| printable(v).into_owned()))
}

/// One line per server: the level and whether it was sent (a 2026-07-28 session sends it with
/// each request instead), or the error.
fn print_level(outcomes: &[(Option<String>, LoggingLevel, Result<bool, SetError>)], json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    for (server, level, outcome) in outcomes {
        if json {
            let mut line = match outcome {
                Ok(sent) => json!({"level": level.as_str(), "sent": sent}),
                Err(e) => json!({"level": level.as_str(), "error": e.to_string()}),
            };
            if let (Some(server), Value::Object(line)) = (server, &mut line) {
                line.insert("server".to_owned(), json!(server));
            }
            writeln!(out, "{line}")?;
            continue;
        }
        let head = server.as_deref().map(|s| format!("{}: ", printable(s))).unwrap_or_default();
        match outcome {
            Ok(true) => writeln!(out, "{head}log level {level}")?,
            Ok(false) => writeln!(out, "{head}log level {level} not sent: protocol 2026-07-28 has no logging/setLevel (a level goes in each request's _meta)")?,
            Err(e) => writeln!(out, "{head}log level not set: {}", printable(&e.to_string()))?,
        }
    }
    out.flush()
}
