//! The real language model in the loop: Qwen2.5-Coder-1.5B-Instruct on llama.cpp's own server
//! (`tests/peers/model`), asked by the binary as a user asks a local server. Only with
//! `TOOL_MEDIATOR_MODEL=1` (`.ci/run` sets it under CI); a test that needs the model says so
//! and passes without it. A CPU answers in seconds a tool: the tools here are few, and no test
//! asserts a duration.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};
use tool_mediator_tests::{RealModel, real_model, run_with, stderr};

/// `command` of `file` through the real model, as a user runs it against a local server (the
/// URL with `/v1`, as Ollama and llama.cpp print it), with the cache in `cache`.
fn with_model(model: &RealModel, dir: &Path, command: &str, file: &Path, cache: &Path, extra: &[&str]) -> Output {
    let url = format!("{}/v1", model.url);
    let mut args = vec![
        command,
        file.to_str().unwrap(),
        "--llm",
        "openai-compatible",
        "--llm-url",
        &url,
        "--model",
        model.name,
        "--cache-dir",
        cache.to_str().unwrap(),
        // A loaded CI machine may take minutes a tool; no figure here depends on the time.
        "--llm-deadline",
        "300s",
    ];
    args.extend_from_slice(extra);
    run_with(dir, &args, None, &[])
}

/// `enhance` of `page` through the real model, with its report.
fn enhance(model: &RealModel, dir: &Path, page: &Path, cache: &Path, extra: &[&str]) -> Output {
    with_model(model, dir, "enhance", page, cache, &[&["--report"][..], extra].concat())
}

fn provenance(tool: &Value) -> &Value {
    &tool["_meta"]["tool-mediator/provenance"]
}

fn requests(output: &Output) -> String {
    let text = stderr(output);
    text.lines().find(|line| line.starts_with("llm: ")).unwrap_or_default().to_owned()
}

