//! Reading a tool name: which words it is made of, what its abbreviations stand for, and the
//! name with its cryptic abbreviations spelled out.

use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::compound;
use super::dictionary::{Dictionary, Entry, is_english};
use super::identifier::{self, Case};
use tool_mediator_core::Tool;

/// Words a tool uses about itself: its description, its parameter names, its siblings' names.
/// The rules look here before the dictionary (`gt_usr` described as "gets user"). Words are
/// split out only when a name has a word the rules do not know.
#[derive(Debug, Default)]
pub struct Context<'a> {
    tool: Option<&'a Tool>,
    siblings: Option<&'a SiblingWords>,
    /// Abbreviations whose spelling out the list agreed on: one word, one expansion.
    agreed: Option<&'a HashMap<String, String>>,
    description: OnceCell<Vec<String>>,
    parameters: OnceCell<Vec<String>>,
}

/// The English words in the names of a batch of tools, by first letter; and how many of the
/// names use each word.
#[derive(Debug, Default)]
pub struct SiblingWords {
    by_initial: HashMap<char, Vec<String>>,
    seen: HashSet<String>,
    names_using: HashMap<String, usize>,
}

/// A word this many names of one list use is the list's own.
const LIST_WORD_NAMES: usize = 3;

impl SiblingWords {
    /// Adds the words of one name.
    pub fn add_name(&mut self, words: &[String]) {
        for (position, word) in words.iter().enumerate() {
            self.add(word);
            if !words[..position].contains(word) {
                *self.names_using.entry(word.clone()).or_default() += 1;
            }
        }
    }

    fn add(&mut self, word: &str) {
        let Some(initial) = word.chars().next() else {
            return;
        };
        if word.len() > 2 && !self.seen.contains(word) && is_english(word) {
            self.seen.insert(word.to_owned());
            self.by_initial.entry(initial).or_default().push(word.to_owned());
        }
    }

    fn starting_with(&self, initial: char) -> &[String] {
        self.by_initial.get(&initial).map(Vec::as_slice).unwrap_or_default()
    }
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

    fn parameters(&self) -> &[String] {
        self.parameters.get_or_init(|| {
            self.tool
                .map(|tool| tool.parameter_names().iter().flat_map(|name| identifier::words(name)).collect())
                .unwrap_or_default()
        })
    }

    fn mentions(&self, word: &str) -> bool {
        self.description().iter().any(|w| w == word) || self.parameters().iter().any(|w| w == word)
    }

    /// Whether `token` is the initials of consecutive description words (`pca` in "Principal
    /// component analysis"): an acronym the tool explains, to keep as it is.
    fn spells_initials(&self, token: &str) -> bool {
        let letters: Vec<char> = token.chars().collect();
        letters.len() >= 2
            && self
                .description()
                .windows(letters.len())
                .any(|words| words.iter().zip(&letters).all(|(word, letter)| word.starts_with(*letter)))
    }

    /// Whether `word` is the list's own: enough of its names use it.
    fn is_list_word(&self, word: &str) -> bool {
        self.siblings.and_then(|siblings| siblings.names_using.get(word)).is_some_and(|&names| names >= LIST_WORD_NAMES)
    }

    /// The word the tool's own description or parameters spell out for `token`.
    fn own_expansion_of(&self, token: &str) -> Option<String> {
        let first = token.chars().next()?;
        [self.description(), self.parameters()].into_iter().find_map(|words| {
            words
                .iter()
                .filter(|word| word.len() > token.len() && word.starts_with(first))
                .filter_map(|word| lemma(word, token))
                .filter(|word| token.len() > 2 || two_letter_match(token, word))
                .min_by_key(|word| (!word.starts_with(token), word.len()))
        })
    }

