//! Writing results: atomic file writes, standard output, diffs.

use std::collections::{HashMap, HashSet};
use std::fs::{self, Metadata};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use anyhow::{Context as _, Result, bail};

/// A file to write.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    pub path: &'a Path,
    pub text: &'a str,
    /// When the file is the input the text was made from: how it was when it was read. If it
    /// has changed since, nothing is written.
    pub read_as: Option<FileIdentity>,
    pub kind: Kind,
}

/// Whose file a path names, which decides how it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A file the user named (an output, an input rewritten in place): a link is written
    /// through, a file with other hard links is written in place (see [`Writing`]).
    Named,
    /// A file tool-mediator keeps beside one the user named (a backup, a gateway's servers file
    /// and record). Whatever a project planted there must not redirect it, so it is always a
    /// new file renamed into the path's own directory: never opened through a link, never
    /// written into another file (a hard-linked one is replaced, its other names keep their
    /// bytes). A link, a directory, a fifo or anything else that is not a regular file in the
    /// way is refused before anything is written. `mode`: its permissions, new or replaced.
    Side { mode: u32 },
}

/// Which file a path named and the state it was in: its device and inode, its length and its
/// modification time (to the nanosecond where the file system keeps them). A change by another
/// process within one tick of the file system's clock that keeps the length is not seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileIdentity {
    device: u64,
    inode: u64,
    length: u64,
    modified: Option<SystemTime>,
}

impl FileIdentity {
    pub fn of(metadata: &Metadata) -> FileIdentity {
        #[cfg(unix)]
        let (device, inode) = {
            use std::os::unix::fs::MetadataExt as _;
            (metadata.dev(), metadata.ino())
        };
        #[cfg(not(unix))]
        let (device, inode) = (0, 0);
        FileIdentity { device, inode, length: metadata.len(), modified: metadata.modified().ok() }
    }

    /// The file's length in bytes when it was looked at.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// Whether `path` names this file now (the same device and inode), whatever its content.
    pub fn is_file_at(&self, path: &Path) -> bool {
        cfg!(unix)
            && fs::metadata(path).is_ok_and(|metadata| {
                let now = FileIdentity::of(&metadata);
                (now.device, now.inode) == (self.device, self.inode)
            })
    }
}

/// Writes each `(path, text)` as [`write_files`] does.
pub fn write_atomically(files: &[(PathBuf, String)]) -> Result<()> {
    let outputs: Vec<Output<'_>> =
        files.iter().map(|(path, text)| Output { path, text, read_as: None, kind: Kind::Named }).collect();
    write_files(&outputs)
}

