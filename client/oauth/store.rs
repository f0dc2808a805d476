//! Where credentials live between requests and between runs: a [`TokenStore`] keeps, per
//! authorization server (`issuer`) and protected resource, the client registration and the
//! tokens ([`StoredCredentials`]), with the access token's expiry as an absolute time so that a
//! restarted process knows whether to refresh.
//!
//! - [`MemoryTokenStore`]: for one process.
//! - [`FileTokenStore`]: one JSON file per user, created with mode 0600 (on Unix) and rewritten
//!   whole through a temporary file of the same mode, by default
//!   `$MCPWIRE_CONFIG_DIR/oauth-credentials.json` when that variable is set (tests, several
//!   profiles), else `$XDG_CONFIG_HOME/mcpwire/oauth-credentials.json` (else `~/.config/…`).
//!
//! Keys are issuer + resource ([`CredentialKey`]): a token or a registration from one
//! authorization server is never offered to another (an authorization-server migration starts
//! a new flow). `Debug` of anything here shows no token or secret.
//!
//! Not here: obtaining or refreshing tokens, encryption at rest (the file's mode is the
//! protection, as for SSH keys).

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::Secret;

/// What credentials are kept under: the authorization server's issuer identifier and the
/// protected resource's identifier.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CredentialKey {
    /// The authorization server's `issuer`.
    pub issuer: String,
    /// The protected resource (the MCP server).
    pub resource: String,
}

impl CredentialKey {
    /// The key of `resource`'s credentials from `issuer`.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> CredentialKey {
        CredentialKey { issuer: issuer.into(), resource: resource.into() }
    }
}

/// A client's identity at one authorization server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRegistration {
    /// `client_id` (a URL for a Client ID Metadata Document).
    pub client_id: String,
    /// `client_secret`, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<Secret>,
    /// How the client authenticates at the token endpoint: `none`, `client_secret_basic`,
    /// `client_secret_post` or `private_key_jwt`.
    pub token_endpoint_auth_method: String,
}

/// Tokens from one authorization server for one resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The access token.
    pub access_token: Secret,
    /// The refresh token, if the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires, in seconds since the Unix epoch, if the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes asked for (the basis of a step-up's union).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// `DPoP` for a DPoP-bound token (RFC 9449), else bearer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    /// The private key a DPoP-bound token is bound to (PKCS#8, base64url).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dpop_key: Option<Secret>,
}

impl TokenSet {
    /// Whether the access token is DPoP-bound.
    pub fn is_dpop(&self) -> bool {
        self.token_type.as_deref().is_some_and(|t| t.eq_ignore_ascii_case("dpop"))
    }
}

impl TokenSet {
    /// Whether the access token expires within `skew_secs` of `now` (Unix seconds).
    pub fn expires_within(&self, now: u64, skew_secs: u64) -> bool {
        self.expires_at.is_some_and(|at| at <= now.saturating_add(skew_secs))
    }
}

/// Everything kept for one [`CredentialKey`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCredentials {
    /// The registration obtained by Dynamic Client Registration (pre-registered and metadata
    /// document clients need none kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientRegistration>,
    /// The tokens, once a flow has completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenSet>,
}

/// A place to keep credentials. Calls are short and synchronous (a map, a small file).
pub trait TokenStore: Send + Sync + 'static {
    /// What is kept under `key`.
    ///
    /// # Errors
    /// When the store cannot be read.
    fn load(&self, key: &CredentialKey) -> io::Result<Option<StoredCredentials>>;

    /// Keeps `credentials` under `key`, replacing what was there.
    ///
    /// # Errors
    /// When the store cannot be written.
    fn save(&self, key: &CredentialKey, credentials: &StoredCredentials) -> io::Result<()>;

    /// Forgets `key`.
    ///
    /// # Errors
    /// When the store cannot be written.
    fn remove(&self, key: &CredentialKey) -> io::Result<()>;

    /// Every key kept (to find a resource's credentials before discovery has named its issuer).
    ///
    /// # Errors
    /// When the store cannot be read.
    fn keys(&self) -> io::Result<Vec<CredentialKey>>;
}

