//! Checking override files beyond their schema: names, rename collisions, schemas.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use super::file::{OverrideError, OverrideFile, override_files};
use tool_mediator_core::NameRules;
use tool_mediator_core::schema::escape;

/// One problem in an override file, at a JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintFinding {
    pub path: PathBuf,
    pub pointer: String,
    pub message: String,
}

impl fmt::Display for LintFinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: `{}`: {}", self.path.display(), self.pointer, self.message)
    }
}

impl From<OverrideError> for LintFinding {
    fn from(error: OverrideError) -> Self {
        let path = error.path().to_owned();
        match error {
            OverrideError::Schema { pointer, message, .. } => LintFinding { path, pointer, message },
            OverrideError::Syntax { place, message, .. } => {
                LintFinding { path, pointer: String::new(), message: format!("{}: {message}", place.in_words()) }
            }
            OverrideError::Read { source, .. } => {
                LintFinding { path, pointer: String::new(), message: source.to_string() }
            }
        }
    }
}

/// Lints every override file in `dir`: each must load (JSON, schema), its renames must be
/// valid under `names` and collide with nothing, its schemas must be valid object schemas,
/// and no two files may claim the same source.
pub fn lint(dir: &Path, names: NameRules) -> Result<Vec<LintFinding>, OverrideError> {
    let mut findings = Vec::new();
    let mut claimed: HashMap<String, PathBuf> = HashMap::new();
    for path in override_files(dir)? {
        let file = match OverrideFile::load(&path) {
            Ok(file) => file,
            Err(error) => {
                findings.push(error.into());
                continue;
            }
        };
        for pattern in file.patterns() {
            if let Some(other) = claimed.insert(pattern.to_owned(), path.clone()) {
                findings.push(LintFinding {
                    path: path.clone(),
                    pointer: "/source".into(),
                    message: format!("source `{pattern}` is also claimed by {}", other.display()),
                });
            }
        }
        findings.extend(lint_file(&file, &path, names));
    }
    Ok(findings)
}

/// Lints one loaded file.
pub fn lint_file(file: &OverrideFile, path: &Path, names: NameRules) -> Vec<LintFinding> {
    let mut findings = Vec::new();
    let mut finding =
        |pointer: String, message: String| findings.push(LintFinding { path: path.to_owned(), pointer, message });

    // The names tools end up with: renamed ones by their new name, the rest by their own.
    let mut exposed: HashMap<&str, &str> = HashMap::new();
    for (source_name, entry) in &file.tools {
        let pointer = format!("/tools/{}", escape(source_name));
        let name = entry.name.as_deref().unwrap_or(source_name);
        if !names.is_valid(name) {
            finding(format!("{pointer}/name"), format!("`{name}` is not a valid tool name for this client profile"));
        }
        if let Some(first) = exposed.insert(name, source_name) {
            finding(
                format!("{pointer}/name"),
                format!("`{source_name}` and `{first}` would both be exposed as `{name}`"),
            );
        }
        let mut argument_names: HashSet<&str> = HashSet::new();
        for (argument, change) in &entry.arguments {
            let exposed_argument = change.name.as_deref().unwrap_or(argument);
            if !argument_names.insert(exposed_argument) {
                finding(
                    format!("{pointer}/arguments/{}/name", escape(argument)),
                    format!("two parameters would both be exposed as `{exposed_argument}`"),
                );
            }
            if let Some(properties) =
                entry.input_schema.as_ref().and_then(|s| s.get("properties")).and_then(|p| p.as_object())
                && !properties.contains_key(argument)
                && !properties.contains_key(exposed_argument)
            {
                finding(
                    format!("{pointer}/arguments/{}", escape(argument)),
                    format!("the override's inputSchema has no parameter `{argument}` or `{exposed_argument}`"),
                );
            }
        }
    }
    for (source_name, entry) in &file.tools {
        if let Some(name) = &entry.name
            && name != source_name
            && let Some(owner) = file.tools.get(name)
            && owner.name.as_deref().is_none_or(|n| n == name)
        {
            finding(
                format!("/tools/{}/name", escape(source_name)),
                format!("renames onto `{name}`, a tool of the same source that keeps its name"),
            );
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(text: &str) -> Vec<String> {
        let file = OverrideFile::parse(text, Path::new("o.json")).unwrap();
        lint_file(&file, Path::new("o.json"), NameRules::STRICT).into_iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn clean_file_has_no_findings() {
        assert!(
            findings(r#"{"source": "s", "tools": {"gt_usr": {"name": "get_user"}, "del": {"name": "delete"}}}"#)
                .is_empty()
        );
    }

    #[test]
    fn collisions_invalid_names_and_schemas_are_found() {
        let found = findings(
            r#"{"source": "s", "tools": {
                "a": {"name": "b"},
                "b": {},
                "c": {"name": "d"},
                "e": {"name": "d"},
                "f": {"name": "ns.f"},
                "g": {"arguments": {"a": {"name": "b"}, "c": {"name": "b"}}}
            }}"#,
        );
        assert!(found.iter().any(|f| f.contains("/tools/b/name") || f.contains("renames onto `b`")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("/tools/e/name") && f.contains("both be exposed as `d`")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("/tools/f/name") && f.contains("not a valid tool name")), "{found:?}");
        assert!(found.iter().any(|f| f.contains("/tools/g/arguments/c/name")), "{found:?}");
    }
}
