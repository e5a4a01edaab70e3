//! `tool-mediator names`: how the rules read tool names, one JSON line each.

use std::io::BufRead as _;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use tool_mediator::RuleTransformer;

use crate::cli::NamesArgs;
use crate::output;

pub fn run(args: NamesArgs) -> Result<ExitCode> {
    let rules = RuleTransformer::with_dictionary(tool_mediator::dictionary(&args.dictionaries)?);
    let mut out = String::new();
    let mut emit = |name: &str| -> Result<()> {
        out.push_str(&serde_json::to_string(&rules.read_name(name))?);
        out.push('\n');
        if out.len() > 64 * 1024 {
            output::print(&out)?;
            out.clear();
        }
        Ok(())
    };
    if args.names.is_empty() {
        for line in std::io::stdin().lock().lines() {
            let line = line.context("cannot read standard input")?;
            let name = line.trim();
            if !name.is_empty() {
                emit(name)?;
            }
        }
    } else {
        for name in &args.names {
            emit(name)?;
        }
    }
    output::print(&out)?;
    Ok(ExitCode::SUCCESS)
}
