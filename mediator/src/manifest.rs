//! Tool manifests: detecting their format, reading their tools, writing them back in the same
//! shape or another dialect's. Reading files and walking directories is the caller's.
//!
//! A manifest is an envelope around a list of tools written in a dialect:
//! - envelopes: a bare array, an object with a `tools` array (an MCP `tools/list` result, an
//!   Anthropic or OpenAI request body), a JSON-RPC response whose `result` is such an object,
//!   or JSON Lines (one tool per line, by the `.jsonl`/`.ndjson` extension);
//! - dialects: MCP (`inputSchema`), OpenAI function tools (`{"type": "function", "function":
//!   {..., "parameters"}}`), bare OpenAI functions (`parameters`), Anthropic (`input_schema`).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize as _;
use serde::de::{DeserializeSeed, IntoDeserializer as _, MapAccess};
use serde::ser::{Error as _, Serialize, SerializeMap as _, SerializeSeq as _, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tool_mediator_core::Place;
use tool_mediator_core::Tool;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Mcp,
    OpenAiTool,
    OpenAiFunction,
    Anthropic,
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Mcp => "MCP tools",
            Dialect::OpenAiTool => "OpenAI function tools",
            Dialect::OpenAiFunction => "OpenAI functions",
            Dialect::Anthropic => "Anthropic tools",
        })
    }
}

#[derive(Debug, Clone)]
enum Envelope {
    Array,
    /// The whole document; its `tools` array is replaced on write.
    Object(Map<String, Value>),
    /// The whole response; its `result.tools` array is replaced on write.
    JsonRpc(Map<String, Value>),
    Lines,
}

/// Where a manifest came from, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    Stdin,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // A file name may hold an escape sequence or a line break: it reaches a terminal.
            Origin::File(path) => f.write_str(&crate::screen::printable(&path.display().to_string())),
            Origin::Stdin => f.write_str("<stdin>"),
        }
    }
}

/// The `_meta` key under which a result of the stateless protocol revision (2026-07-28) names
/// the server that answered it.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

impl Origin {
    /// The default source: the file name without its extension.
    pub fn default_source(&self) -> String {
        match self {
            Origin::File(path) => path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default(),
            Origin::Stdin => "stdin".to_owned(),
        }
    }
}

/// A parsed manifest: its tools and what is needed to write it back in the same shape.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub origin: Origin,
    pub dialect: Dialect,
    envelope: Envelope,
    /// The tools as read. Writing them back unchanged gives the text `--check` compares with:
    /// the manifest keeps no second copy of the document.
    pub tools: Vec<Tool>,
    /// Per tool, how it was written, so it is written back the same way.
    layouts: Vec<Layout>,
    /// The text began with a byte order mark, which is written back.
    bom: bool,
}

impl Manifest {
    /// The name of the server whose `tools/list` result this is, when the result says it beside
    /// its tools: `serverInfo.name`, or `_meta["io.modelcontextprotocol/serverInfo"].name` (the
    /// stateless revision's). An MCP server's override source is its name.
    pub fn server_name(&self) -> Option<&str> {
        let result = match &self.envelope {
            Envelope::Object(object) => object,
            Envelope::JsonRpc(response) => response.get("result")?.as_object()?,
            Envelope::Array | Envelope::Lines => return None,
        };
        named(result.get("serverInfo")).or_else(|| named(result.get("_meta")?.get(SERVER_INFO_KEY)))
    }

