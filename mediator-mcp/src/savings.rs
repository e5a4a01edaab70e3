//! What clients were spared of the servers' tool listings, for the HTTP front's metrics: each
//! first page a client is shown, against the whole listings of the servers behind it, in bytes
//! and in tokens. Tokens are counted in o200k_base, as `tool-mediator tokens` counts them. A
//! text is counted once however many sessions are shown it (by its hash, a few thousand texts
//! kept), off the runtime's threads.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tool_mediator_core::sync::lock;

/// Texts whose count is kept, at most; past it, counting starts afresh.
const MOST_KEPT: usize = 4096;

#[derive(Debug, Default)]
pub struct Savings {
    bytes: AtomicU64,
    tokens: AtomicU64,
    /// Tokens by the hash of the texts counted.
    counted: Mutex<HashMap<u64, u64>>,
}

impl Savings {
    /// Bytes spared so far.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Tokens spared so far.
    pub fn tokens(&self) -> u64 {
        self.tokens.load(Ordering::Relaxed)
    }

    /// A client was shown `bytes` and `tokens` of listings whose whole took `listed_bytes` and
    /// `listed_tokens`.
    pub(crate) fn spared(&self, (listed_bytes, listed_tokens): (u64, u64), (bytes, tokens): (u64, u64)) {
        self.bytes.fetch_add(listed_bytes.saturating_sub(bytes), Ordering::Relaxed);
        self.tokens.fetch_add(listed_tokens.saturating_sub(tokens), Ordering::Relaxed);
    }

    /// The tokens of `texts` together, and the texts back: counted off the runtime's threads
    /// unless they were counted before.
    pub(crate) async fn tokens_of<T: AsRef<str> + Send + 'static>(&self, texts: Vec<T>) -> (u64, Vec<T>) {
        let mut hasher = DefaultHasher::new();
        for text in &texts {
            text.as_ref().hash(&mut hasher);
        }
        let key = hasher.finish();
        if let Some(&tokens) = lock(&self.counted).get(&key) {
            return (tokens, texts);
        }
        let counting = tokio::task::spawn_blocking(move || {
            let bpe = tiktoken_rs::o200k_base_singleton();
            let tokens: usize = texts.iter().map(|text| bpe.encode_ordinary(text.as_ref()).len()).sum();
            (u64::try_from(tokens).unwrap_or(u64::MAX), texts)
        });
        let (tokens, texts) = match counting.await {
            Ok(counted) => counted,
            Err(error) => std::panic::resume_unwind(error.into_panic()),
        };
        let mut counted = lock(&self.counted);
        if counted.len() >= MOST_KEPT {
            counted.clear();
        }
        counted.insert(key, tokens);
        (tokens, texts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tokens_are_counted_as_the_tokenizer_counts_them_and_once() {
        let savings = Savings::default();
        let listing = r#"{"tools":[{"name":"get_current_time","description":"Get the time in a zone."}]}"#.to_owned();
        let expected = tiktoken_rs::o200k_base().unwrap().encode_ordinary(&listing).len() as u64;
        let (tokens, texts) = savings.tokens_of(vec![listing.clone()]).await;
        assert_eq!((tokens, texts), (expected, vec![listing.clone()]));
        assert_eq!(lock(&savings.counted).len(), 1);
        assert_eq!(savings.tokens_of(vec![listing.clone()]).await.0, expected, "counted once, read after");
        assert_eq!(lock(&savings.counted).len(), 1);
        let two = savings.tokens_of(vec![listing.clone(), listing]).await.0;
        assert_eq!(two, 2 * expected, "pages are counted together");

        savings.spared((100, 30), (40, 12));
        savings.spared((10, 3), (40, 12));
        assert_eq!((savings.bytes(), savings.tokens()), (60, 18), "a page larger than the listing spares nothing");
    }
}
