//! The cache on a real redis-server (Debian's package, started by each test on a free port on
//! 127.0.0.1 and stopped after; a test without one is ignored (tests/build.rs), and fails
//! under TOOL_MEDIATOR_REDIS=1): records under a prefix and no other, the TTL as the keys' own expiry,
//! a listing looked up in one round trip, and a server that is gone, hangs or refuses the
//! password costing one warning, never the run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::Commands as _;
use tool_mediator::cache::{Cache, CacheStore, CacheUrl, CachedTransformer, KEPT_STALE_PREFIX, RedisStore};
use tool_mediator::{Answer, Mediator, SourceType, Tool, ToolContext, ToolTransformer, TransformError};

#[path = "redis_server.rs"]
#[allow(dead_code)]
mod redis_server;
use redis_server::RedisServer;

fn store(server: &RedisServer, prefix: &str) -> RedisStore {
    RedisStore::open(&CacheUrl::new(server.url()), prefix, None).expect("a Redis URL")
}

/// A plain connection to the server, to see what the store left there.
fn raw(server: &RedisServer, password: Option<&str>) -> redis::Connection {
    let url = match password {
        Some(password) => format!("redis://:{password}@127.0.0.1:{}/0", server.port()),
        None => server.url(),
    };
    redis::Client::open(url).unwrap().get_connection().unwrap()
}

/// What was logged while `work` ran on this thread.
fn logged<T>(work: impl FnOnce() -> T) -> (T, String) {
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Lines {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .finish();
    let value = tracing::subscriber::with_default(subscriber, work);
    let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    (value, text)
}

fn warnings(log: &str) -> Vec<&str> {
    log.lines().filter(|line| line.contains("WARN")).collect()
}

#[test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
fn records_round_trip_under_their_prefix_and_no_other() {
    let server = RedisServer::start().expect(redis_server::MISSING);
    let team = Cache::new(store(&server, "team-a:"), Duration::from_secs(3600));
    let other = Cache::new(store(&server, "team-b:"), Duration::from_secs(3600));
    let mut connection = raw(&server, None);
    let _: () = connection.set("unrelated", "kept").unwrap();

    team.put(b"k1", b"one");
    team.put_many(&[(b"k2".to_vec(), b"two".to_vec()), (vec![0, 255, b'*'], b"binary".to_vec())]);
    other.put(b"k1", b"theirs");
    assert_eq!(team.get(b"k1").as_deref(), Some(&b"one"[..]));
    assert_eq!(other.get(b"k1").as_deref(), Some(&b"theirs"[..]));
    let found = team.get_many(&[b"k2", b"missing", &[0, 255, b'*'], b"k1"]);
    let found: Vec<Option<&[u8]>> = found.iter().map(Option::as_deref).collect();
    assert_eq!(found, [Some(&b"two"[..]), None, Some(&b"binary"[..]), Some(&b"one"[..])]);

    // Each sees its own keys only, the prefix taken off.
    let mut keys: Vec<Vec<u8>> = team_store_keys(&server, "team-a:");
    keys.sort();
    assert_eq!(keys, [vec![0, 255, b'*'], b"k1".to_vec(), b"k2".to_vec()]);
    assert_eq!(team.stats().unwrap().entries, 3);
    assert_eq!(other.stats().unwrap().entries, 1);

    // A key of another type under the prefix reads as a miss, and a put replaces it.
    let _: () = connection.rpush("team-a:listed", "x").unwrap();
    let (value, log) = logged(|| team.get(b"listed"));
    assert_eq!(value, None);
    assert!(warnings(&log).is_empty(), "{log}");
    team.put(b"listed", b"now a string");
    assert_eq!(team.get(b"listed").as_deref(), Some(&b"now a string"[..]));

    // Clearing one prefix leaves the other and the server's other keys.
    team.clear().unwrap();
    assert_eq!(team.stats().unwrap().entries, 0);
    assert_eq!(other.get(b"k1").as_deref(), Some(&b"theirs"[..]));
    let kept: String = connection.get("unrelated").unwrap();
    assert_eq!(kept, "kept");
}

fn team_store_keys(server: &RedisServer, prefix: &str) -> Vec<Vec<u8>> {
    store(server, prefix).records().unwrap().into_iter().map(|(key, _)| key).collect()
}

#[test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
fn the_ttl_is_the_keys_own_expiry_but_a_last_good_copy_has_none() {
    let server = RedisServer::start().expect(redis_server::MISSING);
    let cache = Cache::new(store(&server, "t:"), Duration::from_millis(400));
    let stale = [KEPT_STALE_PREFIX, b"overrides-url:https://example.org/o.json"].concat();
    cache.put(b"answer", b"fresh for a moment");
    cache.put(&stale, b"the last good copy");
    let mut connection = raw(&server, None);
    let ttl: i64 = connection.pttl("t:answer").unwrap();
    assert!((1..=400).contains(&ttl), "the key's own expiry is the cache's TTL: {ttl} ms");
    let stale_key = [&b"t:"[..], &stale].concat();
    let stale_ttl: i64 = connection.pttl(&stale_key).unwrap();
    assert_eq!(stale_ttl, -1, "a last good copy outlives its TTL");

    std::thread::sleep(Duration::from_millis(600));
    let exists: bool = connection.exists("t:answer").unwrap();
    assert!(!exists, "Redis let go of the expired answer itself");
    assert_eq!(cache.get(b"answer"), None);
    assert_eq!(cache.get_stale(&stale), Some((b"the last good copy".to_vec(), false)), "expired, still served");
    assert_eq!(cache.prune().unwrap(), 0, "prune keeps last good copies");
}

/// Stands in for the language model: describes every tool it is asked about, and counts them.
struct Describer(AtomicUsize);

#[async_trait]
impl ToolTransformer for Describer {
    fn name(&self) -> &str {
        "llm"
    }
    fn priority(&self) -> i32 {
        50
    }
    async fn transform(&self, tools: &[Tool], _: &ToolContext) -> Result<Vec<Answer>, TransformError> {
        self.0.fetch_add(tools.len(), Ordering::Relaxed);
        Ok(tools
            .iter()
            .enumerate()
            .map(|(index, tool)| Answer::proposing(index, tool, &tool.clone().with_description("Described."), 0.9))
            .collect())
    }
}

fn commands_run(connection: &mut redis::Connection, command: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(connection).unwrap();
    let line = info.lines().find(|line| line.starts_with(&format!("cmdstat_{command}:")));
    line.and_then(|line| line.split("calls=").nth(1))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap())
}

