//! Category tools: one listed tool standing for a category of tools until it is called.

use serde_json::{Value, json};

use crate::naming::NameRules;
use crate::tool::{EnhancedTool, Tool};

/// How many member names a category tool's description lists before "...".
const NAMES_SHOWN: usize = 8;

/// `<category>_tools`, if the client accepts that name.
pub fn category_tool_name(category: &str, names: NameRules) -> Option<String> {
    let name = format!("{category}_tools");
    names.is_valid(&name).then_some(name)
}

/// The tool listed in place of a folded category.
pub fn category_tool(name: &str, category: &str, members: &[&EnhancedTool]) -> Tool {
    let mut shown: Vec<&str> = members.iter().take(NAMES_SHOWN).map(|tool| tool.name()).collect();
    if members.len() > NAMES_SHOWN {
        shown.push("...");
    }
    let description = format!(
        "Work with {} ({} tools: {}). Call this to see them; they can then be called by name.",
        category.replace(['_', '-'], " "),
        members.len(),
        shown.join(", ")
    );
    let mut tool =
        Tool::new(name).with_description(description).with_input_schema(json!({"type": "object", "properties": {}}));
    // Not idempotent: once expanded, the category tool is gone from the list.
    tool.annotations = Some(json!({"readOnlyHint": true, "idempotentHint": false, "openWorldHint": false}));
    tool
}

/// The answer to calling a category tool: its tools with their descriptions and input schemas,
/// as text for every client and as `structuredContent` for those that read it.
pub fn expansion_result(category: &str, members: &[Tool]) -> Value {
    let tools: Vec<Value> = members
        .iter()
        .map(|tool| json!({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}))
        .collect();
    let mut text = format!("{} tools for {}; call them by name:\n", members.len(), category.replace(['_', '-'], " "));
    for tool in members {
        text.push_str(&format!(
            "\n- {}: {}\n  input schema: {}\n",
            tool.name,
            tool.description.as_deref().unwrap_or("(no description)"),
            tool.input_schema.as_ref().map(Value::to_string).unwrap_or_else(|| "{}".into())
        ));
    }
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"category": category, "tools": tools},
        "isError": false
    })
}
