//! Curated override files: deterministic corrections for one source's tools, confidence 1.

mod built_in;
mod file;
mod lint;
mod live;
pub mod remote;
mod scaffold;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tokio::sync::watch;

use tool_mediator_core::json::Json;
use tool_mediator_core::{Answer, ToolTransformer, TransformError};
use tool_mediator_core::{Tool, ToolContext};

pub use built_in::{BUILT_IN_PREFIX, built_in_files};
pub use file::{ArgumentOverride, OverrideError, OverrideFile, OverrideSet, SCHEMA, ToolOverride, override_files};
pub use lint::{LintFinding, lint};
pub use live::{LOOK_EVERY, LiveOverrides};
pub use scaffold::{DuplicateTool, scaffold};

/// Applies override files: priority 200, name `overrides`, confidence 1.
///
/// The file is chosen by [`ToolContext::source`]; a tool is matched by the name the source
/// publishes. Tools without an entry are declined and go on down the chain. A transformer that
/// follows [`LiveOverrides`] applies the set read last.
#[derive(Debug, Clone)]
pub struct OverrideTransformer {
    overrides: watch::Receiver<Arc<OverrideSet>>,
}

impl OverrideTransformer {
    pub const NAME: &'static str = "overrides";
    pub const PRIORITY: i32 = 200;

    pub fn new(overrides: OverrideSet) -> Self {
        OverrideTransformer { overrides: watch::channel(Arc::new(overrides)).1 }
    }

    /// Applies the set `live` read last ([`MediatorBuilder::live_overrides`](crate::MediatorBuilder::live_overrides)
    /// builds one, and has the mediator hear of each new set).
    pub(crate) fn following(live: &LiveOverrides) -> Self {
        OverrideTransformer { overrides: live.subscribe() }
    }

    /// The set applied now.
    pub fn overrides(&self) -> Arc<OverrideSet> {
        self.overrides.borrow().clone()
    }
}

#[async_trait]
impl ToolTransformer for OverrideTransformer {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn priority(&self) -> i32 {
        Self::PRIORITY
    }

    async fn transform(&self, tools: &[Tool], context: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        let overrides = self.overrides();
        let Some(entries) = overrides.for_source(&context.source) else {
            return Ok(Vec::new());
        };
        Ok(tools
            .iter()
            .enumerate()
            .filter_map(|(index, tool)| {
                let entry = entries.get(&tool.name)?;
                let mut answer = if entry.changes_definition() {
                    let (proposed, argument_aliases) = apply(tool, entry);
                    let mut answer = Answer::proposing(index, tool, &proposed, 1.0);
                    answer.argument_aliases = argument_aliases;
                    answer
                } else {
                    Answer::unchanged(index, 1.0)
                };
                answer.category.clone_from(&entry.category);
                answer.hidden = entry.hidden;
                Some(answer)
            })
            .collect())
    }
}

