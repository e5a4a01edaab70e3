//! `cargo bench -p tool-mediator --bench session`: `list_tools` for 1,000 upstream tools with a
//! warm session (the upstream list unchanged since the last listing; target under 1 ms, the
//! seed's budget for a `tools/list` answer), and `route_call`.

use std::sync::{Arc, LazyLock};

use divan::Bencher;
use serde_json::Map;
use tool_mediator::session::{Session, SessionPolicy};
use tool_mediator::{Mediator, RuleTransformer, SourceType, Tool, ToolContext};

#[path = "data/github.rs"]
mod github;

fn main() {
    divan::main();
}

struct Warm {
    session: Session,
    tools: Vec<Tool>,
    runtime: tokio::runtime::Runtime,
}

static WARM: LazyLock<Warm> = LazyLock::new(|| {
    let mediator = Arc::new(Mediator::builder().transformer(RuleTransformer::new()).build());
    let session = Session::new(mediator, ToolContext::new("bench", SourceType::Api), SessionPolicy::mediated(5));
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let tools = github::tools(1_000);
    runtime.block_on(session.list_tools(&tools, None)).expect("lists");
    Warm { session, tools, runtime }
});

#[divan::bench]
fn list_tools_1000_warm(bencher: Bencher) {
    let warm = &*WARM;
    bencher
        .bench(|| warm.runtime.block_on(warm.session.list_tools(divan::black_box(&warm.tools), None)).expect("lists"));
}

#[divan::bench]
fn route_call(bencher: Bencher) {
    let warm = &*WARM;
    let name = warm.tools[500].name.clone();
    bencher.bench(|| warm.runtime.block_on(warm.session.route_call(divan::black_box(&name), Map::new())));
}
