//! The key the cache's records are written under. Every record carries an HMAC-SHA256 of its
//! cache key, its header and its value under a secret only the mediators hold: not the Redis
//! password (which CI jobs and every replica share) and not the sled directory (which a CI cache
//! or a copied home directory brings along). Write access to the store alone cannot change what
//! a mediator reads back: a record that fails the check is a miss.
//!
//! The secret is `TOOL_MEDIATOR_CACHE_KEY` when set (what replicas on several machines share),
//! else a key made once for this user and kept in `cache.key` in the platform's configuration
//! directory, outside the cache (mode 0600, in a directory of the user's alone, never written or
//! read through a link).

use std::fmt;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::{kept, read};

/// The environment variable that holds the secret the records are written under.
pub const KEY_VARIABLE: &str = "TOOL_MEDIATOR_CACHE_KEY";

/// Bytes of a record's tag.
pub(super) const TAG: usize = 32;

/// Bytes of a key file, at most (64 hex digits and a line end, with room to spare).
const KEY_FILE_LIMIT: u64 = 1024;

/// The lock beside the key file, held while a key is made.
const LOCK_FILE: &str = "cache.key.lock";

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

    /// The key kept in `path`, made (32 random bytes, as hex) when there is none: under the
    /// directory's lock, so two processes that start together keep one key, and written whole
    /// to a new file renamed into place ([`crate::kept`]).
    pub fn kept_in(path: &Path) -> Result<CacheKey, KeyError> {
        let failed = |message: String| KeyError { path: path.to_owned(), message };
        let read = || match read_key(path) {
            Ok(key) => Ok(Some(key)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(failed(error.to_string())),
        };
        if let Some(key) = read()? {
            return Ok(key);
        }
        let dir = path.parent().filter(|dir| !dir.as_os_str().is_empty()).unwrap_or(Path::new("."));
        kept::private_dir(dir).map_err(|error| failed(format!("cannot create its directory: {error}")))?;
        let _turn = kept::lock(&dir.join(LOCK_FILE)).map_err(|error| failed(format!("cannot lock it: {error}")))?;
        // Another process may have made it while this one waited for its turn.
        if let Some(key) = read()? {
            return Ok(key);
        }
        let fresh = CacheKey::random();
        let hex: String = fresh.0.iter().map(|byte| format!("{byte:02x}")).collect();
        kept::replace(path, format!("{hex}\n").as_bytes(), kept::Mode::Private)
            .map_err(|error| failed(format!("cannot write it: {error}")))?;
        Ok(fresh)
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

/// Reads the key in `path`: a regular file (never through a link), of hex digits.
fn read_key(path: &Path) -> std::io::Result<CacheKey> {
    let invalid = |message: String| std::io::Error::new(std::io::ErrorKind::InvalidData, message);
    let (file, metadata) = read::open_regular(path, read::Links::Refused)?;
    let text =
        read::read_text_from(file, metadata.len(), path, KEY_FILE_LIMIT).map_err(|error| invalid(error.to_string()))?;
    let hex = text.trim();
    let bytes: Option<Vec<u8>> = hex
        .len()
        .is_multiple_of(2)
        .then(|| (0..hex.len()).step_by(2).map(|at| u8::from_str_radix(hex.get(at..at + 2)?, 16).ok()).collect())
        .flatten();
    match bytes {
        Some(bytes) if bytes.len() >= 16 => Ok(CacheKey(bytes)),
        _ => Err(invalid("does not hold a key (at least 32 hex digits); remove it and a new one is made".into())),
    }
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
        let left: Vec<_> =
            std::fs::read_dir(path.parent().unwrap()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "the key and its lock, no draft: {left:?}");
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
