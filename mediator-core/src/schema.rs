//! Input schemas: checking that one is valid JSON Schema with an object root, and repairing the
//! non-standard shapes real manifests publish (`dict`, `float`, `tuple`, `HashMap`, ...).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize as _;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value, json};

use crate::json::Json;

/// Why a schema cannot leave the mediator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at `{pointer}`")]
pub struct SchemaError {
    /// A JSON pointer into the schema (`""` for the root).
    pub pointer: String,
    pub message: String,
}

/// Checks that `schema` is valid JSON Schema (against the meta-schema of the draft it declares,
/// 2020-12 when it declares none or one we do not know) and that its root is `type: "object"`.
pub fn check(schema: &Value) -> Result<(), SchemaError> {
    let Some(root) = schema.as_object() else {
        return Err(SchemaError { pointer: String::new(), message: "the root is not an object".into() });
    };
    if root.get("type") != Some(&Value::String("object".into())) {
        return Err(SchemaError { pointer: "/type".into(), message: "the root type is not \"object\"".into() });
    }
    let outcome = if declares_unknown_draft(schema) {
        jsonschema::draft202012::meta::validate(schema)
    } else {
        jsonschema::meta::validate(schema)
    };
    outcome.map_err(|error| SchemaError { pointer: error.instance_path().to_string(), message: error.to_string() })?;
    check_references(schema)
}

/// Keywords whose values are data, never schemas: a `$ref` inside one is not a reference.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];

/// Checks that every `$ref` (and `$dynamicRef`) resolves inside the schema: to a JSON pointer
/// (`#/$defs/x`, escaped and percent-encoded as RFC 6901 and 3986 say), to an `$anchor`
/// (`#name`), or to a subschema's `$id`. A reference elsewhere cannot be resolved by a client
/// that has only the tool, and fetching it would send the client out to a host the server chose.
fn check_references(schema: &Value) -> Result<(), SchemaError> {
    let mut references = Vec::new();
    let mut anchors = std::collections::HashSet::new();
    let mut ids: std::collections::HashMap<&str, &Value> = std::collections::HashMap::new();
    // Walked with a stack of its own: a value built in code may be deeper than a thread's stack.
    let mut stack = vec![(schema, String::new())];
    while let Some((node, pointer)) = stack.pop() {
        match node {
            Value::Object(members) => {
                for (key, value) in members {
                    match (key.as_str(), value) {
                        (key, _) if DATA_KEYWORDS.contains(&key) => {}
                        ("$ref" | "$dynamicRef", Value::String(target)) => {
                            references.push((target.as_str(), format!("{pointer}/{key}")));
                        }
                        ("$anchor" | "$dynamicAnchor", Value::String(anchor)) => {
                            anchors.insert(anchor.as_str());
                        }
                        ("$id", Value::String(id)) => {
                            ids.insert(id.trim_end_matches('#'), node);
                        }
                        (key, value) => stack.push((value, format!("{pointer}/{}", escape(key)))),
                    }
                }
            }
            Value::Array(items) => {
                stack.extend(items.iter().enumerate().map(|(index, item)| (item, format!("{pointer}/{index}"))));
            }
            _ => {}
        }
    }
    for (target, pointer) in references {
        let (base, fragment) = target.split_once('#').unwrap_or((target, ""));
        let document = match base {
            "" => Some(schema),
            base => ids.get(base).copied(),
        };
        let fragment = percent_decoded(fragment);
        let resolves = document.is_some_and(|document| match fragment.as_deref() {
            Some("") => true,
            Some(fragment) if fragment.starts_with('/') => document.pointer(fragment).is_some(),
            Some(anchor) => anchors.contains(anchor),
            None => false,
        });
        if !resolves {
            let message = match document {
                None => format!("the reference `{target}` points outside the schema"),
                Some(_) => format!("the reference `{target}` resolves to nothing in the schema"),
            };
            return Err(SchemaError { pointer, message });
        }
    }
    Ok(())
}

