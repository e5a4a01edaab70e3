//! `tool-mediator filter`: keep the tools of a manifest that meet the criteria.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use regex::Regex;
use tool_mediator::{FilterCriteria, Tool};

use crate::cli::FilterArgs;
use crate::commands::enhance::enhance_one;
use crate::manifest;
use crate::output;

pub async fn run(args: FilterArgs) -> Result<ExitCode> {
    let criteria = FilterCriteria {
        categories: (!args.categories.is_empty()).then(|| args.categories.clone()),
        min_confidence: args.min_confidence,
        name_pattern: args
            .name_pattern
            .as_deref()
            .map(Regex::new)
            .transpose()
            .context("--name-pattern is not a valid regular expression")?,
        include: (!args.include.is_empty()).then(|| args.include.clone()),
        exclude: args.exclude.clone(),
        include_hidden: args.include_hidden,
    };
    let (manifest, enhanced) = enhance_one(&args.input, &args.chain, tool_mediator::llm::Task::Enhance).await?;
    // The criteria decide about hidden tools (`--include-hidden`); each kept tool is written as
    // a consumer sees it, in its place.
    let provenance = manifest.dialect == manifest::Dialect::Mcp;
    let tools: Vec<(usize, Tool)> = enhanced
        .into_iter()
        .enumerate()
        .filter(|(_, tool)| criteria.matches(tool))
        .map(|(index, tool)| (index, tool.for_consumer(provenance)))
        .collect();
    let text = manifest.text(tools.into_iter(), manifest.dialect);
    match &args.output {
        Some(path) => output::write_atomically(&[(path.clone(), text)])?,
        None => output::print(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
