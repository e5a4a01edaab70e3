//! `tool-mediator wrap` and `tool-mediator unwrap`: find the client's configuration, read it,
//! let the library rewrite it (`tool_mediator::clients`), then show the diff or write the files.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use tool_mediator::clients::{self, Client, Rewritten, Scope, WrapOptions};

use crate::cli::{ClientArg, ClientFileArgs, ScopeArg, UnwrapArgs, WrapArgs};
use crate::output::{self, FileIdentity, Output};

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
        match fs::read_to_string(&record) {
            Ok(text) => {
                records.insert(record, text);
            }
            // The library says what it means for the gateway entry.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(error).with_context(|| format!("cannot read {}", record.display())),
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
                let client = client_of(client);
                let path = client.locate(args.scope.map(scope_of), &project)?;
                if !path.exists() {
                    anyhow::bail!("{}: no {client} configuration here (has {client} been set up?)", path.display());
                }
                path
            }
            (None, None) => anyhow::bail!("name the configuration: --client NAME or --config FILE"),
        };
        let metadata = fs::metadata(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let text = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let absolute = std::path::absolute(&path).with_context(|| format!("cannot resolve {}", path.display()))?;
        Ok(Config { identity: FileIdentity::of(&metadata), path, absolute, text, metadata })
    }

    /// Shows what changed, or writes it: the backup first, then the gateway's files, then the
    /// configuration; then removes the files no longer of use.
    fn finish(&self, rewritten: &Rewritten, dry_run: bool, done: &str) -> Result<ExitCode> {
        for note in &rewritten.notes {
            eprintln!("{}: {note}", self.path.display());
        }
        if rewritten.text == self.text && rewritten.write.is_empty() && rewritten.remove.is_empty() {
            eprintln!("{}: nothing to change", self.path.display());
            return Ok(ExitCode::SUCCESS);
        }
        if dry_run {
            let mut diffs = String::new();
            diffs.extend(output::diff(&self.text, &rewritten.text, &self.path.display().to_string()));
            for (path, text) in &rewritten.write {
                let old = fs::read_to_string(path).unwrap_or_default();
                diffs.extend(output::diff(&old, text, &self.beside(path).display().to_string()));
            }
            for path in &rewritten.remove {
                eprintln!("would remove {}", path.display());
            }
            output::print(&diffs)?;
            return Ok(ExitCode::SUCCESS);
        }
        let backup = backup_of(&self.path);
        let mut created = Vec::new();
        let written = self.write(rewritten, &backup, &mut created);
        if written.is_err() {
            for path in &created {
                let _ = fs::remove_file(path);
            }
        }
        written?;
        for path in &rewritten.remove {
            match fs::remove_file(path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(error).with_context(|| format!("cannot remove {}", path.display()));
                }
                _ => {}
            }
        }
        eprintln!(
            "{}: {done} {} (the file as it was: {})",
            self.path.display(),
            rewritten.changed.join(", "),
            backup.display()
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

    fn write(&self, rewritten: &Rewritten, backup: &Path, created: &mut Vec<PathBuf>) -> Result<()> {
        // New files get the configuration's permissions: they hold what it held (keys in `env`).
        for path in std::iter::once(backup).chain(rewritten.write.iter().map(|(path, _)| path.as_path())) {
            if create_like(path, &self.metadata)? {
                created.push(path.to_owned());
            }
        }
        let mut files = vec![Output { path: backup, text: &self.text, read_as: None }];
        files.extend(rewritten.write.iter().map(|(path, text)| Output { path, text, read_as: None }));
        files.push(Output { path: &self.path, text: &rewritten.text, read_as: Some(self.identity) });
        output::write_files(&files)
    }
}

/// `<file>.bak`, beside it.
fn backup_of(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|name| name.to_os_string()).unwrap_or_default();
    name.push(".bak");
    path.with_file_name(name)
}

/// Creates `path`, empty, with the permissions of `like`, unless it exists; whether it did.
fn create_like(path: &Path, like: &fs::Metadata) -> Result<bool> {
    let mut options = fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        options.mode(like.permissions().mode() & 0o666);
    }
    #[cfg(not(unix))]
    let _ = like;
    match options.open(path) {
        Ok(_) => Ok(true),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(error).with_context(|| format!("cannot create {}", path.display())),
    }
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