/// A URI fragment with its `%XX` escapes decoded; `None` when they do not decode to UTF-8.
fn percent_decoded(fragment: &str) -> Option<Cow<'_, str>> {
    if !fragment.contains('%') {
        return Some(Cow::Borrowed(fragment));
    }
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |byte: u8| (byte as char).to_digit(16);
        match (bytes[at], bytes.get(at + 1).copied().and_then(hex), bytes.get(at + 2).copied().and_then(hex)) {
            (b'%', Some(high), Some(low)) => {
                decoded.push((high * 16 + low) as u8);
                at += 3;
            }
            (byte, _, _) => {
                decoded.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

pub fn is_valid(schema: &Value) -> bool {
    check(schema).is_ok()
}

/// Schemas found valid, remembered by a keyed hash of their text. A list taken in again (a
/// server's relisting, the same manifest) is mostly the same schemas, and checking one means
/// reading it into a tree. Bounded: past [`KnownValid::MAX`] it starts over.
#[derive(Default)]
pub struct KnownValid {
    keys: std::hash::RandomState,
    seen: std::sync::Mutex<std::collections::HashSet<u64>>,
}

impl KnownValid {
    const MAX: usize = 16_384;

    /// [`check`], answered from memory for a schema found valid before.
    pub fn check(&self, schema: &Json) -> Result<(), SchemaError> {
        use std::hash::BuildHasher as _;

        let key = self.keys.hash_one(schema.as_str());
        let seen = || crate::sync::lock(&self.seen);
        if seen().contains(&key) {
            return Ok(());
        }
        check(&schema.to_value())?;
        let mut seen = seen();
        if seen.len() >= Self::MAX {
            seen.clear();
        }
        seen.insert(key);
        Ok(())
    }
}

/// A `$schema` we have no meta-schema for would need a network fetch; we check those as 2020-12.
fn declares_unknown_draft(schema: &Value) -> bool {
    schema.get("$schema").is_some() && jsonschema::Draft::default().detect(schema) == jsonschema::Draft::Unknown
}

/// One thing [`repair`] changed, at a JSON pointer into the schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repair {
    pub pointer: String,
    pub what: String,
}

/// Whether `schema` is a schema at all: an object or a boolean. What [`repair`] puts in place
/// of anything else is a guess.
pub fn is_schema(schema: &Value) -> bool {
    matches!(schema, Value::Object(_) | Value::Bool(_))
}

/// The smallest object-root schema: what a tool with no parameters takes.
pub fn empty_object() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Repairs what real manifests get wrong, in place, and says what it changed.
///
/// A boolean root keeps its meaning (see below); any other root that is not an object is no
/// schema at all and becomes the empty object schema ([`is_schema`] tells the two apart).
/// Non-standard type names become standard ones, an unknown type name is dropped (the value
/// may then be anything), `required: true` on a property moves to its parent's `required`
/// list, a tuple's positional `items` become `prefixItems`, and the root gets `type: "object"`
/// and `properties` when it lacks them. Everything else is left as it is.
pub fn repair(schema: &mut Value) -> Vec<Repair> {
    let mut repairs = Vec::new();
    // A boolean schema keeps its meaning: `true` takes any arguments, `false` none at all (a
    // repair never widens what a schema accepts).
    match schema {
        Value::Object(_) => {}
        Value::Bool(true) => {
            repairs.push(Repair {
                pointer: String::new(),
                what: "a `true` root (any arguments) -> the object schema".into(),
            });
            *schema = empty_object();
            return repairs;
        }
        Value::Bool(false) => {
            repairs.push(Repair {
                pointer: String::new(),
                what: "a `false` root (no arguments at all) -> an object schema that accepts nothing".into(),
            });
            *schema = json!({"type": "object", "properties": {}, "not": {}});
            return repairs;
        }
        _ => {
            repairs.push(Repair { pointer: String::new(), what: format!("replaced a non-object root ({schema})") });
            *schema = empty_object();
            return repairs;
        }
    }
    repair_node(schema, &mut String::new(), &mut repairs);
    let root = schema.as_object_mut().expect("checked above");
    match root.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            repairs.push(Repair { pointer: "/type".into(), what: format!("root type {other} -> \"object\"") });
            root.insert("type".into(), "object".into());
        }
        None => {
            repairs.push(Repair { pointer: "/type".into(), what: "added root type \"object\"".into() });
            root.insert("type".into(), "object".into());
        }
    }
    if !root.get("properties").is_some_and(Value::is_object) {
        if root.contains_key("properties") {
            repairs.push(Repair { pointer: "/properties".into(), what: "replaced non-object properties".into() });
        } else {
            repairs.push(Repair { pointer: "/properties".into(), what: "added empty properties".into() });
        }
        root.insert("properties".into(), Value::Object(Map::new()));
    }
    repairs
}

