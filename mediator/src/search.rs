//! Finding tools by what they do: an Okapi BM25 index over what the chain produced.
//!
//! A tool is indexed by its fields, each weighted by how much it says: the exposed name (its
//! words split as the rules split identifiers: `GET_search_person` is `get search person`), the
//! source's name for it, title, category, description, the server it comes from, and its
//! parameters' names and descriptions. Words are lowercased, common English words dropped, and
//! stemmed (Snowball English), so "movies" finds `search_movie`. The index is built once per
//! listing and answers a query without allocating per tool.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;
use serde::Deserialize;

use crate::rules::identifier;
use crate::tool::EnhancedTool;

/// BM25's term-frequency saturation and length normalization, at their usual values.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// How many times a field's words count: a name says more per word than a description.
const NAME: u32 = 3;
const CATEGORY: u32 = 2;
const TITLE: u32 = 2;
const DESCRIPTION: u32 = 1;
const PARAMETER: u32 = 1;

/// A BM25 index of tools, by their position in the list it was built from.
pub struct ToolIndex {
    /// Stemmed term -> its number.
    terms: FxHashMap<Box<str>, u32>,
    /// By term number: (tool, weighted frequency of the term in it).
    postings: Vec<Vec<(u32, f32)>>,
    /// Each tool's weighted length in terms.
    lengths: Vec<f32>,
    average_length: f32,
}

/// What a tool is found by.
pub struct Document<'a> {
    pub tool: &'a EnhancedTool,
    /// The server it comes from, when a session has several.
    pub server: Option<&'a str>,
}

/// Words to term numbers, each word read and stemmed once however often it comes.
#[derive(Default)]
struct Vocabulary {
    terms: FxHashMap<Box<str>, u32>,
    /// Lowercased word -> its term, or `None` for a word that says nothing.
    words: FxHashMap<Box<str>, Option<u32>>,
    lowercase: String,
}

impl Vocabulary {
    /// Calls `each` with the term number of every word of `text` worth searching by: plain
    /// words as they are, identifiers (`listPullRequests`, `GET_search`) split into theirs.
    fn read(&mut self, text: &str, mut each: impl FnMut(u32)) {
        for run in text.split(|c: char| !c.is_alphanumeric() && c != '_' && c != '-').filter(|run| !run.is_empty()) {
            // A plain word (`issues`, `Issues`, `2024`) is one term; anything else is split.
            let plain = |byte: u8| byte.is_ascii_lowercase() || byte.is_ascii_digit();
            if run.bytes().skip(1).all(plain) && run.as_bytes()[0].is_ascii_alphanumeric() {
                self.word(run, &mut each);
            } else {
                for token in identifier::split(run) {
                    self.word(token.text, &mut each);
                }
            }
        }
    }

    fn word(&mut self, word: &str, each: &mut impl FnMut(u32)) {
        {
            self.lowercase.clear();
            if word.is_ascii() {
                self.lowercase.push_str(word);
                self.lowercase.make_ascii_lowercase();
            } else {
                self.lowercase.extend(word.chars().flat_map(char::to_lowercase));
            }
            let term = match self.words.get(self.lowercase.as_str()) {
                Some(term) => *term,
                None => {
                    let term = stem(&self.lowercase).map(|stem| {
                        let next = self.terms.len() as u32;
                        *self.terms.entry(stem.into_boxed_str()).or_insert(next)
                    });
                    self.words.insert(self.lowercase.as_str().into(), term);
                    term
                }
            };
            if let Some(term) = term {
                each(term);
            }
        }
    }
}

