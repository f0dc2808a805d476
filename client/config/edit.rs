//! Editing a configuration file in place: adding and removing servers the way `codex mcp add`
//! and `codex mcp remove` do, keeping everything else of the file as it was.
//!
//! codex TOML is edited with `toml_edit`: comments, blank lines, the order of tables and keys,
//! and every other setting of the file survive; a new server is appended as an
//! `[mcp_servers.NAME]` table. Claude / VS Code JSON (`mcpServers` / `servers`) is edited at
//! the level of the servers object only: every other member, and every other server, is
//! written back byte for byte in its original order (JSON has no comments to keep; the edited
//! object is re-indented).
//!
//! Every edit is checked before it is kept: the edited text must read back as a
//! configuration ([`McpConfig::parse`]), with the change in it. Errors name the file, and the
//! line where there is one: `config.toml: line 7: mcp_servers.docs already exists`.
//!
//! Not here: the command line (`mcp-bridge add/remove`), reading configurations for use.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{MapAccess, Visitor};
use serde::Deserializer;
use serde_json::value::RawValue;

use super::{error, ConfigError, ConfigFormat, McpConfig};

/// A server to add: a stdio command or an HTTP url, with what `codex mcp add` takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewServer {
    /// Its name.
    pub name: String,
    /// The program (stdio), with `args`.
    pub command: Option<String>,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it.
    pub env: BTreeMap<String, String>,
    /// The endpoint (Streamable HTTP), instead of a command.
    pub url: Option<String>,
    /// The variable holding a bearer token (url servers).
    pub bearer_token_env_var: Option<String>,
}

impl NewServer {
    /// A stdio server running `command` with `args`.
    pub fn stdio(name: impl Into<String>, command: impl Into<String>, args: Vec<String>) -> NewServer {
        NewServer { name: name.into(), command: Some(command.into()), args, ..NewServer::default() }
    }

    /// An HTTP server at `url`.
    pub fn http(name: impl Into<String>, url: impl Into<String>) -> NewServer {
        NewServer { name: name.into(), url: Some(url.into()), ..NewServer::default() }
    }
}

/// A configuration file being edited.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    label: String,
    format: ConfigFormat,
    text: String,
}

