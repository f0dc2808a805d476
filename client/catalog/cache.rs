//! The catalog cache: what each server listed last time, kept in a file per configuration,
//! so that a `startup = "lazy"` server can be listed at once and started on its first call.
//!
//! The file ([`CatalogCache::for_config`]: under the user's cache directory,
//! `$XDG_CACHE_HOME` or `~/.cache`, then `mcpwire/catalogs/`) is JSON:
//! `{"version": 1, "servers": {NAME: {"identity": "…", "tools": […], "resources": […],
//! "resourceTemplates": […], "prompts": […]}}}`. An entry counts only for a server whose
//! connection identity still matches: `identity` is a 64-bit FNV-1a fingerprint of the
//! command, args, cwd, url, era and the *names* of the env variables and headers (their
//! values are left out, as they may be secrets). A file that cannot be read or parsed, or an
//! entry of another identity, is ignored: [`CatalogCache::load`] says why, for the host to
//! warn, and the server is started as if eager.
//!
//! Writes replace the file atomically (a temporary file renamed over it); the set's writes
//! ([`CatalogCache::update`]) keep the entries of servers it does not list now.
//!
//! Not here: when to write or read (the connection set, after each successful listing and at
//! start).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::client::config::{ServerConfig, TransportConfig};
use crate::proto::mcp_types::{Prompt, Resource, ResourceTemplate, Tool};

const VERSION: u32 = 1;

/// What one server listed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct CachedListing {
    /// Its connection identity's fingerprint ([`identity`]).
    pub identity: String,
    /// Its tools.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Its resources.
    #[serde(default)]
    pub resources: Vec<Resource>,
    /// Its resource templates.
    #[serde(default)]
    pub resource_templates: Vec<ResourceTemplate>,
    /// Its prompts.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, CachedListing>,
}

/// A catalog cache file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogCache {
    path: PathBuf,
}

/// What [`CatalogCache::load`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Loaded {
    /// The usable entries, by server name.
    pub servers: BTreeMap<String, CachedListing>,
    /// Why the file (or an entry) was ignored, one line each: for the host to warn.
    pub ignored: Vec<String>,
}

impl CatalogCache {
    /// The cache at `path`.
    pub fn at(path: impl Into<PathBuf>) -> CatalogCache {
        CatalogCache { path: path.into() }
    }

    /// The cache of configuration file `config` under the user's cache directory: named
    /// after the file's name and a hash of its absolute path, so two configurations never
    /// share one. `None` when neither `XDG_CACHE_HOME` nor `HOME` is set.
    pub fn for_config(config: &Path) -> Option<CatalogCache> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
        let absolute = std::path::absolute(config).unwrap_or_else(|_| config.to_path_buf());
        let stem: String = config
            .file_name()
            .map(|n| n.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect())
            .unwrap_or_default();
        let hash = fnv1a64(absolute.as_os_str().as_encoded_bytes());
        Some(CatalogCache::at(base.join("mcpwire").join("catalogs").join(format!("{stem}-{hash:016x}.json"))))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The entries whose identity matches the server of the same name in `servers`. A
    /// missing file is an empty cache, silently.
    pub fn load<'a>(&self, servers: impl IntoIterator<Item = &'a ServerConfig>) -> Loaded {
        let mut loaded = Loaded::default();
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return loaded,
            Err(e) => {
                loaded.ignored.push(format!("catalog cache {}: cannot read: {e}", self.path.display()));
                return loaded;
            }
        };
        let file: CacheFile = match serde_json::from_str(&text) {
            Ok(file) => file,
            Err(e) => {
                loaded.ignored.push(format!("catalog cache {} ignored: not a cache file: {e}", self.path.display()));
                return loaded;
            }
        };
        if file.version != VERSION {
            loaded.ignored.push(format!("catalog cache {} ignored: version {}", self.path.display(), file.version));
            return loaded;
        }
        let mut entries = file.servers;
        for server in servers {
            let Some(entry) = entries.remove(&server.name) else { continue };
            if entry.identity == identity(server) {
                loaded.servers.insert(server.name.clone(), entry);
            } else {
                loaded.ignored.push(format!(
                    "catalog cache {}: the entry of {} is stale (its command, url or environment changed)",
                    self.path.display(),
                    server.name
                ));
            }
        }
        loaded
    }

    /// Writes the entries of `servers` over those of the file, keeping the file's entries of
    /// other servers (one not running now keeps its listing for the next start); a file that
    /// cannot be read is replaced.
    ///
    /// # Errors
    /// When the directory cannot be made or the file written.
    pub fn update(&self, servers: &BTreeMap<String, CachedListing>) -> std::io::Result<()> {
        let mut merged = std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|text| serde_json::from_str::<CacheFile>(&text).ok())
            .filter(|file| file.version == VERSION)
            .map(|file| file.servers)
            .unwrap_or_default();
        merged.extend(servers.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.store(&merged)
    }

    /// Writes `servers` as the whole cache.
    ///
    /// # Errors
    /// When the directory cannot be made or the file written.
    pub fn store(&self, servers: &BTreeMap<String, CachedListing>) -> std::io::Result<()> {
        let file = CacheFile { version: VERSION, servers: servers.clone() };
        let text = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, &self.path)
    }
}

