//! Measures the rules on `tests/data/eval` (real data written by others) and keeps floors so
//! the figures cannot silently fall. The README's figures come from this file:
//!
//! ```sh
//! cargo test -p tool-mediator-tests --test eval -- --nocapture
//! ```

use std::collections::BTreeMap;

use tool_mediator::{Json, Mediator, RuleTransformer, SourceType, Tool, ToolContext, schema};
use tool_mediator_tests::{eval_dir, external_eval_file, json_lines, percent};

fn enhance(tools: Vec<Tool>) -> Vec<tool_mediator::EnhancedTool> {
    let mediator = Mediator::builder().transformer(RuleTransformer::new()).build();
    let context = ToolContext::new("eval", SourceType::File);
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(mediator.enhance(tools, &context))
}

/// SCANL pairs: for each (identifier, abbreviation, expansion), does reading the identifier
/// expand that abbreviation, and to the right words? Names alone, no context.
#[test]
fn abbreviation_expansion_on_scanl() {
    let dir = eval_dir();
    let rows = json_lines(&dir.join("abbrev_pairs_scanl.jsonl"));
    let rules = RuleTransformer::new();
    let (mut made, mut correct) = (0, 0);
    for row in &rows {
        let identifier = row["identifier"].as_str().unwrap();
        let abbreviation = row["abbreviation"].as_str().unwrap().to_lowercase();
        let expected = row["expansion"].as_str().unwrap().to_lowercase();
        let reading = rules.read_name(identifier);
        let Some(position) = reading.words.iter().position(|word| *word == abbreviation) else {
            continue;
        };
        if let Some(expansion) = reading.expansion_of(position) {
            made += 1;
            if expansion == expected {
                correct += 1;
            }
        }
    }
    let precision = percent(correct, made);
    let recall = percent(correct, rows.len());
    println!(
        "SCANL abbreviations: {} pairs, {made} expansions made, {correct} correct: precision {precision:.1}%, recall {recall:.1}%",
        rows.len()
    );
    assert!(precision >= PRECISION_FLOOR, "expansion precision fell to {precision:.1}%");
    assert!(recall >= RECALL_FLOOR, "expansion recall fell to {recall:.1}%");
}

const PRECISION_FLOOR: f64 = 90.0;
const RECALL_FLOOR: f64 = 29.0;

/// Loyola oracle: does splitting give exactly the oracle's words?
#[test]
fn identifier_splitting_on_loyola_oracle() {
    // Not ours to redistribute (see tests/data/eval/README.md): measured where it is kept.
    let Some(path) = external_eval_file("idsplit_ludiso.tsv") else {
        println!(
            "Loyola identifier splitting: not run, idsplit_ludiso.tsv is not in the repository; set \
             TOOL_MEDIATOR_EVAL_DIR to a folder that holds it"
        );
        return;
    };
    let text = std::fs::read_to_string(path).unwrap();
    let rules = RuleTransformer::new();
    let (mut total, mut exact) = (0, 0);
    let mut misses = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let (identifier, split) = line.split_once('\t').expect("identifier<TAB>split");
        let expected: Vec<String> = split.split(',').map(|word| word.trim().to_lowercase()).collect();
        total += 1;
        let words = rules.read_name(identifier).words;
        if words == expected {
            exact += 1;
        } else if misses.len() < 15 {
            misses.push(format!("{identifier}: {words:?} vs {expected:?}"));
        }
    }
    let accuracy = percent(exact, total);
    println!(
        "Loyola identifier splitting: {exact} of {total} exact ({accuracy:.1}%); some misses:\n  {}",
        misses.join("\n  ")
    );
    assert!(accuracy >= SPLIT_FLOOR, "split accuracy fell to {accuracy:.1}%");
}

const SPLIT_FLOOR: f64 = 85.0;

