//! `tool-mediator filter`: keep the tools of a manifest that meet the criteria.

use std::process::ExitCode;

use anyhow::{Context as _, Result};
use regex::Regex;
use tool_mediator::{EnhancedTool, FilterCriteria};

use crate::cli::FilterArgs;
use crate::commands::enhance::{enhance_one, visible_tools};
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
    let kept: Vec<EnhancedTool> = enhanced
        .into_iter()
        .map(|mut tool| {
            // Hidden tools are dropped by the criteria unless asked for, not by visible_tools.
            if criteria.include_hidden {
                tool.hidden = false;
            }
            tool
        })
        .collect();
    let positions: Vec<usize> = (0..kept.len()).filter(|&index| criteria.matches(&kept[index])).collect();
    let chosen: Vec<EnhancedTool> = positions.iter().map(|&index| kept[index].clone()).collect();
    let tools = visible_tools(chosen, manifest.dialect == manifest::Dialect::Mcp)
        .into_iter()
        .map(|(slot, tool)| (positions[slot], tool));
    let text = manifest.text(tools, manifest.dialect);
    match &args.output {
        Some(path) => output::write_atomically(&[(path.clone(), text)])?,
        None => output::print(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}
