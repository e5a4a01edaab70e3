//! Writing results: atomic file writes, standard output, diffs.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

/// Writes each `(path, text)` through a temporary file in the same directory and a rename, so
/// a reader sees an old file or a new one, never a partial one. Every temporary file is written
/// before the first rename, so a full disk or a read-only directory stops the run before any
/// file is replaced. A replaced file keeps its permissions; a new one is readable by all.
pub fn write_atomically(files: &[(PathBuf, String)]) -> Result<()> {
    let mut prepared = Vec::with_capacity(files.len());
    for (path, text) in files {
        prepared.push((path, prepare(path, text)?));
    }
    for (path, temporary) in prepared {
        temporary.persist(path).with_context(|| format!("cannot replace {}", path.display()))?;
    }
    Ok(())
}

fn prepare(path: &Path, text: &str) -> Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    temporary.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    temporary.as_file().sync_all().with_context(|| format!("cannot write {}", path.display()))?;
    let permissions = match std::fs::metadata(path) {
        Ok(metadata) => metadata.permissions(),
        Err(_) => new_file_permissions(temporary.as_file())?,
    };
    // Best effort: a file we may replace but not chmod still gets written.
    let _ = temporary.as_file().set_permissions(permissions);
    Ok(temporary)
}

#[cfg(unix)]
fn new_file_permissions(_: &std::fs::File) -> Result<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    // Temporary files are created private (0600); an output file is an ordinary file.
    Ok(std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn new_file_permissions(file: &std::fs::File) -> Result<std::fs::Permissions> {
    Ok(file.metadata()?.permissions())
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
    let diff = similar::TextDiff::from_lines(old, new);
    Some(diff.unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")).to_string())
}

/// A reader that stopped reading (`| head`) is not an error.
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
