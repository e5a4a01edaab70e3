//! The default store: sled, embedded, one directory on disk.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::{CacheError, CacheStore, Clock, KeyedRecord, SystemClock};

/// How long to wait for another process to let go of the store before going on uncached.
pub const LOCK_WAIT: Duration = Duration::from_secs(2);

pub struct SledStore {
    db: Arc<sled::Db>,
    dir: PathBuf,
}

/// The stores open in this process, by canonical directory. sled lets a process open a
/// directory once; a second store on it (two mediators in one Node host, say) shares the first
/// one's database, and the directory is let go when the last of them is dropped.
static OPEN: Mutex<Vec<(PathBuf, Weak<sled::Db>)>> = Mutex::new(Vec::new());

impl SledStore {
    /// Opens (or creates) the store in `dir`. sled lets one process at a time hold a directory:
    /// while another holds it this waits up to [`LOCK_WAIT`], then says so. A store that cannot
    /// be read (corrupt, or not a sled store) is moved aside to `<dir>.corrupt-<time>` and a
    /// new one is made, with a warning.
    pub fn open(dir: &Path) -> Result<SledStore, CacheError> {
        SledStore::open_waiting(dir, LOCK_WAIT)
    }

    /// Opens the store in `dir` if there is one (sled's `db` file is there); `None` when there
    /// is not, and then nothing is created: for a question about the cache, which must not
    /// leave one behind.
    pub fn open_existing(dir: &Path) -> Result<Option<SledStore>, CacheError> {
        match std::fs::symlink_metadata(dir.join("db")) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(store_error(dir, error.to_string())),
            Ok(_) => SledStore::open(dir).map(Some),
        }
    }

    pub fn open_waiting(dir: &Path, wait: Duration) -> Result<SledStore, CacheError> {
        if dir.exists() && !dir.is_dir() {
            return Err(store_error(dir, "not a directory".into()));
        }
        // Held while opening, so two threads opening one directory do not lock each other out.
        let mut open = tool_mediator_core::sync::lock(&OPEN);
        open.retain(|(_, db)| db.strong_count() > 0);
        let canonical = |dir: &Path| dir.canonicalize().unwrap_or_else(|_| dir.to_owned());
        if dir.exists() {
            let key = canonical(dir);
            if let Some(db) = open.iter().find(|(held, _)| *held == key).and_then(|(_, db)| db.upgrade()) {
                return Ok(SledStore { db, dir: dir.to_owned() });
            }
        }
        let store = SledStore::open_new(dir, wait)?;
        open.push((canonical(dir), Arc::downgrade(&store.db)));
        Ok(store)
    }

    fn open_new(dir: &Path, wait: Duration) -> Result<SledStore, CacheError> {
        let deadline = Instant::now() + wait;
        let mut unreadable = 0;
        loop {
            match open(dir) {
                Ok(db) => return Ok(SledStore { db: Arc::new(db), dir: dir.to_owned() }),
                Err(Opening::Locked) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                Err(Opening::Locked) => return Err(CacheError::Locked { dir: dir.to_owned() }),
                // Another process may be writing a new store's configuration this instant.
                Err(Opening::Unreadable(_)) if unreadable < 2 => {
                    unreadable += 1;
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(Opening::Unreadable(reason)) => return SledStore::recover(dir, &reason),
                Err(Opening::Failed(reason)) => return Err(store_error(dir, reason)),
            }
        }
    }

    fn recover(dir: &Path, error: &str) -> Result<SledStore, CacheError> {
        let mut aside = dir.as_os_str().to_owned();
        aside.push(format!(".corrupt-{}", SystemClock.now_millis()));
        let aside = PathBuf::from(aside);
        std::fs::rename(dir, &aside)
            .map_err(|rename| store_error(dir, format!("{error}; moving it aside failed: {rename}")))?;
        tracing::warn!(
            "the cache at {} could not be read ({error}); moved it to {} and started a new one",
            dir.display(),
            aside.display()
        );
        let db = sled::Config::new().path(dir).open().map_err(|error| store_error(dir, error.to_string()))?;
        Ok(SledStore { db: Arc::new(db), dir: dir.to_owned() })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn error(&self, error: sled::Error) -> CacheError {
        store_error(&self.dir, error.to_string())
    }
}

fn store_error(dir: &Path, message: String) -> CacheError {
    CacheError::Store { dir: dir.to_owned(), message }
}

/// Why a store did not open.
enum Opening {
    Locked,
    /// Its files cannot be read as a store: corrupt, or from another sled version.
    Unreadable(String),
    /// Anything else (permissions, a full disk): reported, the store left as it is.
    Failed(String),
}

fn open(dir: &Path) -> Result<sled::Db, Opening> {
    // sled 0.34 panics on some corrupt layouts instead of returning an error.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sled::Config::new().path(dir).open())) {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(error)) if is_locked(&error) => Err(Opening::Locked),
        Ok(Err(error)) if is_unreadable(&error) => Err(Opening::Unreadable(error.to_string())),
        Ok(Err(error)) => Err(Opening::Failed(error.to_string())),
        Err(_) => Err(Opening::Unreadable("sled could not read it".into())),
    }
}

