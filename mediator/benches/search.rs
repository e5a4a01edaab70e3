//! `cargo bench -p tool-mediator --bench search`: the search index over 1,000 tools (real
//! github-mcp-server tools enhanced by the rules, each name and schema marked with its number, so
//! each real tool's text comes about nine times): building it (target under 5 ms), and over the
//! 117 real tools once each; answering a query (target under 100 µs); and a whole `search_tools`
//! call through a session (the query, the visible tools' best five selected, their schemas
//! written into the answer).

use std::sync::{Arc, LazyLock};

use divan::Bencher;
use serde_json::{Map, Value, json};
use tool_mediator::search::{Document, ToolIndex};
use tool_mediator::session::{DisclosureMode, Route, Session, SessionPolicy, WHOLE_BELOW};
use tool_mediator::{EnhancedTool, Mediator, RuleTransformer, SourceType, ToolContext};

#[path = "data/github.rs"]
mod github;

fn main() {
    divan::main();
}

const QUERIES: [&str; 3] = ["merge a pull request", "list the open issues of a repository assigned to me", "gist"];

static ENHANCED: LazyLock<Vec<EnhancedTool>> = LazyLock::new(|| {
    let mediator = Mediator::builder().transformer(RuleTransformer::new()).build();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    runtime.block_on(mediator.enhance(github::tools(1_000), &ToolContext::new("bench", SourceType::Api)))
});

static INDEX: LazyLock<ToolIndex> = LazyLock::new(|| index(&ENHANCED));

fn index(tools: &[EnhancedTool]) -> ToolIndex {
    ToolIndex::new(tools.iter().map(|tool| Document { tool, server: None }))
}

#[divan::bench]
fn build_1000(bencher: Bencher) {
    let tools = &*ENHANCED;
    bencher.bench(|| index(divan::black_box(tools)));
}

/// The real github-mcp-server list, each tool once (no text repeated across copies).
#[divan::bench]
fn build_github_117(bencher: Bencher) {
    let tools = &ENHANCED[..117];
    bencher.bench(|| index(divan::black_box(tools)));
}

#[divan::bench(args = QUERIES)]
fn query_1000(bencher: Bencher, query: &str) {
    let index = &*INDEX;
    assert!(!index.search(query, 5).is_empty());
    bencher.bench(|| index.search(divan::black_box(query), 5));
}

/// `search_tools {query}` through a session of 1,000 tools in the default mode, listed once; the
/// index is built by the first call, before the timing.
#[divan::bench(args = QUERIES)]
fn session_search_1000(bencher: Bencher, query: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let mediator = Arc::new(Mediator::builder().transformer(RuleTransformer::new()).build());
    let policy = DisclosureMode::Both.apply(SessionPolicy::mediated(5), 5, WHOLE_BELOW);
    let session = Session::new(mediator, ToolContext::new("bench", SourceType::Api), policy);
    let tools = github::tools(1_000);
    runtime.block_on(session.list_tools(&tools, None)).expect("a listing");
    let arguments: Map<String, Value> = json!({"query": query}).as_object().cloned().expect("an object");
    let search = || runtime.block_on(session.route_call("search_tools", divan::black_box(arguments.clone())));
    let Route::Local(found) = search() else { panic!("search_tools is the session's own") };
    assert_eq!(found["structuredContent"]["tools"].as_array().map(Vec::len), Some(5), "{found}");
    bencher.bench_local(search);
}