/// The seed's page (cryptic names, a missing schema) documented by the real model: its names
/// and descriptions land in the output with provenance naming the model, a tool that takes
/// nothing though its name says it does is given parameters, a second run asks the model
/// nothing, and a changed tool costs one request.
#[test]
#[cfg_attr(no_model, ignore = "asks the real model: TOOL_MEDIATOR_MODEL=1 (tests/peers/model/install)")]
fn the_seed_page_is_documented_by_the_model_once() {
    let Some(model) = real_model() else { return };
    let _turn = model.turn();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("example.com.json");
    let tools = |gets_user: &str| {
        json!({"tools": [
            {"name": "gt_usr", "description": gets_user, "inputSchema": {"type": "object"}},
            {"name": "upd_prf", "description": "update profile", "inputSchema": {"type": "object"}},
            {"name": "search", "description": "search", "inputSchema": {}}
        ]})
    };
    fs::write(&page, tools("gets user").to_string()).unwrap();
    let cache = dir.path().join("cache");
    // The curated overrides know the seed's page: left out, so the model is asked.
    let first = enhance(model, dir.path(), &page, &cache, &["--no-builtin-overrides"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let out: Value = serde_json::from_slice(&first.stdout).unwrap();
    let listed = out["tools"].as_array().unwrap();
    assert_eq!(listed.len(), 3);
    let by_source = |name: &str| {
        listed.iter().find(|tool| provenance(tool)["originalName"] == name || tool["name"] == name).unwrap()
    };
    let user = by_source("gt_usr");
    assert_eq!(user["name"], "get_user", "{}", stderr(&first));
    assert_eq!(provenance(user)["model"], model.name, "the provenance names the model");
    assert_eq!(provenance(user)["enhancedBy"], "cached-llm");
    for tool in listed {
        // What it wrote is read in the README's sample; here, that it is the model's.
        assert_eq!(provenance(tool)["model"], model.name, "{tool}");
        assert!(provenance(tool)["inferred"].as_array().unwrap().contains(&json!("description")), "{tool}");
    }
    let search = by_source("search");
    let parameters = search["inputSchema"]["properties"].as_object().unwrap();
    assert!(!parameters.is_empty(), "`search` is given parameters: {search}");
    assert!(provenance(search)["inferred"].as_array().unwrap().contains(&json!("inputSchema")));
    assert!(requests(&first).contains("(0 failed)"), "{}", stderr(&first));

    let second = enhance(model, dir.path(), &page, &cache, &["--no-builtin-overrides"]);
    assert!(second.status.success(), "{}", stderr(&second));
    assert_eq!(second.stdout, first.stdout, "the second run reads the cache");
    assert!(requests(&second).starts_with("llm: 0 requests"), "{}", stderr(&second));

    fs::write(&page, tools("gets one user").to_string()).unwrap();
    let third = enhance(model, dir.path(), &page, &cache, &["--no-builtin-overrides"]);
    assert!(third.status.success(), "{}", stderr(&third));
    assert!(
        requests(&third).starts_with("llm: 1 request "),
        "only the changed tool is asked about: {}",
        stderr(&third)
    );
}

/// Auto-grouping: with the rules left out, `categorize` files the tools under the real model's
/// categories, tools that act on the same thing together.
#[test]
#[cfg_attr(no_model, ignore = "asks the real model: TOOL_MEDIATOR_MODEL=1 (tests/peers/model/install)")]
fn categorize_groups_the_tools_by_the_models_categories() {
    let Some(model) = real_model() else { return };
    let _turn = model.turn();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("tools.json");
    let tool = |name: &str, description: &str, parameter: &str| {
        json!({"name": name, "description": description,
               "inputSchema": {"type": "object", "properties": {parameter: {"type": "string"}}}})
    };
    let tools = json!({"tools": [
        tool("get_user", "Get a user by ID.", "id"),
        tool("delete_user", "Delete a user account.", "id"),
        tool("read_file", "Read a file from disk.", "path"),
        tool("write_file", "Write text to a file on disk.", "path"),
    ]});
    fs::write(&page, tools.to_string()).unwrap();
    let output = run_with(
        dir.path(),
        &[
            "categorize",
            page.to_str().unwrap(),
            "--no-rules",
            "--llm",
            "openai-compatible",
            "--llm-url",
            &model.url,
            "--model",
            model.name,
            "--no-cache",
            "--llm-deadline",
            "300s",
        ],
        None,
        &[],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let grouped: Value = serde_json::from_slice(&output.stdout).unwrap();
    let category_of = |name: &str| {
        let categories = grouped["categories"].as_object().unwrap();
        categories
            .iter()
            .find(|(_, tools)| tools.as_array().unwrap().iter().any(|tool| tool["name"] == name))
            .map(|(category, _)| category.clone())
            .unwrap()
    };
    assert_ne!(category_of("get_user"), "uncategorized", "{grouped}");
    assert_eq!(category_of("get_user"), category_of("delete_user"), "{grouped}");
    assert_eq!(category_of("read_file"), category_of("write_file"), "{grouped}");
    assert_ne!(category_of("get_user"), category_of("read_file"), "{grouped}");
}

/// The judge's odds through llama.cpp's own log-probabilities, as `lint --calibrate-judge`
/// reads them: a published poisoned tool the screen lets through (the development set, written by
/// others: it orders the model to call another tool first) is given clearly higher odds than a
/// real honest tool from the registry, and the second `lint` reads both from the cache. The gap, not a threshold, is
/// what is asserted: a threshold is calibrated on hundreds of tools (`tests/poisoning.rs`).
#[test]
#[cfg_attr(no_model, ignore = "asks the real model: TOOL_MEDIATOR_MODEL=1 (tests/peers/model/install)")]
fn the_judge_gives_a_poisoned_tool_higher_odds_than_an_honest_one() {
    let Some(model) = real_model() else { return };
    let _turn = model.turn();
    let find = |file: &str, wanted: &[(&str, &str)]| {
        let rows = tool_mediator_tests::json_lines(&tool_mediator_tests::eval_dir().join(file));
        let row = rows.into_iter().find(|row| wanted.iter().all(|(key, value)| row[*key] == *value)).unwrap();
        json!({"name": row["name"], "description": row["description"]})
    };
    let poisoned = find("poisoning/dev-3/poisoned.jsonl", &[("id", "h-16d048a3e8")]);
    let honest = find("mcp_tool_names_toolsdk.jsonl", &[("package", "dart-mcp-server"), ("name", "get_folder")]);
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mut odds = Vec::new();
    for tool in [&poisoned, &honest] {
        let file = dir.path().join(format!("{}.json", tool["name"].as_str().unwrap()));
        fs::write(&file, json!({"tools": [tool]}).to_string()).unwrap();
        let calibrate = || with_model(model, dir.path(), "lint", &file, &cache, &["--calibrate-judge"]);
        let first = calibrate();
        assert!(first.status.success(), "{}", stderr(&first));
        let printed = String::from_utf8_lossy(&first.stdout).into_owned();
        assert!(printed.contains("on 1 tools (1 asked"), "{printed}");
        let line = printed.lines().find(|line| line.starts_with("judge_threshold = ")).unwrap();
        odds.push(line["judge_threshold = ".len()..].split_whitespace().next().unwrap().parse::<f64>().unwrap());
        let again = calibrate();
        assert!(String::from_utf8_lossy(&again.stdout).contains("(0 asked"), "the odds are cached");
    }
    println!("odds: poisoned {:.4}, honest {:.4}", odds[0], odds[1]);
    assert!(odds[0] > odds[1] + 0.15, "poisoned {:.4}, honest {:.4}", odds[0], odds[1]);
}
