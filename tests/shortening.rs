//! Names shortened the way developers shorten words, with abbreviation lists written by others
//! (`tests/data/eval/abbrev_pairs_*.jsonl`): the shortened-names measure and the tool-choice
//! benchmark degrade real names with them.

use std::collections::HashMap;
use std::ops::Range;

use crate::{eval_dir, json_lines};

/// The lists a name is shortened with, in this order: a word that several lists (or one list
/// several times) abbreviate takes the abbreviation met first.
pub const SOURCES: [(&str, &str); 2] = [
    ("eslint-plugin-unicorn", "abbrev_pairs_unicorn.jsonl"),
    ("abbreviations-in-code", "abbrev_pairs_abbreviations_in_code.jsonl"),
];

/// word -> the abbreviation it is shortened to: the first pair of the lists that names it.
#[derive(Default)]
pub struct Pairs {
    /// The rows read, every list together.
    pub rows: usize,
    pub by_expansion: HashMap<String, String>,
}

impl Pairs {
    /// The pairs of `files` (in `tests/data/eval`), the first list naming a word first.
    pub fn read(files: &[&str]) -> Pairs {
        let mut pairs = Pairs::default();
        for file in files {
            for row in json_lines(&eval_dir().join(file)) {
                let abbreviation = row["abbreviation"].as_str().unwrap().to_owned();
                let expansion = row["expansion"].as_str().unwrap().to_owned();
                pairs.rows += 1;
                pairs.by_expansion.entry(expansion).or_insert(abbreviation);
            }
        }
        pairs
    }
}

/// The words of an identifier and where they sit: split at separators, at lower-to-upper
/// changes, before the last capital of a run followed by a lowercase letter (`HTTPResponse`),
/// and between letters and digits: snake, kebab, camel and Pascal case. The measure keeps a
/// splitter of its own, not the rules' (`identifier::split`): what it shortens must not depend
/// on the code it measures.
pub fn words(name: &str) -> Vec<Range<usize>> {
    #[derive(PartialEq, Clone, Copy)]
    enum Class {
        Lower,
        Upper,
        Digit,
        Other,
    }
    let class = |c: char| match c {
        c if c.is_ascii_digit() => Class::Digit,
        c if c.is_uppercase() => Class::Upper,
        c if c.is_alphabetic() => Class::Lower,
        _ => Class::Other,
    };
    let chars: Vec<(usize, char)> = name.char_indices().collect();
    let mut spans = Vec::new();
    let mut start: Option<usize> = None;
    for (i, &(offset, c)) in chars.iter().enumerate() {
        let current = class(c);
        if current == Class::Other {
            if let Some(from) = start.take() {
                spans.push(from..offset);
            }
            continue;
        }
        let Some(from) = start else {
            start = Some(offset);
            continue;
        };
        let previous = class(chars[i - 1].1);
        let next = chars.get(i + 1).map(|&(_, c)| class(c));
        let boundary = match (previous, current) {
            (Class::Lower, Class::Upper) => true,
            (Class::Upper, Class::Upper) => next == Some(Class::Lower),
            (Class::Digit, Class::Lower | Class::Upper) | (Class::Lower | Class::Upper, Class::Digit) => true,
            _ => false,
        };
        if boundary {
            spans.push(from..offset);
            start = Some(offset);
        }
    }
    if let Some(from) = start {
        spans.push(from..name.len());
    }
    spans
}

/// `abbreviation` written the way `word` is: `account` -> `acct`, `Account` -> `Acct`,
/// `ACCOUNT` -> `ACCT`.
pub fn written_like(word: &str, abbreviation: &str) -> String {
    let letters: Vec<char> = word.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.len() > 1 && letters.iter().all(|c| c.is_uppercase()) {
        abbreviation.to_uppercase()
    } else if letters.first().is_some_and(|c| c.is_uppercase()) {
        let mut chars = abbreviation.chars();
        chars.next().map(|first| first.to_uppercase().chain(chars).collect()).unwrap_or_default()
    } else {
        abbreviation.to_owned()
    }
}

/// One shortening: the first word of `name` that a list abbreviates, replaced by its
/// abbreviation in the same case.
#[derive(Clone)]
pub struct Shortening {
    pub shortened: String,
    pub abbreviation: String,
    pub expansion: String,
}

pub fn shorten(name: &str, pairs: &Pairs) -> Option<Shortening> {
    words(name).into_iter().find_map(|span| {
        let word = &name[span.clone()];
        let abbreviation = pairs.by_expansion.get(&word.to_lowercase())?;
        let shortened = format!("{}{}{}", &name[..span.start], written_like(word, abbreviation), &name[span.end..]);
        Some(Shortening { shortened, abbreviation: abbreviation.clone(), expansion: word.to_lowercase() })
    })
}

/// `name` with every word a list abbreviates shortened (`get_account_balance` ->
/// `get_acct_bal`), as a developer who shortens everything writes it; the name itself when no
/// word is.
pub fn shorten_every(name: &str, pairs: &Pairs) -> String {
    let mut shortened = String::with_capacity(name.len());
    let mut end = 0;
    for span in words(name) {
        let word = &name[span.clone()];
        shortened.push_str(&name[end..span.start]);
        match pairs.by_expansion.get(&word.to_lowercase()) {
            Some(abbreviation) => shortened.push_str(&written_like(word, abbreviation)),
            None => shortened.push_str(word),
        }
        end = span.end;
    }
    shortened.push_str(&name[end..]);
    shortened
}
