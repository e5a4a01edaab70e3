//! `tool-mediator overrides lint|new`: for the people who curate override files.

use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use indexmap::IndexMap;
use tool_mediator::overrides;
use tool_mediator::{NameRules, OverrideFile, RuleTransformer, ToolOverride, schema};

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

/// An override file for `source` with an entry per tool, pre-filled with what the rules
/// would do: the spelled-out name, the description (inferred where the source has none), the
/// category, and the repaired schema where the source's needed repair.
fn scaffold(source: String, manifest_path: std::path::PathBuf, output: Option<std::path::PathBuf>) -> Result<ExitCode> {
    let (manifest, _) = manifest::read(Origin::File(manifest_path), manifest::MAX_INPUT_SIZE)?;
    let rules = RuleTransformer::new();
    let mut answers: Vec<Option<tool_mediator::Answer>> = vec![None; manifest.tools.len()];
    for answer in rules.answers(&manifest.tools) {
        let index = answer.index;
        answers[index] = Some(answer);
    }
    let mut tools = IndexMap::new();
    for (index, (tool, answer)) in manifest.tools.iter().zip(answers).enumerate() {
        let description = |text: Option<&String>| text.filter(|text| !text.trim().is_empty()).cloned();
        let mut entry = ToolOverride { description: description(tool.description.as_ref()), ..ToolOverride::default() };
        if let Some(answer) = answer {
            let improved = &answer.patch.applied_to(tool);
            if improved.name != tool.name && NameRules::MCP.is_valid(&improved.name) {
                entry.name = Some(improved.name.clone());
            }
            entry.description = description(improved.description.as_ref());
            entry.category = answer.category.clone();
            if improved.input_schema != tool.input_schema {
                entry.input_schema = improved.input_schema_value().filter(schema::is_valid);
            }
        }
        if tools.insert(tool.name.clone(), entry).is_some() {
            bail!(
                "{}: `/tools/{index}`: a second tool named `{}`; an override file has one entry a name",
                manifest.origin,
                tool.name
            );
        }
    }
    let file = OverrideFile {
        schema: Some("schema.json".into()),
        source,
        aliases: Vec::new(),
        notes: Some(format!(
            "Scaffolded from {} by `tool-mediator overrides new`; review every entry.",
            manifest.origin
        )),
        tools,
    };
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