/// Writes every file as [`Writing`] does, from texts in memory.
pub fn write_files(files: &[Output<'_>]) -> Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    // Every file is checked before the first temporary file is made.
    for file in files {
        target(file.path, file.kind)?;
    }
    let mut writing = Writing::start(files[0].path)?;
    for file in files {
        writing.stage_as(file.path, file.read_as, file.kind, |out| out.write_all(file.text.as_bytes()))?;
    }
    writing.finish()
}

/// Files being written, each through a temporary file beside it and a rename, so a reader
/// sees an old file or a new one, never a partial one.
///
/// - A file's new content is streamed into its temporary file ([`Writing::stage`]), so it is
///   never held in memory whole; every temporary file is written and synced before the first
///   rename ([`Writing::finish`]), so a full disk or a read-only directory stops the run before
///   any file is replaced.
/// - Just before the first rename, every file that is an input (`read_as`) is checked again: if
///   another process changed one since it was read, nothing is written.
/// - A link is written through: its final target gets the new text and the link stays a link.
/// - A file we may not write is not replaced, even though its directory would let us rename
///   over it; a file no one may write (no `w` bit, which root is not stopped by) neither.
/// - A replaced file keeps its owner, group and mode; a new one gets 0644.
/// - A side file ([`Kind::Side`]) is neither followed nor written in place.
/// - A file with other hard links is written in place, so that every name sees the new text
///   (see [`Staged::commit`]: the one write that is not atomic).
/// - SIGINT, SIGTERM and SIGHUP while files are written remove the temporary files and end the
///   process with 128 + the signal's number; one that comes while the files are being renamed
///   waits until they all are. Dropping an unfinished `Writing` removes its temporary files.
pub struct Writing {
    staged: Vec<Staged>,
    /// Each target's device and inode, to the position of its first staging: two outputs can
    /// be one file (a link and its target, two hard links, a name given twice).
    seen: HashMap<(u64, u64), usize>,
    created: Vec<PathBuf>,
    // Dropped last: signals are caught until every temporary file is gone.
    _interrupts: interrupt::Catch,
}

impl Writing {
    /// Starts catching interrupting signals; `first` names the first file, for the error.
    pub fn start(first: &Path) -> Result<Writing> {
        let interrupts = interrupt::Catch::start()
            .with_context(|| format!("cannot write {}: cannot watch for interrupting signals", first.display()))?;
        Ok(Writing { staged: Vec::new(), seen: HashMap::new(), created: Vec::new(), _interrupts: interrupts })
    }

    /// Writes the new content of `path`, through `write`, into a temporary file beside the file
    /// it names. `read_as`: the file is the input the content was made from, as it was read.
    pub fn stage(
        &mut self,
        path: &Path,
        read_as: Option<FileIdentity>,
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<()> {
        self.stage_as(path, read_as, Kind::Named, write)
    }

    fn stage_as(
        &mut self,
        path: &Path,
        read_as: Option<FileIdentity>,
        kind: Kind,
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let (target, existing) = target(path, kind)?;
        let staged = Staged::new(path, read_as, kind, target, existing.as_ref(), &mut self.created, write)?;
        // A side file is replaced, never shared with another name, so it aliases nothing.
        let identity = existing.as_ref().filter(|_| cfg!(unix) && kind == Kind::Named).map(FileIdentity::of);
        let Some(identity) = identity else {
            self.staged.push(staged);
            return Ok(());
        };
        match self.seen.get(&(identity.device, identity.inode)) {
            Some(&first) => {
                let other = &self.staged[first];
                if !same_content(other.temporary.path(), staged.temporary.path())? {
                    bail!(
                        "{} and {} are the same file, and their texts differ: write them one at a time",
                        other.path.display(),
                        path.display()
                    );
                }
            }
            None => {
                self.seen.insert((identity.device, identity.inode), self.staged.len());
                self.staged.push(staged);
            }
        }
        Ok(())
    }

    /// Puts every staged file in place, unless one read as an input has changed since.
    pub fn finish(mut self) -> Result<()> {
        // From here on an interrupting signal waits until every file is in place.
        let _renaming = temporaries();
        for file in &self.staged {
            file.check_unchanged()?;
        }
        for file in std::mem::take(&mut self.staged) {
            file.commit()?;
        }
        Ok(())
    }
}

impl Drop for Writing {
    fn drop(&mut self) {
        // The temporary files not renamed are removed as `staged` drops; none is listed after.
        self.staged.clear();
        let created: HashSet<&PathBuf> = self.created.iter().collect();
        temporaries().retain(|path| !created.contains(path));
    }
}

fn same_content(a: &Path, b: &Path) -> Result<bool> {
    let read = |path: &Path| fs::read(path).with_context(|| format!("cannot read back {}", path.display()));
    Ok(read(a)? == read(b)?)
}

/// The file to replace or create for `path`, and how it is now (`None`: there is none yet).
/// Refuses, naming the path, what must not be written.
fn target(path: &Path, kind: Kind) -> Result<(PathBuf, Option<Metadata>)> {
    let (target, existing) = match kind {
        Kind::Named => resolve(path)?,
        Kind::Side { .. } => (path.to_owned(), side_file(path)?),
    };
    if let Some(existing) = &existing {
        check_writable(&target, path, existing)?;
    }
    Ok((target, existing))
}

/// What is at a side file's path: nothing, or a regular file (not a link to one). Anything
/// else is refused, as it may have been put there to redirect the write.
fn side_file(path: &Path) -> Result<Option<Metadata>> {
    let metadata = match fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("cannot write {}", path.display())),
        Ok(metadata) => metadata,
    };
    let kind = metadata.file_type();
    if kind.is_file() {
        return Ok(Some(metadata));
    }
    let what = if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a directory"
    } else {
        tool_mediator::read::NOT_REGULAR
    };
    bail!(
        "cannot write {}: it is {what}, and tool-mediator writes its own files only as new files or over regular \
         files; nothing was written (remove it, or move it aside)",
        path.display()
    )
}