fn is_unreadable(error: &sled::Error) -> bool {
    match error {
        sled::Error::Corruption { .. } | sled::Error::Unsupported(_) | sled::Error::ReportableBug(_) => true,
        sled::Error::Io(io) => matches!(io.kind(), std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof),
        _ => false,
    }
}

fn is_locked(error: &sled::Error) -> bool {
    match error {
        sled::Error::Io(io) => {
            io.kind() == std::io::ErrorKind::WouldBlock || io.to_string().contains("could not acquire lock")
        }
        _ => false,
    }
}

impl CacheStore for SledStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CacheError> {
        self.db.get(key).map(|value| value.map(|value| value.to_vec())).map_err(|e| self.error(e))
    }

    fn put(&self, key: &[u8], record: &[u8]) -> Result<(), CacheError> {
        self.db.insert(key, record).map(|_| ()).map_err(|e| self.error(e))
    }

    fn remove(&self, key: &[u8]) -> Result<(), CacheError> {
        self.db.remove(key).map(|_| ()).map_err(|e| self.error(e))
    }

    fn records(&self) -> Result<Vec<KeyedRecord>, CacheError> {
        self.db.iter().map(|entry| entry.map(|(k, v)| (k.to_vec(), v.to_vec())).map_err(|e| self.error(e))).collect()
    }

    fn clear(&self) -> Result<(), CacheError> {
        self.db.clear().map_err(|e| self.error(e))
    }

    fn flush(&self) -> Result<(), CacheError> {
        self.db.flush().map(|_| ()).map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::Cache;

    #[test]
    fn records_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        let key = crate::cache::CacheKey::new(b"the mediators' key".to_vec());
        {
            let cache = Cache::new(SledStore::open(&path).unwrap(), Duration::from_secs(60)).with_key(key.clone());
            cache.put(b"k", b"v");
            cache.flush();
        }
        let cache = Cache::new(SledStore::open(&path).unwrap(), Duration::from_secs(60)).with_key(key);
        assert_eq!(cache.get(b"k").as_deref(), Some(&b"v"[..]));
    }

    #[test]
    fn stores_on_one_directory_in_one_process_share_it_and_let_it_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        let first = SledStore::open(&path).unwrap();
        let second = SledStore::open_waiting(&dir.path().join("./cache"), Duration::ZERO).expect("shared, not locked");
        first.put(b"k", b"v").unwrap();
        assert_eq!(second.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
        drop((first, second));
        let again = SledStore::open_waiting(&path, Duration::ZERO).expect("let go with the last store");
        assert_eq!(again.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    }

    /// The other process of the test below: this test binary, run again to hold a store.
    const HOLD: &str = "TOOL_MEDIATOR_TEST_HOLD_STORE";

    #[test]
    fn a_store_another_process_holds_is_reported_after_a_short_wait() {
        use std::io::{BufRead as _, BufReader};
        if let Some(path) = std::env::var_os(HOLD) {
            let _held = SledStore::open(Path::new(&path)).unwrap();
            println!("holding");
            // Until the parent closes our stdin.
            let _ = std::io::stdin().read_line(&mut String::new());
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        let mut holder = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "cache::sled_store::tests::a_store_another_process_holds_is_reported_after_a_short_wait"])
            .args(["--nocapture", "--test-threads=1"])
            .env(HOLD, &path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
        assert!(lines.any(|line| line.is_ok_and(|line| line.contains("holding"))), "the other process holds the store");
        let outcome = SledStore::open_waiting(&path, Duration::from_millis(200));
        drop(holder.stdin.take());
        holder.wait().unwrap();
        match outcome {
            Err(CacheError::Locked { dir }) => assert_eq!(dir, path),
            #[cfg(unix)]
            Ok(_) => panic!("sled locks its directory with a file lock on unix"),
            #[cfg(not(unix))]
            Ok(_) => {} // platforms without file locks let it through; nothing to report then
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn a_corrupt_store_is_moved_aside_and_recreated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cache");
        {
            let store = SledStore::open(&path).unwrap();
            store.put(b"k", b"v").unwrap();
            store.flush().unwrap();
        }
        for entry in std::fs::read_dir(&path).unwrap() {
            let file = entry.unwrap().path();
            if file.is_file() {
                std::fs::write(&file, vec![0xA5; 4096]).unwrap();
            }
        }
        let store = SledStore::open(&path).unwrap();
        store.put(b"new", b"works").unwrap();
        assert_eq!(store.get(b"new").unwrap().as_deref(), Some(&b"works"[..]));
        let moved = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .any(|entry| entry.file_name().to_string_lossy().starts_with("cache.corrupt-"));
        assert!(moved, "the corrupt store was kept aside for inspection");
    }
}
