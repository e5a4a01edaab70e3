//! The key the cache's records are written under. Every record carries an HMAC-SHA256 of its
//! cache key, its header and its value under a secret only the mediators hold: not the Redis
//! password (which CI jobs and every replica share) and not the sled directory (which a CI cache
//! or a copied home directory brings along). Write access to the store alone cannot change what
//! a mediator reads back: a record that fails the check is a miss.
//!
//! The secret is `TOOL_MEDIATOR_CACHE_KEY` when set (what replicas on several machines share),
//! else a key made once for this user and kept in `cache.key` in the platform's configuration
//! directory, outside the cache (mode 0600, created new, never through a link).

use std::fmt;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The environment variable that holds the secret the records are written under.
pub const KEY_VARIABLE: &str = "TOOL_MEDIATOR_CACHE_KEY";

/// Bytes of a record's tag.
pub(super) const TAG: usize = 32;

/// Bytes of a key file, at most (64 hex digits and a line end, with room to spare).
const KEY_FILE_LIMIT: u64 = 1024;

/// The secret a cache's records are written under. Its `Debug` shows nothing of it.
#[derive(Clone)]
pub struct CacheKey(Vec<u8>);

impl fmt::Debug for CacheKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("CacheKey(..)")
    }
}

/// Why no key could be had from its file.
#[derive(Debug, thiserror::Error)]
#[error("the cache key {}: {message}", path.display())]
pub struct KeyError {
    pub path: PathBuf,
    pub message: String,
}

impl CacheKey {
    /// A key of these bytes (a secret several mediators share).
    pub fn new(secret: impl Into<Vec<u8>>) -> CacheKey {
        CacheKey(secret.into())
    }

    /// A key of 32 random bytes: what this cache object writes, it alone reads back.
    pub fn random() -> CacheKey {
        let mut bytes = vec![0; 32];
        if getrandom::fill(&mut bytes).is_err() {
            // No randomness from the system: a key nobody else can know still, for this process.
            let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
            bytes = <Sha256 as sha2::Digest>::digest(seed.as_bytes()).to_vec();
        }
        CacheKey(bytes)
    }

    /// The key the mediators of this user share: `TOOL_MEDIATOR_CACHE_KEY` when set, else the
    /// one kept in `file` (made there the first time); a random one, with a warning, when
    /// neither can be had.
    pub fn of_environment_or(file: Option<&Path>) -> CacheKey {
        if let Some(secret) = std::env::var_os(KEY_VARIABLE).filter(|secret| !secret.is_empty()) {
            return CacheKey(secret.into_encoded_bytes());
        }
        let Some(file) = file else {
            tracing::warn!(
                "no place for the cache key and no {KEY_VARIABLE}: this run reads back only what it writes itself"
            );
            return CacheKey::random();
        };
        match CacheKey::kept_in(file) {
            Ok(key) => key,
            Err(error) => {
                tracing::warn!("{error}; this run reads back only what it writes itself (or set {KEY_VARIABLE})");
                CacheKey::random()
            }
        }
    }

    /// Where this user's key is kept by default: `cache.key` in the platform's configuration
    /// directory's `tool-mediator`.
    pub fn default_file() -> Option<PathBuf> {
        dirs::config_dir().map(|dir| dir.join("tool-mediator").join("cache.key"))
    }

