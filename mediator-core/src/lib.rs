//! The tool model of tool-mediator: what a transformer author or a transport needs, and
//! nothing else. No runtime, no I/O, no network.
//!
//! - [`Tool`], as MCP defines it (unknown fields kept), and [`EnhancedTool`], a tool with what
//!   was done to it; [`ToolContext`], where a list of tools comes from.
//! - [`Json`] and [`json`]: JSON kept exactly as written (numbers, key order, bytes).
//! - [`schema`]: input schemas, checked and repaired.
//! - [`NameRules`]: what a tool name may be, for MCP and for strict clients.
//! - [`ToolTransformer`]: the trait every stage of the chain implements, and what it answers.
//! - [`filter`] and [`categorize`]: choosing and grouping tools.
//! - [`Place`]: where in a file something is, with one rule for lines and columns.
//!
//! The mediator (`tool-mediator`) re-exports all of it.

mod counted;
pub mod error;
pub mod json;
mod naming;
mod place;
pub mod schema;
mod selection;
pub mod sync;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tool;
mod transformer;

pub use counted::counted;
pub use error::with_causes;
pub use json::Json;
pub use naming::{NameRules, SharedNames};
pub use place::{Place, about_file, offset_of_json_error};
pub use selection::{FilterCriteria, categorize, consumer_tools, filter};
pub use tool::{
    Changes, EnhancedTool, Expansion, PROVENANCE_KEY, Refused, SourceType, Tool, ToolContext, UNCATEGORIZED, UNENHANCED,
};
pub use transformer::{Answer, ToolPatch, ToolTransformer, TransformError};
