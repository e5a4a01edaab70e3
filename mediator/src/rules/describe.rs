//! Guessing from a name what it does: a one-line description, a category, a minimal schema.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use serde_json::{Value, json};

use super::dictionary::{Dictionary, is_english};

/// The word lists the sentences and categories are made with, kept as data (`grammar.json`)
/// beside the abbreviations; what each list is for is written in the file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Grammar {
    #[allow(dead_code)] // for the people who edit the file
    about: HashMap<String, String>,
    verbs: HashSet<String>,
    prepositions: HashSet<String>,
    not_nouns: HashSet<String>,
    definite: HashSet<String>,
    determiners: HashSet<String>,
    needs_object: HashSet<String>,
}

static GRAMMAR: LazyLock<Grammar> = LazyLock::new(|| {
    serde_json::from_str(include_str!("grammar.json")).expect("grammar.json is valid (a test reads it)")
});

pub fn is_verb(word: &str) -> bool {
    GRAMMAR.verbs.contains(word)
}

/// A one-line description from a name's expanded words: `get user by id` -> "Get a user by ID."
pub fn sentence(words: &[String], dictionary: &Dictionary) -> Option<String> {
    if words.is_empty() || words.iter().all(|w| w.chars().all(|c| c.is_ascii_digit())) {
        return None;
    }
    let prose = |word: &String| {
        if dictionary.is_acronym(word) { acronym_case(word) } else { word.clone() }
    };
    let mut parts: Vec<String> = Vec::with_capacity(words.len() + 1);
    let mut rest = words;
    if is_verb(&words[0]) && words.len() > 1 {
        parts.push(capitalize(&words[0]));
        rest = &words[1..];
        if let Some(article) = article(rest, dictionary) {
            parts.push(article.to_owned());
        }
        parts.extend(rest.iter().map(prose));
    } else {
        let mut written: Vec<String> = rest.iter().map(prose).collect();
        if let Some(first) = written.first_mut()
            && !dictionary.is_acronym(&words[0])
        {
            *first = capitalize(first);
        }
        parts = written;
    }
    Some(format!("{}.", parts.join(" ")))
}

fn acronym_case(word: &str) -> String {
    match word.strip_suffix('s') {
        Some(stem) if stem.len() >= 2 && !word.ends_with("ss") && word != "os" && word != "ids" => {
            format!("{}s", stem.to_uppercase())
        }
        _ if word == "ids" => "IDs".to_owned(),
        _ => word.to_uppercase(),
    }
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn article(object: &[String], dictionary: &Dictionary) -> Option<&'static str> {
    let first = object.first()?;
    if GRAMMAR.prepositions.contains(first.as_str())
        || ["me", "all", "my", "it", "this", "the", "a", "an"].contains(&first.as_str())
    {
        return None;
    }
    if GRAMMAR.definite.contains(first.as_str()) {
        return Some("the");
    }
    let head = object.iter().take_while(|w| !GRAMMAR.prepositions.contains(w.as_str())).last()?;
    if is_plural(head) || head.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let starts_with_vowel_sound = if dictionary.is_acronym(first) {
        first.starts_with(['a', 'e', 'f', 'h', 'i', 'l', 'm', 'n', 'o', 'r', 's', 'x'])
    } else {
        first.starts_with(['a', 'e', 'i', 'o'])
    };
    Some(if starts_with_vowel_sound { "an" } else { "a" })
}

fn is_plural(word: &str) -> bool {
    singular(word) != word
}

/// The singular of an English plural (`repositories` -> `repository`); other words as they are.
pub fn singular(word: &str) -> String {
    if word.len() <= 3 || word.ends_with("ss") || word.ends_with("us") || word.ends_with("is") {
        return word.to_owned();
    }
    if let Some(stem) = word.strip_suffix("ies") {
        let candidate = format!("{stem}y");
        if is_english(&candidate) {
            return candidate;
        }
    }
    for suffix in ["es", "s"] {
        if let Some(stem) = word.strip_suffix(suffix)
            && (is_english(stem) || (suffix == "s" && !is_english(word)))
        {
            return stem.to_owned();
        }
    }
    word.to_owned()
}

/// Whether a description says no more than the name does ("gets user" for `gt_usr`).
pub fn repeats_name(description: &str, name_words: &[String]) -> bool {
    let normalize = |word: &str| singular(word.strip_suffix('s').filter(|s| s.len() >= 3).unwrap_or(word));
    let ignored = ["a", "an", "the", "this", "that"];
    let described: Vec<String> =
        super::identifier::words(description).into_iter().filter(|w| !ignored.contains(&w.as_str())).collect();
    if described.is_empty() {
        return true;
    }
    let named: Vec<String> = name_words.iter().map(|w| normalize(w)).collect();
    described.len() <= named.len() && described.iter().all(|w| named.contains(&normalize(w)))
}

