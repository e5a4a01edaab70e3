//! `tool-mediator lint [FILES|DIRS|-]`: what is wrong with each tool of each manifest, as text,
//! JSON, or SARIF 2.1.0 for code-scanning services. Exit 0 when nothing reaches `--fail-on`, 1
//! when something does, 2 for input that cannot be read.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};
use serde_json::{Value, json};
use tool_mediator::Place;
use tool_mediator::lint::{self, Finding, RULES, Severity};
use tool_mediator::manifest::Origin;
use tool_mediator_mcp::probe::Probed;

use crate::config::Setup;
use crate::flags::{ChainArgs, InputArgs, ServerArgs};
use crate::manifest;
use crate::output;

#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub server: ServerArgs,

    /// How to write the findings: text, JSON, or SARIF 2.1.0 (what code-scanning services read).
    #[arg(long, value_enum, default_value_t = LintFormat::Text)]
    pub format: LintFormat,

    /// Exit 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,

    /// Calibrate the judge's threshold for the configured model: ask it for its odds on every
    /// tool of the input the screen does not flag, taken as honest (a sample of your servers'
    /// real tools), and print the `judge_threshold` that flags at most 1% of them. The odds are
    /// cached, so `lint --judge-threshold` on the same tools asks nothing again.
    #[arg(long)]
    pub calibrate_judge: bool,

    /// The language model (for `--judge`) and the settings, as `enhance` reads them.
    #[command(flatten)]
    pub chain: ChainArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    Text,
    Json,
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Note,
    Warning,
    Error,
    Never,
}

