//! A disposable cache with a time to live: answers that cost seconds and money to get (a
//! language model's) are kept and reused until they expire. sled stores them by default, on one
//! machine; Redis, for replicas and CI jobs that should pay for an answer once between them.
//!
//! sled has no TTL, so every record carries its own expiry and the time it was stored; an
//! expired record reads as a miss and is removed, and [`Cache::prune`] sweeps the rest. Redis
//! is also given the expiry as the key's own, so it lets go of what no one reads.
//!
//! Every record is authenticated ([`CacheKey`]): one not written under the mediators' key (a
//! forgery by someone who can write to Redis or to the cache directory, or a record of another
//! key or an older version) reads as a miss, with one warning.

mod background;
mod cached;
mod key;
mod memory;
mod redis_store;
mod sled_store;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use background::LateAnswers;
pub use cached::{CachedTransformer, digest};
pub use key::{CacheKey, KEY_VARIABLE, KeyError};
pub use memory::MemoryStore;
pub use redis_store::{CacheUrl, DEFAULT_PREFIX, PASSWORD_VARIABLE, RedisStore, URL_VARIABLE, redact};
pub use sled_store::{LOCK_WAIT, SledStore};

/// What went wrong with a store. Never fatal: the run goes on without the cache.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("the cache at {dir} is in use by another process (sled: could not acquire lock); going on uncached")]
    Locked { dir: std::path::PathBuf },
    #[error("cache store error at {dir}: {message}")]
    Store { dir: std::path::PathBuf, message: String },
    /// A store on a server; `url` is shown without its password.
    #[error("the cache at {url}: {message}")]
    Remote { url: String, message: String },
}

/// A key and the record stored under it.
pub type KeyedRecord = (Vec<u8>, Vec<u8>);

/// Where records are kept: raw bytes by key.
///
/// Calls block (on a disk, on a network): an async caller runs them where that stalls no other
/// task (see [`CachedTransformer`]).
pub trait CacheStore: Send + Sync {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CacheError>;
    /// The records under `keys`, in their order: one round trip for a store on a network,
    /// whatever the number of keys (a listing's tools are looked up together).
    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        keys.iter().map(|key| self.get(key)).collect()
    }
    /// [`CacheStore::get_many`], a value longer than `each` bytes read as a miss: a store on a
    /// network never brings one over.
    fn get_many_within(&self, keys: &[&[u8]], each: usize) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        let mut found = self.get_many(keys)?;
        for value in &mut found {
            if value.as_ref().is_some_and(|value| value.len() > each) {
                *value = None;
            }
        }
        Ok(found)
    }
    fn put(&self, key: &[u8], record: &[u8]) -> Result<(), CacheError>;
    /// Stores each record under its key: one round trip for a store on a network.
    fn put_many(&self, records: &[KeyedRecord]) -> Result<(), CacheError> {
        records.iter().try_for_each(|(key, record)| self.put(key, record))
    }
    fn remove(&self, key: &[u8]) -> Result<(), CacheError>;
    /// Every record, for sweeps and statistics.
    fn records(&self) -> Result<Vec<KeyedRecord>, CacheError>;
    fn clear(&self) -> Result<(), CacheError>;
    fn flush(&self) -> Result<(), CacheError> {
        Ok(())
    }
}

/// A shared store is a store (two caches over one, in tests).
impl<S: CacheStore + ?Sized> CacheStore for Arc<S> {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CacheError> {
        (**self).get(key)
    }
    fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        (**self).get_many(keys)
    }
    fn get_many_within(&self, keys: &[&[u8]], each: usize) -> Result<Vec<Option<Vec<u8>>>, CacheError> {
        (**self).get_many_within(keys, each)
    }
    fn put(&self, key: &[u8], record: &[u8]) -> Result<(), CacheError> {
        (**self).put(key, record)
    }
    fn put_many(&self, records: &[KeyedRecord]) -> Result<(), CacheError> {
        (**self).put_many(records)
    }
    fn remove(&self, key: &[u8]) -> Result<(), CacheError> {
        (**self).remove(key)
    }
    fn records(&self) -> Result<Vec<KeyedRecord>, CacheError> {
        (**self).records()
    }
    fn clear(&self) -> Result<(), CacheError> {
        (**self).clear()
    }
    fn flush(&self) -> Result<(), CacheError> {
        (**self).flush()
    }
}

