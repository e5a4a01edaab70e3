//! Abbreviations real code uses, mined from the sources of a pinned set of packages
//! (`mediator/lexicon/`): for each short word, the words it was seen spelling out, with in how
//! many packages. General knowledge, weaker than a tool's own words and the dictionary.

use std::collections::HashMap;
use std::sync::LazyLock;

const LEXICON: &str = include_str!("lexicon.tsv");

/// A reading from general knowledge alone must be widely attested. Measured on the SCANL pairs
/// (`tests/eval.rs`): with pairs seen in 3 packages, the lexicon's readings were 68% right and
/// took the rules' precision to 88%; from 8, 91%. Many of its "wrong" ones are right and the
/// data's own reading differs (`gcd` is the greatest common divisor, `abs` absolute).
const MIN_PACKAGES_ALONE: u32 = 8;
/// Beside a tool's own words, which say the same, a pair seen in this many packages is enough.
const MIN_PACKAGES: u32 = 3;
/// The share of a short word's sightings its first reading must have to be taken alone.
const MIN_SHARE: f64 = 0.6;

/// What real code says of one short word: its readings, most packages first, and in how many
/// packages the prose beside it used the word itself.
#[derive(Debug, Default)]
struct Sightings {
    readings: Vec<(&'static str, u32)>,
    itself: u32,
}

static PAIRS: LazyLock<HashMap<&'static str, Sightings>> = LazyLock::new(|| parse(LEXICON));

/// Reads the lexicon's rows (`abbreviation`, `expansion`, `packages`, `occurrences`, `itself`);
/// a row that is not one is passed over, and a test keeps the shipped file free of them.
fn parse(text: &'static str) -> HashMap<&'static str, Sightings> {
    let mut pairs: HashMap<&'static str, Sightings> = HashMap::new();
    for line in text.lines().filter(|line| !line.starts_with('#') && !line.trim().is_empty()) {
        let Some(row) = Row::parse(line) else { continue };
        let sightings = pairs.entry(row.abbreviation).or_default();
        sightings.readings.push((row.expansion, row.packages));
        sightings.itself = sightings.itself.max(row.itself);
    }
    for sightings in pairs.values_mut() {
        sightings.readings.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    }
    pairs
}

struct Row {
    abbreviation: &'static str,
    expansion: &'static str,
    packages: u32,
    itself: u32,
}

impl Row {
    fn parse(line: &'static str) -> Option<Row> {
        let mut fields = line.split('\t');
        let abbreviation = fields.next().filter(|word| is_lowercase_word(word))?;
        let expansion = fields.next().filter(|phrase| phrase.split(' ').all(is_lowercase_word))?;
        let packages = fields.next()?.parse().ok()?;
        let _occurrences: u32 = fields.next()?.parse().ok()?;
        let itself = fields.next().map_or(Some(0), |itself| itself.parse().ok())?;
        Some(Row { abbreviation, expansion, packages, itself })
    }
}

fn is_lowercase_word(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// The reading real code gives `token`, when one reading clearly wins and is well attested.
pub fn expansion_of(token: &str) -> Option<&'static str> {
    let readings = &PAIRS.get(token)?.readings;
    let (first, packages) = *readings.first()?;
    let total: u32 = readings.iter().map(|(_, packages)| packages).sum();
    (packages >= MIN_PACKAGES_ALONE && f64::from(packages) >= MIN_SHARE * f64::from(total)).then_some(first)
}

/// Whether real code was seen spelling `token` out as `word`, in enough packages.
pub fn knows(token: &str, word: &str) -> bool {
    PAIRS.get(token).is_some_and(|sightings| {
        sightings.readings.iter().any(|(known, packages)| *known == word && *packages >= MIN_PACKAGES)
    })
}

/// Whether real code uses `token`, a word of its own (`net`, `mod`), short for `word` more
/// often than as itself: in more packages, and in enough of them. `extract` beside
/// "extraction" is the word itself.
pub fn used_short_for(token: &str, word: &str) -> bool {
    PAIRS.get(token).is_some_and(|sightings| {
        sightings
            .readings
            .iter()
            .any(|(known, packages)| *known == word && *packages >= MIN_PACKAGES && *packages > sightings.itself)
    })
}

/// The words real code uses `token` short for more often than as itself.
pub fn short_for(token: &str) -> impl Iterator<Item = &'static str> {
    PAIRS.get(token).into_iter().flat_map(|sightings| {
        sightings
            .readings
            .iter()
            .filter(|(_, packages)| *packages >= MIN_PACKAGES && *packages > sightings.itself)
            .map(|(word, _)| *word)
    })
}

/// Whether real code uses `token` short for some word more often than as itself.
pub fn shortens(token: &str) -> bool {
    short_for(token).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_shipped_lexicon_reads() {
        let rows: Vec<&str> =
            LEXICON.lines().filter(|line| !line.starts_with('#') && !line.trim().is_empty()).collect();
        assert!(rows.len() > 1000, "the lexicon has {} rows", rows.len());
        for (number, line) in rows.iter().enumerate() {
            assert!(Row::parse(line).is_some(), "row {}: {line:?}", number + 1);
        }
    }

    #[test]
    fn a_word_used_as_itself_is_not_taken_short() {
        let pairs = parse("extract\textraction\t11\t18\t69\nnet\tnetwork\t7\t46\t6\nbad row\n");
        let sightings = &pairs["extract"];
        assert!(sightings.readings[0].1 <= sightings.itself);
        assert!(pairs["net"].readings[0].1 > pairs["net"].itself);
        assert_eq!(pairs.len(), 2, "a malformed row is passed over");
    }
}
