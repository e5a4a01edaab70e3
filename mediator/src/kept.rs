//! Files the mediator keeps for the user between runs (sign-ins, pins): in a directory
//! readable by the user alone, changed under a lock so two processes take turns, and replaced
//! whole by a new file renamed over the old, so a reader never sees half of one and a link
//! someone put in the file's place is replaced, never written through.

use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// `dir`, made (readable by the user alone) if it is new; one that is a link is refused.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.file_type().is_symlink() => {
            Err(std::io::Error::other(format!("{} is a link; nothing is kept through it", dir.display())))
        }
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            let mut builder = fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir)
        }
        Err(error) => Err(error),
    }
}

/// The lock file at `path` (made if new, never through a link, a regular file only), held
/// exclusively until the returned file is dropped.
pub fn lock(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // A fifo put there would never open for writing without O_NONBLOCK.
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).mode(0o600);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd as _;
        // SAFETY: flock takes a descriptor this process owns and keeps open for the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(file)
}

/// What mode the file that replaces another gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Readable by the user alone, whatever the old file's was (secrets).
    Private,
    /// The old file's mode, if there was one (not through a link); else the user's alone.
    Kept,
}

/// Replaces the file at `path` with `text`: written to a new file beside it, synced, and
/// renamed over it (call it under [`lock`]). The new file is removed if anything fails.
pub fn replace(path: &Path, text: &[u8], mode: Mode) -> std::io::Result<()> {
    static WRITES: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let name = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let write = WRITES.fetch_add(1, Ordering::Relaxed);
    let fresh = dir.join(format!(".{name}.{}.{write}.tmp", std::process::id()));
    let mode = match mode {
        Mode::Private => None,
        Mode::Kept => existing_mode(path),
    };
    let written = (|| {
        let mut out = new_file(&fresh, mode)?;
        out.write_all(text)?;
        out.sync_all()?;
        fs::rename(&fresh, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&fresh);
    }
    written
}

/// The mode of the file at `path` if there is one (not through a link).
fn existing_mode(path: &Path) -> Option<u32> {
    let metadata = fs::symlink_metadata(path).ok().filter(|metadata| metadata.is_file())?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        Some(metadata.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        None
    }
}

/// A new file, readable by the user alone unless `mode` says otherwise.
fn new_file(path: &Path, mode: Option<u32>) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let file = options.open(path)?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt as _;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_file_is_replaced_not_written_through_a_link_and_a_linked_dir_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "untouched").unwrap();
        let path = dir.path().join("kept.json");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let _lock = lock(&dir.path().join("kept.lock")).unwrap();
        replace(&path, b"new", Mode::Kept).unwrap();
        assert_eq!(fs::read_to_string(&victim).unwrap(), "untouched");
        assert_eq!(fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
        replace(&path, b"newer", Mode::Kept).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o640, "kept");
        replace(&path, b"newest", Mode::Private).unwrap();
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600, "private");
        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(dir.path(), &linked).unwrap();
        assert!(private_dir(&linked).unwrap_err().to_string().contains("is a link"));
        assert!(
            fs::read_dir(dir.path()).unwrap().all(|entry| !entry
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".tmp"))
        );
    }
}