/// The time, injectable so expiry can be tested.
pub trait Clock: Send + Sync {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> u64;
}

/// The real clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_millis() as u64).unwrap_or(0)
    }
}

/// The default time to live: 7 days.
pub const DEFAULT_TTL: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// How full the cache is and how it has been used since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct CacheStats {
    pub entries: u64,
    pub bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub expired: u64,
}

/// A store with a time to live, a clock and usage counters.
pub struct Cache {
    store: Box<dyn CacheStore>,
    clock: Arc<dyn Clock>,
    ttl: Duration,
    /// What every record is written under, and checked against when read.
    key: CacheKey,
    hits: AtomicU64,
    misses: AtomicU64,
    expired: AtomicU64,
    /// Records read that failed their check.
    forged: AtomicU64,
    /// Whether the warning about them was given.
    warned: AtomicBool,
}

/// A record's header: when it expires, when it was stored.
const HEADER: usize = 16;
/// The header and the tag that authenticates the record, before its value.
const PREFIX: usize = HEADER + key::TAG;

/// Keys under this prefix are last good copies: expired, they still serve when the network
/// does not, so `prune` keeps them (and Redis is given no expiry for them).
pub const KEPT_STALE_PREFIX: &[u8] = b"stale-ok:";

impl Cache {
    /// A cache in `store`, its records written under a key of its own ([`CacheKey::random`]):
    /// it reads back only what it wrote. One that other processes share, or that is kept on
    /// disk across runs, takes the mediators' key with [`Cache::with_key`].
    pub fn new(store: impl CacheStore + 'static, ttl: Duration) -> Self {
        Cache::with_clock(store, ttl, Arc::new(SystemClock))
    }