/// Whether [`repair`] would change `schema`, without changing it. A property test keeps the
/// two in step.
pub fn needs_repair(schema: &Json) -> bool {
    // Read from the text without building it: the rules ask this of every tool.
    let mut deserializer = serde_json::Deserializer::from_str(schema.as_str());
    deserializer.disable_recursion_limit();
    Node { root: true }.deserialize(&mut deserializer).is_ok_and(|repair| repair)
}

/// Whether a schema node needs repair (a node that is not an object does not, but for the root).
struct Node {
    root: bool,
}

impl<'de> DeserializeSeed<'de> for Node {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node {
    type Value = bool;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a schema")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<bool, A::Error> {
        let (mut repair, mut object_type, mut properties) = (false, false, false);
        let mut first = true;
        while let Some(key) = members.next_key::<Cow<'de, str>>()? {
            if std::mem::take(&mut first) && key == crate::json::NUMBER_TOKEN {
                members.next_value::<IgnoredAny>()?;
                return Ok(self.root);
            }
            match key.as_ref() {
                "type" => {
                    let declared = members.next_value::<Value>()?;
                    object_type = declared == "object";
                    repair |= !is_standard_type(&declared);
                }
                "required" => repair |= members.next_value_seed(Children { list: true, schemas: false })?.is_none(),
                key if SCHEMA_MAPS.contains(&key) => {
                    let children = members.next_value_seed(Children { list: false, schemas: true })?;
                    properties |= key == "properties" && children.is_some();
                    repair |= children == Some(true);
                }
                key if SCHEMA_LISTS.contains(&key) => {
                    let children = members.next_value_seed(Children { list: true, schemas: true })?;
                    repair |= children == Some(true);
                }
                key if SCHEMA_SINGLES.contains(&key) => repair |= members.next_value_seed(Node { root: false })?,
                _ => {
                    members.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(repair || (self.root && !(object_type && properties)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<bool, A::Error> {
        while items.next_element::<IgnoredAny>()?.is_some() {}
        Ok(self.root)
    }

    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(self.root)
    }

    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(self.root)
    }

    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(self.root)
    }

    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(self.root)
    }

    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(self.root)
    }

    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(self.root)
    }
}

/// The members of an object (`list: false`) or the items of an array (`list: true`), each
/// asked whether it needs repair as a schema (`schemas`), or only read past: `None` when the
/// value is not of that kind, else whether any needs repair.
struct Children {
    list: bool,
    schemas: bool,
}

