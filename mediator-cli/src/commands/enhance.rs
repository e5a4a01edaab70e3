//! `tool-mediator enhance`: rewrite manifests through the chain.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use tool_mediator::{ChainEvent, EnhancedTool, Enhancement, Mediator, counted};

use crate::config::Setup;
use crate::flags::{ChainArgs, InputArgs, confidence};
use crate::manifest::{self, Dialect, Manifest, Origin};
use crate::output::{self, FileIdentity};
use tool_mediator::llm::Task;

#[derive(Debug, Args)]
pub struct EnhanceArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// Compare the tools with this lock file (`tool-mediator pin`): a tool whose definition
    /// changed since it was pinned is reported, and nothing is written (exit 1).
    #[arg(long, value_name = "FILE")]
    pub locked: Option<PathBuf>,

    #[command(flatten)]
    pub chain: ChainArgs,

    /// Never use a transformer's answer less confident than this (0 to 1); such a tool is
    /// left as it came.
    #[arg(long, value_name = "CONFIDENCE", default_value_t = 0.0, value_parser = confidence)]
    pub min_confidence: f64,

    /// Write here: a file for one input, a directory for several.
    #[arg(short, long, value_name = "PATH", conflicts_with = "in_place")]
    pub output: Option<PathBuf>,

    /// Rewrite each input file in place (atomically).
    #[arg(long)]
    pub in_place: bool,

    /// The format to write; the input's own by default.
    #[arg(long, value_enum)]
    pub to: Option<FormatArg>,

    /// Do not record provenance under `_meta` in MCP output.
    #[arg(long)]
    pub no_provenance: bool,

    /// Print what changed and by which transformer, and everything refused, on stderr:
    /// `--report` (or `--report=full`) a line per changed tool, `--report=summary` each
    /// manifest's counts only.
    #[arg(long, value_enum, value_name = "DETAIL", num_args = 0..=1, require_equals = true, default_missing_value = "full")]
    pub report: Option<ReportArg>,

    /// Write nothing; exit 1 and print a diff when a file would change. For CI.
    #[arg(long, conflicts_with_all = ["output", "in_place", "diff"])]
    pub check: bool,

    /// Write nothing; print a diff of what would change.
    #[arg(long, conflicts_with_all = ["output", "in_place"])]
    pub diff: bool,
}

/// How much `--report` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportArg {
    /// Each manifest's counts, a line per changed tool, event and weak tool.
    Full,
    /// Each manifest's counts only (and a hint about its source).
    Summary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// MCP tools (`inputSchema`).
    Mcp,
    /// OpenAI function tools (`{"type": "function", "function": {...}}`).
    Openai,
    /// Anthropic tools (`input_schema`).
    Anthropic,
}

/// A format flag's dialect.
fn dialect_of(format: FormatArg) -> Dialect {
    match format {
        FormatArg::Mcp => Dialect::Mcp,
        FormatArg::Openai => Dialect::OpenAiTool,
        FormatArg::Anthropic => Dialect::Anthropic,
    }
}

