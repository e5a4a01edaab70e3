//! tool-mediator enriches LLM tool definitions between the place they come from (an MCP server,
//! a web page registering tools through `navigator.modelContext`, a manifest file) and the model
//! that uses them, without the source changing anything.
//!
//! A [`Mediator`] runs raw [`Tool`]s through a priority-ordered chain of [`ToolTransformer`]s:
//! curated [`OverrideTransformer`] files first, then the offline [`RuleTransformer`] that
//! expands abbreviations, writes missing descriptions and repairs schemas. The chain decides per
//! tool and enforces the invariants (no tool lost or invented, unique valid names, valid object
//! schemas) whatever a transformer answers. [`filter`] and [`categorize`] choose and group what
//! comes out. [`llm::LlmTransformer`] asks a language model, behind
//! [`cache::CachedTransformer`] on a sled store; [`session::Session`] is the hook a transport
//! links: what one client sees now (category tools, groups, state) and where its calls go.
//!
//! ```
//! use serde_json::json;
//! use tool_mediator::{Mediator, RuleTransformer, Tool, ToolContext, SourceType};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let mediator = Mediator::builder().transformer(RuleTransformer::new()).build();
//! let raw = vec![Tool::new("gt_usr").with_description("gets user")];
//! let tools = mediator.enhance(raw, &ToolContext::new("example.com", SourceType::Web)).await;
//!
//! assert_eq!(tools[0].name(), "get_user");
//! assert_eq!(tools[0].original_name, "gt_usr");
//! assert_eq!(tools[0].tool.input_schema_value(), Some(json!({"type": "object", "properties": {}})));
//! # });
//! ```

/// The README's Rust examples, compiled and run as doctests.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod cache;
mod chain;
#[cfg(feature = "proxy")]
pub mod clients;
mod config;
mod http;
pub mod json;
pub mod lint;
pub mod llm;
pub mod manifest;
mod naming;
pub mod overrides;
pub mod pin;
#[cfg(feature = "proxy")]
pub mod proxy;
mod rules;
pub mod schema;
pub mod search;
mod selection;
pub mod session;
mod tool;
mod transformer;
pub mod weakness;

pub use chain::{ChainEvent, Enhancement, Mediator, MediatorBuilder};
pub use config::{BuildError, ChainOptions, ConfigError, MediatorConfig, Transformers, dictionary, is_variable_name};
pub use json::Json;
pub use naming::NameRules;
pub use overrides::{
    ArgumentOverride, LintFinding, OverrideError, OverrideFile, OverrideSet, OverrideTransformer, ToolOverride,
};
pub use rules::{Dictionary, DictionaryError, NameReading, RuleTransformer};
pub use selection::{FilterCriteria, UNCATEGORIZED, categorize, consumer_tools, filter};
pub use tool::{Changes, EnhancedTool, PROVENANCE_KEY, SourceType, Tool, ToolContext, UNENHANCED};
pub use transformer::{Answer, ToolPatch, ToolTransformer, TransformError};

/// An error and its causes as the CLI prints them, `outer: inner: innermost`: some errors
/// (reqwest's, io's inside ours) name only their outermost part in their own message.
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        message = format!("{message}: {inner}");
        cause = inner.source();
    }
    message
}

/// Locks a mutex whose holder may have panicked: what it guards here stays usable (a list, a
/// set, counters), and one failed task must not take the rest down with it.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
