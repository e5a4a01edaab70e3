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

pub mod admission;
pub mod cache;
mod chain;
mod config;
pub mod http;
pub mod kept;
pub mod lint;
pub mod llm;
pub mod manifest;
pub mod overrides;
pub mod pin;
pub mod read;
mod rules;
pub mod screen;
pub mod search;
pub mod session;
pub mod weakness;

pub use chain::{ChainChanges, ChainEvent, ChainVersion, Enhancement, Mediator, MediatorBuilder};
pub use config::{BuildError, ChainOptions, ConfigError, MediatorConfig, Transformers, dictionary, is_variable_name};
pub use overrides::{
    ArgumentOverride, LintFinding, LiveOverrides, OverrideError, OverrideFile, OverrideSet, OverrideTransformer,
    ToolOverride,
};
pub use rules::{Dictionary, DictionaryError, NameReading, RuleTransformer};
// The tool model, from the core: its public paths here stay as they were.
pub use tool_mediator_core::{
    Answer, Changes, EnhancedTool, Expansion, FilterCriteria, Json, NameRules, PROVENANCE_KEY, Place, Refused,
    SourceType, Tool, ToolContext, ToolPatch, ToolTransformer, TransformError, UNCATEGORIZED, UNENHANCED, about_file,
    categorize, consumer_tools, counted, error, filter, json, schema, sync, with_causes,
};
