//! The texts of a tool a model reads, each with where it is.

use std::collections::HashSet;

use tool_mediator_core::Tool;
use tool_mediator_core::schema;

/// What a text of a tool is: prose the model reads as such, or an identifier (a parameter's
/// name, an allowed value) it reads as part of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Prose,
    Identifier,
}

/// Where a schema's text is not one a schema holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Misplaced {
    /// Where a schema holds a name (a type, a required property): a sentence there is no schema.
    Invalid,
    /// Under a key no schema vocabulary defines.
    Unknown,
}

/// One text of a tool, with where it is (a pointer relative to the tool, segments escaped).
pub(super) struct Text<'a> {
    pub(super) field: String,
    pub(super) text: &'a str,
    pub(super) kind: Kind,
    pub(super) misplaced: Option<Misplaced>,
}

impl Text<'_> {
    /// Whether the text describes a parameter (is inside the input schema).
    pub(super) fn is_parameter(&self) -> bool {
        self.field.starts_with("inputSchema/")
    }

    /// Whether the text is a parameter's name (not a value it may take).
    pub(super) fn is_property_name(&self) -> bool {
        self.kind == Kind::Identifier && self.field.rsplit('/').nth(1) == Some("properties")
    }
}

/// Deeper than this, a schema's texts are not read (serde_json reads no deeper than 128).
const MAX_SCHEMA_DEPTH: usize = 64;

/// At most this many texts of one tool are read: a schema of a million allowed values costs no
/// more than this.
const MAX_TEXTS: usize = 4096;

/// A segment of a field longer than this is cut (and marked `…`): a key of a megabyte is not
/// copied into the field of every text below it.
const MAX_SEGMENT: usize = 128;

/// The texts of a tool a model reads: its title and description, and in its input schema, at
/// any depth, the titles, descriptions, parameter names and allowed values. `input_schema` is
/// the tool's schema as a value (kept by the caller, as the texts borrow from it).
pub(super) fn texts<'a>(tool: &'a Tool, input_schema: Option<&'a serde_json::Value>) -> Vec<Text<'a>> {
    let mut texts = Vec::new();
    if let Some(title) = &tool.title {
        texts.push(Text { field: "title".to_owned(), text: title, kind: Kind::Prose, misplaced: None });
    }
    if let Some(description) = &tool.description {
        texts.push(Text { field: "description".to_owned(), text: description, kind: Kind::Prose, misplaced: None });
    }
    if let Some(input_schema) = input_schema {
        let mut names = HashSet::new();
        property_names(input_schema, 0, &mut names);
        schema_texts(input_schema, &mut "inputSchema".to_owned(), 0, &names, &mut texts);
    }
    texts
}

/// The names of every property anywhere in the schema `node` (a `required` name may be one a
/// sibling or an outer schema defines), at most [`MAX_TEXTS`] of them.
fn property_names<'a>(node: &'a serde_json::Value, depth: usize, names: &mut HashSet<&'a str>) {
    use serde_json::Value;
    if depth > MAX_SCHEMA_DEPTH || names.len() >= MAX_TEXTS {
        return;
    }
    match node {
        Value::Object(members) => {
            if let Some(Value::Object(properties)) = members.get("properties") {
                names.extend(properties.keys().take(MAX_TEXTS).map(String::as_str));
            }
            for member in members.values() {
                property_names(member, depth + 1, names);
            }
        }
        Value::Array(items) => items.iter().take(MAX_TEXTS).for_each(|item| property_names(item, depth + 1, names)),
        _ => {}
    }
}

/// Keys whose string a schema holds as prose for people (and models) to read.
const PROSE: &[&str] = &[
    "title",
    "description",
    "$comment",
    "markdownDescription",
    "errorMessage",
    "deprecationMessage",
    "placeholder",
    "help",
    "hint",
    "label",
];

/// Keys whose array of strings is prose, one for each allowed value.
const PROSE_ARRAYS: &[&str] = &["enumDescriptions", "markdownEnumDescriptions", "enumNames"];

/// The keywords of JSON Schema (every draft) and those schemas in the wild commonly carry;
/// prose under any other key (but an `x-` extension) is text a schema does not hold.
const VOCABULARY: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$defs",
    "$anchor",
    "$comment",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "id",
    "definitions",
    "type",
    "enum",
    "const",
    "default",
    "examples",
    "example",
    "title",
    "description",
    "format",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "items",
    "prefixItems",
    "additionalItems",
    "contains",
    "minContains",
    "maxContains",
    "minItems",
    "maxItems",
    "uniqueItems",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "required",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "minProperties",
    "maxProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "readOnly",
    "writeOnly",
    "deprecated",
    "nullable",
    "discriminator",
    "markdownDescription",
    "enumDescriptions",
    "markdownEnumDescriptions",
    "errorMessage",
    "deprecationMessage",
    "enumNames",
    "placeholder",
    "label",
    "hint",
    "help",
    "units",
    "unit",
];

/// The types a schema's `type` names.
const TYPES: &[&str] = &["string", "number", "integer", "boolean", "object", "array", "null"];

