//! Pinning tools against rug pulls: a lock file records each tool's canonical digest (the one
//! the cache keys use); a later list is compared with it, tool by tool. Trust on first use
//! ([`Pins`], kept in a [`PinsFile`]) needs no lock written first: each server's tools are pinned
//! the first time they are seen, and a change is held back until reviewed.

mod file;
mod trust;

pub use crate::read::Stamp;
pub use file::{PinsError, PinsFile};
pub use trust::{
    Definition, HeldTool, Hold, Pins, ServerPins, Unheld, Verdict, plain_server_key, quoted_for_shell, server_key,
};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cache::digest;
use tool_mediator_core::Place;
use tool_mediator_core::Tool;

/// What a lock file holds: each tool's digest, by the name its source gives it; a gateway's
/// tools by `<server>/<name>` (a tool's name has no `/`), so servers that share a name do not
/// share its pin.
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

/// Why a lock file cannot be used: the file, the place in it (none when it cannot be read at
/// all), what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", tool_mediator_core::about_file(path, place.as_ref(), message))]
pub struct LockError {
    pub path: PathBuf,
    pub place: Option<Place>,
    pub message: String,
}

impl Lock {
    /// The lock of `tools` as they are now.
    pub fn of(tools: &[Tool]) -> Lock {
        Lock { tools: tools.iter().map(|tool| (tool.name.clone(), digest(tool))).collect() }
    }

