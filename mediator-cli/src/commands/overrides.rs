//! `tool-mediator overrides lint|new`: for the people who curate override files.

use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use tool_mediator::OverrideFile;
use tool_mediator::overrides;

use crate::cli::{ClientProfileArg, OverridesCommand};
use crate::config;
use crate::manifest::{self, Origin};
use crate::output;

pub fn run(command: OverridesCommand) -> Result<ExitCode> {
    match command {
        OverridesCommand::Lint { dir, client_profile } => lint(&dir, client_profile),
        OverridesCommand::New { source, manifest, output } => scaffold(source, manifest, output),
    }
}

fn lint(dir: &std::path::Path, profile: ClientProfileArg) -> Result<ExitCode> {
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
    eprintln!("{files} override files checked, {} problems", findings.len());
    Ok(if findings.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// An override file for `source` with an entry per tool, pre-filled with what the rules would do
/// (see [`overrides::scaffold`]).
fn scaffold(source: String, manifest_path: std::path::PathBuf, output: Option<std::path::PathBuf>) -> Result<ExitCode> {
    let (manifest, _) = manifest::read(Origin::File(manifest_path), manifest::MAX_INPUT_SIZE)?;
    let notes = format!("Scaffolded from {} by `tool-mediator overrides new`; review every entry.", manifest.origin);
    let file = overrides::scaffold(source, &manifest.tools, notes)
        .map_err(|duplicate| anyhow::anyhow!("{}: {duplicate}", manifest.origin))?;
    let text = serde_json::to_string_pretty(&file)? + "\n";
    // What we scaffold must load: check it the way `enhance --overrides` will.
    OverrideFile::parse(&text, std::path::Path::new("<scaffold>"))
        .context("the scaffolded file does not pass overrides/schema.json (a bug; please report it)")?;
    match output {
        Some(path) => output::write_new(&path, &text)?,
        None => output::print(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
