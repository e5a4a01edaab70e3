//! What a tool's own listing says its short words mean. For a word of a name that is not a
//! word (`acct` in `get_acct_txns`), candidates come from the tool's description, its
//! parameters, its siblings' names, the source's name, the dictionary and the mined lexicon;
//! each is ranked by where it was found, how well the short word abbreviates it and how common
//! the pair is in real code, and the winner carries that evidence into the provenance.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};
use std::fmt;

use serde_json::Value;

use super::dictionary::{Dictionary, Entry, is_english};
use super::identifier;
use super::lexicon;
use tool_mediator_core::Tool;

/// Where the reading of a short word came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// The spelling out the tools of one listing agreed on.
    Listing,
    Description,
    /// The name or description of one of the tool's parameters.
    Parameter(String),
    /// The name of another tool in the listing.
    Sibling(String),
    /// The name of the server or file the tools came from.
    Source,
    Dictionary,
    /// The abbreviations mined from real code (`rules/lexicon.tsv`).
    Lexicon,
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::Listing => f.write_str("the listing's other names"),
            Evidence::Description => f.write_str("the description"),
            Evidence::Parameter(name) => write!(f, "parameter {name}"),
            Evidence::Sibling(name) => write!(f, "sibling {name}"),
            Evidence::Source => f.write_str("the source's name"),
            Evidence::Dictionary => f.write_str("the dictionary"),
            Evidence::Lexicon => f.write_str("the lexicon"),
        }
    }
}

impl Evidence {
    /// How far this evidence is trusted, before the fit is weighed.
    fn weight(&self) -> f64 {
        match self {
            Evidence::Listing | Evidence::Description => 1.0,
            Evidence::Parameter(_) => 0.95,
            Evidence::Dictionary => 0.85,
            Evidence::Sibling(_) | Evidence::Source => 0.7,
            Evidence::Lexicon => 0.6,
        }
    }

    /// Whether the tool's own listing said it, rather than general knowledge.
    pub fn is_context(&self) -> bool {
        !matches!(self, Evidence::Dictionary | Evidence::Lexicon)
    }
}

/// How well a short word abbreviates a word, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fit {
    /// Its letters in order, vowels among them (`acnt` in "account").
    Subsequence,
    /// The first letter and consonants in order (`msg`, `txt`, `acct`).
    Skeleton,
    /// The word's beginning (`addr`, `calc`).
    Prefix,
}

impl Fit {
    /// How `token` abbreviates `word`, if it does: same first letter, shorter, letters in order.
    /// A two-letter token must keep the word's first consonant after its first letter (`gt`
    /// for "get", `pl` for "plot"): a word that merely starts with it is not evidence enough.
    /// "trans" may be written `x` or `tx` (`xfer`, `txn`), a contraction as good as a skeleton.
    fn of(token: &str, word: &str) -> Option<Fit> {
        if let Some(rest) = word.strip_prefix("trans")
            && (token.starts_with('x') || token.starts_with("tx"))
        {
            let contracted = if token.starts_with('x') { format!("x{rest}") } else { format!("tx{rest}") };
            if contracted == token {
                return Some(Fit::Skeleton);
            }
            return Fit::of_letters(token.as_bytes(), contracted.as_bytes()).map(|fit| fit.min(Fit::Skeleton));
        }
        Fit::of_letters(token.as_bytes(), word.as_bytes())
    }

    /// How `token` abbreviates a word or a phrase: a phrase by its initials (`fd`, "file
    /// descriptor") or its letters in order from the first (`regex`, "regular expression"). A
    /// loose subsequence of one word is no evidence from general knowledge: `cos` is not
    /// "computes".
    fn of_phrase(token: &str, phrase: &str) -> Option<Fit> {
        if !phrase.contains(' ') {
            return Fit::of(token, phrase).filter(|fit| *fit >= Fit::Skeleton);
        }
        let initials: String = phrase.split_whitespace().filter_map(|word| word.chars().next()).collect();
        if initials == token {
            return Some(Fit::Prefix);
        }
        let letters: String = phrase.split_whitespace().collect();
        Fit::of_letters(token.as_bytes(), letters.as_bytes()).map(|_| Fit::Skeleton)
    }