/// The tool with the override merged in, and its parameter aliases (exposed -> source name).
pub fn apply(tool: &Tool, entry: &ToolOverride) -> (Tool, BTreeMap<String, String>) {
    let mut tool = tool.clone();
    if let Some(name) = &entry.name {
        tool.name.clone_from(name);
    }
    if let Some(title) = &entry.title {
        tool.title = Some(title.clone());
    }
    if let Some(description) = &entry.description {
        tool.description = Some(description.clone());
    }
    if let Some(annotations) = &entry.annotations {
        let merged = match tool.annotations.take().map(|annotations| annotations.to_value()) {
            Some(Value::Object(mut existing)) => {
                existing.extend(annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
                existing
            }
            _ => annotations.clone(),
        };
        tool.annotations = Some(Json::from(Value::Object(merged)));
    }
    if let Some(schema) = &entry.input_schema {
        tool.input_schema = Some(Json::from_value(schema));
    }
    let mut aliases = BTreeMap::new();
    // Arguments are renamed and described in the schema as a tree, put back as text after.
    let mut schema = if entry.arguments.is_empty() { None } else { tool.input_schema_value() };
    for (source_name, argument) in &entry.arguments {
        let exposed = argument.name.as_deref().unwrap_or(source_name);
        let Some(properties) =
            schema.as_mut().and_then(|schema| schema.get_mut("properties")).and_then(Value::as_object_mut)
        else {
            continue;
        };
        if exposed != source_name {
            let has_source = properties.contains_key(source_name);
            let has_exposed = properties.contains_key(exposed);
            // Renamed here, or written under the exposed name by the override's own schema.
            // When the source's schema has both names the rename would shadow a real
            // parameter: it is not made (lint reports it).
            let renamed = has_source && !has_exposed;
            let curated = has_exposed && !has_source && entry.input_schema.is_some();
            if renamed {
                tool_mediator_core::json::rename_key(properties, source_name, exposed);
                if let Some(Value::Array(required)) = schema.as_mut().and_then(|s| s.get_mut("required")) {
                    for entry in required.iter_mut() {
                        if entry.as_str() == Some(source_name) {
                            *entry = Value::String(exposed.to_owned());
                        }
                    }
                }
            }
            if renamed || curated {
                aliases.insert(exposed.to_owned(), source_name.clone());
            }
        }
        if let Some(description) = &argument.description
            && let Some(Value::Object(property)) = schema
                .as_mut()
                .and_then(|schema| schema.get_mut("properties"))
                .and_then(|properties| properties.get_mut(exposed))
        {
            property.insert("description".into(), Value::String(description.clone()));
        }
    }
    if let Some(schema) = schema {
        tool.input_schema = Some(Json::from(schema));
    }
    (tool, aliases)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn entry(value: Value) -> ToolOverride {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn partial_override_merges_with_the_raw_tool() {
        let raw: Tool = serde_json::from_value(json!({
            "name": "gt_usr", "description": "gets user",
            "inputSchema": {"type": "object", "properties": {"uid": {"type": "string"}}, "required": ["uid"]},
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap();
        let (tool, aliases) = apply(
            &raw,
            &entry(json!({
                "name": "get_user",
                "annotations": {"idempotentHint": true},
                "arguments": {"uid": {"name": "user_id", "description": "The user's ID."}}
            })),
        );
        assert_eq!(tool.name, "get_user");
        assert_eq!(tool.description.as_deref(), Some("gets user"));
        assert_eq!(tool.annotations, Some(Json::from(json!({"readOnlyHint": true, "idempotentHint": true}))));
        let schema = tool.input_schema.unwrap().to_value();
        assert_eq!(schema["properties"]["user_id"], json!({"type": "string", "description": "The user's ID."}));
        assert_eq!(schema["required"], json!(["user_id"]));
        assert_eq!(aliases.get("user_id").map(String::as_str), Some("uid"));
    }

    #[test]
    fn a_rename_onto_an_existing_parameter_is_not_made() {
        let raw = Tool::new("t").with_input_schema(json!({"type": "object", "properties": {"a": {}, "b": {}}}));
        let (tool, aliases) = apply(&raw, &entry(json!({"arguments": {"a": {"name": "b"}}})));
        assert!(aliases.is_empty());
        assert_eq!(tool.input_schema, raw.input_schema);
        let (_, aliases) = apply(
            &raw,
            &entry(
                json!({"inputSchema": {"type": "object", "properties": {"c": {}}}, "arguments": {"a": {"name": "c"}}}),
            ),
        );
        assert_eq!(aliases.get("c").map(String::as_str), Some("a"), "the override's own schema uses the new name");
    }

    #[test]
    fn transformer_answers_only_for_its_source_and_listed_tools() {
        let file = OverrideFile::parse(
            r#"{"source": "example.com", "tools": {"del": {"name": "delete_item", "hidden": true}}}"#,
            Path::new("x"),
        )
        .unwrap();
        let mut set = OverrideSet::new();
        set.add(file, "x".into());
        let transformer = OverrideTransformer::new(set);
        let tools = [Tool::new("gt_usr"), Tool::new("del")];
        let run = |source: &str| {
            let context = ToolContext::new(source, tool_mediator_core::SourceType::Web);
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(transformer.transform(&tools, &context))
                .unwrap()
        };
        let answers = run("example.com");
        assert_eq!(answers.len(), 1);
        assert_eq!(
            (answers[0].index, answers[0].patch.name.as_deref().unwrap(), answers[0].hidden),
            (1, "delete_item", true)
        );
        assert!(run("other.org").is_empty());
    }
}
