//! `tool-mediator tokens`: what the first `tools/list` costs a model, with and without
//! progressive disclosure, counted with a real tokenizer (o200k_base).

mod counting;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use serde_json::{Value, json};
use tool_mediator::llm::Task;
use tool_mediator::session::{DisclosureMode, Session, SessionPolicy};

use crate::config::Setup;
use crate::flags::{ChainArgs, DisclosureModeArg};
use crate::manifest::{self, Dialect};
use crate::output;

#[derive(Debug, Args)]
pub struct TokensArgs {
    /// The manifest (or `-` for standard input).
    pub manifest: PathBuf,

    #[command(flatten)]
    pub chain: ChainArgs,

    /// List the tokens per tool of the listing in `--mode` rather than the full one.
    #[arg(long)]
    pub disclose: bool,

    /// The mode `--disclose` lists, and whose saving the summary names; every mode is counted.
    /// The configuration's `disclosure_mode`, `both`, by default.
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<DisclosureModeArg>,

    /// Fold categories of at least this many tools (the configuration's `grouping_threshold`,
    /// 5, by default).
    #[arg(long, value_name = "N")]
    pub threshold: Option<usize>,

    /// Fewer tools than this are listed whole, whatever the mode (0: never). The
    /// configuration's `whole_below`, 20, by default.
    #[arg(long, value_name = "N")]
    pub whole_below: Option<usize>,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub async fn run(args: TokensArgs) -> Result<ExitCode> {
    let origins = manifest::expand_inputs(std::slice::from_ref(&args.manifest))?;
    let (mut manifest, _) =
        manifest::read(origins.into_iter().next().context("one manifest")?, manifest::MAX_INPUT_SIZE)?;
    let setup = Setup::from_args(&args.chain, Task::Enhance).await?;
    // The settings every front door shares, the flags over them.
    let mut settings = setup.settings.clone();
    if let Some(threshold) = args.threshold {
        settings.grouping_threshold = threshold;
    }
    if let Some(whole_below) = args.whole_below {
        settings.whole_below = whole_below;
    }
    let chosen: DisclosureMode = args.mode.map_or(settings.disclosure_mode, DisclosureMode::from);
    let (threshold, whole_below) = (settings.grouping_threshold.max(2), settings.whole_below);
    let mediator = Arc::new(setup.mediator(0.0, Dialect::Mcp));
    let context = setup.context(&manifest);
    // Enhanced once, then listed in each mode; only one mode's listing is held at a time.
    let mut enhanced = Some(mediator.enhance(std::mem::take(&mut manifest.tools), &context).await);
    setup.finish();

    let bpe = tiktoken_rs::o200k_base_singleton();
    /// One mode's first listing: how many entries, the tokens in all and, for the listings a
    /// report shows tool by tool, per entry.
    struct Measured {
        mode: DisclosureMode,
        listed: usize,
        total: usize,
        each: Vec<(String, usize)>,
    }
    let mut measured = Vec::new();
    // `off`, which lists every tool, last: it takes the enhanced list rather than a copy.
    let mut modes = DisclosureMode::ALL;
    modes.sort_by_key(|mode| *mode == DisclosureMode::Off);
    for (index, mode) in modes.into_iter().enumerate() {
        settings.disclosure_mode = mode;
        let policy = SessionPolicy { page_size: None, ..settings.session_policy() };
        let session = Session::new(mediator.clone(), context.clone(), policy);
        let tools = if index + 1 == modes.len() { enhanced.take() } else { enhanced.clone() };
        session.take_in_enhanced(tools.unwrap_or_default());
        let tools = session.page(None)?.into_tools();
        drop(session);
        // The listing as a model reads it, and each tool, in one reading.
        let counted = counting::listing(bpe, &tools)?;
        let each = if mode == DisclosureMode::Off || mode == chosen {
            tools.iter().map(|tool| tool.name.clone()).zip(counted.each).collect()
        } else {
            Vec::new()
        };
        measured.push(Measured { mode, listed: tools.len(), total: counted.total, each });
    }
    measured.sort_by_key(|measured| DisclosureMode::ALL.iter().position(|mode| *mode == measured.mode));
    let plain_total = measured[0].total;
    let saved = |total: usize| {
        if plain_total == 0 { 0.0 } else { 100.0 * (plain_total - total.min(plain_total)) as f64 / plain_total as f64 }
    };
    let chosen = measured.iter().find(|measured| measured.mode == chosen).expect("every mode is measured");
    let plain = &measured[0];
    let shown = if args.disclose { &chosen.each } else { &plain.each };

    if args.json {
        let tools = |each: &[(String, usize)]| -> Vec<Value> {
            each.iter().map(|(name, tokens)| json!({"name": name, "tokens": tokens})).collect()
        };
        let modes: serde_json::Map<String, Value> = measured
            .iter()
            .map(|measured| {
                let saved = (saved(measured.total) * 10.0).round() / 10.0;
                let report = json!({"tools": measured.listed, "total": measured.total, "saved_percent": saved});
                (measured.mode.name().to_owned(), report)
            })
            .collect();
        let report = json!({
            "manifest": manifest.origin.to_string(),
            "encoding": "o200k_base",
            "threshold": threshold,
            "whole_below": whole_below,
            "modes": modes,
            "without_disclosure": {"tools": plain.listed, "total": plain_total, "per_tool": tools(&plain.each)},
            "with_disclosure": {"mode": chosen.mode.name(), "threshold": threshold, "tools": chosen.listed,
                                "total": chosen.total, "per_tool": tools(&chosen.each)},
            "saved_percent": (saved(chosen.total) * 10.0).round() / 10.0,
        });
        output::print(&(serde_json::to_string_pretty(&report)? + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "{}: the first tools/list in each disclosure mode (o200k_base tokens; categories of {} or more; fewer than {} tools listed whole)\n",
        manifest.origin, threshold, whole_below
    );
    text.push_str(&format!("{:<12}{:>7}{:>9}{:>8}\n", "mode", "tools", "tokens", "saved"));
    for measured in &measured {
        let (listed, total) = (measured.listed, measured.total);
        text.push_str(&format!("{:<12}{listed:>7}{total:>9}{:>7.1}%\n", measured.mode.name(), saved(total)));
    }
    text.push_str(if args.disclose { "\nper tool, in that mode:\n" } else { "\nper tool, everything listed:\n" });
    for (name, tokens) in shown {
        text.push_str(&format!("{tokens:>7}  {name}\n"));
    }
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
