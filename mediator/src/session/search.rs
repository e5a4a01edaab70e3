//! `search_tools`: the model finds tools by what they do. The index (see [`crate::search`]) is
//! built on the first search after the tools changed; what a search finds is listed and
//! callable from then on, at once (for clients that never list again) and with one
//! `list_changed`. A tool the client may not see is never found.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::disclosure::{Described, EXPANDED_BYTES, describe, described_result};
use super::{Session, State, text_result};
use crate::search::meaning::{self, Embedder, Reading};
use crate::search::{Document, ToolIndex};
use tool_mediator_core::Tool;
use tool_mediator_core::json::Json;

pub(super) const SEARCH_TOOL: &str = "search_tools";
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 50;
/// The longest query read, in bytes: a few words say what a tool should do, and the query is
/// echoed in the answer.
const MAX_QUERY_BYTES: usize = 1024;
/// How long a search waits for the embedding model to read the tools it has not read yet: long
/// enough to take them from a warm cache, and no longer (it goes on reading in the background;
/// the search ranks by words meanwhile).
const READING_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// The search tool, over `count` tools.
pub(super) fn search_tool(count: usize) -> Tool {
    let description = format!(
        "Find the tools for a task among {}: say what you want to do in a few words. Returns the \
         best matches with their descriptions and input schemas; call them by name. Says when none \
         fits.",
        tool_mediator_core::counted(count, "tool", "tools")
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "maxLength": MAX_QUERY_BYTES,
                      "description": "What the tool should do, in a few words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                      "description": "How many tools to return at most."},
        },
        "required": ["query"],
    });
    let mut tool = Tool::new(SEARCH_TOOL).with_description(description).with_input_schema(schema);
    tool.annotations = Some(Json::from(json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})));
    tool
}

/// The query and the limit of a call, or the tool error that says what is wrong with them.
fn read(arguments: &Map<String, Value>) -> Result<(&str, usize), String> {
    let query = match arguments.get("query").and_then(Value::as_str) {
        Some(query) if !query.trim().is_empty() => query,
        _ => return Err("`query` is required: a few words saying what the tool should do".to_owned()),
    };
    if query.len() > MAX_QUERY_BYTES {
        return Err(format!(
            "`query` is {} bytes long; the limit is {MAX_QUERY_BYTES} bytes: say in a few words what the tool should do",
            query.len()
        ));
    }
    let limit = match arguments.get("limit") {
        None | Some(Value::Null) => DEFAULT_LIMIT,
        Some(limit) => match whole_number(limit) {
            Some(limit) if (1..=MAX_LIMIT as u64).contains(&limit) => limit as usize,
            _ => return Err(format!("`limit` must be a whole number from 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})")),
        },
    };
    Ok((query, limit))
}

/// `value` as a whole number, written `5` or `5.0`.
fn whole_number(value: &Value) -> Option<u64> {
    value
        .as_u64()
        .or_else(|| value.as_f64().filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n <= u32::MAX as f64).map(|n| n as u64))
}

impl Session {
    /// Answers `search_tools(arguments)`; what it finds is listed from then on.
    ///
    /// Whether to answer is the query's: when no tool the client may see matches enough of its
    /// words (see [`Weighed`](crate::search::Weighed)), and the embedding model, where there is
    /// one, vouches for none, the answer says that no tool matches. Otherwise the answer is the
    /// best `limit` of the tools the client may see, ranked by BM25, fused with the model's
    /// ranking once it has read the tools: a request often needs a tool that matches less of
    /// it (the search that finds an id) beside the one that matches most.
    pub(super) async fn search(&self, arguments: &Map<String, Value>) -> Value {
        let (query, limit) = match read(arguments) {
            Ok(read) => read,
            Err(error) => return text_result(error, true),
        };
        let (index, reading) = {
            let mut state = self.state();
            let reading = self.policy.embedder.as_ref().map(|embedder| self.reading(&mut state, embedder));
            (self.index(&mut state), reading)
        };
        let similarities = match (&self.policy.embedder, reading) {
            (Some(embedder), Some(reading)) => reading.similarities(embedder, query, READING_WAIT).await,
            _ => None,
        };
        let (result, changed) = {
            let mut state = self.state();
            // The tools changed while the model was asked: what it said is of other tools.
            let similarities =
                similarities.filter(|_| state.index.as_ref().is_some_and(|now| Arc::ptr_eq(now, &index)));
            let index = self.index(&mut state);
            let tools = state.tools.as_deref().unwrap_or_default();
            let weighed = index.weigh(query);
            let needed = self.policy.search_threshold;
            let visible = |position: usize| self.is_visible(&state, &tools[position]);
            let by_words: Vec<usize> =
                index.search_among(query, usize::MAX, visible).into_iter().map(|(position, _)| position).collect();
            let closest = by_words.iter().map(|&position| weighed.share(position)).fold(0.0, f32::max);
            let vouched = match (&similarities, &self.policy.embedder) {
                (Some(similarities), Some(embedder)) => {
                    let vouches_from = embedder.habits().vouches_from;
                    (0..tools.len()).any(|position| similarities[position] >= vouches_from && visible(position))
                }
                _ => false,
            };
            if closest < needed && !vouched {
                return refusal(query, closest, needed, ranked_by(&similarities));
            }
            let hits: Vec<usize> = match &similarities {
                None => by_words.into_iter().take(limit).collect(),
                Some(similarities) => {
                    let mut by_meaning: Vec<usize> = (0..tools.len()).filter(|&position| visible(position)).collect();
                    by_meaning.sort_by(|&a, &b| similarities[b].total_cmp(&similarities[a]).then(a.cmp(&b)));
                    meaning::fuse(&by_words, &by_meaning, limit)
                }
            };
            // At a threshold of 0, a query none of whose words any tool has.
            if hits.is_empty() {
                return refusal(query, closest, needed, ranked_by(&similarities));
            }
            let matches: Vec<f32> = hits.iter().map(|&position| weighed.share(position)).collect();
            let found: Vec<Tool> = hits.iter().map(|&position| self.as_listed(&state, &tools[position])).collect();
            let result = search_result(query, found, &matches, ranked_by(&similarities));
            let new: Vec<String> = hits
                .iter()
                .map(|&position| tools[position].name())
                .filter(|name| !state.found.contains(*name))
                .map(str::to_owned)
                .collect();
            // Found again, nothing changes: the view stands.
            if !new.is_empty() {
                state.found.extend(new);
                state.derived = None;
            }
            (result, self.view_now(&mut state).1)
        };
        self.announce(changed);
        result
    }

