//! Where sign-ins are kept between runs: one file readable by the user alone,
//! `<data dir>/tool-mediator/credentials.json` (on Linux `$XDG_DATA_HOME`, else
//! `~/.local/share`), one entry per server; the tokens and a registered client's secret in the
//! platform's credential store where there is one ([`super::platform`]), else in that file too.
//! Written whole to a new file and renamed over the old one under a lock, so a reader never sees
//! half of it and two processes refreshing at once do not lose each other's tokens; never
//! through a link someone else put in its place.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::platform::{self, PlatformError, Secrets};
use super::registration::Client;
use tool_mediator::kept;
use tool_mediator::read::{Links, open_regular};

/// The environment variable that keeps every sign-in in the file (`file`), the platform's
/// credential store unused.
pub const STORE_ENV: &str = "TOOL_MEDIATOR_CREDENTIAL_STORE";

/// The file is read only up to this size: a sign-in entry is a few kilobytes.
const MOST: u64 = 4 * 1024 * 1024;

/// One server's sign-in: where its tokens come from, who asked, and the tokens.
#[derive(Clone, Serialize, Deserialize)]
pub struct Credentials {
    /// The authorization server and its token endpoint (for refreshing without discovery).
    pub issuer: String,
    pub token_endpoint: String,
    /// The resource indicator the tokens were made for.
    pub resource: String,
    pub client: Client,
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    pub expires_at: Option<u64>,
    pub scope: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // No token or secret ever reaches a log.
        f.debug_struct("Credentials")
            .field("issuer", &self.issuer)
            .field("resource", &self.resource)
            .field("client", &self.client)
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    fn secrets(&self) -> Secrets {
        Secrets {
            access_token: self.access_token.clone(),
            refresh_token: self.refresh_token.clone(),
            client_secret: self.client.secret.clone(),
        }
    }

    /// What is kept of a sign-in: a client secret the user gave in the environment stays there.
    /// A client not registered here has no secret but the user's (a file written before
    /// `secret_env` was kept holds one without it: it goes at the next write).
    fn kept_part(mut self) -> Credentials {
        if self.client.secret_env.is_some() || !self.client.registered {
            self.client.secret = None;
        }
        self
    }

    /// What the file keeps of a sign-in whose secrets are in the platform's store.
    fn without_secrets(mut self) -> Credentials {
        self.access_token.clear();
        self.refresh_token = None;
        self.client.secret = None;
        self
    }

    fn with_secrets(mut self, secrets: Secrets) -> Credentials {
        self.access_token = secrets.access_token;
        self.refresh_token = secrets.refresh_token;
        self.client.secret = secrets.client_secret;
        self
    }
}

#[derive(Default, Serialize, Deserialize)]
struct File1 {
    version: u32,
    #[serde(default)]
    servers: BTreeMap<String, Credentials>,
    /// The servers whose tokens and client secret are in the platform's store, not here.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    in_platform_store: BTreeSet<String>,
}

/// Where a sign-in's secrets are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptIn {
    /// The platform's credential store (Keychain, Credential Manager, Secret Service).
    PlatformStore,
    /// The credentials file itself.
    File,
}

/// Why the credentials file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("no data directory to keep sign-ins in (set XDG_DATA_HOME or HOME)")]
    NoDirectory,
    #[error("{0}")]
    Platform(String),
}

/// The credentials file, and the platform's credential store beside it.
#[derive(Debug, Clone)]
pub struct CredentialStore {
    path: PathBuf,
    /// Whether secrets go to the platform's store, where there is one.
    platform: bool,
}

impl CredentialStore {
    /// The user's credentials file, the secrets in the platform's store where there is one
    /// (unless [`STORE_ENV`] says `file`).
    pub fn user() -> Result<CredentialStore, StoreError> {
        let dir = dirs::data_dir().ok_or(StoreError::NoDirectory)?;
        let platform = std::env::var(STORE_ENV).map_or(true, |store| !store.eq_ignore_ascii_case("file"));
        Ok(CredentialStore { path: dir.join("tool-mediator").join("credentials.json"), platform })
    }

