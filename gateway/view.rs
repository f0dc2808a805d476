//! The downstream catalog ([`View`]): the set's tools, prompts, resources and templates under
//! the names the gateway serves them by (set-qualified or their own, per [`PrefixMode`];
//! resource URIs under `SLUG+URI`), and the way back from a served name to its server and
//! upstream name.
//!
//! Not here: rebuilding it when the catalog changes, or routing (`mod.rs`, `routing.rs`).

use super::*;

/// The maps the gateway looks up on every call are keyed by its own names (routes from the
/// catalog, caller ids, metric labels of listed tools), never by what a client inserts: they
/// take the cheap hasher of [`OwnKeyMap`].
pub(crate) use crate::server::own_keys::OwnKeyMap;

/// How upstream tools and prompts are named downstream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixMode {
    /// Always `mcp__SERVER__NAME` (resource URIs as `SERVER+URI`).
    Always,
    /// The upstream name, unless two servers share it.
    OnCollision,
    /// The upstream name; two servers sharing one is an error at start.
    Never,
}

/// The downstream catalog: what each upstream offers, under the names offered downstream.
#[derive(Default)]
pub(crate) struct View {
    pub(crate) tools: Vec<Tool>,
    pub(super) tool_routes: OwnKeyMap<String, (String, String)>,
    pub(crate) prompts: Vec<Prompt>,
    pub(super) prompt_routes: HashMap<String, (String, String)>,
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<ResourceTemplate>,
    /// Unprefixed URIs (and template literal prefixes) → the server that listed them.
    pub(super) resource_routes: HashMap<String, String>,
    pub(super) template_prefixes: Vec<(String, String)>,
    /// Servers whose URIs are prefixed, by slug; and the slug of each server.
    pub(super) slugs: HashMap<String, String>,
    pub(super) slug_of: OwnKeyMap<String, String>,
}

/// A URI scheme prefix for `server`: lowercase letters, digits, `-` and `.`, starting with a
/// letter.
pub(super) fn slug(server: &str) -> String {
    let mut slug: String = server
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c.to_ascii_lowercase() } else { '-' })
        .collect();
    if !slug.starts_with(|c: char| c.is_ascii_alphabetic()) {
        slug.insert(0, 's');
    }
    slug
}

/// The literal part of a URI template, before its first expression.
pub(super) fn literal_prefix(template: &str) -> &str {
    template.split('{').next().unwrap_or(template)
}

