//! `tool-mediator tokens`: what the first `tools/list` costs a model, with and without
//! progressive disclosure, counted with a real tokenizer (o200k_base).

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use serde_json::{Value, json};
use tool_mediator::Tool;
use tool_mediator::llm::Task;
use tool_mediator::session::{ListPage, Session, SessionPolicy};

use crate::cli::TokensArgs;
use crate::config::Setup;
use crate::manifest::{self, Dialect};
use crate::output;

pub async fn run(args: TokensArgs) -> Result<ExitCode> {
    let origins = manifest::expand_inputs(std::slice::from_ref(&args.manifest))?;
    let (manifest, _) = manifest::read(origins.into_iter().next().context("one manifest")?, manifest::MAX_INPUT_SIZE)?;
    let setup = Setup::from_args(&args.chain, Task::Enhance).await?;
    let mediator = Arc::new(setup.mediator(0.0, Dialect::Mcp));
    let context = setup.context(&manifest.origin);
    let listing = |policy: SessionPolicy| {
        let session = Session::new(mediator.clone(), context.clone(), policy);
        let tools = manifest.tools.clone();
        async move { session.list_tools(&tools, None).await.map(ListPage::into_tools) }
    };
    let plain =
        listing(SessionPolicy { page_size: None, disclosure: None, ..SessionPolicy::mediated(args.threshold) }).await?;
    let folded = listing(SessionPolicy { page_size: None, ..SessionPolicy::mediated(args.threshold) }).await?;
    setup.finish();

    let bpe = tiktoken_rs::o200k_base_singleton();
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let measure = |tools: &[Tool]| -> (usize, Vec<(String, usize)>) {
        let total = count(&json!({"tools": tools}).to_string());
        let each = tools.iter().map(|tool| (tool.name.clone(), count(&json!(tool).to_string()))).collect();
        (total, each)
    };
    let (plain_total, plain_each) = measure(&plain);
    let (folded_total, folded_each) = measure(&folded);
    let saved = if plain_total == 0 {
        0.0
    } else {
        100.0 * (plain_total - folded_total.min(plain_total)) as f64 / plain_total as f64
    };
    let shown = if args.disclose { &folded_each } else { &plain_each };

    if args.json {
        let tools = |each: &[(String, usize)]| -> Vec<Value> {
            each.iter().map(|(name, tokens)| json!({"name": name, "tokens": tokens})).collect()
        };
        let report = json!({
            "manifest": manifest.origin.to_string(),
            "encoding": "o200k_base",
            "without_disclosure": {"tools": plain.len(), "total": plain_total, "per_tool": tools(&plain_each)},
            "with_disclosure": {"threshold": args.threshold, "tools": folded.len(), "total": folded_total, "per_tool": tools(&folded_each)},
            "saved_percent": (saved * 10.0).round() / 10.0,
        });
        output::print(&(serde_json::to_string_pretty(&report)? + "\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut text = format!(
        "{}: the first tools/list costs {plain_total} tokens (o200k_base) for {} tools; with disclosure at {} it lists {} tools for {folded_total} tokens, {saved:.1}% fewer\n",
        manifest.origin,
        plain.len(),
        args.threshold,
        folded.len(),
    );
    for (name, tokens) in shown {
        text.push_str(&format!("{tokens:>7}  {name}\n"));
    }
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