/// Refuses to replace a file we may not write (with our effective ids), however writable its
/// directory is, and a file no one may write (no `w` bit), which root is not stopped from
/// writing but which someone made read-only on purpose. An editor asks first in both cases.
#[cfg(unix)]
fn check_writable(target: &Path, path: &Path, existing: &Metadata) -> Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    use std::os::unix::fs::PermissionsExt as _;
    if existing.permissions().mode() & 0o222 == 0 {
        bail!("cannot write {}: read-only (no one may write it); nothing was written", path.display());
    }
    let name = std::ffi::CString::new(target.as_os_str().as_bytes())
        .with_context(|| format!("cannot write {}: a NUL byte in its name", path.display()))?;
    // SAFETY: a valid C string; faccessat only reads it.
    if unsafe { libc::faccessat(libc::AT_FDCWD, name.as_ptr(), libc::W_OK, libc::AT_EACCESS) } != 0 {
        let error = std::io::Error::last_os_error();
        bail!("cannot write {}: {error}; nothing was written", path.display());
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_writable(_: &Path, path: &Path, existing: &Metadata) -> Result<()> {
    if existing.permissions().readonly() {
        bail!("cannot write {}: read-only; nothing was written", path.display());
    }
    Ok(())
}

/// The file a path names: its final target for a link, the path itself for a file that does
/// not exist yet. Only regular files are written.
fn resolve(path: &Path) -> Result<(PathBuf, Option<Metadata>)> {
    match fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok((path.to_owned(), None)),
        Err(error) => return Err(error).with_context(|| format!("cannot write {}", path.display())),
        Ok(_) => {}
    }
    let target =
        fs::canonicalize(path).with_context(|| format!("cannot write {}: cannot follow the link", path.display()))?;
    let metadata = fs::metadata(&target).with_context(|| format!("cannot write {}", path.display()))?;
    if !metadata.is_file() {
        bail!("cannot write {}: not a regular file", path.display());
    }
    Ok((target, Some(metadata)))
}

/// A file whose new content waits in a temporary file beside it.
struct Staged {
    /// The path as given, for messages.
    path: PathBuf,
    read_as: Option<FileIdentity>,
    /// The file to replace or write: the path's final target (the path itself for a side file).
    target: PathBuf,
    temporary: tempfile::NamedTempFile,
    /// The target has other hard links: it is written in place, not replaced.
    in_place: bool,
    kind: Kind,
    /// Whether there was a file to replace when it was staged.
    existed: bool,
}

impl Staged {
    #[allow(clippy::too_many_arguments)]
    fn new(
        path: &Path,
        read_as: Option<FileIdentity>,
        kind: Kind,
        target: PathBuf,
        existing: Option<&Metadata>,
        created: &mut Vec<PathBuf>,
        write: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
    ) -> Result<Staged> {
        let dir = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        let temporary = create_temporary(dir, created).with_context(|| {
            format!("cannot write {}: cannot create a temporary file in {}", path.display(), dir.display())
        })?;
        let mut out = std::io::BufWriter::with_capacity(256 * 1024, temporary.as_file());
        write(&mut out)
            .and_then(|()| out.flush())
            .and_then(|()| temporary.as_file().sync_all())
            .with_context(|| format!("cannot write {}", path.display()))?;
        drop(out);
        let in_place = kind == Kind::Named && existing.is_some_and(has_other_links);
        let moded = match kind {
            Kind::Named if in_place => Ok(()),
            Kind::Named => keep_owner_and_mode(temporary.as_file(), existing),
            Kind::Side { mode } => set_mode(temporary.as_file(), mode),
        };
        moded.with_context(|| format!("cannot write {}: cannot set its mode", path.display()))?;
        let existed = existing.is_some();
        Ok(Staged { path: path.to_owned(), read_as, target, temporary, in_place, kind, existed })
    }

    /// Fails when the file was read as an input and has changed since, or when what is at a
    /// side file's path is no longer what was checked.
    fn check_unchanged(&self) -> Result<()> {
        if let Kind::Side { .. } = self.kind
            && side_file(&self.path)?.is_some() != self.existed
        {
            bail!("{}: made by another process meanwhile; nothing was written", self.path.display());
        }
        let Some(read_as) = self.read_as else {
            return Ok(());
        };
        let now = fs::metadata(&self.target).ok().map(|metadata| FileIdentity::of(&metadata));
        if now != Some(read_as) {
            bail!(
                "{}: changed by another process while tool-mediator was working; nothing was written",
                self.path.display()
            );
        }
        Ok(())
    }

