//! The one trait every enhancer implements.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::json::Json;
use crate::tool::{Changes, Expansion, Tool, ToolContext};

/// What a transformer would change in a tool: only these fields can change. Everything else
/// (`outputSchema`, `_meta`, unknown fields) passes through the chain untouched.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolPatch {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<Option<String>>,
    #[serde(default, rename = "inputSchema", skip_serializing_if = "Option::is_none")]
    pub input_schema: Option<Option<Json>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Option<Json>>,
}

impl ToolPatch {
    /// The changes that turn `original` into `proposed`.
    pub fn between(original: &Tool, proposed: &Tool) -> ToolPatch {
        fn changed<T: PartialEq + Clone>(before: &T, after: &T) -> Option<T> {
            (before != after).then(|| after.clone())
        }
        ToolPatch {
            name: changed(&original.name, &proposed.name),
            title: changed(&original.title, &proposed.title),
            description: changed(&original.description, &proposed.description),
            input_schema: changed(&original.input_schema, &proposed.input_schema),
            annotations: changed(&original.annotations, &proposed.annotations),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == ToolPatch::default()
    }

    /// Applies the changes in place.
    /// Applies the changes; returns which fields now differ from what they were.
    pub fn apply(self, tool: &mut Tool) -> Changes {
        fn set<T: PartialEq>(field: &mut T, value: Option<T>) -> bool {
            match value {
                Some(value) if *field != value => {
                    *field = value;
                    true
                }
                _ => false,
            }
        }
        Changes {
            name: set(&mut tool.name, self.name),
            title: set(&mut tool.title, self.title),
            description: set(&mut tool.description, self.description),
            input_schema: set(&mut tool.input_schema, self.input_schema),
            annotations: set(&mut tool.annotations, self.annotations),
        }
    }

    /// The tool with the changes applied.
    pub fn applied_to(&self, tool: &Tool) -> Tool {
        let mut tool = tool.clone();
        self.clone().apply(&mut tool);
        tool
    }
}

/// A transformer's proposal for one tool of the batch it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The position of the tool in the batch the transformer received.
    pub index: usize,
    /// What to change; an empty patch leaves the definition as it came (an answer that only
    /// categorizes or hides the tool).
    pub patch: ToolPatch,
    pub category: Option<String>,
    /// How sure the transformer is, from 0 to 1.
    pub confidence: f64,
    /// Parameters the transformer renamed: exposed name -> the source's name.
    pub argument_aliases: BTreeMap<String, String>,
    /// Fields the transformer guessed rather than knew (`"description"`, `"inputSchema"`).
    pub inferred: Vec<String>,
    /// The tool should not be shown to the model.
    pub hidden: bool,
    /// The words of the name the transformer spelled out, each with its evidence.
    pub expansions: Vec<Expansion>,
    /// The model that wrote the answer, when a language model did (`qwen2.5-coder-1.5b`).
    pub model: Option<String>,
    /// What the transformer proposed and a gate of its own refused, each with the gate's
    /// reason: kept in the tool's provenance. An answer with only these is a refusal: the chain
    /// takes nothing from it.
    pub refused: Vec<String>,
}

impl Answer {
    pub fn new(index: usize, patch: ToolPatch, confidence: f64) -> Self {
        Answer {
            index,
            patch,
            category: None,
            confidence,
            argument_aliases: BTreeMap::new(),
            inferred: Vec::new(),
            hidden: false,
            expansions: Vec::new(),
            model: None,
            refused: Vec::new(),
        }
    }

    /// An answer that takes nothing, saying why the transformer's own proposal was refused.
    pub fn refusal(index: usize, reason: impl Into<String>) -> Self {
        let mut answer = Answer::new(index, ToolPatch::default(), 0.0);
        answer.refused.push(reason.into());
        answer
    }

    /// Whether it only says what was refused: nothing in it to take.
    pub fn is_refusal(&self) -> bool {
        !self.refused.is_empty()
            && self.patch.is_empty()
            && self.category.is_none()
            && !self.hidden
            && self.argument_aliases.is_empty()
    }

    /// An answer proposing `proposed` in place of `original`.
    pub fn proposing(index: usize, original: &Tool, proposed: &Tool, confidence: f64) -> Self {
        Answer::new(index, ToolPatch::between(original, proposed), confidence)
    }

    /// An answer that leaves the tool's definition as it came.
    pub fn unchanged(index: usize, confidence: f64) -> Self {
        Answer::new(index, ToolPatch::default(), confidence)
    }
}

/// A transformer that failed as a whole; the chain reports it and its tools fall through.
pub type TransformError = Box<dyn std::error::Error + Send + Sync>;

/// Something that can improve tool definitions: curated overrides, rules, a language model.
///
/// A transformer receives a batch and answers for all, some or none of its tools. A tool it
/// does not answer for goes on to the next transformer in the chain. The chain checks every
/// answer (see the mediator's chain, `tool_mediator::Mediator`), so a transformer cannot lose, invent or break a tool.
#[async_trait]
pub trait ToolTransformer: Send + Sync {
    /// A short stable name, shown in reports and provenance (`overrides`, `rules`).
    fn name(&self) -> &str;

    /// Higher runs first.
    fn priority(&self) -> i32;

    /// Everything that decides what this transformer answers: a cache keeps answers under it.
    /// A language model's includes its provider, model and prompt hash.
    fn identity(&self) -> String {
        format!("{}@{}", self.name(), env!("CARGO_PKG_VERSION"))
    }

    /// Answers for the tools of `tools` this transformer can improve.
    async fn transform(&self, tools: &[Tool], context: &ToolContext) -> Result<Vec<Answer>, TransformError>;

    /// Whether `answer`, said to be this transformer's for `tool` (read back from a cache, which
    /// others may write to), is one it could give; why not. A cached answer passes the gates a
    /// fresh one passes. Every answer by default.
    fn admits(&self, _tool: &Tool, _answer: &Answer) -> Result<(), String> {
        Ok(())
    }
}

/// A shared transformer is a transformer: a host can keep a handle (for usage figures, say)
/// on one it gives the chain.
#[async_trait]
impl<T: ToolTransformer + ?Sized> ToolTransformer for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn priority(&self) -> i32 {
        (**self).priority()
    }

    fn identity(&self) -> String {
        (**self).identity()
    }

    async fn transform(&self, tools: &[Tool], context: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        (**self).transform(tools, context).await
    }

    fn admits(&self, tool: &Tool, answer: &Answer) -> Result<(), String> {
        (**self).admits(tool, answer)
    }
}