    /// Where tool `index`'s field `field` is written: a JSON pointer into the document, or the
    /// line of a JSON Lines file. `field` is a pointer relative to the tool, without its leading
    /// `/`, its segments already escaped (`inputSchema/properties/a~1b/description`); its first
    /// segment names the field as MCP does (`name`, `description`, `inputSchema`) and is written
    /// as the manifest's dialect names it. Empty for the tool itself.
    pub fn place_of(&self, index: usize, field: &str) -> Place {
        let (first, rest) = match field.split_once('/') {
            Some((first, rest)) => (first, Some(rest)),
            None => (field, None),
        };
        let first = match (self.dialect, first) {
            (Dialect::Anthropic, "inputSchema") => "input_schema",
            (Dialect::OpenAiFunction | Dialect::OpenAiTool, "inputSchema") => "parameters",
            (_, first) => first,
        };
        let mut pointer = match self.envelope {
            Envelope::Array => format!("/{index}"),
            Envelope::Object(_) => format!("/tools/{index}"),
            Envelope::JsonRpc(_) => format!("/result/tools/{index}"),
            Envelope::Lines => return Place::Line(index + 1),
        };
        if self.dialect == Dialect::OpenAiTool {
            pointer.push_str("/function");
        }
        if !first.is_empty() {
            pointer.push('/');
            pointer.push_str(first);
        }
        if let Some(rest) = rest {
            pointer.push('/');
            pointer.push_str(rest);
        }
        Place::Pointer(pointer)
    }
}

/// Why a manifest cannot be read: where it came from, the place in it, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin}{place}: {message}")]
pub struct ManifestError {
    pub origin: Origin,
    pub place: Place,
    pub message: String,
}

impl ManifestError {
    fn at_pointer(origin: &Origin, pointer: &str, message: impl Into<String>) -> ManifestError {
        ManifestError { origin: origin.clone(), place: Place::Pointer(pointer.to_owned()), message: message.into() }
    }
}

/// The keys of a tool as it was written, in order, each with whether it was `null`; and an
/// OpenAI tool's outer fields besides `type` and `function`.
#[derive(Debug, Clone, Default)]
struct Layout {
    keys: Keys,
    function_keys: Keys,
    outer: Vec<(String, Value)>,
}

/// A list of keys, each with whether it was `null`. The tools of a manifest mostly share a few
/// such lists, so each is kept once (see [`KeyLists`]).
type Keys = Arc<[(String, bool)]>;

/// The key lists met so far while reading a manifest.
#[derive(Default)]
struct KeyLists(HashSet<Keys>);

impl KeyLists {
    fn of(&mut self, members: &Members<'_>) -> Keys {
        let keys: Vec<(String, bool)> = members.iter().map(|(key, value)| (key.clone(), is_null(value))).collect();
        if let Some(known) = self.0.get(keys.as_slice()) {
            return known.clone();
        }
        let keys: Keys = keys.into();
        self.0.insert(keys.clone());
        keys
    }
}

/// Puts `object`'s keys in the order `keys` gives, brings back keys that were `null` and are
/// gone, and appends the keys that are new.
fn follow(object: &mut Map<String, Value>, keys: &[(String, bool)]) {
    // Sorted by place rather than moved one key at a time: a tool can have thousands of keys.
    let place: HashMap<&str, usize> = keys.iter().enumerate().map(|(at, (key, _))| (key.as_str(), at)).collect();
    let returning: Vec<(String, Value)> = keys
        .iter()
        .filter(|(key, was_null)| *was_null && !object.contains_key(key))
        .map(|(key, _)| (key.clone(), Value::Null))
        .collect();
    let mut entries: Vec<(String, Value)> = std::mem::take(object).into_iter().chain(returning).collect();
    // Stable: the new keys keep their order, after the known ones.
    entries.sort_by_key(|(key, _)| place.get(key.as_str()).copied().unwrap_or(usize::MAX));
    *object = entries.into_iter().collect();
}

/// Where a tool sits in its file: a JSON pointer, or a line of a JSON Lines file.
enum Places<'a> {
    Pointer(&'a str),
    Lines(Vec<usize>),
}

impl Places<'_> {
    fn of(&self, index: usize) -> Place {
        match self {
            Places::Pointer(base) => Place::Pointer(format!("{base}/{index}")),
            Places::Lines(lines) => Place::Line(lines[index]),
        }
    }
}