/// A [`TokenStore`] in memory, for one process.
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    entries: Mutex<BTreeMap<CredentialKey, StoredCredentials>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> MemoryTokenStore {
        MemoryTokenStore::default()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, key: &CredentialKey) -> io::Result<Option<StoredCredentials>> {
        Ok(self.entries.lock().expect("store lock").get(key).cloned())
    }

    fn save(&self, key: &CredentialKey, credentials: &StoredCredentials) -> io::Result<()> {
        self.entries.lock().expect("store lock").insert(key.clone(), credentials.clone());
        Ok(())
    }

    fn remove(&self, key: &CredentialKey) -> io::Result<()> {
        self.entries.lock().expect("store lock").remove(key);
        Ok(())
    }

    fn keys(&self) -> io::Result<Vec<CredentialKey>> {
        Ok(self.entries.lock().expect("store lock").keys().cloned().collect())
    }
}

/// The file's shape: a list, since JSON object keys cannot be pairs.
#[derive(Default, Serialize, Deserialize)]
struct FileContents {
    #[serde(default)]
    credentials: Vec<FileEntry>,
}

#[derive(Serialize, Deserialize)]
struct FileEntry {
    #[serde(flatten)]
    key: CredentialKey,
    #[serde(flatten)]
    stored: StoredCredentials,
}

/// A [`TokenStore`] in one JSON file, mode 0600. Every call reads or rewrites the whole file
/// (it holds a handful of entries); writes within this process are serialized.
#[derive(Debug)]
pub struct FileTokenStore {
    path: PathBuf,
    write: Mutex<()>,
}

impl FileTokenStore {
    /// A store in `path` (created on the first save, with its directory).
    pub fn new(path: impl Into<PathBuf>) -> FileTokenStore {
        FileTokenStore { path: path.into(), write: Mutex::new(()) }
    }

    /// The store in the user's configuration directory:
    /// `$MCPWIRE_CONFIG_DIR/oauth-credentials.json` when [`CONFIG_DIR_VAR`] is set, else
    /// `$XDG_CONFIG_HOME/mcpwire/oauth-credentials.json`, else
    /// `$HOME/.config/mcpwire/oauth-credentials.json`.
    ///
    /// # Errors
    /// When none of the variables is set.
    pub fn in_config_dir() -> io::Result<FileTokenStore> {
        Ok(FileTokenStore::new(default_path()?))
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(&self) -> io::Result<FileContents> {
        match std::fs::read(&self.path) {
            Ok(bytes) if bytes.is_empty() => Ok(FileContents::default()),
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", self.path.display()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(FileContents::default()),
            Err(e) => Err(e),
        }
    }

    fn write(&self, contents: &FileContents) -> io::Result<()> {
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let bytes = serde_json::to_vec_pretty(contents).map_err(io::Error::other)?;
        let temporary = self.path.with_extension("json.tmp");
        {
            use std::io::Write as _;
            let mut file = open_private(&temporary)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
        }
        std::fs::rename(&temporary, &self.path)
    }

    fn update(&self, change: impl FnOnce(&mut Vec<FileEntry>)) -> io::Result<()> {
        let _serialized = self.write.lock().expect("store lock");
        let mut contents = self.read()?;
        change(&mut contents.credentials);
        self.write(&contents)
    }
}

/// Creates (or truncates) `path` readable and writable by its owner only.
fn open_private(path: &Path) -> io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        options.mode(0o600);
        let file = options.open(path)?;
        // A file that existed keeps its old mode through `open`: set it.
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok(file)
    }
    #[cfg(not(unix))]
    options.open(path)
}

/// The variable naming our configuration directory, before the XDG default.
pub const CONFIG_DIR_VAR: &str = "MCPWIRE_CONFIG_DIR";

const STORE_FILE: &str = "oauth-credentials.json";

