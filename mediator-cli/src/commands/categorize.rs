//! `tool-mediator categorize`: a manifest's tools by category, as JSON.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::{Map, Value, json};
use tool_mediator::{EnhancedTool, categorize};

use crate::commands::enhance::enhance_one;
use crate::flags::{ChainArgs, InputArgs};
use crate::output;

#[derive(Debug, Args)]
pub struct CategorizeArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub chain: ChainArgs,
}

pub async fn run(args: CategorizeArgs) -> Result<ExitCode> {
    let (_, enhanced) = enhance_one(&args.input, &args.chain, tool_mediator::llm::Task::Categorize).await?;
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
