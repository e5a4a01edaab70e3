//! Finding tools by what they do: an Okapi BM25 index over what the chain produced.
//!
//! A tool is indexed by its fields, each weighted by how much it says: the exposed name, the
//! source's name for it, title, category, description, the server it comes from, and its
//! parameters' names and descriptions. A query and a tool's text are read into words the one
//! same way ([`words`]): identifiers split at separators and case changes (`GET_search_person`
//! is `get search person`, `listPullRequests` is `list pull requests`), letters and digits that
//! run together kept as one word (`s3`, `base64`, `oauth2`). Words are lowercased, common English
//! words dropped, and stemmed (Snowball English), so "movies" finds `search_movie`. The index is
//! built once per listing and answers a query without allocating per tool.
//!
//! Where an embedding model is configured, tools are also found by what they mean
//! ([`meaning`]): the two rankings are fused, and a search still answers by words alone while
//! the model is down or has not read the tools yet.

pub mod meaning;

use std::borrow::Cow;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashMap;
use serde::Deserialize;

use tool_mediator_core::EnhancedTool;

/// BM25's term-frequency saturation and length normalization, at their usual values.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// How many times a field's words count: a name says more per word than a description.
const NAME: u32 = 3;
const CATEGORY: u32 = 2;
const TITLE: u32 = 2;
const DESCRIPTION: u32 = 1;
const PARAMETER: u32 = 1;

/// How much of a query ([`Weighed::share`]) the best tool must match for `search_tools` to
/// answer with tools rather than "no tool matches": the highest share that refuses at most 5% of
/// the RestBench queries (real requests, each answerable by its service's tools) whose service's
/// tools were searched. `cargo test -p tool-mediator-tests --test search search_refuses --
/// --nocapture` measures it, and fails when it is no longer the calibrated value.
pub const MATCH_THRESHOLD: f32 = 0.18;

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
    /// A short ASCII word, lowercased and packed into a number (see [`pack`]) -> its term, or
    /// `None` for a word that says nothing. Most words are short: looked up without copying
    /// the word or following a pointer to compare it.
    short: FxHashMap<u128, Option<u32>>,
    /// Any other word, lowercased -> its term.
    long: FxHashMap<Box<str>, Option<u32>>,
    lowercase: String,
}

impl Vocabulary {
    /// Calls `each` with the term number of every word of `text` worth searching by.
    fn read(&mut self, text: &str, mut each: impl FnMut(u32)) {
        words(text, |word| self.word(word, &mut each));
    }

    fn word(&mut self, word: &str, each: &mut impl FnMut(u32)) {
        let term = match pack(word) {
            Some(key) => match self.short.get(&key) {
                Some(term) => *term,
                None => {
                    let term = self.term(word);
                    self.short.insert(key, term);
                    term
                }
            },
            None => {
                lowercase(word, &mut self.lowercase);
                match self.long.get(self.lowercase.as_str()) {
                    Some(term) => *term,
                    None => {
                        let term = self.term(word);
                        self.long.insert(self.lowercase.as_str().into(), term);
                        term
                    }
                }
            }
        };
        if let Some(term) = term {
            each(term);
        }
    }

    /// The term of a word not met before, numbered if new.
    fn term(&mut self, word: &str) -> Option<u32> {
        lowercase(word, &mut self.lowercase);
        stem(&self.lowercase).map(|stem| {
            let next = self.terms.len() as u32;
            *self.terms.entry(stem.into_boxed_str()).or_insert(next)
        })
    }
}

/// An ASCII word of at most 16 bytes, lowercased, as one number: its bytes, zero-padded (a word
/// has no zero byte, so no two words share a number).
fn pack(word: &str) -> Option<u128> {
    let bytes = word.as_bytes();
    if bytes.len() > 16 {
        return None;
    }
    let mut packed = [0u8; 16];
    for (slot, &byte) in packed.iter_mut().zip(bytes) {
        if !byte.is_ascii() {
            return None;
        }
        *slot = byte.to_ascii_lowercase();
    }
    Some(u128::from_le_bytes(packed))
}

