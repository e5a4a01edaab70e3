//! Reading a tool name: which words it is made of, what its abbreviations stand for, and the
//! name with its cryptic abbreviations spelled out.

use serde::Serialize;

use super::compound;
use super::context::{Context, Evidence, Reading};
use super::dictionary::{Dictionary, Entry, is_english};
use super::identifier::{self, Case};
use super::lexicon;
use tool_mediator_core::Expansion;

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
    /// A conventional short form, a list's own word or what only general knowledge of code
    /// reads, kept in the name (`repo` reads as `repository`).
    Conventional(String, Evidence),
    /// An abbreviation spelled out in the name (`usr` -> `user` from the dictionary, `gt` in
    /// "gets user" -> `get` from the description).
    Expanded(String, Evidence),
    /// A capitalized acronym in a mixed-case name (`NNTP` in `getNNTPServer`).
    Acronym,
    Unknown,
}

impl Sense {
    /// The expansion written into the name, if this sense renames.
    fn renames_to(&self) -> Option<&str> {
        match self {
            Sense::Expanded(expansion, _) => Some(expansion),
            _ => None,
        }
    }

    /// What the word is read as, when more than itself.
    fn reads_as(&self) -> Option<&str> {
        self.reading().map(|(expansion, _)| expansion)
    }

    /// What the word is read as in a description written from the name.
    fn describes_as(&self) -> Option<&str> {
        self.reading().filter(|(_, evidence)| **evidence != Evidence::Lexicon).map(|(expansion, _)| expansion)
    }

    fn reading(&self) -> Option<(&str, &Evidence)> {
        match self {
            Sense::Expanded(expansion, evidence) | Sense::Conventional(expansion, evidence) => {
                Some((expansion, evidence))
            }
            _ => None,
        }
    }

