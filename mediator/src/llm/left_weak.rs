//! What the model left weak: the tools still weak after a run of the chain, and why no model
//! made them better (`enhance --report`).

use std::fmt;

use super::LlmTransformer;
use crate::chain::{ChainEvent, Enhancement, Mediator};
use crate::weakness::{Weakness, weaknesses};

/// A tool whose definition is still weak after the chain, and why nothing made it better.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftWeak {
    /// Its name as the source gives it.
    pub tool: String,
    pub weaknesses: Vec<Weakness>,
    pub why: Why,
}

/// Why a weak tool was left weak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// No language model in the chain.
    NoModel,
    /// The model was asked and gave no answer for it.
    ModelDeclined,
    /// The request about it failed (the server was unreachable or answered an error, or the
    /// answer was cut off or malformed): the model never said.
    RequestFailed,
    /// The model did not answer before its deadline.
    ModelLate,
    /// The model's answer was refused (an invalid name or schema, a duplicate answer).
    AnswerRefused,
    /// The model's answer was taken but still leaves it weak.
    AnswerStillWeak,
}

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Why::NoModel => "no language model is configured",
            Why::ModelDeclined => "the model declined it",
            Why::RequestFailed => "the request to the model failed",
            Why::ModelLate => "the model did not answer in time",
            Why::AnswerRefused => "the model's answer was refused",
            Why::AnswerStillWeak => "the model's answer still leaves it weak",
        })
    }
}

/// The weak tools `mediator` left weak in `enhancement`, and why; `llm` (the chain's language
/// model) tells a request that failed from a model that declined.
pub fn left_weak(mediator: &Mediator, enhancement: &Enhancement, llm: Option<&LlmTransformer>) -> Vec<LeftWeak> {
    let is_model = |name: &str| name == LlmTransformer::NAME || name.ends_with("-llm");
    let model = mediator.transformers().any(|transformer| is_model(transformer.name()));
    let failed = enhancement
        .events
        .iter()
        .any(|event| matches!(event, ChainEvent::TransformerFailed { transformer, .. } if is_model(transformer)));
    enhancement
        .tools
        .iter()
        .filter_map(|tool| {
            let weaknesses = weaknesses(&tool.tool);
            if weaknesses.is_empty() {
                return None;
            }
            let refused = enhancement.events.iter().any(|event| match event {
                ChainEvent::AnswerRefused { transformer, tool: name, .. }
                | ChainEvent::RenameRefused { transformer, tool: name, .. } => {
                    is_model(transformer) && *name == tool.original_name
                }
                _ => false,
            });
            let why = match (model, refused, is_model(&tool.enhanced_by)) {
                (false, _, _) => Why::NoModel,
                (true, true, _) => Why::AnswerRefused,
                (true, false, true) => Why::AnswerStillWeak,
                (true, false, false) if failed => Why::RequestFailed,
                (true, false, false) => {
                    llm.and_then(|llm| llm.unanswered(&tool.original_name)).unwrap_or(Why::ModelDeclined)
                }
            };
            Some(LeftWeak { tool: tool.original_name.clone(), weaknesses, why })
        })
        .collect()
}
