//! `cargo bench -p tool-mediator --bench search`: the search index over 1,000 tools (real
//! github-mcp-server tools, every fourth cryptic, enhanced by the rules, each schema marked with
//! its number): building it (target under 5 ms) and answering a query (target under 100 µs).

use std::sync::LazyLock;

use divan::Bencher;
use tool_mediator::search::{Document, ToolIndex};
use tool_mediator::{EnhancedTool, Mediator, RuleTransformer, SourceType, ToolContext};

#[path = "data/github.rs"]
mod github;

fn main() {
    divan::main();
}

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

#[divan::bench(args = ["merge a pull request", "list the open issues of a repository assigned to me", "gist"])]
fn query_1000(bencher: Bencher, query: &str) {
    let index = &*INDEX;
    assert!(!index.search(query, 5).is_empty());
    bencher.bench(|| index.search(divan::black_box(query), 5));
}
