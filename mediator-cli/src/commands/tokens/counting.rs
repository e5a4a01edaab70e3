//! Counting a listing's tokens and each of its tools' in one reading of the listing.
//!
//! The tokenizer splits a text into pieces by its pattern before it encodes each piece, and a
//! piece never spans more than its pattern lets it: between two tools of a listing (`},{`) only
//! a run of punctuation does, and a tool read alone begins and ends with the parts of those runs
//! that are its own. So the listing is read once: each piece counts for the listing, a piece
//! inside a tool counts for that tool, and a run across tools counts for each tool with the part
//! of it that tool holds, encoded alone. Pieces repeat (a listing's keys, its words), and each
//! distinct one is encoded once. The two halves of a long listing are read at once, split where a
//! piece is sure to begin.

use std::collections::HashMap;
use std::ops::Range;

use serde::Serialize;
use tiktoken_rs::CoreBPE;

/// The tokens of a listing (`{"tools":[...]}` of `tools`, each compact JSON), and of each tool
/// as it would be read alone.
pub struct Counted {
    pub total: usize,
    pub each: Vec<usize>,
}

/// Counts the listing `{"tools":[...]}` of `tools` (compact JSON) and each tool of it, with
/// `bpe`; an error when the tokenizer's pattern gives up on the text (as `bpe` would).
pub fn listing<T: Serialize>(bpe: &CoreBPE, tools: &[T]) -> anyhow::Result<Counted> {
    let (text, spans) = listing_text(tools)?;
    let pattern = fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).expect("the tokenizer's pattern");
    let split = split_point(&text, &spans);
    let (first, second) = std::thread::scope(|scope| {
        let (pattern, text, spans) = (&pattern, &text, &spans);
        let second = split.map(|at| scope.spawn(move || read(bpe, pattern, text, at..text.len(), spans)));
        let first = read(bpe, pattern, text, 0..split.unwrap_or(text.len()), spans);
        (first, second.map(|second| second.join().expect("the second half is read")))
    });
    let mut counted = first.map_err(|error| anyhow::anyhow!("the tokenizer's pattern: {error}"))?;
    let second = second.transpose().map_err(|error| anyhow::anyhow!("the tokenizer's pattern: {error}"))?;
    if let Some(second) = second {
        counted.total += second.total;
        for (mine, theirs) in counted.each.iter_mut().zip(second.each) {
            *mine += theirs;
        }
    }
    Ok(counted)
}

