//! Words written together: `filepath`, `threadsafe`, `getusr` read as the words they are made of.
//!
//! A token is split into the parts that cost least, where a part's cost is about how unlikely
//! it is (a common word is cheap, a rare one dearer, a piece the rules do not know dearest and
//! dearer the longer it is), and only if its parts cost less than the token kept as one unknown
//! word. So `filepath` is `file` + `path`, `botlib` is `bot` + `lib` (an abbreviation the
//! dictionary knows), `cclass` is `c` + `class`, while `formatter` stays whole (a word) and so
//! does `zimbra` (nothing in it cheaper than itself).
//!
//! Words real code's prose writes as one (`tooltip`, `favicon`, `keyframe`: `vocabulary.txt`,
//! mined) are words too: never split, and parts of longer words at the cost of a rare word.
//!
//! The search is quadratic in the word's length (at most 32 letters), with a few hash lookups a
//! piece and no allocation but the answer.

use std::sync::LazyLock;

use rustc_hash::FxHashSet;

use super::dictionary::{Dictionary, is_english};
use super::identifier::Token;
use super::lexicon;

/// Longer words are not split: the search is quadratic, and no real compound is this long.
const MAX_COMPOUND_LEN: usize = 32;
/// Shorter words are not split: too few letters to tell `cfont` (c + font) from `ctop`, `npos`
/// from `orfs`, one way or the other.
const MIN_COMPOUND_LEN: usize = 6;

// What a part costs, in tenths of a nat (ln) like a word's cost, so they add up.
/// An abbreviation the dictionary knows, of three letters or more (`lib`, `cfg`, `str`): about
/// as cheap as a common word, since in a name it is one.
const ABBREVIATION: u32 = 60;
/// A dictionary entry of two letters (`id`, `fs`, `ps`): two letters match by chance too often.
const SHORT_ABBREVIATION: u32 = 120;
/// A short form real code uses (the mined lexicon: `recv`, `tbl`): weaker evidence than
/// the dictionary, so dearer, though still cheaper than a rare word.
const LEXICON_ABBREVIATION: u32 = 100;
const SHORT_LEXICON_ABBREVIATION: u32 = 140;
/// Added to every part of one or two letters: short parts fit anywhere.
const SHORT_PART: u32 = 20;
/// A single letter leading a word (`cclass`, `jrenderer`, Hungarian and C prefixes).
const FIRST_LETTER: u32 = 160;
/// A single letter ending a word (`openb`, `peekc`); never one in the middle.
const LAST_LETTER: u32 = 140;
/// A piece no list knows costs this plus `UNKNOWN_PER_LETTER` a letter: `gfx` in `gfxbytes`.
/// The whole token, kept as it is, is such a piece: a split must cost less.
const UNKNOWN: u32 = 120;
const UNKNOWN_PER_LETTER: u32 = 30;
/// Unknown pieces longer than this are not parts: they would swallow the words next to them.
const MAX_UNKNOWN_PART: usize = 5;
/// Prefixes that make one word with what follows (`unregister`, `prealloc`, `resizer`): a part
/// costs the word it prefixes, plus this.
const PREFIXES: [&str; 5] = ["re", "un", "pre", "de", "dis"];
const PREFIXED: u32 = 30;
/// The shortest word a prefix makes one word with: `rehash`, not `re` + `gat`.
const MIN_PREFIXED_LEN: usize = 4;
/// Suffixes that make one word with what comes before (`slugify`, `vectorize`, `alloced`): a
/// part costs the word it ends, plus this. Else a name would split into a word and a suffix
/// (`slug` + `ify`) that the reading then takes for an abbreviation to spell out. Dearer than a
/// prefix: suffixes end many words (`stacksize` is `stack` + `size`, not `stacks` + `ize`).
const SUFFIXES: [&str; 15] =
    ["s", "es", "ed", "er", "ing", "able", "ible", "less", "ness", "ment", "ify", "ize", "ise", "ist", "ism"];
const SUFFIXED: u32 = 80;
/// The shortest word a suffix makes one word with.
const MIN_SUFFIXED_LEN: usize = 3;

const SPLIT_WORDS: &str = include_str!("split_words.txt");

/// Words the prose of real code writes as one word though no English list has them (`tooltip`,
/// `favicon`, `spinlocks`), mined by `mediator/lexicon/mine.py`: one a line after `#` comments.
const VOCABULARY: &str = include_str!("vocabulary.txt");

