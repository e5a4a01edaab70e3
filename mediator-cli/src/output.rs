//! Writing results: atomic file writes, standard output, diffs.

use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result};

/// Writes `text` to `path` through a temporary file in the same directory and a rename, so a
/// reader sees the old file or the new one, never a partial one. Keeps the old file's
/// permissions.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let mut temporary = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    temporary.write_all(text.as_bytes()).with_context(|| format!("cannot write {}", path.display()))?;
    temporary.as_file().sync_all().with_context(|| format!("cannot write {}", path.display()))?;
    if let Ok(metadata) = std::fs::metadata(path) {
        // Best effort: a file we may replace but not chmod still gets written.
        let _ = std::fs::set_permissions(temporary.path(), metadata.permissions());
    }
    temporary.persist(path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
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
