//! What a [`CachedTransformer`](super::CachedTransformer) in the background keeps track of: the
//! questions open (a tool asked about is not asked again meanwhile), the runs under way (ended
//! with it), whether the inner transformer keeps failing (said once), and the answers a store
//! did not keep (kept here, so they are not asked for again and again).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinSet;
use tool_mediator_core::sync::lock;

use super::{Cache, MemoryStore};

/// Says that answers a transformer asked for in the background (a language model's, not waited
/// for: see [`CachedTransformer::in_background`](super::CachedTransformer::in_background)) have
/// arrived: the chains that hear it
/// ([`MediatorBuilder::late_answers`](crate::MediatorBuilder::late_answers)) count a change, and
/// the lists they enhanced are taken in again. Clones say it to the same chains.
#[derive(Debug, Clone)]
pub struct LateAnswers(Arc<watch::Sender<u64>>);

impl Default for LateAnswers {
    fn default() -> Self {
        LateAnswers(Arc::new(watch::Sender::new(0)))
    }
}

impl LateAnswers {
    /// Answers arrived: every chain that hears this has changed.
    pub fn arrived(&self) {
        self.0.send_modify(|count| *count = count.wrapping_add(1));
    }

    /// How many times answers arrived, and each time they do.
    pub(crate) fn heard(&self) -> watch::Receiver<u64> {
        self.0.subscribe()
    }
}

pub(super) struct Background {
    late: LateAnswers,
    /// The keys of the tools asked about and not answered yet.
    asking: Arc<Mutex<HashSet<Vec<u8>>>>,
    /// Whether the last run failed: a failure after a failure is not warned about again.
    failing: AtomicBool,
    /// The runs under way: aborted when the transformer goes, so none outlives its chain.
    runs: Mutex<JoinSet<()>>,
    /// Answers the store did not keep (it failed, or is full), for as long as it would have.
    pub(super) aside: Cache,
}

/// The keys of one run's tools: open until it ends, however it ends (answered, failed,
/// aborted), and then asked again the next time they miss.
pub(super) struct Question {
    asking: Arc<Mutex<HashSet<Vec<u8>>>>,
    pub(super) keys: Vec<Vec<u8>>,
}

impl Drop for Question {
    fn drop(&mut self) {
        let mut asking = lock(&self.asking);
        for key in &self.keys {
            asking.remove(key);
        }
    }
}

impl Background {
    /// Answers that arrive are told to `late`; those set aside are kept `ttl`.
    pub(super) fn new(late: LateAnswers, ttl: Duration) -> Background {
        Background {
            late,
            asking: Arc::default(),
            failing: AtomicBool::new(false),
            runs: Mutex::new(JoinSet::new()),
            aside: Cache::new(MemoryStore::default(), ttl),
        }
    }

    /// Of `wanted` (each tool's position and key), those no question is open for, and the
    /// question that is now open for them; `None` when every one is asked about already.
    pub(super) fn ask(&self, wanted: Vec<(usize, Vec<u8>)>) -> Option<(Vec<usize>, Question)> {
        let mut asking = lock(&self.asking);
        let (positions, keys): (Vec<usize>, Vec<Vec<u8>>) =
            wanted.into_iter().filter(|(_, key)| !asking.contains(key)).unzip();
        if keys.is_empty() {
            return None;
        }
        asking.extend(keys.iter().cloned());
        Some((positions, Question { asking: self.asking.clone(), keys }))
    }

    /// Runs `run` on the runtime the caller is on, among the runs this transformer ends with it.
    pub(super) fn run(&self, run: impl Future<Output = ()> + Send + 'static) {
        let mut runs = lock(&self.runs);
        // The runs that ended are let go of here: the set holds those under way.
        while runs.try_join_next().is_some() {}
        runs.spawn(run);
    }

    /// A run was answered (whatever its answers).
    pub(super) fn succeeded(&self) {
        self.failing.store(false, Ordering::Relaxed);
    }

    /// A run failed: whether it is the first in a row (the one worth a warning).
    pub(super) fn failed(&self) -> bool {
        !self.failing.swap(true, Ordering::Relaxed)
    }

    /// Answers were kept: the chains that hear it take their lists in again.
    pub(super) fn arrived(&self) {
        self.late.arrived();
    }

    /// How many tools are being asked about.
    #[cfg(test)]
    pub(super) fn open_questions(&self) -> usize {
        lock(&self.asking).len()
    }
}