static VOCABULARY_WORDS: LazyLock<FxHashSet<&'static str>> = LazyLock::new(|| {
    VOCABULARY.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).collect()
});

/// Whether `word` (lowercase) is a word of the mined vocabulary.
fn in_vocabulary(word: &str) -> bool {
    VOCABULARY_WORDS.contains(word)
}

/// The splitting word list, as a hash table of its lines (`word size`): each slot holds where a
/// line starts in `SPLIT_WORDS`, plus one (0: an empty slot), at the slot its word hashes to or
/// the next free one. Offsets rather than a map of slices: a sixth of the memory for 116,000
/// words; a table rather than a search of the sorted list: the splitter looks up every piece of
/// every word it tries, and most pieces are not words.
struct SplitWords {
    slots: Vec<u32>,
    /// The cost of a word of each SCOWL size.
    costs: Vec<(u8, u32)>,
}

/// A word's cost is the log of its rank among English words, taken as the middle of its size
/// class (SCOWL sizes go from common to rare): a common word is cheaper than a rare one, and two
/// words cost more than one, so the fewest, commonest words win.
static WORDS: LazyLock<SplitWords> = LazyLock::new(|| {
    // Two passes over the text rather than a list of its lines: the peak memory is the table's.
    let mut slots = vec![0u32; (2 * line_starts().count()).next_power_of_two()];
    let mask = slots.len() - 1;
    let mut counts: Vec<(u8, usize)> = Vec::new();
    for (start, line) in line_starts() {
        let mut slot = slot_of(word_in(line), mask);
        while slots[slot] != 0 {
            slot = (slot + 1) & mask;
        }
        slots[slot] = start + 1;
        let size = size_in(line);
        match counts.iter_mut().find(|(known, _)| *known == size) {
            Some((_, count)) => *count += 1,
            None => counts.push((size, 1)),
        }
    }
    counts.sort_unstable();
    let mut commoner = 0;
    let costs = counts
        .into_iter()
        .map(|(size, count)| {
            let rank = commoner as f64 + count as f64 / 2.0;
            commoner += count;
            (size, (10.0 * rank.ln()).round() as u32)
        })
        .collect();
    SplitWords { slots, costs }
});

/// The list's lines (not its `#` comments), with where each starts in `SPLIT_WORDS`.
fn line_starts() -> impl Iterator<Item = (u32, &'static str)> {
    let mut start = 0;
    SPLIT_WORDS.split_inclusive('\n').filter_map(move |line| {
        let at = u32::try_from(start).expect("the list is far below 4 GiB");
        start += line.len();
        let line = line.trim_end();
        (!line.is_empty() && !line.starts_with('#')).then_some((at, line))
    })
}

fn slot_of(word: &str, mask: usize) -> usize {
    use std::hash::BuildHasher as _;
    rustc_hash::FxBuildHasher.hash_one(word) as usize & mask
}

fn word_in(line: &str) -> &str {
    line.split_once(' ').map_or(line, |(word, _)| word)
}

fn size_in(line: &str) -> u8 {
    line.split_once(' ').and_then(|(_, size)| size.parse().ok()).unwrap_or(u8::MAX)
}

/// The SCOWL size of `word`, if the splitting list has it.
fn size_of(word: &str) -> Option<u8> {
    let words = &*WORDS;
    let mask = words.slots.len() - 1;
    let mut slot = slot_of(word, mask);
    loop {
        // An empty slot: the word is not in the list.
        let start = words.slots[slot].checked_sub(1)? as usize;
        let line = &SPLIT_WORDS[start..];
        if line.as_bytes().get(word.len()) == Some(&b' ') && line.starts_with(word) {
            return line[word.len() + 1..].lines().next()?.parse().ok();
        }
        slot = (slot + 1) & mask;
    }
}

/// What `word` costs as an English word. Two-letter words only of the commonest (`of`, `to`,
/// `by`), three- and four-letter ones of the common (up to size 35): rare short words (`ax`,
/// `ana`, `sol`, `kail`) are more often letters of something else (`solana` is not `sol` + `ana`).
fn word_cost(word: &str) -> Option<u32> {
    let Some(size) = size_of(word) else {
        // A word of the mined vocabulary costs what the rarest English words cost.
        return in_vocabulary(word).then(|| WORDS.costs.iter().map(|(_, cost)| *cost).max()).flatten();
    };
    let common_enough = match word.len() {
        0 | 1 => false,
        2 => size <= 10,
        3 | 4 => size <= 35,
        _ => true,
    };
    if !common_enough {
        return None;
    }
    WORDS.costs.iter().find(|(known, _)| *known == size).map(|(_, cost)| *cost)
}

