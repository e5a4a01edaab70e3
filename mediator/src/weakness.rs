//! What makes a tool definition weak: one notion, used by the chain (a weak tool is not finished
//! by an answer that only categorizes it, so it goes on to the language model), by `--report`
//! (which weak tools were left weak, and why) and by what judges a manifest.

use std::fmt;

use serde::Deserialize;

use crate::rules::{describe, identifier};
use tool_mediator_core::Tool;
use tool_mediator_core::schema;

/// Descriptions shorter than this many words cannot say what a tool does and returns.
const SHORT: usize = 4;

/// One reason a definition is weak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Weakness {
    /// No description, or a blank one.
    NoDescription,
    /// The description only says the name again (`get_user`: "gets user").
    RestatesName,
    /// Fewer than four words: too short to say what the tool returns.
    TooShort,
    /// Required parameters without a description, by name.
    UndescribedRequired(Vec<String>),
    /// No input schema, or one that is not standard JSON Schema (`"type": "dict"`).
    NonStandardSchema,
    /// A schema that takes no arguments, for a name that implies some (`create_invoice`,
    /// `get_user_by_id`).
    EmptySchema,
}

impl Weakness {
    /// A stable id, for reports and the linter.
    pub fn id(&self) -> &'static str {
        match self {
            Weakness::NoDescription => "no-description",
            Weakness::RestatesName => "description-restates-name",
            Weakness::TooShort => "description-too-short",
            Weakness::UndescribedRequired(_) => "undescribed-required-parameter",
            Weakness::NonStandardSchema => "non-standard-schema",
            Weakness::EmptySchema => "empty-schema",
        }
    }
}

impl fmt::Display for Weakness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Weakness::NoDescription => f.write_str("no description"),
            Weakness::RestatesName => f.write_str("the description only restates the name"),
            Weakness::TooShort => write!(f, "the description is under {SHORT} words"),
            Weakness::UndescribedRequired(names) => {
                write!(f, "required parameters without a description: {}", names.join(", "))
            }
            Weakness::NonStandardSchema => f.write_str("no input schema, or a non-standard one"),
            Weakness::EmptySchema => f.write_str("the name implies arguments, but the schema takes none"),
        }
    }
}

/// Every reason `tool`'s definition is weak; none for a tool a model can use as it is.
pub fn weaknesses(tool: &Tool) -> Vec<Weakness> {
    let mut found = Vec::new();
    match tool.description.as_deref().map(str::trim) {
        None | Some("") => found.push(Weakness::NoDescription),
        Some(description) => {
            let name_words = identifier::words(&tool.name);
            if describe::repeats_name(description, &name_words) {
                found.push(Weakness::RestatesName);
            } else if description.split_whitespace().count() < SHORT {
                found.push(Weakness::TooShort);
            }
        }
    }
    match &tool.input_schema {
        None => found.push(Weakness::NonStandardSchema),
        Some(input_schema) if is_non_standard(input_schema) => found.push(Weakness::NonStandardSchema),
        Some(input_schema) if takes_nothing(input_schema.as_str()) => {
            if describe::implies_arguments(&identifier::words(&tool.name)) {
                found.push(Weakness::EmptySchema);
            }
        }
        Some(input_schema) => {
            let undescribed = undescribed_required(input_schema.as_str());
            if !undescribed.is_empty() {
                found.push(Weakness::UndescribedRequired(undescribed));
            }
        }
    }
    found
}

/// Whether a schema takes no arguments: an object with no properties, and nothing else that
/// would let arguments in (`additionalProperties`, `patternProperties`, `anyOf`, `$ref`, ...).
fn takes_nothing(schema: &str) -> bool {
    let Ok(serde_json::Value::Object(members)) = serde_json::from_str::<serde_json::Value>(schema) else {
        return false;
    };
    members.iter().all(|(key, value)| match key.as_str() {
        "type" | "$schema" | "$id" | "$comment" | "title" | "description" => true,
        "properties" => value.as_object().is_some_and(serde_json::Map::is_empty),
        "required" => value.as_array().is_some_and(Vec::is_empty),
        "additionalProperties" => *value == serde_json::Value::Bool(false),
        _ => false,
    })
}

