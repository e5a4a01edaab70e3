//! What goes wrong finding, reading or rewriting a client's configuration: one error, which
//! names the file and the place in it.

use std::path::PathBuf;

use tool_mediator_core::Place;

use super::location::Client;

/// Why a configuration cannot be wrapped or unwrapped; nothing is changed then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientsError {
    /// The file, the place in it (a line and column, or a JSON pointer), what is wrong.
    #[error("{}{}: {message}", path.display(), place.as_ref().map(ToString::to_string).unwrap_or_default())]
    File { path: PathBuf, place: Option<Place>, message: String },
    #[error("{client} keeps its servers in the user's configuration only (no project scope)")]
    NoProjectScope { client: Client },
    #[error("cannot tell where the home or configuration directory is")]
    NoHome,
}
