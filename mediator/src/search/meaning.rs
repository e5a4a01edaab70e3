//! Finding tools by what they mean: each tool's enhanced text as an embedding model reads it (a
//! vector), asked once per text and kept in the cache like every model answer (replicas that
//! share Redis and reach the model at one address pay once), compared with the query's vector by cosine similarity, and fused with BM25's
//! ranking (reciprocal rank fusion).
//!
//! The model is asked off the call path: a listing's tools are read in the background when they
//! change, and a search ranks by words alone until they are read. A model that does not answer
//! is said once in the log and left alone for a while; search goes on by words.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::{Document, words};
use crate::cache::Cache;
use crate::llm::{LlmClient, LlmError};

/// How many texts one request asks the model to read: a query waits behind at most one batch
/// (about 3 s for 8 tools on two CPU cores).
const BATCH: usize = 8;
/// The most of a tool's text the model reads, in characters: a description and its parameters,
/// well inside an embedding model's window (512 tokens for the smallest).
const MAX_TEXT_CHARS: usize = 1_500;
/// How long a query's vector is waited for: a local model reads a few words in tens of
/// milliseconds, a hosted one in hundreds.
const QUERY_DEADLINE: Duration = Duration::from_secs(3);
/// How long a model that failed is left alone before it is asked again.
const REST: Duration = Duration::from_secs(60);
/// The longest cache record read as a vector: 16,384 dimensions (the most an answer may have).
const MAX_RECORD_BYTES: usize = 16_384 * 4;
/// Reciprocal rank fusion's constant, at its usual value: a tool ranked first by one ranking
/// and absent from the other is worth about as much as one ranked near the top of both.
const FUSION_K: f32 = 60.0;

/// What an embedding model is told a text is, where it was trained to be told (nomic-embed,
/// E5); and the similarity from which its reading alone vouches that a tool serves a query.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelHabits {
    pub query_prefix: String,
    pub document_prefix: String,
    /// A tool whose text is at least this similar to the query is found even when it shares
    /// too few of its words (see [`super::MATCH_THRESHOLD`]); above 1, never.
    pub vouches_from: f32,
}

impl ModelHabits {
    /// The habits of a model, by its name: the prefixes its card asks for, and the similarity
    /// calibrated for it (`cargo test -p tool-mediator-tests --test search search_by_meaning --
    /// --nocapture`). A model not known here is given no prefix, and ranks without vouching.
    pub fn of(model: &str) -> ModelHabits {
        let name = model.to_ascii_lowercase();
        // Ollama's `nomic-embed-text` (`:latest`) is v1.5; other versions are not calibrated.
        let nomic_v15 = name.contains("nomic-embed-text-v1.5")
            || matches!(name.as_str(), "nomic-embed-text" | "nomic-embed-text:latest" | "nomic-embed-text:v1.5");
        let (query_prefix, document_prefix, vouches_from) = if nomic_v15 {
            ("search_query: ", "search_document: ", NOMIC_VOUCHES_FROM)
        } else if name.contains("nomic-embed-text") {
            ("search_query: ", "search_document: ", 2.0)
        } else if name.contains("e5-") || name.starts_with("e5") {
            ("query: ", "passage: ", 2.0)
        } else {
            ("", "", 2.0)
        };
        ModelHabits { query_prefix: query_prefix.into(), document_prefix: document_prefix.into(), vouches_from }
    }
}

/// nomic-embed-text-v1.5's similarity from which a tool is found by meaning alone: the lowest at
/// which no RestBench request is answered by the other service's tools.
pub const NOMIC_VOUCHES_FROM: f32 = 0.68;