    /// A credentials file at `path` holding everything (for tests, and for a profile of one's
    /// own).
    pub fn at(path: impl Into<PathBuf>) -> CredentialStore {
        CredentialStore { path: path.into(), platform: false }
    }

    /// The same, the secrets kept in the platform's store where there is one.
    #[must_use]
    pub fn with_platform_store(self) -> CredentialStore {
        CredentialStore { platform: true, ..self }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sign-in kept for `server`, if any.
    pub fn get(&self, server: &str) -> Result<Option<Credentials>, StoreError> {
        let mut file = self.read()?;
        let Some(credentials) = file.servers.remove(server) else { return Ok(None) };
        self.whole(server, credentials, &file.in_platform_store)
    }

    /// Every sign-in kept, by server; one whose secrets the platform's store cannot give now
    /// (locked, unreachable, removed by hand) is listed without them.
    pub fn all(&self) -> Result<BTreeMap<String, Credentials>, StoreError> {
        let file = self.read()?;
        let mut all = BTreeMap::new();
        for (server, credentials) in file.servers {
            let whole = match self.whole(&server, credentials.clone(), &file.in_platform_store) {
                Ok(Some(whole)) => whole,
                Ok(None) => credentials,
                Err(error) => {
                    tracing::warn!("the sign-in to {server}: {error}");
                    credentials
                }
            };
            all.insert(server, whole);
        }
        Ok(all)
    }

    /// Where the secrets of the sign-in kept for `server` are.
    pub fn kept_in(&self, server: &str) -> Result<KeptIn, StoreError> {
        let file = self.read()?;
        Ok(if file.in_platform_store.contains(server) { KeptIn::PlatformStore } else { KeptIn::File })
    }

    /// Keeps `credentials` for `server`, replacing what was kept: the secrets in the platform's
    /// store when there is one, else in the file; a client secret the user keeps in the
    /// environment (`client_secret_env`) in neither. The platform's store is asked before the
    /// file is locked: it may take its time (a prompt to unlock it).
    pub fn put(&self, server: &str, credentials: Credentials) -> Result<(), StoreError> {
        self.put_under(None, server, credentials)
    }

    /// Holds the file against every other process's change (and every other holder's in this
    /// one) until the returned lock is dropped: for a refresh, read again and written under it,
    /// so that two processes never both spend one refresh token. Waits for the lock.
    pub fn lock(&self) -> Result<StoreLock, StoreError> {
        let dir = self.path.parent().ok_or_else(|| self.error("no directory"))?;
        kept::private_dir(dir).map_err(|error| self.error(error))?;
        let file = kept::lock(&dir.join(LOCK_FILE)).map_err(|error| self.error(error))?;
        Ok(StoreLock { store: self.clone(), _file: file })
    }

    /// [`put`](Self::put), under `held` when the caller holds the lock already.
    fn put_under(&self, held: Option<&StoreLock>, server: &str, credentials: Credentials) -> Result<(), StoreError> {
        let credentials = credentials.kept_part();
        let in_platform = self.platform
            && match platform::put(server, &credentials.secrets()) {
                Ok(()) => true,
                Err(PlatformError::Unavailable(reason)) => {
                    self.file_instead(&reason);
                    false
                }
                Err(PlatformError::Refused(reason)) => return Err(StoreError::Platform(reason)),
            };
        let mut left_behind = false;
        self.change(held, |file| {
            let server = server.to_owned();
            if in_platform {
                file.servers.insert(server.clone(), credentials.without_secrets());
                file.in_platform_store.insert(server);
            } else {
                left_behind = file.in_platform_store.remove(&server);
                file.servers.insert(server, credentials);
            }
            Ok(true)
        })?;
        // One kept in the platform's store before is not left behind there.
        if left_behind {
            let _ = platform::remove(server);
        }
        Ok(())
    }

    /// Forgets the sign-in for `server`, wherever its secrets are; whether there was one. The
    /// file forgets it even when the platform's store cannot be reached now (said, as a warning:
    /// its entry there stays until it can be).
    pub fn remove(&self, server: &str) -> Result<bool, StoreError> {
        let mut in_platform = false;
        let removed = self.change(None, |file| {
            in_platform = file.in_platform_store.remove(server);
            Ok(file.servers.remove(server).is_some() || in_platform)
        })?;
        if in_platform && let Err(error) = platform::remove(server) {
            tracing::warn!("forgot the sign-in to {server}, but {error}: its entry there stays");
        }
        Ok(removed)
    }

    /// `credentials` from the file with their secrets, from the platform's store if they are
    /// there; `None` when the store no longer has them (removed by hand).
    fn whole(
        &self,
        server: &str,
        credentials: Credentials,
        in_platform_store: &BTreeSet<String>,
    ) -> Result<Option<Credentials>, StoreError> {
        if !in_platform_store.contains(server) {
            return Ok(Some(credentials));
        }
        let secrets = platform::get(server).map_err(|error| StoreError::Platform(error.to_string()))?;
        Ok(secrets.map(|secrets| credentials.with_secrets(secrets)))
    }

    /// Says, once a run, that the platform's store cannot be used and the file is.
    fn file_instead(&self, reason: &str) {
        static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::info!("{reason}; sign-ins are kept in {}, readable by you alone", self.path.display());
        }
    }

