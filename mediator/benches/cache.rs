//! `cargo bench -p tool-mediator --bench cache`: the cache on the path of a run. A warm-cache
//! `enhance` of 1,000 tools through `CachedTransformer` over sled (target: under 10 ms), and
//! the cost of one get and one put.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use divan::Bencher;

use tool_mediator::cache::{Cache, CachedTransformer, SledStore};
use tool_mediator::{Answer, Mediator, SourceType, Tool, ToolContext, ToolTransformer, TransformError};

#[path = "data/github.rs"]
mod github;

fn main() {
    divan::main();
}

/// Stands in for the language model: describes every tool. Only the cold run calls it.
struct Describer;

#[async_trait]
impl ToolTransformer for Describer {
    fn name(&self) -> &str {
        "llm"
    }
    fn priority(&self) -> i32 {
        50
    }
    async fn transform(&self, tools: &[Tool], _: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        Ok(tools
            .iter()
            .enumerate()
            .map(|(i, t)| Answer::proposing(i, t, &t.clone().with_description("Described."), 0.9))
            .collect())
    }
}

struct Warm {
    _dir: tempfile::TempDir,
    cache: Arc<Cache>,
    mediator: Mediator,
    tools: Vec<Tool>,
    runtime: tokio::runtime::Runtime,
}

static WARM: LazyLock<Warm> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cache = Arc::new(Cache::new(
        SledStore::open(&dir.path().join("cache")).expect("sled opens"),
        Duration::from_secs(3600),
    ));
    let mediator = Mediator::builder().transformer(CachedTransformer::new(Describer, cache.clone())).build();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let tools = github::tools(1_000);
    let context = ToolContext::new("bench", SourceType::Web);
    runtime.block_on(mediator.enhance(tools.clone(), &context));
    Warm { _dir: dir, cache, mediator, tools, runtime }
});

#[divan::bench]
fn warm_enhance_1000_tools(bencher: Bencher) {
    let warm = &*WARM;
    let context = ToolContext::new("bench", SourceType::Web);
    bencher
        .with_inputs(|| warm.tools.clone())
        .bench_values(|tools| warm.runtime.block_on(warm.mediator.enhance(tools, &context)));
}

#[divan::bench]
fn cache_get(bencher: Bencher) {
    let warm = &*WARM;
    warm.cache.put(b"bench-key", &[7u8; 2048]);
    bencher.bench(|| warm.cache.get(divan::black_box(b"bench-key")));
}

#[divan::bench]
fn cache_put(bencher: Bencher) {
    let warm = &*WARM;
    let value = [7u8; 2048];
    let mut n = 0u64;
    bencher.bench_local(|| {
        n += 1;
        warm.cache.put(&n.to_be_bytes(), divan::black_box(&value));
    });
}