impl Manifest {
    /// Reads a manifest's text. The document is never built as a tree: each tool is read from
    /// its own part of the text, its schemas straight to compact text (see [`crate::Json`]).
    pub fn parse(text: &str, origin: Origin) -> Result<Manifest, ManifestError> {
        // Places are counted after the mark, as an editor shows them.
        let (text, bom) = tool_mediator_core::json::without_bom(text);
        let mut manifest = Manifest::parse_text(text, origin)?;
        manifest.bom = bom;
        Ok(manifest)
    }

    fn parse_text(text: &str, origin: Origin) -> Result<Manifest, ManifestError> {
        let at = |part: &str, error: serde_json::Error| located(&origin, text, part, error);
        let is_lines =
            matches!(&origin, Origin::File(path) if path.extension().is_some_and(|e| e == "jsonl" || e == "ndjson"));
        if is_lines {
            let mut items = Vec::new();
            let mut lines = Vec::new();
            for (number, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let item: &RawValue = serde_json::from_str(line).map_err(|error| at(line, error))?;
                items.push(shallow(item).map_err(|error| at(item.get(), error))?);
                lines.push(number + 1);
            }
            return Manifest::from_items(text, items, Envelope::Lines, origin, Places::Lines(lines));
        }
        let document: &RawValue = serde_json::from_str(text).map_err(|error| at(text, error))?;
        let Some(mut members) = shallow(document).map_err(|error| at(document.get(), error))? else {
            let Some(items) = array(document) else {
                return Err(ManifestError::at_pointer(
                    &origin,
                    "",
                    "not a tool manifest: the document is neither an object nor an array",
                ));
            };
            let items =
                items.into_iter().map(|item| shallow(item).map_err(|e| at(item.get(), e))).collect::<Result<_, _>>()?;
            return Manifest::from_items(text, items, Envelope::Array, origin, Places::Pointer(""));
        };
        if members.iter().any(|(key, _)| key == "jsonrpc") {
            let Some(mut result) = member(&mut members, "result").and_then(|result| shallow(result).ok().flatten())
            else {
                return Err(ManifestError::at_pointer(
                    &origin,
                    "/result",
                    "a JSON-RPC response carrying a tools/list result needs an object `result`",
                ));
            };
            let Some(items) = member(&mut result, "tools").and_then(array) else {
                return Err(ManifestError::at_pointer(
                    &origin,
                    "/result/tools",
                    "the JSON-RPC result has no `tools` array",
                ));
            };
            let items =
                items.into_iter().map(|item| shallow(item).map_err(|e| at(item.get(), e))).collect::<Result<_, _>>()?;
            let result = values(text, &origin, result)?;
            let mut response = values(text, &origin, members)?;
            response.insert("result".into(), Value::Object(result));
            return Manifest::from_items(
                text,
                items,
                Envelope::JsonRpc(response),
                origin,
                Places::Pointer("/result/tools"),
            );
        }
        let has_tools = members.iter().any(|(key, _)| key == "tools");
        let Some(items) = member(&mut members, "tools").and_then(array) else {
            if has_tools {
                return Err(ManifestError::at_pointer(&origin, "/tools", "the tools of a manifest are an array"));
            }
            return Err(ManifestError::at_pointer(
                &origin,
                "",
                "not a tool manifest: expected {\"tools\": [...]}, an array of tools, or a JSON-RPC response \
                 carrying a tools/list result",
            ));
        };
        let items =
            items.into_iter().map(|item| shallow(item).map_err(|e| at(item.get(), e))).collect::<Result<_, _>>()?;
        let object = values(text, &origin, members)?;
        Manifest::from_items(text, items, Envelope::Object(object), origin, Places::Pointer("/tools"))
    }

