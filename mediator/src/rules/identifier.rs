//! Splitting identifiers into words: snake, kebab, camel, Pascal, SCREAMING, acronyms inside
//! words (`getHTTPResponse`, `toURL`), digits, and namespaces (`math.sum`, `admin/users`).

use std::ops::Range;

/// One word of an identifier, where it sits in the identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token<'a> {
    pub text: &'a str,
    pub span: Range<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    Digit,
    Separator,
}

fn class(c: char) -> Class {
    if c.is_ascii_digit() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else if c.is_alphabetic() {
        Class::Lower
    } else {
        Class::Separator
    }
}

/// Splits `identifier` at separators, case changes and letter/digit boundaries.
///
/// A run of capitals followed by a lowercase letter gives its last capital to the next word
/// (`HTTPResponse` -> `HTTP`, `Response`).
pub fn split(identifier: &str) -> Vec<Token<'_>> {
    let chars: Vec<(usize, char)> = identifier.char_indices().collect();
    let mut tokens = Vec::new();
    let mut start: Option<usize> = None;
    for (i, &(offset, c)) in chars.iter().enumerate() {
        let current = class(c);
        if current == Class::Separator {
            if let Some(from) = start.take() {
                tokens.push(token(identifier, from, offset));
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
            tokens.push(token(identifier, from, offset));
            start = Some(offset);
        }
    }
    if let Some(from) = start {
        tokens.push(token(identifier, from, identifier.len()));
    }
    tokens
}

fn token(identifier: &str, from: usize, to: usize) -> Token<'_> {
    Token { text: &identifier[from..to], span: from..to }
}

/// How a word is written, so an expansion can be written the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    Lower,
    Upper,
    Capitalized,
}

impl Case {
    pub fn of(word: &str) -> Case {
        let mut letters = word.chars().filter(|c| c.is_alphabetic());
        match letters.next() {
            Some(first) if first.is_uppercase() => {
                if word.chars().count() > 1 && word.chars().filter(|c| c.is_alphabetic()).all(char::is_uppercase) {
                    Case::Upper
                } else {
                    Case::Capitalized
                }
            }
            _ => Case::Lower,
        }
    }

    pub fn apply(self, word: &str) -> String {
        match self {
            Case::Lower => word.to_lowercase(),
            Case::Upper => word.to_uppercase(),
            Case::Capitalized => {
                let mut chars = word.chars();
                match chars.next() {
                    Some(first) => first.to_uppercase().chain(chars.flat_map(char::to_lowercase)).collect(),
                    None => String::new(),
                }
            }
        }
    }
}

/// The lowercase alphabetic words of a text (a name, a description), in order; a long text's
/// first few hundred.
pub fn words(text: &str) -> Vec<String> {
    split(text)
        .into_iter()
        .take(MAX_WORDS)
        .map(|token| token.text.to_lowercase())
        .filter(|word| word.chars().all(|c| c.is_ascii_alphabetic()))
        .collect()
}

/// The description words the rules look at; a long description says what it means early.
const MAX_WORDS: usize = 400;

#[cfg(test)]
mod tests {
    use super::*;

    fn words(identifier: &str) -> Vec<&str> {
        split(identifier).into_iter().map(|token| token.text).collect()
    }

    #[test]
    fn splits_every_common_shape() {
        assert_eq!(words("get_user_profile"), ["get", "user", "profile"]);
        assert_eq!(words("get-user"), ["get", "user"]);
        assert_eq!(words("getUserProfile"), ["get", "User", "Profile"]);
        assert_eq!(words("GetUserProfile"), ["Get", "User", "Profile"]);
        assert_eq!(words("GET_USER"), ["GET", "USER"]);
        assert_eq!(words("getHTTPResponse"), ["get", "HTTP", "Response"]);
        assert_eq!(words("toURL"), ["to", "URL"]);
        assert_eq!(words("ACString2Double"), ["AC", "String", "2", "Double"]);
        assert_eq!(words("math.sum"), ["math", "sum"]);
        assert_eq!(words("admin/users"), ["admin", "users"]);
        assert_eq!(words("__dbreg_init_print"), ["dbreg", "init", "print"]);
        assert_eq!(words("sha256"), ["sha", "256"]);
        assert_eq!(words(""), Vec::<&str>::new());
    }

    #[test]
    fn spans_point_back_into_the_identifier() {
        let tokens = split("gtUsr");
        assert_eq!(tokens[1].span, 2..5);
        assert_eq!(&"gtUsr"[tokens[1].span.clone()], "Usr");
    }

    #[test]
    fn case_is_kept_when_rewriting_a_word() {
        assert_eq!(Case::of("Usr").apply("user"), "User");
        assert_eq!(Case::of("USR").apply("user"), "USER");
        assert_eq!(Case::of("usr").apply("user"), "user");
        assert_eq!(Case::of("U").apply("user"), "User");
    }
}