    fn commit(self) -> Result<()> {
        let path = &self.path;
        if let (Kind::Side { .. }, false) = (self.kind, self.existed) {
            // Created where there was nothing: if something appeared since, it stays.
            self.temporary
                .persist_noclobber(&self.target)
                .map_err(|error| error.error)
                .with_context(|| format!("cannot create {}", path.display()))?;
            return Ok(());
        }
        if !self.in_place {
            self.temporary
                .persist(&self.target)
                .map_err(|error| error.error)
                .with_context(|| format!("cannot replace {}", path.display()))?;
            return Ok(());
        }
        // A file with other hard links is written in place, so the names keep sharing one file:
        // the one write that is not atomic. A reader may see a partial file, and a crash or a
        // failing disk during the write may leave one. The new text was written and synced to a
        // temporary file beside it first, so a full disk was found before the file was touched;
        // it is read back and removed before writing, which gives its space back, so the write
        // into the file, which needs at most that much more, cannot run out of space (unless
        // another process takes it meanwhile).
        let text = fs::read(self.temporary.path()).with_context(|| format!("cannot write {}", path.display()))?;
        self.temporary.close().with_context(|| format!("cannot write {}", path.display()))?;
        let mut file = fs::OpenOptions::new()
            .write(true)
            .open(&self.target)
            .with_context(|| format!("cannot write {}", path.display()))?;
        file.write_all(&text)
            .and_then(|()| file.set_len(text.len() as u64))
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

#[cfg(unix)]
fn has_other_links(metadata: &Metadata) -> bool {
    std::os::unix::fs::MetadataExt::nlink(metadata) > 1
}

#[cfg(not(unix))]
fn has_other_links(_: &Metadata) -> bool {
    false
}

/// Gives the temporary file the replaced file's owner, group and mode, or a new file's 0644.
#[cfg(unix)]
fn keep_owner_and_mode(file: &fs::File, existing: Option<&Metadata>) -> std::io::Result<()> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let Some(existing) = existing else {
        // Temporary files are created private (0600); an output file is an ordinary file.
        return file.set_permissions(fs::Permissions::from_mode(0o644));
    };
    // Best effort: only root may give a file to another user, and another user may give it only
    // to a group they belong to. A file that is not ours but that we may replace (its
    // directory is writable) becomes ours, as it would with any editor.
    if std::os::unix::fs::fchown(file, Some(existing.uid()), Some(existing.gid())).is_err() {
        let _ = std::os::unix::fs::fchown(file, None, Some(existing.gid()));
    }
    // After the chown, which clears the set-user-ID and set-group-ID bits.
    file.set_permissions(fs::Permissions::from_mode(existing.mode() & 0o7777))
}

#[cfg(unix)]
fn set_mode(file: &fs::File, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(fs::Permissions::from_mode(mode & 0o777))
}

#[cfg(not(unix))]
fn set_mode(_: &fs::File, _: u32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(not(unix))]
fn keep_owner_and_mode(file: &fs::File, existing: Option<&Metadata>) -> std::io::Result<()> {
    match existing {
        Some(existing) => file.set_permissions(existing.permissions()),
        None => Ok(()),
    }
}

/// The temporary files that exist now, for an interrupting signal to remove. A temporary file
/// is created and listed under one lock, and the files are renamed under it, so the signal sees
/// every one, and none is renamed while it removes them.
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temporaries() -> MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new temporary file in `dir`, listed for a signal and in `created`.
fn create_temporary(dir: &Path, created: &mut Vec<PathBuf>) -> std::io::Result<tempfile::NamedTempFile> {
    let mut temporaries = temporaries();
    let temporary = tempfile::NamedTempFile::new_in(dir)?;
    temporaries.push(temporary.path().to_owned());
    created.push(temporary.path().to_owned());
    Ok(temporary)
}

/// A signal ends the process without running destructors, so the temporary files that
/// `tempfile` removes on drop would stay. While a [`interrupt::Catch`] lives, SIGINT, SIGTERM
/// and SIGHUP are handled on a thread of their own, which removes the listed temporary files
/// and exits with 128 + the signal's number (130, 143, 129).
#[cfg(unix)]
mod interrupt {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::iterator::{Handle, Signals};

