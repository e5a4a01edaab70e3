//! Property tests: whatever the manifest and whatever the transformers answer, the chain never
//! loses, invents or duplicates a tool, never emits an invalid name or schema, never panics.

use std::collections::HashSet;
use std::sync::Mutex;

use async_trait::async_trait;
use proptest::prelude::*;
use serde_json::{Value, json};
use tool_mediator::{
    Answer, Json, Mediator, NameRules, OverrideFile, OverrideSet, OverrideTransformer, RuleTransformer, SourceType,
    Tool, ToolContext, ToolPatch, ToolTransformer, TransformError, schema,
};

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("gt_usr".to_owned()),
        Just("del".to_owned()),
        Just("get_user".to_owned()),
        Just("math.sum".to_owned()),
        Just(String::new()),
        "[a-zA-Z_.\\-/ ]{1,12}",
        "\\PC{0,20}",
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(Value::from),
        prop_oneof![
            Just("dict"),
            Just("float"),
            Just("object"),
            Just("string"),
            Just("tuple"),
            Just("any"),
            Just("HashMap")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type"),
                    Just("properties"),
                    Just("items"),
                    Just("required"),
                    Just("a"),
                    Just("$defs"),
                    Just("anyOf"),
                    Just("additionalProperties")
                ],
                inner,
                0..4
            )
            .prop_map(|map| Value::Object(map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

fn tool() -> impl Strategy<Value = Tool> {
    (name(), prop::option::of("\\PC{0,30}"), prop::option::of(json_value())).prop_map(|(name, description, schema)| {
        let mut tool = Tool::new(name);
        tool.description = description;
        tool.input_schema = schema.map(Json::from);
        tool
    })
}

/// One answer a misbehaving transformer might give.
#[derive(Debug, Clone)]
struct Scripted {
    index: usize,
    name: Option<String>,
    schema: Option<Value>,
    confidence: f64,
}

fn scripted() -> impl Strategy<Value = Scripted> {
    (
        0usize..12,
        prop::option::of(name()),
        prop::option::of(json_value()),
        prop_oneof![0.0..=1.0f64, Just(f64::NAN), Just(-3.0), Just(7.0)],
    )
        .prop_map(|(index, name, schema, confidence)| Scripted { index, name, schema, confidence })
}

struct Random {
    priority: i32,
    answers: Mutex<Vec<Scripted>>,
    fail: bool,
}

#[async_trait]
impl ToolTransformer for Random {
    fn name(&self) -> &str {
        "random"
    }
    fn priority(&self) -> i32 {
        self.priority
    }
    async fn transform(&self, tools: &[Tool], _: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        if self.fail {
            return Err("random failure".into());
        }
        let answers = self.answers.lock().unwrap().clone();
        Ok(answers
            .into_iter()
            .map(|scripted| {
                // A schema of `null` stands for "remove the schema".
                let patch = ToolPatch {
                    name: scripted.name,
                    input_schema: scripted.schema.map(|schema| (!schema.is_null()).then(|| Json::from(schema))),
                    description: tools.is_empty().then(|| Some("for a tool that is not there".into())),
                    ..ToolPatch::default()
                };
                Answer::new(scripted.index, patch, scripted.confidence)
            })
            .collect())
    }
}

fn overrides() -> OverrideSet {
    let file = OverrideFile::parse(
        r#"{"source": "prop", "tools": {"gt_usr": {"name": "get_user"}, "del": {"name": "get_user"}, "math.sum": {"hidden": true}}}"#,
        std::path::Path::new("prop.json"),
    )
    .unwrap();
    let mut set = OverrideSet::new();
    set.add(file, "prop.json".into());
    set
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn chain_keeps_every_invariant(
        tools in prop::collection::vec(tool(), 0..12),
        answers in prop::collection::vec(scripted(), 0..16),
        priority in -10i32..300,
        fail in any::<bool>(),
        strict in any::<bool>(),
    ) {
        let rules = if strict { NameRules::STRICT } else { NameRules::MCP };
        let mediator = Mediator::builder()
            .name_rules(rules)
            .transformer(Random { priority, answers: Mutex::new(answers), fail })
            .transformer(OverrideTransformer::new(overrides()))
            .transformer(RuleTransformer::new())
            .build();
        let context = ToolContext::new("prop", SourceType::Manual);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let out = runtime.block_on(mediator.enhance_with_report(tools.clone(), &context)).tools;

        prop_assert_eq!(out.len(), tools.len());
        let mut seen = HashSet::new();
        for (input, output) in tools.iter().zip(&out) {
            prop_assert_eq!(&output.original_name, &input.name);
            prop_assert!(rules.is_valid(output.name()), "invalid name {:?}", output.name());
            prop_assert!(seen.insert(output.name().to_owned()), "duplicate name {:?}", output.name());
            let schema = output.tool.input_schema_value();
            prop_assert!(schema.as_ref().is_some_and(schema::is_valid), "invalid schema {:?}", schema);
            prop_assert!((0.0..=1.0).contains(&output.confidence));
            prop_assert_eq!(&output.tool.meta, &input.meta);
            prop_assert_eq!(&output.tool.extra, &input.extra);
            // The chain's own record of what changed agrees with a comparison to the source.
            let changes = output.changes;
            prop_assert_eq!(changes.name, output.tool.name != input.name);
            prop_assert_eq!(changes.title, output.tool.title != input.title);
            prop_assert_eq!(changes.description, output.tool.description != input.description);
            prop_assert_eq!(changes.input_schema, output.tool.input_schema != input.input_schema);
            prop_assert_eq!(changes.annotations, output.tool.annotations != input.annotations);
        }
    }

    #[test]
    fn schema_repair_always_ends_valid_or_reports_why(value in json_value()) {
        let mut repaired = value.clone();
        schema::repair(&mut repaired);
        // Repair alone may leave a schema invalid (a bad `enum`, say); the chain then falls back
        // to the empty object schema. It must never panic, and an object root is guaranteed.
        prop_assert_eq!(repaired.get("type"), Some(&json!("object")));
    }

    #[test]
    fn needs_repair_agrees_with_repair(value in json_value()) {
        let mut repaired = value.clone();
        let repairs = schema::repair(&mut repaired);
        prop_assert_eq!(schema::needs_repair(&Json::from_value(&value)), !repairs.is_empty(), "{:?}", repairs);
        prop_assert!(!schema::needs_repair(&Json::from_value(&repaired)), "repair is idempotent: {}", repaired);
    }
}
