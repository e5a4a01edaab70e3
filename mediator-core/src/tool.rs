//! Wire types: a tool as a source publishes it, a tool after the chain, and where tools came from.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::json::Json;

/// The `_meta` key under which a consumer-facing tool carries its provenance.
///
/// Namespaced as MCP asks of `_meta` keys, so the output stays a valid `tools/list` result.
pub const PROVENANCE_KEY: &str = "tool-mediator/provenance";

/// A tool definition in the MCP wire shape.
///
/// What the mediator reads and rewrites (name, title, description) is held as strings; what it
/// mostly passes through (schemas, annotations, `_meta` and every field it does not know) as
/// compact JSON text (see [`Json`]), parsed when something reads or changes it. A tool that
/// nobody changes serializes back to JSON equal to what came in.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub input_schema: Option<Json>,
    pub output_schema: Option<Json>,
    pub annotations: Option<Json>,
    /// `_meta`, always an object.
    pub meta: Option<Json>,
    /// Fields this crate does not model (`icons`, `execution`, vendor extensions, ...), in the
    /// order they came.
    pub extra: Vec<(String, Json)>,
}

impl Serialize for Tool {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;

        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        let text = [("title", &self.title), ("description", &self.description)];
        for (key, value) in text {
            if let Some(value) = value {
                map.serialize_entry(key, value)?;
            }
        }
        let json = [
            ("inputSchema", &self.input_schema),
            ("outputSchema", &self.output_schema),
            ("annotations", &self.annotations),
            ("_meta", &self.meta),
        ];
        for (key, value) in json {
            if let Some(value) = value {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in &self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

/// Reads the object once, field by field, each value straight to a string or compact text.
impl<'de> Deserialize<'de> for Tool {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ToolVisitor)
    }
}

struct ToolVisitor;

impl<'de> serde::de::Visitor<'de> for ToolVisitor {
    type Value = Tool;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a tool object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut fields: A) -> Result<Tool, A::Error> {
        use serde::de::Error;

        fn text<E: Error>(key: &str, value: Value) -> Result<Option<String>, E> {
            match value {
                Value::Null => Ok(None),
                Value::String(text) => Ok(Some(text)),
                other => Err(E::custom(format!("invalid type: `{key}` must be a string, not {other}"))),
            }
        }
        let mut tool = Tool::new(String::new());
        let mut name = None;
        // Keys seen so far: a key written twice is refused, not silently overwritten. Looked
        // along for the few a tool has, through a set past that.
        let mut seen: Vec<String> = Vec::new();
        let mut many: Option<std::collections::HashSet<String>> = None;
        while let Some(key) = fields.next_key::<String>()? {
            let repeated = match &mut many {
                Some(many) => !many.insert(key.clone()),
                None if seen.contains(&key) => true,
                None => {
                    seen.push(key.clone());
                    if seen.len() > 16 {
                        many = Some(std::mem::take(&mut seen).into_iter().collect());
                    }
                    false
                }
            };
            if repeated {
                return Err(Error::custom(format_args!("duplicate key `{key}` in one object")));
            }
            if let "name" | "title" | "description" = key.as_str() {
                let value = text(&key, fields.next_value_seed(crate::json::ExactValue)?)?;
                match key.as_str() {
                    "name" => name = value,
                    "title" => tool.title = value,
                    _ => tool.description = value,
                }
                continue;
            }
            let value = fields.next_value::<Option<Json>>()?;
            match key.as_str() {
                "inputSchema" => tool.input_schema = value,
                "outputSchema" => tool.output_schema = value,
                "annotations" => tool.annotations = value,
                "_meta" => match value {
                    Some(meta) if !meta.as_str().starts_with('{') => {
                        return Err(Error::custom(format!("invalid type: `_meta` must be an object, not {meta}")));
                    }
                    meta => tool.meta = meta,
                },
                // A field it does not know is kept, `null` too.
                _ => tool.extra.push((key, value.unwrap_or_else(Json::null))),
            }
        }
        tool.name = name.ok_or_else(|| A::Error::missing_field("name"))?;
        Ok(tool)
    }
}