#[tokio::test(flavor = "current_thread")]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn a_listing_is_looked_up_in_two_round_trips() {
    let server = RedisServer::start().expect(redis_server::MISSING);
    let cache = Arc::new(Cache::new(store(&server, "l:"), Duration::from_secs(3600)));
    let describer = Arc::new(Describer(AtomicUsize::new(0)));
    let mediator = Mediator::builder().transformer(CachedTransformer::new(describer.clone(), cache)).build();
    let tools: Vec<Tool> = (0..1_200).map(|n| Tool::new(format!("tool_{n}"))).collect();
    let context = ToolContext::new("bench", SourceType::Web);
    let mut connection = raw(&server, None);

    let cold = mediator.enhance(tools.clone(), &context).await;
    assert_eq!(describer.0.load(Ordering::Relaxed), 1_200);
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut connection).unwrap();
    let warm = mediator.enhance(tools.clone(), &context).await;
    assert_eq!(describer.0.load(Ordering::Relaxed), 1_200, "the warm run asks nothing");
    let described = |tools: &[tool_mediator::EnhancedTool]| {
        tools.iter().map(|tool| (tool.tool.description.clone(), tool.enhanced_by.clone())).collect::<Vec<_>>()
    };
    assert_eq!(described(&cold), described(&warm));
    assert_eq!(warm[0].tool.description.as_deref(), Some("Described."));
    // 1,200 keys: their sizes, sent together, then their values, sent together.
    let run = |connection: &mut redis::Connection, command| commands_run(connection, command);
    let counts = ["strlen", "getrange", "mget", "get"].map(|command| run(&mut connection, command));
    assert_eq!(counts, [1_200, 1_200, 0, 0]);

    let mut changed = tools;
    changed[7] = Tool::new("tool_7").with_description("A new description.");
    mediator.enhance(changed, &context).await;
    assert_eq!(describer.0.load(Ordering::Relaxed), 1_201, "a changed tool is asked about alone");
}

