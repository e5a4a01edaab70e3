//! `tool-mediator names`: how the rules read tool names, one JSON line each.

use std::io::{BufRead as _, Read as _};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use tool_mediator::RuleTransformer;

use crate::output;

#[derive(Debug, Args)]
pub struct NamesArgs {
    /// Tool names; one per line from standard input when none is given.
    pub names: Vec<String>,

    /// An abbreviation dictionary to add to the built-in one; repeatable.
    #[arg(long = "dictionary", value_name = "FILE")]
    pub dictionaries: Vec<PathBuf>,
}

/// The longest line read: far above any tool name (MCP allows 128 characters).
const MAX_LINE: usize = 64 * 1024;

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
        let mut input = std::io::stdin().lock();
        let mut line = Vec::new();
        for number in 1.. {
            line.clear();
            // One line at a time, each within a limit: a stream need not end, nor hold a newline.
            let read = (&mut input)
                .take(MAX_LINE as u64 + 1)
                .read_until(b'\n', &mut line)
                .context("cannot read standard input")?;
            if read == 0 {
                break;
            }
            if line.len() > MAX_LINE && !line.ends_with(b"\n") {
                bail!("standard input, line {number}: longer than the limit of {MAX_LINE} bytes (one name a line)");
            }
            let name = std::str::from_utf8(&line)
                .map_err(|_| anyhow::anyhow!("standard input, line {number}: not UTF-8 text"))?
                .trim();
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
