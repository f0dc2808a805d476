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
//! - [`KeyringTokenStore`](super::keyring::KeyringTokenStore) (feature `keyring`): the
//!   operating system's credential store.
//! - [`AutoTokenStore`]: the keyring where it answers, else the file.
//!
//! [`CredentialsStoreMode`] names the three choices a host offers its users (codex's
//! `mcp_oauth_credentials_store`: `keyring`, `file`, `auto`), and [`credentials_store`] opens
//! the store of a mode in the user's configuration directory.
//!
//! Keys are issuer + resource ([`CredentialKey`]): a token or a registration from one
//! authorization server is never offered to another (an authorization-server migration starts
//! a new flow). `Debug` of anything here shows no token or secret.
//!
//! Not here: obtaining or refreshing tokens, encryption of the file (the file's mode is the
//! protection, as for SSH keys; the keyring encrypts where the platform does).

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

    /// Where `key`'s credentials are kept, for a user to read (`file /path`, `keyring
    /// (SERVICE)`); `None` when the store does not say (in memory).
    fn location(&self, key: &CredentialKey) -> Option<String> {
        let _ = key;
        None
    }
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
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map_err(|e| not_credentials(&self.path.display().to_string(), &e))
            }
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

/// A stored value that does not parse, said without its text: serde's message quotes the
/// string it met, which may be a token.
pub(super) fn not_credentials(what: &str, e: &serde_json::Error) -> io::Error {
    let kind = match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "not JSON",
        _ => "not stored credentials",
    };
    io::Error::new(io::ErrorKind::InvalidData, format!("{what}: {kind} (line {}, column {})", e.line(), e.column()))
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
    Ok(config_dir()?.join(STORE_FILE))
}

/// The user's configuration directory: `$MCPWIRE_CONFIG_DIR` when [`CONFIG_DIR_VAR`] is set,
/// else `$XDG_CONFIG_HOME/mcpwire`, else `$HOME/.config/mcpwire`. It holds the file store, and
/// names the keyring store's entries (one profile's logins are not another's).
///
/// # Errors
/// When none of the variables is set.
pub fn config_dir() -> io::Result<PathBuf> {
    if let Some(dir) = std::env::var_os(CONFIG_DIR_VAR).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => match std::env::var_os("HOME").filter(|v| !v.is_empty()) {
            Some(home) => PathBuf::from(home).join(".config"),
            None => return Err(io::Error::new(io::ErrorKind::NotFound, "neither XDG_CONFIG_HOME nor HOME is set")),
        },
    };
    Ok(base.join("mcpwire"))
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

    fn location(&self, _key: &CredentialKey) -> Option<String> {
        Some(format!("file {}", self.path.display()))
    }
}

/// Where a host keeps its users' OAuth credentials (codex's `mcp_oauth_credentials_store`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CredentialsStoreMode {
    /// The operating system's credential store (feature `keyring`): the macOS Keychain, the
    /// Windows Credential Manager, on Linux the Secret Service where a desktop runs one, else
    /// the kernel keyring. Fails where none answers.
    Keyring,
    /// [`FileTokenStore`] in the configuration directory (mode 0600).
    File,
    /// The keyring where it answers, else the file ([`AutoTokenStore`]); the file alone in a
    /// build without the `keyring` feature. The default, as codex's.
    #[default]
    Auto,
}

impl CredentialsStoreMode {
    /// `keyring`, `file` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            CredentialsStoreMode::Keyring => "keyring",
            CredentialsStoreMode::File => "file",
            CredentialsStoreMode::Auto => "auto",
        }
    }
}

impl std::fmt::Display for CredentialsStoreMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CredentialsStoreMode {
    type Err = String;

    fn from_str(text: &str) -> Result<CredentialsStoreMode, String> {
        match text {
            "keyring" => Ok(CredentialsStoreMode::Keyring),
            "file" => Ok(CredentialsStoreMode::File),
            "auto" => Ok(CredentialsStoreMode::Auto),
            other => Err(format!("unknown credentials store {other:?} (expected keyring, file or auto)")),
        }
    }
}

/// The store of `mode` in the user's [configuration directory](config_dir): the file
/// `oauth-credentials.json` there, or keyring entries named after it.
///
/// # Errors
/// When no configuration directory can be found; [`CredentialsStoreMode::Keyring`] in a build
/// without the `keyring` feature (`Unsupported`). A keyring that does not answer is found on
/// first use (see [`TokenStore::keys`] to find it sooner).
pub fn credentials_store(mode: CredentialsStoreMode) -> io::Result<std::sync::Arc<dyn TokenStore>> {
    let dir = config_dir()?;
    let file = FileTokenStore::new(dir.join(STORE_FILE));
    Ok(match mode {
        CredentialsStoreMode::File => std::sync::Arc::new(file),
        #[cfg(feature = "keyring")]
        CredentialsStoreMode::Keyring => std::sync::Arc::new(super::keyring::KeyringTokenStore::for_dir(&dir)),
        #[cfg(feature = "keyring")]
        CredentialsStoreMode::Auto => {
            std::sync::Arc::new(AutoTokenStore::new(super::keyring::KeyringTokenStore::for_dir(&dir), file))
        }
        #[cfg(not(feature = "keyring"))]
        CredentialsStoreMode::Keyring => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this build has no keyring support (mcpwire's `keyring` feature)",
            ))
        }
        #[cfg(not(feature = "keyring"))]
        CredentialsStoreMode::Auto => std::sync::Arc::new(file),
    })
}