impl Children {
    fn ask<'de, D: Deserializer<'de>>(&self, child: D) -> Result<bool, D::Error> {
        match self.schemas {
            true => Node { root: false }.deserialize(child),
            false => IgnoredAny::deserialize(child).map(|_| false),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Children {
    type Value = Option<bool>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<bool>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Children {
    type Value = Option<bool>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("schemas")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Option<bool>, A::Error> {
        let mut any = false;
        let mut first = true;
        while let Some(key) = members.next_key::<Cow<'de, str>>()? {
            if std::mem::take(&mut first) && key == crate::json::NUMBER_TOKEN {
                members.next_value::<IgnoredAny>()?;
                return Ok(None);
            }
            if self.list {
                members.next_value::<IgnoredAny>()?;
            } else {
                any |= members.next_value_seed(Child(&self))?;
            }
        }
        Ok((!self.list).then_some(any))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Option<bool>, A::Error> {
        let mut any = false;
        if self.list {
            while let Some(repair) = items.next_element_seed(Child(&self))? {
                any |= repair;
            }
        } else {
            while items.next_element::<IgnoredAny>()?.is_some() {}
        }
        Ok(self.list.then_some(any))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Option<bool>, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Option<bool>, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Option<bool>, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Option<bool>, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Option<bool>, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Option<bool>, E> {
        Ok(None)
    }
}

/// One member or item of [`Children`].
struct Child<'a>(&'a Children);

impl<'de> DeserializeSeed<'de> for Child<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        self.0.ask(deserializer)
    }
}

/// A `type` that names standard types only: one, or several without repeats.
fn is_standard_type(declared: &Value) -> bool {
    let standard = |name: &Value| {
        name.as_str().is_some_and(|name| matches!(standard_type(name), Some(Some(standard)) if standard == name))
    };
    match declared {
        Value::String(_) => standard(declared),
        Value::Array(names) => {
            names.iter().all(standard)
                && !names.is_empty()
                && names.iter().enumerate().all(|(i, name)| !names[..i].contains(name))
        }
        _ => false,
    }
}

/// How many invalid keywords [`make_valid`] drops before it gives the schema up.
const MAX_DROPPED_KEYWORDS: usize = 32;

/// Makes `schema` valid, saying what it changed: [`repair`] first, then each keyword the
/// meta-schema still rejects is dropped (`"minLength": "3"` deep in one property should not
/// cost the tool its other parameters), and only a schema that cannot be saved that way
/// becomes the empty object schema.
pub fn make_valid(schema: &mut Value) -> Vec<Repair> {
    let mut repairs = repair(schema);
    for _ in 0..MAX_DROPPED_KEYWORDS {
        let Err(error) = check(schema) else { return repairs };
        let dropped = !error.pointer.is_empty() && error.pointer != "/type" && remove_at(schema, &error.pointer);
        if !dropped {
            break;
        }
        repairs
            .push(Repair { pointer: error.pointer, what: format!("dropped an invalid keyword ({})", error.message) });
    }
    if let Err(error) = check(schema) {
        repairs.push(Repair {
            pointer: error.pointer,
            what: format!("replaced the schema with the empty object schema ({})", error.message),
        });
        *schema = empty_object();
    }
    repairs
}

/// Removes the value at a JSON pointer; whether there was one.
fn remove_at(root: &mut Value, pointer: &str) -> bool {
    let Some((parent, last)) = pointer.rsplit_once('/') else { return false };
    let unescape = |segment: &str| segment.replace("~1", "/").replace("~0", "~");
    let Some(parent) = root.pointer_mut(parent) else { return false };
    match parent {
        Value::Object(object) => object.shift_remove(&unescape(last)).is_some(),
        Value::Array(items) => match last.parse::<usize>() {
            Ok(index) if index < items.len() => {
                items.remove(index);
                true
            }
            _ => false,
        },
        _ => false,
    }
}

/// The standard name of a type, `Some(None)` for "any type", `None` for a name we do not know.
fn standard_type(name: &str) -> Option<Option<&'static str>> {
    const STANDARD: [&str; 7] = ["object", "array", "string", "number", "integer", "boolean", "null"];
    if let Some(standard) = STANDARD.iter().find(|standard| **standard == name) {
        return Some(Some(standard));
    }
    let standard = match name.to_ascii_lowercase().as_str() {
        "object" | "dict" | "dictionary" | "map" | "hashmap" | "record" | "struct" | "json" => "object",
        "array" | "list" | "arraylist" | "tuple" | "set" | "vec" | "sequence" => "array",
        "string" | "str" | "text" | "char" | "character" => "string",
        "number" | "float" | "double" | "decimal" | "bigdecimal" | "real" => "number",
        "integer" | "int" | "long" | "short" | "byte" | "bigint" | "int32" | "int64" | "uint" => "integer",
        "boolean" | "bool" => "boolean",
        "null" | "none" | "nil" => "null",
        "any" | "mixed" | "unknown" | "" => return Some(None),
        _ => return None,
    };
    Some(Some(standard))
}

const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"];
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
const SCHEMA_SINGLES: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
];