    /// How much of the word's meaning the reading is sure of: the tool's own words and the
    /// dictionary more than general knowledge.
    fn weight(&self) -> f64 {
        match self {
            Sense::Number | Sense::Word | Sense::Kept => 1.0,
            Sense::Conventional(_, Evidence::Lexicon) => 0.8,
            Sense::Conventional(..) => 1.0,
            Sense::Expanded(_, Evidence::Dictionary) => 0.9,
            Sense::Expanded(..) | Sense::Acronym => 0.8,
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
    /// Each word read as more than itself, with where that reading came from; the name spells
    /// out those [`NameReading::expansions`] lists and keeps the rest.
    pub readings: Vec<Expansion>,
    #[serde(skip)]
    senses: Vec<Sense>,
}

impl NameReading {
    /// Reads `name`. Names longer than 256 characters are not read.
    pub fn read(name: &str, dictionary: &Dictionary, context: &Context<'_>) -> NameReading {
        if name.len() > MAX_NAME_LEN {
            return NameReading::unread(name);
        }
        let written = identifier::split(name);
        let whole: Vec<_> = written.iter().map(|token| token.span.clone()).collect();
        let tokens = compound::split_compounds(written, dictionary, |word| context.explains(word));
        let mixed_case = name.chars().any(char::is_lowercase);
        let mut senses = Vec::with_capacity(tokens.len());
        let mut words = Vec::with_capacity(tokens.len());
        for token in &tokens {
            let word = token.text.to_lowercase();
            let is_acronym = mixed_case && token.text.len() > 1 && Case::of(token.text) == Case::Upper;
            let in_compound = !whole.contains(&token.span);
            senses.push(sense_of(&word, is_acronym, in_compound, dictionary, context));
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
                // General knowledge alone does not write descriptions or choose categories.
                let expansion = sense.describes_as().unwrap_or(word);
                expansion.split_whitespace().map(str::to_owned).collect::<Vec<_>>()
            })
            .collect();
        let confidence =
            if senses.is_empty() { 0.0 } else { senses.iter().map(Sense::weight).sum::<f64>() / senses.len() as f64 };
        let readings = words
            .iter()
            .zip(&senses)
            .filter_map(|(word, sense)| {
                let (expansion, evidence) = sense.reading()?;
                Some(Expansion { word: word.clone(), expansion: expansion.to_owned(), evidence: evidence.to_string() })
            })
            .collect();
        let mut reading = NameReading {
            input: name.to_owned(),
            words,
            expanded_words,
            name: renamed,
            description: None,
            confidence,
            readings,
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
            readings: Vec::new(),
            senses: Vec::new(),
        }
    }

    /// What the rules read the `index`th word as, when they read it as more than itself.
    pub fn expansion_of(&self, index: usize) -> Option<&str> {
        self.senses.get(index)?.reads_as()
    }

    /// What the `index`th word is read as, with its evidence, when more than itself.
    pub(super) fn reading_of(&self, index: usize) -> Option<(&str, &Evidence)> {
        self.senses.get(index)?.reading()
    }

    /// The words spelled out in the name, each with its evidence.
    pub fn expansions(&self) -> Vec<Expansion> {
        // `readings` holds one entry for each sense that reads as more than its word, in order.
        self.senses
            .iter()
            .filter(|sense| sense.reading().is_some())
            .zip(&self.readings)
            .filter(|(sense, _)| sense.renames_to().is_some())
            .map(|(_, reading)| reading.clone())
            .collect()
    }

    /// Whether reading the name spelled out an abbreviation in it.
    pub fn renames(&self) -> bool {
        self.name != self.input
    }
}

/// A valid MCP name has at most 128 characters; the rules read up to twice that.
pub const MAX_NAME_LEN: usize = 256;

/// How `word` reads. `in_compound` says it is a part of a token written as one word
/// (`usr` in `getusr`): general knowledge alone then reads it without writing it into the
/// name, as a brand name cut at a chance word (`delphi`: `del` + `phi`) must stay as it is.
fn sense_of(word: &str, is_acronym: bool, in_compound: bool, dictionary: &Dictionary, context: &Context<'_>) -> Sense {
    if word.chars().all(|c| c.is_ascii_digit()) {
        return Sense::Number;
    }
    let entry = dictionary.get(word);
    match entry {
        Some(Entry::Keep) => return Sense::Kept,
        Some(Entry::Read(expansion)) => return Sense::Conventional(expansion.clone(), Evidence::Dictionary),
        _ => {}
    }
    if is_english(word) && entry.is_none() {
        // Most words of most names: read as themselves without looking at the context, unless
        // real code uses the word short for a longer one.
        if !lexicon::shortens(word) || context.mentions(word) {
            return Sense::Word;
        }
        let reading = context.agreed(word).or_else(|| context.confirmed_reading(word, dictionary));
        return match reading {
            Some(reading) if in_compound || context.is_list_word(word) => reading.kept(),
            Some(reading) => reading.into(),
            None => Sense::Word,
        };
    }
    if context.mentions(word) {
        return Sense::Word;
    }
    // An acronym the description spells out stays in the name (`pca`), read as it says.
    if let Some(phrase) = context.initials_in_description(word) {
        return Sense::Conventional(phrase, Evidence::Description);
    }
    if word.len() < 2 || !word.chars().all(|c| c.is_ascii_alphabetic()) {
        return if is_acronym { Sense::Acronym } else { Sense::Unknown };
    }
    // A word many names of the list share is the list's own vocabulary (`pl_` for the plots
    // of a plotting library, `sim` for the simulator of a simulator's tools): its users read it
    // as it is. It stays in the name, read as the context spells it out; only what the
    // dictionary says is cryptic (`usr`, `gen`) is spelled out in names whatever the list.
    if entry.is_none() && context.is_list_word(word) {
        return match context.agreed(word).or_else(|| context.best_reading(word, dictionary, false)) {
            Some(reading) => reading.kept(),
            None if is_acronym => Sense::Acronym,
            None => Sense::Unknown,
        };
    }
    match context.agreed(word).or_else(|| context.best_reading(word, dictionary, true)) {
        Some(reading) if in_compound && !reading.evidence.is_listing() => reading.kept(),
        Some(reading) => reading.into(),
        None if is_acronym => Sense::Acronym,
        None => Sense::Unknown,
    }
}

impl From<Reading> for Sense {
    /// A reading written into the name when its evidence may rename, else only read.
    fn from(reading: Reading) -> Sense {
        if reading.evidence.renames() { Sense::Expanded(reading.expansion, reading.evidence) } else { reading.kept() }
    }
}

impl Reading {
    /// The reading kept out of the name: the word stays, read as `expansion`.
    fn kept(self) -> Sense {
        Sense::Conventional(self.expansion, self.evidence)
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
    use super::super::context::SiblingWords;
    use super::*;
    use tool_mediator_core::Tool;

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