impl ConfigFile {
    /// Opens `path` for editing (a file that does not exist yet is empty). The format is told
    /// by the extension, as [`McpConfig::load`] does.
    ///
    /// # Errors
    /// An unknown extension; a file that cannot be read or does not parse.
    pub fn open(path: impl AsRef<Path>) -> Result<ConfigFile, ConfigError> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let format = match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("toml") => ConfigFormat::CodexToml,
            Some(e) if e.eq_ignore_ascii_case("json") => ConfigFormat::Json,
            _ => return Err(error(&label, "", "unknown configuration format (expected a .toml or .json file)")),
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(error(&label, "", format!("cannot read: {e}"))),
        };
        let file = ConfigFile { path: path.to_owned(), label, format, text };
        file.config()?;
        Ok(file)
    }

    /// The text as it stands (edited or not).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The servers the text configures now.
    ///
    /// # Errors
    /// When the text does not read as a configuration.
    pub fn config(&self) -> Result<McpConfig, ConfigError> {
        if self.text.trim().is_empty() {
            return Ok(McpConfig::default());
        }
        McpConfig::parse(&self.text, self.format, &self.label, &|name| std::env::var(name).ok())
    }

    /// Adds `server`.
    ///
    /// # Errors
    /// A server of that name exists (the error names its line); the server has neither or
    /// both of a command and a url; the result would not read back.
    pub fn add(&mut self, server: &NewServer) -> Result<(), ConfigError> {
        let at = format!("{}.{}", self.servers_key(), super::key(&server.name));
        if server.command.is_some() == server.url.is_some() {
            return Err(error(&self.label, &at, "give either a command (stdio) or a url (http)"));
        }
        if self.config()?.servers.values().any(|s| s.name == server.name) {
            let line = self.line_of(&server.name).map(|l| format!("line {l}: ")).unwrap_or_default();
            return Err(error(&self.label, "", format!("{line}{at} already exists")));
        }
        let edited = match self.format {
            ConfigFormat::CodexToml => self.toml_add(server)?,
            ConfigFormat::Json => self.json_edit(|servers| {
                servers.push((server.name.clone(), json_server(server)));
            })?,
        };
        self.commit(edited, |config| config.servers.values().any(|s| s.name == server.name))
    }

    /// Removes the server `name`; `false` when there is none.
    ///
    /// # Errors
    /// When the result would not read back.
    pub fn remove(&mut self, name: &str) -> Result<bool, ConfigError> {
        if !self.config()?.servers.values().any(|s| s.name == name) {
            return Ok(false);
        }
        let edited = match self.format {
            ConfigFormat::CodexToml => {
                let mut doc = self.toml_doc()?;
                let removed =
                    doc.get_mut("mcp_servers").and_then(|t| t.as_table_like_mut()).and_then(|t| t.remove(name));
                // The comments above the removed table are kept, above the table that followed it.
                if let Some(toml_edit::Item::Table(table)) = &removed {
                    let prefix = table.decor().prefix().and_then(|p| p.as_str()).unwrap_or_default().to_owned();
                    if let (Some(position), false) = (table.position(), prefix.trim().is_empty()) {
                        give_prefix_to_next(doc.as_table_mut(), position, &prefix);
                    }
                }
                doc.to_string()
            }
            ConfigFormat::Json => self.json_edit(|servers| servers.retain(|(k, _)| k != name))?,
        };
        self.commit(edited, |config| !config.servers.values().any(|s| s.name == name))?;
        Ok(true)
    }

    /// Writes the text back, atomically (a temporary file renamed over the file).
    ///
    /// # Errors
    /// When it cannot be written.
    pub fn save(&self) -> Result<(), ConfigError> {
        let failed = |e: std::io::Error| error(&self.label, "", format!("cannot write: {e}"));
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(failed)?;
        }
        let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, &self.text).map_err(failed)?;
        std::fs::rename(&tmp, &self.path).map_err(failed)
    }

    fn servers_key(&self) -> &'static str {
        match self.format {
            ConfigFormat::CodexToml => "mcp_servers",
            ConfigFormat::Json if self.text.contains("\"servers\"") && !self.text.contains("\"mcpServers\"") => {
                "servers"
            }
            ConfigFormat::Json => "mcpServers",
        }
    }

    /// Keeps `edited` if it reads back with `changed` true of it.
    fn commit(&mut self, edited: String, changed: impl Fn(&McpConfig) -> bool) -> Result<(), ConfigError> {
        let check = ConfigFile { text: edited, ..self.clone() };
        let config =
            check.config().map_err(|e| error(&self.label, "", format!("the edit would not read back: {e}")))?;
        if !changed(&config) {
            return Err(error(&self.label, "", "the edit did not take (a server defined twice?)"));
        }
        self.text = check.text;
        Ok(())
    }

    /// The 1-based line where server `name` is defined, as far as the text tells.
    fn line_of(&self, name: &str) -> Option<usize> {
        let needles = match self.format {
            ConfigFormat::CodexToml => vec![
                format!("[mcp_servers.{name}]"),
                format!("[mcp_servers.\"{name}\"]"),
                format!("[mcp_servers.{name}."),
                format!("{name} = {{"),
            ],
            ConfigFormat::Json => vec![format!("\"{name}\"")],
        };
        self.text
            .lines()
            .position(|line| needles.iter().any(|n| line.trim_start().starts_with(n.as_str())))
            .map(|i| i + 1)
    }

    fn toml_doc(&self) -> Result<toml_edit::DocumentMut, ConfigError> {
        self.text.parse::<toml_edit::DocumentMut>().map_err(|e| {
            let line = e.span().map(|span| self.text[..span.start.min(self.text.len())].matches('\n').count() + 1);
            let message = e.message().to_owned();
            match line {
                Some(line) => error(&self.label, "", format!("line {line}: {message}")),
                None => error(&self.label, "", message),
            }
        })
    }

    fn toml_add(&self, server: &NewServer) -> Result<String, ConfigError> {
        use toml_edit::{value, Array, InlineTable, Item, Table};
        let mut doc = self.toml_doc()?;
        let servers = doc.entry("mcp_servers").or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        });
        let Some(servers) = servers.as_table_mut() else {
            return Err(error(&self.label, "mcp_servers", "expected a table"));
        };
        let mut table = Table::new();
        if let Some(command) = &server.command {
            table.insert("command", value(command.as_str()));
            if !server.args.is_empty() {
                table.insert("args", value(server.args.iter().map(String::as_str).collect::<Array>()));
            }
            if !server.env.is_empty() {
                let mut env = InlineTable::new();
                for (k, v) in &server.env {
                    env.insert(k, v.as_str().into());
                }
                table.insert("env", value(env));
            }
        }
        if let Some(url) = &server.url {
            table.insert("url", value(url.as_str()));
            if let Some(var) = &server.bearer_token_env_var {
                table.insert("bearer_token_env_var", value(var.as_str()));
            }
        }
        servers.insert(&server.name, Item::Table(table));
        Ok(doc.to_string())
    }

    /// Rewrites the servers object of a JSON file with `edit`, keeping every other member
    /// (and every server not edited) as its original text, in order.
    fn json_edit(&self, edit: impl FnOnce(&mut Vec<(String, Box<RawValue>)>)) -> Result<String, ConfigError> {
        let invalid = |e: serde_json::Error| error(&self.label, "", format!("line {}: invalid JSON: {e}", e.line()));
        let key = self.servers_key();
        let mut top: Vec<(String, Box<RawValue>)> =
            if self.text.trim().is_empty() { Vec::new() } else { ordered(&self.text).map_err(invalid)? };
        let mut servers = match top.iter().find(|(k, _)| k == key) {
            Some((_, raw)) => ordered(raw.get()).map_err(invalid)?,
            None => Vec::new(),
        };
        edit(&mut servers);
        let servers_text = write_object(&servers, 1);
        let servers_raw = RawValue::from_string(servers_text).map_err(invalid)?;
        match top.iter_mut().find(|(k, _)| k == key) {
            Some((_, raw)) => *raw = servers_raw,
            None => top.push((key.to_owned(), servers_raw)),
        }
        let mut out = write_object(&top, 0);
        out.push('\n');
        Ok(out)
    }
}

