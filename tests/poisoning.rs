//! Measures the poisoning screen on `tests/data/eval` (real tools and public poisoned ones,
//! written by others) and keeps floors so the figures cannot silently fall. The README's
//! figures come from this file:
//!
//! ```sh
//! cargo test -p tool-mediator-tests --test poisoning -- --nocapture
//! ```
//!
//! The development data is three sets: `poisoning/dev`, `poisoning/dev-2` and `poisoning/dev-3`
//! (the second and third were each a part kept aside first, scored once after tuning and tuned
//! on since). The part kept aside (`poisoning/heldout`) was gathered from other sources than all
//! three, by someone who did not tune the screen, and is scored only once the screen is tuned:
//! the test prints its figures, never its items, and `POISONING_TUNING=1` leaves it out altogether.

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

#[test]
fn the_screen_catches_poisoned_tools_and_spares_real_ones() {
    let dir = eval_dir();
    // The project's own fixtures, written after public reports: every one is caught.
    let own: Vec<Tool> = json_lines(&root().join("tests/fixtures/poisoned.jsonl"))
        .into_iter()
        .map(|row| serde_json::from_value(row["tool"].clone()).unwrap())
        .collect();
    let own_caught = report("own fixtures (poisoned)", &own, true, true);
    let dev = dir.join("poisoning/dev");
    let dev_caught = report("development set, poisoned", &set(&dev.join("poisoned.jsonl")), true, true);
    let dev_benign = report("development set, benign hard cases", &set(&dev.join("benign_hard.jsonl")), false, true);
    let dev2 = dir.join("poisoning/dev-2");
    let dev2_caught = report("development set 2, poisoned", &set(&dev2.join("poisoned.jsonl")), true, true);
    let dev2_benign =
        report("development set 2, benign hard cases", &set(&dev2.join("benign_hard.jsonl")), false, true);
    let dev3 = dir.join("poisoning/dev-3");
    let dev3_caught = report("development set 3, poisoned", &set(&dev3.join("poisoned.jsonl")), true, true);
    let dev3_benign =
        report("development set 3, benign hard cases", &set(&dev3.join("benign_hard.jsonl")), false, true);
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
    assert!(dev_caught >= DEV_CAUGHT_FLOOR, "development set: {dev_caught:.1}% caught");
    assert!(dev_benign <= DEV_BENIGN_CEILING, "development set: {dev_benign:.1}% of benign hard cases flagged");
    assert!(dev2_caught >= DEV2_CAUGHT_FLOOR, "development set 2: {dev2_caught:.1}% caught");
    assert!(dev2_benign <= DEV_BENIGN_CEILING, "development set 2: {dev2_benign:.1}% of benign hard cases flagged");
    assert!(dev3_caught >= DEV3_CAUGHT_FLOOR, "development set 3: {dev3_caught:.1}% caught");
    assert!(dev3_benign <= DEV_BENIGN_CEILING, "development set 3: {dev3_benign:.1}% of benign hard cases flagged");
    assert!(real_flagged <= REAL_CEILING, "{real_flagged:.2}% of real tools flagged");
    assert_eq!(well_named, 0.0, "no well-named tool is flagged");
}

/// What the screen catches of the development sets it was tuned on (each at its figure when
/// tuning ended; the test lists the tools behind each), and flags of their benign hard cases
/// (none).
const DEV_CAUGHT_FLOOR: f64 = 85.0;
const DEV2_CAUGHT_FLOOR: f64 = 95.5;
const DEV3_CAUGHT_FLOOR: f64 = 51.0;
const DEV_BENIGN_CEILING: f64 = 0.0;
/// The part kept aside as first scored, after tuning (11 of 22, none of its 8 benign flagged;
/// 12 of 22 once a review's fixes were in): it keeps the figure from falling, and was not tuned
/// towards.
const HELDOUT_CAUGHT_FLOOR: f64 = 50.0;
const HELDOUT_BENIGN_CEILING: f64 = 0.0;
/// The issue's ceiling: at most 1% of real tools flagged.
const REAL_CEILING: f64 = 1.0;