    fn of_letters(t: &[u8], w: &[u8]) -> Option<Fit> {
        if t.len() < 2 || w.len() <= t.len() || t[0] != w[0] || !is_subsequence(t, w) {
            return None;
        }
        if t.len() == 2 && w[1..].iter().find(|c| !is_vowel(**c)) != Some(&t[1]) {
            return None;
        }
        if w.starts_with(t) {
            Some(Fit::Prefix)
        } else if t[1..].iter().all(|c| !is_vowel(*c)) {
            Some(Fit::Skeleton)
        } else {
            Some(Fit::Subsequence)
        }
    }

    fn weight(self) -> f64 {
        match self {
            Fit::Prefix => 1.0,
            Fit::Skeleton => 0.9,
            Fit::Subsequence => 0.6,
        }
    }
}

fn is_vowel(c: u8) -> bool {
    matches!(c, b'a' | b'e' | b'i' | b'o' | b'u')
}

fn is_subsequence(short: &[u8], long: &[u8]) -> bool {
    let mut rest = long.iter();
    short.iter().all(|c| rest.any(|d| d == c))
}

/// A reading a candidate must reach to be taken: a loose subsequence of a word the tool's own
/// description or parameters use passes; of a sibling's word, it does not (`spo` in
/// `get_spo2_data` is not the "snapshot" of `get_snapshot`).
const MIN_SCORE: f64 = 0.5;
/// What the lexicon adds to a candidate it knows the token abbreviates: real code spells it so.
const COMMON_PAIR: f64 = 0.1;

/// The reading a short word is given, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub expansion: String,
    pub evidence: Evidence,
    score: f64,
}

impl Reading {
    fn new(expansion: String, evidence: Evidence, fit: Fit, token: &str) -> Reading {
        let known = lexicon::knows(token, &expansion);
        let score = evidence.weight() * fit.weight() + if known { COMMON_PAIR } else { 0.0 };
        Reading { expansion, evidence, score }
    }

    /// Better: a higher score, then a shorter word.
    fn beats(&self, other: &Reading) -> bool {
        (self.score, std::cmp::Reverse(self.expansion.len())) > (other.score, std::cmp::Reverse(other.expansion.len()))
    }
}

/// The words of the names in one listing and of its source, for reading each name with its
/// siblings; and how many of the names use each word.
#[derive(Debug, Default)]
pub struct SiblingWords {
    /// English words of three letters or more, by first letter, each with the first name
    /// that uses it.
    by_initial: HashMap<char, Vec<(String, String)>>,
    seen: HashSet<String>,
    names_using: HashMap<String, usize>,
    source: Vec<String>,
}

/// A word this many names of one list use is the list's own.
const LIST_WORD_NAMES: usize = 3;

impl SiblingWords {
    /// Adds the words of one name.
    pub fn add_name(&mut self, name: &str, words: &[String]) {
        for (position, word) in words.iter().enumerate() {
            if word.len() > 2 && !self.seen.contains(word) && is_english(word) {
                self.seen.insert(word.clone());
                let initial = word.chars().next().unwrap_or_default();
                self.by_initial.entry(initial).or_default().push((word.clone(), name.to_owned()));
            }
            if !words[..position].contains(word) {
                *self.names_using.entry(word.clone()).or_default() += 1;
            }
        }
    }

    /// Adds the words of the source's name (`stripe`, `google-calendar`).
    pub fn add_source(&mut self, source: &str) {
        self.source = identifier::words(source).into_iter().filter(|word| word.len() > 2 && is_english(word)).collect();
    }

    fn starting_with(&self, initial: char) -> &[(String, String)] {
        self.by_initial.get(&initial).map(Vec::as_slice).unwrap_or_default()
    }
}

/// Words a tool uses about itself: its description, its parameters, its siblings' names. The
/// rules look here before the dictionary (`gt_usr` described as "gets user"). Words are split
/// out only when a name has a word the rules do not know.
#[derive(Debug, Default)]
pub struct Context<'a> {
    tool: Option<&'a Tool>,
    siblings: Option<&'a SiblingWords>,
    /// Abbreviations whose spelling out the list agreed on: one word, one expansion.
    agreed: Option<&'a HashMap<String, String>>,
    description: OnceCell<Vec<String>>,
    /// Each parameter's name and the words of its name and description.
    parameters: OnceCell<Vec<(String, Vec<String>)>>,
}

impl<'a> Context<'a> {
    pub fn of(tool: &'a Tool, siblings: &'a SiblingWords) -> Self {
        Context { tool: Some(tool), siblings: Some(siblings), ..Context::default() }
    }

