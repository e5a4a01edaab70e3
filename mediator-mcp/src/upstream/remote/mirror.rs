//! The arguments a tool asks to see in headers (2026-07-28): a property of its input schema
//! marked `"x-mcp-header": "Region"` is sent, on every call of that tool, as `Mcp-Param-Region`
//! beside the body, so that whoever routes on headers need not read the body. The bridge learns
//! the marks from the server's own tool listings as they pass, and mirrors each call's values.

use std::collections::HashMap;
use std::sync::Mutex;

use reqwest::header::{HeaderName, HeaderValue};
use serde_json::Value;
use tool_mediator_core::sync::lock;

/// The schema key that marks a property for mirroring.
const MARK: &str = "x-mcp-header";
/// Tools whose marks are remembered, and marks per tool: a server's listing cannot grow them
/// without end.
const TOOLS: usize = 4096;
const MARKS_PER_TOOL: usize = 32;
/// How deep in nested `properties` a mark is looked for.
const DEPTH: usize = 8;
/// The longest value mirrored in a header, encoded: a longer one is left to the body (HTTP
/// servers and the proxies before them refuse headers much past this).
pub(super) const VALUE_LIMIT: usize = 8 * 1024;

/// One marked argument: where it is in the arguments, and its header.
#[derive(Debug, Clone, PartialEq)]
struct Mark {
    path: Vec<String>,
    header: HeaderName,
}

/// The marks of the tools a server listed, by the server's name for each tool.
#[derive(Default)]
pub(super) struct ParamHeaders {
    marks: Mutex<HashMap<String, Vec<Mark>>>,
}

impl ParamHeaders {
    /// Learns the marks of the tools in a `tools/list` answer (one page of it).
    pub(super) fn learn(&self, answer: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Answer {
            result: Option<Listed>,
        }
        #[derive(serde::Deserialize)]
        struct Listed {
            #[serde(default)]
            tools: Vec<Listing>,
        }
        #[derive(serde::Deserialize)]
        struct Listing {
            name: String,
            #[serde(rename = "inputSchema")]
            input_schema: Option<Value>,
        }
        let Ok(Answer { result: Some(listed) }) = serde_json::from_slice::<Answer>(answer) else { return };
        let mut marks = lock(&self.marks);
        for tool in listed.tools {
            let mut found = Vec::new();
            if let Some(schema) = &tool.input_schema {
                marks_in(schema, &mut Vec::new(), &mut found);
            }
            if found.is_empty() {
                marks.remove(&tool.name);
            } else if marks.len() < TOOLS || marks.contains_key(&tool.name) {
                marks.insert(tool.name, found);
            }
        }
    }

    /// The headers a `tools/call` of `tool` with `arguments` carries: one for each marked
    /// argument given a string, number or boolean (none for one absent or null).
    pub(super) fn of_call(&self, params: &Value) -> Vec<(HeaderName, HeaderValue)> {
        let Some(tool) = params.get("name").and_then(Value::as_str) else { return Vec::new() };
        let marks = lock(&self.marks);
        let Some(marks) = marks.get(tool) else { return Vec::new() };
        let Some(arguments) = params.get("arguments") else { return Vec::new() };
        marks
            .iter()
            .filter_map(|mark| {
                let value = mark.path.iter().try_fold(arguments, |value, key| value.get(key))?;
                let text = match value {
                    Value::String(text) => crate::wire::revision::encode_header_value(text),
                    Value::Number(number) => number.to_string(),
                    Value::Bool(flag) => flag.to_string(),
                    _ => return None,
                };
                if text.len() > VALUE_LIMIT {
                    return None;
                }
                Some((mark.header.clone(), HeaderValue::from_str(&text).ok()?))
            })
            .collect()
    }

    /// Whether any listed tool has marks: only then is a call's body read for them.
    pub(super) fn any(&self) -> bool {
        !lock(&self.marks).is_empty()
    }
}

/// The marks in `schema`'s `properties`, nested ones included, at `path`. A mark that is not a
/// header name (RFC 9110 token), or names a header already marked, is left out.
fn marks_in(schema: &Value, path: &mut Vec<String>, found: &mut Vec<Mark>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(header) = property.get(MARK).and_then(Value::as_str)
            && found.len() < MARKS_PER_TOOL
            && let Ok(header) = HeaderName::from_bytes(format!("mcp-param-{header}").as_bytes())
            && !found.iter().any(|mark| mark.header == header)
        {
            found.push(Mark { path: path.clone(), header });
        }
        if path.len() < DEPTH {
            marks_in(property, path, found);
        }
        path.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn listing() -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "route", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "priority": {"type": "integer", "x-mcp-header": "Priority"},
                "dry": {"type": "boolean", "x-mcp-header": "Dry"},
                "target": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
                "bad": {"type": "string", "x-mcp-header": "Not A Token"},
                "again": {"type": "string", "x-mcp-header": "region"}
            }}},
            {"name": "plain", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}}
        ]}})
        .to_string()
        .into_bytes()
    }

    fn headers(params: Value) -> Vec<(String, String)> {
        let mirror = ParamHeaders::default();
        mirror.learn(&listing());
        let mut headers: Vec<_> = mirror
            .of_call(&params)
            .into_iter()
            .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
            .collect();
        headers.sort();
        headers
    }

    #[test]
    fn marked_arguments_are_mirrored_encoded_where_they_must_be() {
        let call = json!({"name": "route", "arguments": {
            "region": "Zürich", "priority": 3, "dry": false, "target": {"zone": "b"}, "bad": "x", "again": "y"
        }});
        assert_eq!(
            headers(call),
            [
                ("mcp-param-dry".to_owned(), "false".to_owned()),
                ("mcp-param-priority".to_owned(), "3".to_owned()),
                ("mcp-param-region".to_owned(), "=?base64?WsO8cmljaA==?=".to_owned()),
                ("mcp-param-zone".to_owned(), "b".to_owned()),
            ]
        );
    }

    #[test]
    fn absent_null_and_unmarked_arguments_send_nothing() {
        assert!(headers(json!({"name": "route", "arguments": {"region": null}})).is_empty());
        assert!(headers(json!({"name": "route", "arguments": {"region": ["a"]}})).is_empty());
        assert!(headers(json!({"name": "plain", "arguments": {"q": "x"}})).is_empty());
        assert!(headers(json!({"name": "unknown", "arguments": {"region": "x"}})).is_empty());
        let long = "x".repeat(VALUE_LIMIT + 1);
        assert!(headers(json!({"name": "route", "arguments": {"region": long}})).is_empty(), "left to the body");
    }

    #[test]
    fn a_tool_listed_again_without_marks_loses_them() {
        let mirror = ParamHeaders::default();
        mirror.learn(&listing());
        assert!(mirror.any());
        mirror.learn(br#"{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"route","inputSchema":{}}]}}"#);
        assert!(!mirror.any());
    }
}
