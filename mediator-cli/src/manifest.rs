//! Manifest files: reading them within a limit, finding them in directories. What a manifest
//! is, its formats and dialects, is the library's (`tool_mediator::manifest`).

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
pub use tool_mediator::manifest::{Dialect, Manifest, Origin};
use tool_mediator::read::ReadError;

use crate::output::FileIdentity;

/// The largest manifest read unless a command says otherwise (`--max-input-size`).
pub const MAX_INPUT_SIZE: u64 = 1 << 30;

/// Reads a manifest from a file or standard input, refusing one larger than `limit` bytes (a
/// device such as /dev/zero never ends); for a file, also its state when it was read, so that
/// rewriting it can refuse when another process has changed it since.
pub fn read(origin: Origin, limit: u64) -> Result<(Manifest, Option<FileIdentity>)> {
    let mut identity = None;
    let input: Box<dyn std::io::Read> = match &origin {
        Origin::File(path) => {
            let file = std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
            // Taken before reading, so that a change made after the read shows.
            let metadata = file.metadata().with_context(|| format!("cannot read {}", path.display()))?;
            identity = Some(FileIdentity::of(&metadata));
            Box::new(file)
        }
        Origin::Stdin => Box::new(std::io::stdin()),
    };
    let length = identity.as_ref().map_or(0, FileIdentity::length);
    let name = PathBuf::from(origin.to_string());
    let text = match tool_mediator::read::read_text_from(input, length, &name, limit) {
        Ok(text) => text,
        Err(ReadError::TooLarge { .. }) => {
            bail!("{origin}: larger than the limit of {limit} bytes (raise it with --max-input-size)")
        }
        Err(ReadError::NotUtf8 { place, .. }) => bail!("{origin}{place}: not UTF-8 text (JSON must be UTF-8)"),
        Err(ReadError::Io { source, .. }) => return Err(source).with_context(|| format!("cannot read {origin}")),
    };
    Ok((Manifest::parse(&text, origin)?, identity))
}

/// Expands the command line's inputs: files as given, directories to their `.json` and
/// `.jsonl` files (recursively, in name order), `-` or nothing to standard input. Nothing, when
/// standard input is a terminal, is a mistake said at once, not a wait for typing.
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<Origin>> {
    if inputs.is_empty() {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            bail!(
                "no manifest given: name files or directories, or pipe one into standard input \
                 (`-` reads it from the terminal, ended by Ctrl-D)"
            );
        }
        return Ok(vec![Origin::Stdin]);
    }
    let mut origins = Vec::new();
    for input in inputs {
        let before = origins.len();
        if input == Path::new("-") {
            origins.push(Origin::Stdin);
        } else if input.is_dir() {
            let mut found = Vec::new();
            collect_manifests(input, &mut found)?;
            found.sort();
            origins.extend(found.into_iter().map(Origin::File));
            if origins.len() == before {
                bail!("{}: no manifests here (*.json, *.jsonl, *.ndjson)", input.display());
            }
        } else {
            origins.push(Origin::File(input.clone()));
        }
    }
    if origins.iter().filter(|origin| **origin == Origin::Stdin).count() > 1 {
        bail!("standard input (`-`) can be read only once");
    }
    Ok(origins)
}

fn collect_manifests(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("cannot read directory {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read directory {}", dir.display()))?;
        let path = entry.path();
        // Links to directories are not followed: a link loop would never end.
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir {
            collect_manifests(&path, found)?;
        } else if path.extension().is_some_and(|ext| ext == "json" || ext == "jsonl" || ext == "ndjson")
            && path.is_file()
        {
            found.push(path);
        }
    }
    Ok(())
}
