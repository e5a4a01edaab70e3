//! RestBench (`tests/data/eval`): the APIs of TMDB and Spotify as MCP tools, and the real user
//! queries that name the APIs answering them, in the order they are called.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::eval_dir;

/// The two services, in the order the measures report them.
pub const SERVICES: [&str; 2] = ["TMDB", "Spotify"];

/// A service's APIs as MCP tools, as the documentation publishes them: the name, the
/// description, the parameters as the input schema (their schemas untouched, oddities and all).
pub fn tools(service: &str) -> Vec<Value> {
    let path = eval_dir().join(format!("restbench_docs/RestBench_tool_instruction_{service}_Initial.json"));
    let docs: BTreeMap<String, Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut docs: Vec<Value> = docs.into_values().collect();
    docs.sort_by_key(|doc| doc["ID"].as_u64());
    docs.iter()
        .map(|doc| {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for (list, is_required) in [("required_parameters", true), ("optional_parameters", false)] {
                for parameter in doc[list].as_array().into_iter().flatten() {
                    let name = parameter["name"].as_str().unwrap_or_default().to_owned();
                    let mut schema = parameter["schema"].as_object().cloned().unwrap_or_default();
                    if let Some(description) = parameter["description"].as_str() {
                        schema.insert("description".into(), json!(description));
                    }
                    if is_required {
                        required.push(json!(name));
                    }
                    properties.insert(name, Value::Object(schema));
                }
            }
            json!({
                "name": doc["tool_name"],
                "description": doc["description"],
                "inputSchema": {"type": "object", "properties": properties, "required": required},
            })
        })
        .collect()
}

/// A user's request and the APIs that answer it, the first called first.
pub struct Query {
    pub text: String,
    pub relevant: Vec<String>,
}

/// A service's queries, in the data set's order.
pub fn queries(service: &str) -> Vec<Query> {
    let text = std::fs::read_to_string(eval_dir().join("restbench_queries.jsonl")).unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|query| query["service"] == service)
        .map(|query| Query {
            text: query["query"].as_str().unwrap().to_owned(),
            relevant: query["relevant"]
                .as_array()
                .unwrap()
                .iter()
                .map(|name| name.as_str().unwrap().to_owned())
                .collect(),
        })
        .collect()
}
