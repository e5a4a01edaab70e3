//! What the rules know about words: English words, abbreviations and their expansions, and
//! acronyms that stay as they are.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use serde::Deserialize;

use tool_mediator_core::Place;

const BUILT_IN: &str = include_str!("abbreviations.json");
const WORDS: &str = include_str!("words.txt");

static ENGLISH: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| WORDS.lines().filter(|line| !line.starts_with('#') && !line.is_empty()).collect());

/// Whether `word` (lowercase) is an English word.
pub fn is_english(word: &str) -> bool {
    ENGLISH.contains(word)
}

/// What the dictionary says of one lowercase token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A cryptic abbreviation: expanded in names and in readings (`usr` -> `user`).
    Expand(String),
    /// A conventional short form: kept in names, expanded in readings (`repo` -> `repository`).
    Read(String),
    /// An acronym or term that stays as it is (`id`, `url`, `json`).
    Keep,
}

/// The abbreviation dictionary: the built-in one, extended by users' files.
#[derive(Debug, Clone)]
pub struct Dictionary {
    entries: HashMap<String, Entry>,
    acronyms: HashSet<String>,
}

/// A dictionary file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum DictionaryError {
    #[error("cannot read dictionary {path}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}{place}: {message}")]
    Syntax { path: PathBuf, place: Place, message: String },
    #[error("{path}: `{pointer}`: {message}")]
    Entry { path: PathBuf, pointer: String, message: String },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DictionaryFile {
    #[serde(rename = "$comment", default)]
    _comment: Option<String>,
    #[serde(default)]
    expand: HashMap<String, String>,
    #[serde(default)]
    read: HashMap<String, String>,
    #[serde(default)]
    keep: Vec<String>,
    #[serde(default)]
    acronyms: Vec<String>,
}

impl Default for Dictionary {
    fn default() -> Self {
        Dictionary::built_in()
    }
}

impl Dictionary {
    /// The dictionary shipped with the crate.
    pub fn built_in() -> Dictionary {
        let mut dictionary = Dictionary { entries: HashMap::new(), acronyms: HashSet::new() };
        dictionary
            .merge_str(BUILT_IN, Path::new("<built-in abbreviations.json>"))
            .expect("the built-in dictionary is checked by a test");
        dictionary
    }

    /// An empty dictionary, for measuring what the rules do without one.
    pub fn empty() -> Dictionary {
        Dictionary { entries: HashMap::new(), acronyms: HashSet::new() }
    }

    /// Adds the entries of a user's file
    /// (`{"expand": {..}, "read": {..}, "keep": [..], "acronyms": [..]}`);
    /// they win over entries already present.
    pub fn merge_file(&mut self, path: &Path) -> Result<(), DictionaryError> {
        let text = crate::read::read_settings(path)
            .map_err(|source| DictionaryError::Read { path: path.to_owned(), source })?;
        self.merge_str(&text, path)
    }

    pub fn merge_str(&mut self, text: &str, path: &Path) -> Result<(), DictionaryError> {
        let file: DictionaryFile =
            tool_mediator_core::json::from_str_as(text).map_err(|error| DictionaryError::Syntax {
                path: path.to_owned(),
                place: Place::of_json_error(text, &error),
                message: tool_mediator_core::json::message(&error),
            })?;
        let entry_error = |pointer: String, message: &str| DictionaryError::Entry {
            path: path.to_owned(),
            pointer,
            message: message.to_owned(),
        };
        for (section, map) in [("expand", &file.expand), ("read", &file.read)] {
            for (abbreviation, expansion) in map {
                let pointer = format!("/{section}/{}", tool_mediator_core::schema::escape(abbreviation));
                if !is_token(abbreviation) {
                    return Err(entry_error(pointer, "an abbreviation is one lowercase word of a-z and 0-9"));
                }
                if expansion.trim().is_empty() {
                    return Err(entry_error(pointer, "the expansion is empty"));
                }
            }
        }
        for (section, words) in [("keep", &file.keep), ("acronyms", &file.acronyms)] {
            for (index, word) in words.iter().enumerate() {
                if !is_token(word) {
                    return Err(entry_error(
                        format!("/{section}/{index}"),
                        "a word here is one lowercase word of a-z and 0-9",
                    ));
                }
            }
        }
        for (abbreviation, expansion) in file.expand {
            self.entries.insert(abbreviation, Entry::Expand(expansion.to_lowercase()));
        }
        for (abbreviation, expansion) in file.read {
            self.entries.insert(abbreviation, Entry::Read(expansion.to_lowercase()));
        }
        for word in file.keep {
            self.entries.insert(word, Entry::Keep);
        }
        for word in file.acronyms {
            self.entries.insert(word.clone(), Entry::Keep);
            self.acronyms.insert(word);
        }
        Ok(())
    }

    pub fn get(&self, token: &str) -> Option<&Entry> {
        self.entries.get(token)
    }

    /// Whether `word` is known, as an English word or any dictionary entry or expansion.
    pub fn knows(&self, word: &str) -> bool {
        is_english(word) || self.entries.contains_key(word)
    }

    /// Whether `word` is written in capitals in prose (`id` -> `ID`).
    pub fn is_acronym(&self, word: &str) -> bool {
        self.acronyms.contains(word)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn is_token(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_dictionary_loads() {
        let dictionary = Dictionary::built_in();
        assert_eq!(dictionary.get("usr"), Some(&Entry::Expand("user".into())));
        assert_eq!(dictionary.get("repo"), Some(&Entry::Read("repository".into())));
        assert_eq!(dictionary.get("json"), Some(&Entry::Keep));
    }

    #[test]
    fn english_words_are_known() {
        assert!(is_english("user"));
        assert!(is_english("gets"));
        assert!(!is_english("usr"));
    }

    #[test]
    fn user_entries_win_and_errors_point() {
        let mut dictionary = Dictionary::built_in();
        dictionary.merge_str(r#"{"expand": {"usr": "username"}, "keep": ["chascr"]}"#, Path::new("mine.json")).unwrap();
        assert_eq!(dictionary.get("usr"), Some(&Entry::Expand("username".into())));
        let error = dictionary.merge_str("{\n  \"expand\": {\"a\": 1}\n}", Path::new("bad.json")).unwrap_err();
        assert!(matches!(error, DictionaryError::Syntax { place: Place::At { line: 2, .. }, .. }), "{error}");
        let error = dictionary.merge_str(r#"{"read": {"Bad Key": "x"}}"#, Path::new("bad.json")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "bad.json: `/read/Bad Key`: an abbreviation is one lowercase word of a-z and 0-9"
        );
    }
}
