//! A first override file for a source, written from what the rules would do, for a curator to
//! review (`tool-mediator overrides new`).

use indexmap::IndexMap;

use super::file::{OverrideFile, ToolOverride};
use crate::rules::RuleTransformer;
use tool_mediator_core::Answer;
use tool_mediator_core::NameRules;
use tool_mediator_core::Tool;
use tool_mediator_core::schema;

/// A list names two tools alike: an override file has one entry a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`/tools/{index}`: a second tool named `{name}`; an override file has one entry a name")]
pub struct DuplicateTool {
    pub index: usize,
    pub name: String,
}

/// An override file for `source` with an entry per tool, pre-filled with what the rules would
/// do: the spelled-out name, the description (inferred where the source has none), the
/// category, and the repaired schema where the source's needed repair.
pub fn scaffold(source: String, tools: &[Tool], notes: String) -> Result<OverrideFile, DuplicateTool> {
    let mut answers: Vec<Option<Answer>> = vec![None; tools.len()];
    for answer in RuleTransformer::new().answers(tools) {
        let index = answer.index;
        answers[index] = Some(answer);
    }
    let mut entries = IndexMap::new();
    for (index, (tool, answer)) in tools.iter().zip(answers).enumerate() {
        let description = |text: Option<&String>| text.filter(|text| !text.trim().is_empty()).cloned();
        let mut entry = ToolOverride { description: description(tool.description.as_ref()), ..ToolOverride::default() };
        if let Some(answer) = answer {
            let improved = &answer.patch.applied_to(tool);
            if improved.name != tool.name && NameRules::MCP.is_valid(&improved.name) {
                entry.name = Some(improved.name.clone());
            }
            entry.description = description(improved.description.as_ref());
            entry.category = answer.category.clone();
            if improved.input_schema != tool.input_schema {
                entry.input_schema = improved.input_schema_value().filter(schema::is_valid);
            }
        }
        if entries.insert(tool.name.clone(), entry).is_some() {
            return Err(DuplicateTool { index, name: tool.name.clone() });
        }
    }
    Ok(OverrideFile {
        schema: Some("schema.json".into()),
        source,
        aliases: Vec::new(),
        notes: Some(notes),
        tools: entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scaffold_says_what_the_rules_would_do_and_loads() {
        let tools = [Tool::new("gt_usr").with_description("gets user"), Tool::new("get_me").with_description("Me.")];
        let file = scaffold("s".into(), &tools, "review".into()).unwrap();
        assert_eq!(file.tools["gt_usr"].name.as_deref(), Some("get_user"));
        assert_eq!(file.tools["get_me"].name, None);
        let text = serde_json::to_string_pretty(&file).unwrap();
        assert!(OverrideFile::parse(&text, std::path::Path::new("s.json")).is_ok(), "{text}");
        let twice = [Tool::new("a"), Tool::new("a")];
        assert_eq!(
            scaffold("s".into(), &twice, String::new()).unwrap_err(),
            DuplicateTool { index: 1, name: "a".into() }
        );
    }
}