pub async fn run(args: EnhanceArgs) -> Result<ExitCode> {
    let origins = manifest::expand_inputs(&args.input.inputs)?;
    let writes_files = args.in_place || args.output.is_some();
    if origins.len() > 1 && !(writes_files || args.check || args.diff) {
        bail!("{} inputs: choose --in-place, -o DIR, --check or --diff", origins.len());
    }
    if args.in_place && origins.contains(&Origin::Stdin) {
        bail!("--in-place cannot rewrite standard input");
    }
    let setup = Setup::from_args(&args.chain, Task::Enhance).await?;
    // Everything is read and checked before anything is written.
    let limit = args.input.max_input_size;
    let (mut manifests, identities): (Vec<Manifest>, Vec<_>) = origins
        .into_iter()
        .map(|origin| manifest::read(origin, limit))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let targets = targets(&args, &manifests)?;
    if let Some(path) = &args.locked {
        let lock = tool_mediator::pin::Lock::read(path)?;
        let mut unchanged = true;
        for manifest in &manifests {
            unchanged &= crate::commands::pin::compare(&manifest.origin, &manifest.tools, &lock);
        }
        if !unchanged {
            eprintln!("error: tools changed since {} pinned them; nothing written", output::shown(path));
            return Ok(ExitCode::from(1));
        }
    }

    let compare = args.check || args.diff;
    // Files are staged as they are made (each tool written as it is taken, straight into a
    // temporary file beside its target) and put in place only when all of them are.
    let mut writing = match &targets {
        Some(paths) if !compare && !paths.is_empty() => Some(output::Writing::start(&paths[0])?),
        _ => None,
    };
    let mut diffs = Vec::new();
    let mut hinted = HashSet::new();
    for (position, manifest) in manifests.iter_mut().enumerate() {
        let dialect = args.to.map(dialect_of).unwrap_or(manifest.dialect);
        let mediator = setup.mediator(args.min_confidence, dialect);
        let context = setup.context(manifest);
        // The text to compare with is written before the tools go into the chain, which takes
        // them without a copy.
        let before = compare.then(|| manifest.original_text());
        let enhancement = mediator.enhance_with_report(std::mem::take(&mut manifest.tools), &context).await;
        log_events(&manifest.origin, &enhancement.events);
        // Said once per source: a directory of manifests from one server is one mistake.
        let hint = setup.unmatched_source_hint(manifest).filter(|_| hinted.insert(context.source.clone()));
        if let Some(detail) = args.report {
            // Tool names and the source come from the manifest and its file's name.
            let mut report = report(manifest, &context.source, &enhancement, &mediator, setup.llm(), detail);
            if let Some(hint) = &hint {
                let _ = writeln!(report, "  {hint}");
            }
            eprint!("{}", output::printable_lines(&report));
        } else if let Some(hint) = &hint {
            eprintln!("{}", tool_mediator::screen::printable(hint));
        }
        // Unchanged: every tool written as it was read, in the dialect it was read in.
        let unchanged =
            dialect == manifest.dialect && enhancement.tools.iter().all(|tool| !tool.hidden && !tool.changes.any());
        let provenance = dialect == Dialect::Mcp && !args.no_provenance;
        let tools = tool_mediator::consumer_tools(enhancement.tools, provenance).collect::<Vec<_>>().into_iter();
        match (&mut writing, &targets, before) {
            (_, _, Some(before)) => diffs.push((before, manifest.text(tools, dialect))),
            (Some(writing), Some(paths), None) => {
                let path = &paths[position];
                // A file rewritten where it was read from (by `--in-place`, or by `-o` naming the
                // input itself) is left untouched, same bytes, inode and time, when `--check` would
                // call it unchanged, and is not overwritten if another process changed it since.
                let identity = identities[position];
                let read_as = identity.filter(|_| args.in_place || is_input(manifest, identity, path));
                if read_as.is_some() && unchanged {
                    tracing::info!("{}: unchanged, not written", output::shown(path));
                    continue;
                }
                writing.stage(path, read_as, |out| manifest.write(tools, dialect, out))?;
            }
            _ => {
                let mut stdout = std::io::BufWriter::with_capacity(256 * 1024, std::io::stdout().lock());
                manifest.write(tools, dialect, &mut stdout).and_then(|()| stdout.flush())?;
            }
        }
    }

    if let Some(llm) = setup.finish() {
        report_llm(llm, args.report.is_some());
    }
    if let Some(writing) = writing {
        writing.finish()?;
    }
    if !compare {
        return Ok(ExitCode::SUCCESS);
    }
    let mut changed = false;
    for (manifest, (before, after)) in manifests.iter().zip(&diffs) {
        if let Some(diff) = output::diff(before, after, &manifest.origin.to_string()) {
            changed = true;
            // A reader that stopped reading (`| head`) must not turn "changed" into success.
            match output::print(&diff) {
                Err(error) if output::is_broken_pipe(&error) => {}
                other => other?,
            }
        }
    }
    Ok(if args.check && changed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Whether `path` names the file `manifest` was read from: the same file, or the same path
/// once links are resolved (the file may have been replaced since).
fn is_input(manifest: &Manifest, identity: Option<FileIdentity>, path: &Path) -> bool {
    let Origin::File(input) = &manifest.origin else {
        return false;
    };
    identity.is_some_and(|identity| identity.is_file_at(path))
        || std::fs::canonicalize(input).is_ok_and(|input| std::fs::canonicalize(path).is_ok_and(|path| path == input))
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

/// What `--report` prints: a summary line, one line per changed tool, one per event, and the
/// weak tools left weak with why; `--report=summary`, the summary line, with the events and the
/// weak tools counted on it.
pub fn report(
    manifest: &Manifest,
    source: &str,
    enhancement: &Enhancement,
    mediator: &Mediator,
    llm: Option<&tool_mediator::llm::LlmTransformer>,
    detail: ReportArg,
) -> String {
    let mut out = String::new();
    let mut counts = [0usize; 4];
    let mut lines = String::new();
    for tool in &enhancement.tools {
        let mut fields = Vec::new();
        let changes = tool.changes;
        if changes.name {
            fields.push("name");
            counts[0] += 1;
        }
        if changes.description {
            fields.push("description");
            counts[1] += 1;
        }
        if changes.input_schema {
            fields.push("inputSchema");
            counts[2] += 1;
        }
        if changes.title {
            fields.push("title");
        }
        if changes.annotations {
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
    let _ = write!(
        out,
        "{} (source `{source}`): {}, {} renamed, {} described, {}, {} hidden",
        manifest.origin,
        counted(enhancement.tools.len(), "tool", "tools"),
        counts[0],
        counts[1],
        counted(counts[2], "schema changed", "schemas changed"),
        counts[3]
    );
    let weak = tool_mediator::llm::left_weak(mediator, enhancement, llm);
    if detail == ReportArg::Summary {
        if !enhancement.events.is_empty() {
            let events = counted(enhancement.events.len(), "event", "events");
            let _ = write!(out, "; {events} (--report=full lists them)");
        }
        if !weak.is_empty() {
            let _ = write!(out, "; {} left weak: {}", counted(weak.len(), "weak tool", "weak tools"), reasons(&weak));
        }
        out.push('\n');
        return out;
    }
    out.push('\n');
    out.push_str(&lines);
    for event in &enhancement.events {
        let _ = writeln!(out, "  ! {event}");
    }
    if !weak.is_empty() {
        let weak_tools = counted(weak.len(), "weak tool", "weak tools");
        let _ = writeln!(out, "  {weak_tools} left weak: {}", reasons(&weak));
        for tool in &weak {
            let said: Vec<String> = tool.weaknesses.iter().map(ToString::to_string).collect();
            let _ = writeln!(out, "  ~ {}: {} ({})", tool.tool, said.join("; "), tool.why);
        }
    }
    out
}

/// Why the weak tools were left weak, counted: `2 because no language model is configured`.
fn reasons(weak: &[tool_mediator::llm::LeftWeak]) -> String {
    let mut reasons: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for tool in weak {
        *reasons.entry(tool.why.to_string()).or_default() += 1;
    }
    let reasons: Vec<String> = reasons.into_iter().map(|(why, count)| format!("{count} because {why}")).collect();
    reasons.join(", ")
}

/// Reads the one manifest a command takes and runs it through the chain; the manifest comes
/// back without its tools (they are in the answer) but can still write tools in its shape.
pub async fn enhance_one(
    input: &InputArgs,
    chain_args: &ChainArgs,
    task: Task,
) -> Result<(Manifest, Vec<EnhancedTool>)> {
    let origins = manifest::expand_inputs(&input.inputs)?;
    if origins.len() != 1 {
        bail!("{} inputs: this command reads one manifest", origins.len());
    }
    let setup = Setup::from_args(chain_args, task).await?;
    let (mut manifest, _) = manifest::read(origins.into_iter().next().expect("one input"), input.max_input_size)?;
    let context = setup.context(&manifest);
    let enhanced = setup.mediator(0.0, manifest.dialect).enhance(std::mem::take(&mut manifest.tools), &context).await;
    Ok((manifest, enhanced))
}

/// What the model was asked and what it cost, on stderr: the planned requests for `--dry-run`,
/// the usage with `--report`.
fn report_llm(llm: &tool_mediator::llm::LlmTransformer, report: bool) {
    let planned = llm.planned();
    if !planned.is_empty() {
        for (number, request) in planned.iter().enumerate() {
            eprintln!(
                "dry run: request {} of {}: {}, {} bytes, about {} tokens:\n{}",
                number + 1,
                planned.len(),
                counted(request.tools, "tool", "tools"),
                request.bytes,
                request.estimated_tokens,
                serde_json::to_string_pretty(&request.body).unwrap_or_default()
            );
        }
        let tokens: usize = planned.iter().map(|request| request.estimated_tokens).sum();
        let requests = counted(planned.len(), "request", "requests");
        eprintln!("dry run: {requests}, about {tokens} input tokens; nothing was sent");
        return;
    }
    if report {
        let usage = llm.usage();
        let cost = usage
            .estimated_cost_usd
            .map_or("unknown (no price for this model)".to_owned(), |cost| format!("${cost:.4}"));
        eprintln!(
            "llm: {} ({} failed), {} input and {} output tokens, estimated cost {cost}, {} refused",
            counted(usage.requests, "request", "requests"),
            usage.failed_requests,
            usage.input_tokens,
            usage.output_tokens,
            counted(usage.refused_answers, "answer", "answers")
        );
    }
}
