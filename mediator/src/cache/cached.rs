//! `CachedTransformer<T>`: any transformer, behind the cache, one tool at a time.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::background::{Background, LateAnswers};
use super::{Cache, KeyedRecord};
use tool_mediator_core::json::Json;
use tool_mediator_core::{Answer, Expansion, ToolPatch, ToolTransformer, TransformError};
use tool_mediator_core::{Tool, ToolContext};

/// Wraps a transformer with the cache; is a transformer itself, named `cached-<inner>`, with
/// priority inner + 10 so it runs just before where the inner one would.
///
/// Keys are per tool: a hash of the inner transformer's [identity](ToolTransformer::identity)
/// (for a language model: provider, model, prompt hash, version), the source, and the tool's
/// canonical JSON. Only tools that miss go to the inner transformer, so one new tool on a
/// 100-tool page costs one tool's worth of work. Tools the inner one does not answer are not
/// cached and are asked about again next time.
///
/// [In the background](CachedTransformer::in_background) the misses are not waited for: the
/// cache's answers are given at once, and the chain hears later that the others came.
pub struct CachedTransformer<T> {
    inner: Arc<T>,
    cache: Arc<Cache>,
    name: String,
    background: Option<Arc<Background>>,
}

impl<T: ToolTransformer + 'static> CachedTransformer<T> {
    pub fn new(inner: T, cache: Arc<Cache>) -> Self {
        let name = format!("cached-{}", inner.name());
        CachedTransformer { inner: Arc::new(inner), cache, name, background: None }
    }

    /// Asks the inner transformer in the background, for a front door that runs for long (the
    /// proxy, the gateway, the Node binding) and must not keep a client waiting for a language
    /// model: [`transform`](ToolTransformer::transform) answers at once with what the cache
    /// holds, and the tools that miss are asked about in a task of its own. Their answers are
    /// kept in the cache as they are without, and `late` is told they arrived: a chain that
    /// hears it ([`MediatorBuilder::late_answers`](crate::MediatorBuilder::late_answers)) has
    /// changed, and its sessions take their lists in again.
    ///
    /// A tool asked about is not asked again while its question is open; one whose question
    /// failed is asked again the next time it misses (a warning for the first failure in a
    /// row). An answer the store does not keep is kept in memory instead, so it is not asked
    /// for at every listing. The runs under way end with the transformer (and with the
    /// runtime). Outside a tokio runtime there is nowhere to ask in the background: misses are
    /// waited for, as without.
    pub fn in_background(mut self, late: LateAnswers) -> Self {
        self.background = Some(Arc::new(Background::new(late, self.cache.ttl())));
        self
    }

    pub fn inner(&self) -> &T {
        &self.inner
    }

    fn key(&self, tool: &Tool, context: &ToolContext) -> Vec<u8> {
        let mut hash = Sha256::new();
        let source_type = format!("{:?}", context.source_type);
        for part in [self.inner.identity().as_bytes(), context.source.as_bytes(), source_type.as_bytes()] {
            hash_bytes(&mut hash, part);
        }
        hash_tool(&mut hash, tool);
        hash.finalize().to_vec()
    }

    /// Asks the inner transformer about `misses` (positions in `tools`) in a task of its own,
    /// but those asked about already; keeps what it answers and tells the chain.
    fn ask_in_background(
        &self,
        background: &Arc<Background>,
        tools: &[Tool],
        keys: &[Vec<u8>],
        misses: &[usize],
        context: &ToolContext,
    ) {
        let wanted = misses.iter().map(|&index| (index, keys[index].clone())).collect();
        let Some((asked, question)) = background.ask(wanted) else { return };
        let batch: Vec<Tool> = asked.iter().map(|&index| tools[index].clone()).collect();
        let (inner, cache, context) = (self.inner.clone(), self.cache.clone(), context.clone());
        // The run holds no strong reference: the transformer going ends it.
        let weak = Arc::downgrade(background);
        background.run(async move {
            let outcome = inner.transform(&batch, &context).await;
            let Some(background) = weak.upgrade() else { return };
            let fresh = match outcome {
                Ok(fresh) => {
                    background.succeeded();
                    fresh
                }
                Err(error) => {
                    let failed = tool_mediator_core::counted(batch.len(), "tool; it falls", "tools; they fall");
                    let said = format!(
                        "`{}` failed in the background for {failed} through, and is asked again at a later \
                         listing: {error}",
                        inner.name()
                    );
                    match background.failed() {
                        true => tracing::warn!("{said}"),
                        false => tracing::debug!("{said}"),
                    }
                    return;
                }
            };
            // Only what the inner transformer would take back from the cache is kept: an answer
            // refused when read would be asked for again at every listing.
            let mut kept: Vec<KeyedRecord> = Vec::with_capacity(fresh.len());
            for answer in &fresh {
                let Some(tool) = batch.get(answer.index) else { continue };
                match inner.admits(tool, answer) {
                    Ok(()) => kept.extend(
                        serde_json::to_vec(&Stored::of(answer))
                            .ok()
                            .map(|bytes| (question.keys[answer.index].clone(), bytes)),
                    ),
                    Err(reason) => tracing::warn!("refused `{}`'s answer for `{}`: {reason}", inner.name(), tool.name),
                }
            }
            if kept.is_empty() {
                return;
            }
            let stored = kept.clone();
            let held = off_the_runtime(move || {
                cache.put_many(&stored);
                cache.flush();
                cache.holds(&stored.iter().map(|(key, _)| key.as_slice()).collect::<Vec<_>>())
            })
            .await
            .unwrap_or_default();
            let lost: Vec<KeyedRecord> = kept
                .into_iter()
                .enumerate()
                .filter(|(at, _)| !held.get(*at).copied().unwrap_or(false))
                .map(|(_, record)| record)
                .collect();
            if !lost.is_empty() {
                tracing::warn!(
                    "the cache did not keep {} of `{}`; kept in memory instead",
                    tool_mediator_core::counted(lost.len(), "answer", "answers"),
                    inner.name()
                );
                background.aside.put_many(&lost);
            }
            background.arrived();
            // Open until here: a listing the arrival sets off does not ask about these again.
            drop(question);
        });
    }
}

