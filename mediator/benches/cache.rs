//! `cargo bench -p tool-mediator --bench cache`: the cache on the path of a run. A warm-cache
//! `enhance` of 1,000 tools through `CachedTransformer` over sled (target: under 10 ms) and, in
//! the same run, over Redis on 127.0.0.1 (target: under 3 times sled's; a redis-server of the
//! bench's own, or a line saying it is skipped where there is none); the cost of one get and one
//! put on each.

use std::any::Any;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use async_trait::async_trait;
use divan::Bencher;

use tool_mediator::cache::{Cache, CacheStore, CacheUrl, CachedTransformer, DEFAULT_PREFIX, RedisStore, SledStore};
use tool_mediator::{Answer, Mediator, SourceType, Tool, ToolContext, ToolTransformer, TransformError};

#[path = "data/github.rs"]
mod github;

#[path = "../../tests/redis_server.rs"]
#[allow(dead_code)]
mod redis_server;
use redis_server::RedisServer;

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
    /// What the store needs kept while it is used: its directory, its server.
    _held: Box<dyn Any + Send + Sync>,
    cache: Arc<Cache>,
    mediator: Mediator,
    tools: Vec<Tool>,
    runtime: tokio::runtime::Runtime,
}

/// A cache on `store` whose every answer for the 1,000 tools is in.
fn warm(store: impl CacheStore + 'static, held: Box<dyn Any + Send + Sync>) -> Warm {
    let cache = Arc::new(Cache::new(store, Duration::from_secs(3600)));
    let mediator = Mediator::builder().transformer(CachedTransformer::new(Describer, cache.clone())).build();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let tools = github::tools(1_000);
    let context = ToolContext::new("bench", SourceType::Web);
    runtime.block_on(mediator.enhance(tools.clone(), &context));
    Warm { _held: held, cache, mediator, tools, runtime }
}

static WARM: LazyLock<Warm> = LazyLock::new(|| {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SledStore::open(&dir.path().join("cache")).expect("sled opens");
    warm(store, Box::new(dir))
});

/// The same over a redis-server of the bench's own; `None` where there is none.
static WARM_REDIS: LazyLock<Option<Warm>> = LazyLock::new(|| {
    let server = RedisServer::start()?;
    let store = RedisStore::open(&CacheUrl::new(server.url()), DEFAULT_PREFIX, None).expect("a Redis URL");
    Some(warm(store, Box::new(server)))
});

fn warm_enhance(bencher: Bencher, warm: &Warm) {
    let context = ToolContext::new("bench", SourceType::Web);
    bencher
        .with_inputs(|| warm.tools.clone())
        .bench_values(|tools| warm.runtime.block_on(warm.mediator.enhance(tools, &context)));
}

fn cache_get(bencher: Bencher, warm: &Warm) {
    warm.cache.put(b"bench-key", &[7u8; 2048]);
    bencher.bench(|| warm.cache.get(divan::black_box(b"bench-key")));
}

fn cache_put(bencher: Bencher, warm: &Warm) {
    let value = [7u8; 2048];
    let mut n = 0u64;
    bencher.bench_local(|| {
        n += 1;
        warm.cache.put(&n.to_be_bytes(), divan::black_box(&value));
    });
}

#[divan::bench]
fn warm_enhance_1000_tools(bencher: Bencher) {
    warm_enhance(bencher, &WARM);
}

#[divan::bench]
fn warm_enhance_1000_tools_redis(bencher: Bencher) {
    if let Some(warm) = &*WARM_REDIS {
        warm_enhance(bencher, warm);
    }
}

#[divan::bench]
fn cache_get_sled(bencher: Bencher) {
    cache_get(bencher, &WARM);
}

#[divan::bench]
fn cache_get_redis(bencher: Bencher) {
    if let Some(warm) = &*WARM_REDIS {
        cache_get(bencher, warm);
    }
}

#[divan::bench]
fn cache_put_sled(bencher: Bencher) {
    cache_put(bencher, &WARM);
}

#[divan::bench]
fn cache_put_redis(bencher: Bencher) {
    if let Some(warm) = &*WARM_REDIS {
        cache_put(bencher, warm);
    }
}