    fn error(&self, reason: impl std::fmt::Display) -> StoreError {
        StoreError::File { path: self.path.clone(), reason: reason.to_string() }
    }

    fn read(&self) -> Result<File1, StoreError> {
        let file = match open_regular(&self.path, Links::Refused) {
            Ok((file, _)) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(File1::default()),
            Err(_) if fs::symlink_metadata(&self.path).is_ok_and(|meta| meta.file_type().is_symlink()) => {
                return Err(self.error("a link; sign-ins are not kept through it"));
            }
            Err(error) => return Err(self.error(error)),
        };
        let mut text = String::new();
        file.take(MOST + 1).read_to_string(&mut text).map_err(|error| self.error(error))?;
        if text.len() as u64 > MOST {
            return Err(self.error(format!("larger than {MOST} bytes; not a credentials file")));
        }
        if text.trim().is_empty() {
            return Ok(File1::default());
        }
        // The error names the place, never the text (which holds tokens).
        serde_json::from_str(&text).map_err(|error| {
            self.error(format_args!("line {}, column {}: not a credentials file", error.line(), error.column()))
        })
    }

    /// Reads, changes and writes the file under the lock (`held`, or taken now); whether
    /// `change` changed anything.
    fn change(
        &self,
        held: Option<&StoreLock>,
        change: impl FnOnce(&mut File1) -> Result<bool, StoreError>,
    ) -> Result<bool, StoreError> {
        let lock = match held {
            Some(_) => None,
            None => Some(self.lock()?),
        };
        let mut file = self.read()?;
        if !change(&mut file)? {
            return Ok(false);
        }
        file.version = 1;
        let text = serde_json::to_string_pretty(&file).map_err(|error| self.error(error))?;
        let text = text + "\n";
        kept::replace(&self.path, text.as_bytes(), kept::Mode::Private).map_err(|error| self.error(error))?;
        drop(lock);
        Ok(true)
    }
}

/// The lock file beside the credentials file.
const LOCK_FILE: &str = "credentials.lock";

/// The credentials file held by this holder alone ([`CredentialStore::lock`]); released when
/// dropped.
pub struct StoreLock {
    store: CredentialStore,
    _file: std::fs::File,
}

impl std::fmt::Debug for StoreLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreLock").field("path", &self.store.path).finish_non_exhaustive()
    }
}

impl StoreLock {
    /// The sign-in kept for `server` now.
    pub fn get(&self, server: &str) -> Result<Option<Credentials>, StoreError> {
        self.store.get(server)
    }

    /// Keeps `credentials` for `server`, as [`CredentialStore::put`] does, under this lock.
    pub fn put(&self, server: &str, credentials: Credentials) -> Result<(), StoreError> {
        self.store.put_under(Some(self), server, credentials)
    }
}