fn repair_node(node: &mut Value, pointer: &mut String, repairs: &mut Vec<Repair>) {
    let Some(object) = node.as_object_mut() else {
        return;
    };
    let was_tuple = repair_type(object, pointer, repairs);
    if was_tuple && let Some(Value::Array(positions)) = object.shift_remove("items") {
        repairs.push(Repair { pointer: format!("{pointer}/items"), what: "positional items -> prefixItems".into() });
        object.insert("prefixItems".into(), Value::Array(positions));
    }
    hoist_required_flags(object, pointer, repairs);

    for key in SCHEMA_MAPS {
        if let Some(Value::Object(children)) = object.get_mut(*key) {
            for (name, child) in children.iter_mut() {
                with_segment(pointer, key, |pointer| {
                    with_segment(pointer, name, |pointer| repair_node(child, pointer, repairs))
                });
            }
        }
    }
    for key in SCHEMA_LISTS {
        if let Some(Value::Array(children)) = object.get_mut(*key) {
            for (index, child) in children.iter_mut().enumerate() {
                with_segment(pointer, key, |pointer| {
                    with_segment(pointer, &index.to_string(), |pointer| repair_node(child, pointer, repairs))
                });
            }
        }
    }
    for key in SCHEMA_SINGLES {
        if let Some(child) = object.get_mut(*key) {
            with_segment(pointer, key, |pointer| repair_node(child, pointer, repairs));
        }
    }
}

/// Repairs `type`; returns whether it was a tuple.
fn repair_type(object: &mut Map<String, Value>, pointer: &str, repairs: &mut Vec<Repair>) -> bool {
    let Some(declared) = object.get("type") else {
        return false;
    };
    let names: Vec<&str> = match declared {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) if names.iter().all(Value::is_string) => names.iter().filter_map(Value::as_str).collect(),
        _ => {
            repairs.push(Repair { pointer: format!("{pointer}/type"), what: format!("dropped type {declared}") });
            object.shift_remove("type");
            return false;
        }
    };
    let was_tuple = names.iter().any(|name| name.eq_ignore_ascii_case("tuple"));
    let mut standard: Vec<&'static str> = Vec::with_capacity(names.len());
    let mut any = false;
    for name in &names {
        match standard_type(name) {
            Some(Some(t)) => {
                if !standard.contains(&t) {
                    standard.push(t);
                }
            }
            Some(None) | None => any = true,
        }
    }
    let replacement = if any || standard.is_empty() {
        None
    } else if standard.len() == 1 {
        Some(Value::String(standard[0].into()))
    } else {
        Some(Value::Array(standard.iter().map(|t| Value::String((*t).into())).collect()))
    };
    if replacement.as_ref() == Some(declared) {
        return was_tuple;
    }
    let what = match &replacement {
        Some(t) => format!("type {declared} -> {t}"),
        None => format!("dropped type {declared} (any value)"),
    };
    repairs.push(Repair { pointer: format!("{pointer}/type"), what });
    match replacement {
        Some(t) => object.insert("type".into(), t),
        None => object.shift_remove("type"),
    };
    was_tuple
}