    pub fn with_clock(store: impl CacheStore + 'static, ttl: Duration, clock: Arc<dyn Clock>) -> Self {
        Cache {
            store: Box::new(store),
            clock,
            ttl,
            key: CacheKey::random(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            expired: AtomicU64::new(0),
            forged: AtomicU64::new(0),
            warned: AtomicBool::new(false),
        }
    }

    /// The cache with its records written under, and checked against, `key`.
    pub fn with_key(mut self, key: CacheKey) -> Self {
        self.key = key;
        self
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The value under `key`, unless it is missing or expired. A store error reads as a miss.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        let record = match self.store.get(key) {
            Ok(record) => record,
            Err(error) => {
                tracing::warn!("{error}");
                None
            }
        };
        self.fresh(key, record, self.clock.now_millis())
    }

    /// The values under `keys`, in their order, as [`Cache::get`] reads each: asked of the
    /// store at once.
    pub fn get_many(&self, keys: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        self.get_many_within(keys, usize::MAX)
    }

    /// [`Cache::get_many`], a value longer than `each` bytes read as a miss (and never brought
    /// over from a store on a network).
    pub fn get_many_within(&self, keys: &[&[u8]], each: usize) -> Vec<Option<Vec<u8>>> {
        let records = match self.store.get_many_within(keys, each.saturating_add(PREFIX)) {
            Ok(records) if records.len() == keys.len() => records,
            Ok(_) => vec![None; keys.len()],
            Err(error) => {
                tracing::warn!("{error}");
                vec![None; keys.len()]
            }
        };
        let now = self.clock.now_millis();
        keys.iter().zip(records).map(|(key, record)| self.fresh(key, record, now)).collect()
    }

    /// A record's value while it is fresh and was written under the key; an expired one is
    /// removed.
    fn fresh(&self, key: &[u8], record: Option<Vec<u8>>, now: u64) -> Option<Vec<u8>> {
        let Some(mut record) = record.and_then(|record| self.authentic(key, record)) else {
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        if expiry_of(&record) <= now {
            self.expired.fetch_add(1, Ordering::Relaxed);
            self.misses.fetch_add(1, Ordering::Relaxed);
            let _ = self.store.remove(key);
            return None;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        record.drain(..PREFIX);
        Some(record)
    }

    /// `record`, read under `key`, when its tag says the mediators wrote it; else `None`, said
    /// once in the log.
    fn authentic(&self, key: &[u8], record: Vec<u8>) -> Option<Vec<u8>> {
        let authentic = record.len() >= PREFIX && {
            let (header, rest) = record.split_at(HEADER);
            let (tag, value) = rest.split_at(key::TAG);
            self.key.verifies(key, [header, value], tag)
        };
        if authentic {
            return Some(record);
        }
        self.forged.fetch_add(1, Ordering::Relaxed);
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "the cache holds records not written under this mediator's key (a forgery, another \
                 {KEY_VARIABLE}, or an older version's); they are not used, and are asked again"
            );
        }
        None
    }

    /// Whether each of `keys` holds a fresh record written under it (what [`Cache::get_many`]
    /// would read), without counting a use: to tell that records were kept.
    pub fn holds(&self, keys: &[&[u8]]) -> Vec<bool> {
        let records = match self.store.get_many(keys) {
            Ok(records) if records.len() == keys.len() => records,
            Ok(_) => return vec![false; keys.len()],
            Err(error) => {
                tracing::warn!("{error}");
                return vec![false; keys.len()];
            }
        };
        let now = self.clock.now_millis();
        keys.iter()
            .zip(records)
            .map(|(key, record)| {
                record.and_then(|record| self.authentic(key, record)).is_some_and(|record| expiry_of(&record) > now)
            })
            .collect()
    }

    /// The value under `key` even when it has expired, and whether it is still fresh: for
    /// things worth keeping as a last good copy (a remote override collection when offline).
    pub fn get_stale(&self, key: &[u8]) -> Option<(Vec<u8>, bool)> {
        let record = self.authentic(key, self.store.get(key).ok().flatten()?)?;
        let fresh = expiry_of(&record) > self.clock.now_millis();
        Some((record[PREFIX..].to_vec(), fresh))
    }

    /// Stores `value` until the TTL runs out. A store error (a full disk) is a warning.
    pub fn put(&self, key: &[u8], value: &[u8]) {
        let record = self.record(key, value, self.clock.now_millis());
        if let Err(error) = self.store.put(key, &record) {
            tracing::warn!("not cached: {error}");
        }
    }

    /// Stores each value under its key, as [`Cache::put`] does: handed to the store at once.
    pub fn put_many(&self, entries: &[KeyedRecord]) {
        let now = self.clock.now_millis();
        let records: Vec<KeyedRecord> =
            entries.iter().map(|(key, value)| (key.clone(), self.record(key, value, now))).collect();
        if let Err(error) = self.store.put_many(&records) {
            tracing::warn!("not cached: {error}");
        }
    }

    /// A value stored under `key` with its header (when it expires, when it was stored) and
    /// the tag that authenticates both.
    fn record(&self, key: &[u8], value: &[u8], now: u64) -> Vec<u8> {
        let expiry = now.saturating_add(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX));
        let mut header = [0; HEADER];
        header[..8].copy_from_slice(&expiry.to_be_bytes());
        header[8..].copy_from_slice(&now.to_be_bytes());
        let tag = self.key.tag(key, [&header[..], value]);
        let mut record = Vec::with_capacity(PREFIX + value.len());
        record.extend_from_slice(&header);
        record.extend_from_slice(&tag);
        record.extend_from_slice(value);
        record
    }

    /// Removes every expired record but last good copies (see [`Cache::get_stale`]); how many.
    pub fn prune(&self) -> Result<u64, CacheError> {
        let now = self.clock.now_millis();
        let mut removed = 0;
        for (key, record) in self.store.records()? {
            if key.starts_with(KEPT_STALE_PREFIX) {
                continue;
            }
            if record.len() < HEADER || expiry_of(&record) <= now {
                self.store.remove(&key)?;
                removed += 1;
            }
        }
        self.store.flush()?;
        Ok(removed)
    }

    /// How many stored records have expired (what [`Cache::prune`] would remove).
    pub fn expired_entries(&self) -> Result<u64, CacheError> {
        let now = self.clock.now_millis();
        Ok(self.store.records()?.iter().filter(|(_, record)| record.len() < HEADER || expiry_of(record) <= now).count()
            as u64)
    }

    pub fn clear(&self) -> Result<(), CacheError> {
        self.store.clear()?;
        self.store.flush()
    }

