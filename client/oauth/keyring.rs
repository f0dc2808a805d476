//! OAuth credentials in the operating system's credential store (feature `keyring`), through
//! the `keyring` crate: the macOS Keychain, the Windows Credential Manager, and on Linux the
//! kernel keyring (keyutils), which every Linux has, desktop or headless.
//!
//! [`KeyringTokenStore`] keeps one entry per [`CredentialKey`] (service [`DEFAULT_SERVICE`],
//! account `RESOURCE|HASH`, the value the [`StoredCredentials`] as JSON, split over
//! `RESOURCE|HASH#1`, `#2`… past 1,200 characters, more than the Windows Credential Manager
//! holds in one entry) and one index entry (account `index|HASH`, the list of keys, no secret in
//! it), since no platform lists a service's entries the same way. `HASH` is the first 16 hex
//! digits of a SHA-256 over the store's scope (the configuration directory: one profile's
//! logins are not another's) and the key, so entries of two profiles or two keys never meet.
//!
//! What each platform promises: the Keychain and the Credential Manager keep entries across
//! reboots, encrypted with the user's login. The kernel keyring keeps them in kernel memory, in
//! the user's persistent keyring (for `/proc/sys/kernel/keys/persistent_keyring_expiry`
//! seconds after the last use, three days by default) and the session keyring (a process
//! without a login session gets one of its own, gone with it: between runs the persistent
//! keyring is what keeps a login): never on disk, so never past a reboot, readable by the
//! user's own processes only. A login lost that way shows as `needs login`, and a new `login`
//! stores it again.
//!
//! With feature `secret-service`, on Linux the desktop's Secret Service (GNOME Keyring, KWallet,
//! over the session's D-Bus) holds the entries instead wherever it answers — encrypted on disk
//! with the user's login, kept across reboots —, the kernel keyring wherever it does not (no
//! session bus, no service, a locked collection that would have to prompt): decided once per
//! process ([`KeyringTokenStore::backend`] says which).
//!
//! Not here: choosing between the keyring and the file ([`AutoTokenStore`](super::AutoTokenStore)).

use std::io;
use std::path::Path;
use std::sync::Mutex;

use super::store::{CredentialKey, StoredCredentials, TokenStore};

/// The service name of the entries of [`KeyringTokenStore::for_dir`] (shared by every mcpwire
/// host, as the configuration directory is).
pub const DEFAULT_SERVICE: &str = "mcpwire OAuth credentials";

/// A [`TokenStore`] in the operating system's credential store. Calls are synchronous and short
/// (a system call, or a local IPC on macOS and Windows); index updates within this process
/// are serialized.
#[derive(Debug)]
pub struct KeyringTokenStore {
    service: String,
    scope: String,
    index: Mutex<()>,
}

impl KeyringTokenStore {
    /// Entries of `service`, named within `scope` (any string: a configuration directory, a
    /// profile's name).
    pub fn new(service: impl Into<String>, scope: impl Into<String>) -> KeyringTokenStore {
        KeyringTokenStore { service: service.into(), scope: scope.into(), index: Mutex::new(()) }
    }

    /// The store of the configuration directory `dir` (see [`config_dir`](super::store::config_dir)),
    /// under [`DEFAULT_SERVICE`].
    pub fn for_dir(dir: &Path) -> KeyringTokenStore {
        KeyringTokenStore::new(DEFAULT_SERVICE, dir.display().to_string())
    }

    /// The entries' service name.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The account name of `key`'s entry: `RESOURCE|HASH`.
    pub fn account(&self, key: &CredentialKey) -> String {
        format!("{}|{}", key.resource, self.hash(&[&key.issuer, &key.resource]))
    }

    /// The account name of the index entry: `index|HASH`.
    pub fn index_account(&self) -> String {
        format!("index|{}", self.hash(&[]))
    }