/// The fingerprint of `server`'s connection identity (see the module docs).
pub fn identity(server: &ServerConfig) -> String {
    let mut parts: Vec<String> = vec![server.era.to_string()];
    match &server.transport {
        TransportConfig::Stdio { command, args, env, env_vars, cwd, inherit_env } => {
            parts.extend(["stdio".to_owned(), command.clone()]);
            parts.extend(args.iter().cloned());
            parts.extend(env.keys().map(|k| format!("env:{k}")));
            parts.extend(env_vars.iter().map(|k| format!("env_vars:{k}")));
            parts.push(format!("cwd:{cwd:?} inherit:{inherit_env}"));
        }
        TransportConfig::Http { url, bearer_token_env_var, http_headers, env_http_headers, legacy_sse } => {
            parts.extend(["http".to_owned(), url.clone(), format!("sse:{legacy_sse}")]);
            parts.extend(bearer_token_env_var.iter().map(|v| format!("bearer:{v}")));
            parts.extend(http_headers.keys().chain(env_http_headers.keys()).map(|h| format!("header:{h}")));
        }
        TransportConfig::InProcess(_) => parts.push("in-process".to_owned()),
    }
    // Length-prefixed, so that no two lists of parts join to the same bytes.
    let mut bytes = Vec::new();
    for part in &parts {
        bytes.extend_from_slice(&(part.len() as u64).to_le_bytes());
        bytes.extend_from_slice(part.as_bytes());
    }
    format!("{:016x}", fnv1a64(&bytes))
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("mcpwire-cache-unit-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("cache.json")
    }

    #[test]
    fn fnv1a64_matches_the_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn the_identity_follows_the_recipe_but_not_secret_values() {
        let server = ServerConfig::stdio("a", "srv", ["--x"]);
        let mut secret = server.clone();
        if let TransportConfig::Stdio { env, .. } = &mut secret.transport {
            env.insert("TOKEN".into(), "one".into());
        }
        let mut other_secret = secret.clone();
        if let TransportConfig::Stdio { env, .. } = &mut other_secret.transport {
            env.insert("TOKEN".into(), "two".into());
        }
        assert_eq!(identity(&secret), identity(&other_secret), "values are not part of it");
        assert_ne!(identity(&server), identity(&secret), "names are");
        assert_ne!(identity(&server), identity(&ServerConfig::stdio("a", "srv", ["--y"])));
        assert_ne!(identity(&ServerConfig::stdio("a", "ab", ["c"])), identity(&ServerConfig::stdio("a", "a", ["bc"])));
    }

    #[test]
    fn entries_round_trip_and_stale_or_corrupt_ones_are_ignored_with_a_reason() {
        let cache = CatalogCache::at(scratch("trip"));
        let server = ServerConfig::stdio("a", "srv", ["--x"]);
        assert!(cache.load([&server]).servers.is_empty() && cache.load([&server]).ignored.is_empty(), "no file");
        let tool = Tool::new("t", serde_json::json!({"type": "object"}));
        let entry = CachedListing { identity: identity(&server), tools: vec![tool], ..CachedListing::default() };
        cache.store(&[("a".to_owned(), entry.clone())].into()).unwrap();
        assert_eq!(cache.load([&server]).servers["a"], entry);

        let other = CachedListing { identity: "x".into(), ..CachedListing::default() };
        cache.update(&[("b".to_owned(), other)].into()).unwrap();
        assert_eq!(cache.load([&server]).servers["a"], entry, "an update keeps the other entries");

        let changed = ServerConfig::stdio("a", "srv", ["--other"]);
        let loaded = cache.load([&changed]);
        assert!(loaded.servers.is_empty());
        assert!(loaded.ignored[0].contains("the entry of a is stale"), "{:?}", loaded.ignored);

        std::fs::write(cache.path(), "{not json").unwrap();
        let loaded = cache.load([&server]);
        assert!(loaded.servers.is_empty());
        assert!(loaded.ignored[0].contains("not a cache file"), "{:?}", loaded.ignored);
        let _ = std::fs::remove_dir_all(cache.path().parent().unwrap());
    }

    #[test]
    fn each_configuration_has_its_own_file() {
        let a = CatalogCache::for_config(Path::new("/etc/a/config.toml")).unwrap();
        let b = CatalogCache::for_config(Path::new("/etc/b/config.toml")).unwrap();
        assert_ne!(a, b);
        let name = a.path().file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("config_toml-") && name.ends_with(".json"), "{name}");
    }
}