impl ToolIndex {
    pub fn new<'a>(documents: impl IntoIterator<Item = Document<'a>>) -> ToolIndex {
        let mut vocabulary = Vocabulary::default();
        let mut postings: Vec<Vec<(u32, f32)>> = Vec::new();
        let mut lengths = Vec::new();
        // Weighted counts of the current tool's terms, by term number, and which are set.
        let mut counts: Vec<u32> = Vec::new();
        let mut touched: Vec<u32> = Vec::new();
        for (number, document) in documents.into_iter().enumerate() {
            let mut length = 0;
            let mut add = |vocabulary: &mut Vocabulary, text: &str, weight: u32| {
                vocabulary.read(text, |term| {
                    let slot = term as usize;
                    if slot >= counts.len() {
                        counts.resize(slot + 1, 0);
                    }
                    if counts[slot] == 0 {
                        touched.push(term);
                    }
                    counts[slot] += weight;
                    length += weight;
                });
            };
            let tool = document.tool;
            add(&mut vocabulary, tool.name(), NAME);
            if tool.original_name != tool.name() {
                add(&mut vocabulary, &tool.original_name, NAME);
            }
            if let Some(title) = &tool.tool.title {
                add(&mut vocabulary, title, TITLE);
            }
            if let Some(category) = &tool.category {
                add(&mut vocabulary, category, CATEGORY);
            }
            if let Some(description) = &tool.tool.description {
                add(&mut vocabulary, description, DESCRIPTION);
            }
            if let Some(server) = document.server {
                add(&mut vocabulary, server, DESCRIPTION);
            }
            if let Some(schema) = &tool.tool.input_schema
                && let Ok(Schema { properties: Some(properties) }) = serde_json::from_str::<Schema>(schema.as_str())
            {
                for (name, property) in properties {
                    add(&mut vocabulary, &name, PARAMETER);
                    if let Some(description) = property.description {
                        add(&mut vocabulary, &description, PARAMETER);
                    }
                }
            }
            postings.resize_with(vocabulary.terms.len(), Vec::new);
            for term in touched.drain(..) {
                let count = std::mem::take(&mut counts[term as usize]);
                postings[term as usize].push((number as u32, count as f32));
            }
            lengths.push(length as f32);
        }
        let average_length = if lengths.is_empty() { 1.0 } else { lengths.iter().sum::<f32>() / lengths.len() as f32 };
        ToolIndex { terms: vocabulary.terms, postings, lengths, average_length: average_length.max(1.0) }
    }

    /// How many tools it holds.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The tools that match `query` best, best first, at most `limit`: their positions and
    /// scores. Ties keep list order.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(usize, f32)> {
        let mut query_terms: Vec<u32> =
            terms(query).iter().filter_map(|term| self.terms.get(term.as_str()).copied()).collect();
        query_terms.sort_unstable();
        query_terms.dedup();
        let count = self.lengths.len() as f32;
        let mut scores = vec![0f32; self.lengths.len()];
        for term in query_terms {
            let postings = &self.postings[term as usize];
            let frequency = postings.len() as f32;
            let idf = (1.0 + (count - frequency + 0.5) / (frequency + 0.5)).ln();
            for &(tool, tf) in postings {
                let length = self.lengths[tool as usize] / self.average_length;
                scores[tool as usize] += idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length));
            }
        }
        let mut found: Vec<(usize, f32)> = scores.into_iter().enumerate().filter(|(_, score)| *score > 0.0).collect();
        let best_first = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if found.len() > limit {
            found.select_nth_unstable_by(limit, best_first);
            found.truncate(limit);
        }
        found.sort_unstable_by(best_first);
        found
    }
}

/// What the index reads of an input schema: its parameters' names and descriptions.
#[derive(Deserialize)]
struct Schema<'a> {
    #[serde(default, borrow)]
    properties: Option<HashMap<Cow<'a, str>, Property<'a>>>,
}

#[derive(Deserialize)]
struct Property<'a> {
    #[serde(default, borrow)]
    description: Option<Cow<'a, str>>,
}

/// The search term of a lowercased word, or `None` for a word that says nothing about a tool.
fn stem(word: &str) -> Option<String> {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    if !word.chars().all(char::is_alphanumeric) || STOP_WORDS.contains(&word) {
        return None;
    }
    Some(STEMMER.get_or_init(|| Stemmer::create(Algorithm::English)).stem(word).into_owned())
}

/// The search terms of a text: its words (identifiers split), lowercased, common words left
/// out, stemmed.
pub fn terms(text: &str) -> Vec<String> {
    identifier::split(text).into_iter().filter_map(|token| stem(&token.text.to_lowercase())).collect()
}

/// Words that say nothing about what a tool does.
const STOP_WORDS: [&str; 48] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "give", "has", "have", "how",
    "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "please", "show", "so", "that", "the", "their", "them",
    "these", "this", "to", "was", "what", "when", "which", "who", "will", "with", "would", "you", "your", "all",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::Tool;
    use serde_json::json;

    fn tool(name: &str, description: &str, schema: serde_json::Value) -> EnhancedTool {
        EnhancedTool::unchanged(Tool::new(name).with_description(description).with_input_schema(schema))
    }

    fn index(tools: &[EnhancedTool]) -> ToolIndex {
        ToolIndex::new(tools.iter().map(|tool| Document { tool, server: None }))
    }

    #[test]
    fn names_split_and_words_stemmed_find_the_right_tool() {
        let tools = [
            tool("GET_search_person", "Search for people.", json!({"type": "object"})),
            tool("GET_search_movie", "Search for movies.", json!({"type": "object"})),
            tool("GET_movie_movie_id_credits", "Get the cast and crew for a movie.", json!({"type": "object"})),
        ];
        let index = index(&tools);
        assert_eq!(index.search("find a person by name", 3)[0].0, 0);
        assert_eq!(index.search("search movies by title", 3)[0].0, 1);
        assert_eq!(index.search("who was in the cast of this movie", 3)[0].0, 2);
        assert!(index.search("the of and", 3).is_empty(), "common words find nothing");
    }

    #[test]
    fn parameters_are_found_and_the_limit_holds() {
        let tools = [
            tool(
                "convert",
                "Converts a value.",
                json!({"type": "object", "properties": {"timezone": {"description": "IANA zone"}}}),
            ),
            tool("echo", "Answers the text.", json!({"type": "object", "properties": {"text": {}}})),
        ];
        let index = index(&tools);
        assert_eq!(index.search("iana timezone", 5), vec![(0, index.search("iana timezone", 5)[0].1)]);
        assert_eq!(index.search("converts text", 1).len(), 1);
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn terms_split_identifiers_and_stem() {
        assert_eq!(terms("listPullRequests"), ["list", "pull", "request"]);
        assert_eq!(terms("The movies of 2024"), ["movi", "2024"]);
    }
}