    /// A word of a sibling tool's name that starts with `token` (three letters or more).
    fn sibling_expansion_of(&self, token: &str) -> Option<String> {
        let first = token.chars().next()?;
        if token.len() < 3 {
            return None;
        }
        let siblings = self.siblings.map(|siblings| siblings.starting_with(first)).unwrap_or_default();
        siblings
            .iter()
            .filter(|word| word.len() > token.len() && word.starts_with(token))
            .filter_map(|word| lemma(word, token))
            .min_by_key(String::len)
    }
}

/// A two-letter abbreviation keeps a word's first letter and the consonant after it
/// (`gt` for "get", `pl` for "plot"); a word that merely starts with it is not evidence enough.
fn two_letter_match(token: &str, word: &str) -> bool {
    let second = token.chars().nth(1);
    word.chars().skip(1).find(|c| !"aeiou".contains(*c)) == second
}

/// `word` or its stem, whichever is the shortest English word that `token` still abbreviates.
fn lemma(word: &str, token: &str) -> Option<String> {
    let mut forms = vec![word.to_owned()];
    if !token.ends_with('s') {
        for (suffix, replacement) in [("s", ""), ("es", ""), ("ed", ""), ("d", ""), ("ing", ""), ("ing", "e")] {
            if let Some(stem) = word.strip_suffix(suffix) {
                forms.push(format!("{stem}{replacement}"));
            }
        }
    }
    forms
        .into_iter()
        .filter(|form| form.len() > token.len() && is_english(form) && is_subsequence(token, form))
        .min_by_key(String::len)
}

fn is_subsequence(short: &str, long: &str) -> bool {
    let mut rest = long.chars();
    short.chars().all(|c| rest.any(|d| d == c))
}

/// How much of a name must be understood before the rules describe it.
const MIN_UNDERSTOOD_TO_DESCRIBE: f64 = 0.5;

/// How one word of a name was understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sense {
    Number,
    /// An English word, or a word the tool's own description or parameters use.
    Word,
    /// A term or acronym the dictionary keeps (`id`, `json`).
    Kept,
    /// A conventional short form, or a list's own word, kept in the name (`repo` reads as
    /// `repository`).
    Conventional(String),
    /// A cryptic abbreviation the dictionary expands (`usr` -> `user`).
    Abbreviation(String),
    /// An abbreviation the tool's context spells out (`gt` in "gets user" -> `get`).
    FromContext(String),
    /// A capitalized acronym in a mixed-case name (`NNTP` in `getNNTPServer`).
    Acronym,
    Unknown,
}

impl Sense {
    /// The expansion written into the name, if this sense renames.
    fn renames_to(&self) -> Option<&str> {
        match self {
            Sense::Abbreviation(expansion) | Sense::FromContext(expansion) => Some(expansion),
            _ => None,
        }
    }

    fn weight(&self) -> f64 {
        match self {
            Sense::Number | Sense::Word | Sense::Kept | Sense::Conventional(_) => 1.0,
            Sense::Abbreviation(_) => 0.9,
            Sense::FromContext(_) | Sense::Acronym => 0.8,
            Sense::Unknown => 0.0,
        }
    }
}

/// How the rules read one tool name. The `names` command prints this, one JSON line a name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NameReading {
    pub input: String,
    /// The name's words, lowercase, as split.
    pub words: Vec<String>,
    /// The words with every abbreviation the rules know spelled out.
    pub expanded_words: Vec<String>,
    /// The name with its cryptic abbreviations spelled out, in the name's own style.
    pub name: String,
    /// A description inferred from the name.
    pub description: Option<String>,
    /// How much of the name the rules understood, from 0 to 1.
    pub confidence: f64,
    #[serde(skip)]
    senses: Vec<Sense>,
}

