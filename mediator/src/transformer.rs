//! The one trait every enhancer implements.

use std::collections::BTreeMap;

use async_trait::async_trait;

use crate::tool::{Tool, ToolContext};

/// A transformer's proposal for one tool of the batch it was given.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The position of the tool in the batch the transformer received.
    pub index: usize,
    /// The whole tool as the transformer would have it; `None` leaves it as it came (an answer
    /// that only categorizes or hides it).
    pub tool: Option<Tool>,
    pub category: Option<String>,
    /// How sure the transformer is, from 0 to 1.
    pub confidence: f64,
    /// Parameters the transformer renamed: exposed name -> the source's name.
    pub argument_aliases: BTreeMap<String, String>,
    /// Fields the transformer guessed rather than knew (`"description"`, `"inputSchema"`).
    pub inferred: Vec<String>,
    /// The tool should not be shown to the model.
    pub hidden: bool,
}

impl Answer {
    pub fn new(index: usize, tool: Tool, confidence: f64) -> Self {
        Answer::about(index, Some(tool), confidence)
    }

    /// An answer that leaves the tool's definition as it came.
    pub fn unchanged(index: usize, confidence: f64) -> Self {
        Answer::about(index, None, confidence)
    }

    fn about(index: usize, tool: Option<Tool>, confidence: f64) -> Self {
        Answer {
            index,
            tool,
            category: None,
            confidence,
            argument_aliases: BTreeMap::new(),
            inferred: Vec::new(),
            hidden: false,
        }
    }
}

/// A transformer that failed as a whole; the chain reports it and its tools fall through.
pub type TransformError = Box<dyn std::error::Error + Send + Sync>;

/// Something that can improve tool definitions: curated overrides, rules, a language model.
///
/// A transformer receives a batch and answers for all, some or none of its tools. A tool it
/// does not answer for goes on to the next transformer in the chain. The chain checks every
/// answer (see [`crate::Mediator`]), so a transformer cannot lose, invent or break a tool.
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
}