/// `word` lowercased into `into`.
fn lowercase(word: &str, into: &mut String) {
    into.clear();
    if word.is_ascii() {
        into.push_str(word);
        into.make_ascii_lowercase();
    } else {
        into.extend(word.chars().flat_map(char::to_lowercase));
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
        // The terms of each text read so far: a text many tools share (a parameter's
        // description, `owner`, a server's name) is read once.
        let mut read: FxHashMap<&'a str, (u32, u32)> = FxHashMap::default();
        let mut read_terms: Vec<u32> = Vec::new();
        for (number, document) in documents.into_iter().enumerate() {
            let mut length = 0;
            let mut add = |text: Cow<'a, str>, weight: u32| {
                let mut count = |term: u32| {
                    let slot = term as usize;
                    if slot >= counts.len() {
                        counts.resize(slot + 1, 0);
                    }
                    if counts[slot] == 0 {
                        touched.push(term);
                    }
                    counts[slot] += weight;
                    length += weight;
                };
                let text = match text {
                    Cow::Borrowed(text) => text,
                    // Unescaped from JSON: read once, not kept.
                    Cow::Owned(text) => return vocabulary.read(&text, count),
                };
                let (start, end) = *read.entry(text).or_insert_with(|| {
                    let start = read_terms.len() as u32;
                    vocabulary.read(text, |term| read_terms.push(term));
                    (start, read_terms.len() as u32)
                });
                read_terms[start as usize..end as usize].iter().for_each(|&term| count(term));
            };
            let tool: &'a EnhancedTool = document.tool;
            add(Cow::Borrowed(tool.name()), NAME);
            if tool.original_name != tool.name() {
                add(Cow::Borrowed(&tool.original_name), NAME);
            }
            if let Some(title) = &tool.tool.title {
                add(Cow::Borrowed(title), TITLE);
            }
            if let Some(category) = &tool.category {
                add(Cow::Borrowed(category), CATEGORY);
            }
            if let Some(description) = &tool.tool.description {
                add(Cow::Borrowed(description), DESCRIPTION);
            }
            if let Some(server) = document.server {
                add(Cow::Borrowed(server), DESCRIPTION);
            }
            if let Some(schema) = &tool.tool.input_schema
                && let Ok(Schema { properties: Some(properties) }) = serde_json::from_str::<Schema<'a>>(schema.as_str())
            {
                for (name, property) in properties {
                    add(name, PARAMETER);
                    if let Some(description) = property.description {
                        add(description, PARAMETER);
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
        self.search_among(query, limit, |_| true)
    }

    /// [`ToolIndex::search`] among the tools `admit` lets in (asked only of tools that match):
    /// the best `limit` of them are selected, not every match sorted.
    pub fn search_among(&self, query: &str, limit: usize, mut admit: impl FnMut(usize) -> bool) -> Vec<(usize, f32)> {
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
        let mut found: Vec<(usize, f32)> =
            scores.into_iter().enumerate().filter(|&(tool, score)| score > 0.0 && admit(tool)).collect();
        let best_first = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if found.len() > limit {
            found.select_nth_unstable_by(limit, best_first);
            found.truncate(limit);
        }
        found.sort_unstable_by(best_first);
        found
    }

    /// How much of `query` each tool matches: see [`Weighed`].
    pub fn weigh(&self, query: &str) -> Weighed<'_> {
        let count = self.lengths.len() as f32;
        let idf = |frequency: f32| (1.0 + (count - frequency + 0.5) / (frequency + 0.5)).ln();
        let mut known: Vec<(u32, f32)> = Vec::new();
        let mut unknown: Vec<String> = Vec::new();
        // In a query written all in capitals, or every word capitalized, a capital names nothing.
        let mut capitalized = (0, 0);
        words(query, |word| {
            capitalized.0 += usize::from(word.starts_with(char::is_uppercase));
            capitalized.1 += 1;
        });
        let capitals_name = capitalized.0 < capitalized.1 || capitalized.1 < 2;
        let mut lower = String::new();
        for sentence in query.split(['.', '?', '!', ';', '\n']) {
            let mut first = true;
            words(sentence, |word| {
                let names_something = (capitals_name && !first && word.starts_with(char::is_uppercase))
                    || word.chars().all(|c| c.is_numeric());
                first = false;
                lowercase(word, &mut lower);
                let Some(term) = stem(&lower) else { return };
                match self.terms.get(term.as_str()) {
                    Some(&number) if !known.iter().any(|&(seen, _)| seen == number) => {
                        known.push((number, idf(self.postings[number as usize].len() as f32)));
                    }
                    Some(_) => {}
                    // A word no tool has, weighed as the rarest term, unless it names what a tool
                    // would act on (a name, a number): that says nothing of what the tool does.
                    None if !names_something && !unknown.contains(&term) => unknown.push(term),
                    None => {}
                }
            });
        }
        let total = known.iter().map(|(_, weight)| weight).sum::<f32>() + unknown.len() as f32 * idf(0.0);
        Weighed { index: self, known, total }
    }
}

/// A query's terms as an index weighs them, to say how much of it a tool matches: the share of
/// the query's weight (each of its terms by how rare it is among the tools, as BM25 weighs it)
/// that the tool's text has, from 0 to 1. A word that no tool has counts against every tool as
/// the rarest term would, once however often it comes ("play the song" matches nothing of a
/// film database, however well `top` matches `top_rated`), unless it names something (a
/// capitalized word not starting a sentence, in a query not written all in capitals; a number):
/// "movies by Sofia Coppola" asks for a tool about movies, whoever the person is.
pub struct Weighed<'a> {
    index: &'a ToolIndex,
    /// The query's terms the index has, and their weights.
    known: Vec<(u32, f32)>,
    total: f32,
}

impl Weighed<'_> {
    /// How much of the query the tool at `position` matches, 0 to 1.
    pub fn share(&self, position: usize) -> f32 {
        if self.total <= 0.0 {
            return 0.0;
        }
        let tool = position as u32;
        let matched: f32 = self
            .known
            .iter()
            .filter(|(term, _)| {
                self.index.postings[*term as usize].binary_search_by_key(&tool, |&(tool, _)| tool).is_ok()
            })
            .map(|(_, weight)| weight)
            .sum();
        matched / self.total
    }
}