#[cfg(test)]
mod tests {
    use super::super::registration::TokenAuth;
    use super::*;

    fn credentials(token: &str) -> Credentials {
        Credentials {
            issuer: "https://auth.test".into(),
            token_endpoint: "https://auth.test/token".into(),
            resource: "https://mcp.test/mcp".into(),
            client: Client {
                id: "id".into(),
                secret: Some("client-secret".into()),
                secret_env: None,
                token_auth: TokenAuth::ClientSecretBasic,
                redirect_uri: None,
                registered: true,
            },
            access_token: token.into(),
            refresh_token: Some("refresh-secret".into()),
            expires_at: Some(1),
            scope: None,
        }
    }

    #[test]
    fn keeps_forgets_and_never_shows_a_token() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::at(dir.path().join("deep/tool-mediator/credentials.json"));
        assert!(store.get("https://mcp.test/mcp").unwrap().is_none());
        store.put("https://mcp.test/mcp", credentials("access-secret")).unwrap();
        store.put("https://other.test/mcp", credentials("other")).unwrap();
        let kept = store.get("https://mcp.test/mcp").unwrap().unwrap();
        assert_eq!(kept.access_token, "access-secret");
        let shown = format!("{kept:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(store.remove("https://mcp.test/mcp").unwrap());
        assert!(!store.remove("https://mcp.test/mcp").unwrap());
        assert_eq!(store.all().unwrap().len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(store.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
            let mode = fs::metadata(store.path().parent().unwrap()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        }
    }

    #[test]
    fn a_client_secret_from_the_environment_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = CredentialStore::at(dir.path().join("credentials.json"));
        let mut given = credentials("t");
        given.client.secret_env = Some("TRACKER_SECRET".into());
        store.put("x", given).unwrap();
        let text = fs::read_to_string(store.path()).unwrap();
        assert!(!text.contains("client-secret") && text.contains("TRACKER_SECRET"), "{text}");
        let kept = store.get("x").unwrap().unwrap();
        assert_eq!((kept.client.secret, kept.client.secret_env.as_deref()), (None, Some("TRACKER_SECRET")));

        // A configured client kept before the variable's name was.
        let mut configured = credentials("t");
        configured.client.registered = false;
        store.put("y", configured).unwrap();
        assert!(!fs::read_to_string(store.path()).unwrap().contains("client-secret"));
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_the_files_place_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let path = dir.path().join("credentials.json");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let store = CredentialStore::at(&path);
        // Neither read nor written through: the target is untouched.
        let error = store.get("x").unwrap_err().to_string();
        assert!(error.contains("a link"), "{error}");
        assert!(store.put("x", credentials("t")).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");

        let linked_dir = dir.path().join("linked");
        std::os::unix::fs::symlink(dir.path(), &linked_dir).unwrap();
        let error = CredentialStore::at(linked_dir.join("credentials.json")).put("x", credentials("t")).unwrap_err();
        assert!(error.to_string().contains("is a link"), "{error}");
    }

    /// Regression (issue 42): a fifo at the sign-in store froze whoever read it (a gateway
    /// signing in to a remote server); it is refused at once, and the error names it.
    #[cfg(unix)]
    #[test]
    fn a_fifo_in_the_files_place_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
        let (sender, receiver) = std::sync::mpsc::channel();
        let store = CredentialStore::at(&path);
        std::thread::spawn(move || sender.send(store.get("x").map(|_| ()).map_err(|error| error.to_string())));
        let read = receiver.recv_timeout(std::time::Duration::from_secs(10)).expect("the fifo is not waited on");
        let error = read.unwrap_err();
        assert!(error.contains("credentials.json") && error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn a_damaged_file_is_named_with_the_place_and_no_text() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.json");
        fs::write(&path, "{\"version\": 1, \"servers\": {\"x\": \"secret-token\"}}").unwrap();
        let error = CredentialStore::at(&path).get("x").unwrap_err().to_string();
        assert!(error.contains("credentials.json") && error.contains("line 1"), "{error}");
        assert!(!error.contains("secret-token"), "{error}");
    }
}
