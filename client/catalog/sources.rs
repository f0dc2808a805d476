//! Catalog sources and precedence: server definitions from several places, resolved into one
//! configuration.
//!
//! Each source has a [`SourceKind`], in precedence order: `config` (the user's own file) >
//! `project` (a file in the working directory) > `imported` (Claude Desktop / Claude Code /
//! VS Code / codex files read as they are) > `extension` (added by the embedding program).
//! Sources of the same kind rank in the order they were added. For each server name, the
//! definition of the highest-ranked source that has one wins; lower sources only fill gaps.
//!
//! When a name is defined by more than one source, the winning source's [`ConflictAction`]
//! decides: `override` (the default) runs the winner and shadows the others; `disable` runs
//! none of them (the winner is kept, disabled, so that it is listed and its state is
//! `disabled`): for a source that must not silently replace a server a user knows under that
//! name. A definition that is disabled in its own file stays disabled and still shadows.
//!
//! [`ResolvedCatalog::resolutions`] says, for every name, which source won, which were
//! shadowed and why a server is disabled; [`ResolvedCatalog::config`] is what a connection set
//! runs.
//!
//! Not here: reading the files (the `config` module), running the servers.

use std::fmt;
use std::path::Path;

use crate::client::config::{ConfigError, McpConfig, ServerConfig};

/// Where a definition comes from, highest precedence first (`Ord` follows precedence: a
/// smaller kind wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    /// The user's own configuration.
    Config,
    /// A file of the project (the working directory).
    Project,
    /// A file of another host, read as it is (Claude Desktop, Claude Code, VS Code, codex).
    Imported,
    /// Added by the embedding program.
    Extension,
}

impl SourceKind {
    /// `config`, `project`, `imported` or `extension`.
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Config => "config",
            SourceKind::Project => "project",
            SourceKind::Imported => "imported",
            SourceKind::Extension => "extension",
        }
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a source's winning definition does when another source defines the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ConflictAction {
    /// Run this definition; the others are shadowed.
    #[default]
    Override,
    /// Run none: the name is disabled.
    Disable,
}

impl ConflictAction {
    /// `override` or `disable`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConflictAction::Override => "override",
            ConflictAction::Disable => "disable",
        }
    }
}

impl std::str::FromStr for ConflictAction {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "override" => Ok(ConflictAction::Override),
            "disable" => Ok(ConflictAction::Disable),
            other => Err(format!("unknown conflict action {other:?} (expected override or disable)")),
        }
    }
}

/// Which source: its kind and a label (the file, or the program's name for an extension).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceRef {
    /// Its kind.
    pub kind: SourceKind,
    /// The file as given, or the name an embedding program chose.
    pub label: String,
}

impl fmt::Display for SourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.kind, self.label)
    }
}

/// A definition that lost to a higher-ranked one of the same name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Shadowed {
    /// Where it came from.
    pub source: SourceRef,
    /// The definition.
    pub server: ServerConfig,
}

/// What became of one server name.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Resolution {
    /// The name.
    pub name: String,
    /// The source whose definition won.
    pub source: SourceRef,
    /// The definitions of lower-ranked sources, best first.
    pub shadowed: Vec<Shadowed>,
    /// Why the server does not run, when it does not: disabled in its file, or by a conflict.
    pub disabled: Option<String>,
}

impl fmt::Display for Resolution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: from {}", self.name, self.source)?;
        for (i, s) in self.shadowed.iter().enumerate() {
            write!(f, "{}{}", if i == 0 { ", shadowing " } else { ", " }, s.source)?;
        }
        if let Some(why) = &self.disabled {
            write!(f, "; disabled: {why}")?;
        }
        Ok(())
    }
}

/// The servers of every source, resolved.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolvedCatalog {
    config: McpConfig,
    resolutions: Vec<Resolution>,
}

impl ResolvedCatalog {
    /// What to run: the winning definitions (disabled ones with `enabled = false`).
    pub fn config(&self) -> &McpConfig {
        &self.config
    }

    /// What to run, taken.
    pub fn into_config(self) -> McpConfig {
        self.config
    }

    /// The outcome for every name, in name order.
    pub fn resolutions(&self) -> &[Resolution] {
        &self.resolutions
    }

    /// The outcome for `name`.
    pub fn resolution(&self, name: &str) -> Option<&Resolution> {
        self.resolutions.iter().find(|r| r.name == name)
    }
}

struct Source {
    at: SourceRef,
    on_conflict: ConflictAction,
    servers: McpConfig,
}

/// Collects sources, then resolves them ([`CatalogBuilder::build`]).
#[derive(Default)]
pub struct CatalogBuilder {
    sources: Vec<Source>,
}

impl fmt::Debug for CatalogBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.sources.iter().map(|s| &s.at)).finish()
    }
}

impl CatalogBuilder {
    /// No sources yet.
    pub fn new() -> CatalogBuilder {
        CatalogBuilder::default()
    }

    /// Adds the servers of `servers` as a source of `kind` named `label`, overriding on conflict.
    pub fn source(self, kind: SourceKind, label: impl Into<String>, servers: McpConfig) -> CatalogBuilder {
        self.source_with(kind, label, servers, ConflictAction::Override)
    }

    /// Adds a source with its conflict action.
    pub fn source_with(
        mut self,
        kind: SourceKind,
        label: impl Into<String>,
        servers: McpConfig,
        on_conflict: ConflictAction,
    ) -> CatalogBuilder {
        self.sources.push(Source { at: SourceRef { kind, label: label.into() }, on_conflict, servers });
        self
    }

