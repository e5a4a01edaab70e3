//! `cargo bench -p tool-mediator --bench search`: the search index over 1,000 tools (real
//! github-mcp-server tools enhanced by the rules, each name and schema marked with its number, so
//! each real tool's text comes about nine times): building it (target under 5 ms), and over the
//! 117 real tools once each; answering a query (target under 100 µs); and a whole `search_tools`
//! call through a session (the query, the visible tools' best five selected, their schemas
//! written into the answer), by words alone and by words and meaning (an embedding model's
//! 768-dimensional vectors for every tool and the query, warm in the cache: the cosines of the
//! query with 1,000 tools, a second ranking, the two fused; target under 5 ms).

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

/// An embedding server on 127.0.0.1 for the benchmark (wiremock): each text's words hashed into
/// 768 dimensions, as nomic-embed-text-v1.5's vectors are long. Asked only to fill the cache.
async fn embedding_server() -> wiremock::MockServer {
    let server = wiremock::MockServer::start().await;
    let respond = |request: &wiremock::Request| {
        let body: Value = serde_json::from_slice(&request.body).expect("JSON");
        let data: Vec<Value> = body["input"]
            .as_array()
            .expect("texts")
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let mut vector = vec![0.01f32; 768];
                for word in text.as_str().unwrap_or_default().split_whitespace() {
                    let slot =
                        word.bytes().fold(7usize, |hash, byte| hash.wrapping_mul(31).wrapping_add(byte as usize));
                    vector[slot % 768] += 1.0;
                }
                json!({"index": index, "embedding": vector})
            })
            .collect();
        wiremock::ResponseTemplate::new(200).set_body_json(json!({"data": data}))
    };
    wiremock::Mock::given(wiremock::matchers::method("POST")).respond_with(respond).mount(&server).await;
    server
}

/// [`session_search_1000`] ranking by meaning too, every vector warm in the cache.
#[divan::bench(args = QUERIES)]
fn session_search_1000_by_meaning(bencher: Bencher, query: &str) {
    use tool_mediator::cache::{Cache, MemoryStore};
    use tool_mediator::llm::{LlmClient, Provider};
    use tool_mediator::search::meaning::Embedder;
    let runtime =
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("a runtime");
    let server = runtime.block_on(embedding_server());
    let client = LlmClient::new(Provider::OpenAiCompatible, "nomic-embed-text-v1.5", Some(server.uri()), None);
    let cache = Arc::new(Cache::new(MemoryStore::default(), std::time::Duration::from_secs(3600)));
    let embedder = Arc::new(Embedder::new(client, Some(cache)));
    let mediator = Arc::new(Mediator::builder().transformer(RuleTransformer::new()).build());
    let policy = DisclosureMode::Both.apply(SessionPolicy::mediated(5), 5, WHOLE_BELOW);
    let policy = SessionPolicy { embedder: Some(embedder), ..policy };
    let session = Session::new(mediator, ToolContext::new("bench", SourceType::Api), policy);
    let tools = github::tools(1_000);
    runtime.block_on(session.list_tools(&tools, None)).expect("a listing");
    let arguments: Map<String, Value> = json!({"query": query}).as_object().cloned().expect("an object");
    let search = || runtime.block_on(session.route_call("search_tools", divan::black_box(arguments.clone())));
    // The tools are read in the background: searched until they are, and the query once.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let Route::Local(found) = search() else { panic!("search_tools is the session's own") };
        if found["structuredContent"]["rankedBy"] == "words and meaning" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the tools were not read: {found}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let asked = runtime.block_on(server.received_requests()).map_or(0, |requests| requests.len());
    bencher.bench_local(search);
    let after = runtime.block_on(server.received_requests()).map_or(0, |requests| requests.len());
    assert_eq!(asked, after, "warm: the model is not asked while timed");
}
