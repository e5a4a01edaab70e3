//! `tool-mediator wrap` and `tool-mediator unwrap`: find the client's configuration, read it,
//! let the library rewrite it (`tool_mediator_mcp::clients`), then show the diff or write the files.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Args, ValueEnum};
use tool_mediator::read::MAX_FILE_SIZE;
use tool_mediator_mcp::clients::{self, Client, Rewritten, Scope, WrapOptions};

use crate::output::{self, FileIdentity, Kind, Output};

#[derive(Debug, Args)]
pub struct WrapArgs {
    #[command(flatten)]
    pub file: ClientFileArgs,

    /// Move the servers into one gateway (`tool-mediator gateway --config <stem>.tool-mediator.json`, the file's name without `.json`)
    /// instead of a proxy each; HTTP servers move too.
    #[arg(long)]
    pub gateway: bool,

    /// The mediator as the client should start it: `tool-mediator`, found on the PATH the
    /// client starts servers with, or a full path (Claude Desktop on macOS starts them with a
    /// short PATH).
    #[arg(long, value_name = "PATH", default_value = "tool-mediator")]
    pub mediator: String,
}

#[derive(Debug, Args)]
pub struct UnwrapArgs {
    #[command(flatten)]
    pub file: ClientFileArgs,
}

/// Which client configuration `wrap` and `unwrap` change, and which of its servers.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("file").required(true).args(["client", "config"])))]
pub struct ClientFileArgs {
    /// The client whose configuration to change (its file in the working directory for the
    /// clients that have one per project: claude-code, cursor, vscode; see `--scope`).
    #[arg(long, value_enum)]
    pub client: Option<ClientArg>,

    /// With `--client`: the project's file or the user's (the project's by default where the
    /// client has one).
    #[arg(long, value_enum, conflicts_with = "config")]
    pub scope: Option<ScopeArg>,

    /// Any configuration file with `mcpServers` (or VS Code's `servers`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print a diff of what would change, and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// The servers to change, by name; every one when none is named.
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientArg {
    /// Claude Desktop: claude_desktop_config.json in ~/Library/Application Support/Claude
    /// (macOS), %APPDATA%\Claude (Windows) or ~/.config/Claude (Linux).
    ClaudeDesktop,
    /// Claude Code: .mcp.json in the project; ~/.claude.json with `--scope user`.
    ClaudeCode,
    /// Cursor: .cursor/mcp.json in the project; ~/.cursor/mcp.json with `--scope user`.
    Cursor,
    /// VS Code: .vscode/mcp.json in the workspace; the user profile's mcp.json with `--scope user`.
    Vscode,
    /// Windsurf: ~/.codeium/windsurf/mcp_config.json.
    Windsurf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    Project,
    User,
}

pub fn wrap(args: WrapArgs) -> Result<ExitCode> {
    let config = Config::read(&args.file)?;
    let servers_file = args.gateway.then(|| clients::gateway_file(&config.absolute));
    let options =
        WrapOptions { servers: &args.file.servers, mediator: &args.mediator, gateway: servers_file.as_deref() };
    let rewritten = clients::wrap(&config.text, &config.path, &options)?;
    config.finish(&rewritten, args.file.dry_run, "wrapped")
}

pub fn unwrap(args: UnwrapArgs) -> Result<ExitCode> {
    let config = Config::read(&args.file)?;
    let mut records = HashMap::new();
    for record in clients::gateway_records(&config.text, &config.path)? {
        // Read as wrap wrote them, never through a link; a missing one the library explains.
        if let Some(text) = output::read_side(&record, MAX_FILE_SIZE)? {
            records.insert(record, text);
        }
    }
    let rewritten = clients::unwrap(&config.text, &config.path, &args.file.servers, &records)?;
    config.finish(&rewritten, args.file.dry_run, "unwrapped")
}

/// The configuration file as it was read.
struct Config {
    path: PathBuf,
    /// The path from the root, for what the client will read from another directory.
    absolute: PathBuf,
    text: String,
    identity: FileIdentity,
    metadata: fs::Metadata,
}

impl Config {
    fn read(args: &ClientFileArgs) -> Result<Config> {
        let path = match (&args.config, args.client) {
            (Some(path), _) => path.clone(),
            (None, Some(client)) => {
                let project = std::env::current_dir().context("cannot tell the working directory")?;
                client_of(client).find(args.scope.map(scope_of), &project)?
            }
            (None, None) => anyhow::bail!("name the configuration: --client NAME or --config FILE"),
        };
        let metadata = fs::metadata(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let text = tool_mediator::read::read_text(&path, MAX_FILE_SIZE)?;
        let absolute = std::path::absolute(&path).with_context(|| format!("cannot resolve {}", path.display()))?;
        Ok(Config { identity: FileIdentity::of(&metadata), path, absolute, text, metadata })
    }

    /// Shows what changed, or writes it: the backup first, then the gateway's files, then the
    /// configuration; then removes the files no longer of use.
    fn finish(&self, rewritten: &Rewritten, dry_run: bool, done: &str) -> Result<ExitCode> {
        let shown = output::shown(&self.path);
        for note in &rewritten.notes {
            // A note quotes the configuration's server names.
            eprintln!("{shown}: {}", tool_mediator::screen::printable(note));
        }
        if rewritten.text == self.text && rewritten.write.is_empty() && rewritten.remove.is_empty() {
            eprintln!("{shown}: nothing to change");
            return Ok(ExitCode::SUCCESS);
        }
        let backup = backup_of(&self.path);
        if dry_run {
            // What a real run would refuse, a dry run refuses too.
            output::check_side(&backup)?;
            let mut diffs = String::new();
            diffs.extend(output::diff(&self.text, &rewritten.text, &self.path.display().to_string()));
            for (path, text) in &rewritten.write {
                let old = output::read_side(path, MAX_FILE_SIZE)?.unwrap_or_default();
                diffs.extend(output::diff(&old, text, &self.beside(path).display().to_string()));
            }
            for path in &rewritten.remove {
                eprintln!("would remove {}", output::shown(path));
            }
            output::print(&diffs)?;
            return Ok(ExitCode::SUCCESS);
        }
        self.write(rewritten, &backup)?;
        for path in &rewritten.remove {
            match fs::remove_file(path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(error).with_context(|| format!("cannot remove {}", path.display()));
                }
                _ => {}
            }
        }
        eprintln!(
            "{shown}: {done} {} (the file as it was: {})",
            tool_mediator::screen::printable(&rewritten.changed.join(", ")),
            output::shown(&backup)
        );
        Ok(ExitCode::SUCCESS)
    }