/// 200 well-named real tools: the rules must leave every name, description and schema alone.
/// The 200 well-named real MCP tools, by the server that publishes them.
fn well_named_by_server() -> BTreeMap<String, Vec<Tool>> {
    let mut by_server: BTreeMap<String, Vec<Tool>> = BTreeMap::new();
    for row in json_lines(&eval_dir().join("mcp_tools_wellnamed.jsonl")) {
        let tool = Tool::new(row["name"].as_str().unwrap())
            .with_description(row["description"].as_str().unwrap_or_default())
            .with_input_schema(row["inputSchema"].clone());
        by_server.entry(row["server"].as_str().unwrap_or("").to_owned()).or_default().push(tool);
    }
    by_server
}

/// Tools are enhanced per server, as a real manifest would be.
#[test]
fn well_named_tools_come_out_unchanged() {
    let by_server = well_named_by_server();
    let (mut total, mut unchanged) = (0, 0);
    let mut changed = Vec::new();
    for tools in by_server.into_values() {
        let enhanced = enhance(tools.clone());
        for (before, after) in tools.iter().zip(&enhanced) {
            total += 1;
            let same = before.name == after.tool.name
                && before.description == after.tool.description
                && before.input_schema == after.tool.input_schema;
            if same {
                unchanged += 1;
            } else {
                changed.push(format!("{} -> {} / {:?}", before.name, after.tool.name, after.tool.description));
            }
        }
    }
    println!("well-named tools unchanged: {unchanged} of {total}");
    assert!(changed.is_empty(), "the rules changed well-named tools:\n{}", changed.join("\n"));
}

/// The same 200 well-named tools through the rules and the real language model
/// (`TOOL_MEDIATOR_MODEL=1`; on demand):
///
/// ```sh
/// TOOL_MEDIATOR_MODEL=1 cargo test -p tool-mediator-tests --test eval -- --ignored --nocapture
/// ```
///
/// Only the tools the rules leave weak reach the model. Their names must stay (a clear name is
/// never the model's to change); what it wrote of the rest is printed, to be read and judged.
#[test]
#[ignore = "asks the real model: TOOL_MEDIATOR_MODEL=1, --ignored"]
fn well_named_tools_keep_their_names_with_the_real_model() {
    use tool_mediator::llm::{LlmClient, LlmTransformer, Prompts, Provider};
    let Some(model) = tool_mediator_tests::real_model() else { return };
    let _turn = model.turn();
    let by_server = well_named_by_server();
    let client = LlmClient::new(Provider::OpenAiCompatible, model.name, Some(model.url.clone()), None);
    let llm = std::sync::Arc::new(
        LlmTransformer::new(client, Prompts::default()).deadline(std::time::Duration::from_secs(120)),
    );
    let mediator = Mediator::builder().transformer(RuleTransformer::new()).transformer(llm.clone()).build();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let started = std::time::Instant::now();
    let (mut total, mut kept, mut by_model) = (0, 0, Vec::new());
    for (server, tools) in by_server {
        let context = ToolContext::new(&server, SourceType::Api);
        let enhanced = runtime.block_on(mediator.enhance(tools.clone(), &context));
        for (before, after) in tools.iter().zip(&enhanced) {
            total += 1;
            kept += usize::from(before.name == after.tool.name);
            if after.model.is_some() {
                by_model.push(format!(
                    "    {} -> {}: {:?} (was {:?}){}",
                    before.name,
                    after.tool.name,
                    after.tool.description.as_deref().unwrap_or_default(),
                    before.description.as_deref().unwrap_or_default().chars().take(80).collect::<String>(),
                    if after.refused.is_empty() { String::new() } else { format!(" refused: {:?}", after.refused) }
                ));
            }
        }
    }
    let usage = llm.usage();
    println!(
        "well-named tools with the real model: names kept {kept} of {total}; {} answered by the model ({} requests, \
         {} failed, {} input and {} output tokens, {:.0} s):\n{}",
        by_model.len(),
        usage.requests,
        usage.failed_requests,
        usage.input_tokens,
        usage.output_tokens,
        started.elapsed().as_secs_f64(),
        by_model.join("\n")
    );
    assert_eq!(kept, total, "the model renamed a well-named tool");
}