impl View {
    /// The view of `catalog` under `prefix`.
    ///
    /// # Errors
    /// With [`PrefixMode::Never`], a name (or URI) two servers offer, naming both.
    pub(crate) fn build(catalog: &MergedCatalog, prefix: PrefixMode) -> Result<View, String> {
        let mut view = View::default();
        let mut owners: HashMap<&str, Vec<&str>> = HashMap::new();
        for t in &catalog.tools {
            owners.entry(t.tool.name.as_str()).or_default().push(t.server.as_str());
        }
        for t in &catalog.tools {
            let shared = owners[t.tool.name.as_str()].len() > 1;
            let name = match prefix {
                PrefixMode::Always => t.qualified_name.clone(),
                PrefixMode::OnCollision if shared => t.qualified_name.clone(),
                PrefixMode::Never if shared => {
                    let servers = &owners[t.tool.name.as_str()];
                    return Err(format!(
                        "tool {:?} is offered by both {} and {} (--prefix never)",
                        t.tool.name, servers[0], servers[1]
                    ));
                }
                _ => t.tool.name.clone(),
            };
            view.tool_routes.insert(name.clone(), (t.server.clone(), t.tool.name.clone()));
            view.tools.push(Tool { name, ..t.tool.clone() });
        }
        let mut prompt_owners: HashMap<&str, Vec<&str>> = HashMap::new();
        for (server, p) in &catalog.prompts {
            prompt_owners.entry(p.name.as_str()).or_default().push(server.as_str());
        }
        let qualified = qualify(catalog.prompts.iter().map(|(s, p)| (s.as_str(), p.name.as_str())));
        for ((server, p), qualified) in catalog.prompts.iter().zip(qualified) {
            let owners = &prompt_owners[p.name.as_str()];
            let name = match prefix {
                PrefixMode::Always => qualified,
                PrefixMode::OnCollision if owners.len() > 1 => qualified,
                PrefixMode::Never if owners.len() > 1 => {
                    return Err(format!(
                        "prompt {:?} is offered by both {} and {} (--prefix never)",
                        p.name, owners[0], owners[1]
                    ))
                }
                _ => p.name.clone(),
            };
            view.prompt_routes.insert(name.clone(), (server.clone(), p.name.clone()));
            view.prompts.push(Prompt { name, ..p.clone() });
        }
        let mut uri_owners: HashMap<&str, HashSet<&str>> = HashMap::new();
        for (server, r) in &catalog.resources {
            uri_owners.entry(r.uri.as_str()).or_default().insert(server.as_str());
        }
        for (server, t) in &catalog.resource_templates {
            uri_owners.entry(t.uri_template.as_str()).or_default().insert(server.as_str());
        }
        let mut mapped: HashSet<&str> = HashSet::new();
        for (uri, servers) in &uri_owners {
            match prefix {
                PrefixMode::Always => mapped.extend(servers.iter().copied()),
                PrefixMode::OnCollision if servers.len() > 1 => mapped.extend(servers.iter().copied()),
                PrefixMode::Never if servers.len() > 1 => {
                    let mut servers: Vec<_> = servers.iter().collect();
                    servers.sort();
                    return Err(format!(
                        "resource {uri:?} is offered by both {} and {} (--prefix never)",
                        servers[0], servers[1]
                    ));
                }
                _ => {}
            }
        }
        let mut servers: Vec<&str> = mapped.into_iter().collect();
        servers.sort();
        for server in servers {
            let mut s = slug(server);
            if view.slugs.contains_key(&s) {
                s = format!("{s}-{:08x}", crate::client::connection_set::fnv1a(server.as_bytes()));
            }
            view.slugs.insert(s.clone(), server.to_owned());
            view.slug_of.insert(server.to_owned(), s);
        }
        for (server, r) in &catalog.resources {
            view.resource_routes.entry(r.uri.clone()).or_insert_with(|| server.clone());
            view.resources.push(Resource { uri: view.map_uri(server, &r.uri), ..r.clone() });
        }
        for (server, t) in &catalog.resource_templates {
            view.template_prefixes.push((literal_prefix(&t.uri_template).to_owned(), server.clone()));
            view.templates.push(ResourceTemplate { uri_template: view.map_uri(server, &t.uri_template), ..t.clone() });
        }
        // Longest literal first: the most specific template wins.
        view.template_prefixes.sort_by_key(|(literal, _)| std::cmp::Reverse(literal.len()));
        Ok(view)
    }

    /// `uri` of `server` as offered downstream.
    pub(super) fn map_uri(&self, server: &str, uri: &str) -> String {
        match self.slug_of.get(server) {
            Some(slug) => format!("{slug}+{uri}"),
            None => uri.to_owned(),
        }
    }

    /// The server and upstream name `method` with `params` reaches (the server empty when
    /// none, as for a list), for the live view: the prompt of `prompts/get`, the URI of
    /// `resources/read`, the prompt or template of `completion/complete`.
    pub(super) fn target(&self, method: &str, params: Option<&Body>) -> (String, String) {
        #[derive(serde::Deserialize)]
        struct Target {
            name: Option<String>,
            uri: Option<String>,
            #[serde(rename = "ref")]
            reference: Option<Box<Target>>,
        }
        let raw = params.and_then(|p| p.to_raw().ok());
        let asked = raw.and_then(|raw| serde_json::from_str::<Target>(raw.get()).ok());
        let asked = match (method, asked) {
            ("completion/complete", Some(target)) => target.reference.map(|r| *r),
            (_, asked) => asked,
        };
        let Some(asked) = asked else { return (String::new(), String::new()) };
        if let Some(name) = asked.name {
            return self.prompt_routes.get(&name).cloned().unwrap_or((String::new(), name));
        }
        match asked.uri {
            Some(uri) => self.resolve_uri(&uri).unwrap_or((String::new(), uri)),
            None => (String::new(), String::new()),
        }
    }

    /// The server behind a downstream URI (or template), and the URI as that server knows it.
    pub(super) fn resolve_uri(&self, uri: &str) -> Option<(String, String)> {
        if let Some((slug, rest)) = uri.split_once('+') {
            if let Some(server) = self.slugs.get(slug) {
                return Some((server.clone(), rest.to_owned()));
            }
        }
        if let Some(server) = self.resource_routes.get(uri) {
            return Some((server.clone(), uri.to_owned()));
        }
        let (_, server) = self.template_prefixes.iter().find(|(literal, _)| uri.starts_with(literal.as_str()))?;
        Some((server.clone(), uri.to_owned()))
    }

    /// The server and upstream name of a downstream tool name.
    pub(crate) fn tool_route(&self, name: &str) -> Option<&(String, String)> {
        self.tool_routes.get(name)
    }
}