    /// The context with the expansions a list agreed on, which win over the tool's own.
    pub fn agreeing(self, agreed: &'a HashMap<String, String>) -> Self {
        Context { agreed: Some(agreed), ..self }
    }

    fn description(&self) -> &[String] {
        self.description.get_or_init(|| {
            self.tool.and_then(|tool| tool.description.as_deref()).map(identifier::words).unwrap_or_default()
        })
    }

    fn parameters(&self) -> &[(String, Vec<String>)] {
        self.parameters.get_or_init(|| self.tool.map(parameter_words).unwrap_or_default())
    }

    /// Whether the tool's description or parameters use `word` itself.
    pub fn mentions(&self, word: &str) -> bool {
        self.description().iter().any(|w| w == word)
            || self.parameters().iter().any(|(_, words)| words.iter().any(|w| w == word))
    }

    /// The description words `token` is the initials of (`pca` in "Principal component
    /// analysis", `nist` in "National Institute of Standards and Technology"): an acronym the
    /// tool explains. Little words the initials skip may sit between them.
    pub fn initials_in_description(&self, token: &str) -> Option<String> {
        let letters = token.as_bytes();
        if letters.len() < 2 || letters.len() > MAX_INITIALS || !letters.iter().all(u8::is_ascii_lowercase) {
            return None;
        }
        let words = self.description();
        (0..words.len())
            .filter(|&start| !SKIPPED_IN_INITIALS.contains(&words[start].as_str()))
            .find_map(|start| initials(letters, &words[start..]).map(|taken| taken.join(" ")))
    }

    /// Whether `word` is the list's own: enough of its names use it.
    pub fn is_list_word(&self, word: &str) -> bool {
        self.siblings.and_then(|siblings| siblings.names_using.get(word)).is_some_and(|&names| names >= LIST_WORD_NAMES)
    }

    /// The spelling out the listing agreed on for `token`.
    pub fn agreed(&self, token: &str) -> Option<Reading> {
        let expansion = self.agreed?.get(token)?;
        Some(Reading { expansion: expansion.clone(), evidence: Evidence::Listing, score: 1.0 })
    }

    /// The best reading of `token` that the tool's listing or general knowledge offers.
    /// `general` lets the dictionary and the lexicon in.
    pub fn best_reading(&self, token: &str, dictionary: &Dictionary, general: bool) -> Option<Reading> {
        self.best_reading_where(token, dictionary, general, |_| true)
    }

    /// The reading of `token`, an English word, when the tool's listing spells it out as a
    /// longer word and real code shortens that word so too (`net` beside "network", `con`
    /// beside "connection"): both kinds of evidence at once, or the word stays itself.
    pub fn confirmed_reading(&self, token: &str, dictionary: &Dictionary) -> Option<Reading> {
        if !lexicon::shortens(token) {
            return None;
        }
        self.best_reading_where(token, dictionary, false, |reading| lexicon::knows(token, &reading.expansion))
    }

    fn best_reading_where(
        &self,
        token: &str,
        dictionary: &Dictionary,
        general: bool,
        accept: impl Fn(&Reading) -> bool,
    ) -> Option<Reading> {
        let first = token.chars().next()?;
        let mut best: Option<Reading> = None;
        let mut consider = |candidate: Reading| {
            if candidate.score >= MIN_SCORE
                && accept(&candidate)
                && best.as_ref().is_none_or(|best| candidate.beats(best))
            {
                best = Some(candidate);
            }
        };
        for word in self.description() {
            if let Some((form, fit)) = fitting_form(token, word) {
                consider(Reading::new(form, Evidence::Description, fit, token));
            }
        }
        for (name, words) in self.parameters() {
            for word in words {
                if let Some((form, fit)) = fitting_form(token, word) {
                    consider(Reading::new(form, Evidence::Parameter(name.clone()), fit, token));
                }
            }
        }
        if let Some(siblings) = self.siblings
            && token.len() >= 3
        {
            for (word, name) in siblings.starting_with(first) {
                if let Some((form, fit)) = fitting_form(token, word) {
                    consider(Reading::new(form, Evidence::Sibling(name.clone()), fit, token));
                }
            }
            for word in &siblings.source {
                if let Some((form, fit)) = fitting_form(token, word) {
                    consider(Reading::new(form, Evidence::Source, fit, token));
                }
            }
        }
        if general {
            if let Some(Entry::Expand(expansion)) = dictionary.get(token) {
                consider(Reading::new(expansion.clone(), Evidence::Dictionary, Fit::Prefix, token));
            }
            if let Some(expansion) = lexicon::expansion_of(token)
                && let Some(fit) = Fit::of_phrase(token, expansion)
            {
                consider(Reading::new(expansion.to_owned(), Evidence::Lexicon, fit, token));
            }
        }
        best
    }
}