/// 1,512 BFCL functions with non-standard types: every schema out of the chain is valid.
#[test]
fn bfcl_schemas_come_out_valid() {
    let dir = eval_dir();
    let rows = json_lines(&dir.join("bfcl_nonlive_functions.jsonl"));
    let tools: Vec<Tool> = rows
        .iter()
        .map(|row| {
            let mut tool = Tool::new(row["name"].as_str().unwrap());
            tool.description = row["description"].as_str().map(str::to_owned);
            tool.input_schema = row.get("parameters").cloned().map(Json::from);
            tool
        })
        .collect();
    let invalid_before =
        tools.iter().filter(|t| !t.input_schema_value().as_ref().is_some_and(schema::is_valid)).count();
    let enhanced = enhance(tools.clone());
    assert_eq!(enhanced.len(), tools.len());
    let valid = enhanced.iter().filter(|t| t.tool.input_schema_value().as_ref().is_some_and(schema::is_valid)).count();
    // BFCL repeats function names across its categories; in one batch the chain suffixes them.
    let spelled_out = enhanced
        .iter()
        .filter(|t| t.is_renamed() && !t.tool.name.starts_with(&format!("{}_", t.original_name)))
        .count();
    let by_rules = enhanced.iter().filter(|t| t.enhanced_by == "rules").count();
    println!(
        "BFCL schemas: {invalid_before} of {} invalid before, {valid} valid after ({:.1}%); {by_rules} answered by rules, {spelled_out} names spelled out",
        tools.len(),
        percent(valid, tools.len())
    );
    assert_eq!(valid, tools.len(), "every schema that leaves the mediator is valid");
}

/// 6,031 real MCP tool names: how many would the rules rename? Prints a sample to review.
#[test]
fn toolsdk_names_harm_survey() {
    let dir = eval_dir();
    let rows = json_lines(&dir.join("mcp_tool_names_toolsdk.jsonl"));
    let mut by_package: BTreeMap<String, Vec<Tool>> = BTreeMap::new();
    for row in &rows {
        let mut tool = Tool::new(row["name"].as_str().unwrap()).with_input_schema(schema::empty_object());
        tool.description = row["description"].as_str().map(str::to_owned);
        by_package.entry(row["package"].as_str().unwrap_or("").to_owned()).or_default().push(tool);
    }
    let (mut total, mut renamed, mut described) = (0, 0, 0);
    let mut sample = Vec::new();
    for tools in by_package.into_values() {
        let enhanced = enhance(tools.clone());
        for (before, after) in tools.iter().zip(&enhanced) {
            total += 1;
            if after.is_renamed() {
                renamed += 1;
                sample.push(format!(
                    "{} -> {}  ({})",
                    before.name,
                    after.tool.name,
                    before.description.as_deref().unwrap_or("").chars().take(60).collect::<String>()
                ));
            }
            if before.description != after.tool.description {
                described += 1;
            }
        }
    }
    println!(
        "toolsdk names: {renamed} of {total} renamed ({:.2}%), {described} descriptions written; renames:\n  {}",
        percent(renamed, total),
        sample.join("\n  ")
    );
    assert!(percent(renamed, total) <= RENAME_CEILING, "the rules rename {renamed} of {total} real names");
}

/// The issue's ceiling. Renames include source names the chain had to repair (`nasa/apod` is
/// not a valid MCP name): 13 of the 27 measured. A word three or more names of a list share is
/// the list's own and is not spelled out from context (`pl_*` in a plotting server, `sim` in a
/// simulator's), which took the figure from 48 (0.80%) to 27 (0.45%).
const RENAME_CEILING: f64 = 0.5;