/// Whether `tool`'s definition is weak in any way.
pub fn is_weak(tool: &Tool) -> bool {
    !weaknesses(tool).is_empty()
}

/// Whether a schema needs more repair than the empty `properties` a tool without parameters
/// may leave out.
fn is_non_standard(input_schema: &tool_mediator_core::json::Json) -> bool {
    if !schema::needs_repair(input_schema) {
        return false;
    }
    let mut value = input_schema.to_value();
    schema::repair(&mut value).iter().any(|repair| repair.pointer != "/properties")
}

/// The required parameters of a schema that have no description.
fn undescribed_required(schema: &str) -> Vec<String> {
    #[derive(Deserialize)]
    struct Schema {
        #[serde(default)]
        properties: serde_json::Map<String, serde_json::Value>,
        #[serde(default)]
        required: Vec<serde_json::Value>,
    }
    let Ok(schema) = serde_json::from_str::<Schema>(schema) else { return Vec::new() };
    schema
        .required
        .iter()
        .filter_map(serde_json::Value::as_str)
        .filter(|name| {
            schema
                .properties
                .get(*name)
                .and_then(|property| property.get("description"))
                .and_then(|d| d.as_str())
                .is_none_or(|description| description.trim().is_empty())
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, description: Option<&str>, schema: serde_json::Value) -> Tool {
        let tool = Tool::new(name).with_input_schema(schema);
        match description {
            Some(description) => tool.with_description(description),
            None => tool,
        }
    }

    #[test]
    fn a_description_that_restates_the_name_is_weak() {
        let object = json!({"type": "object"});
        assert_eq!(weaknesses(&tool("get_user", Some("gets user"), object.clone())), [Weakness::RestatesName]);
        assert_eq!(weaknesses(&tool("list_orders", Some("List orders."), object.clone())), [Weakness::RestatesName]);
        assert_eq!(weaknesses(&tool("get_user", None, object.clone())), [Weakness::NoDescription]);
        assert_eq!(weaknesses(&tool("fetch", Some("Fetches a URL."), object)), [Weakness::TooShort]);
    }

    #[test]
    fn a_well_made_tool_is_not_weak() {
        let schema = json!({"type": "object", "properties": {"id": {"type": "string", "description": "The user's id."}},
                            "required": ["id"]});
        let good = tool("get_user", Some("Gets a user by id and returns their profile."), schema);
        assert!(!is_weak(&good), "{:?}", weaknesses(&good));
    }

    #[test]
    fn an_empty_schema_is_weak_where_the_name_implies_arguments() {
        let described =
            |name| tool(name, Some("Does what its name says, and returns the result."), json!({"type": "object"}));
        assert_eq!(weaknesses(&described("create_invoice")), [Weakness::EmptySchema]);
        assert_eq!(weaknesses(&described("getUserById")), [Weakness::EmptySchema]);
        for name in ["get_current_time", "list_allowed_directories", "read_graph", "delete_all_drafts"] {
            assert_eq!(weaknesses(&described(name)), [], "{name}");
        }
        let open = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let invoice = tool("create_invoice", Some("Create an invoice and return its number."), open);
        assert_eq!(weaknesses(&invoice), [], "additional properties are arguments");
    }

    #[test]
    fn schemas_and_required_parameters_count() {
        let undescribed = json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]});
        assert_eq!(
            weaknesses(&tool("get_user", Some("Gets a user by id and returns their profile."), undescribed)),
            [Weakness::UndescribedRequired(vec!["id".into()])]
        );
        let dict = json!({"type": "dict", "properties": {}});
        assert!(
            weaknesses(&tool("get_user", Some("Gets a user by id and returns their profile."), dict))
                .contains(&Weakness::NonStandardSchema)
        );
    }
}