/// A keyring store with a file store behind it, as codex's `auto`: reads look in the keyring
/// first and in the file when the keyring has nothing or does not answer; writes go to the
/// keyring, and to the file only when the keyring does not answer — a write that reaches the
/// keyring removes the key's entry from the file, so a login moves out of the file on its next
/// refresh. `remove` clears both.
///
/// The two are any [`TokenStore`]s (the file behind a keyring, in practice).
#[derive(Debug)]
pub struct AutoTokenStore<K, F> {
    keyring: K,
    file: F,
}

impl<K: TokenStore, F: TokenStore> AutoTokenStore<K, F> {
    /// `keyring` first, `file` behind it.
    pub fn new(keyring: K, file: F) -> AutoTokenStore<K, F> {
        AutoTokenStore { keyring, file }
    }

    /// The keyring store.
    pub fn keyring(&self) -> &K {
        &self.keyring
    }

    /// The file store.
    pub fn file(&self) -> &F {
        &self.file
    }
}

impl<K: TokenStore, F: TokenStore> TokenStore for AutoTokenStore<K, F> {
    fn load(&self, key: &CredentialKey) -> io::Result<Option<StoredCredentials>> {
        match self.keyring.load(key) {
            Ok(Some(found)) => Ok(Some(found)),
            Ok(None) | Err(_) => self.file.load(key),
        }
    }

    fn save(&self, key: &CredentialKey, credentials: &StoredCredentials) -> io::Result<()> {
        match self.keyring.save(key, credentials) {
            Ok(()) => {
                // Only when there is something to remove: no empty file written for nothing.
                if self.file.load(key)?.is_some() {
                    self.file.remove(key)?;
                }
                Ok(())
            }
            Err(_) => self.file.save(key, credentials),
        }
    }

    fn remove(&self, key: &CredentialKey) -> io::Result<()> {
        // A keyring that answers must forget; one that does not holds nothing of ours.
        if self.keyring.keys().is_ok() {
            self.keyring.remove(key)?;
        }
        if self.file.load(key)?.is_some() {
            self.file.remove(key)?;
        }
        Ok(())
    }

    fn location(&self, key: &CredentialKey) -> Option<String> {
        match self.keyring.load(key) {
            Ok(Some(_)) => self.keyring.location(key),
            _ => self.file.location(key),
        }
    }

    fn keys(&self) -> io::Result<Vec<CredentialKey>> {
        let mut keys = self.keyring.keys().unwrap_or_default();
        for key in self.file.keys()? {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        Ok(keys)
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
    fn a_file_that_is_not_credentials_is_an_error_that_shows_no_value() {
        let dir = temp_dir("wrong");
        let path = dir.join("creds.json");
        std::fs::write(&path, br#"{"credentials": [{"issuer": "i", "resource": "r", "tokens": "s3cret"}]}"#).unwrap();
        let err = FileTokenStore::new(&path).load(&CredentialKey::new("i", "r")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("not stored credentials (line 1"), "{err}");
        assert!(!err.to_string().contains("s3cret"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn auto_prefers_the_keyring_and_moves_a_file_login_into_it() {
        let dir = temp_dir("auto");
        let path = dir.join("creds.json");
        let key = CredentialKey::new("https://as", "https://mcp/mcp");
        let old = CredentialKey::new("https://as", "https://old/mcp");
        FileTokenStore::new(&path).save(&old, &sample()).unwrap();
        let auto = AutoTokenStore::new(MemoryTokenStore::new(), FileTokenStore::new(&path));
        assert_eq!(auto.load(&old).unwrap(), Some(sample()), "a login kept in the file is found");
        assert_eq!(auto.location(&old), Some(format!("file {}", path.display())));
        auto.save(&key, &sample()).unwrap();
        assert_eq!(auto.keyring().load(&key).unwrap(), Some(sample()));
        assert_eq!(auto.file().load(&key).unwrap(), None, "the file is left alone");
        assert_eq!(auto.location(&key), None, "the memory store does not say where");
        assert_eq!(auto.keys().unwrap(), vec![key.clone(), old.clone()]);
        // A refresh of the file's login goes to the keyring and leaves the file.
        auto.save(&old, &StoredCredentials::default()).unwrap();
        assert_eq!(auto.file().keys().unwrap(), vec![]);
        assert_eq!(auto.load(&old).unwrap(), Some(StoredCredentials::default()));
        auto.file().save(&key, &sample()).unwrap();
        auto.remove(&key).unwrap();
        assert_eq!((auto.keyring().load(&key).unwrap(), auto.file().load(&key).unwrap()), (None, None));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_modes_are_codex_names_and_auto_is_the_default() {
        for mode in [CredentialsStoreMode::Keyring, CredentialsStoreMode::File, CredentialsStoreMode::Auto] {
            assert_eq!(mode.as_str().parse::<CredentialsStoreMode>(), Ok(mode));
        }
        assert_eq!(CredentialsStoreMode::default(), CredentialsStoreMode::Auto);
        assert_eq!(
            "vault".parse::<CredentialsStoreMode>(),
            Err("unknown credentials store \"vault\" (expected keyring, file or auto)".to_owned())
        );
    }

    #[test]
    fn expiry_is_absolute() {
        let tokens = sample().tokens.unwrap();
        assert!(!tokens.expires_within(1_800_000_000, 60));
        assert!(tokens.expires_within(1_899_999_950, 60));
        assert!(!TokenSet { expires_at: None, ..tokens }.expires_within(u64::MAX, 60));
    }
}