#[test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
fn a_server_killed_mid_run_costs_one_warning_and_is_used_again_when_back() {
    let mut server = RedisServer::start().expect(redis_server::MISSING);
    let cache = Cache::new(store(&server, "k:").retry_after(Duration::from_millis(200)), Duration::from_secs(3600));
    cache.put(b"before", b"1");
    assert_eq!(cache.get(b"before").as_deref(), Some(&b"1"[..]));

    server.stop();
    let ((), log) = logged(|| {
        let deadline = Instant::now() + Duration::from_millis(900);
        while Instant::now() < deadline {
            assert_eq!(cache.get(b"before"), None, "gone: a miss, not a failure");
            cache.put(b"during", b"2");
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let warned = warnings(&log);
    assert_eq!(warned.len(), 1, "one warning for the outage, however many calls:\n{log}");
    assert!(warned[0].contains(&format!("the cache at redis://127.0.0.1:{}/0 cannot be used", server.port())), "{log}");
    assert!(log.contains("still cannot be used"), "tried again after the wait:\n{log}");

    server.restart();
    let deadline = Instant::now() + Duration::from_secs(5);
    let (back, log) = logged(|| {
        loop {
            cache.put(b"after", b"3");
            if let Some(value) = cache.get(b"after") {
                return value;
            }
            assert!(Instant::now() < deadline, "the store is used again once the server is back");
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    assert_eq!(back, b"3");
    assert!(log.contains("answers again"), "{log}");
    assert!(warnings(&log).is_empty(), "{log}");
}

#[test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
fn a_server_that_hangs_costs_one_timeout_not_one_per_call() {
    let server = RedisServer::start().expect(redis_server::MISSING);
    let cache = Cache::new(store(&server, "h:").retry_after(Duration::from_secs(5)), Duration::from_secs(3600));
    cache.put(b"k", b"v");
    server.pause();
    let started = Instant::now();
    let (found, log) = logged(|| (0..200).map(|_| cache.get(b"k")).filter(Option::is_some).count());
    let took = started.elapsed();
    server.resume();
    assert_eq!(found, 0);
    assert!(took < Duration::from_millis(1_500), "one timeout of its own, then left alone: {took:?}");
    assert_eq!(warnings(&log).len(), 1, "{log}");
    assert!(log.contains("timed out") || log.contains("Resource temporarily unavailable"), "{log}");
}

#[test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
fn a_wrong_password_is_one_warning_that_never_shows_it() {
    let server = RedisServer::start_with_password("the-right-horse").expect(redis_server::MISSING);
    let wrong = format!("redis://:wrong-battery-staple@127.0.0.1:{}/0", server.port());
    let cache = Cache::new(RedisStore::open(&CacheUrl::new(&wrong), "p:", None).unwrap(), Duration::from_secs(60));
    let ((), log) = logged(|| {
        for _ in 0..20 {
            cache.put(b"k", b"v");
            assert_eq!(cache.get(b"k"), None);
        }
    });
    let warned = warnings(&log);
    assert_eq!(warned.len(), 1, "{log}");
    assert!(warned[0].contains(&format!("redis://:********@127.0.0.1:{}/0", server.port())), "{log}");
    assert!(!log.contains("wrong-battery-staple"), "{log}");
    let asked = RedisStore::open(&CacheUrl::new(&wrong), "p:", None).unwrap();
    let error = asked.records().unwrap_err();
    assert!(!format!("{error} {error:?} {asked:?}").contains("wrong-battery-staple"), "{error}");

    // The password from the environment's variable, when the URL has none; none at all is
    // refused by the server, the same way.
    let cache = Cache::new(
        RedisStore::open(&CacheUrl::new(server.url()), "p:", Some("the-right-horse")).unwrap(),
        Duration::from_secs(60),
    );
    cache.put(b"k", b"v");
    assert_eq!(cache.get(b"k").as_deref(), Some(&b"v"[..]));
    let exists: bool = raw(&server, Some("the-right-horse")).exists("p:k").unwrap();
    assert!(exists);
    let bare = Cache::new(store(&server, "p:"), Duration::from_secs(60));
    let (value, log) = logged(|| bare.get(b"k"));
    assert_eq!(value, None);
    assert_eq!(warnings(&log).len(), 1, "{log}");
}