/// The longest cached answer read: an answer is a patch of one tool (its name, description and
/// parameter descriptions), kilobytes; a longer record is no answer of the mediator's, and
/// would carry a listing past a message's limit.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// What is kept of an answer: everything but its position in a batch. The patch is small:
/// it holds only what changed, and the key pins the tool it changes.
#[derive(Serialize, Deserialize)]
struct Stored {
    #[serde(default, skip_serializing_if = "ToolPatch::is_empty")]
    patch: ToolPatch,
    category: Option<String>,
    confidence: f64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    argument_aliases: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    inferred: Vec<String>,
    #[serde(default)]
    hidden: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    expansions: Vec<Expansion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    refused: Vec<String>,
}

impl Stored {
    fn of(answer: &Answer) -> Stored {
        Stored {
            patch: answer.patch.clone(),
            category: answer.category.clone(),
            confidence: answer.confidence,
            argument_aliases: answer.argument_aliases.clone(),
            inferred: answer.inferred.clone(),
            hidden: answer.hidden,
            expansions: answer.expansions.clone(),
            model: answer.model.clone(),
            refused: answer.refused.clone(),
        }
    }

    fn into_answer(self, index: usize) -> Answer {
        Answer {
            index,
            patch: self.patch,
            category: self.category,
            confidence: self.confidence,
            argument_aliases: self.argument_aliases,
            inferred: self.inferred,
            hidden: self.hidden,
            expansions: self.expansions,
            model: self.model,
            refused: self.refused,
        }
    }
}

