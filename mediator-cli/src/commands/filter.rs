//! `tool-mediator filter`: keep the tools of a manifest that meet the criteria.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Args;
use regex::Regex;
use tool_mediator::{FilterCriteria, Tool};

use crate::commands::enhance::enhance_one;
use crate::flags::{ChainArgs, InputArgs, confidence};
use crate::manifest;
use crate::output;

#[derive(Debug, Args)]
pub struct FilterArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub chain: ChainArgs,

    /// Keep tools in this category; repeatable. Tools without one are `uncategorized`.
    #[arg(long = "category", value_name = "CATEGORY")]
    pub categories: Vec<String>,

    /// Keep tools enhanced with at least this confidence (0 to 1). 0 is a real threshold:
    /// it keeps every tool, unenhanced ones (confidence 0) included.
    #[arg(long, value_name = "CONFIDENCE", value_parser = confidence)]
    pub min_confidence: Option<f64>,

    /// Keep tools whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub name_pattern: Option<String>,

    /// Keep only this tool (exposed or original name); repeatable.
    #[arg(long = "include", value_name = "NAME")]
    pub include: Vec<String>,

    /// Drop this tool (exposed or original name); repeatable.
    #[arg(long = "exclude", value_name = "NAME")]
    pub exclude: Vec<String>,

    /// Keep tools an override hid.
    #[arg(long)]
    pub include_hidden: bool,

    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

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