    /// The key kept in `path`, made (32 random bytes, as hex) when there is none: written to a
    /// file of its own first and linked into place, so a reader never sees half a key and a
    /// key another process made at the same time is the one both use.
    pub fn kept_in(path: &Path) -> Result<CacheKey, KeyError> {
        let failed = |message: String| KeyError { path: path.to_owned(), message };
        match read_key(path) {
            Ok(key) => return Ok(key),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(failed(error.to_string())),
        }
        let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|error| failed(format!("cannot create its directory: {error}")))?;
        let fresh = CacheKey::random();
        let hex: String = fresh.0.iter().map(|byte| format!("{byte:02x}")).collect();
        let draft = dir.join(format!(".cache.key.{}.{}", std::process::id(), fastrand::u64(..)));
        let written = create_new_private(&draft).and_then(|mut file| {
            file.write_all(format!("{hex}\n").as_bytes())?;
            file.sync_all()
        });
        let linked = written.and_then(|()| std::fs::hard_link(&draft, path));
        let _ = std::fs::remove_file(&draft);
        match linked {
            Ok(()) => Ok(fresh),
            // Another process made it first: its key is the one.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                read_key(path).map_err(|error| failed(error.to_string()))
            }
            Err(error) => Err(failed(format!("cannot write it: {error}"))),
        }
    }

    fn mac(&self) -> Hmac<Sha256> {
        <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }

    /// The MAC of a record stored under `key` whose body is `body` (its header, then its value).
    fn mac_of(&self, key: &[u8], body: [&[u8]; 2]) -> Hmac<Sha256> {
        let mut mac = self.mac();
        mac.update(&(key.len() as u64).to_be_bytes());
        mac.update(key);
        for part in body {
            mac.update(part);
        }
        mac
    }

    /// The tag of a record stored under `key` whose body is `body` (its header, then its value).
    pub(super) fn tag(&self, key: &[u8], body: [&[u8]; 2]) -> [u8; TAG] {
        self.mac_of(key, body).finalize().into_bytes().into()
    }

    /// Whether `tag` is the tag of `body` stored under `key` (compared in constant time).
    pub(super) fn verifies(&self, key: &[u8], body: [&[u8]; 2], tag: &[u8]) -> bool {
        self.mac_of(key, body).verify_slice(tag).is_ok()
    }
}

/// Reads the key in `path`: a regular file (not followed if a link), of hex digits.
fn read_key(path: &Path) -> std::io::Result<CacheKey> {
    let invalid = |message: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, message.to_owned());
    let mut file = open_no_follow(path)?;
    if !file.metadata()?.is_file() {
        return Err(invalid("is not a regular file"));
    }
    let mut text = String::new();
    std::io::Read::by_ref(&mut file).take(KEY_FILE_LIMIT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > KEY_FILE_LIMIT {
        return Err(invalid(&format!("is longer than {KEY_FILE_LIMIT} bytes")));
    }
    let hex = text.trim();
    let bytes: Option<Vec<u8>> = hex
        .len()
        .is_multiple_of(2)
        .then(|| (0..hex.len()).step_by(2).map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok()).collect())
        .flatten();
    match bytes {
        Some(bytes) if bytes.len() >= 16 => Ok(CacheKey(bytes)),
        _ => Err(invalid("does not hold a key (at least 32 hex digits); remove it and a new one is made")),
    }
}

#[cfg(unix)]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path)
}

#[cfg(not(unix))]
fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "is a link"));
    }
    std::fs::File::open(path)
}

#[cfg(unix)]
fn create_new_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW).open(path)
}

#[cfg(not(unix))]
fn create_new_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).open(path)
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_pins_the_key_the_header_and_the_value() {
        let key = CacheKey::new(b"a secret of the mediators".to_vec());
        let tag = key.tag(b"k", [b"rec", b"ord"]);
        assert!(key.verifies(b"k", [b"rec", b"ord"], &tag));
        assert!(!key.verifies(b"k", [b"rec", b"orD"], &tag), "another value");
        assert!(!key.verifies(b"j", [b"rec", b"ord"], &tag), "moved under another key");
        assert!(!CacheKey::new(b"another secret".to_vec()).verifies(b"k", [b"rec", b"ord"], &tag));
        assert!(!key.verifies(b"k", [b"rec", b"ord"], &tag[..31]));
        assert_eq!(format!("{key:?}"), "CacheKey(..)");
    }

    #[test]
    fn a_key_is_made_once_kept_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/cache.key");
        let made = CacheKey::kept_in(&path).unwrap();
        let again = CacheKey::kept_in(&path).unwrap();
        assert_eq!(made.0, again.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1, "no draft left behind");
    }

    #[cfg(unix)]
    #[test]
    fn a_key_file_that_is_a_link_or_holds_no_key_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let theirs = dir.path().join("theirs");
        std::fs::write(&theirs, "00".repeat(32)).unwrap();
        let path = dir.path().join("cache.key");
        std::os::unix::fs::symlink(&theirs, &path).unwrap();
        let error = CacheKey::kept_in(&path).unwrap_err();
        assert!(error.to_string().contains("cache.key"), "{error}");
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "not hex").unwrap();
        assert!(CacheKey::kept_in(&path).unwrap_err().to_string().contains("does not hold a key"));
    }
}
