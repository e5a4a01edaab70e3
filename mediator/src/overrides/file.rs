//! Override files: their shape, loading and validation, and choosing the file for a source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use tool_mediator_core::Place;

/// The JSON Schema every override file must meet (`mediator/overrides/schema.json`).
pub const SCHEMA: &str = include_str!("../../overrides/schema.json");

static VALIDATOR: LazyLock<jsonschema::Validator> = LazyLock::new(|| {
    let schema: Value = serde_json::from_str(SCHEMA).expect("overrides/schema.json is JSON");
    jsonschema::validator_for(&schema).expect("overrides/schema.json is a valid schema")
});

/// The curated corrections for one source's tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideFile {
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// A domain, a wildcard over its subdomains (`*.example.com`), or an MCP server name.
    pub source: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    /// Keyed by the name the source publishes.
    pub tools: IndexMap<String, ToolOverride>,
}

/// What an override says of one tool. Fields left out keep what the source says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ToolOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Merged into the tool's annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Map<String, Value>>,
    /// Replaces the source's schema; uses the exposed parameter names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Value>,
    /// Keyed by the source's parameter name.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub arguments: IndexMap<String, ArgumentOverride>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
}

impl ToolOverride {
    /// Whether the override changes the tool's definition, not only its category or visibility.
    pub fn changes_definition(&self) -> bool {
        self.name.is_some()
            || self.title.is_some()
            || self.description.is_some()
            || self.annotations.is_some()
            || self.input_schema.is_some()
            || !self.arguments.is_empty()
    }
}

/// What an override says of one parameter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArgumentOverride {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An override file that cannot be used. Each names the file and the place in it.
#[derive(Debug, thiserror::Error)]
pub enum OverrideError {
    #[error("cannot read {path}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}{place}: {message}")]
    Syntax { path: PathBuf, place: Place, message: String },
    #[error("{path}: `{pointer}`: {message}")]
    Schema { path: PathBuf, pointer: String, message: String },
}

impl OverrideError {
    pub fn path(&self) -> &Path {
        match self {
            OverrideError::Read { path, .. }
            | OverrideError::Syntax { path, .. }
            | OverrideError::Schema { path, .. } => path,
        }
    }
}

impl OverrideFile {
    /// Parses and validates one override file's text; `path` is only for error messages.
    pub fn parse(text: &str, path: &Path) -> Result<OverrideFile, OverrideError> {
        let value: Value = tool_mediator_core::json::from_str(text).map_err(|error| OverrideError::Syntax {
            path: path.to_owned(),
            place: Place::of_json_error(text, &error),
            message: tool_mediator_core::json::message(&error),
        })?;
        if let Some(error) = VALIDATOR.iter_errors(&value).next() {
            return Err(OverrideError::Schema {
                path: path.to_owned(),
                pointer: error.instance_path().to_string(),
                message: error.to_string(),
            });
        }
        let file: OverrideFile = serde_json::from_value(value).map_err(|error| OverrideError::Schema {
            path: path.to_owned(),
            pointer: String::new(),
            message: error.to_string(),
        })?;
        // A replacement schema the chain would refuse would take the whole entry with it
        // (a `hidden: true` included), so it is refused here, where the curator sees it.
        for (name, entry) in &file.tools {
            if let Some(schema) = &entry.input_schema
                && let Err(error) = tool_mediator_core::schema::check(schema)
            {
                return Err(OverrideError::Schema {
                    path: path.to_owned(),
                    pointer: format!(
                        "/tools/{}/inputSchema{}",
                        tool_mediator_core::schema::escape(name),
                        error.pointer
                    ),
                    message: error.message,
                });
            }
        }
        Ok(file)
    }

    /// Reads and parses the override file at `path`: a regular file only, so that a fifo put
    /// in a directory's place after it was listed never holds up a reading of the directory.
    pub fn load(path: &Path) -> Result<OverrideFile, OverrideError> {
        let text = crate::read::read_regular(path, crate::read::MAX_FILE_SIZE)
            .map_err(|error| OverrideError::Read { path: path.to_owned(), source: error.into() })?;
        OverrideFile::parse(&text, path)
    }