    /// Hits and misses since the cache was opened, without reading the store (what a gateway's
    /// metrics show at every scrape).
    pub fn usage(&self) -> (u64, u64) {
        (self.hits.load(Ordering::Relaxed), self.misses.load(Ordering::Relaxed))
    }

    pub fn stats(&self) -> Result<CacheStats, CacheError> {
        let records = self.store.records()?;
        Ok(CacheStats {
            entries: records.len() as u64,
            bytes: records.iter().map(|(key, record)| (key.len() + record.len()) as u64).sum(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            expired: self.expired.load(Ordering::Relaxed),
        })
    }

    pub fn flush(&self) {
        if let Err(error) = self.store.flush() {
            tracing::warn!("{error}");
        }
    }
}

fn expiry_of(record: &[u8]) -> u64 {
    u64::from_be_bytes(record[..8].try_into().expect("a record has a 16-byte header"))
}

/// How long a record is kept, in milliseconds: its expiry less the time it was stored (both
/// by the cache's clock, so a server's clock need not agree with ours). `None` without a header.
fn lifetime_of(record: &[u8]) -> Option<u64> {
    let stored = u64::from_be_bytes(record.get(8..HEADER)?.try_into().ok()?);
    Some(expiry_of(record).saturating_sub(stored))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    pub struct TestClock(pub AtomicU64);

    impl Clock for TestClock {
        fn now_millis(&self) -> u64 {
            self.0.load(Ordering::Relaxed)
        }
    }

    #[test]
    fn a_record_not_written_under_the_key_is_a_miss_and_said_once() {
        let store = Arc::new(MemoryStore::default());
        let key = CacheKey::new(b"the mediators' secret".to_vec());
        let ours = Cache::new(store.clone(), Duration::from_secs(60)).with_key(key.clone());
        ours.put(b"a", b"answer");
        let again = Cache::new(store.clone(), Duration::from_secs(60)).with_key(key);
        assert_eq!(again.get(b"a").as_deref(), Some(&b"answer"[..]), "another process with the key reads it");
        let theirs = Cache::new(store.clone(), Duration::from_secs(60)).with_key(CacheKey::new(b"guess".to_vec()));
        assert_eq!(theirs.get(b"a"), None, "another key reads nothing");
        // Someone who can write to the store alone: a record of the old shape, one whose value
        // was changed after its tag, and one moved under another key.
        let mut record = store.get(b"a").unwrap().unwrap();
        let far_future = u64::MAX.to_be_bytes();
        let mut old_shape = far_future.to_vec();
        old_shape.extend_from_slice(&0u64.to_be_bytes());
        old_shape.extend_from_slice(b"forged");
        store.put(b"b", &old_shape).unwrap();
        let last = record.len() - 1;
        record[last] ^= 1;
        store.put(b"c", &record).unwrap();
        record[last] ^= 1;
        store.put(b"d", &record).unwrap();
        for forged in [&b"b"[..], b"c", b"d"] {
            assert_eq!(ours.get(forged), None, "{}", String::from_utf8_lossy(forged));
        }
        assert_eq!(ours.get_many(&[b"a", b"c"]), vec![Some(b"answer".to_vec()), None]);
        assert_eq!(ours.forged.load(Ordering::Relaxed), 4);
        assert!(ours.warned.load(Ordering::Relaxed));
    }

    #[test]
    fn entries_expire_after_the_ttl_and_prune_removes_them() {
        let clock = Arc::new(TestClock(AtomicU64::new(1_000)));
        let cache = Cache::with_clock(MemoryStore::default(), Duration::from_secs(10), clock.clone());
        cache.put(b"a", b"one");
        assert_eq!(cache.get(b"a").as_deref(), Some(&b"one"[..]));
        clock.0.store(1_000 + 10_000, Ordering::Relaxed);
        assert_eq!(cache.get(b"a"), None);
        cache.put(b"b", b"two");
        clock.0.store(1_000_000, Ordering::Relaxed);
        assert_eq!(cache.prune().unwrap(), 1);
        let stats = cache.stats().unwrap();
        assert_eq!((stats.entries, stats.hits, stats.misses, stats.expired), (0, 1, 1, 1));
    }
}