/// What the index reads of an input schema: its parameters' names and descriptions.
#[derive(Deserialize)]
struct Schema<'a> {
    #[serde(default, borrow)]
    properties: Option<FxHashMap<Cow<'a, str>, Property<'a>>>,
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

/// The search terms of a text: its [`words`], lowercased, common words left out, stemmed. The
/// index reads a tool's text the same way.
pub fn terms(text: &str) -> Vec<String> {
    let (mut terms, mut lower) = (Vec::new(), String::new());
    words(text, |word| {
        lowercase(word, &mut lower);
        terms.extend(stem(&lower));
    });
    terms
}

/// Calls `each` with every word of `text`, the one way a query and a tool's text are both read:
/// runs of letters and digits, split where an identifier's case changes (`listPullRequests`:
/// `list`, `Pull`, `Requests`; `HTTPResponse`: `HTTP`, `Response`; `S3Bucket`: `S3`, `Bucket`).
/// Letters and digits that run together stay one word (`s3`, `base64`, `oauth2`, `2024`), as
/// prose writes them.
pub fn words(text: &str, mut each: impl FnMut(&str)) {
    if !text.is_ascii() {
        for run in text.split(|c: char| !c.is_alphanumeric()).filter(|run| !run.is_empty()) {
            split_case(run, &mut each);
        }
        return;
    }
    // Most text is ASCII: read as bytes.
    let bytes = text.as_bytes();
    let mut at = 0;
    loop {
        while at < bytes.len() && !bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        if at == bytes.len() {
            return;
        }
        let start = at;
        let mut capital_inside = false;
        at += 1;
        while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
            capital_inside |= bytes[at].is_ascii_uppercase();
            at += 1;
        }
        match capital_inside {
            // Most words are lowercase, or capitalized: one word, nothing to look at.
            false => each(&text[start..at]),
            true => split_case(&text[start..at], &mut each),
        }
    }
}