/// Prepends `prefix` to the decor of the table that comes first after `position` in the
/// document (if any), searching `table` and its subtables.
fn give_prefix_to_next(table: &mut toml_edit::Table, position: usize, prefix: &str) {
    fn next(table: &mut toml_edit::Table, position: usize) -> Option<&mut toml_edit::Table> {
        let mut best: Option<&mut toml_edit::Table> = None;
        for (_, item) in table.iter_mut() {
            let toml_edit::Item::Table(sub) = item else { continue };
            let own = sub.position().filter(|p| *p > position && !sub.is_implicit());
            let candidate = match own {
                Some(_) => Some(sub),
                None => next(sub, position),
            };
            if let Some(candidate) = candidate {
                if best.as_ref().is_none_or(|b| candidate.position() < b.position()) {
                    best = Some(candidate);
                }
            }
        }
        best
    }
    if let Some(table) = next(table, position) {
        let own = table.decor().prefix().and_then(|p| p.as_str()).unwrap_or_default().to_owned();
        table.decor_mut().set_prefix(format!("{prefix}{own}"));
    }
}

fn json_server(server: &NewServer) -> Box<RawValue> {
    let mut value = serde_json::Map::new();
    if let Some(command) = &server.command {
        value.insert("command".into(), command.as_str().into());
        value.insert("args".into(), server.args.clone().into());
        if !server.env.is_empty() {
            value.insert("env".into(), serde_json::to_value(&server.env).expect("strings"));
        }
    }
    if let Some(url) = &server.url {
        value.insert("type".into(), "http".into());
        value.insert("url".into(), url.as_str().into());
    }
    let text = serde_json::to_string_pretty(&serde_json::Value::Object(value)).expect("a map serializes");
    RawValue::from_string(indent(&text, 2)).expect("valid JSON")
}

/// `text` with every line after the first indented by `depth` levels of two spaces.
fn indent(text: &str, depth: usize) -> String {
    let pad = "  ".repeat(depth);
    text.lines()
        .enumerate()
        .map(|(i, l)| if i == 0 { l.to_owned() } else { format!("{pad}{l}") })
        .collect::<Vec<_>>()
        .join("\n")
}

fn write_object(members: &[(String, Box<RawValue>)], depth: usize) -> String {
    if members.is_empty() {
        return "{}".to_owned();
    }
    let pad = "  ".repeat(depth + 1);
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("{pad}{}: {}", serde_json::to_string(k).expect("a string serializes"), v.get()))
        .collect();
    format!("{{\n{}\n{}}}", body.join(",\n"), "  ".repeat(depth))
}