/// What a name is about: the object of a "verb object" name (`add_issue_comment` ->
/// `issue comment`), or the words before a trailing verb of a name that does not start with one
/// (`issue_read` -> `issue`, `git_status` -> `git status`). Singular, without leading
/// determiners.
pub fn subject(words: &[String]) -> Option<Vec<String>> {
    let mut rest = words;
    let phrase: Vec<&String> = if rest.first().is_some_and(|w| is_verb(w)) {
        // create_or_update_file: skip "verb or verb".
        while rest.len() >= 3 && is_verb(&rest[0]) && ["or", "and"].contains(&rest[1].as_str()) && is_verb(&rest[2]) {
            rest = &rest[2..];
        }
        rest[1..].iter().take_while(|w| !GRAMMAR.prepositions.contains(w.as_str())).collect()
    } else {
        let end = if rest.len() > 1 && rest.last().is_some_and(|w| is_verb(w)) { rest.len() - 1 } else { rest.len() };
        rest[..end].iter().take_while(|w| !GRAMMAR.prepositions.contains(w.as_str())).collect()
    };
    let phrase: Vec<String> =
        phrase.into_iter().skip_while(|w| GRAMMAR.determiners.contains(w.as_str())).map(|w| singular(w)).collect();
    (!phrase.is_empty()).then_some(phrase)
}

/// Counts of the prefixes and suffixes of the subjects of a batch of names.
#[derive(Debug, Default)]
pub struct CategoryIndex {
    prefixes: HashMap<String, usize>,
    suffixes: HashMap<String, usize>,
}

impl CategoryIndex {
    pub fn add(&mut self, words: &[String]) {
        if let Some(subject) = subject(words) {
            for end in 1..=subject.len() {
                *self.prefixes.entry(subject[..end].join(" ")).or_default() += 1;
                *self.suffixes.entry(subject[subject.len() - end..].join(" ")).or_default() += 1;
            }
        }
    }

    /// A category where the name makes it clear. From the name's [`subject`]: a one-word
    /// subject of a "verb object" name is its own category; otherwise the shortest start of
    /// the subject that sibling tools share, extended while every sharer goes on the same way
    /// (`pull` -> `pull request`), else the end of it that siblings share, else the same
    /// after its first word (`reprioritize_sub_issue` -> `sub issue`).
    pub fn category(&self, words: &[String]) -> Option<String> {
        let subject = subject(words)?;
        if subject.len() == 1 && is_verb(&words[0]) {
            return noun(&subject).then(|| subject[0].clone());
        }
        self.shared_part(&subject).or_else(|| (subject.len() > 1).then(|| self.shared_part(&subject[1..])).flatten())
    }

    fn shared_part(&self, subject: &[String]) -> Option<String> {
        let shared =
            |counts: &HashMap<String, usize>, part: &[String]| counts.get(&part.join(" ")).copied().unwrap_or(0);
        if let Some(mut len) = (1..=subject.len()).find(|&len| shared(&self.prefixes, &subject[..len]) > 1) {
            let count = shared(&self.prefixes, &subject[..len]);
            while len < subject.len() && shared(&self.prefixes, &subject[..len + 1]) == count {
                len += 1;
            }
            let part = &subject[..len];
            if noun(part) {
                return Some(part.join("_"));
            }
        }
        (1..subject.len())
            .rev()
            .map(|len| &subject[subject.len() - len..])
            .find_map(|suffix| (shared(&self.suffixes, suffix) > 1 && noun(suffix)).then(|| suffix.join("_")))
    }
}

fn noun(candidate: &[String]) -> bool {
    candidate.last().is_some_and(|w| !GRAMMAR.not_nouns.contains(w.as_str()) && w.len() > 1)
}

/// Whether a name's words say the tool takes arguments: the rules would infer parameters for it
/// ([`infer_schema`]), or it reads "verb object" with a verb that needs to be told what to act
/// on (`create_invoice`, `github_delete_file`; not `delete_all_drafts`, `get_time`). A leading
/// namespace word is skipped.
pub fn implies_arguments(words: &[String]) -> bool {
    if infer_schema(words).is_some() {
        return true;
    }
    let start = usize::from(words.first().is_some_and(|w| !is_verb(w)));
    let (Some(verb), Some(object)) = (words.get(start), words.get(start + 1)) else {
        return false;
    };
    GRAMMAR.needs_object.contains(verb.as_str())
        && !GRAMMAR.determiners.contains(object.as_str())
        && !GRAMMAR.definite.contains(object.as_str())
        && subject(&words[start..]).is_some()
}