    fn from_items(
        text: &str,
        items: Vec<Option<Members<'_>>>,
        envelope: Envelope,
        origin: Origin,
        places: Places<'_>,
    ) -> Result<Manifest, ManifestError> {
        let dialect = detect(&items);
        let mut tools = Vec::with_capacity(items.len());
        let mut layouts = Vec::with_capacity(items.len());
        let mut key_lists = KeyLists::default();
        for (index, item) in items.into_iter().enumerate() {
            let (tool, rest) = read_tool(item, dialect, &mut key_lists).map_err(|problem| match problem {
                Problem::At(part, error) => located(&origin, text, part, error),
                Problem::Here(message) => ManifestError { origin: origin.clone(), place: places.of(index), message },
            })?;
            tools.push(tool);
            layouts.push(rest);
        }
        Ok(Manifest { origin, dialect, envelope, tools, layouts, bom: false })
    }

    /// The manifest as it was read, written the way [`Manifest::text`] writes: what `--check`
    /// compares with.
    pub fn original_text(&self) -> String {
        self.text(self.tools.iter().cloned().enumerate(), self.dialect)
    }

    /// The document with `tools` (each with its position in the manifest) in place of the
    /// manifest's tools, written in `dialect`: pretty JSON, or one compact line per tool for
    /// JSON Lines. A tool written in its input's dialect keeps its original key order, `null`s
    /// and an OpenAI tool's outer fields, so an unchanged tool comes out as it came in. Tools
    /// are written one at a time as they are taken, so no second copy of the document is made.
    pub fn text(&self, tools: impl ExactSizeIterator<Item = (usize, Tool)>, dialect: Dialect) -> String {
        let mut out = Vec::new();
        self.write(tools, dialect, &mut out).expect("writing to memory does not fail");
        String::from_utf8(out).expect("serde_json writes UTF-8")
    }

    /// [`Manifest::text`], written to `out` as it is made.
    pub fn write(
        &self,
        tools: impl ExactSizeIterator<Item = (usize, Tool)>,
        dialect: Dialect,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        let written = WrittenTools { manifest: self, dialect, tools: RefCell::new(Some(tools)) };
        if self.bom {
            out.write_all("\u{FEFF}".as_bytes())?;
        }
        match &self.envelope {
            Envelope::Lines => {
                let mut tools = written.tools.borrow_mut().take().expect("written once");
                return tools.try_for_each(|(index, tool)| {
                    serde_json::to_writer(&mut *out, &written.item(index, &tool))?;
                    out.write_all(b"\n")
                });
            }
            Envelope::Array => serde_json::to_writer_pretty(&mut *out, &written)?,
            // The `tools` key was left in place holding null, so the document keeps its key order.
            Envelope::Object(object) => {
                serde_json::to_writer_pretty(&mut *out, &Around { object, path: &["tools"], tools: &written })?
            }
            Envelope::JsonRpc(response) => serde_json::to_writer_pretty(
                &mut *out,
                &Around { object: response, path: &["result", "tools"], tools: &written },
            )?,
        }
        out.write_all(b"\n")
    }
}

/// The tools of a document being written, taken as they are written.
struct WrittenTools<'a, I> {
    manifest: &'a Manifest,
    dialect: Dialect,
    tools: RefCell<Option<I>>,
}

impl<I> WrittenTools<'_, I> {
    fn item(&self, index: usize, tool: &Tool) -> Value {
        let layout = self.manifest.layouts.get(index).filter(|_| self.dialect == self.manifest.dialect);
        write_tool(tool, self.dialect, layout)
    }
}

impl<I: ExactSizeIterator<Item = (usize, Tool)>> Serialize for WrittenTools<'_, I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut tools = self.tools.borrow_mut().take().ok_or_else(|| S::Error::custom("tools written twice"))?;
        let mut items = serializer.serialize_seq(Some(tools.len()))?;
        tools.try_for_each(|(index, tool)| items.serialize_element(&self.item(index, &tool)))?;
        items.end()
    }
}

/// An object written as it is, but for the member at `path`, which holds the tools.
struct Around<'a, T> {
    object: &'a Map<String, Value>,
    path: &'a [&'a str],
    tools: &'a T,
}

