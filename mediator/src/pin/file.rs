//! The pins file of trust on first use: `<data dir>/tool-mediator/pins.json` by default (on
//! Linux `$XDG_DATA_HOME`, else `~/.local/share`), shared by every proxy and gateway of the
//! user's. Changed under a lock, read again under it, written whole to a new file renamed over
//! the old one, so two processes never lose each other's pins and a reader never sees half a
//! file; never read or written through a link in its place. A file that cannot be read as pins
//! is an error naming its place, never replaced.
//!
//! ```json
//! {
//!   "version": 1,
//!   "servers": {
//!     "SERVER": {
//!       "pinned":   {"TOOL": {"digest": "sha256:...", "definition": {"name": "TOOL", ...}}},
//!       "held":     {"TOOL": {"digest": "sha256:...", "definition": {...}}},
//!       "rejected": {"TOOL": ["sha256:..."]}
//!     }
//!   }
//! }
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::is_digest;
use super::trust::{Definition, Pins, ServerPins};
use crate::cache::digest;
use crate::kept;
use crate::read::{MAX_FILE_SIZE, Stamp};
use tool_mediator_core::Place;
use tool_mediator_core::Tool;
use tool_mediator_core::schema::escape;

/// The version of the file's format this program reads and writes.
const VERSION: u64 = 1;

/// A pins file nests this deep at most: a tool is read from a server only up to 128 levels, and
/// the file puts six around it. Deeper is refused before it is parsed.
const MAX_DEPTH: usize = 256;

/// Why the pins file cannot be used: the file, the place in it (none when it cannot be read or
/// written at all), what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", tool_mediator_core::about_file(path, place.as_ref(), message))]
pub struct PinsError {
    pub path: PathBuf,
    pub place: Option<Place>,
    pub message: String,
}

/// A pins file, at its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinsFile {
    path: PathBuf,
}

impl PinsFile {
    pub fn at(path: impl Into<PathBuf>) -> PinsFile {
        PinsFile { path: path.into() }
    }

    /// The user's pins file: `<data dir>/tool-mediator/pins.json`; `None` where the platform
    /// has no data directory (no HOME).
    pub fn user_path() -> Option<PathBuf> {
        dirs::data_dir().map(|dir| dir.join("tool-mediator").join("pins.json"))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pins as the file holds them now; none when there is no file yet.
    pub fn read(&self) -> Result<Pins, PinsError> {
        let Some(text) = self.text()? else { return Ok(Pins::default()) };
        if text.trim().is_empty() {
            return Ok(Pins::default());
        }
        from_text(&text).map_err(|(place, message)| self.error(Some(place), message))
    }

    /// Reads the pins under the file's lock, lets `change` change them, and writes them back if
    /// it did; what `change` returned. The lock is held until the file is in place: two
    /// processes changing it at once take turns, each reading what the other wrote.
    pub fn change<T>(&self, change: impl FnOnce(&mut Pins) -> T) -> Result<T, PinsError> {
        self.change_seen(change).map(|(outcome, _)| outcome)
    }

    /// [`PinsFile::change`], and the file's [`stamp`](PinsFile::stamp) as it was left, read
    /// under the lock: a later stamp is someone else's change.
    pub fn change_seen<T>(&self, change: impl FnOnce(&mut Pins) -> T) -> Result<(T, Option<Stamp>), PinsError> {
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        kept::private_dir(&dir).map_err(|error| self.error(None, format!("cannot make its directory: {error}")))?;
        let name = self.path.file_name().ok_or_else(|| self.error(None, "not a file's path".to_owned()))?;
        let lock_path = dir.join(format!("{}.lock", name.to_string_lossy()));
        let lock = kept::lock(&lock_path)
            .map_err(|error| self.error(None, format!("cannot open its lock {}: {error}", lock_path.display())))?;
        let mut pins = self.read()?;
        let before = pins.clone();
        let outcome = change(&mut pins);
        if pins != before {
            self.write(&pins)?;
        }
        let stamp = self.stamp();
        drop(lock);
        Ok((outcome, stamp))
    }

    /// The file as it is now, to tell whether it changed since (a review's approval, another
    /// proxy's listing: every write is a new file renamed into place); `None` when there is none.
    pub fn stamp(&self) -> Option<Stamp> {
        fs::symlink_metadata(&self.path).ok().map(|metadata| Stamp::of(&metadata))
    }

    fn error(&self, place: Option<Place>, message: String) -> PinsError {
        PinsError { path: self.path.clone(), place, message }
    }

    /// The file's text within [`MAX_FILE_SIZE`]; `None` when there is no file. Never read
    /// through a link, nor when it is not a regular file (a fifo would never end).
    fn text(&self) -> Result<Option<String>, PinsError> {
        match fs::symlink_metadata(&self.path) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(self.error(None, format!("cannot read: {error}"))),
            Ok(metadata) if metadata.file_type().is_symlink() => {
                return Err(self.error(None, "a link; pins are not read or written through one".to_owned()));
            }
            Ok(metadata) if !metadata.is_file() => {
                return Err(self.error(None, "not a regular file".to_owned()));
            }
            Ok(_) => {}
        }
        // A link or a fifo put there since it was looked at is not opened either.
        let (file, metadata) = match crate::read::open_regular(&self.path, crate::read::Links::Refused) {
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            other => other.map_err(|error| self.error(None, format!("cannot read: {error}")))?,
        };
        crate::read::read_text_from(file, metadata.len(), &self.path, MAX_FILE_SIZE).map(Some).map_err(|error| {
            match error {
                crate::read::ReadError::NotUtf8 { place, .. } => self.error(Some(place), "not UTF-8 text".to_owned()),
                other => PinsError { path: self.path.clone(), place: None, message: cause_of(&other) },
            }
        })
    }