/// The texts of the schema `node` at `path`, and of the schemas inside it; `names`, every
/// property name of the whole schema.
fn schema_texts<'a>(
    node: &'a serde_json::Value,
    path: &mut String,
    depth: usize,
    names: &HashSet<&str>,
    texts: &mut Vec<Text<'a>>,
) {
    use serde_json::Value;
    let Value::Object(members) = node else { return };
    if depth > MAX_SCHEMA_DEPTH || texts.len() >= MAX_TEXTS {
        return;
    }
    let at = |path: &str, segments: &[&str]| {
        let mut field = path.to_owned();
        for segment in segments {
            field.push('/');
            let mut cut = segment.len().min(MAX_SEGMENT);
            while !segment.is_char_boundary(cut) {
                cut -= 1;
            }
            field.push_str(&schema::escape(&segment[..cut]));
            if cut < segment.len() {
                field.push('…');
            }
        }
        field
    };
    let inside = |path: &mut String, segments: &[&str], node: &'a Value, texts: &mut Vec<Text<'a>>| {
        let length = path.len();
        *path = at(path, segments);
        schema_texts(node, path, depth + 1, names, texts);
        path.truncate(length);
    };
    // A value of a name's place that is a sentence; a value (a default, an example) read as
    // prose when it has words or the marks of an address or a path, else as an identifier.
    let sentence = |text: &str| text.trim().contains(char::is_whitespace);
    let value = |text: &str| match sentence(text) || text.contains([':', '/', '@', '.', '~']) {
        true => Kind::Prose,
        false => Kind::Identifier,
    };
    for (key, member) in members {
        if texts.len() >= MAX_TEXTS {
            return;
        }
        match (key.as_str(), member) {
            (key, Value::String(text)) if PROSE.contains(&key) || key.starts_with("x-") => {
                texts.push(Text { field: at(path, &[key]), text, kind: Kind::Prose, misplaced: None });
            }
            (key, Value::Array(values)) if PROSE_ARRAYS.contains(&key) => {
                for (index, text) in values.iter().enumerate().take(MAX_TEXTS) {
                    if let Value::String(text) = text {
                        let field = at(path, &[key, &index.to_string()]);
                        texts.push(Text { field, text, kind: Kind::Prose, misplaced: None });
                    }
                }
            }
            ("enum" | "examples", Value::Array(values)) => {
                for (index, value_in) in values.iter().enumerate().take(MAX_TEXTS) {
                    if let Value::String(text) = value_in {
                        let field = at(path, &[key, &index.to_string()]);
                        texts.push(Text { field, text, kind: value(text), misplaced: None });
                    }
                }
            }
            ("default" | "const" | "example", Value::String(text)) => {
                texts.push(Text { field: at(path, &[key]), text, kind: value(text), misplaced: None });
            }
            ("type", Value::String(text)) if !TYPES.contains(&text.as_str()) && sentence(text) => {
                let field = at(path, &[key]);
                texts.push(Text { field, text, kind: Kind::Prose, misplaced: Some(Misplaced::Invalid) });
            }
            ("type" | "required", Value::Array(names_here)) => {
                for (index, name) in names_here.iter().enumerate().take(MAX_TEXTS) {
                    let Value::String(text) = name else { continue };
                    let named = match key.as_str() {
                        "type" => TYPES.contains(&text.as_str()),
                        _ => names.contains(text.as_str()),
                    };
                    if !named && sentence(text) {
                        let field = at(path, &[key, &index.to_string()]);
                        texts.push(Text { field, text, kind: Kind::Prose, misplaced: Some(Misplaced::Invalid) });
                    }
                }
            }
            ("properties", Value::Object(properties)) => {
                for (name, property) in properties {
                    let field = at(path, &[key, name]);
                    texts.push(Text { field, text: name, kind: Kind::Identifier, misplaced: None });
                    inside(path, &[key, name], property, texts);
                }
            }
            ("$defs" | "definitions" | "patternProperties" | "dependentSchemas", Value::Object(schemas)) => {
                for (name, schema) in schemas {
                    inside(path, &[key, name], schema, texts);
                }
            }
            ("items" | "prefixItems" | "anyOf" | "oneOf" | "allOf", Value::Array(schemas)) => {
                for (index, schema) in schemas.iter().enumerate() {
                    inside(path, &[key, &index.to_string()], schema, texts);
                }
            }
            (
                "items"
                | "additionalProperties"
                | "additionalItems"
                | "contains"
                | "not"
                | "if"
                | "then"
                | "else"
                | "propertyNames"
                | "unevaluatedProperties"
                | "unevaluatedItems",
                Value::Object(_),
            ) => inside(path, &[key], member, texts),
            (key, Value::String(text)) if !VOCABULARY.contains(&key) && sentence(text) => {
                let field = at(path, &[key]);
                texts.push(Text { field, text, kind: Kind::Prose, misplaced: Some(Misplaced::Unknown) });
            }
            _ => {}
        }
    }
}