impl<T: Serialize> Serialize for Around<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.object.len()))?;
        for (key, value) in self.object {
            match (self.path, value) {
                ([last], _) if key == last => map.serialize_entry(key, self.tools)?,
                ([first, rest @ ..], Value::Object(inner)) if key == first => {
                    map.serialize_entry(key, &Around { object: inner, path: rest, tools: self.tools })?
                }
                _ => map.serialize_entry(key, value)?,
            }
        }
        map.end()
    }
}

/// The `name` of a `serverInfo` object, when it is a string with something in it.
fn named(info: Option<&Value>) -> Option<&str> {
    info?.get("name")?.as_str().filter(|name| !name.trim().is_empty())
}

/// A JSON object's members in order, their values left as text: a tool before its dialect is
/// known, or an envelope before its tools are taken out.
type Members<'a> = Vec<(String, &'a RawValue)>;

/// The members of `value` when it is an object (a member written twice is an error).
fn shallow(value: &RawValue) -> Result<Option<Members<'_>>, serde_json::Error> {
    if !value.get().starts_with('{') {
        return Ok(None);
    }
    tool_mediator_core::json::object_members(value.get()).map(Some)
}

/// The items of `value` when it is an array.
fn array(value: &RawValue) -> Option<Vec<&RawValue>> {
    value.get().starts_with('[').then(|| serde_json::from_str(value.get()).ok()).flatten()
}

/// Takes the member `key` out of `members`, leaving a `null` in its place so the document
/// keeps its key order when it is written back.
fn member<'a>(members: &mut Members<'a>, key: &str) -> Option<&'a RawValue> {
    let (_, value) = members.iter_mut().find(|(name, _)| name == key)?;
    Some(std::mem::replace(value, RawValue::NULL))
}

fn is_null(value: &RawValue) -> bool {
    value.get() == RawValue::NULL.get()
}

/// Members read into values (an envelope's, an OpenAI tool's outer fields).
fn values(text: &str, origin: &Origin, members: Members<'_>) -> Result<Map<String, Value>, ManifestError> {
    members
        .into_iter()
        .map(|(key, value)| {
            let read = tool_mediator_core::json::from_str(value.get())
                .map_err(|error| located(origin, text, value.get(), error))?;
            Ok((key, read))
        })
        .collect()
}

/// An error met reading `part` of `text` (a slice of it), at its line and column in `text`.
fn located(origin: &Origin, text: &str, part: &str, error: serde_json::Error) -> ManifestError {
    let message = tool_mediator_core::json::message(&error);
    let offset = (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize).min(text.len());
    let place = Place::at(text, offset + tool_mediator_core::offset_of_json_error(part, &error));
    ManifestError { origin: origin.clone(), place, message }
}

fn detect<'a>(items: &[Option<Members<'a>>]) -> Dialect {
    let get = |item: &Option<Members<'a>>, key: &str| -> Option<&'a RawValue> {
        item.as_ref()?.iter().find(|(name, _)| name == key).map(|(_, value)| *value)
    };
    let has = |key: &str| items.iter().any(|item| get(item, key).is_some());
    let function = |item| {
        get(item, "type")
            .is_some_and(|kind| serde_json::from_str::<String>(kind.get()).is_ok_and(|kind| kind == "function"))
            && get(item, "function").is_some()
    };
    if items.iter().any(function) {
        Dialect::OpenAiTool
    } else if has("input_schema") {
        Dialect::Anthropic
    } else if has("parameters") && !has("inputSchema") {
        Dialect::OpenAiFunction
    } else {
        Dialect::Mcp
    }
}

/// Why a tool could not be read: an error at a place in the text, or one about the tool.
enum Problem<'a> {
    At(&'a str, serde_json::Error),
    Here(String),
}

/// One tool read in `dialect`, with how it was written.
/// What a tool that is not an object is told, in every front door.
pub const NOT_AN_OBJECT: &str = "a tool must be an object";
/// What a tool without a string `name` is told, in every front door.
pub const NAMELESS: &str = "a tool needs a string `name`";