    fn hash(&self, parts: &[&str]) -> String {
        let mut context = ring::digest::Context::new(&ring::digest::SHA256);
        context.update(self.scope.as_bytes());
        for part in parts {
            // A separator no URL holds, so that two different lists never hash alike.
            context.update(b"\0");
            context.update(part.as_bytes());
        }
        context.finish().as_ref()[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Which store holds the entries: `Secret Service`, `kernel keyring`, `Keychain`,
    /// `Credential Manager`, or `none` on other platforms.
    pub fn backend(&self) -> &'static str {
        if cfg!(target_os = "macos") {
            "Keychain"
        } else if cfg!(target_os = "windows") {
            "Credential Manager"
        } else if cfg!(not(target_os = "linux")) {
            "none"
        } else if secret_service::reachable() {
            "Secret Service"
        } else {
            "kernel keyring"
        }
    }

    fn entry(&self, account: &str) -> io::Result<::keyring::Entry> {
        if !cfg!(any(target_os = "linux", target_os = "macos", target_os = "windows")) {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "keyring: none is built in for this platform"));
        }
        #[cfg(all(target_os = "linux", feature = "secret-service"))]
        if secret_service::reachable() {
            return secret_service::entry(&self.service, account);
        }
        #[cfg(target_os = "linux")]
        {
            settle_session_keyring(&self.service);
            kernel_entry(&self.service, account)
        }
        #[cfg(not(target_os = "linux"))]
        ::keyring::Entry::new(&self.service, account).map_err(error)
    }

    fn get(&self, account: &str) -> io::Result<Option<String>> {
        match self.entry(account)?.get_password() {
            Ok(value) => Ok(Some(value)),
            Err(::keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(error(e)),
        }
    }

    fn delete_one(&self, account: &str) -> io::Result<()> {
        match self.entry(account)?.delete_credential() {
            Ok(()) | Err(::keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(error(e)),
        }
    }

    /// The value of `account`, put together from its chunks.
    fn read(&self, account: &str) -> io::Result<Option<String>> {
        let Some(first) = self.get(account)? else { return Ok(None) };
        let Some((count, mut value)) = chunked(&first) else { return Ok(Some(first)) };
        for i in 1..count {
            let chunk = self.get(&chunk_account(account, i))?;
            value.push_str(&chunk.ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("keyring: chunk {i} of {count} of an entry is missing"),
                )
            })?);
        }
        Ok(Some(value))
    }

    /// Writes `value` under `account`, in chunks of [`CHUNK`] characters past that length
    /// (the Windows Credential Manager holds 2,560 bytes of UTF-16 an entry), and forgets
    /// the chunks of a longer value it replaces.
    fn set(&self, account: &str, value: &str) -> io::Result<()> {
        match self.entry(account)?.set_password(value) {
            Ok(()) => Ok(()),
            // keyutils reports a refused add_key(2) (EACCES) as "no entry".
            Err(::keyring::Error::NoEntry) => {
                Err(io::Error::new(io::ErrorKind::PermissionDenied, "keyring: the keyring refused to store the entry"))
            }
            Err(e) => Err(error(e)),
        }
    }

    fn write(&self, account: &str, value: &str) -> io::Result<()> {
        let before = self.chunk_count(account)?;
        let chars: Vec<char> = value.chars().collect();
        let chunks: Vec<String> = chars.chunks(CHUNK).map(|c| c.iter().collect()).collect();
        if chunks.len() <= 1 {
            self.set(account, value)?;
        } else {
            // The rest first: a reader never meets a header whose chunks are not written yet.
            for (i, chunk) in chunks.iter().enumerate().skip(1) {
                self.set(&chunk_account(account, i), chunk)?;
            }
            let header = format!("{CHUNKED}{}:{}", chunks.len(), chunks[0]);
            self.set(account, &header)?;
        }
        for i in chunks.len().max(1)..before {
            self.delete_one(&chunk_account(account, i))?;
        }
        Ok(())
    }

    fn delete(&self, account: &str) -> io::Result<()> {
        let count = self.chunk_count(account)?;
        self.delete_one(account)?;
        for i in 1..count {
            self.delete_one(&chunk_account(account, i))?;
        }
        Ok(())
    }

    /// How many entries `account`'s value holds (0: none).
    fn chunk_count(&self, account: &str) -> io::Result<usize> {
        Ok(match self.get(account)? {
            None => 0,
            Some(first) => chunked(&first).map_or(1, |(count, _)| count),
        })
    }

    fn read_index(&self) -> io::Result<Vec<CredentialKey>> {
        match self.read(&self.index_account())? {
            None => Ok(Vec::new()),
            Some(text) => serde_json::from_str(&text)
                .map_err(|e| super::store::not_credentials(&format!("keyring index of {}", self.service), &e)),
        }
    }

    fn update_index(&self, change: impl FnOnce(&mut Vec<CredentialKey>) -> bool) -> io::Result<()> {
        let _serialized = self.index.lock().expect("keyring index lock");
        let mut keys = self.read_index()?;
        if !change(&mut keys) {
            return Ok(());
        }
        if keys.is_empty() {
            return self.delete(&self.index_account());
        }
        let text = serde_json::to_string(&keys).map_err(io::Error::other)?;
        self.write(&self.index_account(), &text)
    }
}

