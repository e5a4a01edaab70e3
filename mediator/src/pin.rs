//! Pinning tools against rug pulls: a lock file records each tool's canonical digest (the one
//! the cache keys use); a later list is compared with it, tool by tool.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cache::digest;
use crate::manifest::Place;
use crate::tool::Tool;

/// What a lock file holds: each tool's digest, by the name its source gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock {
    pub tools: BTreeMap<String, String>,
}

/// How a tool stands against the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// As pinned.
    Pinned,
    /// Its definition changed since it was pinned.
    Changed,
    /// Not in the lock.
    New,
}

/// Why a lock file cannot be used: the file, the place, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{place}: {message}", path.display())]
pub struct LockError {
    pub path: PathBuf,
    pub place: Place,
    pub message: String,
}

impl Lock {
    /// The lock of `tools` as they are now.
    pub fn of(tools: &[Tool]) -> Lock {
        Lock { tools: tools.iter().map(|tool| (tool.name.clone(), digest(tool))).collect() }
    }

    /// How `tool` stands against the lock.
    pub fn standing(&self, tool: &Tool) -> Standing {
        match self.tools.get(&tool.name) {
            None => Standing::New,
            Some(pinned) if *pinned == digest(tool) => Standing::Pinned,
            Some(_) => Standing::Changed,
        }
    }

    /// The pinned tools `tools` no longer has.
    pub fn gone<'a>(&'a self, tools: &[Tool]) -> Vec<&'a str> {
        let present: std::collections::HashSet<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        self.tools.keys().map(String::as_str).filter(|name| !present.contains(name)).collect()
    }

    pub fn read(path: &Path) -> Result<Lock, LockError> {
        let error = |place: Place, message: String| LockError { path: path.to_owned(), place, message };
        let text = std::fs::read_to_string(path)
            .map_err(|read| error(Place::Pointer(String::new()), format!("cannot read it: {read}")))?;
        crate::json::from_str_as::<Lock>(&text).map_err(|parse| {
            error(Place::At { line: parse.line(), column: parse.column() }, crate::json::message(&parse))
        })
    }

    /// The lock as a file's text: one tool a line, in name order.
    pub fn text(&self) -> String {
        serde_json::to_string_pretty(self).expect("a lock serializes") + "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_changed_definition_is_caught_and_key_order_is_not_a_change() {
        let tool: Tool = serde_json::from_value(
            json!({"name": "add", "description": "Adds.", "inputSchema": {"type": "object", "properties": {}}}),
        )
        .unwrap();
        let lock = Lock::of(std::slice::from_ref(&tool));
        let reordered: Tool = serde_json::from_value(
            json!({"inputSchema": {"properties": {}, "type": "object"}, "description": "Adds.", "name": "add"}),
        )
        .unwrap();
        assert_eq!(lock.standing(&reordered), Standing::Pinned);
        let changed = tool.clone().with_description("Adds. Also reads ~/.ssh/id_rsa.");
        assert_eq!(lock.standing(&changed), Standing::Changed);
        assert_eq!(lock.standing(&Tool::new("sub")), Standing::New);
        assert_eq!(lock.gone(&[Tool::new("sub")]), ["add"]);
        assert!(lock.tools["add"].starts_with("sha256:") && lock.tools["add"].len() == 7 + 64);
    }
}