    pub struct Catch {
        handle: Handle,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    /// Whether a caught signal gets its default action: true except while files are written.
    /// Once signal-hook has installed its handler for a signal it keeps it, also after its
    /// actions are unregistered, and the signal would then be ignored; this brings the default
    /// action (ending the process) back.
    static DEFAULT_ACTION: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(true)));

    /// How many catches are alive (threads may write at once: the tests do).
    static CATCHES: Mutex<usize> = Mutex::new(0);

    fn count(change: impl FnOnce(&mut usize)) {
        let mut catches = CATCHES.lock().unwrap_or_else(PoisonError::into_inner);
        change(&mut catches);
        DEFAULT_ACTION.store(*catches == 0, Ordering::SeqCst);
    }

    /// The signals to catch, decided on first use: those the process was not started ignoring
    /// (under `nohup`, or as a background job of a script), which stay ignored.
    fn caught() -> &'static [libc::c_int] {
        static CAUGHT: OnceLock<Vec<libc::c_int>> = OnceLock::new();
        CAUGHT.get_or_init(|| {
            [SIGINT, SIGTERM, SIGHUP]
                .into_iter()
                .filter(|&signal| {
                    let action = current_action(signal);
                    if action == Some(libc::SIG_DFL) {
                        // Fails only for a signal signal-hook does not know: then it is caught
                        // while writing, and ignored after.
                        let _ = signal_hook::flag::register_conditional_default(signal, DEFAULT_ACTION.clone());
                    }
                    action != Some(libc::SIG_IGN)
                })
                .collect()
        })
    }

    fn current_action(signal: libc::c_int) -> Option<libc::sighandler_t> {
        // SAFETY: with a null new action, sigaction only reads the current one into `old`.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            (libc::sigaction(signal, std::ptr::null(), &mut old) == 0).then_some(old.sa_sigaction)
        }
    }

    impl Catch {
        pub fn start() -> std::io::Result<Catch> {
            let mut signals = Signals::new(caught())?;
            let handle = signals.handle();
            let thread = std::thread::Builder::new().name("interrupts".into()).spawn(move || {
                // `None` once the catch ends.
                if let Some(signal) = signals.forever().next() {
                    // Waits while files are being created or renamed; holds the lock until the end.
                    let temporaries = super::temporaries();
                    for path in temporaries.iter() {
                        let _ = std::fs::remove_file(path);
                    }
                    let name = signal_hook::low_level::signal_name(signal).unwrap_or("a signal");
                    eprintln!("error: interrupted by {name}; no temporary file is left");
                    std::process::exit(128 + signal);
                }
            });
            let thread = match thread {
                Ok(thread) => thread,
                Err(error) => {
                    handle.close();
                    return Err(error);
                }
            };
            count(|catches| *catches += 1);
            Ok(Catch { handle, thread: Some(thread) })
        }
    }

    impl Drop for Catch {
        fn drop(&mut self) {
            count(|catches| *catches -= 1);
            self.handle.close();
            if let Some(thread) = self.thread.take() {
                let _ = thread.join();
            }
            // The signal-hook actions are unregistered when the last of `Signals` and its
            // handle is dropped: the thread's now, this one's right after.
        }
    }
}

#[cfg(not(unix))]
mod interrupt {
    pub struct Catch;

    impl Catch {
        pub fn start() -> std::io::Result<Catch> {
            Ok(Catch)
        }
    }
}

/// Writes a new file; refuses to replace one that exists.
pub fn write_new(path: &Path, text: &str) -> Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))
}

/// Fails, as writing it would, when a side file ([`Kind::Side`]) cannot be put at `path`.
pub fn check_side(path: &Path) -> Result<()> {
    target(path, Kind::Side { mode: 0 }).map(drop)
}

/// Reads a side file ([`Kind::Side`]) whole, up to `limit` bytes: `None` when there is none. It
/// is never read through a link, nor when it is not a regular file (a fifo would never end).
pub fn read_side(path: &Path, limit: u64) -> Result<Option<String>> {
    if side_file(path)?.is_none() {
        return Ok(None);
    }
    // A link or a fifo put there since it was looked at is not opened either.
    let (file, metadata) = match tool_mediator::read::open_regular(path, tool_mediator::read::Links::Refused) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        other => other.with_context(|| format!("cannot read {}", path.display()))?,
    };
    Ok(Some(tool_mediator::read::read_text_from(file, metadata.len(), path, limit)?))
}

