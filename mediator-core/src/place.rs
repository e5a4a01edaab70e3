//! Where in a file something is: the one place every error names. Lines and columns count from
//! 1, and a column counts characters, as an editor shows it (never bytes).

use std::fmt;

/// A place in a file: a line and column, a line of a JSON Lines file, or a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A line and column of the text, both from 1; the column in characters.
    At { line: usize, column: usize },
    /// A line of a JSON Lines file.
    Line(usize),
    /// A JSON pointer (`""` for the whole document).
    Pointer(String),
}

impl Place {
    /// The line and column of byte `offset` in `text` (an offset past the end, or inside a
    /// character, is taken back to the character it falls in).
    pub fn at(text: &str, offset: usize) -> Place {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        Place::At { line: before.matches('\n').count() + 1, column: before[line_start..].chars().count() + 1 }
    }

    /// Where serde_json stopped reading `text`. Its column counts bytes; this one, characters.
    /// An error with no place (line 0) is placed at the start.
    pub fn of_json_error(text: &str, error: &serde_json::Error) -> Place {
        Place::at(text, offset_of_json_error(text, error))
    }

    /// The place in words, for a message that does not follow a file's name: `line 3, column
    /// 14`, `line 7` or `` `/tools/0` ``.
    pub fn in_words(&self) -> String {
        match self {
            Place::At { line, column } => format!("line {line}, column {column}"),
            Place::Line(line) => format!("line {line}"),
            Place::Pointer(pointer) => format!("`{pointer}`"),
        }
    }

    /// Where the text of a document starts, after leading whitespace.
    pub fn start_of(text: &str) -> Place {
        Place::at(text, text.len() - text.trim_start().len())
    }
}

/// An error about the file at `path`, worded the one way the program words them: `FILE:PLACE:
/// message` for what is wrong in it; for a file that cannot be read or written at all (no place,
/// and a message `cannot read: CAUSE` or `cannot write: CAUSE`), `cannot read FILE: CAUSE`.
pub fn about_file(path: &std::path::Path, place: Option<&Place>, message: &str) -> String {
    if place.is_none() {
        for verb in ["cannot read", "cannot write"] {
            if let Some(cause) = message.strip_prefix(verb).and_then(|rest| rest.strip_prefix(": ")) {
                return format!("{verb} {}: {cause}", path.display());
            }
        }
    }
    format!("{}{}: {message}", path.display(), place.map(ToString::to_string).unwrap_or_default())
}

/// The byte offset in `text` where serde_json stopped reading it (0 for an error with no place).
pub fn offset_of_json_error(text: &str, error: &serde_json::Error) -> usize {
    if error.line() == 0 {
        return 0;
    }
    let line_start = text.split_inclusive('\n').take(error.line() - 1).map(str::len).sum::<usize>();
    let line_end = text[line_start..].find('\n').map_or(text.len(), |newline| line_start + newline);
    (line_start + error.column().saturating_sub(1)).min(line_end)
}

impl fmt::Display for Place {
    /// As it follows a file's name: `:3:14`, `:7` or `: `/tools/0``.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::At { line, column } => write!(f, ":{line}:{column}"),
            Place::Line(line) => write!(f, ":{line}"),
            Place::Pointer(pointer) => write!(f, ": `{pointer}`"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Place;

    fn at(line: usize, column: usize) -> Place {
        Place::At { line, column }
    }

    #[test]
    fn a_column_counts_characters_not_bytes() {
        let text = "{\n  \"naïve ☃\": x}";
        let offset = text.find('x').unwrap();
        assert_eq!(Place::at(text, offset), at(2, 14));
        assert_eq!(Place::at(text, 0), at(1, 1));
        assert_eq!(Place::at(text, text.len() + 10), at(2, 16));
        // Inside the snowman: the snowman's own column.
        assert_eq!(Place::at(text, text.find('☃').unwrap() + 1), at(2, 10));
    }

    #[test]
    fn serde_jsons_byte_columns_become_character_columns() {
        let text = "{\n  \"naïve ☃\": x}";
        let error = serde_json::from_str::<serde_json::Value>(text).unwrap_err();
        assert_eq!((error.line(), error.column()), (2, 17), "serde_json counts bytes");
        assert_eq!(Place::of_json_error(text, &error), at(2, 14));
        let end = serde_json::from_str::<serde_json::Value>("[1,\n").unwrap_err();
        assert_eq!(Place::of_json_error("[1,\n", &end), at(2, 1));
    }

    #[test]
    fn a_document_starts_after_its_leading_whitespace() {
        assert_eq!(Place::start_of("\n\n   {}"), at(3, 4));
        assert_eq!(Place::start_of("{}"), at(1, 1));
    }

    #[test]
    fn a_place_reads_as_it_follows_a_file_name() {
        assert_eq!(format!("a.json{}", at(3, 14)), "a.json:3:14");
        assert_eq!(format!("a.jsonl{}", Place::Line(7)), "a.jsonl:7");
        assert_eq!(format!("a.json{}", Place::Pointer("/tools/0".into())), "a.json: `/tools/0`");
        assert_eq!(at(3, 14).in_words(), "line 3, column 14");
        assert_eq!(Place::Pointer("/tools/0".into()).in_words(), "`/tools/0`");
    }

    #[test]
    fn a_file_that_cannot_be_read_at_all_is_named_after_the_verb() {
        use super::about_file;
        use std::path::Path;
        let path = Path::new("servers.json");
        assert_eq!(about_file(path, None, "cannot read: gone"), "cannot read servers.json: gone");
        assert_eq!(about_file(path, None, "cannot write: full"), "cannot write servers.json: full");
        assert_eq!(about_file(path, None, "not UTF-8 text"), "servers.json: not UTF-8 text");
        assert_eq!(about_file(path, Some(&at(2, 3)), "cannot read: odd"), "servers.json:2:3: cannot read: odd");
    }
}