impl Tool {
    /// A tool with only a name.
    pub fn new(name: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema: None,
            output_schema: None,
            annotations: None,
            meta: None,
            extra: Vec::new(),
        }
    }

    /// `_meta` as an object, empty when there is none.
    pub fn meta_object(&self) -> Map<String, Value> {
        match self.meta.as_ref().map(Json::to_value) {
            Some(Value::Object(meta)) => meta,
            _ => Map::new(),
        }
    }

    /// Sets one member of `_meta`, which is made when there is none.
    pub fn set_meta(&mut self, key: &str, value: Value) {
        // A key `_meta` does not have yet goes last, as it would in the object: written into
        // the text without reading the rest (a tool's `_meta` can be large).
        let name = Value::from(key).to_string();
        let appended = match &self.meta {
            None => Some(format!("{{{name}:{value}}}")),
            Some(meta) if !meta.as_str().contains(&format!("{name}:")) => {
                let members = &meta.as_str()[1..meta.as_str().len() - 1];
                let comma = if members.is_empty() { "" } else { "," };
                Some(format!("{{{members}{comma}{name}:{value}}}"))
            }
            Some(_) => None,
        };
        if let Some(meta) = appended.and_then(|text| Json::from_text(text).ok()) {
            self.meta = Some(meta);
            return;
        }
        let mut meta = self.meta_object();
        meta.insert(key.to_owned(), value);
        self.meta = Some(Json::from(Value::Object(meta)));
    }

    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    pub fn with_input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(Json::from_value(&schema));
        self
    }

    /// The input schema as a tree, to read or change (it is held as text, see [`Json`]).
    pub fn input_schema_value(&self) -> Option<Value> {
        self.input_schema.as_ref().map(Json::to_value)
    }

    /// The names of the top-level parameters in the input schema, in schema order. Read from
    /// the schema's text without building it.
    pub fn parameter_names(&self) -> Vec<String> {
        self.input_schema.as_ref().map(|schema| crate::json::property_names(schema.as_str())).unwrap_or_default()
    }
}

/// What kind of place the tools came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// A web page registering tools through `navigator.modelContext`.
    Web,
    /// An API or server (an MCP server, an OpenAPI description).
    Api,
    /// A manifest file.
    #[default]
    File,
    /// Written by hand.
    Manual,
}

impl std::str::FromStr for SourceType {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "web" => Ok(SourceType::Web),
            "api" => Ok(SourceType::Api),
            "file" => Ok(SourceType::File),
            "manual" => Ok(SourceType::Manual),
            other => Err(format!("unknown source type `{other}` (expected web, api, file or manual)")),
        }
    }
}

/// Where a batch of tools came from. Overrides are chosen by [`ToolContext::source`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolContext {
    /// A domain (`example.com`), an MCP server name (`mcp-fetch`), an API name.
    pub source: String,
    pub source_type: SourceType,
    /// Milliseconds since the Unix epoch when the tools were discovered.
    pub timestamp: u64,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ToolContext {
    /// A context stamped with the current time.
    pub fn new(source: impl Into<String>, source_type: SourceType) -> Self {
        let timestamp =
            SystemTime::now().duration_since(UNIX_EPOCH).map(|elapsed| elapsed.as_millis() as u64).unwrap_or(0);
        ToolContext { source: source.into(), source_type, timestamp, metadata: Map::new() }
    }
}

/// Which of the fields a transformer may change differ from what the source published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Changes {
    pub name: bool,
    pub title: bool,
    pub description: bool,
    pub input_schema: bool,
    pub annotations: bool,
}

impl Changes {
    /// Whether a consumer sees anything other than what the source published.
    pub fn any(&self) -> bool {
        self.name || self.title || self.description || self.input_schema || self.annotations
    }
}

/// Why a word of a name was spelled out as it was: `acct` as "account", from the tool's own
/// description. The provenance carries it, so a reader can check the reasoning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expansion {
    /// The word as the name has it, lowercase.
    pub word: String,
    /// What it was read as.
    #[serde(rename = "as")]
    pub expansion: String,
    /// Where that reading came from (`the description`, `sibling create_account`).
    #[serde(rename = "from")]
    pub evidence: String,
}

/// A tool after the chain, with where its definition came from.
#[derive(Debug, Clone, PartialEq)]
pub struct EnhancedTool {
    pub tool: Tool,
    /// The name the source knows the tool by; calls are routed upstream under it.
    pub original_name: String,
    pub category: Option<String>,
    /// How sure the transformer that answered is, from 0 to 1.
    pub confidence: f64,
    /// The transformer whose answer was taken, or `"none"`.
    pub enhanced_by: String,
    /// Parameters renamed by an override: exposed name -> the source's name.
    pub argument_aliases: BTreeMap<String, String>,
    /// Fields the answer guessed rather than knew (`"description"`, `"inputSchema"`).
    pub inferred: Vec<String>,
    /// An override asked for the tool not to be shown. Selection drops hidden tools.
    pub hidden: bool,
    /// The source's description, when a transformer rewrote it.
    pub original_description: Option<String>,
    /// The words of the name the answer spelled out, each with its evidence.
    pub expansions: Vec<Expansion>,
    /// What differs from the source's definition, so a consumer can tell without a copy of it.
    pub changes: Changes,
    /// The language model whose answer was taken, when one was.
    pub model: Option<String>,
    /// What transformers proposed for it and their gates refused.
    pub refused: Vec<Refused>,
}