/// A path as it may reach a terminal: control, invisible and bidirectional characters escaped
/// (a file name can hold an escape sequence, or a line break that fakes another message).
pub fn shown(path: &Path) -> String {
    tool_mediator::screen::printable(&path.display().to_string()).into_owned()
}

/// Text made of lines, each escaped as [`shown`] escapes, the line breaks kept.
pub fn printable_lines(text: &str) -> String {
    text.split_inclusive('\n')
        .map(|line| match line.strip_suffix('\n') {
            Some(line) => format!("{}\n", tool_mediator::screen::printable(line)),
            None => tool_mediator::screen::printable(line).into_owned(),
        })
        .collect()
}

pub fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// A unified diff of two texts, or `None` when they are equal.
pub fn diff(old: &str, new: &str, name: &str) -> Option<String> {
    if old == new {
        return None;
    }
    let name = tool_mediator::screen::printable(name);
    let diff = similar::TextDiff::from_lines(old, new);
    Some(diff.unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")).to_string())
}

/// A reader that stopped reading (`| head`) is not an error.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(path: &Path) -> FileIdentity {
        FileIdentity::of(&fs::metadata(path).unwrap())
    }

    #[test]
    fn a_file_changed_since_it_was_read_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
        fs::write(&a, "old a").unwrap();
        fs::write(&b, "old b").unwrap();
        let (read_a, read_b) = (identity(&a), identity(&b));
        fs::write(&b, "b, changed by someone else").unwrap();
        let files = [
            Output { path: &a, text: "new a", read_as: Some(read_a), kind: Kind::Named },
            Output { path: &b, text: "new b", read_as: Some(read_b), kind: Kind::Named },
        ];
        let error = write_files(&files).unwrap_err().to_string();
        assert_eq!(
            error,
            format!("{}: changed by another process while tool-mediator was working; nothing was written", b.display())
        );
        assert_eq!(fs::read_to_string(&a).unwrap(), "old a", "nothing is written when one file changed");
        assert_eq!(fs::read_to_string(&b).unwrap(), "b, changed by someone else");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file is left");
        assert!(!temporaries().iter().any(|path| path.starts_with(dir.path())));

        // Unchanged since read (the same content written again keeps length, not time).
        let files = [Output { path: &a, text: "new a", read_as: Some(identity(&a)), kind: Kind::Named }];
        write_files(&files).unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "new a");
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_a_side_file_while_writing_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let (side, victim) = (dir.path().join("config.json.bak"), dir.path().join("victim"));
        fs::write(&victim, "victim").unwrap();
        let mut writing = Writing::start(&side).unwrap();
        writing.stage_as(&side, None, Kind::Side { mode: 0o600 }, |out| out.write_all(b"backup")).unwrap();
        // Between the check and the rename.
        std::os::unix::fs::symlink(&victim, &side).unwrap();
        let error = writing.finish().unwrap_err().to_string();
        assert!(error.contains("config.json.bak"), "{error}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "victim");
        assert!(fs::symlink_metadata(&side).unwrap().file_type().is_symlink(), "what appeared stays");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2, "no temporary file is left");
    }

    #[test]
    fn one_file_named_twice_is_written_once_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let link = dir.path().join("link.json");
        fs::write(&a, "old").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink("a.json", &link).unwrap();
        #[cfg(not(unix))]
        fs::copy(&a, &link).unwrap();
        write_files(&[
            Output { path: &a, text: "new", read_as: None, kind: Kind::Named },
            Output { path: &link, text: "new", read_as: None, kind: Kind::Named },
        ])
        .unwrap();
        assert_eq!(fs::read_to_string(&a).unwrap(), "new");
        if cfg!(unix) {
            let error = write_files(&[
                Output { path: &a, text: "one", read_as: None, kind: Kind::Named },
                Output { path: &link, text: "two", read_as: None, kind: Kind::Named },
            ])
            .unwrap_err();
            assert!(error.to_string().contains("are the same file"), "{error}");
            assert_eq!(fs::read_to_string(&a).unwrap(), "new");
        }
    }
}