    /// Writes `pins` whole, replacing the file ([`kept::replace`]); it keeps its mode.
    fn write(&self, pins: &Pins) -> Result<(), PinsError> {
        let text = to_text(pins).map_err(|error| self.error(None, format!("cannot write: {error}")))?;
        kept::replace(&self.path, text.as_bytes(), kept::Mode::Kept)
            .map_err(|error| self.error(None, format!("cannot write: {error}")))
    }
}

/// What a read error says past the path it names (the error's own path is this file's).
fn cause_of(error: &crate::read::ReadError) -> String {
    match error {
        crate::read::ReadError::Io { source, .. } => format!("cannot read: {source}"),
        crate::read::ReadError::TooLarge { limit, .. } => {
            format!("larger than the limit of {}", crate::read::Bytes(*limit))
        }
        crate::read::ReadError::NotUtf8 { place, .. } => format!("{}: not UTF-8 text", place.in_words()),
    }
}

/// The pins as the file's text: pretty, each definition as the server gave it.
fn to_text(pins: &Pins) -> Result<String, serde_json::Error> {
    let definitions = |tools: &BTreeMap<String, Definition>| -> Result<Value, serde_json::Error> {
        let mut members = Map::new();
        for (name, definition) in tools {
            let entry = json!({"digest": definition.digest, "definition": serde_json::to_value(&definition.tool)?});
            members.insert(name.clone(), entry);
        }
        Ok(Value::Object(members))
    };
    let mut servers = Map::new();
    for (key, server) in &pins.servers {
        let mut members = Map::new();
        members.insert("pinned".to_owned(), definitions(&server.pinned)?);
        if !server.held.is_empty() {
            members.insert("held".to_owned(), definitions(&server.held)?);
        }
        if !server.rejected.is_empty() {
            members.insert("rejected".to_owned(), serde_json::to_value(&server.rejected)?);
        }
        servers.insert(key.clone(), Value::Object(members));
    }
    let document = json!({"version": VERSION, "servers": servers});
    Ok(serde_json::to_string_pretty(&document)? + "\n")
}