#[async_trait]
impl<T: ToolTransformer + 'static> ToolTransformer for CachedTransformer<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn priority(&self) -> i32 {
        self.inner.priority().saturating_add(10)
    }

    fn identity(&self) -> String {
        self.inner.identity()
    }

    async fn transform(&self, tools: &[Tool], context: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        let keys: Arc<[Vec<u8>]> = tools.iter().map(|tool| self.key(tool, context)).collect();
        // Every tool of the batch looked up at once: one round trip to a store on a network.
        let (cache, asked) = (self.cache.clone(), keys.clone());
        let mut found = off_the_runtime(move || {
            cache.get_many_within(&asked.iter().map(Vec::as_slice).collect::<Vec<_>>(), MAX_ANSWER_BYTES)
        })
        .await
        .unwrap_or_else(|| vec![None; keys.len()]);
        if let Some(background) = &self.background {
            // What a store did not keep, a run in the background kept aside.
            let missed: Vec<usize> = (0..found.len()).filter(|&index| found[index].is_none()).collect();
            if !missed.is_empty() {
                let aside = background.aside.get_many_within(
                    &missed.iter().map(|&index| keys[index].as_slice()).collect::<Vec<_>>(),
                    MAX_ANSWER_BYTES,
                );
                for (index, record) in missed.into_iter().zip(aside) {
                    found[index] = record;
                }
            }
        }
        let mut answers = Vec::new();
        let mut misses = Vec::new();
        let mut refused = Vec::new();
        for (index, record) in found.into_iter().enumerate() {
            let answer = record.and_then(|bytes| serde_json::from_slice::<Stored>(&bytes).ok());
            // A cached answer passes the gates a fresh one passes; one that fails is asked again.
            match answer.map(|stored| stored.into_answer(index)) {
                Some(answer) => match self.inner.admits(&tools[index], &answer) {
                    Ok(()) => answers.push(answer),
                    Err(reason) => {
                        refused.push(format!("`{}`: {reason}", tools[index].name));
                        misses.push(index);
                    }
                },
                None => misses.push(index),
            }
        }
        if !refused.is_empty() {
            tracing::warn!(
                "{} cached answers of `{}` refused, and asked again: {}",
                refused.len(),
                self.inner.name(),
                refused.join("; ")
            );
        }
        if misses.is_empty() {
            return Ok(answers);
        }
        if let Some(background) = &self.background
            && tokio::runtime::Handle::try_current().is_ok()
        {
            self.ask_in_background(background, tools, &keys, &misses, context);
            return Ok(answers);
        }
        let batch: Vec<Tool> = misses.iter().map(|&index| tools[index].clone()).collect();
        let fresh = match self.inner.transform(&batch, context).await {
            Ok(fresh) => fresh,
            Err(error) if answers.is_empty() => return Err(error),
            Err(error) => {
                let failed = tool_mediator_core::counted(misses.len(), "tool; it falls", "tools; they fall");
                tracing::warn!("`{}` failed for {failed} through: {error}", self.inner.name());
                return Ok(answers);
            }
        };
        let mut kept = Vec::with_capacity(fresh.len());
        for mut answer in fresh {
            let Some(&index) = misses.get(answer.index) else { continue };
            if let Ok(bytes) = serde_json::to_vec(&Stored::of(&answer)) {
                kept.push((keys[index].clone(), bytes));
            }
            answer.index = index;
            answers.push(answer);
        }
        let cache = self.cache.clone();
        off_the_runtime(move || {
            cache.put_many(&kept);
            cache.flush();
        })
        .await;
        Ok(answers)
    }
}

/// Runs a store call (which blocks, on a disk or a network) on tokio's blocking threads, so a
/// slow store stalls no other task, on either kind of runtime; in place outside one. `None` when
/// it did not finish (the runtime shutting down).
async fn off_the_runtime<R: Send + 'static>(work: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => match runtime.spawn_blocking(work).await {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::warn!("a cache call did not finish: {error}");
                None
            }
        },
        Err(_) => Some(work()),
    }
}

fn hash_bytes(hash: &mut Sha256, bytes: &[u8]) {
    hash.update((bytes.len() as u64).to_be_bytes());
    hash.update(bytes);
}

/// A tool's canonical digest, `sha256:<hex>`: what the cache keys hash of a tool, equal for
/// equal tools whatever their key order or spacing. Lock files pin tools by it.
pub fn digest(tool: &Tool) -> String {
    let mut hash = Sha256::new();
    hash_tool(&mut hash, tool);
    let bytes = hash.finalize();
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for byte in bytes {
        text.push_str(&format!("{byte:02x}"));
    }
    text
}

/// Hashes a tool's content: equal tools hash equally whatever their key order.
fn hash_tool(hash: &mut Sha256, tool: &Tool) {
    hash_bytes(hash, tool.name.as_bytes());
    for text in [&tool.title, &tool.description] {
        hash_value(hash, &text.as_ref().map_or(Value::Null, |text| Value::String(text.clone())));
    }
    for json in [&tool.input_schema, &tool.output_schema, &tool.annotations, &tool.meta] {
        match json {
            Some(json) => hash_json(hash, json),
            None => hash.update([0xFF]),
        }
    }
    // The unknown fields hash as the object they came in.
    hash.update([5]);
    hash.update((tool.extra.len() as u64).to_be_bytes());
    let mut extra: Vec<&(String, Json)> = tool.extra.iter().collect();
    extra.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    for (key, value) in extra {
        hash_bytes(hash, key.as_bytes());
        hash_json(hash, value);
    }
}

/// [`hash_value`] of a value held as text, read without building it: what is hashed is
/// written out in one buffer (each object's members then put in key order in place) and hashed
/// at once.
fn hash_json(hash: &mut Sha256, json: &Json) {
    let mut stream = Vec::with_capacity(json.as_str().len() + 64);
    let mut scratch = Scratch::default();
    let mut deserializer = serde_json::Deserializer::from_str(json.as_str());
    deserializer.disable_recursion_limit();
    match (HashStream { out: &mut stream, scratch: &mut scratch }).deserialize(&mut deserializer) {
        Ok(()) => hash.update(&stream),
        Err(_) => hash_value(hash, &json.to_value()),
    }
}