/// `--calibrate-judge`: the model's odds on the input's tools, and the threshold they call for.
async fn calibrate(args: &LintArgs, judge: &tool_mediator::llm::Judge) -> Result<ExitCode> {
    if !judge.asks_odds() {
        anyhow::bail!("--calibrate-judge reads the model's odds, which only OpenAI and OpenAI-compatible servers give");
    }
    let mut tools = Vec::new();
    if args.server.server {
        tools.extend(server_tools(&args.server).await?.1.tools);
    } else {
        for origin in manifest::expand_inputs(&args.input.inputs)? {
            tools.extend(manifest::read(origin, args.input.max_input_size)?.0.tools);
        }
    }
    let started = std::time::Instant::now();
    let calibration = judge.calibrate("lint", &tools, tool_mediator::llm::CALIBRATED_SHARE).await;
    let seconds = started.elapsed().as_secs_f64();
    let mut out = String::new();
    let scored = calibration.scored.len();
    let _ = writeln!(
        out,
        "asked the model's odds on {scored} tools ({} asked in {seconds:.0} s, the rest cached); {} left out as \
         the screen flags them, {} unanswered",
        calibration.asked, calibration.flagged_by_screen, calibration.unanswered
    );
    let Some(threshold) = calibration.threshold else {
        anyhow::bail!("the model gave no odds on any tool: nothing to calibrate on");
    };
    let _ = writeln!(out, "median odds {:.4}; the highest:", calibration.median.unwrap_or(threshold));
    for (name, odds) in calibration.scored.iter().take(5) {
        let _ = writeln!(out, "  {odds:.4}  {}", tool_mediator::screen::printable(name));
    }
    let _ = writeln!(
        out,
        "judge_threshold = {threshold}   # flags {} of these {scored} tools (at most {}%); read the highest above: \
         a poisoned one among them calls for a cleaner sample",
        calibration.flagged_at(threshold),
        tool_mediator::llm::CALIBRATED_SHARE * 100.0
    );
    if scored < 200 {
        let _ = writeln!(out, "(fewer than 200 tools: the threshold rests on few odds; give more)");
    }
    output::print(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The tools of the server `args` names, listed over stdio; and how messages name it.
pub async fn server_tools(args: &ServerArgs) -> Result<(String, Probed)> {
    let Some((program, rest)) = args.command.split_first() else {
        anyhow::bail!("--server needs the server's command after `--`");
    };
    let mut command = tokio::process::Command::new(program);
    command.args(rest);
    let tools = tool_mediator_mcp::probe::probe_tools(command).await?;
    let origin = std::iter::once(program).chain(rest).map(|part| part.to_string_lossy()).collect::<Vec<_>>().join(" ");
    Ok((format!("server `{origin}`"), tools))
}

/// A manifest's (or a server's) findings, each with its place in the file (or in the server's
/// `tools/list` result).
struct Linted {
    origin: String,
    /// The file as a URI reference, for SARIF; none for standard input or a server.
    uri: Option<String>,
    tools: usize,
    findings: Vec<(Finding, Place)>,
}

pub async fn run(mut args: LintArgs) -> Result<ExitCode> {
    // A language model is built only for the judge: lint reads no model otherwise.
    let judging = args.chain.judge || args.chain.judge_threshold.is_some() || args.calibrate_judge;
    let setup = match judging {
        true => {
            args.chain.judge = true;
            Some(Setup::from_args(&args.chain, tool_mediator::llm::Task::Enhance).await?)
        }
        false => None,
    };
    let judge = setup.as_ref().and_then(Setup::judge);
    if judging && judge.is_none() {
        anyhow::bail!("the judge asks a language model: configure one (`llm_provider`) or give `--llm`");
    }
    if let (true, Some(judge), Some(setup)) = (args.calibrate_judge, judge, &setup) {
        let code = calibrate(&args, judge).await?;
        setup.finish();
        return Ok(code);
    }
    let lint = async |tools: &[tool_mediator::Tool]| match judge {
        Some(judge) => lint::judged(tools, judge).await,
        None => lint::lint(tools),
    };
    let mut linted = Vec::new();
    if args.server.server {
        let (origin, probed) = server_tools(&args.server).await?;
        let positions = probed.positions();
        let mut findings: Vec<(Finding, Place)> = lint(&probed.tools)
            .await
            .into_iter()
            .map(|mut finding| {
                finding.index = positions[finding.index];
                let field = if finding.field.is_empty() { String::new() } else { format!("/{}", finding.field) };
                let place = Place::Pointer(format!("/tools/{}{field}", finding.index));
                (finding, place)
            })
            .collect();
        // A tool nobody could read was checked by nobody: that fails the lint.
        for unreadable in &probed.unreadable {
            let finding = lint::unreadable(unreadable.index, &unreadable.name, &unreadable.reason);
            findings.push((finding, Place::Pointer(format!("/tools/{}", unreadable.index))));
        }
        findings.sort_by_key(|(finding, _)| finding.index);
        let tools = probed.tools.len() + probed.unreadable.len();
        linted.push(Linted { origin, uri: None, tools, findings });
    }
    for origin in if args.server.server { Vec::new() } else { manifest::expand_inputs(&args.input.inputs)? } {
        let (manifest, _) = manifest::read(origin, args.input.max_input_size)?;
        let findings = lint(&manifest.tools)
            .await
            .into_iter()
            .map(|finding| {
                let place = manifest.place_of(finding.index, &finding.field);
                (finding, place)
            })
            .collect();
        let uri = match &manifest.origin {
            Origin::File(path) => Some(artifact_uri(path)),
            Origin::Stdin => None,
        };
        linted.push(Linted { origin: manifest.origin.to_string(), uri, tools: manifest.tools.len(), findings });
    }
    let text = match args.format {
        LintFormat::Text => text(&linted),
        LintFormat::Json => serde_json::to_string_pretty(&json(&linted))? + "\n",
        LintFormat::Sarif => serde_json::to_string_pretty(&sarif(&linted))? + "\n",
    };
    output::print(&text)?;
    if let Some(setup) = &setup {
        setup.finish();
    }
    let threshold = match args.fail_on {
        FailOn::Never => return Ok(ExitCode::SUCCESS),
        FailOn::Note => Severity::Note,
        FailOn::Warning => Severity::Warning,
        FailOn::Error => Severity::Error,
    };
    let failed = linted.iter().flat_map(|linted| &linted.findings).any(|(finding, _)| finding.severity >= threshold);
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// One line a finding. What comes from the manifest (names, texts, pointers, a file's name)
/// is printed with control, invisible and bidirectional characters escaped: a hostile tool
/// name cannot move the cursor, recolour the terminal or reorder the line.
fn text(linted: &[Linted]) -> String {
    let mut out = String::new();
    let mut counts = [0usize; 3];
    for Linted { origin, findings, .. } in linted {
        for (finding, place) in findings {
            counts[finding.severity as usize] += 1;
            let line = format!(
                "{origin}{place}: {}[{}] `{}`: {}",
                finding.severity, finding.rule, finding.tool, finding.message
            );
            let _ = writeln!(out, "{}", tool_mediator::screen::printable(&line));
        }
    }
    let tools: usize = linted.iter().map(|linted| linted.tools).sum();
    let _ = writeln!(
        out,
        "{}, {}: {}, {}, {}",
        counted(linted.len(), "manifest"),
        counted(tools, "tool"),
        counted(counts[2], "error"),
        counted(counts[1], "warning"),
        counted(counts[0], "note")
    );
    out
}

/// `1 tool`, `2 tools`.
fn counted(count: usize, noun: &str) -> String {
    match count {
        1 => format!("1 {noun}"),
        _ => format!("{count} {noun}s"),
    }
}

/// The place as a JSON pointer, or the line of a JSON Lines file.
fn place_json(place: &Place) -> Value {
    match place {
        Place::Pointer(pointer) => json!({"pointer": pointer}),
        Place::Line(line) | Place::At { line, .. } => json!({"line": line}),
    }
}

fn json(linted: &[Linted]) -> Value {
    let findings: Vec<Value> = linted
        .iter()
        .flat_map(|Linted { origin, findings, .. }| {
            findings.iter().map(move |(finding, place)| {
                let mut value = json!({
                    "file": origin,
                    "place": place_json(place),
                    "rule": finding.rule,
                    "severity": finding.severity.name(),
                    "tool": finding.tool,
                    "message": finding.message,
                });
                if !finding.evidence.is_empty() {
                    value["evidence"] = evidence_json(&finding.evidence);
                }
                value
            })
        })
        .collect();
    json!({"findings": findings})
}

/// What a poisoning finding rests on: each piece's kind, field, span (bytes of the field's
/// text) and text.
fn evidence_json(evidence: &[tool_mediator::screen::Finding]) -> Value {
    let pieces = evidence.iter().map(|piece| {
        json!({
            "kind": piece.kind.id(),
            "what": piece.kind.what(),
            "field": piece.field,
            "span": [piece.span.start, piece.span.end],
            "text": piece.excerpt,
            "points": piece.points,
        })
    });
    Value::Array(pieces.collect())
}

/// A file as a SARIF artifact URI: a relative path stays a relative reference, an absolute one
/// becomes a `file:` URI; every byte but the unreserved ones and `/` is percent-encoded
/// (`my tools.json` -> `my%20tools.json`).
fn artifact_uri(path: &std::path::Path) -> String {
    let mut uri = String::new();
    if path.is_absolute() {
        uri.push_str(if cfg!(windows) { "file:///" } else { "file://" });
    }
    for &byte in path.as_os_str().as_encoded_bytes() {
        match byte {
            b'\\' if cfg!(windows) => uri.push('/'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => uri.push(byte as char),
            _ => {
                let _ = write!(uri, "%{byte:02X}");
            }
        }
    }
    uri
}

/// SARIF 2.1.0: one run, the rules with their descriptions, each finding with its JSON pointer
/// as a logical location, at its file when it has one (a line only for JSON Lines, the one
/// format whose findings know their line).
fn sarif(linted: &[Linted]) -> Value {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|rule| {
            json!({
                "id": rule.id,
                "shortDescription": {"text": rule.summary},
                "help": {"text": format!("{} Example: {}", rule.summary, rule.example)},
                "defaultConfiguration": {"level": rule.severity.name()},
            })
        })
        .collect();
    let results: Vec<Value> = linted
        .iter()
        .flat_map(|Linted { uri, findings, .. }| {
            findings.iter().map(move |(finding, place)| {
                let mut location = json!({});
                if let Some(uri) = uri {
                    let mut physical = json!({"artifactLocation": {"uri": uri}});
                    if let Place::Line(line) | Place::At { line, .. } = place {
                        physical["region"] = json!({"startLine": line});
                    }
                    location["physicalLocation"] = physical;
                }
                if let Place::Pointer(pointer) = place {
                    location["logicalLocations"] = json!([{"fullyQualifiedName": pointer, "kind": "member"}]);
                }
                let mut result = json!({
                    "ruleId": finding.rule,
                    "ruleIndex": RULES.iter().position(|rule| rule.id == finding.rule),
                    "level": finding.severity.name(),
                    "message": {"text": format!("`{}`: {}", finding.tool, finding.message)},
                    "locations": [location],
                });
                if !finding.evidence.is_empty() {
                    result["properties"] = json!({"evidence": evidence_json(&finding.evidence)});
                }
                result
            })
        })
        .collect();
    json!({
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{
            "tool": {"driver": {
                "name": "tool-mediator",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/tool-mediator/tool-mediator",
                "rules": rules,
            }},
            "results": results,
        }],
    })
}
