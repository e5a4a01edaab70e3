//! `search_tools`: the model finds tools by what they do. The index (see [`crate::search`]) is
//! built on the first search after the tools changed; what a search finds is listed and
//! callable from then on, at once (for clients that never list again) and with one
//! `list_changed`. A tool the client may not see is never found.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Session, State, text_result};
use crate::json::Json;
use crate::search::{Document, ToolIndex};
use crate::tool::Tool;

pub(super) const SEARCH_TOOL: &str = "search_tools";
const DEFAULT_LIMIT: usize = 5;
const MAX_LIMIT: usize = 50;

/// The search tool, over `count` tools.
pub(super) fn search_tool(count: usize) -> Tool {
    let description = format!(
        "Find the tools for a task among {count} tools: say what you want to do in a few words. Returns the \
         best matches with their descriptions and input schemas; call them by name."
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What the tool should do, in a few words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                      "description": "How many tools to return at most."},
        },
        "required": ["query"],
    });
    let mut tool = Tool::new(SEARCH_TOOL).with_description(description).with_input_schema(schema);
    tool.annotations = Some(Json::from(json!({"readOnlyHint": true, "idempotentHint": true, "openWorldHint": false})));
    tool
}

impl Session {
    /// Answers `search_tools(arguments)`; what it finds is listed from then on.
    pub(super) fn search(&self, arguments: &Map<String, Value>) -> Value {
        let query = match arguments.get("query").and_then(Value::as_str) {
            Some(query) if !query.trim().is_empty() => query,
            _ => return text_result("`query` is required: a few words saying what the tool should do", true),
        };
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIMIT, |limit| usize::try_from(limit).unwrap_or(MAX_LIMIT).clamp(1, MAX_LIMIT));
        let (result, changed) = {
            let mut state = self.state();
            let index = self.index(&mut state);
            let tools = state.tools.as_deref().unwrap_or_default();
            let hits: Vec<usize> = index
                .search(query, tools.len())
                .into_iter()
                .map(|(position, _)| position)
                .filter(|&position| self.is_visible(&state, &tools[position]))
                .take(limit)
                .collect();
            let found: Vec<Tool> = hits.iter().map(|&position| self.as_listed(&state, &tools[position])).collect();
            let names: Vec<String> = hits.iter().map(|&position| tools[position].name().to_owned()).collect();
            state.found.extend(names);
            state.derived = None;
            (search_result(query, &found), self.view_now(&mut state).1)
        };
        self.announce(changed);
        result
    }

    /// The index of the tools as they are now.
    fn index(&self, state: &mut State) -> Arc<ToolIndex> {
        if let Some(index) = &state.index {
            return index.clone();
        }
        let tools = state.tools.as_deref().unwrap_or_default();
        let several = self.source_names.len() > 1;
        let documents = tools.iter().enumerate().map(|(position, tool)| Document {
            tool,
            server: several
                .then(|| state.owners.get(position).and_then(|&owner| self.source_names.get(owner)))
                .flatten()
                .map(String::as_str),
        });
        let index = Arc::new(ToolIndex::new(documents));
        state.index = Some(index.clone());
        index
    }
}

/// The answer: the tools found with their descriptions and input schemas, as text for every
/// client and as `structuredContent` for those that read it.
fn search_result(query: &str, found: &[Tool]) -> Value {
    if found.is_empty() {
        let text = format!("No tool matches `{query}`. Try other words for what it should do.");
        return json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"query": query, "tools": []},
            "isError": false
        });
    }
    let mut text = format!("{} tools for `{query}`, best first; call them by name:\n", found.len());
    let mut tools = Vec::with_capacity(found.len());
    for tool in found {
        let schema = tool.input_schema.as_ref().map_or("{}", Json::as_str);
        let description = tool.description.as_deref().unwrap_or("(no description)");
        text.push_str(&format!("\n- {}: {description}\n  input schema: {schema}\n", tool.name));
        tools.push(json!({"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}));
    }
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": {"query": query, "tools": tools},
        "isError": false
    })
}