    /// The lock of several servers' tools, each by `<server>/<name>`.
    pub fn of_servers<'a>(servers: impl IntoIterator<Item = (&'a str, &'a [Tool])>) -> Lock {
        let tools = servers.into_iter().flat_map(|(server, tools)| {
            tools.iter().map(move |tool| (format!("{server}/{}", tool.name), digest(tool)))
        });
        Lock { tools: tools.collect() }
    }

    /// How `tool` stands against the lock.
    pub fn standing(&self, tool: &Tool) -> Standing {
        self.standing_of(None, tool)
    }

    /// How server `server`'s `tool` stands: by `<server>/<name>` when the lock has that (a
    /// gateway's lock), else by its name.
    pub fn standing_of(&self, server: Option<&str>, tool: &Tool) -> Standing {
        let qualified = server.filter(|server| !server.is_empty()).map(|server| format!("{server}/{}", tool.name));
        let pinned = qualified.as_ref().and_then(|name| self.tools.get(name)).or_else(|| self.tools.get(&tool.name));
        match pinned {
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

    /// Reads a lock file; an error names the file, and the line and column (JSON syntax) or
    /// the JSON pointer (a member that is not what a lock holds).
    pub fn read(path: &Path) -> Result<Lock, LockError> {
        let error = |place: Option<Place>, message: String| LockError { path: path.to_owned(), place, message };
        let text = crate::read::read_settings(path).map_err(|read| error(None, format!("cannot read: {read}")))?;
        let document = tool_mediator_core::json::from_str(&text).map_err(|parse| {
            error(Some(Place::of_json_error(&text, &parse)), tool_mediator_core::json::message(&parse))
        })?;
        Lock::from_value(document).map_err(|(place, message)| {
            // The document itself has no pointer to show: its place is where its text starts.
            let place = place.unwrap_or_else(|| Place::start_of(&text));
            error(Some(place), message.to_owned())
        })
    }

    /// The lock a document holds, or where (a pointer; none for the document) and why not.
    fn from_value(document: serde_json::Value) -> Result<Lock, (Option<Place>, &'static str)> {
        use serde_json::Value;
        let Value::Object(mut members) = document else {
            return Err((None, "a lock file is an object: {\"tools\": {\"NAME\": \"sha256:...\"}}"));
        };
        let tools = match members.remove("tools") {
            Some(Value::Object(tools)) => tools,
            Some(_) => {
                return Err((Some(Place::Pointer("/tools".to_owned())), "`tools` is an object of names and digests"));
            }
            None => return Err((None, "no `tools` object: a lock file is {\"tools\": {\"NAME\": \"sha256:...\"}}")),
        };
        let mut lock = Lock::default();
        for (name, digest) in tools {
            match digest {
                Value::String(digest) if is_digest(&digest) => {
                    lock.tools.insert(name, digest);
                }
                _ => {
                    let pointer = format!("/tools/{}", tool_mediator_core::schema::escape(&name));
                    return Err((Some(Place::Pointer(pointer)), "a digest is `sha256:` and 64 hexadecimal digits"));
                }
            }
        }
        Ok(lock)
    }

    /// The lock as a file's text: one tool a line, in name order.
    pub fn text(&self) -> String {
        serde_json::to_string_pretty(self).expect("a lock serializes") + "\n"
    }
}

/// Whether `text` is a digest as [`digest`] writes it.
pub(crate) fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:").is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
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
        // A gateway's lock: each server's tool by its own pin.
        let other = tool.clone().with_description("Adds, elsewhere.");
        let servers = Lock::of_servers([("a", std::slice::from_ref(&tool)), ("b", std::slice::from_ref(&other))]);
        assert_eq!(servers.standing_of(Some("a"), &tool), Standing::Pinned);
        assert_eq!(servers.standing_of(Some("b"), &other), Standing::Pinned);
        assert_eq!(servers.standing_of(Some("b"), &tool), Standing::Changed, "b's pin, not a's");
        assert_eq!(servers.standing_of(Some("c"), &tool), Standing::New);
        assert_eq!(lock.standing_of(Some("a"), &tool), Standing::Pinned, "a lock of one source serves any server");
        assert!(lock.tools["add"].starts_with("sha256:") && lock.tools["add"].len() == 7 + 64);
    }

    #[test]
    fn a_lock_file_that_cannot_be_used_is_named_with_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tools.lock.json");
        let shown = |text: &str| {
            std::fs::write(&path, text).unwrap();
            Lock::read(&path).unwrap_err().to_string().replace(&path.display().to_string(), "lock")
        };
        let missing = Lock::read(&dir.path().join("gone.json")).unwrap_err();
        assert_eq!(missing.place, None);
        assert!(!missing.to_string().contains("``"), "{missing}");
        let said = missing.to_string();
        assert!(said.starts_with(&format!("cannot read {}: ", dir.path().join("gone.json").display())), "{said}");
        assert_eq!(said.matches("cannot read").count(), 1, "{said}");
        assert_eq!(
            shown("{\"tools\": {\"add\": 1}}"),
            "lock: `/tools/add`: a digest is `sha256:` and 64 hexadecimal digits"
        );
        assert_eq!(shown("{\"tools\": {\"a/b\": \"sha256:x\"}}").split(':').nth(1), Some(" `/tools/a~1b`"));
        assert_eq!(shown("{\"tools\": []}"), "lock: `/tools`: `tools` is an object of names and digests");
        assert!(shown("\n  []").starts_with("lock:2:3: a lock file is an object"), "{}", shown("\n  []"));
        assert!(shown("{}").starts_with("lock:1:1: no `tools` object"));
        assert!(shown("{\"tools\": {,}}").starts_with("lock:1:"));
        let good = Lock::of(&[Tool::new("add")]);
        std::fs::write(&path, good.text()).unwrap();
        assert_eq!(Lock::read(&path).unwrap(), good);
    }

    /// Regression (probe): a lock file was read whole whatever its size (`--locked /dev/zero`
    /// grew without end); every settings-like file now has a limit.
    #[cfg(unix)]
    #[test]
    fn a_lock_file_that_never_ends_is_refused_at_the_limit() {
        let error = Lock::read(Path::new("/dev/zero")).unwrap_err().to_string();
        assert!(error.contains("larger than the limit of 128 MiB"), "{error}");
    }
}