/// Calls `each` with the words of a run of letters and digits, split where its case changes.
fn split_case(run: &str, each: &mut impl FnMut(&str)) {
    let mut start = 0;
    let mut previous: Option<char> = None;
    let mut chars = run.char_indices().peekable();
    while let Some((offset, c)) = chars.next() {
        if let Some(previous) = previous
            && c.is_uppercase()
        {
            let next_is_lower = chars.peek().is_some_and(|&(_, next)| next.is_lowercase());
            // `listPull`, and the last capital of `HTTPResponse` or `S3Bucket` starting a word.
            if previous.is_lowercase() || (next_is_lower && (previous.is_uppercase() || previous.is_numeric())) {
                each(&run[start..offset]);
                start = offset;
            }
        }
        previous = Some(c);
    }
    each(&run[start..]);
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
    use serde_json::json;
    use tool_mediator_core::Tool;

    fn tool(name: &str, description: &str, schema: serde_json::Value) -> EnhancedTool {
        EnhancedTool::unchanged(Tool::new(name).with_description(description).with_input_schema(schema))
    }

    fn index(tools: &[EnhancedTool]) -> ToolIndex {
        ToolIndex::new(tools.iter().map(|tool| Document { tool, server: None }))
    }

    #[test]
    fn a_share_weighs_what_the_tool_has_of_the_query_and_not_the_names_it_acts_on() {
        let tools = [
            tool("search_movie", "Search for movies by their title.", json!({})),
            tool("get_movie_credits", "The cast and crew of a movie.", json!({})),
            tool("list_genres", "The genres of movies.", json!({})),
        ];
        let index = index(&tools);
        let share = |query: &str, position: usize| index.weigh(query).share(position);
        assert_eq!(share("search movies", 0), 1.0);
        // A name after the first word, or a number, says nothing of what a tool does.
        assert_eq!(share("search for the movie Titanic of 1997", 0), 1.0);
        // A word no tool has weighs against every tool, as the rarest term.
        let playing = share("play songs of movies", 0);
        assert!(playing > 0.0 && playing < 0.3, "{playing}");
        // A rare term matched weighs more than a common one.
        assert!(share("movie credits", 1) > share("movie credits", 0));
        assert_eq!(share("the", 0), 0.0, "nothing to weigh");
        // A capital starting a sentence, or in a query all in capitals, names nothing.
        assert_eq!(share("Search movies. Play songs", 0), share("search movies play songs", 0));
        assert_eq!(share("SEARCH MOVIES PLAY SONGS", 0), share("search movies play songs", 0));
        assert_eq!(share("Search Movies Play Songs", 0), share("search movies play songs", 0));
        // A word with a digit is a word (`s3`), and a word no tool has counts once.
        assert!(share("search movies in s3", 0) < 1.0);
        assert_eq!(share("play play songs songs movies", 0), share("play songs movies", 0));
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
        assert_eq!(terms("GET_search_person"), ["get", "search", "person"]);
        assert_eq!(terms("HTTPResponse S3Bucket"), ["http", "respons", "s3", "bucket"]);
    }

    /// The index once read `s3` in a description as one word and the query `s3` as `s` and `3`:
    /// a query never found what the text said.
    #[test]
    fn letters_and_digits_are_one_word_in_a_query_as_in_a_tool() {
        let tools = [
            tool("put_object", "Uploads a file to an s3 bucket.", json!({"type": "object"})),
            tool("encode", "Encodes bytes as base64.", json!({"type": "object"})),
            tool("login", "Signs in with oauth2.", json!({"type": "object"})),
            tool("list_s3_buckets", "Lists the buckets.", json!({"type": "object"})),
            tool("noise", "Something else entirely, 3 times.", json!({"type": "object"})),
        ];
        let index = index(&tools);
        let found = |query: &str| -> Vec<usize> {
            let mut found: Vec<usize> = index.search(query, 5).into_iter().map(|(tool, _)| tool).collect();
            found.sort_unstable();
            found
        };
        assert_eq!(found("s3"), [0, 3], "the description's `s3` and the name's");
        assert_eq!(found("base64"), [1]);
        assert_eq!(found("oauth2"), [2]);
        assert_eq!(terms("s3 base64 oauth2"), ["s3", "base64", "oauth2"]);
    }

    #[test]
    fn a_search_among_some_tools_finds_only_those() {
        let tools = [
            tool("delete_repository", "Deletes a repository.", json!({"type": "object"})),
            tool("get_repository", "Gets a repository.", json!({"type": "object"})),
            tool("list_repositories", "Lists repositories.", json!({"type": "object"})),
        ];
        let index = index(&tools);
        let found: Vec<usize> =
            index.search_among("delete repository", 1, |tool| tool != 0).into_iter().map(|(tool, _)| tool).collect();
        assert_eq!(found.len(), 1);
        assert_ne!(found[0], 0, "the tool left out is never found");
    }
}