/// The embedding model search asks, and where its answers are kept.
pub struct Embedder {
    client: LlmClient,
    habits: ModelHabits,
    cache: Option<Arc<Cache>>,
    /// Not asked before this, after it failed.
    resting_until: Mutex<Option<Instant>>,
    /// Whether the log was told search goes on by words alone.
    warned: AtomicBool,
    /// Whether the log was told vectors of two lengths were met.
    mismatch_said: AtomicBool,
    /// One batch of tools read at a time.
    reading: tokio::sync::Semaphore,
    /// The readings alive, by the digest of their texts: sessions over the same tools (every
    /// client of a gateway) share one, its vectors held once.
    readings: Mutex<rustc_hash::FxHashMap<[u8; 32], Weak<Reading>>>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder").field("client", &self.client).field("habits", &self.habits).finish()
    }
}

impl Embedder {
    /// Asks `client`'s model, with the habits its name says ([`ModelHabits::of`]), keeping its
    /// answers in `cache` when there is one.
    pub fn new(client: LlmClient, cache: Option<Arc<Cache>>) -> Self {
        let habits = ModelHabits::of(client.model());
        Embedder {
            client,
            habits,
            cache,
            resting_until: Mutex::new(None),
            warned: AtomicBool::new(false),
            mismatch_said: AtomicBool::new(false),
            reading: tokio::sync::Semaphore::new(1),
            readings: Mutex::default(),
        }
    }