/// The words of `words`' beginning whose initials are `letters`, skipping little words that
/// do not start the next letter; a little word that does may be taken or skipped.
fn initials<'w>(letters: &[u8], words: &'w [String]) -> Option<Vec<&'w str>> {
    let Some((&letter, rest)) = letters.split_first() else { return Some(Vec::new()) };
    let (word, following) = words.split_first()?;
    let little = SKIPPED_IN_INITIALS.contains(&word.as_str());
    if word.as_bytes().first() == Some(&letter)
        && let Some(mut taken) = initials(rest, following)
    {
        taken.insert(0, word.as_str());
        return Some(taken);
    }
    if little { initials(letters, following) } else { None }
}

/// Acronyms longer than this are not looked for in descriptions.
const MAX_INITIALS: usize = 8;

/// Words the initials of an acronym skip (`nist`: National Institute *of* Standards *and*
/// Technology).
const SKIPPED_IN_INITIALS: &[&str] = &["of", "and", "the", "for", "a", "an", "in", "on", "to"];

/// `word` or its stem, whichever is the shortest English word that `token` still abbreviates,
/// with how well it fits.
fn fitting_form(token: &str, word: &str) -> Option<(String, Fit)> {
    let contraction = word.starts_with("trans") && token.starts_with('x');
    if word.len() <= token.len() || (word.as_bytes().first() != token.as_bytes().first() && !contraction) {
        return None;
    }
    let mut best: Option<(String, Fit)> = None;
    let mut consider = |form: String| {
        if form.len() > token.len()
            && is_english(&form)
            && let Some(fit) = Fit::of(token, &form)
            && best.as_ref().is_none_or(|(known, known_fit)| {
                (fit, std::cmp::Reverse(form.len())) > (*known_fit, std::cmp::Reverse(known.len()))
            })
        {
            best = Some((form, fit));
        }
    };
    consider(word.to_owned());
    if !token.ends_with('s') {
        for (suffix, replacement) in [("s", ""), ("es", ""), ("ed", ""), ("d", ""), ("ing", ""), ("ing", "e")] {
            if let Some(stem) = word.strip_suffix(suffix) {
                consider(format!("{stem}{replacement}"));
            }
        }
    }
    best
}

/// Each top-level parameter's name with the words of its name and its description.
fn parameter_words(tool: &Tool) -> Vec<(String, Vec<String>)> {
    let Some(schema) = tool.input_schema_value() else { return Vec::new() };
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    properties
        .iter()
        .take(MAX_PARAMETERS)
        .map(|(name, property)| {
            let mut words = identifier::words(name);
            if let Some(description) = property.get("description").and_then(Value::as_str) {
                words.extend(identifier::words(description));
            }
            (name.clone(), words)
        })
        .collect()
}

/// The parameters whose words are read; a tool with more says what it means in the first ones.
const MAX_PARAMETERS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_follow_how_people_shorten_words() {
        assert_eq!(Fit::of("addr", "address"), Some(Fit::Prefix));
        assert_eq!(Fit::of("acct", "account"), Some(Fit::Skeleton));
        assert_eq!(Fit::of("msg", "message"), Some(Fit::Skeleton));
        assert_eq!(Fit::of("usr", "user"), Some(Fit::Skeleton));
        assert_eq!(Fit::of("acont", "account"), Some(Fit::Subsequence));
        assert_eq!(Fit::of("gt", "get"), Some(Fit::Skeleton));
        assert_eq!(Fit::of("de", "delete"), None, "a two-letter start is no evidence");
        assert_eq!(Fit::of("txn", "transaction"), Some(Fit::Skeleton));
        assert_eq!(Fit::of("xfer", "transfer"), Some(Fit::Skeleton));
        assert_eq!(Fit::of("tx", "transaction"), Some(Fit::Skeleton));
        assert_eq!(Fit::of("sr", "user"), None, "the first letter is kept");
        assert_eq!(Fit::of("user", "user"), None);
    }
}