impl NameReading {
    /// Reads `name`. Names longer than 256 characters are not read.
    pub fn read(name: &str, dictionary: &Dictionary, context: &Context<'_>) -> NameReading {
        if name.len() > MAX_NAME_LEN {
            return NameReading::unread(name);
        }
        let tokens = compound::split_compounds(identifier::split(name), dictionary, |word| context.mentions(word));
        let mixed_case = name.chars().any(char::is_lowercase);
        let mut senses = Vec::with_capacity(tokens.len());
        let mut words = Vec::with_capacity(tokens.len());
        for token in &tokens {
            let word = token.text.to_lowercase();
            let is_acronym = mixed_case && token.text.len() > 1 && Case::of(token.text) == Case::Upper;
            senses.push(sense_of(&word, is_acronym, dictionary, context));
            words.push(word);
        }

        let mut renamed = String::with_capacity(name.len() + 8);
        let mut last = 0;
        for (token, sense) in tokens.iter().zip(&senses) {
            if let Some(expansion) = sense.renames_to() {
                renamed.push_str(&name[last..token.span.start]);
                renamed.push_str(&write_like(token.text, expansion, name));
                last = token.span.end;
            }
        }
        renamed.push_str(&name[last..]);

        let expanded_words = words
            .iter()
            .zip(&senses)
            .flat_map(|(word, sense)| {
                let expansion = match sense {
                    Sense::Abbreviation(e) | Sense::FromContext(e) | Sense::Conventional(e) => e.as_str(),
                    _ => word.as_str(),
                };
                expansion.split_whitespace().map(str::to_owned).collect::<Vec<_>>()
            })
            .collect();
        let confidence =
            if senses.is_empty() { 0.0 } else { senses.iter().map(Sense::weight).sum::<f64>() / senses.len() as f64 };
        let mut reading = NameReading {
            input: name.to_owned(),
            words,
            expanded_words,
            name: renamed,
            description: None,
            confidence,
            senses,
        };
        // A sentence from a name the rules mostly did not understand would only echo it.
        // Neither would a sentence that is just the one word of the name (`echo` -> "Echo.").
        let says_more = reading.expanded_words.len() > 1 || reading.expanded_words != reading.words;
        if reading.confidence >= MIN_UNDERSTOOD_TO_DESCRIBE && says_more {
            reading.description = super::describe::sentence(&reading.expanded_words, dictionary);
        }
        reading
    }

    /// A name the rules did not read: no words, nothing understood.
    fn unread(name: &str) -> NameReading {
        NameReading {
            input: name.to_owned(),
            words: Vec::new(),
            expanded_words: Vec::new(),
            name: name.to_owned(),
            description: None,
            confidence: 0.0,
            senses: Vec::new(),
        }
    }

    /// What the rules read the `index`th word as, when they read it as more than itself.
    pub fn expansion_of(&self, index: usize) -> Option<&str> {
        match self.senses.get(index)? {
            Sense::Abbreviation(expansion) | Sense::FromContext(expansion) | Sense::Conventional(expansion) => {
                Some(expansion)
            }
            _ => None,
        }
    }

    /// Whether reading the name spelled out an abbreviation in it.
    pub fn renames(&self) -> bool {
        self.name != self.input
    }
}

/// A valid MCP name has at most 128 characters; the rules read up to twice that.
pub const MAX_NAME_LEN: usize = 256;