/// `required: true` on a property (draft 3, and many hand-written manifests) -> the parent's list.
fn hoist_required_flags(object: &mut Map<String, Value>, pointer: &str, repairs: &mut Vec<Repair>) {
    if let Some(required) = object.get("required")
        && !required.is_array()
    {
        repairs.push(Repair { pointer: format!("{pointer}/required"), what: format!("dropped required {required}") });
        object.shift_remove("required");
    }
    let Some(Value::Object(properties)) = object.get_mut("properties") else {
        return;
    };
    let mut hoisted = Vec::new();
    for (name, property) in properties.iter_mut() {
        if let Some(property) = property.as_object_mut()
            && let Some(flag) = property.get("required")
            && !flag.is_array()
        {
            if flag == &Value::Bool(true) {
                hoisted.push(name.clone());
            }
            property.shift_remove("required");
            repairs.push(Repair {
                pointer: format!("{pointer}/properties/{}/required", escape(name)),
                what: "moved required flag to the parent's list".into(),
            });
        }
    }
    if !hoisted.is_empty() {
        let list = object.entry("required").or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(list) = list {
            for name in hoisted {
                if !list.iter().any(|entry| entry.as_str() == Some(&name)) {
                    list.push(Value::String(name));
                }
            }
        }
    }
}

fn with_segment<R>(pointer: &mut String, segment: &str, f: impl FnOnce(&mut String) -> R) -> R {
    let len = pointer.len();
    pointer.push('/');
    pointer.push_str(&escape(segment));
    let result = f(pointer);
    pointer.truncate(len);
    result
}

