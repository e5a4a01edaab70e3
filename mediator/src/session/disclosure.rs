//! Category tools: one listed tool standing for a category of tools until it is called.

use serde_json::{Value, json};

use crate::json::Json;
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
    tool.annotations = Some(Json::from(json!({"readOnlyHint": true, "idempotentHint": false, "openWorldHint": false})));
    tool
}

/// How many tools one expansion describes at most, and about how many bytes of text; the rest
/// are named in a note (they are listed and callable all the same).
const EXPANDED_TOOLS: usize = 50;
const EXPANDED_BYTES: usize = 256 * 1024;

/// The answer to calling a category tool: its tools with their descriptions and input schemas,
/// as text for every client and as `structuredContent` for those that read it. A large
/// category is described in part, with a note saying that every member is now in `tools/list`.
pub fn expansion_result(category: &str, members: impl ExactSizeIterator<Item = Tool>) -> Value {
    let total = members.len();
    let topic = category.replace(['_', '-'], " ");
    let mut tools = Vec::new();
    let mut entries = String::new();
    for tool in members {
        let schema = tool.input_schema.as_ref().map_or("{}", Json::as_str);
        let entry = format!(
            "\n- {}: {}\n  input schema: {schema}\n",
            tool.name,
            tool.description.as_deref().unwrap_or("(no description)"),
        );
        if !tools.is_empty() && (tools.len() == EXPANDED_TOOLS || entries.len() + entry.len() > EXPANDED_BYTES) {
            break;
        }
        entries.push_str(&entry);
        tools.push(json!({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}));
    }
    let mut text = format!("{total} tools for {topic}; call them by name:\n{entries}");
    let mut structured = json!({"category": category, "tools": tools});
    if tools.len() < total {
        let note = format!(
            "Described here: {} of {total}. All {total} are now in tools/list and can be called by name; \
             list the tools to see the rest.",
            tools.len()
        );
        text.push_str(&format!("\n{note}\n"));
        structured["total"] = json!(total);
        structured["note"] = json!(note);
    }
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": false
    })
}
