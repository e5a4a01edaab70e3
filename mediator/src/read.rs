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

/// Whether a link in a file's place is followed when the file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Read what the link points at (a settings file kept in a dotfiles repository).
    Followed,
    /// A link is an error (`ELOOP`): the file is one the mediator keeps, never read through a
    /// link someone else put there.
    Refused,
}

/// What the error says of a file that is not a regular one.
pub const NOT_REGULAR: &str = "not a regular file (a fifo, a socket or a device)";

/// Opens the file at `path` to read, and only when it is a regular file: a fifo, a socket or a
/// device is never waited on. It is opened without blocking (an open of a fifo with no writer
/// would wait for one) and looked at before a byte is read, so a fifo put in its place between
/// a look and the open is refused too. A file that is not there is [`std::io::ErrorKind::NotFound`].
pub fn open_regular(path: &Path, links: Links) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    let not_regular = || std::io::Error::new(std::io::ErrorKind::InvalidInput, NOT_REGULAR);
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        let no_follow = if links == Links::Refused { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_NONBLOCK | no_follow);
    }
    #[cfg(not(unix))]
    {
        // No opening without blocking here: the look before is all there is.
        let metadata = match links {
            Links::Followed => std::fs::metadata(path)?,
            Links::Refused => std::fs::symlink_metadata(path)?,
        };
        if !metadata.is_file() {
            return Err(not_regular());
        }
    }
    let file = options.open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(not_regular());
    }
    Ok((file, metadata))
}

/// [`read_text`] of a regular file only ([`open_regular`]): what a front door that runs for
/// long reads again while it serves (a gateway's servers file), which a fifo must never freeze.
pub fn read_regular(path: &Path, limit: u64) -> Result<String, ReadError> {
    let (file, metadata) =
        open_regular(path, Links::Followed).map_err(|source| ReadError::Io { path: path.to_owned(), source })?;
    read_text_from(file, metadata.len(), path, limit)
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

    /// Regression (issue 42): a fifo at a settings file froze the gateway that read it.
    #[cfg(unix)]
    #[test]
    fn a_fifo_a_directory_or_a_device_is_refused_without_waiting_and_a_link_as_asked() {
        use super::{Links, NOT_REGULAR, open_regular, read_regular};
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("servers.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        // On a thread: before the fix the open waited for a writer for good.
        let (sender, receiver) = std::sync::mpsc::channel();
        let at = fifo.clone();
        std::thread::spawn(move || sender.send(read_regular(&at, 1024).map_err(|error| error.to_string())));
        let read = receiver.recv_timeout(std::time::Duration::from_secs(10)).expect("the fifo is not waited on");
        assert_eq!(read.unwrap_err(), format!("cannot read {}: {NOT_REGULAR}", fifo.display()));
        for other in [dir.path(), Path::new("/dev/zero")] {
            let error = read_regular(other, 1024).unwrap_err().to_string();
            assert!(error.ends_with(NOT_REGULAR), "{error}");
        }

        let file = dir.path().join("file.json");
        std::fs::write(&file, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link, 1024).unwrap(), "{}", "a link is followed when asked");
        assert!(open_regular(&link, Links::Refused).is_err(), "and refused when asked");
        assert!(open_regular(&file, Links::Refused).is_ok());
        let gone = open_regular(&dir.path().join("gone.json"), Links::Followed).unwrap_err();
        assert_eq!(gone.kind(), std::io::ErrorKind::NotFound);
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