/// Escapes one JSON pointer segment (RFC 6901).
pub fn escape(segment: &str) -> String {
    if segment.contains(['~', '/']) { segment.replace('~', "~0").replace('/', "~1") } else { segment.to_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_object_schema_is_valid() {
        assert!(is_valid(&json!({"type": "object", "properties": {"q": {"type": "string"}}})));
        assert!(is_valid(&json!({"type": "object"})));
    }

    #[test]
    fn non_object_roots_are_refused_with_a_pointer() {
        assert_eq!(check(&json!({"type": "string"})).unwrap_err().pointer, "/type");
        assert_eq!(check(&json!(true)).unwrap_err().pointer, "");
        assert_eq!(check(&json!({"properties": {}})).unwrap_err().pointer, "/type");
    }

    #[test]
    fn meta_schema_violations_point_into_the_schema() {
        let error = check(&json!({"type": "object", "properties": {"a": {"type": "float"}}})).unwrap_err();
        assert_eq!(error.pointer, "/properties/a/type");
    }

    /// Regression (probe): a `$ref` to a definition that is not there passed `overrides lint`,
    /// `lint` and `enhance`; a client's validator then fails on every call.
    #[test]
    fn a_dangling_ref_is_refused_where_it_stands() {
        let dangling = json!({"type": "object", "$defs": {"id": {"type": "string"}},
                              "properties": {"user": {"$ref": "#/$defs/missing"}}});
        let error = check(&dangling).unwrap_err();
        assert_eq!(error.pointer, "/properties/user/$ref", "{error}");
        assert!(error.message.contains("#/$defs/missing"), "{error}");
        // What resolves is fine: pointers (escaped, percent-encoded), the root, anchors, ids.
        for fine in [
            json!({"type": "object", "$defs": {"a/b c": {"type": "string"}},
                   "properties": {"x": {"$ref": "#/$defs/a~1b%20c"}, "y": {"$ref": "#"}}}),
            json!({"type": "object", "$defs": {"n": {"$anchor": "node", "type": "string"}},
                   "properties": {"x": {"$ref": "#node"}}}),
            json!({"type": "object", "$defs": {"n": {"$id": "urn:example:n", "type": "object",
                   "properties": {"v": {"type": "string"}}}},
                   "properties": {"x": {"$ref": "urn:example:n"}, "y": {"$ref": "urn:example:n#/properties/v"}}}),
            json!({"type": "object", "definitions": {"t": {"type": "string"}},
                   "properties": {"x": {"prefixItems": [{"$ref": "#/definitions/t"}]}}}),
            // Data that looks like a reference is data.
            json!({"type": "object", "properties": {"x": {"default": {"$ref": "#/nowhere"},
                   "enum": [{"$ref": "#/no"}], "const": {"$ref": "#/no"}, "examples": [{"$ref": "#/no"}]}}}),
            // A property named `$ref` is a property.
            json!({"type": "object", "properties": {"$ref": {"type": "string"}}}),
        ] {
            assert_eq!(check(&fine), Ok(()), "{fine}");
        }
        for dangling in [
            json!({"type": "object", "properties": {"x": {"$ref": "#nowhere"}}}),
            json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/schema.json"}}}),
            json!({"type": "object", "properties": {"x": {"$ref": "other.json#/a"}}}),
            json!({"type": "object", "properties": {"x": {"$ref": "#/properties/y"}}}),
            json!({"type": "object", "properties": {"x": {"$dynamicRef": "#meta"}}}),
        ] {
            assert!(check(&dangling).is_err(), "{dangling}");
        }
    }

    /// `make_valid` drops a dangling reference rather than the whole schema.
    #[test]
    fn a_dangling_ref_costs_only_itself() {
        let mut schema = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/gone", "description": "A"},
                                                                 "b": {"type": "string"}}});
        let repairs = make_valid(&mut schema);
        assert_eq!(schema["properties"]["a"], json!({"description": "A"}), "{repairs:?}");
        assert_eq!(schema["properties"]["b"], json!({"type": "string"}));
    }

    #[test]
    fn unknown_draft_is_checked_as_2020_12_without_network() {
        let schema = json!({"$schema": "https://example.com/custom", "type": "object"});
        assert!(is_valid(&schema));
    }

    #[test]
    fn bfcl_style_schema_is_repaired_to_valid() {
        let mut schema = json!({
            "type": "dict",
            "properties": {
                "coordinates": {"type": "tuple", "items": [{"type": "float"}, {"type": "float"}]},
                "data": {"type": "any", "description": "anything"},
                "map": {"type": "HashMap"},
                "name": {"type": "String", "required": true},
                "tags": {"type": "ArrayList", "items": {"type": "str"}}
            },
            "required": ["coordinates"]
        });
        let repairs = repair(&mut schema);
        assert!(is_valid(&schema), "{schema}");
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["coordinates"]["type"], "array");
        assert_eq!(schema["properties"]["coordinates"]["prefixItems"][1]["type"], "number");
        assert!(schema["properties"]["data"].get("type").is_none());
        assert_eq!(schema["properties"]["map"]["type"], "object");
        assert_eq!(schema["properties"]["tags"]["items"]["type"], "string");
        assert_eq!(schema["required"], json!(["coordinates", "name"]));
        assert!(repairs.iter().any(|r| r.pointer == "/properties/map/type"));
    }

    #[test]
    fn valid_schema_is_left_alone() {
        let original = json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}, "required": ["a"]});
        let mut schema = original.clone();
        assert!(repair(&mut schema).is_empty());
        assert_eq!(schema, original);
    }

    #[test]
    fn one_bad_keyword_costs_only_itself() {
        let mut schema = json!({
            "type": "object",
            "properties": {"a": {"type": "string", "minLength": "3"}, "b": {"type": "integer"}},
            "required": ["a", 7]
        });
        let repairs = make_valid(&mut schema);
        assert!(is_valid(&schema), "{schema}");
        assert_eq!(schema["properties"]["a"], json!({"type": "string"}));
        assert_eq!(schema["properties"]["b"], json!({"type": "integer"}));
        assert_eq!(repairs.len(), 2, "{repairs:?}");
    }

    #[test]
    fn root_gets_type_and_properties() {
        let mut schema = json!({});
        repair(&mut schema);
        assert_eq!(schema, empty_object());
        let mut schema = json!(null);
        repair(&mut schema);
        assert_eq!(schema, empty_object());
    }
}
