//! Measures the poisoning screen on `tests/data/eval` (real tools and public poisoned ones,
//! written by others) and keeps floors so the figures cannot silently fall. The README's
//! figures come from this file:
//!
//! ```sh
//! cargo test -p tool-mediator-tests --test poisoning -- --nocapture
//! ```
//!
//! The development data is five sets, `poisoning/dev` to `poisoning/dev-5` (the second to the
//! fifth were each a part kept aside first, scored once after tuning and tuned on since). The
//! part kept aside (`poisoning/heldout`) was gathered from other sources than all five, by
//! someone who did not tune the screen, and is scored only once the screen is tuned: the test
//! prints its figures, never its items, and `POISONING_TUNING=1` leaves it out altogether.

use std::path::Path;

use serde_json::Value;
use tool_mediator::Tool;
use tool_mediator::screen::{self, Verdict};
use tool_mediator_tests::{eval_dir, json_lines, percent, root};

/// A tool of a data set's row: its name, description and (where the row has one) input schema.
fn tool(row: &Value) -> Tool {
    let mut tool = Tool::new(row["name"].as_str().unwrap_or("tool"))
        .with_description(row["description"].as_str().unwrap_or_default());
    if row["inputSchema"].is_object() {
        tool = tool.with_input_schema(row["inputSchema"].clone());
    }
    tool
}

/// The tools of a data set, each screened in the listing of its set (as a session screens a
/// source's list).
fn verdicts(tools: &[Tool]) -> Vec<Verdict> {
    let siblings = tools.iter().map(|tool| tool.name.as_str()).collect();
    tools
        .iter()
        .map(|tool| screen::examine_in(tool, screen::Listing { siblings: Some(&siblings), others: None }))
        .collect()
}

/// How many of `tools` are flagged, how many of the others are in the grey zone (where a
/// language model, when one is configured, looks again), and a line for each flagged (or,
/// `missed`, each not).
fn flagged(tools: &[Tool], missed: bool) -> (usize, usize, Vec<String>) {
    let verdicts = verdicts(tools);
    let count = verdicts.iter().filter(|verdict| verdict.flagged()).count();
    let grey = verdicts.iter().filter(|verdict| verdict.grey()).count();
    let shown = tools
        .iter()
        .zip(&verdicts)
        .filter(|(_, verdict)| verdict.flagged() != missed)
        .map(|(tool, verdict)| format!("{}: {}", screen::printable(&tool.name), verdict.explanation()))
        .collect();
    (count, grey, shown)
}

fn set(path: &Path) -> Vec<Tool> {
    json_lines(path).iter().map(tool).collect()
}

/// One line of figures, and (`items`) the tools behind them.
fn report(what: &str, tools: &[Tool], poisoned: bool, items: bool) -> f64 {
    let (count, grey, shown) = flagged(tools, poisoned);
    let share = percent(count, tools.len());
    let verb = if poisoned { "caught" } else { "flagged" };
    println!("{what}: {count} of {} {verb} ({share:.1}%), {grey} more in the grey zone", tools.len());
    for line in shown.iter().filter(|_| items) {
        println!("  {}: {line}", if poisoned { "missed" } else { "flagged" });
    }
    share
}

/// The development sets, each with the share of its poisoned tools the screen catches at least
/// (each at its figure when tuning ended; the test lists the tools behind each). Their benign
/// hard cases are never flagged.
const DEVELOPMENT: [(&str, f64); 5] =
    [("dev", 85.0), ("dev-2", 95.5), ("dev-3", 52.0), ("dev-4", 54.5), ("dev-5", 68.2)];

#[test]
fn the_screen_catches_poisoned_tools_and_spares_real_ones() {
    let dir = eval_dir();
    // The project's own fixtures, written after public reports: every one is caught.
    let own: Vec<Tool> = json_lines(&root().join("tests/fixtures/poisoned.jsonl"))
        .into_iter()
        .map(|row| serde_json::from_value(row["tool"].clone()).unwrap())
        .collect();
    let own_caught = report("own fixtures (poisoned)", &own, true, true);
    let mut development = Vec::new();
    for (name, floor) in DEVELOPMENT {
        let set_dir = dir.join("poisoning").join(name);
        let caught = report(&format!("{name}, poisoned"), &set(&set_dir.join("poisoned.jsonl")), true, true);
        let benign =
            report(&format!("{name}, benign hard cases"), &set(&set_dir.join("benign_hard.jsonl")), false, true);
        development.push((name, floor, caught, benign));
    }
    let real: Vec<Tool> = json_lines(&dir.join("mcp_tool_names_toolsdk.jsonl")).iter().map(tool).collect();
    let real_flagged = report("real tools (toolsdk registry)", &real, false, true);
    let well_named = report("well-named tools", &set(&dir.join("mcp_tools_wellnamed.jsonl")), false, true);
    let heldout = dir.join("poisoning/heldout");
    if std::env::var_os("POISONING_TUNING").is_none() {
        let caught = report("kept aside, poisoned", &set(&heldout.join("poisoned.jsonl")), true, false);
        let benign = report("kept aside, benign hard cases", &set(&heldout.join("benign_hard.jsonl")), false, false);
        println!("kept aside: {caught:.1}% caught, {benign:.1}% of benign hard cases flagged");
        assert!(caught >= HELDOUT_CAUGHT_FLOOR, "kept aside: {caught:.1}% caught");
        assert!(benign <= HELDOUT_BENIGN_CEILING, "kept aside: {benign:.1}% of benign hard cases flagged");
    }
    assert_eq!(own_caught, 100.0, "every own fixture is caught");
    for (name, floor, caught, benign) in development {
        assert!(caught >= floor, "{name}: {caught:.1}% caught");
        assert_eq!(benign, 0.0, "{name}: {benign:.1}% of benign hard cases flagged");
    }
    assert!(real_flagged <= REAL_CEILING, "{real_flagged:.2}% of real tools flagged");
    assert_eq!(well_named, 0.0, "no well-named tool is flagged");
}

/// The part kept aside as first scored, after tuning: 33 of 48 caught, none of its 35 benign
/// hard cases flagged (the same on the screen before the round that preceded it). The floors
/// keep the figures from getting worse; they were not tuned towards.
const HELDOUT_CAUGHT_FLOOR: f64 = 68.7;
const HELDOUT_BENIGN_CEILING: f64 = 0.0;
/// The issue's ceiling: at most 1% of real tools flagged.
const REAL_CEILING: f64 = 1.0;