/// A proposal a transformer's gate refused: by which transformer, and the gate's reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refused {
    pub by: String,
    pub why: String,
}

/// `enhanced_by` of a tool no transformer answered for.
pub const UNENHANCED: &str = "none";

/// The category of a tool that has none, in `categorize` and in category filters.
pub const UNCATEGORIZED: &str = "uncategorized";

impl EnhancedTool {
    /// A tool as it came, answered by nobody.
    pub fn unchanged(tool: Tool) -> Self {
        EnhancedTool {
            original_name: tool.name.clone(),
            tool,
            category: None,
            confidence: 0.0,
            enhanced_by: UNENHANCED.to_owned(),
            argument_aliases: BTreeMap::new(),
            inferred: Vec::new(),
            hidden: false,
            original_description: None,
            expansions: Vec::new(),
            changes: Changes::default(),
            model: None,
            refused: Vec::new(),
        }
    }

    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The tool's category, or [`UNCATEGORIZED`] when it has none.
    pub fn category_name(&self) -> &str {
        self.category.as_deref().unwrap_or(UNCATEGORIZED)
    }

    /// The tool as a consumer receives it: with provenance under `_meta` when the mediator
    /// changed what the consumer sees of it (see [`Changes`]) and `provenance` is asked for,
    /// else as its source wrote it. The one rule every front door follows.
    pub fn for_consumer(self, provenance: bool) -> Tool {
        if provenance && self.changes.any() { self.into_consumer_tool() } else { self.tool }
    }

    pub fn is_renamed(&self) -> bool {
        self.tool.name != self.original_name
    }

    /// Maps a call's arguments, given in exposed parameter names, back to the source's names.
    pub fn original_arguments(&self, arguments: Map<String, Value>) -> Map<String, Value> {
        if self.argument_aliases.is_empty() {
            return arguments;
        }
        arguments
            .into_iter()
            .map(|(name, value)| match self.argument_aliases.get(&name) {
                Some(original) => (original.clone(), value),
                None => (name, value),
            })
            .collect()
    }

    /// The provenance object written under [`PROVENANCE_KEY`].
    pub fn provenance(&self) -> Value {
        let mut provenance = Map::new();
        // A tool enhanced before keeps the name its source knows it by.
        let earlier = self.tool.meta.as_ref().map(Json::to_value);
        let source_name = earlier
            .as_ref()
            .and_then(|meta| meta.get(PROVENANCE_KEY))
            .and_then(|earlier| earlier.get("originalName"))
            .and_then(Value::as_str)
            .unwrap_or(&self.original_name);
        provenance.insert("originalName".into(), source_name.into());
        if let Some(category) = &self.category {
            provenance.insert("category".into(), category.clone().into());
        }
        provenance.insert("confidence".into(), round_confidence(self.confidence).into());
        provenance.insert("enhancedBy".into(), self.enhanced_by.clone().into());
        if let Some(model) = &self.model {
            provenance.insert("model".into(), model.clone().into());
        }
        if !self.argument_aliases.is_empty() {
            let aliases: Map<String, Value> = self
                .argument_aliases
                .iter()
                .map(|(exposed, original)| (exposed.clone(), original.clone().into()))
                .collect();
            provenance.insert("argumentAliases".into(), aliases.into());
        }
        if !self.inferred.is_empty() {
            provenance.insert("inferred".into(), self.inferred.clone().into());
        }
        if let Some(description) = &self.original_description {
            provenance.insert("originalDescription".into(), description.clone().into());
        }
        if !self.refused.is_empty() {
            provenance.insert("refused".into(), serde_json::to_value(&self.refused).unwrap_or_default());
        }
        if self.changes.name && !self.expansions.is_empty() {
            let expansions = serde_json::to_value(&self.expansions).unwrap_or_default();
            provenance.insert("expansions".into(), expansions);
        }
        Value::Object(provenance)
    }

    /// The tool as a consumer receives it, provenance under `_meta`.
    pub fn to_consumer_tool(&self) -> Tool {
        self.clone().into_consumer_tool()
    }

    /// [`EnhancedTool::to_consumer_tool`] without copying the definition.
    pub fn into_consumer_tool(self) -> Tool {
        let provenance = self.provenance();
        let mut tool = self.tool;
        tool.set_meta(PROVENANCE_KEY, provenance);
        tool
    }
}

