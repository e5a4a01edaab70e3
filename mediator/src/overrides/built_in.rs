//! The curated override files that travel with the program: `mediator/overrides/*.json`,
//! embedded when the crate is built, so an installed binary and the Node package apply them
//! without a checkout beside them. A user's own directories are layered over them.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use super::{OverrideFile, OverrideSet};

/// Each embedded file's name and text, in name order (the order a directory is loaded in).
/// A test checks this list against the folder, so a file added there is not left out here.
const FILES: &[(&str, &str)] = &[
    ("example.com.json", include_str!("../../overrides/example.com.json")),
    ("mcp-fetch.json", include_str!("../../overrides/mcp-fetch.json")),
    ("secure-filesystem-server.json", include_str!("../../overrides/secure-filesystem-server.json")),
];

/// What a built-in file is called where a path is shown: `built-in:example.com.json`.
pub const BUILT_IN_PREFIX: &str = "built-in:";

/// The built-in files, parsed and checked once.
static PARSED: LazyLock<Vec<(PathBuf, OverrideFile)>> = LazyLock::new(|| {
    FILES
        .iter()
        .map(|(name, text)| {
            let path = PathBuf::from(format!("{BUILT_IN_PREFIX}{name}"));
            let file = OverrideFile::parse(text, &path)
                .unwrap_or_else(|error| panic!("a built-in override file is invalid (a test checks them): {error}"));
            (path, file)
        })
        .collect()
});

/// The built-in override files: the name each is shown by, and the file.
pub fn built_in_files() -> impl Iterator<Item = (&'static Path, &'static OverrideFile)> {
    PARSED.iter().map(|(path, file)| (path.as_path(), file))
}

impl OverrideSet {
    /// The curated files built into the program, to layer a user's own directories over.
    pub fn built_in() -> OverrideSet {
        let mut set = OverrideSet::new();
        for (path, file) in built_in_files() {
            set.add(file.clone(), path.to_owned());
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::overrides::override_files;

    #[test]
    fn every_file_in_the_folder_is_built_in_and_valid() {
        let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("overrides");
        let on_disk: Vec<String> = override_files(&folder)
            .unwrap()
            .iter()
            .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        let embedded: Vec<&str> = FILES.iter().map(|(name, _)| *name).collect();
        assert_eq!(embedded, on_disk, "list each file of mediator/overrides in FILES");
        for (name, text) in FILES {
            assert_eq!(*text, std::fs::read_to_string(folder.join(name)).unwrap());
        }
        assert_eq!(built_in_files().count(), FILES.len(), "every built-in file parses");
    }

    #[test]
    fn the_built_in_set_answers_for_the_curated_sources() {
        let set = OverrideSet::built_in();
        assert!(set.for_source("example.com").is_some_and(|tools| tools.contains_key("gt_usr")));
        assert!(set.for_source("secure-filesystem-server").is_some());
        assert!(set.for_source("other.org").is_none());
        assert_eq!(set.sources(), ["example.com", "mcp-fetch", "secure-filesystem-server"]);
        assert!(set.files().iter().all(|path| path.to_string_lossy().starts_with(BUILT_IN_PREFIX)));
    }
}