/// The listing of `tools` as compact JSON (what `{"tools": tools}` serializes to), and where
/// each tool lies in it.
fn listing_text<T: Serialize>(tools: &[T]) -> serde_json::Result<(String, Vec<Range<usize>>)> {
    let mut text = Vec::new();
    text.extend_from_slice(br#"{"tools":["#);
    let mut spans = Vec::with_capacity(tools.len());
    for (index, tool) in tools.iter().enumerate() {
        if index > 0 {
            text.push(b',');
        }
        let start = text.len();
        serde_json::to_writer(&mut text, tool)?;
        spans.push(start..text.len());
    }
    text.extend_from_slice(b"]}");
    // serde_json writes UTF-8.
    Ok((String::from_utf8(text).expect("JSON is UTF-8"), spans))
}

/// Where the listing can be read in two halves: right after the `{"` a tool in its middle
/// opens with, when a letter or a digit follows (the run of punctuation before it ends there,
/// and a piece begins). `None` for a listing too short to be worth two.
fn split_point(text: &str, spans: &[Range<usize>]) -> Option<usize> {
    const WORTH_SPLITTING: usize = 1 << 20;
    if text.len() < WORTH_SPLITTING {
        return None;
    }
    spans[spans.len() / 2..].iter().find_map(|span| {
        let opens = text[span.clone()].starts_with("{\"");
        let at = span.start + 2;
        (opens && text[at..].chars().next().is_some_and(|next| next.is_ascii_alphanumeric())).then_some(at)
    })
}

/// Reads the pieces of `text[range]` (which begins where a piece does): their tokens in all,
/// and each tool's share.
fn read<'a>(
    bpe: &CoreBPE,
    pattern: &fancy_regex::Regex,
    text: &'a str,
    range: Range<usize>,
    spans: &[Range<usize>],
) -> Result<Counted, fancy_regex::Error> {
    let mut cache: HashMap<&str, usize> = HashMap::new();
    let mut tokens = |piece: &'a str| -> usize {
        if let Some(&known) = cache.get(piece) {
            return known;
        }
        let counted = bpe.encode_ordinary(piece).len();
        cache.insert(piece, counted);
        counted
    };
    let mut counted = Counted { total: 0, each: vec![0; spans.len()] };
    // The first tool that may hold a piece still to come.
    let mut tool = spans.partition_point(|span| span.end <= range.start);
    let start = range.start;
    for found in pattern.find_iter(&text[range]) {
        let found = found?;
        let piece = found.start() + start..found.end() + start;
        let n = tokens(&text[piece.clone()]);
        counted.total += n;
        while tool < spans.len() && spans[tool].end <= piece.start {
            tool += 1;
        }
        let mut inside = tool;
        while inside < spans.len() && spans[inside].start < piece.end {
            let span = &spans[inside];
            let part = piece.start.max(span.start)..piece.end.min(span.end);
            counted.each[inside] += if part == piece { n } else { tokens(&text[part]) };
            inside += 1;
        }
    }
    Ok(counted)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The listing and each tool encoded whole, as a model's tokenizer reads them.
    fn as_read_whole(bpe: &CoreBPE, tools: &[String]) -> (usize, Vec<usize>) {
        let whole = format!(r#"{{"tools":[{}]}}"#, tools.join(","));
        let each = tools.iter().map(|tool| bpe.encode_ordinary(tool).len()).collect();
        (bpe.encode_ordinary(&whole).len(), each)
    }

    fn raw(tools: &[String]) -> Vec<Box<serde_json::value::RawValue>> {
        tools.iter().map(|tool| serde_json::value::RawValue::from_string(tool.clone()).unwrap()).collect()
    }

    fn assert_counted_as_whole(tools: &[String]) {
        let bpe = tiktoken_rs::o200k_base_singleton();
        let counted = listing(bpe, &raw(tools)).unwrap();
        let (total, each) = as_read_whole(bpe, tools);
        assert_eq!(counted.total, total);
        for (index, (counted, whole)) in counted.each.iter().zip(&each).enumerate() {
            assert_eq!(counted, whole, "{}", tools[index]);
        }
    }

    #[test]
    fn odd_tools_count_as_they_read_whole() {
        let tools = [
            r#"{"name":"a","description":"ends with a space "}"#,
            r#"{"_meta":{"x":1},"name":"b"}"#,
            r#"{"name":"c","inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":5}}}}"#,
            r#"{"name":"d","annotations":{"readOnlyHint":true}}"#,
            r#"{"name":"é","description":"日本語のテキスト, it's \"quoted\"\n and 12345 / 6"}"#,
            r#"{"$schema":"x","name":"f"}"#,
            r#"{"name":"g","description":"   spaced   "}"#,
        ];
        assert_counted_as_whole(&tools.map(str::to_owned));
    }

    #[test]
    fn real_listings_count_as_they_read_whole_in_one_half_or_two() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/manifests");
        let mut all = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|extension| extension != "json") {
                continue;
            }
            let text = std::fs::read_to_string(path).unwrap();
            let document: serde_json::Value = serde_json::from_str(&text).unwrap();
            let tools = document["tools"].as_array().or_else(|| document["result"]["tools"].as_array());
            let tools: Vec<String> = tools.into_iter().flatten().map(|tool| tool.to_string()).collect();
            assert_counted_as_whole(&tools);
            all.extend(tools);
        }
        // Past a mebibyte the listing is read in two halves at once.
        let mut many = Vec::new();
        while many.iter().map(String::len).sum::<usize>() < 3 << 20 {
            many.extend(all.iter().cloned());
        }
        let (text, spans) = listing_text(&raw(&many)).unwrap();
        assert!(split_point(&text, &spans).is_some());
        assert_counted_as_whole(&many);
    }
}
