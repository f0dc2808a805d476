//! `mcp-bridge list | get NAME | add NAME … | remove NAME`: the user's server configuration
//! from the command line, like `codex mcp`.
//!
//! `list` and `get` read the file (and, with `--project` / `--import`, every source,
//! resolved by precedence: each entry then says where it came from and what it shadows);
//! `--json` prints JSON. Environment and header *values* are never printed (they may be
//! secrets): only their names. `add` and `remove` edit the file in place
//! ([`mcpwire::client::config::edit`]: comments and order kept), refusing an edit that would
//! not read back, with an error naming the file and line.
//!
//! Not here: starting servers (shell.rs, serve.rs).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use mcpwire::client::catalog::{CatalogBuilder, ConflictAction, Resolution, SourceKind};
use mcpwire::client::config::edit::{ConfigFile, NewServer};
use mcpwire::client::config::{ConfigError, ServerConfig, TransportConfig};
use serde_json::{json, Value};

use super::MoreSources;

/// The file edited when `--config` is not given: codex's, `$CODEX_HOME/config.toml` or
/// `~/.codex/config.toml`.
pub fn default_config() -> Option<PathBuf> {
    if let Some(home) = std::env::var_os("CODEX_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(home).join("config.toml"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".codex").join("config.toml"))
}

/// One configuration command, checked by clap.
#[derive(Debug)]
pub enum ConfigCommand {
    List { config: Option<PathBuf>, sources: MoreSources, json: bool },
    Get { name: String, config: Option<PathBuf>, sources: MoreSources, json: bool },
    Add { server: NewServer, config: Option<PathBuf> },
    Remove { name: String, config: Option<PathBuf> },
}

/// Runs a configuration command to its exit code: 0, or 1 with one line on stderr.
pub fn main(command: ConfigCommand) -> ExitCode {
    match run(command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp-bridge: {message}");
            ExitCode::from(1)
        }
    }
}

fn file(config: Option<PathBuf>) -> Result<PathBuf, String> {
    config.or_else(default_config).ok_or_else(|| "no --config FILE, and HOME is not set".to_owned())
}

fn run(command: ConfigCommand) -> Result<(), String> {
    let text = |e: ConfigError| e.to_string();
    match command {
        ConfigCommand::List { config, sources, json } => {
            let entries = entries(&file(config)?, &sources).map_err(text)?;
            print(&entries, json, None)
        }
        ConfigCommand::Get { name, config, sources, json } => {
            let file = file(config)?;
            let entries = entries(&file, &sources).map_err(text)?;
            let found: Vec<_> =
                entries.into_iter().filter(|(server, _)| server.key() == name || server.name == name).collect();
            match found.len() {
                0 => Err(format!("{}: no server named {name}", file.display())),
                _ => print(&found, json, Some(&name)),
            }
        }
        ConfigCommand::Add { server, config } => {
            let path = file(config)?;
            let mut edited = ConfigFile::open(&path).map_err(text)?;
            edited.add(&server).map_err(text)?;
            edited.save().map_err(text)?;
            println!("added {} to {}", server.name, path.display());
            Ok(())
        }
        ConfigCommand::Remove { name, config } => {
            let path = file(config)?;
            let mut edited = ConfigFile::open(&path).map_err(text)?;
            if !edited.remove(&name).map_err(text)? {
                return Err(format!("{}: no server named {name}", path.display()));
            }
            edited.save().map_err(text)?;
            println!("removed {name} from {}", path.display());
            Ok(())
        }
    }
}

/// Every server of `file` and the sources below it, with its resolution.
fn entries(file: &std::path::Path, more: &MoreSources) -> Result<Vec<(ServerConfig, Resolution)>, ConfigError> {
    let action =
        |kind| more.on_conflict.iter().rev().find(|(k, _)| *k == kind).map_or(ConflictAction::Override, |(_, a)| *a);
    let mut builder = CatalogBuilder::new();
    // A config file that does not exist yet lists nothing (as `add` would create it).
    if file.exists() {
        builder = builder.file(SourceKind::Config, file, action(SourceKind::Config))?;
    }
    if let Some(project) = &more.project {
        builder = builder.file(SourceKind::Project, project, action(SourceKind::Project))?;
    }
    for import in &more.imports {
        builder = builder.file(SourceKind::Imported, import, action(SourceKind::Imported))?;
    }
    let catalog = builder.build();
    let resolutions = catalog.resolutions().to_vec();
    let mut servers = catalog.into_config().servers;
    Ok(resolutions.into_iter().filter_map(|r| servers.remove(&r.name).map(|s| (s, r))).collect())
}

fn transport_json(server: &ServerConfig) -> Value {
    match &server.transport {
        TransportConfig::Stdio { command, args, env, env_vars, cwd, .. } => json!({
            "type": "stdio",
            "command": command,
            "args": args,
            "env": env.keys().collect::<Vec<_>>(),
            "envVars": env_vars,
            "cwd": cwd,
        }),
        TransportConfig::Http { url, bearer_token_env_var, http_headers, env_http_headers, legacy_sse } => json!({
            "type": if *legacy_sse { "sse" } else { "http" },
            "url": url,
            "bearerTokenEnvVar": bearer_token_env_var,
            "headers": http_headers.keys().chain(env_http_headers.keys()).collect::<Vec<_>>(),
        }),
        _ => json!({"type": "in-process"}),
    }
}

fn entry_json(server: &ServerConfig, resolution: &Resolution) -> Value {
    let at = |kind: SourceKind, label: &str| json!({"kind": kind.as_str(), "file": label});
    json!({
        "name": server.name,
        "key": server.key(),
        "scope": server.scope,
        "enabled": server.enabled,
        "startup": server.startup.as_str(),
        "transport": transport_json(server),
        "source": at(resolution.source.kind, &resolution.source.label),
        "shadowed": resolution.shadowed.iter().map(|s| at(s.source.kind, &s.source.label)).collect::<Vec<_>>(),
        "disabledBy": resolution.disabled,
    })
}

fn summary(server: &ServerConfig) -> String {
    match &server.transport {
        TransportConfig::Stdio { command, args, .. } => {
            std::iter::once(command.as_str()).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ")
        }
        TransportConfig::Http { url, .. } => url.clone(),
        _ => "in process".to_owned(),
    }
}

fn print(entries: &[(ServerConfig, Resolution)], json: bool, one: Option<&str>) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    let written = (|| -> std::io::Result<()> {
        if json {
            let items: Vec<Value> = entries.iter().map(|(s, r)| entry_json(s, r)).collect();
            match (one, items.as_slice()) {
                (Some(_), [item]) => serde_json::to_writer(&mut out, item)?,
                _ => serde_json::to_writer(&mut out, &items)?,
            }
            writeln!(out)?;
        } else {
            for (server, resolution) in entries {
                let state = match &resolution.disabled {
                    Some(why) => format!(" (disabled: {why})"),
                    None if server.startup.as_str() == "lazy" => " (lazy)".to_owned(),
                    None => String::new(),
                };
                writeln!(out, "{}  {}{state}", server.key(), summary(server))?;
                if resolution.source.kind != SourceKind::Config || !resolution.shadowed.is_empty() {
                    writeln!(out, "  {resolution}")?;
                }
            }
        }
        out.flush()
    })();
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("cannot write the output: {e}")),
        _ => Ok(()),
    }
}
