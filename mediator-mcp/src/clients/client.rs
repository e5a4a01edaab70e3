//! The MCP clients whose configuration files tool-mediator knows, and the scopes a client keeps
//! its servers in.

use std::fmt;

/// An MCP client whose configuration file tool-mediator knows where to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
}

/// Whose configuration: the project's (a file in the working directory) or the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Project,
    User,
}

impl Client {
    pub const ALL: [Client; 5] =
        [Client::ClaudeDesktop, Client::ClaudeCode, Client::Cursor, Client::Vscode, Client::Windsurf];

    /// The client's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
        }
    }

    /// The scope used when none is asked for: the project's file for the clients that have one.
    pub fn default_scope(self) -> Scope {
        match self {
            Client::ClaudeCode | Client::Cursor | Client::Vscode => Scope::Project,
            Client::ClaudeDesktop | Client::Windsurf => Scope::User,
        }
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::Windsurf => "Windsurf",
        })
    }
}
