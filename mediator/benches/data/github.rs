//! The benchmarks' tools: the real github-mcp-server tools, numbered so names stay unique, and
//! each schema marked with its number (a `$comment`) so no two are the same text: a real list
//! does not repeat its schemas, and the chain remembers schemas it found valid.

use serde_json::{Value, json};
use tool_mediator::Tool;

#[allow(dead_code)] // each benchmark uses one of the two
pub fn tools(n: usize) -> Vec<Tool> {
    let github: Value = serde_json::from_str(include_str!("github.json")).expect("github.json is JSON");
    let real: Vec<Tool> = serde_json::from_value(github["tools"].clone()).expect("tools");
    (0..n)
        .map(|i| {
            let mut tool = real[i % real.len()].clone();
            tool.name = format!("{}_{i}", tool.name);
            if let Some(Value::Object(mut schema)) = tool.input_schema_value() {
                schema.insert("$comment".into(), Value::from(format!("copy {i}")));
                tool.input_schema = Some(Value::Object(schema).into());
            }
            tool
        })
        .collect()
}

/// A manifest of `n` tools as compact JSON: the real github-mcp-server tools with numbered names
/// (well made, large schemas), and every fourth one a cryptic tool in the seed's style.
#[allow(dead_code)] // each benchmark uses one of the two
pub fn manifest(n: usize) -> String {
    let github: Value = serde_json::from_str(include_str!("github.json")).expect("github.json is JSON");
    let real = github["tools"].as_array().expect("a tools array");
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            if i % 4 == 3 {
                json!({"name": format!("gt_usr_{i}"), "description": "gets user", "inputSchema": {"type": "dict", "properties": {"uid": {"type": "int"}}, "$comment": format!("copy {i}")}})
            } else {
                let mut tool = real[i % real.len()].clone();
                tool["name"] = Value::from(format!("{}_{i}", tool["name"].as_str().unwrap()));
                tool["inputSchema"]["$comment"] = Value::from(format!("copy {i}"));
                tool
            }
        })
        .collect();
    serde_json::to_string(&json!({"tools": tools})).expect("serializes")
}
