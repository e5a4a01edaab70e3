//! Where each MCP client keeps its configuration file: per client, per scope (the project's or
//! the user's), from the home, configuration and project directories.

use std::path::{Path, PathBuf};

use super::client::{Client, Scope};
use super::error::ClientsError;

/// Where configuration files are looked for.
#[derive(Debug, Clone, Copy)]
pub struct Locations<'a> {
    /// The user's home directory.
    pub home: &'a Path,
    /// The platform's configuration directory: `~/.config` (or `$XDG_CONFIG_HOME`) on Linux,
    /// `~/Library/Application Support` on macOS, `%APPDATA%` (`AppData\Roaming`) on Windows.
    pub config_dir: &'a Path,
    /// The project: the working directory.
    pub project: &'a Path,
}

impl Client {
    /// The client's configuration file in `scope`, as its documentation places it (`<config>`
    /// is [`Locations::config_dir`], so `%APPDATA%\Claude\claude_desktop_config.json` on
    /// Windows); joined a name at a time, so the path has the platform's separators:
    ///
    /// | client | project | user |
    /// |---|---|---|
    /// | Claude Desktop | - | `<config>/Claude/claude_desktop_config.json` |
    /// | Claude Code | `.mcp.json` | `~/.claude.json` (its top-level `mcpServers`) |
    /// | Cursor | `.cursor/mcp.json` | `~/.cursor/mcp.json` |
    /// | VS Code | `.vscode/mcp.json` | `<config>/Code/User/mcp.json` (the default profile) |
    /// | Windsurf | - | `~/.codeium/windsurf/mcp_config.json` |
    pub fn config_file(self, scope: Scope, at: &Locations<'_>) -> Result<PathBuf, ClientsError> {
        let path = match (self, scope) {
            (Client::ClaudeDesktop, Scope::User) => at.config_dir.join("Claude").join("claude_desktop_config.json"),
            (Client::ClaudeCode, Scope::Project) => at.project.join(".mcp.json"),
            (Client::ClaudeCode, Scope::User) => at.home.join(".claude.json"),
            (Client::Cursor, Scope::Project) => at.project.join(".cursor").join("mcp.json"),
            (Client::Cursor, Scope::User) => at.home.join(".cursor").join("mcp.json"),
            (Client::Vscode, Scope::Project) => at.project.join(".vscode").join("mcp.json"),
            (Client::Vscode, Scope::User) => at.config_dir.join("Code").join("User").join("mcp.json"),
            (Client::Windsurf, Scope::User) => at.home.join(".codeium").join("windsurf").join("mcp_config.json"),
            (Client::ClaudeDesktop | Client::Windsurf, Scope::Project) => {
                return Err(ClientsError::NoProjectScope { client: self });
            }
        };
        Ok(path)
    }

    /// The configuration file in `scope` (the client's default when `None`), from the user's
    /// home and configuration directories and the project directory given.
    pub fn locate(self, scope: Option<Scope>, project: &Path) -> Result<PathBuf, ClientsError> {
        let home = dirs::home_dir().ok_or(ClientsError::NoHome)?;
        let config_dir = dirs::config_dir().ok_or(ClientsError::NoHome)?;
        self.config_file(
            scope.unwrap_or(self.default_scope()),
            &Locations { home: &home, config_dir: &config_dir, project },
        )
    }

    /// [`Client::locate`], and the file must be there: when it is not, the error names the
    /// client's file in the other scope, and says whether that one is there (run outside a
    /// project, the user's file is usually the one meant).
    pub fn find(self, scope: Option<Scope>, project: &Path) -> Result<PathBuf, ClientsError> {
        let home = dirs::home_dir().ok_or(ClientsError::NoHome)?;
        let config_dir = dirs::config_dir().ok_or(ClientsError::NoHome)?;
        let at = Locations { home: &home, config_dir: &config_dir, project };
        self.existing(scope.unwrap_or(self.default_scope()), &at, |path| path.exists())
    }

    /// The file in `scope` if `exists` says it is there; else why not.
    fn existing(
        self,
        scope: Scope,
        at: &Locations<'_>,
        exists: impl Fn(&Path) -> bool,
    ) -> Result<PathBuf, ClientsError> {
        let path = self.config_file(scope, at)?;
        if exists(&path) {
            return Ok(path);
        }
        let other_scope = match scope {
            Scope::Project => Scope::User,
            Scope::User => Scope::Project,
        };
        let other = self.config_file(other_scope, at).ok().map(|other| {
            let there = exists(&other);
            (other, there)
        });
        Err(ClientsError::Missing { client: self, scope, path, other })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_client_keeps_its_file_where_its_documentation_says() {
        let at = Locations { home: Path::new("/h"), config_dir: Path::new("/h/.config"), project: Path::new("/p") };
        let file = |client: Client, scope| client.config_file(scope, &at).map(|path| path.display().to_string());
        assert_eq!(file(Client::ClaudeDesktop, Scope::User).unwrap(), "/h/.config/Claude/claude_desktop_config.json");
        assert_eq!(file(Client::ClaudeCode, Scope::Project).unwrap(), "/p/.mcp.json");
        assert_eq!(file(Client::ClaudeCode, Scope::User).unwrap(), "/h/.claude.json");
        assert_eq!(file(Client::Cursor, Scope::Project).unwrap(), "/p/.cursor/mcp.json");
        assert_eq!(file(Client::Cursor, Scope::User).unwrap(), "/h/.cursor/mcp.json");
        assert_eq!(file(Client::Vscode, Scope::Project).unwrap(), "/p/.vscode/mcp.json");
        assert_eq!(file(Client::Vscode, Scope::User).unwrap(), "/h/.config/Code/User/mcp.json");
        assert_eq!(file(Client::Windsurf, Scope::User).unwrap(), "/h/.codeium/windsurf/mcp_config.json");
        assert!(file(Client::Windsurf, Scope::Project).is_err());
    }

    #[test]
    fn a_file_not_there_says_where_the_other_scope_s_is_and_how_to_ask_for_it() {
        let at = Locations { home: Path::new("/h"), config_dir: Path::new("/h/.config"), project: Path::new("/p") };
        let missing = |client: Client, scope, there: &[&str]| {
            client.existing(scope, &at, |path| there.contains(&path.to_str().unwrap())).unwrap_err().to_string()
        };
        assert_eq!(
            missing(Client::Cursor, Scope::Project, &["/h/.cursor/mcp.json"]),
            "/p/.cursor/mcp.json: no Cursor configuration in this project; the user's is /h/.cursor/mcp.json: add \
             --scope user to change it"
        );
        assert_eq!(
            missing(Client::ClaudeCode, Scope::Project, &[]),
            "/p/.mcp.json: no Claude Code configuration in this project (run it in the project's directory), nor \
             the user's (/h/.claude.json, with --scope user); has Claude Code been set up?"
        );
        assert_eq!(
            missing(Client::Vscode, Scope::User, &["/p/.vscode/mcp.json"]),
            "/h/.config/Code/User/mcp.json: no VS Code configuration here; the project's is /p/.vscode/mcp.json: \
             add --scope project to change it"
        );
        assert_eq!(
            missing(Client::Windsurf, Scope::User, &[]),
            "/h/.codeium/windsurf/mcp_config.json: no Windsurf configuration here (has Windsurf been set up?)"
        );
        assert_eq!(Client::Cursor.existing(Scope::Project, &at, |_| true).unwrap(), Path::new("/p/.cursor/mcp.json"));
    }
}
