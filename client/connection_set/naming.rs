//! The names the set offers: each tool's qualified name (`mcp__SERVER__TOOL`, reduced to what
//! model APIs take, bounded, made unique with an FNV-1a suffix) and the table of everything the
//! ready servers offer under those names. Not here: when the table is rebuilt (`Shared`).

use crate::client::config::ApprovalMode;
use crate::proto::mcp_types::Prompt;
use crate::proto::mcp_types::Resource;
use crate::proto::mcp_types::ResourceTemplate;
use crate::proto::mcp_types::Tool;
use std::collections::HashSet;
/// The longest qualified tool name (the limit of most model APIs).
pub const MAX_TOOL_NAME_BYTES: usize = 64;

/// One tool of the catalog.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CatalogTool {
    /// The name it is offered under: `mcp__SERVER__TOOL` (`mcp__SCOPE__SERVER__TOOL` for a
    /// scoped server), reduced.
    pub qualified_name: String,
    /// The server's key ([`ServerConfig::key`](crate::client::config::ServerConfig::key): its name, or `SCOPE/NAME`).
    pub server: String,
    /// The scope the server runs in, if any.
    pub scope: Option<String>,
    /// The tool as the server lists it.
    pub tool: Tool,
    /// Its resolved approval mode.
    pub approval_mode: ApprovalMode,
}

/// Everything the ready servers offer, in stable order.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct MergedCatalog {
    /// Tools, by server name then the server's order.
    pub tools: Vec<CatalogTool>,
    /// `(server, resource)`.
    pub resources: Vec<(String, Resource)>,
    /// `(server, template)`.
    pub resource_templates: Vec<(String, ResourceTemplate)>,
    /// `(server, prompt)`.
    pub prompts: Vec<(String, Prompt)>,
}

impl MergedCatalog {
    /// The tool offered as `qualified_name`.
    pub fn tool(&self, qualified_name: &str) -> Option<&CatalogTool> {
        self.tools.iter().find(|t| t.qualified_name == qualified_name)
    }
}

/// Qualified names for `(server, tool)` pairs, in order: `mcp__SERVER__TOOL` reduced to
/// `[A-Za-z0-9_-]`; when that is longer than [`MAX_TOOL_NAME_BYTES`] or already taken, cut to
/// 55 bytes and suffixed with `_` and the 8 hex digits of the FNV-1a hash of the unreduced name.
pub fn qualify<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut used = HashSet::new();
    let mut out = Vec::new();
    for (server, tool) in pairs {
        let full = format!("mcp__{server}__{tool}");
        let mut name = sanitize(&full);
        if name.len() > MAX_TOOL_NAME_BYTES || used.contains(&name) {
            let cut = MAX_TOOL_NAME_BYTES - 9;
            let mut salt = 0u32;
            loop {
                let hash = if salt == 0 { fnv1a(full.as_bytes()) } else { fnv1a(format!("{full}#{salt}").as_bytes()) };
                let candidate = format!("{}_{hash:08x}", &name[..name.len().min(cut)]);
                if !used.contains(&candidate) {
                    name = candidate;
                    break;
                }
                salt += 1;
            }
        }
        used.insert(name.clone());
        out.push(name);
    }
    out
}

pub(super) fn sanitize(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// 32-bit FNV-1a.
pub fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |hash, b| (hash ^ u32::from(*b)).wrapping_mul(0x0100_0193))
}