    /// Reads `path` ([`McpConfig::load`]) as a source of `kind`, labelled with the path.
    ///
    /// # Errors
    /// When the file cannot be read or is wrong (the error names the file).
    pub fn file(
        self,
        kind: SourceKind,
        path: impl AsRef<Path>,
        on_conflict: ConflictAction,
    ) -> Result<Self, ConfigError> {
        let path = path.as_ref();
        let servers = McpConfig::load(path)?;
        Ok(self.source_with(kind, path.display().to_string(), servers, on_conflict))
    }

    /// Resolves every name by precedence and conflict action (see the module docs).
    pub fn build(mut self) -> ResolvedCatalog {
        // Stable: sources of one kind keep the order they were added in.
        self.sources.sort_by_key(|s| s.at.kind);
        let mut resolved = ResolvedCatalog::default();
        let mut names: Vec<&String> = self.sources.iter().flat_map(|s| s.servers.servers.keys()).collect();
        names.sort();
        names.dedup();
        for name in names {
            let mut defining = self.sources.iter().filter_map(|s| s.servers.servers.get(name).map(|d| (s, d)));
            let (winner, definition) = defining.next().expect("the name comes from some source");
            let shadowed: Vec<Shadowed> =
                defining.map(|(s, d)| Shadowed { source: s.at.clone(), server: d.clone() }).collect();
            let mut server = definition.clone();
            let disabled = if !server.enabled {
                Some(format!("enabled = false in {}", winner.at))
            } else if !shadowed.is_empty() && winner.on_conflict == ConflictAction::Disable {
                server.enabled = false;
                let others: Vec<String> = shadowed.iter().map(|s| s.source.to_string()).collect();
                Some(format!("also defined by {}, and {} disables on conflict", others.join(", "), winner.at))
            } else {
                None
            };
            resolved.config.servers.insert(name.clone(), server);
            resolved.resolutions.push(Resolution { name: name.clone(), source: winner.at.clone(), shadowed, disabled });
        }
        resolved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(names: &[&str], tag: &str) -> McpConfig {
        let mut config = McpConfig::default();
        for name in names {
            config.servers.insert((*name).to_owned(), ServerConfig::stdio(*name, "srv", [tag]));
        }
        config
    }

    fn args_of(catalog: &ResolvedCatalog, name: &str) -> Vec<String> {
        match &catalog.config().servers[name].transport {
            crate::client::config::TransportConfig::Stdio { args, .. } => args.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn precedence_is_by_kind_then_order_and_lower_sources_fill_gaps() {
        // Added out of precedence order on purpose.
        let catalog = CatalogBuilder::new()
            .source(SourceKind::Extension, "host", servers(&["a", "x"], "extension"))
            .source(SourceKind::Imported, "claude.json", servers(&["a", "b"], "imported"))
            .source(SourceKind::Imported, "vscode.json", servers(&["b", "c"], "imported-2"))
            .source(SourceKind::Config, "config.toml", servers(&["a"], "config"))
            .build();
        assert_eq!(args_of(&catalog, "a"), ["config"]);
        assert_eq!(args_of(&catalog, "b"), ["imported"], "the first imported source wins over the second");
        assert_eq!(args_of(&catalog, "c"), ["imported-2"]);
        assert_eq!(args_of(&catalog, "x"), ["extension"], "a gap is filled");
        let a = catalog.resolution("a").unwrap();
        assert_eq!(a.to_string(), "a: from config (config.toml), shadowing imported (claude.json), extension (host)");
        assert!(catalog.config().servers.values().all(|s| s.enabled));
    }

    #[test]
    fn a_source_that_disables_on_conflict_runs_none_of_the_definitions() {
        let catalog = CatalogBuilder::new()
            .source_with(SourceKind::Project, ".mcp.toml", servers(&["git", "own"], "project"), ConflictAction::Disable)
            .source(SourceKind::Imported, "claude.json", servers(&["git"], "imported"))
            .build();
        let git = catalog.resolution("git").unwrap();
        assert_eq!(git.source.kind, SourceKind::Project);
        assert!(!catalog.config().servers["git"].enabled);
        assert_eq!(
            git.disabled.as_deref(),
            Some("also defined by imported (claude.json), and project (.mcp.toml) disables on conflict")
        );
        assert!(catalog.config().servers["own"].enabled, "no conflict, nothing disabled");
    }

    #[test]
    fn a_definition_disabled_in_its_file_still_shadows() {
        let mut config = servers(&["a"], "config");
        config.servers.get_mut("a").unwrap().enabled = false;
        let catalog = CatalogBuilder::new()
            .source(SourceKind::Config, "config.toml", config)
            .source(SourceKind::Imported, "claude.json", servers(&["a"], "imported"))
            .build();
        assert!(!catalog.config().servers["a"].enabled);
        assert_eq!(
            catalog.resolution("a").unwrap().disabled.as_deref(),
            Some("enabled = false in config (config.toml)")
        );
        assert_eq!(catalog.resolution("a").unwrap().shadowed.len(), 1);
    }

    #[test]
    fn conflict_actions_parse() {
        assert_eq!("disable".parse::<ConflictAction>(), Ok(ConflictAction::Disable));
        assert!("replace".parse::<ConflictAction>().unwrap_err().contains("override or disable"));
    }
}