/// Where each member of the objects being written lies in the stream, and room to reorder them.
#[derive(Default)]
struct Scratch {
    members: Vec<Member>,
    reordered: Vec<u8>,
}

/// A member in the stream: its key's bytes at `start + 8..key_end`, the whole up to `end`.
struct Member {
    start: usize,
    key_end: usize,
    end: usize,
}

/// Writes what [`hash_value`] feeds the hash for the value it reads.
struct HashStream<'a> {
    out: &'a mut Vec<u8>,
    scratch: &'a mut Scratch,
}

impl HashStream<'_> {
    fn bytes(&mut self, tag: u8, bytes: &[u8]) {
        self.out.push(tag);
        self.out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
        self.out.extend_from_slice(bytes);
    }
}

impl<'de> DeserializeSeed<'de> for HashStream<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HashStream<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.push(0);
        Ok(())
    }

    fn visit_bool<E>(self, flag: bool) -> Result<(), E> {
        self.out.extend_from_slice(&[1, u8::from(flag)]);
        Ok(())
    }

    fn visit_i64<E>(mut self, value: i64) -> Result<(), E> {
        self.bytes(2, value.to_string().as_bytes());
        Ok(())
    }

    fn visit_u64<E>(mut self, value: u64) -> Result<(), E> {
        self.bytes(2, value.to_string().as_bytes());
        Ok(())
    }

    fn visit_f64<E>(mut self, value: f64) -> Result<(), E> {
        match serde_json::Number::from_f64(value) {
            Some(number) => self.bytes(2, canonical_number(&number.to_string()).as_bytes()),
            None => self.out.push(0),
        }
        Ok(())
    }

    fn visit_str<E>(mut self, text: &str) -> Result<(), E> {
        self.bytes(3, text.as_bytes());
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        self.out.push(4);
        let count_at = self.out.len();
        self.out.extend_from_slice(&[0; 8]);
        let mut count = 0u64;
        while items.next_element_seed(HashStream { out: &mut *self.out, scratch: &mut *self.scratch })?.is_some() {
            count += 1;
        }
        self.out[count_at..count_at + 8].copy_from_slice(&count.to_be_bytes());
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut entries: A) -> Result<(), A::Error> {
        let Some(first) = entries.next_key::<Cow<'de, str>>()? else {
            self.out.push(5);
            self.out.extend_from_slice(&0u64.to_be_bytes());
            return Ok(());
        };
        if first == tool_mediator_core::json::NUMBER_TOKEN {
            // A number, its text as written (see `json`).
            let text: Cow<'de, str> = entries.next_value()?;
            let number = serde_json::from_str::<serde_json::Number>(&text).map_err(de::Error::custom)?;
            self.bytes(2, canonical_number(&number.to_string()).as_bytes());
            return Ok(());
        }
        self.out.push(5);
        let count_at = self.out.len();
        self.out.extend_from_slice(&[0; 8]);
        let base = self.scratch.members.len();
        let mut key = Some(first);
        while let Some(name) = key {
            let start = self.out.len();
            self.out.extend_from_slice(&(name.len() as u64).to_be_bytes());
            self.out.extend_from_slice(name.as_bytes());
            let key_end = self.out.len();
            entries.next_value_seed(HashStream { out: &mut *self.out, scratch: &mut *self.scratch })?;
            self.scratch.members.push(Member { start, key_end, end: self.out.len() });
            key = entries.next_key::<Cow<'de, str>>()?;
        }
        let count = (self.scratch.members.len() - base) as u64;
        self.out[count_at..count_at + 8].copy_from_slice(&count.to_be_bytes());
        // The members in key order, written back over themselves.
        let out = &mut *self.out;
        let key = |member: &Member| &out[member.start + 8..member.key_end];
        let members = &mut self.scratch.members[base..];
        if !members.is_sorted_by(|a, b| key(a) <= key(b)) {
            members.sort_unstable_by(|a, b| key(a).cmp(key(b)));
            let reordered = &mut self.scratch.reordered;
            reordered.clear();
            for member in members.iter() {
                reordered.extend_from_slice(&out[member.start..member.end]);
            }
            let region = count_at + 8;
            out[region..region + reordered.len()].copy_from_slice(reordered);
        }
        self.scratch.members.truncate(base);
        Ok(())
    }
}