    /// The reading of `documents`: the one alive for the same texts, or a new one.
    pub fn reading<'a>(&self, documents: impl IntoIterator<Item = Document<'a>>) -> Arc<Reading> {
        let texts: Arc<[String]> = documents.into_iter().map(|document| text_of(&document)).collect();
        let digest = framed(texts.iter().map(String::as_str));
        let mut readings = tool_mediator_core::sync::lock(&self.readings);
        if let Some(reading) = readings.get(&digest).and_then(Weak::upgrade) {
            return reading;
        }
        // Those no session holds any more go as a new one comes: the map holds the live ones.
        readings.retain(|_, reading| reading.strong_count() > 0);
        let reading = Reading::of(texts);
        readings.insert(digest, Arc::downgrade(&reading));
        reading
    }

    pub fn habits(&self) -> &ModelHabits {
        &self.habits
    }

    pub fn model(&self) -> &str {
        self.client.model()
    }

    /// The vectors of `texts` (tools' texts, [`text_of`]), a batch at a time: each from the cache
    /// where it has it, the rest asked of the model and kept as they come (so a run cut short
    /// is resumed, not redone). One batch is read at a time whoever asks: sessions reading the
    /// same tools at once find each other's batches in the cache rather than ask twice.
    pub async fn documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LlmError> {
        let mut vectors = Vec::with_capacity(texts.len());
        for batch in texts.chunks(BATCH) {
            let _turn = self.reading.acquire().await.expect("the semaphore is never closed");
            let prefixed: Vec<String> =
                batch.iter().map(|text| format!("{}{text}", self.habits.document_prefix)).collect();
            vectors.extend(self.vectors(&prefixed, None).await?);
        }
        Ok(vectors)
    }

    /// The vector of a query, or `None` when the model cannot give it within a few seconds
    /// (said once in the log; the model is then left alone for a minute).
    pub async fn query(&self, query: &str) -> Option<Vec<f32>> {
        let text = format!("{}{query}", self.habits.query_prefix);
        let deadline = Instant::now() + QUERY_DEADLINE;
        self.vectors(std::slice::from_ref(&text), Some(deadline)).await.ok()?.pop()
    }

    /// Says once that the vectors read before and now are of different lengths.
    pub(super) fn mismatched(&self) {
        if !self.mismatch_said.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "search ranks by words alone: the embedding model {}'s vectors are not all of one length (a model \
                 changed under its name? `tool-mediator cache clear` forgets the old ones)",
                self.client.model()
            );
        }
    }

    /// The vectors of `texts`: the cache's, the rest asked of the model (all by `deadline`).
    async fn vectors(&self, texts: &[String], deadline: Option<Instant>) -> Result<Vec<Vec<f32>>, LlmError> {
        let keys: Vec<Vec<u8>> = texts.iter().map(|text| self.key(text)).collect();
        let mut found: Vec<Option<Vec<f32>>> = match &self.cache {
            Some(cache) => {
                let (cache, keys) = (cache.clone(), keys.clone());
                let records = tokio::task::spawn_blocking(move || {
                    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                    cache.get_many_within(&keys, MAX_RECORD_BYTES)
                })
                .await
                .unwrap_or_default();
                let decoded = records.into_iter().map(|record| record.as_deref().and_then(decode));
                decoded.chain(std::iter::repeat(None)).take(texts.len()).collect()
            }
            None => vec![None; texts.len()],
        };
        let missing: Vec<usize> = (0..texts.len()).filter(|&at| found[at].is_none()).collect();
        if !missing.is_empty() {
            let asked: Vec<&str> = missing.iter().map(|&at| texts[at].as_str()).collect();
            let vectors = self.ask(&asked, deadline).await?;
            if let Some(cache) = &self.cache {
                let records: Vec<(Vec<u8>, Vec<u8>)> =
                    missing.iter().zip(&vectors).map(|(&at, vector)| (keys[at].clone(), encode(vector))).collect();
                let cache = cache.clone();
                let _ = tokio::task::spawn_blocking(move || cache.put_many(&records)).await;
            }
            for (&at, vector) in missing.iter().zip(vectors) {
                found[at] = Some(vector);
            }
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// Asks the model, unless it is resting after a failure; a failure is said once.
    async fn ask(&self, texts: &[&str], deadline: Option<Instant>) -> Result<Vec<Vec<f32>>, LlmError> {
        let resting = tool_mediator_core::sync::lock(&self.resting_until).is_some_and(|until| Instant::now() < until);
        if resting {
            return Err(LlmError::Deadline { provider: self.client.provider() });
        }
        let answer = match self.client.embed(texts, deadline).await {
            Some(answer) => answer,
            None => Err(LlmError::Malformed {
                provider: self.client.provider(),
                message: "this provider has no embeddings endpoint".into(),
            }),
        };
        match answer {
            Ok(vectors) => {
                *tool_mediator_core::sync::lock(&self.resting_until) = None;
                if self.warned.swap(false, Ordering::Relaxed) {
                    tracing::info!(
                        "the embedding model {} answers again: search ranks by meaning",
                        self.client.model()
                    );
                }
                Ok(vectors)
            }
            // A query not answered in time behind a busy server (one batch of tools being read):
            // this search ranks by words, the next asks again. The model is not down.
            Err(error @ LlmError::Deadline { .. }) if deadline.is_some() => {
                tracing::debug!("the embedding model {} did not read a query in time: {error}", self.client.model());
                Err(error)
            }
            Err(error) => {
                *tool_mediator_core::sync::lock(&self.resting_until) = Some(Instant::now() + REST);
                if !self.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "search ranks by words alone: the embedding model {} did not answer ({error}); asked again in {} s",
                        self.client.model(),
                        REST.as_secs()
                    );
                }
                Err(error)
            }
        }
    }

    /// The cache key of a text as this model reads it.
    fn key(&self, text: &str) -> Vec<u8> {
        let provider = self.client.provider().to_string();
        let parts = ["embedding v1", &provider, self.client.base_url(), self.client.model(), text];
        let mut key = b"embedding:".to_vec();
        key.extend_from_slice(&framed(parts));
        key
    }
}

/// The SHA-256 of `parts`, each preceded by its length: no two lists of parts hash alike by
/// where one ends and the next begins.
fn framed<'a>(parts: impl IntoIterator<Item = &'a str>) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hash.finalize().into()
}

