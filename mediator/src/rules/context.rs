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
    /// The spelling out the tools of one listing agreed on, as the named tool's own words read it.
    Listing(String),
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
            Evidence::Listing(name) => write!(f, "the listing, as {name} reads it"),
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
            Evidence::Listing(_) | Evidence::Description => 1.0,
            Evidence::Parameter(_) => 0.95,
            Evidence::Dictionary => 0.85,
            Evidence::Sibling(_) | Evidence::Source => 0.7,
            Evidence::Lexicon => 0.6,
        }
    }

    /// Whether a reading on this evidence may be written into the name. General knowledge of
    /// code (the lexicon) only reads a word; so does the source's name, which `lint` does not
    /// know and a file's name may set by chance.
    pub fn renames(&self) -> bool {
        !matches!(self, Evidence::Source | Evidence::Lexicon)
    }

    /// Whether the tool's own listing said it, rather than general knowledge.
    pub fn is_listing(&self) -> bool {
        !matches!(self, Evidence::Dictionary | Evidence::Lexicon)
    }
}

/// How well a short word abbreviates a word, weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fit {
    /// Its letters in order, vowels among them (`acont` in "account").
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
    /// The few contractions code writes with an `x` (`txn`, `xfer`) fit as well as a skeleton.
    fn of(token: &str, word: &str) -> Option<Fit> {
        if let Some(contracted) = contraction(token) {
            return (contracted == word).then_some(Fit::Skeleton);
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

/// The word a contraction with an `x` stands for (`txns` -> "transactions"); no other word
/// starting "trans" is written so (`xl` is not "translate" because of it).
fn contraction(token: &str) -> Option<String> {
    const CONTRACTIONS: &[(&str, &str)] = &[
        ("tx", "transaction"),
        ("txn", "transaction"),
        ("trx", "transaction"),
        ("xfer", "transfer"),
        ("xmit", "transmit"),
        ("xlate", "translate"),
        ("xform", "transform"),
        ("xport", "transport"),
    ];
    let find = |short: &str| CONTRACTIONS.iter().find(|(known, _)| *known == short).map(|(_, word)| *word);
    match find(token) {
        Some(word) => Some(word.to_owned()),
        None => token.strip_suffix('s').and_then(find).map(|word| format!("{word}s")),
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
/// What the lexicon adds to a candidate from the tool's listing that it knows the token
/// abbreviates (real code spells it so): it tips a tie among the tool's own words, and never
/// lifts general knowledge over them.
const COMMON_PAIR: f64 = 0.1;

/// The reading a short word is given, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    pub expansion: String,
    pub evidence: Evidence,
    fit: Fit,
    score: f64,
}

impl Reading {
    fn new(expansion: String, evidence: Evidence, fit: Fit, token: &str) -> Reading {
        let known = evidence.is_listing() && lexicon::knows(token, &expansion);
        let score = evidence.weight() * fit.weight() + if known { COMMON_PAIR } else { 0.0 };
        Reading { expansion, evidence, fit, score }
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
    /// Abbreviations whose spelling out the list agreed on: one word, one expansion, with the
    /// name of a tool whose own words read it so.
    agreed: Option<&'a Agreed>,
    description: OnceCell<Vec<String>>,
    /// The distinct words of the description and the parameters (names and descriptions),
    /// each with where it was first met; and the same words as a set.
    own_words: OnceCell<OwnWords>,
}

/// The distinct words a tool uses about itself, in order with where each was first met, and
/// as a set.
#[derive(Debug, Default)]
struct OwnWords {
    words: Vec<(String, Evidence)>,
    set: HashSet<String>,
}

/// What a listing agreed a short word reads as: the word, and a tool whose own words read it so.
pub type Agreed = HashMap<String, (String, String)>;

impl<'a> Context<'a> {
    pub fn of(tool: &'a Tool, siblings: &'a SiblingWords) -> Self {
        Context { tool: Some(tool), siblings: Some(siblings), ..Context::default() }
    }

    /// The context with the expansions a list agreed on, which win over the tool's own.
    pub fn agreeing(self, agreed: &'a Agreed) -> Self {
        Context { agreed: Some(agreed), ..self }
    }

    fn description(&self) -> &[String] {
        self.description.get_or_init(|| {
            self.tool.and_then(|tool| tool.description.as_deref()).map(identifier::words).unwrap_or_default()
        })
    }

    fn own_words(&self) -> &[(String, Evidence)] {
        &self.own_word_set().words
    }

    fn own_word_set(&self) -> &OwnWords {
        self.own_words.get_or_init(|| {
            let mut seen = HashSet::new();
            let mut words = Vec::new();
            let mut add = |word: &str, evidence: &Evidence| {
                if words.len() < MAX_OWN_WORDS && seen.insert(word.to_owned()) {
                    words.push((word.to_owned(), evidence.clone()));
                }
            };
            for word in self.description() {
                add(word, &Evidence::Description);
            }
            for (name, parameter) in self.tool.map(parameter_words).unwrap_or_default() {
                let evidence = Evidence::Parameter(name);
                for word in &parameter {
                    add(word, &evidence);
                }
            }
            OwnWords { words, set: seen }
        })
    }

    /// Whether the tool's description or parameters use `word` itself, or a form of it
    /// (`add` in "Adds an item").
    pub fn mentions(&self, word: &str) -> bool {
        // The parameters are read only when the schema's text holds the word at all.
        let stem = word.strip_suffix('e').unwrap_or(word);
        let in_schema =
            self.tool.and_then(|tool| tool.input_schema.as_ref()).is_some_and(|schema| schema.as_str().contains(stem));
        if !in_schema {
            return self.description().iter().any(|own| is_form_of(own, word));
        }
        let set = &self.own_word_set().set;
        if set.is_empty() {
            return false;
        }
        let mut form = String::with_capacity(word.len() + 3);
        let mut has = |stem: &str, ending: &str| {
            form.clear();
            form.push_str(stem);
            form.push_str(ending);
            set.contains(&form)
        };
        ["", "s", "es", "ed", "d", "ing"].iter().any(|ending| has(word, ending))
            || word.strip_suffix('e').is_some_and(|stem| has(stem, "ing"))
    }

    /// Whether the tool's listing uses `token` or a word it begins (`subscr` beside
    /// "subscription"): such a token is a word cut short, not words written together.
    pub fn explains(&self, token: &str) -> bool {
        let begins = |word: &str| word.len() > token.len() && word.starts_with(token);
        self.mentions(token)
            || self.own_words().iter().any(|(word, _)| begins(word))
            || token.chars().next().is_some_and(|first| {
                self.siblings.is_some_and(|siblings| siblings.starting_with(first).iter().any(|(word, _)| begins(word)))
            })
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
        // Acronyms name things: a phrase read off the sentence's verb ("Gets a ticket", "Gets
        // ticket" for `gt`) is no spelling out. A verb is the sentence's when an article follows
        // it, or when it opens the description in the third person; "Load balancer" and "the
        // process tree" are things.
        let verb_form = |word: &str| {
            ["", "s", "es"].iter().any(|ending| word.strip_suffix(ending).is_some_and(super::describe::is_verb))
        };
        let sentence_verb = |start: usize| {
            let word = words[start].as_str();
            let article = words.get(start + 1).is_some_and(|next| ["a", "an", "the"].contains(&next.as_str()));
            (article || (start == 0 && word.ends_with('s'))) && verb_form(word)
        };
        (0..words.len())
            .filter(|&start| !SKIPPED_IN_INITIALS.contains(&words[start].as_str()))
            .filter(|&start| !sentence_verb(start))
            .find_map(|start| initials(letters, &words[start..]))
    }

    /// Whether `word` is the list's own: enough of its names use it.
    pub fn is_list_word(&self, word: &str) -> bool {
        self.siblings.and_then(|siblings| siblings.names_using.get(word)).is_some_and(|&names| names >= LIST_WORD_NAMES)
    }

    /// The spelling out the listing agreed on for `token`.
    pub fn agreed(&self, token: &str) -> Option<Reading> {
        let (expansion, voucher) = self.agreed?.get(token)?;
        let evidence = Evidence::Listing(voucher.clone());
        Some(Reading { expansion: expansion.clone(), evidence, fit: Fit::Prefix, score: 1.0 })
    }

    /// The best reading of `token` that the tool's listing or general knowledge offers.
    /// `general` lets the dictionary and the lexicon in.
    pub fn best_reading(&self, token: &str, dictionary: &Dictionary, general: bool) -> Option<Reading> {
        self.best_reading_where(token, dictionary, general, |_| true)
    }

    /// The reading of `token`, an English word, when the tool's own description or parameters
    /// spell it out as a longer word that it begins or skeletons and real code shortens that
    /// word so too (`net` beside "network", `con` beside "connection"): both kinds of evidence
    /// at once, or the word stays itself.
    pub fn confirmed_reading(&self, token: &str, dictionary: &Dictionary) -> Option<Reading> {
        // Most tools' text has none of the words: the description's words and the schema's
        // text say so before the parameters are read.
        let schema = self.tool.and_then(|tool| tool.input_schema.as_ref()).map(|schema| schema.as_str()).unwrap_or("");
        let written = |word: &str| self.description().iter().any(|own| own.starts_with(word)) || schema.contains(word);
        if !lexicon::short_for(token).any(written) {
            return None;
        }
        self.best_reading_where(token, dictionary, false, |reading| {
            matches!(reading.evidence, Evidence::Description | Evidence::Parameter(_))
                && reading.fit >= Fit::Skeleton
                && lexicon::used_short_for(token, &reading.expansion)
        })
    }

    fn best_reading_where(
        &self,
        token: &str,
        dictionary: &Dictionary,
        general: bool,
        accept: impl Fn(&Reading) -> bool,
    ) -> Option<Reading> {
        let first = token.chars().next()?;
        let contracted = contraction(token).is_some();
        let mut best: Option<Reading> = None;
        let mut consider = |candidate: Reading| {
            if candidate.score >= MIN_SCORE
                && accept(&candidate)
                && best.as_ref().is_none_or(|best| candidate.beats(best))
            {
                best = Some(candidate);
            }
        };
        for (word, evidence) in self.own_words() {
            if (contracted || word.starts_with(first))
                && let Some((form, fit)) = fitting_form(token, word)
            {
                consider(Reading::new(form, evidence.clone(), fit, token));
            }
        }
        // A sibling's or the source's word is taken when the token begins it, or when real
        // code shortens it so: a skeleton alone catches acronyms (`btc` is not "batch").
        let near = |form: &str, fit: Fit| fit == Fit::Prefix || lexicon::knows(token, form);
        if let Some(siblings) = self.siblings
            && token.len() >= 3
        {
            for (word, name) in siblings.starting_with(first) {
                if let Some((form, fit)) = fitting_form(token, word).filter(|(form, fit)| near(form, *fit)) {
                    consider(Reading::new(form, Evidence::Sibling(name.clone()), fit, token));
                }
            }
            for word in &siblings.source {
                if let Some((form, fit)) = fitting_form(token, word).filter(|(form, fit)| near(form, *fit)) {
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

/// Whether `form` is `word` or `word` with an ending (`adds`, `added`, `saving` for "save").
fn is_form_of(form: &str, word: &str) -> bool {
    form == word
        || form.strip_prefix(word).is_some_and(|ending| ["s", "es", "ed", "d", "ing"].contains(&ending))
        || word.strip_suffix('e').is_some_and(|stem| form.strip_prefix(stem) == Some("ing"))
}

/// The description words whose initials are `letters`, from the first of `words`: each word
/// that starts the next letter is taken, little words that do not are skipped. Greedy, so
/// linear in the words.
fn initials(letters: &[u8], words: &[String]) -> Option<String> {
    let mut taken: Vec<&str> = Vec::with_capacity(letters.len());
    for word in words {
        if taken.len() == letters.len() {
            break;
        }
        if word.as_bytes().first() == Some(&letters[taken.len()]) {
            taken.push(word);
        } else if taken.is_empty() || !SKIPPED_IN_INITIALS.contains(&word.as_str()) {
            return None;
        }
    }
    (taken.len() == letters.len()).then(|| taken.join(" "))
}

/// Acronyms longer than this are not looked for in descriptions.
const MAX_INITIALS: usize = 8;

/// The most words of its own a tool's context holds; a tool says what it means early.
const MAX_OWN_WORDS: usize = 1024;

/// Words the initials of an acronym skip (`nist`: National Institute *of* Standards *and*
/// Technology).
const SKIPPED_IN_INITIALS: &[&str] = &["of", "and", "the", "for", "a", "an", "in", "on", "to"];

/// `word` or its stem, whichever is the shortest English word that `token` still abbreviates,
/// with how well it fits.
fn fitting_form(token: &str, word: &str) -> Option<(String, Fit)> {
    let contracted = contraction(token).is_some();
    if word.len() <= token.len() || (word.as_bytes().first() != token.as_bytes().first() && !contracted) {
        return None;
    }
    // Which form wins among those that fit as well: a plural's or a verb's stem (`gets`:
    // "get", `properties`: "property", `generating`: "generate"), then the word as written,
    // then the stem of a past form, which names use as an adjective (`related`, not "relate").
    let mut best: Option<(String, Fit, u8)> = None;
    let mut consider = |form: String, rank: u8| {
        if form.len() > token.len()
            && is_english(&form)
            && let Some(fit) = Fit::of(token, &form)
            && best.as_ref().is_none_or(|(known, known_fit, known_rank)| {
                (fit, std::cmp::Reverse(rank), std::cmp::Reverse(form.len()))
                    > (*known_fit, std::cmp::Reverse(*known_rank), std::cmp::Reverse(known.len()))
            })
        {
            best = Some((form, fit, rank));
        }
    };
    consider(word.to_owned(), 1);
    if !token.ends_with('s') {
        for (suffix, replacement, rank) in
            [("s", "", 0), ("es", "", 0), ("ies", "y", 0), ("ing", "", 0), ("ing", "e", 0), ("ed", "", 2), ("d", "", 2)]
        {
            if let Some(stem) = word.strip_suffix(suffix) {
                consider(format!("{stem}{replacement}"), rank);
            }
        }
    }
    best.map(|(form, fit, _)| (form, fit))
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
                words.extend(identifier::words(description).into_iter().take(MAX_PARAMETER_WORDS));
            }
            (name.clone(), words)
        })
        .collect()
}

/// The parameters whose words are read; a tool with more says what it means in the first ones.
const MAX_PARAMETERS: usize = 64;
/// The words of one parameter's description that are read.
const MAX_PARAMETER_WORDS: usize = 64;

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