fn sense_of(word: &str, is_acronym: bool, dictionary: &Dictionary, context: &Context<'_>) -> Sense {
    if word.chars().all(|c| c.is_ascii_digit()) {
        return Sense::Number;
    }
    let entry = dictionary.get(word);
    match entry {
        Some(Entry::Keep) => return Sense::Kept,
        Some(Entry::Read(expansion)) => return Sense::Conventional(expansion.clone()),
        _ => {}
    }
    let english = is_english(word);
    if (english && entry.is_none()) || context.mentions(word) || context.spells_initials(word) {
        return Sense::Word;
    }
    // The tool's own words first, then the dictionary, then its siblings' names.
    let abbreviation =
        (!english || entry.is_some()) && word.len() >= 2 && word.chars().all(|c| c.is_ascii_alphabetic());
    // A word many names of the list share is the list's own vocabulary (`pl_` for the plots
    // of a plotting library, `sim` for the simulator of a simulator's tools): its users read it
    // as it is. It stays in the name, read as the context spells it out; only what the
    // dictionary says is cryptic (`usr`, `gen`) is spelled out in names whatever the list.
    if abbreviation && entry.is_none() && context.is_list_word(word) {
        let reading = context
            .agreed
            .and_then(|agreed| agreed.get(word).cloned())
            .or_else(|| context.own_expansion_of(word))
            .or_else(|| context.sibling_expansion_of(word));
        return match reading {
            Some(expansion) => Sense::Conventional(expansion),
            None if is_acronym => Sense::Acronym,
            None => Sense::Unknown,
        };
    }
    if abbreviation && let Some(expansion) = context.agreed.and_then(|agreed| agreed.get(word)) {
        return Sense::FromContext(expansion.clone());
    }
    if abbreviation && let Some(expansion) = context.own_expansion_of(word) {
        return Sense::FromContext(expansion);
    }
    if let Some(Entry::Expand(expansion)) = entry {
        return Sense::Abbreviation(expansion.clone());
    }
    if abbreviation && let Some(expansion) = context.sibling_expansion_of(word) {
        return Sense::FromContext(expansion);
    }
    if english {
        Sense::Word
    } else if is_acronym {
        Sense::Acronym
    } else {
        Sense::Unknown
    }
}

/// `expansion` written the way `token` was written inside `name`.
fn write_like(token: &str, expansion: &str, name: &str) -> String {
    let case = Case::of(token);
    let words: Vec<&str> = expansion.split_whitespace().collect();
    if words.len() == 1 {
        return case.apply(words[0]);
    }
    let separator = ['_', '-', '.'].into_iter().find(|s| name.contains(*s));
    match separator {
        Some(separator) => words.iter().map(|word| case.apply(word)).collect::<Vec<_>>().join(&separator.to_string()),
        None => words
            .iter()
            .enumerate()
            .map(|(i, word)| if i == 0 { case.apply(word) } else { Case::Capitalized.apply(word) })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str) -> NameReading {
        NameReading::read(name, &Dictionary::built_in(), &Context::default())
    }

    fn read_described(name: &str, description: &str) -> NameReading {
        let tool = Tool::new(name).with_description(description);
        let siblings = SiblingWords::default();
        NameReading::read(name, &Dictionary::built_in(), &Context::of(&tool, &siblings))
    }

    #[test]
    fn cryptic_abbreviations_are_spelled_out_in_the_names_style() {
        assert_eq!(read("gt_usr").name, "get_user");
        assert_eq!(read("gtUsr").name, "getUser");
        assert_eq!(read("GT-USR").name, "GET-USER");
        assert_eq!(read("upd_prf").name, "update_profile");
        assert_eq!(read("del").name, "delete");
        assert_eq!(read("admin/usr.lst").name, "admin/user.list");
    }

    #[test]
    fn words_and_conventional_forms_stay() {
        for name in ["get_user", "list_repos", "get_user_by_id", "toURL", "getHTTPResponse", "math.sum", "echo"] {
            assert_eq!(read(name).name, name);
        }
        assert_eq!(read("list_repos").expanded_words, ["list", "repositories"]);
        assert_eq!(read("get_user").confidence, 1.0);
    }

    #[test]
    fn context_comes_before_the_dictionary() {
        let reading = read_described("del", "Delegates a task to a teammate");
        assert_eq!(reading.name, "delegate");
        assert_eq!(read_described("gt_usr", "gets user").name, "get_user");
        assert_eq!(read_described("chg_scr", "changes the screen").name, "change_screen");
    }

    #[test]
    fn words_the_description_uses_are_not_expanded() {
        assert_eq!(read_described("figma_export", "Export a Figma frame").name, "figma_export");
        assert_eq!(read_described("echo", "Echoes back the input").name, "echo");
    }

    #[test]
    fn unknown_words_lower_confidence() {
        let reading = read("zork_qux");
        assert_eq!(reading.name, "zork_qux");
        assert!(reading.confidence < 0.5);
    }
}
