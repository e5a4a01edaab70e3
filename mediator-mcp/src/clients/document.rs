//! A client's configuration as text, and the byte-range editor over it: the text parsed as the
//! clients read it (JSON, and in VS Code's files comments and trailing commas), its object of
//! servers found, and changes made as edits of byte ranges, so every byte no edit covers stays
//! as it was.

use std::path::Path;

use jsonc_parser::ast::{self, ObjectProp};
use jsonc_parser::{CollectOptions, ParseOptions};
use serde_json::Value;
use tool_mediator_core::Place;

use super::error::ClientsError;

/// A parsed configuration: its text, and the object of servers in it.
pub(super) struct Document<'t> {
    pub(super) text: &'t str,
    pub(super) path: &'t Path,
    /// `mcpServers` or `servers`.
    pub(super) key: &'static str,
    pub(super) servers: ast::Object<'t>,
}

impl<'t> Document<'t> {
    pub(super) fn parse(text: &'t str, path: &'t Path) -> Result<Document<'t>, ClientsError> {
        // What the clients accept: JSON, and in VS Code's files comments and trailing commas.
        let options = ParseOptions {
            allow_comments: true,
            allow_trailing_commas: true,
            allow_loose_object_property_names: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_non_finite_numbers: false,
            allow_extended_string_escapes: false,
        };
        let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options).map_err(|error| {
            ClientsError::File {
                path: path.to_owned(),
                place: Some(Place::at(text, error.range().start)),
                message: error.kind().to_string(),
            }
        })?;
        let error = |place: Option<Place>, message: &str| ClientsError::File {
            path: path.to_owned(),
            place,
            message: message.to_owned(),
        };
        let Some(ast::Value::Object(mut root)) = parsed.value else {
            return Err(error(None, "a client configuration is an object: {\"mcpServers\": {NAME: {...}}}"));
        };
        let key = match (root.get("mcpServers").is_some(), root.get("servers").is_some()) {
            (true, true) => return Err(error(None, "both `mcpServers` and `servers`: say which servers are meant")),
            (true, false) => "mcpServers",
            (false, true) => "servers",
            (false, false) => return Err(error(None, "no `mcpServers` (or VS Code's `servers`) naming the servers")),
        };
        let Some(servers) = root.take_object(key) else {
            return Err(error(Some(Place::Pointer(format!("/{key}"))), "must be an object of servers by name"));
        };
        let document = Document { text, path, key, servers };
        let mut seen = std::collections::HashSet::new();
        for prop in &document.servers.properties {
            let name = name_of(prop);
            if !seen.insert(name.clone()) {
                let place = Place::at(text, prop.range.start);
                return Err(error(Some(place), &format!("the server `{name}` is named twice")));
            }
        }
        Ok(document)
    }

    pub(super) fn error(&self, place: Option<Place>, message: String) -> ClientsError {
        ClientsError::File { path: self.path.to_owned(), place, message }
    }

    pub(super) fn pointer(&self, tokens: &[&str]) -> Place {
        let mut pointer = format!("/{}", self.key);
        for token in tokens {
            pointer.push('/');
            pointer.push_str(&tool_mediator_core::schema::escape(token));
        }
        Place::Pointer(pointer)
    }

    pub(super) fn member(&self, name: &str) -> Option<&ObjectProp<'t>> {
        self.servers.properties.iter().find(|prop| prop.name.as_str() == name)
    }

    /// The positions of the servers named (every one when `names` is empty). A name may also be
    /// one of the servers inside a gateway entry (`inside`: name, the entry's position).
    pub(super) fn select(&self, names: &[String], inside: &[(&str, usize)]) -> Result<Vec<usize>, ClientsError> {
        if names.is_empty() {
            return Ok((0..self.servers.properties.len()).collect());
        }
        let mut selected = Vec::new();
        for name in names {
            let index = self
                .servers
                .properties
                .iter()
                .position(|prop| prop.name.as_str() == name)
                .or_else(|| inside.iter().find(|(inner, _)| inner == name).map(|(_, index)| *index))
                .ok_or_else(|| {
                    self.error(Some(Place::Pointer(format!("/{}", self.key))), format!("no server named `{name}`"))
                })?;
            if !selected.contains(&index) {
                selected.push(index);
            }
        }
        Ok(selected)
    }
}

/// A change to the text: `range` replaced by `text`.
pub(super) struct Edit {
    pub(super) range: std::ops::Range<usize>,
    pub(super) text: String,
}

/// The text with every edit made; edits never overlap.
pub(super) fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|edit| (edit.range.start, edit.range.end));
    let mut out = String::with_capacity(text.len() + edits.iter().map(|edit| edit.text.len()).sum::<usize>());
    let mut at = 0;
    for edit in edits {
        debug_assert!(edit.range.start >= at, "edits overlap");
        out.push_str(&text[at..edit.range.start]);
        out.push_str(&edit.text);
        at = edit.range.end;
    }
    out.push_str(&text[at..]);
    out
}

pub(super) fn name_of(prop: &ObjectProp<'_>) -> String {
    prop.name.as_str().to_owned()
}

pub(super) fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// A node as a JSON value, numbers as written.
pub(super) fn to_value(node: &ast::Value<'_>) -> Result<Value, String> {
    Ok(match node {
        ast::Value::StringLit(lit) => Value::String(lit.value.to_string()),
        ast::Value::NumberLit(lit) => {
            Value::Number(serde_json::from_str(lit.value).map_err(|_| format!("the number {} is not JSON", lit.value))?)
        }
        ast::Value::BooleanLit(lit) => Value::Bool(lit.value),
        ast::Value::NullKeyword(_) => Value::Null,
        ast::Value::Array(array) => {
            Value::Array(array.elements.iter().map(|element| to_value(element)).collect::<Result<_, _>>()?)
        }
        ast::Value::Object(object) => Value::Object(
            object
                .properties
                .iter()
                .map(|prop| Ok((name_of(prop), to_value(&prop.value)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}