/// Hashes JSON with object keys in sorted order; every value is tagged and every string
/// length-prefixed, so no two different values hash the same stream.
fn hash_value(hash: &mut Sha256, value: &Value) {
    match value {
        Value::Null => hash.update([0]),
        Value::Bool(flag) => hash.update([1, u8::from(*flag)]),
        Value::Number(number) => {
            hash.update([2]);
            hash_bytes(hash, canonical_number(&number.to_string()).as_bytes());
        }
        Value::String(text) => {
            hash.update([3]);
            hash_bytes(hash, text.as_bytes());
        }
        Value::Array(items) => {
            hash.update([4]);
            hash.update((items.len() as u64).to_be_bytes());
            for item in items {
                hash_value(hash, item);
            }
        }
        Value::Object(object) => hash_object(hash, object),
    }
}

/// A number's text in one form for each value, so `10`, `10.0` and `1e1` hash alike: the digits
/// without leading or trailing zeros, written plainly while the point stays within 21 places of
/// them, else as `d.ddde±n` (a huge exponent is never written out). Exact at any precision: no
/// float is made. Text that is not a JSON number stays as it is.
fn canonical_number(text: &str) -> Cow<'_, str> {
    const PLAIN: i64 = 21;
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], &unsigned[at + 1..]),
        None => (unsigned, "0"),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let Ok(exponent) = exponent.strip_prefix('+').unwrap_or(exponent).parse::<i64>() else {
        return Cow::Borrowed(text);
    };
    if whole.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|byte| byte.is_ascii_digit()) {
        return Cow::Borrowed(text);
    }
    let digits: String = whole.chars().chain(fraction.chars()).collect();
    let significant = digits.trim_start_matches('0');
    let trimmed = significant.trim_end_matches('0');
    if trimmed.is_empty() {
        return Cow::Borrowed("0");
    }
    // The value is `trimmed` × 10^scale; `point` digits stand before the decimal point.
    let Some(scale) = exponent
        .checked_sub(fraction.len() as i64)
        .and_then(|scale| scale.checked_add((significant.len() - trimmed.len()) as i64))
    else {
        return Cow::Borrowed(text);
    };
    let count = trimmed.len() as i64;
    let point = count + scale;
    let mut out = String::with_capacity(trimmed.len() + 24);
    if negative {
        out.push('-');
    }
    if scale >= 0 && point <= PLAIN {
        out.push_str(trimmed);
        out.extend(std::iter::repeat_n('0', scale as usize));
    } else if scale < 0 && point > 0 {
        let (before, after) = trimmed.split_at(point as usize);
        out.push_str(before);
        out.push('.');
        out.push_str(after);
    } else if scale < 0 && point > -PLAIN {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(trimmed);
    } else {
        let (first, rest) = trimmed.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push_str(&(point - 1).to_string());
    }
    if out == text { Cow::Borrowed(text) } else { Cow::Owned(out) }
}