    /// The documents of the tools as they are now, as search reads them.
    fn documents<'a>(&'a self, state: &'a State) -> impl Iterator<Item = Document<'a>> {
        let tools = state.tools.as_deref().unwrap_or_default();
        let several = self.source_names.len() > 1;
        tools.iter().enumerate().map(move |(position, tool)| Document {
            tool,
            server: several
                .then(|| state.owners.get(position).and_then(|&owner| self.source_names.get(owner)))
                .flatten()
                .map(String::as_str),
        })
    }

    /// The index of the tools as they are now.
    fn index(&self, state: &mut State) -> Arc<ToolIndex> {
        if let Some(index) = &state.index {
            return index.clone();
        }
        let index = Arc::new(ToolIndex::new(self.documents(state)));
        state.index = Some(index.clone());
        index
    }

    /// The tools as they are now, as the embedding model reads them (shared with the other
    /// sessions over the same tools).
    pub(super) fn reading(&self, state: &mut State, embedder: &Embedder) -> Arc<Reading> {
        if let Some(reading) = &state.reading {
            return reading.clone();
        }
        let reading = embedder.reading(self.documents(state));
        state.reading = Some(reading.clone());
        reading
    }
}

/// How a search ranked: by words alone, or by words and the embedding model's reading
/// (`rankedBy` in the answer).
fn ranked_by(similarities: &Option<Vec<f32>>) -> &'static str {
    match similarities {
        Some(_) => "words and meaning",
        None => "words",
    }
}

/// A share as a whole percentage, rounded down.
fn percent(share: f32) -> u32 {
    (share * 100.0).floor() as u32
}

/// The answer when no tool matches `query` well enough (the best, `best` of it; `needed` is
/// the threshold): a text the model reads, and no tools.
fn refusal(query: &str, best: f32, needed: f32, ranked_by: &str) -> Value {
    // Rounded down: never said to match what it falls short of.
    let closest = match best > 0.0 {
        true => format!("the closest matches {}% of it, {:.0}% is needed", percent(best), needed * 100.0),
        false => "none has any of its words".to_owned(),
    };
    let text = format!(
        "No tool matches `{query}` ({closest}). There may be no tool for this task; if there is, try other words \
         for what it should do."
    );
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"query": query, "tools": [], "matches": [], "rankedBy": ranked_by},
        "isError": false
    })
}

/// The answer: the tools found, best first, with their descriptions, input schemas and
/// annotations, as text for every client and as `structuredContent` for those that read it,
/// with how much of the query each matches (`matches`, 0 to 1). As many are described as fit
/// in a category expansion's bytes; the rest are named in a note.
fn search_result(query: &str, found: Vec<Tool>, matches: &[f32], ranked_by: &str) -> Value {
    let total = found.len();
    let names: Vec<String> = found.iter().map(|tool| tool.name.clone()).collect();
    let Described { text: entries, tools } = describe(found.into_iter(), total);
    let names = &names[tools.len()..];
    let most = matches.iter().copied().fold(0.0, f32::max);
    let least = matches.iter().copied().fold(1.0, f32::min);
    let text = format!(
        "{} for `{query}`, best first (each matching {}% to {}% of it); call them by name:\n{entries}",
        tool_mediator_core::counted(total, "tool", "tools"),
        percent(least),
        percent(most),
    );
    let note = (!names.is_empty()).then(|| {
        format!(
            "Described here: {} of {total} (about {} KiB at most). The others found can be called by name too: {}.",
            tools.len(),
            EXPANDED_BYTES / 1024,
            names.join(", ")
        )
    });
    // One per tool found, described or named in the note, to three places rounded down.
    let matches: Vec<f64> = matches.iter().map(|&share| (f64::from(share) * 1000.0).floor() / 1000.0).collect();
    described_result(
        text,
        json!({"query": query, "tools": tools, "matches": matches, "rankedBy": ranked_by}),
        total,
        note,
    )
}
