//! Input read within a limit: a file (a manifest, a configuration, a lock, an override file) is
//! read whole only when it fits, and a size is shown as people read it.

use std::fmt;
use std::path::{Path, PathBuf};

use tool_mediator_core::Place;

/// A byte count as people read it: `16 MiB`, `512 KiB`, `1000 bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const KIB: u64 = 1024;
        const MIB: u64 = 1024 * KIB;
        const GIB: u64 = 1024 * MIB;
        match self.0 {
            0 => f.write_str("0 bytes"),
            n if n % GIB == 0 => write!(f, "{} GiB", n / GIB),
            n if n % MIB == 0 => write!(f, "{} MiB", n / MIB),
            n if n % KIB == 0 => write!(f, "{} KiB", n / KIB),
            1 => f.write_str("1 byte"),
            n => write!(f, "{n} bytes"),
        }
    }
}

/// What a file was when looked at, to tell whether it changed since: a write in place changes
/// its time or length, a new file renamed into place its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    modified: Option<std::time::SystemTime>,
    length: u64,
    inode: u64,
    device: u64,
}

impl Stamp {
    /// The stamp of the file `metadata` describes.
    pub fn of(metadata: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let (inode, device) = {
            use std::os::unix::fs::MetadataExt as _;
            (metadata.ino(), metadata.dev())
        };
        #[cfg(not(unix))]
        let (inode, device) = (0, 0);
        Stamp { modified: metadata.modified().ok(), length: metadata.len(), inode, device }
    }
}

/// The largest settings-like file read whole (a configuration, a lock, an override, servers
/// or dictionary file, a client's configuration): far above any real one, far below what would
/// fill memory. A device such as /dev/zero never ends.
pub const MAX_FILE_SIZE: u64 = 128 << 20;

/// Why a file could not be read whole as text.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}: larger than the limit of {}", path.display(), Bytes(*limit))]
    TooLarge { path: PathBuf, limit: u64 },
    #[error("{}{place}: not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf, place: Place },
}

/// For readers whose errors hold an [`std::io::Error`]: the path is theirs to name.
impl From<ReadError> for std::io::Error {
    fn from(error: ReadError) -> std::io::Error {
        match error {
            ReadError::Io { source, .. } => source,
            ReadError::TooLarge { limit, .. } => std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("larger than the limit of {}", Bytes(limit)),
            ),
            ReadError::NotUtf8 { place, .. } => {
                std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{}: not UTF-8 text", place.in_words()))
            }
        }
    }
}

/// A settings-like file (configuration, overrides, a lock, a dictionary, a prompt, a servers
/// file) read whole within [`MAX_FILE_SIZE`], as [`std::fs::read_to_string`] would.
pub fn read_settings(path: &Path) -> std::io::Result<String> {
    read_text(path, MAX_FILE_SIZE).map_err(std::io::Error::from)
}

/// Reads the file at `path` whole as UTF-8 text, refusing one larger than `limit` bytes. A
/// byte order mark is kept: the parsers here read past it ([`without_bom`](tool_mediator_core::json::without_bom)), and text written
/// back keeps it.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    let io = |source| ReadError::Io { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let length = file.metadata().map_err(io)?.len();
    read_text_from(file, length, path, limit)
}

/// [`read_text`] of what `input` gives (a file already open, standard input); `length` is what
/// it is expected to hold (a file's length, else 0), and `path` names it in errors.
pub fn read_text_from(input: impl std::io::Read, length: u64, path: &Path, limit: u64) -> Result<String, ReadError> {
    use std::io::Read as _;
    let io = |source| ReadError::Io { path: path.to_owned(), source };
    // Room for exactly the bytes a regular file has: growing by doubling would leave the buffer
    // up to twice the file.
    let expected = length.min(limit);
    let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0).saturating_add(1));
    input.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge { path: path.to_owned(), limit });
    }
    String::from_utf8(bytes).map_err(|error| {
        let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
        let valid = std::str::from_utf8(valid).unwrap_or_default();
        ReadError::NotUtf8 { path: path.to_owned(), place: Place::at(valid, valid.len()) }
    })
}

#[cfg(test)]
mod tests {
    use super::{Bytes, ReadError, read_text_from};
    use std::path::Path;

    #[test]
    fn text_that_is_not_utf8_is_placed_in_characters_and_in_words_for_an_io_error() {
        // Ten characters (eleven bytes) before the bad byte on its line.
        let bytes: &[u8] = b"{\n  \"caf\xc3\xa9\": \xff}";
        let error = read_text_from(bytes, 0, Path::new("c.json"), 1024).unwrap_err();
        assert_eq!(error.to_string(), "c.json:2:11: not UTF-8 text");
        assert!(matches!(error, ReadError::NotUtf8 { .. }));
        assert_eq!(std::io::Error::from(error).to_string(), "line 2, column 11: not UTF-8 text");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(Bytes(16 * 1024 * 1024).to_string(), "16 MiB");
        assert_eq!(Bytes(32 * 1024 * 1024).to_string(), "32 MiB");
        assert_eq!(Bytes(2048).to_string(), "2 KiB");
        assert_eq!(Bytes(1000).to_string(), "1000 bytes");
        assert_eq!(Bytes(1).to_string(), "1 byte");
    }
}