fn hash_object(hash: &mut Sha256, object: &serde_json::Map<String, Value>) {
    hash.update([5]);
    hash.update((object.len() as u64).to_be_bytes());
    let mut keys: Vec<&String> = object.keys().collect();
    keys.sort_unstable();
    for key in keys {
        hash_bytes(hash, key.as_bytes());
        hash_value(hash, &object[key]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::MemoryStore;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use tool_mediator_core::SourceType;

    /// Describes every tool and counts the tools it was asked about.
    struct Counting(Arc<AtomicUsize>);

    #[async_trait]
    impl ToolTransformer for Counting {
        fn name(&self) -> &str {
            "counting"
        }
        fn priority(&self) -> i32 {
            50
        }
        async fn transform(&self, tools: &[Tool], _: &ToolContext) -> Result<Vec<Answer>, TransformError> {
            self.0.fetch_add(tools.len(), Ordering::Relaxed);
            Ok(tools
                .iter()
                .enumerate()
                .map(|(i, t)| Answer::proposing(i, t, &t.clone().with_description("described"), 0.8))
                .collect())
        }
    }

    fn run<T: ToolTransformer + 'static>(transformer: &CachedTransformer<T>, tools: &[Tool]) -> Vec<Answer> {
        let context = ToolContext::new("s", SourceType::Web);
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(transformer.transform(tools, &context))
            .unwrap()
    }

    #[test]
    fn only_misses_reach_the_inner_transformer() {
        let asked = Arc::new(AtomicUsize::new(0));
        let cache = Arc::new(Cache::new(MemoryStore::default(), Duration::from_secs(60)));
        let cached = CachedTransformer::new(Counting(asked.clone()), cache);
        assert_eq!((cached.name(), cached.priority()), ("cached-counting", 60));
        let mut tools: Vec<Tool> = (0..5).map(|i| Tool::new(format!("t{i}"))).collect();
        assert_eq!(run(&cached, &tools).len(), 5);
        assert_eq!(asked.load(Ordering::Relaxed), 5);
        let again = run(&cached, &tools);
        assert_eq!(asked.load(Ordering::Relaxed), 5, "a second run asks nothing");
        assert!(again.iter().all(|a| a.patch.description == Some(Some("described".into()))));
        tools.push(Tool::new("new"));
        tools.swap(0, 5);
        let answers = run(&cached, &tools);
        assert_eq!(asked.load(Ordering::Relaxed), 6, "one new tool, one question");
        for answer in answers {
            assert_eq!(
                answer.patch.applied_to(&tools[answer.index]).name,
                tools[answer.index].name,
                "answers map back to their tools"
            );
        }
    }

    /// [`Counting`], admitting no answer that hides a tool.
    struct Gated(Counting);

    #[async_trait]
    impl ToolTransformer for Gated {
        fn name(&self) -> &str {
            "gated"
        }

        fn priority(&self) -> i32 {
            50
        }

        async fn transform(&self, tools: &[Tool], context: &ToolContext) -> Result<Vec<Answer>, TransformError> {
            self.0.transform(tools, context).await
        }

        fn admits(&self, _tool: &Tool, answer: &Answer) -> Result<(), String> {
            if answer.hidden { Err("it hides the tool".into()) } else { Ok(()) }
        }
    }

    #[test]
    fn a_cached_answer_the_inner_transformer_would_not_give_is_asked_again() {
        let asked = Arc::new(AtomicUsize::new(0));
        let cache = Arc::new(Cache::new(MemoryStore::default(), Duration::from_secs(60)));
        let cached = CachedTransformer::new(Gated(Counting(asked.clone())), cache.clone());
        let tools = vec![Tool::new("del_acct")];
        run(&cached, &tools);
        assert_eq!(asked.load(Ordering::Relaxed), 1);
        // Someone with the key (or a bug) keeps an answer that hides the tool and renames it.
        let context = ToolContext::new("s", SourceType::Web);
        let mut forged = Answer::unchanged(0, 0.9);
        forged.hidden = true;
        forged.patch.name = Some("list_accounts".into());
        cache.put(&cached.key(&tools[0], &context), &serde_json::to_vec(&Stored::of(&forged)).unwrap());
        let answers = run(&cached, &tools);
        assert_eq!(asked.load(Ordering::Relaxed), 2, "the refused answer is asked again");
        assert!(!answers[0].hidden && answers[0].patch.name.is_none(), "the fresh answer is used");
        assert_eq!(answers[0].patch.description, Some(Some("described".into())));
        // And kept in its place: the next run asks nothing.
        run(&cached, &tools);
        assert_eq!(asked.load(Ordering::Relaxed), 2);
    }

    /// Describes every tool once `gate` lets it, counting the tools it was asked about; fails
    /// while `failing` is set.
    #[derive(Clone)]
    struct Held {
        asked: Arc<AtomicUsize>,
        gate: Arc<tokio::sync::Semaphore>,
        failing: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Default for Held {
        fn default() -> Self {
            let closed = Arc::new(tokio::sync::Semaphore::new(0));
            Held { asked: Arc::default(), gate: closed, failing: Arc::default() }
        }
    }

    #[async_trait]
    impl ToolTransformer for Held {
        fn name(&self) -> &str {
            "held"
        }

        fn priority(&self) -> i32 {
            50
        }

        async fn transform(&self, tools: &[Tool], context: &ToolContext) -> Result<Vec<Answer>, TransformError> {
            self.asked.fetch_add(tools.len(), Ordering::Relaxed);
            let _let_through = self.gate.acquire().await.map_err(|error| error.to_string())?;
            if self.failing.load(Ordering::Relaxed) {
                return Err("the model is down".into());
            }
            Counting(Arc::default()).transform(tools, context).await
        }
    }

    /// `held` behind `cache`, in the background, and what a chain would hear of its late answers.
    fn in_the_background(held: &Held, cache: Cache) -> (CachedTransformer<Held>, tokio::sync::watch::Receiver<u64>) {
        let late = LateAnswers::default();
        let heard = late.heard();
        (CachedTransformer::new(held.clone(), Arc::new(cache)).in_background(late), heard)
    }

    fn open_questions(cached: &CachedTransformer<Held>) -> usize {
        cached.background.as_ref().expect("in the background").open_questions()
    }

    /// Yields to the runtime until `done`, failing after 10 s.
    async fn until(what: &str, done: impl Fn() -> bool) {
        let waiting = async {
            while !done() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(10), waiting).await.unwrap_or_else(|_| panic!("{what} within 10 s"));
    }

    fn memory() -> Cache {
        Cache::new(MemoryStore::default(), Duration::from_secs(60))
    }

    #[tokio::test]
    async fn in_the_background_misses_are_asked_once_hits_come_at_once_and_the_chain_hears_of_the_rest() {
        let held = Held::default();
        let (cached, mut heard) = in_the_background(&held, memory());
        let context = ToolContext::new("s", SourceType::Web);
        let tools: Vec<Tool> = (0..3).map(|i| Tool::new(format!("t{i}"))).collect();

        // The inner transformer is held: the answer comes all the same, without it.
        let first = tokio::time::timeout(Duration::from_secs(10), cached.transform(&tools, &context)).await;
        assert!(first.expect("not waiting for the inner transformer").unwrap().is_empty());
        until("the run asks", || held.asked.load(Ordering::Relaxed) == 3).await;
        // Listed again while the question is open: nothing is asked again.
        assert!(cached.transform(&tools, &context).await.unwrap().is_empty());
        assert!(cached.transform(&tools[1..], &context).await.unwrap().is_empty());
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert_eq!(held.asked.load(Ordering::Relaxed), 3, "each tool asked about once");
        assert!(!heard.has_changed().unwrap(), "nothing arrived yet");

        held.gate.add_permits(100);
        let told = tokio::time::timeout(Duration::from_secs(10), heard.changed()).await;
        assert!(told.expect("told within 10 s").is_ok(), "answers arrived");
        assert_eq!(*heard.borrow_and_update(), 1, "once, for the one run");
        let answers = cached.transform(&tools, &context).await.unwrap();
        assert_eq!(answers.len(), 3, "the cache's answers, at once");
        assert!(answers.iter().all(|answer| answer.patch.description == Some(Some("described".into()))));
        until("the question closes", || open_questions(&cached) == 0).await;
        assert_eq!(cached.transform(&tools, &context).await.unwrap().len(), 3);
        assert_eq!(held.asked.load(Ordering::Relaxed), 3, "nothing more asked");
        assert!(!heard.has_changed().unwrap(), "nothing more told");
    }

    #[tokio::test]
    async fn a_failed_run_is_said_once_and_asked_again_only_at_a_later_listing() {
        let held = Held::default();
        held.gate.add_permits(100);
        held.failing.store(true, Ordering::Relaxed);
        let (cached, mut heard) = in_the_background(&held, memory());
        let context = ToolContext::new("s", SourceType::Web);
        let tools = vec![Tool::new("t")];
        let (logged, log) = logged();
        let _subscriber = tracing::subscriber::set_default(logged);

        for run in 1..=2 {
            assert!(cached.transform(&tools, &context).await.unwrap().is_empty());
            until("the run ends", || held.asked.load(Ordering::Relaxed) == run && open_questions(&cached) == 0).await;
            // Nothing arrived, so nothing lists again: no retry without a listing.
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert_eq!(held.asked.load(Ordering::Relaxed), run, "asked once per listing");
            assert!(!heard.has_changed().unwrap(), "a failure tells nothing");
        }
        let said = log.lock().unwrap().clone();
        let lines = |level: &str| {
            said.lines().filter(|line| line.contains(level) && line.contains("failed in the background")).count()
        };
        assert_eq!((lines("WARN"), lines("DEBUG")), (1, 1), "a warning for the first failure in a row: {said}");

        held.failing.store(false, Ordering::Relaxed);
        cached.transform(&tools, &context).await.unwrap();
        let told = tokio::time::timeout(Duration::from_secs(10), heard.changed()).await;
        assert!(told.expect("told within 10 s").is_ok());
        assert_eq!(cached.transform(&tools, &context).await.unwrap().len(), 1);
    }

    /// A store that keeps nothing (a full disk, a server that is down).
    struct Forgetful;

    impl crate::cache::CacheStore for Forgetful {
        fn get(&self, _: &[u8]) -> Result<Option<Vec<u8>>, crate::cache::CacheError> {
            Ok(None)
        }
        fn put(&self, _: &[u8], _: &[u8]) -> Result<(), crate::cache::CacheError> {
            Err(crate::cache::CacheError::Store { dir: "forgetful".into(), message: "the disk is full".into() })
        }
        fn remove(&self, _: &[u8]) -> Result<(), crate::cache::CacheError> {
            Ok(())
        }
        fn records(&self) -> Result<Vec<crate::cache::KeyedRecord>, crate::cache::CacheError> {
            Ok(Vec::new())
        }
        fn clear(&self) -> Result<(), crate::cache::CacheError> {
            Ok(())
        }
    }

    /// Else each arrival would set off a listing that misses, asks, and arrives again.
    #[tokio::test]
    async fn answers_a_store_does_not_keep_are_kept_aside_and_not_asked_for_again() {
        let held = Held::default();
        held.gate.add_permits(100);
        let (cached, mut heard) = in_the_background(&held, Cache::new(Forgetful, Duration::from_secs(60)));
        let context = ToolContext::new("s", SourceType::Web);
        let tools = vec![Tool::new("t")];
        assert!(cached.transform(&tools, &context).await.unwrap().is_empty());
        let told = tokio::time::timeout(Duration::from_secs(10), heard.changed()).await;
        assert!(told.expect("told within 10 s").is_ok());
        until("the question closes", || open_questions(&cached) == 0).await;
        let answers = cached.transform(&tools, &context).await.unwrap();
        assert_eq!(answers.len(), 1, "kept aside");
        assert_eq!(held.asked.load(Ordering::Relaxed), 1, "not asked for again");
    }

    /// A subscriber that writes what it logs to the returned buffer.
    fn logged() -> (impl tracing::Subscriber + Send + Sync, Arc<std::sync::Mutex<String>>) {
        #[derive(Clone, Default)]
        struct Lines(Arc<std::sync::Mutex<String>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().push_str(&String::from_utf8_lossy(bytes));
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .finish();
        (subscriber, lines.0)
    }

    proptest::proptest! {
        #[test]
        fn text_hashes_as_its_value_does(value in tool_mediator_core::testing::json_value()) {
            let of_value = {
                let mut hash = Sha256::new();
                hash_value(&mut hash, &value);
                hash.finalize().to_vec()
            };
            let mut hash = Sha256::new();
            hash_json(&mut hash, &Json::from_value(&value));
            proptest::prop_assert_eq!(hash.finalize().to_vec(), of_value);
        }
    }

    #[test]
    fn hashing_ignores_key_order_but_not_content() {
        let digest = |value: Value| {
            let mut hash = Sha256::new();
            hash_value(&mut hash, &value);
            hash.finalize().to_vec()
        };
        let a = digest(serde_json::json!({"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": null}}));
        let b = digest(serde_json::json!({"a": {"x": null, "y": [1, {"p": 3, "q": 2}]}, "b": 1}));
        assert_eq!(a, b);
        assert_ne!(digest(serde_json::json!(["ab", "c"])), digest(serde_json::json!(["a", "bc"])));
        assert_ne!(digest(serde_json::json!({"a": "1"})), digest(serde_json::json!({"a": 1})));
    }
}

#[cfg(test)]
mod number_tests {
    use super::*;

    fn tool_with(minimum: &str) -> Tool {
        let text = format!(
            r#"{{"name": "t", "inputSchema": {{"type": "object", "properties": {{"n": {{"type": "number", "minimum": {minimum}}}}}}}}}"#
        );
        tool_mediator_core::json::from_str_as(&text).unwrap()
    }

    #[test]
    fn pin_digests_treat_equal_numbers_as_equal() {
        let ten = digest(&tool_with("10"));
        for same in ["10.0", "1e1", "1E+1", "10.000", "100e-1", "0.1e2"] {
            assert_eq!(digest(&tool_with(same)), ten, "{same} is 10");
        }
        for other in ["11", "1", "100", "-10", "10.5"] {
            assert_ne!(digest(&tool_with(other)), ten, "{other} is not 10");
        }
        assert_eq!(digest(&tool_with("0.5")), digest(&tool_with("5e-1")));
        assert_eq!(digest(&tool_with("0")), digest(&tool_with("-0.0")));
        assert_eq!(digest(&tool_with("1e400")), digest(&tool_with("10e399")), "beyond f64, still exact");
        assert_ne!(digest(&tool_with("1e400")), digest(&tool_with("1e401")));
        // A huge exponent is not written out digit by digit.
        assert_ne!(digest(&tool_with("1e999999999")), digest(&tool_with("1e999999998")));
    }

    #[test]
    fn numbers_are_written_as_integers_or_short_decimals() {
        for (written, canonical) in [
            ("10", "10"),
            ("10.0", "10"),
            ("1e1", "10"),
            ("-0", "0"),
            ("0.50", "0.5"),
            ("-1.25e1", "-12.5"),
            ("007", "7"),
            ("1e-7", "0.0000001"),
            ("1e100", "1e100"),
            ("1.5e-100", "1.5e-100"),
        ] {
            assert_eq!(canonical_number(written), canonical, "{written}");
        }
    }
}