/// Gives this thread the session keyring the keyring crate will then use, once per thread.
///
/// The crate's keyutils entry reads the session keyring's id, then links the user's persistent
/// keyring into "the session keyring". For a process with no login session keyring (a service,
/// a container, CI: it falls back on the user-session keyring), that link makes the kernel give
/// the thread a session keyring of its own, with the persistent keyring in it; the id read
/// before is the old one, where a search finds nothing. So the first entry a thread builds
/// would miss every stored login. An entry built and dropped first settles the thread's session
/// keyring, and entries built after it search the one holding the persistent keyring.
/// The kernel keyring's entry of `service` and `account`, named as the keyring crate names it
/// by default (`keyring-rs:ACCOUNT@SERVICE`), whichever store the crate's default is.
#[cfg(target_os = "linux")]
fn kernel_entry(service: &str, account: &str) -> io::Result<::keyring::Entry> {
    let credential = ::keyring::keyutils::KeyutilsCredential::new_with_target(None, service, account).map_err(error)?;
    Ok(::keyring::Entry::new_with_credential(Box::new(credential)))
}

#[cfg(target_os = "linux")]
fn settle_session_keyring(service: &str) {
    thread_local!(static SETTLED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    if !SETTLED.get() {
        let _ = kernel_entry(service, "session");
        SETTLED.set(true);
    }
}

/// The Secret Service, where feature `secret-service` builds it in.
mod secret_service {
    /// Whether the session's Secret Service answers a lookup without prompting: asked once per
    /// process (a probe entry that is never written), so every entry of a run lands in one
    /// store. Always `false` without feature `secret-service`.
    pub(super) fn reachable() -> bool {
        #[cfg(all(target_os = "linux", feature = "secret-service"))]
        {
            static REACHABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
            *REACHABLE.get_or_init(|| {
                std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_some()
                    && matches!(
                        entry("mcpwire keyring probe", "probe").map(|e| e.get_password()),
                        Ok(Ok(_) | Err(::keyring::Error::NoEntry))
                    )
            })
        }
        #[cfg(not(all(target_os = "linux", feature = "secret-service")))]
        false
    }

    /// The Secret Service entry of `service` and `account`, in the default collection.
    #[cfg(all(target_os = "linux", feature = "secret-service"))]
    pub(super) fn entry(service: &str, account: &str) -> std::io::Result<::keyring::Entry> {
        let credential =
            ::keyring::secret_service::SsCredential::new_with_target(None, service, account).map_err(super::error)?;
        Ok(::keyring::Entry::new_with_credential(Box::new(credential)))
    }
}

/// Characters an entry holds before a value is split (codex's figure: under the Windows
/// Credential Manager's 2,560 bytes of UTF-16 with room for the header).
const CHUNK: usize = 1200;

/// The first entry of a split value: `CHUNKED` `COUNT` `:` its first chunk. A stored value is
/// JSON (it starts with `{` or `[`), so no whole value starts so.
const CHUNKED: &str = "mcpwire-chunked:";

fn chunk_account(account: &str, i: usize) -> String {
    format!("{account}#{i}")
}

/// The chunk count and first chunk of a split value's first entry.
fn chunked(first: &str) -> Option<(usize, String)> {
    let (count, chunk) = first.strip_prefix(CHUNKED)?.split_once(':')?;
    Some((count.parse().ok().filter(|n| *n >= 2)?, chunk.to_owned()))
}

/// A keyring error as an I/O error: its message names the keyring, never a value.
fn error(e: ::keyring::Error) -> io::Error {
    let kind = match e {
        ::keyring::Error::NoStorageAccess(_) => io::ErrorKind::PermissionDenied,
        ::keyring::Error::NoEntry => io::ErrorKind::NotFound,
        ::keyring::Error::BadEncoding(_) => io::ErrorKind::InvalidData,
        _ => io::ErrorKind::Other,
    };
    let message = match &e {
        // Its Display is generic; say which bytes would not decode without showing them.
        ::keyring::Error::BadEncoding(_) => "the entry is not UTF-8".to_owned(),
        e => e.to_string(),
    };
    io::Error::new(kind, format!("keyring: {message}"))
}

impl TokenStore for KeyringTokenStore {
    fn load(&self, key: &CredentialKey) -> io::Result<Option<StoredCredentials>> {
        let Some(text) = self.read(&self.account(key))? else { return Ok(None) };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| super::store::not_credentials(&format!("keyring entry of {}", key.resource), &e))
    }

    fn save(&self, key: &CredentialKey, credentials: &StoredCredentials) -> io::Result<()> {
        let text = serde_json::to_string(credentials).map_err(io::Error::other)?;
        self.write(&self.account(key), &text)?;
        self.update_index(|keys| {
            let missing = !keys.contains(key);
            if missing {
                keys.push(key.clone());
            }
            missing
        })
    }

    fn remove(&self, key: &CredentialKey) -> io::Result<()> {
        self.delete(&self.account(key))?;
        self.update_index(|keys| {
            let before = keys.len();
            keys.retain(|k| k != key);
            keys.len() != before
        })
    }

    fn keys(&self) -> io::Result<Vec<CredentialKey>> {
        self.read_index()
    }

    fn location(&self, _key: &CredentialKey) -> Option<String> {
        Some(format!("{} ({})", self.backend(), self.service))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    //! Against the real kernel keyring of the user running the tests, each test in a service
    //! of its own.

    use super::*;
    use crate::client::oauth::store::{ClientRegistration, TokenSet};
    use crate::client::oauth::Secret;

    fn store(name: &str) -> KeyringTokenStore {
        let service = format!("mcpwire-test-{name}-{}", crate::client::oauth::authorization::random_token());
        KeyringTokenStore::new(service, "/tmp/profile")
    }

    fn credentials(access_token: &str) -> StoredCredentials {
        StoredCredentials {
            client: Some(ClientRegistration {
                client_id: "cid".into(),
                client_secret: None,
                token_endpoint_auth_method: "none".into(),
            }),
            tokens: Some(TokenSet {
                access_token: Secret::new(access_token),
                refresh_token: Some(Secret::new("refresh-s3cret")),
                expires_at: Some(1_900_000_000),
                scopes: vec!["mcp".into()],
                token_type: None,
                dpop_key: None,
            }),
        }
    }

    #[test]
    fn entries_round_trip_through_the_kernel_keyring_with_an_index() {
        let store = store("round-trip");
        let key = CredentialKey::new("https://as", "https://mcp/mcp");
        let other = CredentialKey::new("https://as2", "https://mcp/mcp");
        assert_eq!(store.load(&key).unwrap(), None);
        assert_eq!(store.keys().unwrap(), vec![]);
        store.save(&key, &credentials("access-s3cret")).unwrap();
        store.save(&other, &credentials("other-s3cret")).unwrap();
        store.save(&key, &credentials("access-s3cret-2")).unwrap();
        // A second store of the same names reads what the first wrote (another process would).
        let again = KeyringTokenStore::new(store.service(), "/tmp/profile");
        assert_eq!(again.load(&key).unwrap(), Some(credentials("access-s3cret-2")));
        assert_eq!(again.keys().unwrap(), vec![key.clone(), other.clone()], "each key once");
        assert_ne!(again.account(&key), again.account(&other));
        assert!(again.account(&key).starts_with("https://mcp/mcp|"), "{}", again.account(&key));
        // Another profile's store of the same service sees none of it.
        let elsewhere = KeyringTokenStore::new(store.service(), "/tmp/other-profile");
        assert_eq!((elsewhere.load(&key).unwrap(), elsewhere.keys().unwrap()), (None, vec![]));
        again.remove(&key).unwrap();
        assert_eq!(store.load(&key).unwrap(), None);
        assert_eq!(store.keys().unwrap(), vec![other.clone()]);
        store.remove(&other).unwrap();
        store.remove(&other).unwrap();
        assert_eq!(store.keys().unwrap(), vec![]);
        assert_eq!(store.get(&store.index_account()).unwrap(), None, "an empty index is no entry");
    }

    #[test]
    fn a_long_value_is_split_and_a_shorter_one_leaves_no_chunk_behind() {
        let store = store("chunks");
        let key = CredentialKey::new("https://as", "https://mcp/mcp");
        let account = store.account(&key);
        let long = "t".repeat(3 * CHUNK);
        store.save(&key, &credentials(&long)).unwrap();
        let first = store.get(&account).unwrap().unwrap();
        assert!(first.starts_with("mcpwire-chunked:4:"), "{}", &first[..40]);
        assert!(first.len() <= CHUNKED.len() + 2 + CHUNK, "{}", first.len());
        assert!(store.get(&chunk_account(&account, 3)).unwrap().is_some());
        assert_eq!(store.load(&key).unwrap(), Some(credentials(&long)));
        store.save(&key, &credentials("short")).unwrap();
        assert_eq!(store.load(&key).unwrap(), Some(credentials("short")));
        for i in 1..4 {
            assert_eq!(store.get(&chunk_account(&account, i)).unwrap(), None, "chunk {i} forgotten");
        }
        store.save(&key, &credentials(&long)).unwrap();
        store.remove(&key).unwrap();
        for i in 0..4 {
            let name = if i == 0 { account.clone() } else { chunk_account(&account, i) };
            assert_eq!(store.get(&name).unwrap(), None, "entry {i} removed");
        }
    }

    #[test]
    fn a_value_that_is_not_credentials_is_an_error_that_shows_no_value() {
        let store = store("corrupt");
        let key = CredentialKey::new("https://as", "https://mcp/mcp");
        store.write(&store.account(&key), "{\"tokens\": \"s3cret\"").unwrap();
        let e = store.load(&key).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(!e.to_string().contains("s3cret"), "{e}");
        store.delete(&store.account(&key)).unwrap();
    }
}
