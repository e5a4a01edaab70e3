//! Cursors: opaque to the client, each names the listing generation it was handed out for and
//! the offset of the next page, so a cursor from before a change is refused rather than skipping
//! or repeating tools.

use super::InvalidCursor;

const CURSOR_PREFIX: &str = "tm1.";

/// The position a cursor stands for, `None` for the first page.
pub(super) fn decode(cursor: Option<&str>) -> Result<Option<(u64, usize)>, InvalidCursor> {
    cursor.map(|cursor| decode_cursor(cursor).ok_or_else(|| InvalidCursor(cursor.to_owned()))).transpose()
}

pub(super) fn encode_cursor(generation: u64, offset: usize) -> String {
    format!("{CURSOR_PREFIX}{generation:x}.{offset:x}")
}

/// The listing generation and offset a cursor stands for.
pub(super) fn decode_cursor(cursor: &str) -> Option<(u64, usize)> {
    let (generation, offset) = cursor.strip_prefix(CURSOR_PREFIX)?.split_once('.')?;
    Some((u64::from_str_radix(generation, 16).ok()?, usize::from_str_radix(offset, 16).ok()?))
}
