//! `tool-mediator overrides lint|new`: for the people who curate override files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Subcommand;
use tool_mediator::OverrideFile;
use tool_mediator::overrides;

use crate::config;
use crate::flags::ClientProfileArg;
use crate::manifest::{self, Origin};
use crate::output;

#[derive(Debug, Subcommand)]
pub enum OverridesCommand {
    /// Check every override file in a directory: schema, names, rename collisions, schemas.
    Lint {
        /// The directory of override files (the built-in ones are in the checkout's
        /// `mediator/overrides`).
        dir: PathBuf,

        /// The tool names the consuming client accepts.
        #[arg(long, value_enum, default_value_t = ClientProfileArg::Mcp)]
        client_profile: ClientProfileArg,
    },
    /// Scaffold an override file from a manifest, pre-filled with what the rules would do.
    New {
        /// The source the file is for (a domain, an MCP server name).
        #[arg(long)]
        source: String,

        /// The manifest to read the tools from.
        manifest: PathBuf,

        /// Write here instead of standard output; never overwrites an existing file.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

pub fn run(command: OverridesCommand) -> Result<ExitCode> {
    match command {
        OverridesCommand::Lint { dir, client_profile } => lint(&dir, client_profile),
        OverridesCommand::New { source, manifest, output } => scaffold(source, manifest, output),
    }
}

fn lint(dir: &Path, profile: ClientProfileArg) -> Result<ExitCode> {
    if !dir.is_dir() {
        bail!("{} is not a directory of override files", dir.display());
    }
    let files = overrides::override_files(dir)?.len();
    let findings = overrides::lint(dir, config::name_rules(profile))?;
    let mut text = String::new();
    for finding in &findings {
        text.push_str(&finding.to_string());
        text.push('\n');
    }
    output::print(&text)?;
    eprintln!(
        "{} checked, {}",
        tool_mediator::counted(files, "override file", "override files"),
        tool_mediator::counted(findings.len(), "problem", "problems")
    );
    Ok(if findings.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// An override file for `source` with an entry per tool, pre-filled with what the rules would do
/// (see [`overrides::scaffold`]).
fn scaffold(source: String, manifest_path: PathBuf, output: Option<PathBuf>) -> Result<ExitCode> {
    let (manifest, _) = manifest::read(Origin::File(manifest_path), manifest::MAX_INPUT_SIZE)?;
    let notes = format!("Scaffolded from {} by `tool-mediator overrides new`; review every entry.", manifest.origin);
    let file = overrides::scaffold(source, &manifest.tools, notes)
        .map_err(|duplicate| anyhow::anyhow!("{}: {duplicate}", manifest.origin))?;
    let text = serde_json::to_string_pretty(&file)? + "\n";
    // What we scaffold must load: check it the way `enhance --overrides` will.
    OverrideFile::parse(&text, Path::new("<scaffold>"))
        .context("the scaffolded file does not pass overrides/schema.json (a bug; please report it)")?;
    match output {
        Some(path) => output::write_new(&path, &text)?,
        None => output::print(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