/// The members of the JSON object `text`, in order, each value as its original text.
fn ordered(text: &str) -> Result<Vec<(String, Box<RawValue>)>, serde_json::Error> {
    struct Ordered;
    impl<'de> Visitor<'de> for Ordered {
        type Value = Vec<(String, Box<RawValue>)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut members = Vec::new();
            while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                members.push((k, v));
            }
            Ok(members)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let members = (&mut de).deserialize_map(Ordered)?;
    de.end()?;
    Ok(members)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> ConfigFile {
        let dir = std::env::temp_dir().join(format!("mcpwire-edit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        ConfigFile::open(&path).unwrap()
    }

    const COMMENTED: &str = "# my servers\n[mcp_servers.old] # the old one\ncommand = \"old\" # keep me\n\n# trailing note\n[other]\nx = 1\n";

    #[test]
    fn toml_add_and_remove_keep_comments_and_order() {
        let mut f = file("config.toml", COMMENTED);
        f.add(&NewServer::stdio("docs", "npx", vec!["-y".into(), "docs".into()])).unwrap();
        assert_eq!(
            f.text(),
            "# my servers\n[mcp_servers.old] # the old one\ncommand = \"old\" # keep me\n\n\
             [mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\", \"docs\"]\n\n# trailing note\n[other]\nx = 1\n"
        );
        assert!(f.remove("old").unwrap());
        assert!(!f.remove("old").unwrap(), "gone already");
        assert!(f.text().starts_with("# my servers\n\n[mcp_servers.docs]\n"), "the comment above stays: {}", f.text());
        assert!(!f.text().contains("old"), "{}", f.text());
        assert!(f.text().contains("# trailing note\n[other]\nx = 1\n"), "{}", f.text());
    }

    #[test]
    fn adding_a_name_that_exists_names_the_file_and_line() {
        let mut f = file("dup.toml", COMMENTED);
        let e = f.add(&NewServer::http("old", "http://h/mcp")).unwrap_err().to_string();
        assert!(e.ends_with("dup.toml: line 2: mcp_servers.old already exists"), "{e}");
        let e = f.add(&NewServer { name: "x".into(), ..NewServer::default() }).unwrap_err().to_string();
        assert!(e.ends_with("mcp_servers.x: give either a command (stdio) or a url (http)"), "{e}");
    }

    #[test]
    fn a_file_that_does_not_parse_is_refused_with_its_line() {
        let dir = std::env::temp_dir().join(format!("mcpwire-edit-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.toml");
        std::fs::write(&path, "[mcp_servers.a]\ncommand = \"a\"\nargs = [\n").unwrap();
        let e = ConfigFile::open(&path).unwrap_err().to_string();
        assert!(e.contains("bad.toml: line "), "{e}");
    }

    #[test]
    fn json_edits_keep_the_other_members_in_order() {
        let text = "{\n  \"zeta\": {\"keep\": [1, 2]},\n  \"mcpServers\": {\n    \"b\": {\"command\": \"b\"},\n    \"a\": {\"command\": \"a\"}\n  },\n  \"alpha\": true\n}\n";
        let mut f = file("claude.json", text);
        f.add(&NewServer::http("c", "http://h/mcp")).unwrap();
        assert!(f.remove("b").unwrap());
        let keys: Vec<String> = ordered(f.text()).unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["zeta", "mcpServers", "alpha"]);
        assert!(f.text().contains("\"zeta\": {\"keep\": [1, 2]}"), "{}", f.text());
        let config = f.config().unwrap();
        assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["a", "c"]);
        let servers: Vec<String> =
            ordered(ordered(f.text()).unwrap()[1].1.get()).unwrap().into_iter().map(|(k, _)| k).collect();
        assert_eq!(servers, ["a", "c"], "in file order, the new one last");
    }

    #[test]
    fn a_new_file_gets_the_table() {
        let dir = std::env::temp_dir().join(format!("mcpwire-edit-new-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut f = ConfigFile::open(dir.join("new.toml")).unwrap();
        f.add(&NewServer::http("remote", "https://example.com/mcp")).unwrap();
        assert_eq!(f.text(), "[mcp_servers.remote]\nurl = \"https://example.com/mcp\"\n");
        f.save().unwrap();
        assert_eq!(McpConfig::load(dir.join("new.toml")).unwrap().servers.len(), 1);
    }
}