/// Splits words written together (`filepath`, `threadsafe`, `getusr`) into known words.
pub fn split_compounds<'a>(
    tokens: Vec<Token<'a>>,
    dictionary: &Dictionary,
    is_context_word: impl Fn(&str) -> bool,
) -> Vec<Token<'a>> {
    let mut out = Vec::with_capacity(tokens.len());
    for token in tokens {
        let word = token.text.to_ascii_lowercase();
        // Only a token in one case: a capital inside a word already marks where its words meet,
        // and what it leaves whole (`Scrollbar`, `Datastore`) is as often meant whole.
        let one_case =
            token.text.chars().all(|c| c.is_ascii_lowercase()) || token.text.chars().all(|c| c.is_ascii_uppercase());
        let compound = one_case
            && (MIN_COMPOUND_LEN..=MAX_COMPOUND_LEN).contains(&word.len())
            && !is_english(&word)
            && size_of(&word).is_none()
            && !in_vocabulary(&word)
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

/// What `part` costs as one part of a word, if it can be one; `first` and `last` say whether it
/// starts or ends the word.
fn part_cost(part: &str, first: bool, last: bool, dictionary: &Dictionary) -> Option<u32> {
    let len = part.len();
    let abbreviation = if len < 2 {
        None
    } else if dictionary.get(part).is_some() {
        Some(if len >= 3 { ABBREVIATION } else { SHORT_ABBREVIATION })
    } else if lexicon::shortens(part) {
        Some(if len >= 3 { LEXICON_ABBREVIATION } else { SHORT_LEXICON_ABBREVIATION })
    } else {
        None
    };
    let cost = match (word_cost(part), abbreviation) {
        (Some(word), Some(abbreviation)) => Some(word.min(abbreviation)),
        (word, abbreviation) => word.or(abbreviation),
    }
    .or_else(|| prefixed_cost(part, dictionary))
    .or_else(|| suffixed_cost(part, dictionary))
    .or_else(|| match len {
        1 if first => Some(FIRST_LETTER),
        1 if last => Some(LAST_LETTER),
        1 => None,
        _ => (len <= MAX_UNKNOWN_PART).then(|| unknown_cost(len)),
    })?;
    Some(if len <= 2 { cost + SHORT_PART } else { cost })
}

/// A prefix and a word it makes one word with (`unregister`, `prealloc`).
fn prefixed_cost(part: &str, dictionary: &Dictionary) -> Option<u32> {
    affixed_cost(&PREFIXES, dictionary, PREFIXED, |prefix| {
        part.strip_prefix(prefix).filter(|rest| rest.len() >= MIN_PREFIXED_LEN)
    })
}

/// A word and a suffix it makes one word with (`slugify`, `vectorize`).
fn suffixed_cost(part: &str, dictionary: &Dictionary) -> Option<u32> {
    affixed_cost(&SUFFIXES, dictionary, SUFFIXED, |suffix| {
        part.strip_suffix(suffix).filter(|stem| stem.len() >= MIN_SUFFIXED_LEN)
    })
}

/// The cheapest reading of a part as one of `affixes` with a word or a known short form, the
/// word what `strip` leaves of the part with the affix taken off.
fn affixed_cost<'p>(
    affixes: &[&str],
    dictionary: &Dictionary,
    extra: u32,
    strip: impl Fn(&str) -> Option<&'p str>,
) -> Option<u32> {
    affixes
        .iter()
        .filter_map(|affix| {
            let word = strip(affix)?;
            let cost = word_cost(word).or_else(|| dictionary.get(word).map(|_| ABBREVIATION))?;
            Some(cost + extra)
        })
        .min()
}

fn unknown_cost(len: usize) -> u32 {
    UNKNOWN + UNKNOWN_PER_LETTER * len as u32
}

