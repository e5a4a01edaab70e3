//! The benchmarks' tools: the real github-mcp-server tools, numbered so names stay unique.

use serde_json::Value;
use tool_mediator::Tool;

pub fn tools(n: usize) -> Vec<Tool> {
    let github: Value = serde_json::from_str(include_str!("github.json")).expect("github.json is JSON");
    let real: Vec<Tool> = serde_json::from_value(github["tools"].clone()).expect("tools");
    (0..n)
        .map(|i| {
            let mut tool = real[i % real.len()].clone();
            tool.name = format!("{}_{i}", tool.name);
            tool
        })
        .collect()
}
