//! Words written together: `filepath`, `threadsafe`, `getusr` read as the words they are made of.

use super::dictionary::{Dictionary, Entry, is_english};
use super::identifier::Token;

/// Longer words are not split: the search is quadratic, and no real compound is this long.
const MAX_COMPOUND_LEN: usize = 32;

/// Splits words written together (`filepath`, `threadsafe`, `getusr`) into known words.
pub fn split_compounds<'a>(
    tokens: Vec<Token<'a>>,
    dictionary: &Dictionary,
    is_context_word: impl Fn(&str) -> bool,
) -> Vec<Token<'a>> {
    let mut out = Vec::with_capacity(tokens.len());
    for token in tokens {
        let word = token.text.to_ascii_lowercase();
        let one_case =
            token.text.chars().all(|c| c.is_ascii_lowercase()) || token.text.chars().all(|c| c.is_ascii_uppercase());
        let compound = one_case
            && (6..=MAX_COMPOUND_LEN).contains(&word.len())
            && !is_english(&word)
            && dictionary.get(&word).is_none()
            && !is_context_word(&word);
        match compound.then(|| segment(&word, dictionary)).flatten() {
            Some(ends) => {
                let mut start = 0;
                for end in ends {
                    out.push(Token {
                        text: &token.text[start..end],
                        span: token.span.start + start..token.span.start + end,
                    });
                    start = end;
                }
            }
            None => out.push(token),
        }
    }
    out
}

/// The ends of the fewest known parts (3 letters or more) that make up `word`, if any.
/// English words are preferred over abbreviations the dictionary expands.
fn segment(word: &str, dictionary: &Dictionary) -> Option<Vec<usize>> {
    const MAX_PARTS: u32 = 3;
    let part_cost = |part: &str| -> Option<u32> {
        if part.len() < 3 {
            None
        } else if is_english(part) {
            Some(2)
        } else if matches!(dictionary.get(part), Some(Entry::Expand(_))) {
            Some(3)
        } else {
            None
        }
    };
    let n = word.len();
    // best[i]: (cost, parts, previous end) of the cheapest segmentation of word[..i].
    let mut best: Vec<Option<(u32, u32, usize)>> = vec![None; n + 1];
    best[0] = Some((0, 0, 0));
    for end in 3..=n {
        for start in 0..=end - 3 {
            let (Some((cost, parts, _)), Some(part)) = (best[start], part_cost(&word[start..end])) else {
                continue;
            };
            let candidate = (cost + part, parts + 1, start);
            if parts < MAX_PARTS && best[end].is_none_or(|current| (candidate.0, candidate.1) < (current.0, current.1))
            {
                best[end] = Some(candidate);
            }
        }
    }
    let (_, parts, _) = best[n]?;
    if parts < 2 {
        return None;
    }
    let mut ends = Vec::new();
    let mut end = n;
    while end > 0 {
        ends.push(end);
        end = best[end].expect("reached from a segmentation").2;
    }
    ends.reverse();
    Some(ends)
}