/// The ends of the cheapest parts that make up `word` (ASCII, lowercase, at most
/// `MAX_COMPOUND_LEN` letters), if there are two or more and they cost less than the word kept
/// whole.
fn segment(word: &str, dictionary: &Dictionary) -> Option<Vec<usize>> {
    let n = word.len();
    // best[i]: (cost, parts, previous end) of the cheapest segmentation of word[..i]; on a tie,
    // the fewer parts, then the first found.
    let mut best = [None::<(u32, u32, usize)>; MAX_COMPOUND_LEN + 1];
    best[0] = Some((0, 0, 0));
    for end in 1..=n {
        for start in 0..end {
            let Some((cost, parts, _)) = best[start] else {
                continue;
            };
            let Some(part) = part_cost(&word[start..end], start == 0, end == n, dictionary) else {
                continue;
            };
            let candidate = (cost + part, parts + 1, start);
            if best[end].is_none_or(|current| (candidate.0, candidate.1) < (current.0, current.1)) {
                best[end] = Some(candidate);
            }
        }
    }
    let (cost, parts, _) = best[n]?;
    if parts < 2 || cost >= unknown_cost(n) {
        return None;
    }
    let mut ends = Vec::with_capacity(parts as usize);
    let mut end = n;
    while end > 0 {
        ends.push(end);
        end = best[end].expect("reached from a segmentation").2;
    }
    ends.reverse();
    Some(ends)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::identifier;

    fn split(name: &str) -> Vec<&str> {
        let dictionary = Dictionary::built_in();
        split_compounds(identifier::split(name), &dictionary, |_| false).into_iter().map(|token| token.text).collect()
    }

    #[test]
    fn the_splitting_list_is_sorted_and_sized() {
        let lines: Vec<&str> = line_starts().map(|(_, line)| line).collect();
        assert!(lines.len() > 100_000);
        assert!(lines.windows(2).all(|pair| word_in(pair[0]) < word_in(pair[1])), "sorted, no duplicates");
        for line in &lines {
            assert!(word_in(line).bytes().all(|b| b.is_ascii_lowercase()), "{line}");
            assert!(size_in(line) <= 70, "{line}");
            assert_eq!(size_of(word_in(line)), Some(size_in(line)), "{line}");
        }
        assert_eq!(size_of("colormap"), None);
        assert_eq!(size_of("filepat"), None);
        assert!(word_cost("file") < word_cost("formatter"));
    }

    #[test]
    fn words_written_together_are_split_into_the_commonest_words() {
        assert_eq!(split("filepath"), ["file", "path"]);
        assert_eq!(split("get_threadsafe"), ["get", "thread", "safe"]);
        assert_eq!(split("numberoferrorgroups"), ["number", "of", "error", "groups"]);
        assert_eq!(split("MAXSTACKSIZE"), ["MAX", "STACK", "SIZE"]);
    }

    #[test]
    fn abbreviations_and_single_letters_are_parts() {
        assert_eq!(split("BOTLIB_STATE"), ["BOT", "LIB", "STATE"]);
        assert_eq!(split("appcommand"), ["app", "command"]);
        assert_eq!(split("getusr"), ["get", "usr"]);
        assert_eq!(split("cclass"), ["c", "class"]);
        assert_eq!(split("jrenderer"), ["j", "renderer"]);
    }

    #[test]
    fn words_and_what_nothing_splits_stay_whole() {
        for name in ["formatter", "usr", "Colormap", "zimbra", "unregister", "slugify", "vectorize"] {
            assert_eq!(split(name).concat(), name, "{name}");
            assert_eq!(split(name).len(), identifier::split(name).len(), "{name} is split");
        }
    }

    #[test]
    fn the_vocabulary_is_sorted_lowercase_and_new() {
        let lines: Vec<&str> =
            VOCABULARY.lines().filter(|line| !line.trim().is_empty() && !line.starts_with('#')).collect();
        assert!(lines.len() > 200);
        assert!(lines.windows(2).all(|pair| pair[0] < pair[1]), "sorted, no duplicates");
        for word in &lines {
            assert!((6..=24).contains(&word.len()) && word.bytes().all(|b| b.is_ascii_lowercase()), "{word}");
            assert_eq!(size_of(word), None, "{word} is in the splitting list already");
        }
    }

    #[test]
    fn vocabulary_words_stay_whole_and_are_parts() {
        for name in ["tooltip", "favicon", "keyframe"] {
            assert!(in_vocabulary(name), "{name}");
            assert_eq!(split(name), [name]);
        }
        assert_eq!(split("tooltiptext"), ["tooltip", "text"]);
        assert_eq!(split("showfavicon"), ["show", "favicon"]);
    }

    #[test]
    fn context_words_stay_whole() {
        let dictionary = Dictionary::built_in();
        let tokens = split_compounds(identifier::split("todoist_task"), &dictionary, |word| word == "todoist");
        assert_eq!(tokens.into_iter().map(|token| token.text).collect::<Vec<_>>(), ["todoist", "task"]);
    }
}