/// A vector as the cache keeps it: its numbers, little-endian.
fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(record: &[u8]) -> Option<Vec<f32>> {
    if record.is_empty() || !record.len().is_multiple_of(4) {
        return None;
    }
    let vector: Vec<f32> =
        record.chunks_exact(4).map(|bytes| f32::from_le_bytes(bytes.try_into().expect("four bytes"))).collect();
    vector.iter().all(|x| x.is_finite()).then_some(vector)
}

/// What the model reads of a tool: its name as words, title, category, description and
/// parameters (the fields BM25 indexes), at most [`MAX_TEXT_CHARS`].
pub fn text_of(document: &Document) -> String {
    let tool = document.tool;
    let mut name = String::new();
    words(tool.name(), |word| {
        if !name.is_empty() {
            name.push(' ');
        }
        name.push_str(&word.to_lowercase());
    });
    let mut text = name;
    for part in [tool.tool.title.as_deref(), tool.category.as_deref()].into_iter().flatten() {
        text.push_str(". ");
        text.push_str(part);
    }
    if let Some(description) = &tool.tool.description {
        text.push_str(": ");
        text.push_str(description);
    }
    if let Some(server) = document.server {
        text.push_str(&format!(" (from {server})"));
    }
    let parameters: Vec<String> = tool
        .tool
        .input_schema
        .as_ref()
        .and_then(|schema| serde_json::from_str::<serde_json::Value>(schema.as_str()).ok())
        .and_then(|schema| schema.get("properties").and_then(serde_json::Value::as_object).cloned())
        .map(|properties| {
            properties
                .iter()
                .map(|(name, property)| match property.get("description").and_then(serde_json::Value::as_str) {
                    Some(description) => format!("{name} ({description})"),
                    None => name.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    if !parameters.is_empty() {
        text.push_str(" Parameters: ");
        text.push_str(&parameters.join(", "));
    }
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => text[..end].to_owned(),
        None => text,
    }
}

/// One listing's tools as the model read them: their texts, and their vectors once read. They
/// are read by one task in the background, tried again a while after a failure, until they are
/// read or the reading is dropped (its tools changed, its session ended): a search only waits.
pub struct Reading {
    texts: Arc<[String]>,
    vectors: tokio::sync::watch::Sender<Option<Arc<Vec<Vec<f32>>>>>,
    task: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Drop for Reading {
    fn drop(&mut self) {
        if let Some(task) = tool_mediator_core::sync::lock(&self.task).take() {
            task.abort();
        }
    }
}

impl Reading {
    /// A reading of its own (sessions share theirs: [`Embedder::reading`]).
    pub fn new<'a>(documents: impl IntoIterator<Item = Document<'a>>) -> Arc<Reading> {
        Reading::of(documents.into_iter().map(|document| text_of(&document)).collect())
    }

    fn of(texts: Arc<[String]>) -> Arc<Reading> {
        Arc::new(Reading { texts, vectors: tokio::sync::watch::Sender::new(None), task: Mutex::new(None) })
    }

    /// What the model reads of each tool ([`text_of`]), by position.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// Has the tools read in the background, once, when there is a runtime to do it on (again
    /// when the runtime it was read on ended before it was read: a reading is shared).
    pub fn begin(self: &Arc<Self>, embedder: &Arc<Embedder>) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else { return };
        let mut task = tool_mediator_core::sync::lock(&self.task);
        let read = self.vectors.borrow().is_some();
        if read || task.as_ref().is_some_and(|task| !task.is_finished()) {
            return;
        }
        let (reading, texts, embedder) = (Arc::downgrade(self), self.texts.clone(), embedder.clone());
        *task = Some(
            runtime
                .spawn(async move {
                    loop {
                        match embedder.documents(&texts).await {
                            Ok(vectors) => {
                                if let Some(reading) = reading.upgrade() {
                                    reading.vectors.send_replace(Some(Arc::new(vectors)));
                                }
                                return;
                            }
                            // Said once by the embedder; tried again once it has rested.
                            Err(_) => tokio::time::sleep(REST).await,
                        }
                        if reading.strong_count() == 0 {
                            return;
                        }
                    }
                })
                .abort_handle(),
        );
    }

    /// How similar each tool is to `query` (by position, -1 to 1), when the tools are read
    /// within `wait` and the query can be read too (within a few seconds); else `None`, and
    /// search ranks by words.
    pub async fn similarities(
        self: &Arc<Self>,
        embedder: &Arc<Embedder>,
        query: &str,
        wait: Duration,
    ) -> Option<Vec<f32>> {
        self.begin(embedder);
        let vectors = {
            let mut read = self.vectors.subscribe();
            let vectors = tokio::time::timeout(wait, read.wait_for(Option::is_some)).await.ok()?.ok()?;
            vectors.clone()?
        };
        let query = embedder.query(query).await?;
        // A model changed under its name, or records of two models: not comparable.
        if vectors.iter().any(|vector| vector.len() != query.len()) {
            embedder.mismatched();
            return None;
        }
        Some(vectors.iter().map(|vector| cosine(vector, &query)).collect())
    }
}

/// The cosine similarity of two vectors of length 1; 0 for vectors of different lengths (a
/// model changed under its name).
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The positions of two rankings (each best first) fused by reciprocal rank: each position
/// scores `1 / (K + rank)` in each ranking it is in, summed; the best `limit`, best first, ties
/// in the first ranking's order.
pub fn fuse(first: &[usize], second: &[usize], limit: usize) -> Vec<usize> {
    let mut scores: rustc_hash::FxHashMap<usize, (f32, usize)> = rustc_hash::FxHashMap::default();
    for (ranking, positions) in [first, second].into_iter().enumerate() {
        for (rank, &position) in positions.iter().enumerate() {
            let entry = scores.entry(position).or_insert((0.0, usize::MAX));
            entry.0 += 1.0 / (FUSION_K + rank as f32 + 1.0);
            if ranking == 0 {
                entry.1 = rank;
            }
        }
    }
    let mut fused: Vec<(usize, (f32, usize))> = scores.into_iter().collect();
    fused.sort_unstable_by(|a, b| b.1.0.total_cmp(&a.1.0).then(a.1.1.cmp(&b.1.1)).then(a.0.cmp(&b.0)));
    fused.into_iter().take(limit).map(|(position, _)| position).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_rewards_what_both_rankings_put_high() {
        // 2 is second in both; 0 is first in one and absent from the other.
        assert_eq!(fuse(&[0, 2, 1], &[3, 2, 4], 3), [2, 0, 3]);
        assert_eq!(fuse(&[5], &[], 3), [5], "one ranking alone is kept in its order");
        assert_eq!(fuse(&[1, 0], &[0, 1], 2), [1, 0], "a tie keeps the first ranking's order");
    }

    #[test]
    fn a_vector_round_trips_and_a_torn_record_is_a_miss() {
        let vector = vec![0.6, -0.8, 0.0];
        assert_eq!(decode(&encode(&vector)), Some(vector));
        assert_eq!(decode(&[1, 2, 3]), None);
        assert_eq!(decode(&encode(&[f32::NAN])), None);
        assert_eq!(decode(&[]), None);
    }

    #[test]
    fn a_model_is_told_what_its_card_asks_for() {
        assert_eq!(ModelHabits::of("nomic-embed-text-v1.5.f16").query_prefix, "search_query: ");
        assert_eq!(ModelHabits::of("text-embedding-3-small").query_prefix, "");
        assert!(ModelHabits::of("text-embedding-3-small").vouches_from > 1.0, "uncalibrated: never vouches");
        assert_eq!(ModelHabits::of("nomic-embed-text").vouches_from, NOMIC_VOUCHES_FROM, "Ollama's is v1.5");
        assert!(ModelHabits::of("nomic-embed-text-v2-moe").vouches_from > 1.0, "another version: prefixes only");
    }
}