    /// Every name this file answers to: its source and its aliases.
    pub fn patterns(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.source.as_str()).chain(self.aliases.iter().map(String::as_str))
    }
}

/// All loaded override files, by the sources they are for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OverrideSet {
    exact: BTreeMap<String, IndexMap<String, ToolOverride>>,
    /// `*.example.com` stored as `.example.com`.
    wildcards: BTreeMap<String, IndexMap<String, ToolOverride>>,
    files: Vec<PathBuf>,
}

impl OverrideSet {
    pub fn new() -> Self {
        OverrideSet::default()
    }

    /// Loads every `*.json` file of `dir` except `schema.json`, in name order.
    pub fn load_dir(&mut self, dir: &Path) -> Result<(), OverrideError> {
        for path in override_files(dir)? {
            let file = OverrideFile::load(&path)?;
            self.add(file, path);
        }
        Ok(())
    }

    /// Adds a file. Entries for a tool already present are replaced, so a later directory
    /// refines an earlier one.
    pub fn add(&mut self, file: OverrideFile, path: PathBuf) {
        // Domains are case-insensitive, and server names are matched the same way.
        let patterns: Vec<String> = file.patterns().map(str::to_ascii_lowercase).collect();
        for pattern in patterns {
            let (table, key) = match pattern.strip_prefix('*') {
                Some(suffix) if suffix.starts_with('.') => (&mut self.wildcards, suffix.to_owned()),
                _ => (&mut self.exact, pattern),
            };
            let tools = table.entry(key).or_default();
            for (name, tool) in &file.tools {
                tools.insert(name.clone(), tool.clone());
            }
        }
        self.files.push(path);
    }

    /// The overrides for `source`: an exact match first, then the most specific wildcard.
    /// `*.example.com` matches `api.example.com` and `a.b.example.com`, not `example.com`.
    pub fn for_source(&self, source: &str) -> Option<&IndexMap<String, ToolOverride>> {
        let source = source.to_ascii_lowercase();
        if let Some(tools) = self.exact.get(&source) {
            return Some(tools);
        }
        self.wildcards
            .iter()
            .filter(|(suffix, _)| source.len() > suffix.len() && source.ends_with(suffix.as_str()))
            .max_by_key(|(suffix, _)| suffix.len())
            .map(|(_, tools)| tools)
    }

    /// Adds every file of `later`, as if added here in its order: its entries replace these.
    pub fn extend(&mut self, later: OverrideSet) {
        for (table, entries) in [(&mut self.exact, later.exact), (&mut self.wildcards, later.wildcards)] {
            for (key, tools) in entries {
                table.entry(key).or_default().extend(tools);
            }
        }
        self.files.extend(later.files);
    }

    /// The sources there are overrides for, in name order: `example.com`, and a wildcard as
    /// written (`*.example.com`), lowercase.
    pub fn sources(&self) -> Vec<String> {
        let mut sources: Vec<String> = self.exact.keys().cloned().collect();
        sources.extend(self.wildcards.keys().map(|suffix| format!("*{suffix}")));
        sources.sort();
        sources
    }

    /// The files loaded, in load order.
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.wildcards.is_empty()
    }
}