/// What is wrong with the MCP tool `tool` before its fields are read, in the words a manifest's
/// reader uses: it is not an object, or it has no string `name`. `None` leaves the rest to
/// reading it as a [`Tool`].
pub fn shape_problem(tool: &RawValue) -> Option<&'static str> {
    match shallow(tool) {
        Ok(None) => Some(NOT_AN_OBJECT),
        Ok(Some(members)) if !has_string_name(&members) => Some(NAMELESS),
        Ok(Some(_)) | Err(_) => None,
    }
}

fn has_string_name(members: &Members<'_>) -> bool {
    members.iter().any(|(key, value)| key == "name" && value.get().starts_with('"'))
}

fn read_tool<'a>(
    item: Option<Members<'a>>,
    dialect: Dialect,
    key_lists: &mut KeyLists,
) -> Result<(Tool, Layout), Problem<'a>> {
    let Some(mut members) = item else {
        return Err(Problem::Here(NOT_AN_OBJECT.into()));
    };
    let mut layout = Layout { keys: key_lists.of(&members), ..Layout::default() };
    let fields = match dialect {
        Dialect::Mcp => members,
        Dialect::Anthropic => rename(members, "input_schema", "inputSchema"),
        Dialect::OpenAiFunction => rename(members, "parameters", "inputSchema"),
        Dialect::OpenAiTool => {
            let function = members.iter().position(|(key, _)| key == "function").map(|at| members.remove(at).1);
            let function = match function.map(|function| (function, shallow(function))) {
                Some((_, Ok(Some(function)))) => function,
                Some((function, Err(error))) => return Err(Problem::At(function.get(), error)),
                _ => return Err(Problem::Here("an OpenAI tool needs a `function` object".into())),
            };
            members.retain(|(key, _)| key != "type");
            layout.function_keys = key_lists.of(&function);
            for (key, value) in members {
                let read =
                    tool_mediator_core::json::from_str(value.get()).map_err(|error| Problem::At(value.get(), error))?;
                layout.outer.push((key, read));
            }
            rename(function, "parameters", "inputSchema")
        }
    };
    if !has_string_name(&fields) {
        return Err(Problem::Here(NAMELESS.into()));
    }
    let mut fields = Fields { members: fields.into_iter(), value: None, last: None };
    match Tool::deserialize(serde::de::value::MapAccessDeserializer::new(&mut fields)) {
        Ok(tool) => Ok((tool, layout)),
        // An error in a field's text has its place in that text; one about the tool has none.
        Err(error) => match fields.last {
            Some(value) if error.line() > 0 => Err(Problem::At(value.get(), error)),
            _ => Err(Problem::Here(error.to_string())),
        },
    }
}

/// A tool's fields as a serde map, each value read from its own text.
struct Fields<'a> {
    members: std::vec::IntoIter<(String, &'a RawValue)>,
    value: Option<&'a RawValue>,
    /// The field being read, so an error in it can be placed in the file.
    last: Option<&'a RawValue>,
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some((key, value)) = self.members.next() else { return Ok(None) };
        self.value = Some(value);
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        let value = self.value.take().ok_or_else(|| serde::de::Error::custom("a value without a key"))?;
        self.last = Some(value);
        seed.deserialize(value)
    }
}

fn write_tool(tool: &Tool, dialect: Dialect, layout: Option<&Layout>) -> Value {
    let Value::Object(mut object) = serde_json::to_value(tool).expect("tools serialize") else {
        unreachable!("a tool serializes to an object")
    };
    if dialect != Dialect::Mcp {
        // Converting from MCP: these have no place in the other dialects.
        if layout.is_none() {
            for mcp_only in ["title", "outputSchema", "annotations", "_meta", "icons", "execution"] {
                object.shift_remove(mcp_only);
            }
        }
        let schema_key = if dialect == Dialect::Anthropic { "input_schema" } else { "parameters" };
        tool_mediator_core::json::rename_key(&mut object, "inputSchema", schema_key);
    }
    if dialect != Dialect::OpenAiTool {
        if let Some(layout) = layout {
            follow(&mut object, &layout.keys);
        }
        return Value::Object(object);
    }
    let mut wrapper = Map::new();
    wrapper.insert("type".into(), "function".into());
    if let Some(layout) = layout {
        follow(&mut object, &layout.function_keys);
    }
    wrapper.insert("function".into(), Value::Object(object));
    if let Some(layout) = layout {
        wrapper.extend(layout.outer.iter().map(|(k, v)| (k.clone(), v.clone())));
        follow(&mut wrapper, &layout.keys);
    }
    Value::Object(wrapper)
}

