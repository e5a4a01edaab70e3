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

/// One short word's readings, most packages first.
type Readings = Vec<(&'static str, u32)>;

static PAIRS: LazyLock<HashMap<&'static str, Readings>> = LazyLock::new(|| {
    let mut pairs: HashMap<&'static str, Readings> = HashMap::new();
    for line in LEXICON.lines().filter(|line| !line.starts_with('#') && !line.trim().is_empty()) {
        let mut fields = line.split('\t');
        let (Some(abbreviation), Some(expansion), Some(packages)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Ok(packages) = packages.parse::<u32>() else { continue };
        pairs.entry(abbreviation).or_default().push((expansion, packages));
    }
    for readings in pairs.values_mut() {
        readings.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    }
    pairs
});

/// The reading real code gives `token`, when one reading clearly wins and is well attested.
pub fn expansion_of(token: &str) -> Option<&'static str> {
    let readings = PAIRS.get(token)?;
    let (first, packages) = *readings.first()?;
    let total: u32 = readings.iter().map(|(_, packages)| packages).sum();
    (packages >= MIN_PACKAGES_ALONE && f64::from(packages) >= MIN_SHARE * f64::from(total)).then_some(first)
}

/// Whether real code was seen spelling `token` out as `word`, in enough packages.
pub fn knows(token: &str, word: &str) -> bool {
    PAIRS
        .get(token)
        .is_some_and(|readings| readings.iter().any(|(known, packages)| *known == word && *packages >= MIN_PACKAGES))
}

/// Whether real code was seen using `token` as a short form of anything, in enough packages.
pub fn shortens(token: &str) -> bool {
    PAIRS.get(token).is_some_and(|readings| readings.iter().any(|(_, packages)| *packages >= MIN_PACKAGES))
}
