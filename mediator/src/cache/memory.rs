//! An in-memory store, for tests and for hosts that want no disk.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::{CacheError, CacheStore, KeyedRecord};

#[derive(Debug, Default)]
pub struct MemoryStore {
    records: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl MemoryStore {
    fn records_lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<Vec<u8>, Vec<u8>>> {
        // A panic while holding the lock leaves a map that is still a map.
        tool_mediator_core::sync::lock(&self.records)
    }
}

impl CacheStore for MemoryStore {
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, CacheError> {
        Ok(self.records_lock().get(key).cloned())
    }

    fn put(&self, key: &[u8], record: &[u8]) -> Result<(), CacheError> {
        self.records_lock().insert(key.to_vec(), record.to_vec());
        Ok(())
    }

    fn remove(&self, key: &[u8]) -> Result<(), CacheError> {
        self.records_lock().remove(key);
        Ok(())
    }

    fn records(&self) -> Result<Vec<KeyedRecord>, CacheError> {
        Ok(self.records_lock().iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }

    fn clear(&self) -> Result<(), CacheError> {
        self.records_lock().clear();
        Ok(())
    }
}