/// The pins a file's text holds, or where and why not.
fn from_text(text: &str) -> Result<Pins, (Place, String)> {
    let text = tool_mediator_core::json::without_bom(text).0;
    if let Some(offset) = deeper_than(text, MAX_DEPTH) {
        return Err((Place::at(text, offset), format!("nested deeper than {MAX_DEPTH} levels")));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    // Bounded above, so the limit serde_json keeps by default (128) is not needed; a tool of
    // 128 levels is 134 deep here.
    deserializer.disable_recursion_limit();
    let parsed = tool_mediator_core::json::deserialize_value(&mut deserializer)
        .and_then(|value| Ok((value, deserializer.end()?)));
    let document = match parsed {
        Ok((document, ())) => document,
        Err(error) => return Err((Place::of_json_error(text, &error), tool_mediator_core::json::message(&error))),
    };
    from_value(document).map_err(|(pointer, message)| {
        // The document itself has no pointer to show: its place is where its text starts.
        let place = pointer.map_or_else(|| Place::start_of(text), Place::Pointer);
        (place, message)
    })
}

/// The offset where `text` opens its `limit + 1`th nested array or object, if it does.
fn deeper_than(text: &str, limit: usize) -> Option<usize> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for (offset, byte) in text.bytes().enumerate() {
        match byte {
            _ if escaped => escaped = false,
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b'[' | b'{' if !in_string => {
                depth += 1;
                if depth > limit {
                    return Some(offset);
                }
            }
            b']' | b'}' if !in_string => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// A pointer's segments joined: `/servers/a~1b/pinned`.
fn pointer(segments: &[&str]) -> String {
    segments.iter().map(|segment| format!("/{}", escape(segment))).collect()
}

type Invalid = (Option<String>, String);

fn from_value(document: Value) -> Result<Pins, Invalid> {
    const SHAPE: &str = "a pins file is {\"version\": 1, \"servers\": {SERVER: {\"pinned\": {...}}}}";
    let Value::Object(mut members) = document else { return Err((None, format!("not an object: {SHAPE}"))) };
    match members.remove("version") {
        Some(Value::Number(version)) if version.as_u64() == Some(VERSION) => {}
        Some(other) => {
            let message = format!("version {other} is not one this tool-mediator reads ({VERSION})");
            return Err((Some(pointer(&["version"])), message));
        }
        None => return Err((None, format!("no `version`: {SHAPE}"))),
    }
    let servers = match members.remove("servers") {
        Some(Value::Object(servers)) => servers,
        Some(_) => return Err((Some(pointer(&["servers"])), "`servers` is an object, by server".to_owned())),
        None => return Err((None, format!("no `servers`: {SHAPE}"))),
    };
    if let Some(key) = members.keys().next() {
        return Err((Some(pointer(&[key])), "not a member of a pins file".to_owned()));
    }
    let mut pins = Pins::default();
    for (server, value) in servers {
        let Value::Object(mut members) = value else {
            let message = "a server's pins are an object: {\"pinned\": {...}, \"held\": {...}, \"rejected\": {...}}";
            return Err((Some(pointer(&["servers", &server])), message.to_owned()));
        };
        let mut read = ServerPins::default();
        for part in ["pinned", "held"] {
            let tools = match members.remove(part) {
                None => continue,
                Some(Value::Object(tools)) => tools,
                Some(_) => {
                    let message = format!("`{part}` is an object of tools by name");
                    return Err((Some(pointer(&["servers", &server, part])), message));
                }
            };
            let into = if part == "pinned" { &mut read.pinned } else { &mut read.held };
            for (name, entry) in tools {
                let at =
                    |rest: &[&str]| pointer(&[&["servers", server.as_str(), part, name.as_str()][..], rest].concat());
                into.insert(name.clone(), definition(&name, entry, &at)?);
            }
        }
        match members.remove("rejected") {
            None => {}
            Some(Value::Object(rejected)) => {
                for (name, digests) in rejected {
                    let at = pointer(&["servers", &server, "rejected", &name]);
                    let Value::Array(digests) = digests else {
                        return Err((Some(at), "a list of rejected digests".to_owned()));
                    };
                    let mut read_digests = BTreeSet::new();
                    for (index, digest) in digests.into_iter().enumerate() {
                        match digest {
                            Value::String(digest) if is_digest(&digest) => {
                                read_digests.insert(digest);
                            }
                            _ => {
                                let message = "a digest is `sha256:` and 64 hexadecimal digits".to_owned();
                                return Err((Some(format!("{at}/{index}")), message));
                            }
                        }
                    }
                    read.rejected.insert(name, read_digests);
                }
            }
            Some(_) => {
                let message = "`rejected` is an object of digest lists by tool".to_owned();
                return Err((Some(pointer(&["servers", &server, "rejected"])), message));
            }
        }
        if let Some(key) = members.keys().next() {
            return Err((Some(pointer(&["servers", &server, key])), "not a member of a server's pins".to_owned()));
        }
        pins.servers.insert(server, read);
    }
    Ok(pins)
}

/// One tool's entry: its definition, checked to be the tool of that name with that digest.
fn definition(name: &str, entry: Value, at: &dyn Fn(&[&str]) -> String) -> Result<Definition, Invalid> {
    const SHAPE: &str = "a tool's entry is {\"digest\": \"sha256:...\", \"definition\": {...}}";
    let Value::Object(mut members) = entry else { return Err((Some(at(&[])), SHAPE.to_owned())) };
    let stated = match members.remove("digest") {
        Some(Value::String(digest)) if is_digest(&digest) => digest,
        Some(_) => {
            return Err((Some(at(&["digest"])), "a digest is `sha256:` and 64 hexadecimal digits".to_owned()));
        }
        None => return Err((Some(at(&[])), format!("no `digest`: {SHAPE}"))),
    };
    let tool: Tool = match members.remove("definition") {
        Some(definition @ Value::Object(_)) => serde_json::from_value(definition)
            .map_err(|error| (Some(at(&["definition"])), format!("not a tool: {error}")))?,
        Some(_) => return Err((Some(at(&["definition"])), "a definition is a tool object".to_owned())),
        None => return Err((Some(at(&[])), format!("no `definition`: {SHAPE}"))),
    };
    if let Some(key) = members.keys().next() {
        return Err((Some(at(&[key])), "not a member of a tool's entry".to_owned()));
    }
    if tool.name != name {
        return Err((Some(at(&["definition", "name"])), format!("the definition of `{name}` names another tool")));
    }
    let computed = digest(&tool);
    if computed != stated {
        let message = format!("not the digest of the definition ({computed}); was it edited by hand?");
        return Err((Some(at(&["digest"])), message));
    }
    Ok(Definition { digest: computed, tool })
}

#[cfg(test)]
mod tests {
    use super::super::trust::Verdict;
    use super::*;

    fn tool(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    fn listing() -> Vec<Tool> {
        vec![
            serde_json::from_str(
                r#"{"name": "fetch", "description": "Fetches a page.",
                "inputSchema": {"type": "object", "properties": {"url": {"type": "string", "maxLength": 2048}}},
                "annotations": {"readOnlyHint": true}, "x-vendor": [1.0, 1e400, "\u202e"]}"#,
            )
            .unwrap(),
            tool(json!({"name": "search", "description": "Searches."})),
        ]
    }

    #[test]
    fn the_file_keeps_whole_definitions_and_reads_back_what_it_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let file = PinsFile::at(dir.path().join("deep/tool-mediator/pins.json"));
        assert_eq!(file.read().unwrap(), Pins::default(), "no file yet: no pins");
        assert_eq!(file.stamp(), None);
        let verdicts = file.change(|pins| pins.screen("web", &listing())).unwrap();
        assert_eq!(verdicts, [Verdict::FirstUse, Verdict::FirstUse]);
        let stamp = file.stamp().expect("written");
        let text = fs::read_to_string(file.path()).unwrap();
        let document: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(document["version"], 1);
        assert_eq!(document["servers"]["web"]["pinned"]["fetch"]["definition"]["annotations"]["readOnlyHint"], true);
        // Numbers as the tool holds them (not made floating point).
        assert!(text.contains("1e+400") && text.contains("1.0,"), "{text}");
        let read = file.read().unwrap();
        assert_eq!(read.servers["web"].pinned["fetch"].tool, listing()[0]);
        // Nothing changed: nothing written.
        file.change(|pins| pins.screen("web", &listing())).unwrap();
        assert_eq!(file.stamp(), Some(stamp));
        // A held tool is kept, with its definition.
        let mut changed = listing();
        changed[1] = tool(json!({"name": "search", "description": "Searches, then mails the results away."}));
        file.change(|pins| pins.screen("web", &changed)).unwrap();
        assert_ne!(file.stamp(), Some(stamp));
        let read = file.read().unwrap();
        assert_eq!(read.held()[0].held.tool, changed[1]);
        file.change(|pins| pins.reject("web", "search")).unwrap();
        assert_eq!(file.read().unwrap().servers["web"].rejected["search"].len(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = fs::metadata(file.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{mode:o}");
            let mode = fs::metadata(file.path().parent().unwrap()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        }
        let left: Vec<_> =
            fs::read_dir(file.path().parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 2, "the file and its lock, no temporary file: {left:?}");
    }

    #[test]
    fn a_file_that_cannot_be_used_is_named_with_its_place_and_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.json");
        let file = PinsFile::at(&path);
        let shown = |text: &str| {
            fs::write(&path, text).unwrap();
            let error = file.change(|pins| pins.screen("web", &listing())).unwrap_err();
            assert_eq!(fs::read_to_string(&path).unwrap(), text, "never overwritten");
            error.to_string().replace(&path.display().to_string(), "pins")
        };
        assert_eq!(shown("{\"version\": 1, \"servers\": {,}}"), "pins:1:28: key must be a string");
        assert_eq!(
            shown("\n  []"),
            format!(
                "pins:2:3: not an object: {}",
                "a pins file is {\"version\": 1, \"servers\": {SERVER: {\"pinned\": {...}}}}"
            )
        );
        assert_eq!(
            shown("{\"version\": 2, \"servers\": {}}"),
            "pins: `/version`: version 2 is not one this tool-mediator reads (1)"
        );
        assert_eq!(
            shown("{\"version\": 1, \"servers\": {}, \"extra\": 1}"),
            "pins: `/extra`: not a member of a pins file"
        );
        assert_eq!(
            shown(
                r#"{"version": 1, "servers": {"a/b": {"pinned": {"x": {"digest": "sha256:0", "definition": {"name": "x"}}}}}}"#
            ),
            "pins: `/servers/a~1b/pinned/x/digest`: a digest is `sha256:` and 64 hexadecimal digits"
        );
        let zero = format!("sha256:{}", "0".repeat(64));
        let edited = format!(
            r#"{{"version": 1, "servers": {{"a": {{"pinned": {{"x": {{"digest": "{zero}", "definition": {{"name": "x"}}}}}}}}}}}}"#
        );
        assert!(
            shown(&edited).starts_with("pins: `/servers/a/pinned/x/digest`: not the digest of the definition (sha256:")
        );
        let renamed = edited.replace(r#"{"name": "x"}"#, r#"{"name": "y"}"#);
        assert_eq!(
            shown(&renamed),
            "pins: `/servers/a/pinned/x/definition/name`: the definition of `x` names another tool"
        );
        let not_a_tool = edited.replace(r#"{"name": "x"}"#, r#"{"description": "x"}"#);
        assert!(
            shown(&not_a_tool).starts_with("pins: `/servers/a/pinned/x/definition`: not a tool: missing field `name`")
        );
        let rejected = r#"{"version": 1, "servers": {"a": {"rejected": {"x": ["sha256:1"]}}}}"#;
        assert_eq!(shown(rejected), "pins: `/servers/a/rejected/x/0`: a digest is `sha256:` and 64 hexadecimal digits");
        let deep = format!("{{\"version\": 1, \"servers\": {}{}}}", "[".repeat(300), "]".repeat(300));
        assert_eq!(shown(&deep), "pins:1:282: nested deeper than 256 levels");
        assert!(
            shown("{\"version\": 1, \"servers\": {\"a\": 1}}")
                .starts_with("pins: `/servers/a`: a server's pins are an object")
        );
        // Not UTF-8: placed.
        fs::write(&path, b"{\"version\": 1, \xff").unwrap();
        assert_eq!(
            file.read().unwrap_err().to_string().replace(&path.display().to_string(), "pins"),
            "pins:1:16: not UTF-8 text"
        );
        // An empty file holds no pins yet.
        fs::write(&path, "\n").unwrap();
        assert_eq!(file.read().unwrap(), Pins::default());
    }

    #[cfg(unix)]
    #[test]
    fn a_link_at_the_files_or_the_locks_place_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "precious").unwrap();
        let path = dir.path().join("pins.json");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let file = PinsFile::at(&path);
        let error = file.read().unwrap_err().to_string();
        assert!(error.ends_with("a link; pins are not read or written through one"), "{error}");
        assert!(file.change(|pins| pins.screen("web", &listing())).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "left in place");

        // At the lock's place.
        let other = dir.path().join("other.json");
        std::os::unix::fs::symlink(&victim, dir.path().join("other.json.lock")).unwrap();
        let error = PinsFile::at(&other).change(|pins| pins.screen("web", &listing())).unwrap_err().to_string();
        assert!(error.contains("cannot open its lock"), "{error}");
        assert_eq!(fs::read_to_string(&victim).unwrap(), "precious");
        assert!(!other.exists());

        // A fifo is not waited on.
        let fifo = dir.path().join("fifo.json");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(PinsFile::at(&fifo).read().unwrap_err().to_string().ends_with("not a regular file"));
    }

    /// Regression (like `--locked /dev/zero`): what never ends is refused, not read whole.
    #[cfg(unix)]
    #[test]
    fn a_pins_file_is_read_within_the_limit() {
        let error = PinsFile::at("/dev/zero").read().unwrap_err().to_string();
        assert!(error.contains("not a regular file"), "{error}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.json");
        let big = fs::File::create(&path).unwrap();
        big.set_len(MAX_FILE_SIZE + 1).unwrap();
        let error = PinsFile::at(&path).read().unwrap_err().to_string();
        assert!(error.ends_with("larger than the limit of 128 MiB"), "{error}");
    }

    #[test]
    fn the_deepest_tool_a_server_may_list_can_be_pinned() {
        // The proxy reads a listed tool up to serde_json's 128 levels.
        let text = format!(
            r#"{{"name": "deep", "inputSchema": {{"type": "object", "x": {}1{}}}}}"#,
            "[".repeat(125),
            "]".repeat(125)
        );
        let deep: Tool = serde_json::from_str(&text).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let file = PinsFile::at(dir.path().join("pins.json"));
        file.change(|pins| pins.screen("web", std::slice::from_ref(&deep))).unwrap();
        assert_eq!(file.read().unwrap().servers["web"].pinned["deep"].tool, deep);
    }

    #[test]
    fn two_writers_at_once_keep_each_others_pins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.json");
        let threads: Vec<_> = (0..8)
            .map(|server| {
                let file = PinsFile::at(&path);
                std::thread::spawn(move || {
                    for round in 0..5 {
                        let listed = [tool(json!({"name": format!("t{round}"), "description": "A tool."}))];
                        file.change(|pins| pins.screen(&format!("s{server}"), &listed)).unwrap();
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let pins = PinsFile::at(&path).read().unwrap();
        assert_eq!(pins.servers.len(), 8, "every server's first use kept");
        assert!(pins.servers.values().all(|server| server.held.len() == 1), "each one's last new tool held");
    }
}