/// The override files in `dir`, in name order.
pub fn override_files(dir: &Path) -> Result<Vec<PathBuf>, OverrideError> {
    let read_error = |source| OverrideError::Read { path: dir.to_owned(), source };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_error)? {
        let path = entry.map_err(read_error)?.path();
        let is_json = path.extension().is_some_and(|ext| ext == "json");
        let is_schema = path.file_name().is_some_and(|name| name == "schema.json");
        if is_json && !is_schema && path.is_file() {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<OverrideFile, OverrideError> {
        OverrideFile::parse(text, Path::new("o.json"))
    }

    /// A fifo put in a directory's place of an override file after the directory was listed
    /// (the gateway reads its directories again as it serves) is refused, never waited on.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_not_read_as_an_override_file() {
        use tool_mediator_core::error::with_causes;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("example.com.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let (sender, receiver) = std::sync::mpsc::channel();
        let at = fifo.clone();
        std::thread::spawn(move || sender.send(OverrideFile::load(&at).map(drop).map_err(|error| with_causes(&error))));
        let loaded = receiver.recv_timeout(std::time::Duration::from_secs(10)).expect("the fifo is not waited on");
        let error = loaded.unwrap_err();
        assert!(error.contains("example.com.json") && error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn syntax_errors_name_line_and_column() {
        let error = parse("{\n  \"source\": \"x\",\n  \"tools\": {,}\n}").unwrap_err();
        assert!(error.to_string().starts_with("o.json:3:13:"), "{error}");
    }

    #[test]
    fn schema_errors_name_the_json_pointer() {
        let error = parse(r#"{"source": "x", "tools": {"a": {"nmae": "b"}}}"#).unwrap_err();
        assert!(matches!(&error, OverrideError::Schema { pointer, .. } if pointer == "/tools/a"), "{error}");
        let error = parse(r#"{"source": "x", "tools": {"a": {"name": "has space"}}}"#).unwrap_err();
        assert!(matches!(&error, OverrideError::Schema { pointer, .. } if pointer == "/tools/a/name"), "{error}");
        let error = parse(r#"{"source": "x", "tools": {"a/b": {"inputSchema": {"type": "object", "properties": {"x": {"type": "float"}}}}}}"#)
            .unwrap_err();
        assert!(
            matches!(&error, OverrideError::Schema { pointer, .. } if pointer == "/tools/a~1b/inputSchema/properties/x/type"),
            "{error}"
        );
    }

    #[test]
    fn sources_match_exactly_then_by_most_specific_wildcard() {
        let mut set = OverrideSet::new();
        for (source, tool) in [("example.com", "exact"), ("*.example.com", "wild"), ("*.api.example.com", "deeper")] {
            let file =
                parse(&format!(r#"{{"source": "{source}", "tools": {{"{tool}": {{"hidden": true}}}}}}"#)).unwrap();
            set.add(file, PathBuf::from(source));
        }
        let first = |source: &str| set.for_source(source).map(|tools| tools.keys().next().unwrap().clone());
        assert_eq!(first("example.com").as_deref(), Some("exact"));
        assert_eq!(first("www.example.com").as_deref(), Some("wild"));
        assert_eq!(first("v1.api.example.com").as_deref(), Some("deeper"));
        assert_eq!(first("badexample.com"), None);
        assert_eq!(first("WWW.Example.COM").as_deref(), Some("wild"));
        assert_eq!(first("other.org"), None);
    }

    #[test]
    fn later_files_refine_earlier_ones() {
        let mut set = OverrideSet::new();
        set.add(
            parse(r#"{"source": "s", "tools": {"a": {"description": "one"}, "b": {"hidden": true}}}"#).unwrap(),
            "1".into(),
        );
        set.add(parse(r#"{"source": "s", "tools": {"a": {"description": "two"}}}"#).unwrap(), "2".into());
        let tools = set.for_source("s").unwrap();
        assert_eq!(tools["a"].description.as_deref(), Some("two"));
        assert!(tools["b"].hidden);

        let mut later = OverrideSet::new();
        later.add(parse(r#"{"source": "s", "tools": {"b": {"description": "three"}}}"#).unwrap(), "3".into());
        set.extend(later);
        let tools = set.for_source("s").unwrap();
        assert_eq!(tools["a"].description.as_deref(), Some("two"));
        assert_eq!((tools["b"].description.as_deref(), tools["b"].hidden), (Some("three"), false));
        assert_eq!(set.files(), [PathBuf::from("1"), "2".into(), "3".into()]);
    }
}