fn round_confidence(confidence: f64) -> f64 {
    (confidence * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn untouched_tool_round_trips_to_equal_json() {
        let raw = json!({
            "name": "get-sum",
            "title": "Sum",
            "description": "Adds",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true},
            "execution": {"taskSupport": "forbidden"},
            "icons": [{"src": "data:"}],
            "_meta": {"x/y": 1},
            "x-vendor": null
        });
        let tool: Tool = serde_json::from_value(raw.clone()).unwrap();
        assert_eq!(tool.extra.len(), 3);
        assert_eq!(serde_json::to_value(&tool).unwrap(), raw);
    }

    #[test]
    fn wrong_field_types_are_errors_that_name_the_field() {
        let error = serde_json::from_value::<Tool>(json!({"name": "a", "description": 3})).unwrap_err();
        assert!(error.to_string().contains("`description` must be a string"), "{error}");
        let error = serde_json::from_value::<Tool>(json!({"description": "x"})).unwrap_err();
        assert!(error.to_string().contains("missing field `name`"), "{error}");
        let error = serde_json::from_value::<Tool>(json!({"name": "a", "_meta": []})).unwrap_err();
        assert!(error.to_string().contains("`_meta` must be an object"), "{error}");
    }

    #[test]
    fn a_key_written_twice_is_refused_known_or_not() {
        for text in [
            r#"{"name": "a", "name": "b"}"#,
            r#"{"name": "a", "inputSchema": {}, "inputSchema": {}}"#,
            r#"{"name": "a", "x": 1, "x": 2}"#,
            r#"{"name": "a", "inputSchema": {"type": "object", "type": "string"}}"#,
        ] {
            let error = serde_json::from_str::<Tool>(text).unwrap_err();
            assert!(error.to_string().contains("duplicate key"), "{text}: {error}");
        }
        let tool: Tool =
            serde_json::from_str(r#"{"name": "a", "inputSchema": null, "outputSchema": {"type": "object"}}"#).unwrap();
        assert_eq!(tool.input_schema, None);
        assert_eq!(tool.output_schema.unwrap().as_str(), r#"{"type":"object"}"#);
    }

    #[test]
    fn provenance_goes_under_a_namespaced_meta_key() {
        let mut enhanced = EnhancedTool::unchanged(Tool::new("gt_usr"));
        enhanced.tool.name = "get_user".into();
        enhanced.enhanced_by = "overrides".into();
        enhanced.confidence = 1.0;
        let consumer = serde_json::to_value(enhanced.to_consumer_tool()).unwrap();
        assert_eq!(consumer["_meta"][PROVENANCE_KEY]["originalName"], "gt_usr");
        assert_eq!(consumer["name"], "get_user");
    }

    #[test]
    fn a_spelled_out_name_carries_its_evidence() {
        let mut enhanced = EnhancedTool::unchanged(Tool::new("gt_acct"));
        enhanced.tool.name = "get_account".into();
        enhanced.changes.name = true;
        enhanced.expansions = vec![
            Expansion { word: "gt".into(), expansion: "get".into(), evidence: "the dictionary".into() },
            Expansion { word: "acct".into(), expansion: "account".into(), evidence: "parameter account_id".into() },
        ];
        let consumer = serde_json::to_value(enhanced.to_consumer_tool()).unwrap();
        assert_eq!(
            consumer["_meta"][PROVENANCE_KEY]["expansions"],
            json!([
                {"word": "gt", "as": "get", "from": "the dictionary"},
                {"word": "acct", "as": "account", "from": "parameter account_id"}
            ])
        );
    }

    #[test]
    fn a_meta_member_is_set_as_an_object_would_set_it() {
        let mut tool = Tool::new("t");
        tool.set_meta("k", json!(1));
        assert_eq!(tool.meta.as_ref().unwrap().as_str(), r#"{"k":1}"#);
        for (before, after) in [
            (json!({}), r#"{"k":[2]}"#),
            (json!({"a": {"k": 0}, "b": "k"}), r#"{"a":{"k":0},"b":"k","k":[2]}"#),
            (json!({"k": 0, "z": 1}), r#"{"k":[2],"z":1}"#),
            (json!({"a\"k": 0}), r#"{"a\"k":0,"k":[2]}"#),
        ] {
            tool.meta = Some(Json::from(before.clone()));
            tool.set_meta("k", json!([2]));
            assert_eq!(tool.meta.as_ref().unwrap().as_str(), after, "{before}");
        }
    }

    #[test]
    fn enhancing_again_keeps_the_source_name() {
        let mut tool = Tool::new("get_user");
        tool.meta = Some(Json::from(json!({PROVENANCE_KEY: {"originalName": "gt_usr"}})));
        let mut enhanced = EnhancedTool::unchanged(tool);
        enhanced.tool.name = "get_user_profile".into();
        assert_eq!(enhanced.provenance()["originalName"], "gt_usr");
    }

    #[test]
    fn arguments_map_back_through_aliases() {
        let mut enhanced = EnhancedTool::unchanged(Tool::new("t"));
        enhanced.argument_aliases.insert("user_id".into(), "uid".into());
        let args = json!({"user_id": 7, "other": 1}).as_object().unwrap().clone();
        let back = enhanced.original_arguments(args);
        assert_eq!(Value::Object(back), json!({"uid": 7, "other": 1}));
    }
}
