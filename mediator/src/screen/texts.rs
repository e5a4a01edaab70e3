//! The texts of a tool a model reads, each with where it is.

use tool_mediator_core::Tool;
use tool_mediator_core::schema;

/// What a text of a tool is: prose the model reads as such, or an identifier (a parameter's
/// name, an allowed value) it reads as part of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Prose,
    Identifier,
}

/// One text of a tool, with where it is (a pointer relative to the tool, segments escaped).
pub(super) struct Text<'a> {
    pub(super) field: String,
    pub(super) text: &'a str,
    pub(super) kind: Kind,
}

impl Text<'_> {
    /// Whether the text describes a parameter (is inside the input schema).
    pub(super) fn is_parameter(&self) -> bool {
        self.field.starts_with("inputSchema/")
    }
}

/// Deeper than this, a schema's texts are not read (serde_json reads no deeper than 128).
const MAX_SCHEMA_DEPTH: usize = 64;

/// The texts of a tool a model reads: its title and description, and in its input schema, at
/// any depth, the titles, descriptions, parameter names and allowed values. `input_schema` is
/// the tool's schema as a value (kept by the caller, as the texts borrow from it).
pub(super) fn texts<'a>(tool: &'a Tool, input_schema: Option<&'a serde_json::Value>) -> Vec<Text<'a>> {
    let mut texts = Vec::new();
    if let Some(title) = &tool.title {
        texts.push(Text { field: "title".to_owned(), text: title, kind: Kind::Prose });
    }
    if let Some(description) = &tool.description {
        texts.push(Text { field: "description".to_owned(), text: description, kind: Kind::Prose });
    }
    if let Some(input_schema) = input_schema {
        schema_texts(input_schema, &mut "inputSchema".to_owned(), 0, &mut texts);
    }
    texts
}

/// The texts of the schema `node` at `path`, and of the schemas inside it.
fn schema_texts<'a>(node: &'a serde_json::Value, path: &mut String, depth: usize, texts: &mut Vec<Text<'a>>) {
    use serde_json::Value;
    let Value::Object(members) = node else { return };
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    let at = |path: &str, segments: &[&str]| {
        let mut field = path.to_owned();
        for segment in segments {
            field.push('/');
            field.push_str(&schema::escape(segment));
        }
        field
    };
    let inside = |path: &mut String, segments: &[&str], node: &'a Value, texts: &mut Vec<Text<'a>>| {
        let length = path.len();
        *path = at(path, segments);
        schema_texts(node, path, depth + 1, texts);
        path.truncate(length);
    };
    for (key, value) in members {
        match (key.as_str(), value) {
            ("title" | "description", Value::String(text)) => {
                texts.push(Text { field: at(path, &[key]), text, kind: Kind::Prose });
            }
            ("enum", Value::Array(values)) => {
                for (index, value) in values.iter().enumerate() {
                    if let Value::String(text) = value {
                        let field = at(path, &[key, &index.to_string()]);
                        texts.push(Text { field, text, kind: Kind::Identifier });
                    }
                }
            }
            ("properties", Value::Object(properties)) => {
                for (name, property) in properties {
                    texts.push(Text { field: at(path, &[key, name]), text: name, kind: Kind::Identifier });
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
            ) => inside(path, &[key], value, texts),
            _ => {}
        }
    }
}