/// Whether `verb` must be told what to act on (`search`, `delete`, `create`).
pub fn needs_object(verb: &str) -> bool {
    GRAMMAR.needs_object.contains(verb)
}

/// A schema where the name makes the parameters near-certain: `get_user_by_email` takes an
/// `email`, `search_*` takes a `query`.
pub fn infer_schema(words: &[String]) -> Option<Value> {
    if let Some(by) = words.iter().position(|w| w == "by") {
        let field: Vec<&str> = words[by + 1..]
            .iter()
            .take_while(|w| !GRAMMAR.prepositions.contains(w.as_str()))
            .map(String::as_str)
            .collect();
        if !field.is_empty() {
            let name = field.join("_");
            return Some(json!({
                "type": "object",
                "properties": {name.clone(): {"type": "string", "description": format!("The {}.", field.join(" "))}},
                "required": [name]
            }));
        }
    }
    if words.first().is_some_and(|w| w == "search") {
        return Some(json!({
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to search for."}},
            "required": ["query"]
        }));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_lists_are_read_from_their_file() {
        assert!(GRAMMAR.verbs.contains("get") && GRAMMAR.prepositions.contains("by"));
        assert_eq!(GRAMMAR.about.len(), 6, "each list says what it is for");
    }

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn describe(text: &str) -> String {
        sentence(&words(text), &Dictionary::built_in()).unwrap()
    }

    #[test]
    fn sentences_read_as_verb_and_object() {
        assert_eq!(describe("get user"), "Get a user.");
        assert_eq!(describe("list users"), "List users.");
        assert_eq!(describe("get user by id"), "Get a user by ID.");
        assert_eq!(describe("get current time"), "Get the current time.");
        assert_eq!(describe("create issue"), "Create an issue.");
        assert_eq!(describe("get me"), "Get me.");
        assert_eq!(describe("user profile"), "User profile.");
        assert_eq!(describe("delete"), "Delete.");
        assert_eq!(describe("fetch url"), "Fetch a URL.");
    }

    #[test]
    fn names_that_need_arguments_are_told_from_names_that_do_not() {
        for name in ["create invoice", "get user by id", "search issues", "github delete file", "send message"] {
            assert!(implies_arguments(&words(name)), "{name}");
        }
        for name in ["get time", "list users", "delete all drafts", "create", "read graph", "get me", "update current"]
        {
            assert!(!implies_arguments(&words(name)), "{name}");
        }
    }

    #[test]
    fn repeated_names_are_recognised() {
        assert!(repeats_name("gets user", &words("get user")));
        assert!(repeats_name("Delete", &words("delete")));
        assert!(repeats_name("  ", &words("delete")));
        assert!(!repeats_name("Retrieve a user by their ID or email", &words("get user")));
    }

    #[test]
    fn plurals_become_singular() {
        assert_eq!(singular("repositories"), "repository");
        assert_eq!(singular("users"), "user");
        assert_eq!(singular("addresses"), "address");
        assert_eq!(singular("status"), "status");
        assert_eq!(singular("branches"), "branch");
    }

    #[test]
    fn categories_come_from_objects_siblings_share() {
        let names = [
            "get_pull_request_diff",
            "list_pull_requests",
            "add_issue_comment",
            "get_issue",
            "get_me",
            "git_status",
            "git_log",
            "get_current_time",
            "convert_time",
        ];
        let split: Vec<Vec<String>> = names.iter().map(|n| n.split('_').map(str::to_owned).collect()).collect();
        let mut index = CategoryIndex::default();
        for words in &split {
            index.add(words);
        }
        let categories: Vec<Option<String>> = split.iter().map(|w| index.category(w)).collect();
        assert_eq!(
            categories,
            [
                Some("pull_request".into()),
                Some("pull_request".into()),
                Some("issue".into()),
                Some("issue".into()),
                None,
                Some("git".into()),
                Some("git".into()),
                Some("time".into()),
                Some("time".into()),
            ]
        );
    }

    #[test]
    fn schemas_only_where_the_name_is_near_certain() {
        assert_eq!(infer_schema(&words("get user by email")).unwrap()["required"], json!(["email"]));
        assert_eq!(infer_schema(&words("search issues")).unwrap()["required"], json!(["query"]));
        assert_eq!(infer_schema(&words("get user")), None);
    }
}