    /// A file written beside the configuration, named as the configuration was.
    fn beside(&self, path: &Path) -> PathBuf {
        match path.file_name() {
            Some(name) if path.parent() == self.absolute.parent() => self.path.with_file_name(name),
            _ => path.to_owned(),
        }
    }

    /// Writes the backup, the gateway's files and the configuration, all or none.
    fn write(&self, rewritten: &Rewritten, backup: &Path) -> Result<()> {
        // The side files get the configuration's permissions: they hold what it held (keys in
        // `env`).
        let side = Kind::Side { mode: mode_of(&self.metadata) };
        let mut files = vec![Output { path: backup, text: &self.text, read_as: None, kind: side }];
        files.extend(rewritten.write.iter().map(|(path, text)| Output { path, text, read_as: None, kind: side }));
        files.push(Output { path: &self.path, text: &rewritten.text, read_as: Some(self.identity), kind: Kind::Named });
        output::write_files(&files)
    }
}

/// `<file>.bak`, beside it.
fn backup_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|name| name.to_os_string()).unwrap_or_default();
    name.push(".bak");
    path.with_file_name(name)
}

/// The read and write permissions of `file`, for the files written beside it.
#[cfg(unix)]
fn mode_of(file: &fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    file.permissions().mode() & 0o666
}

#[cfg(not(unix))]
fn mode_of(_: &fs::Metadata) -> u32 {
    0o644
}

fn client_of(client: ClientArg) -> Client {
    match client {
        ClientArg::ClaudeDesktop => Client::ClaudeDesktop,
        ClientArg::ClaudeCode => Client::ClaudeCode,
        ClientArg::Cursor => Client::Cursor,
        ClientArg::Vscode => Client::Vscode,
        ClientArg::Windsurf => Client::Windsurf,
    }
}

fn scope_of(scope: ScopeArg) -> Scope {
    match scope {
        ScopeArg::Project => Scope::Project,
        ScopeArg::User => Scope::User,
    }
}
