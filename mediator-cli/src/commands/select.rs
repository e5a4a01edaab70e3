//! `tool-mediator filter` and `categorize`: choose and group a manifest's tools.

use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use regex::Regex;
use serde_json::{Map, Value, json};
use tool_mediator::{EnhancedTool, FilterCriteria, categorize};

use crate::cli::{CategorizeArgs, ChainArgs, FilterArgs, InputArgs};
use crate::commands::enhance::visible_tools;
use crate::config::Chain;
use crate::manifest::{self, Manifest};
use crate::output;

pub async fn filter(args: FilterArgs) -> Result<ExitCode> {
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
    let (manifest, enhanced) = enhance_one(&args.input, &args.chain).await?;
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
    let originals: Vec<_> = positions.iter().map(|&index| manifest.tools[index].clone()).collect();
    let chosen: Vec<EnhancedTool> = positions.iter().map(|&index| kept[index].clone()).collect();
    let tools = visible_tools(&originals, &chosen, manifest.dialect == manifest::Dialect::Mcp)
        .into_iter()
        .map(|(slot, tool)| (positions[slot], tool))
        .collect::<Vec<_>>();
    let text = manifest.to_text(&manifest.render(&tools, manifest.dialect));
    match &args.output {
        Some(path) => output::write_atomically(path, &text)?,
        None => output::print(&text)?,
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn categorize_command(args: CategorizeArgs) -> Result<ExitCode> {
    let (_, enhanced) = enhance_one(&args.input, &args.chain).await?;
    let visible: Vec<EnhancedTool> = enhanced.into_iter().filter(|tool| !tool.hidden).collect();
    let mut categories = Map::new();
    for (category, tools) in categorize(&visible) {
        let tools: Vec<Value> =
            tools.iter().map(|tool| json!({"name": tool.name(), "description": tool.tool.description})).collect();
        categories.insert(category, Value::Array(tools));
    }
    let text = serde_json::to_string_pretty(&json!({"categories": categories}))? + "\n";
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

async fn enhance_one(input: &InputArgs, chain_args: &ChainArgs) -> Result<(Manifest, Vec<EnhancedTool>)> {
    let origins = manifest::expand_inputs(&input.inputs)?;
    if origins.len() != 1 {
        bail!("{} inputs: this command reads one manifest", origins.len());
    }
    let chain = Chain::from_args(chain_args)?;
    let manifest = manifest::read(origins.into_iter().next().expect("one input"))?;
    let context = chain.context(&manifest.origin);
    let enhanced = chain.mediator(0.0).enhance(manifest.tools.clone(), &context).await;
    Ok((manifest, enhanced))
}