fn default_path() -> io::Result<PathBuf> {
    if let Some(dir) = std::env::var_os(CONFIG_DIR_VAR).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir).join(STORE_FILE));
    }
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".config"),
            None => return Err(io::Error::new(io::ErrorKind::NotFound, "neither XDG_CONFIG_HOME nor HOME is set")),
        },
    };
    Ok(base.join("mcpwire").join(STORE_FILE))
}

impl TokenStore for FileTokenStore {
    fn load(&self, key: &CredentialKey) -> io::Result<Option<StoredCredentials>> {
        Ok(self.read()?.credentials.into_iter().find(|e| e.key == *key).map(|e| e.stored))
    }

    fn save(&self, key: &CredentialKey, credentials: &StoredCredentials) -> io::Result<()> {
        self.update(|entries| {
            entries.retain(|e| e.key != *key);
            entries.push(FileEntry { key: key.clone(), stored: credentials.clone() });
        })
    }

    fn remove(&self, key: &CredentialKey) -> io::Result<()> {
        self.update(|entries| entries.retain(|e| e.key != *key))
    }

    fn keys(&self) -> io::Result<Vec<CredentialKey>> {
        Ok(self.read()?.credentials.into_iter().map(|e| e.key).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StoredCredentials {
        StoredCredentials {
            client: Some(ClientRegistration {
                client_id: "cid".into(),
                client_secret: Some(Secret::new("client-s3cret")),
                token_endpoint_auth_method: "client_secret_basic".into(),
            }),
            tokens: Some(TokenSet {
                access_token: Secret::new("access-s3cret"),
                refresh_token: Some(Secret::new("refresh-s3cret")),
                expires_at: Some(1_900_000_000),
                scopes: vec!["a".into()],
                token_type: None,
                dpop_key: Some(Secret::new("dpop-s3cret")),
            }),
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("mcpwire-store-{name}-{}", super::super::authorization::random_token()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn debug_shows_no_secret() {
        let shown = format!("{:?}", sample());
        for secret in ["client-s3cret", "access-s3cret", "refresh-s3cret", "dpop-s3cret"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.contains("cid"), "what is not secret still shows: {shown}");
    }

    #[test]
    fn the_file_store_round_trips_with_mode_0600() {
        let dir = temp_dir("mode");
        let path = dir.join("sub").join("creds.json");
        let store = FileTokenStore::new(&path);
        let key = CredentialKey::new("https://as", "https://mcp/mcp");
        assert_eq!(store.load(&key).unwrap(), None);
        store.save(&key, &sample()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "mode {mode:o}");
        }
        let other = CredentialKey::new("https://as2", "https://mcp/mcp");
        store.save(&other, &StoredCredentials::default()).unwrap();
        let reopened = FileTokenStore::new(&path);
        assert_eq!(reopened.load(&key).unwrap(), Some(sample()));
        assert_eq!(reopened.keys().unwrap().len(), 2);
        reopened.remove(&key).unwrap();
        assert_eq!(reopened.load(&key).unwrap(), None);
        assert_eq!(reopened.keys().unwrap(), vec![other]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_loose_file_is_tightened_on_save() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = temp_dir("loose");
        let path = dir.join("creds.json");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        FileTokenStore::new(&path).save(&CredentialKey::new("i", "r"), &sample()).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_corrupt_file_is_an_error_not_an_empty_store() {
        let dir = temp_dir("corrupt");
        let path = dir.join("creds.json");
        std::fs::write(&path, b"{not json").unwrap();
        let err = FileTokenStore::new(&path).load(&CredentialKey::new("i", "r")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn expiry_is_absolute() {
        let tokens = sample().tokens.unwrap();
        assert!(!tokens.expires_within(1_800_000_000, 60));
        assert!(tokens.expires_within(1_899_999_950, 60));
        assert!(!TokenSet { expires_at: None, ..tokens }.expires_within(u64::MAX, 60));
    }
}
