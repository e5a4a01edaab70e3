//! `tool-mediator enhance`: rewrite manifests through the chain.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use tool_mediator::{ChainEvent, EnhancedTool, Enhancement, Tool};

use crate::cli::{ChainArgs, EnhanceArgs, InputArgs};
use crate::config::Chain;
use crate::manifest::{self, Dialect, Manifest, Origin};
use crate::output;
use tool_mediator::llm::Task;

pub async fn run(args: EnhanceArgs) -> Result<ExitCode> {
    let origins = manifest::expand_inputs(&args.input.inputs)?;
    let writes_files = args.in_place || args.output.is_some();
    if origins.len() > 1 && !(writes_files || args.check || args.diff) {
        bail!("{} inputs: choose --in-place, -o DIR, --check or --diff", origins.len());
    }
    if args.in_place && origins.contains(&Origin::Stdin) {
        bail!("--in-place cannot rewrite standard input");
    }
    let chain = Chain::from_args(&args.chain, Task::Enhance).await?;
    // Everything is read and checked before anything is written.
    let manifests = origins.into_iter().map(manifest::read).collect::<Result<Vec<_>>>()?;
    let targets = targets(&args, &manifests)?;

    let mut results = Vec::with_capacity(manifests.len());
    for manifest in &manifests {
        let dialect = args.to.map(Dialect::from).unwrap_or(manifest.dialect);
        let mediator = chain.mediator(args.min_confidence, dialect);
        let context = chain.context(&manifest.origin);
        let enhancement = mediator.enhance_with_report(manifest.tools.clone(), &context).await;
        log_events(&manifest.origin, &enhancement.events);
        if args.report {
            eprint!("{}", report(manifest, &context.source, &enhancement));
        }
        let provenance = dialect == Dialect::Mcp && !args.no_provenance;
        let tools = visible_tools(&manifest.tools, &enhancement.tools, provenance);
        let document = manifest.render(&tools, dialect);
        results.push(manifest.to_text(&document));
    }

    if let Some(llm) = chain.finish() {
        report_llm(llm, args.report);
    }

    if args.check || args.diff {
        let mut changed = false;
        for (manifest, new) in manifests.iter().zip(&results) {
            let old = manifest.to_text(&manifest.original);
            if let Some(diff) = output::diff(&old, new, &manifest.origin.to_string()) {
                changed = true;
                // A reader that stopped reading (`| head`) must not turn "changed" into success.
                match output::print(&diff) {
                    Err(error) if output::is_broken_pipe(&error) => {}
                    other => other?,
                }
            }
        }
        return Ok(if args.check && changed { ExitCode::from(1) } else { ExitCode::SUCCESS });
    }
    match targets {
        Some(paths) => output::write_atomically(&paths.into_iter().zip(results).collect::<Vec<_>>())?,
        None => output::print(&results[0])?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The files to write, one per manifest, or `None` for standard output.
fn targets(args: &EnhanceArgs, manifests: &[Manifest]) -> Result<Option<Vec<PathBuf>>> {
    if args.in_place {
        return Ok(Some(
            manifests
                .iter()
                .map(|manifest| match &manifest.origin {
                    Origin::File(path) => path.clone(),
                    Origin::Stdin => unreachable!("checked before reading"),
                })
                .collect(),
        ));
    }
    let Some(output) = &args.output else {
        return Ok(None);
    };
    if manifests.len() == 1 && !output.is_dir() {
        return Ok(Some(vec![output.clone()]));
    }
    std::fs::create_dir_all(output)
        .map_err(|error| anyhow::anyhow!("cannot create directory {}: {error}", output.display()))?;
    let mut seen = HashSet::new();
    let mut paths = Vec::with_capacity(manifests.len());
    for manifest in manifests {
        let Origin::File(input) = &manifest.origin else {
            bail!("-o DIR needs a file name: write standard input with -o FILE");
        };
        let name = input.file_name().expect("a manifest file has a name");
        if !seen.insert(name.to_owned()) {
            bail!("two inputs are named {}: -o DIR would write both to one file", name.to_string_lossy());
        }
        paths.push(output.join(name));
    }
    Ok(Some(paths))
}

/// Whether the mediator changed anything a consumer sees.
pub fn changed(original: &Tool, enhanced: &Tool) -> bool {
    original.name != enhanced.name
        || original.title != enhanced.title
        || original.description != enhanced.description
        || original.input_schema != enhanced.input_schema
        || original.annotations != enhanced.annotations
}

/// The tools to write, with their input positions: hidden ones left out, provenance under
/// `_meta` for the ones the mediator changed.
pub fn visible_tools(originals: &[Tool], enhanced: &[EnhancedTool], provenance: bool) -> Vec<(usize, Tool)> {
    originals
        .iter()
        .zip(enhanced)
        .enumerate()
        .filter(|(_, (_, tool))| !tool.hidden)
        .map(|(index, (original, tool))| {
            let written =
                if provenance && changed(original, &tool.tool) { tool.to_consumer_tool() } else { tool.tool.clone() };
            (index, written)
        })
        .collect()
}

fn log_events(origin: &Origin, events: &[ChainEvent]) {
    for event in events {
        match event {
            ChainEvent::TransformerFailed { .. }
            | ChainEvent::AnswerRefused { .. }
            | ChainEvent::RenameRefused { .. } => {
                tracing::warn!("{origin}: {event}");
            }
            ChainEvent::NameRepaired { .. } | ChainEvent::SchemaRepaired { .. } => {
                tracing::info!("{origin}: {event}")
            }
        }
    }
}

/// What `--report` prints: a summary line, one line per changed tool, one per event.
pub fn report(manifest: &Manifest, source: &str, enhancement: &Enhancement) -> String {
    let mut out = String::new();
    let mut counts = [0usize; 4];
    let mut lines = String::new();
    for (original, tool) in manifest.tools.iter().zip(&enhancement.tools) {
        let mut fields = Vec::new();
        if original.name != tool.tool.name {
            fields.push("name");
            counts[0] += 1;
        }
        if original.description != tool.tool.description {
            fields.push("description");
            counts[1] += 1;
        }
        if original.input_schema != tool.tool.input_schema {
            fields.push("inputSchema");
            counts[2] += 1;
        }
        if original.title != tool.tool.title {
            fields.push("title");
        }
        if original.annotations != tool.tool.annotations {
            fields.push("annotations");
        }
        if tool.hidden {
            fields.push("hidden");
            counts[3] += 1;
        }
        if fields.is_empty() {
            continue;
        }
        let name = if tool.is_renamed() {
            format!("{} -> {}", tool.original_name, tool.name())
        } else {
            tool.original_name.clone()
        };
        let inferred =
            if tool.inferred.is_empty() { String::new() } else { format!(" (inferred: {})", tool.inferred.join(", ")) };
        let _ = writeln!(
            lines,
            "  {name}: {} [{}, confidence {:.2}]{inferred}",
            fields.join(", "),
            tool.enhanced_by,
            tool.confidence
        );
    }
    let _ = writeln!(
        out,
        "{} (source `{source}`): {} tools, {} renamed, {} described, {} schemas changed, {} hidden",
        manifest.origin,
        manifest.tools.len(),
        counts[0],
        counts[1],
        counts[2],
        counts[3]
    );
    out.push_str(&lines);
    for event in &enhancement.events {
        let _ = writeln!(out, "  ! {event}");
    }
    out
}

/// Reads the one manifest a command takes and runs it through the chain.
pub async fn enhance_one(
    input: &InputArgs,
    chain_args: &ChainArgs,
    task: Task,
) -> Result<(Manifest, Vec<EnhancedTool>)> {
    let origins = manifest::expand_inputs(&input.inputs)?;
    if origins.len() != 1 {
        bail!("{} inputs: this command reads one manifest", origins.len());
    }
    let chain = Chain::from_args(chain_args, task).await?;
    let manifest = manifest::read(origins.into_iter().next().expect("one input"))?;
    let context = chain.context(&manifest.origin);
    let enhanced = chain.mediator(0.0, manifest.dialect).enhance(manifest.tools.clone(), &context).await;
    Ok((manifest, enhanced))
}

/// What the model was asked and what it cost, on stderr: the planned requests for `--dry-run`,
/// the usage with `--report`.
fn report_llm(llm: &tool_mediator::llm::LlmTransformer, report: bool) {
    let planned = llm.planned();
    if !planned.is_empty() {
        for (number, request) in planned.iter().enumerate() {
            eprintln!(
                "dry run: request {} of {}: {} tools, {} bytes, about {} tokens:\n{}",
                number + 1,
                planned.len(),
                request.tools,
                request.bytes,
                request.estimated_tokens,
                serde_json::to_string_pretty(&request.body).unwrap_or_default()
            );
        }
        let tokens: usize = planned.iter().map(|request| request.estimated_tokens).sum();
        eprintln!("dry run: {} requests, about {tokens} input tokens; nothing was sent", planned.len());
        return;
    }
    if report {
        let usage = llm.usage();
        let cost = usage
            .estimated_cost_usd
            .map_or("unknown (no price for this model)".to_owned(), |cost| format!("${cost:.4}"));
        eprintln!(
            "llm: {} requests ({} failed), {} input and {} output tokens, estimated cost {cost}, {} answers refused",
            usage.requests, usage.failed_requests, usage.input_tokens, usage.output_tokens, usage.refused_answers
        );
    }
}
