//! What goes wrong finding, reading or rewriting a client's configuration: one error, which
//! names the file and the place in it.

use std::path::PathBuf;

use tool_mediator_core::Place;

use super::client::{Client, Scope};

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
    /// The client's file is not where it was looked for; `other` is its file in the other
    /// scope, and whether that one is there.
    #[error("{}: no {client} configuration {}{}", path.display(), in_scope(*scope), instead(*client, *scope, other.as_ref()))]
    Missing { client: Client, scope: Scope, path: PathBuf, other: Option<(PathBuf, bool)> },
}

fn in_scope(scope: Scope) -> &'static str {
    match scope {
        Scope::Project => "in this project",
        Scope::User => "here",
    }
}

/// What to try when the file is not in `scope`: the other scope's file, where the client has
/// one.
fn instead(client: Client, scope: Scope, other: Option<&(PathBuf, bool)>) -> String {
    let (flag, whose) = match scope {
        Scope::Project => ("--scope user", "the user's"),
        Scope::User => ("--scope project", "the project's"),
    };
    match other {
        Some((path, true)) => format!("; {whose} is {}: add {flag} to change it", path.display()),
        Some((path, false)) if scope == Scope::Project => format!(
            " (run it in the project's directory), nor {whose} ({}, with {flag}); has {client} been set up?",
            path.display()
        ),
        _ => format!(" (has {client} been set up?)"),
    }
}