/// Renames a member, keeping its position.
fn rename<'a>(mut members: Members<'a>, from: &str, to: &str) -> Members<'a> {
    for (key, _) in &mut members {
        if key == from {
            to.clone_into(key);
        }
    }
    members
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Manifest {
        Manifest::parse(&value.to_string(), Origin::File("m.json".into())).unwrap()
    }

    fn round_trip(value: Value) -> Value {
        let manifest = parse(value.clone());
        let text = manifest.original_text();
        // Written as serde_json pretty-prints the document, to the byte.
        assert_eq!(text, serde_json::to_string_pretty(&value).unwrap() + "\n");
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn json_lines_round_trip_to_the_byte() {
        let text = "{\"name\":\"a\",\"inputSchema\":{\"type\":\"object\"}}\n{\"name\":\"b\",\"x\":1.50}\n";
        let manifest = Manifest::parse(text, Origin::File("m.jsonl".into())).unwrap();
        assert_eq!(manifest.original_text(), text);
    }

    #[test]
    fn every_format_round_trips_unchanged() {
        let documents = [
            json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "x"}),
            json!([{"name": "a", "description": "d", "inputSchema": {"type": "object"}}]),
            json!({"jsonrpc": "2.0", "id": 0, "result": {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}}),
            json!([{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}, "strict": true}}]),
            json!({"model": "m", "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}]}),
            json!([{"name": "a", "description": "d", "parameters": {"type": "object"}}]),
            json!([{"name": "a", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]),
        ];
        for document in documents {
            assert_eq!(round_trip(document.clone()), document);
        }
    }

    #[test]
    fn formats_are_detected() {
        assert_eq!(parse(json!([{"name": "a", "input_schema": {}}])).dialect, Dialect::Anthropic);
        assert_eq!(parse(json!([{"type": "function", "function": {"name": "a"}}])).dialect, Dialect::OpenAiTool);
        assert_eq!(parse(json!([{"name": "a", "parameters": {}}])).dialect, Dialect::OpenAiFunction);
        assert_eq!(parse(json!({"tools": []})).dialect, Dialect::Mcp);
    }

    #[test]
    fn conversion_between_dialects() {
        let manifest = parse(json!({"tools": [{"name": "a", "title": "A", "inputSchema": {"type": "object"}}]}));
        let render = |dialect| -> Value {
            serde_json::from_str(&manifest.text(manifest.tools.iter().cloned().enumerate(), dialect)).unwrap()
        };
        assert_eq!(
            render(Dialect::OpenAiTool),
            json!({"tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}}}]})
        );
        assert_eq!(render(Dialect::Anthropic), json!({"tools": [{"name": "a", "input_schema": {"type": "object"}}]}));
    }

    #[test]
    fn places_follow_the_dialect_and_keep_escaped_segments() {
        let field = "inputSchema/properties/a~1b/description";
        let place = |document: Value| parse(document).place_of(1, field);
        let pointer = |text: &str| Place::Pointer(text.to_owned());
        assert_eq!(
            place(json!({"tools": [{"name": "a"}, {"name": "b"}]})),
            pointer("/tools/1/inputSchema/properties/a~1b/description")
        );
        assert_eq!(
            place(json!([{"name": "a", "input_schema": {}}, {"name": "b"}])),
            pointer("/1/input_schema/properties/a~1b/description")
        );
        assert_eq!(
            place(
                json!([{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "b"}}])
            ),
            pointer("/1/function/parameters/properties/a~1b/description")
        );
        assert_eq!(parse(json!({"tools": [{"name": "a"}]})).place_of(0, ""), pointer("/tools/0"));
        assert_eq!(parse(json!({"tools": [{"name": "a"}]})).place_of(0, "name"), pointer("/tools/0/name"));
    }

    #[test]
    fn a_tools_list_result_names_its_server() {
        let tools = json!([{"name": "fetch"}]);
        let name = |value: Value| parse(value).server_name().map(str::to_owned);
        assert_eq!(name(json!({"serverInfo": {"name": "mcp-fetch"}, "tools": tools})).as_deref(), Some("mcp-fetch"));
        let stateless = json!({"_meta": {SERVER_INFO_KEY: {"name": "mcp-fetch", "version": "1"}}, "tools": tools});
        assert_eq!(name(stateless).as_deref(), Some("mcp-fetch"));
        let response = json!({"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "git"}, "tools": tools}});
        assert_eq!(name(response).as_deref(), Some("git"));
        for nameless in [
            json!({"tools": tools}),
            json!(tools),
            json!({"serverInfo": {"name": ""}, "tools": tools}),
            json!({"serverInfo": {"name": 7}, "tools": tools}),
            json!({"_meta": {"serverInfo": {"name": "elsewhere"}}, "tools": tools}),
        ] {
            assert_eq!(name(nameless.clone()), None, "{nameless}");
        }
    }

    /// The Node binding reads tools one by one and refuses them in these words, as the CLI does.
    #[test]
    fn a_tool_without_a_string_name_or_not_an_object_is_told_so_in_one_set_of_words() {
        let problem = |text: &str| shape_problem(serde_json::from_str::<&RawValue>(text).unwrap());
        assert_eq!(problem(r#""gt_usr""#), Some(NOT_AN_OBJECT));
        assert_eq!(problem(r#"{"description": "no name"}"#), Some(NAMELESS));
        assert_eq!(problem(r#"{"name": 7}"#), Some(NAMELESS));
        assert_eq!(problem(r#"{"name": "a", "inputSchema": 5}"#), None, "the rest is the tool's reader's");
        let error = Manifest::parse(r#"[{"description": "no name"}]"#, Origin::File("m.json".into())).unwrap_err();
        assert_eq!(error.to_string(), format!("m.json: `/0`: {NAMELESS}"));
    }

    #[test]
    fn errors_name_the_file_and_place() {
        let error =
            Manifest::parse("{\n  \"tools\": [\n    {\"name\": 1}\n  ]\n}", Origin::File("m.json".into())).unwrap_err();
        assert_eq!(error.to_string(), "m.json: `/tools/0`: a tool needs a string `name`");
        assert_eq!(error.place, Place::Pointer("/tools/0".into()));
        let error = Manifest::parse("{\"tools\": [{\"name\": \"a\",\n \"x\": {\"k\": 1, \"k\": 2}}]}", Origin::Stdin)
            .unwrap_err();
        assert_eq!(
            (error.place, error.origin),
            (Place::At { line: 2, column: 18 }, Origin::Stdin),
            "{}",
            error.message
        );
        let error =
            Manifest::parse("{\"tools\": [\n  {\"name\": \"a\",}\n]}", Origin::File("m.json".into())).unwrap_err();
        assert!(error.to_string().starts_with("m.json:2:"), "{error}");
        let error = Manifest::parse("{\"tool\": []}", Origin::File("m.json".into())).unwrap_err();
        assert!(error.to_string().contains("not a tool manifest"), "{error}");
        let error = Manifest::parse("{\"name\": \"a\"}\nnot json\n", Origin::File("m.jsonl".into())).unwrap_err();
        assert!(error.to_string().starts_with("m.jsonl:2:"), "{error}");
        let error = Manifest::parse("{\"tools\": [{\"name\": \"a\", \"description\": 5}]}", Origin::Stdin).unwrap_err();
        assert!(error.to_string().starts_with("<stdin>: `/tools/0`: invalid type"), "{error}");
    }
}
