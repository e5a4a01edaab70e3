//! The binary with its cache on a real redis-server (Debian's package, started by each test on a
//! free port on 127.0.0.1 and stopped after; without one a test is ignored (tests/build.rs), and fails
//! under TOOL_MEDIATOR_REDIS=1) and the language model on a real HTTP server on 127.0.0.1:
//! separate processes share answers, Redis keeps the TTL, a server that is gone or refuses the
//! password costs one warning and never the run, and a password is never printed.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};
use tool_mediator::cache::{Cache, CacheStore, CacheUrl, RedisStore};
use tool_mediator_tests::{run_with, stderr, stdout};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[path = "redis_server.rs"]
#[allow(dead_code)]
mod redis_server;
use redis_server::RedisServer;

const PASSWORD: &str = "correct-horse-battery-staple";

fn answer() -> Value {
    let entries: Vec<Value> = [("ChaScr", "ChangeScreen"), ("gt_usr", "get_user")]
        .iter()
        .map(|(name, new)| json!({"original_name": name, "name": new, "description": "Described by the model.", "confidence": 0.9}))
        .collect();
    json!({"choices": [{"message": {"role": "assistant", "content": json!({"tools": entries}).to_string()}}], "usage": {"prompt_tokens": 100, "completion_tokens": 20}})
}

async fn model() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(answer())).mount(&server).await;
    server
}

/// The questions the model was asked.
async fn requests(model: &MockServer) -> usize {
    tool_mediator_tests::questions(model).await.len()
}

/// A page of two tools; `changed` gives the second a new description.
fn manifest(dir: &Path, changed: bool) -> String {
    let path = dir.join("page.json");
    let description = if changed { "gets usr" } else { "gets user" };
    let tools = json!({"tools": [
        {"name": "ChaScr", "inputSchema": {"type": "object"}},
        {"name": "gt_usr", "description": description, "inputSchema": {"type": "object"}},
    ]});
    std::fs::write(&path, tools.to_string()).unwrap();
    path.to_str().unwrap().to_owned()
}

/// `enhance` with the model at `model`, in `dir`; `extra` flags and `env` as given.
fn enhance(model: &MockServer, dir: &Path, changed: bool, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let page = manifest(dir, changed);
    let uri = model.uri();
    let mut args = vec!["enhance", page.as_str(), "--llm", "openai-compatible", "--llm-url", uri.as_str()];
    args.extend_from_slice(extra);
    run_with(dir, &args, None, env)
}

fn enhanced_names(output: &Output) -> Vec<String> {
    assert!(output.status.success(), "{}", stderr(output));
    let document: Value = serde_json::from_slice(&output.stdout).unwrap();
    document["tools"].as_array().unwrap().iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect()
}

/// The warnings that the cache cannot be used (a debug log says so again at each later try).
fn cache_warnings(output: &Output) -> usize {
    stderr(output).lines().filter(|line| line.contains("WARN") && line.contains("cannot be used")).count()
}

#[tokio::test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn a_second_process_asks_nothing_and_a_changed_tool_costs_one_request() {
    let redis = RedisServer::start().expect(redis_server::MISSING);
    let model = model().await;
    let (first_dir, second_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let url = redis.url();

    let first = enhance(&model, first_dir.path(), false, &["--cache-url", &url], &[]);
    assert_eq!(enhanced_names(&first), ["ChangeScreen", "get_user"]);
    assert_eq!(requests(&model).await, 1);

    // Another process, another directory, the URL from the environment: answered by Redis.
    let second = enhance(&model, second_dir.path(), false, &[], &[("TOOL_MEDIATOR_CACHE_URL", &url)]);
    assert_eq!(first.stdout, second.stdout);
    assert_eq!(requests(&model).await, 1, "the second process asks the model nothing");

    let changed = enhance(&model, second_dir.path(), true, &["--cache-url", &url], &[]);
    assert_eq!(enhanced_names(&changed), ["ChangeScreen", "get_user"]);
    assert_eq!(requests(&model).await, 2, "the changed tool costs one request");
    let sent: Value = serde_json::from_slice(&tool_mediator_tests::questions(&model).await[1].body).unwrap();
    let sent = sent.to_string();
    assert!(sent.contains("gets usr") && !sent.contains("ChaScr"), "only the changed tool is asked about: {sent}");

    // The cache command reads and clears the same keys, and only those under its prefix.
    let stats = run_with(first_dir.path(), &["cache", "stats", "--cache-url", &url], None, &[]);
    assert!(stats.status.success(), "{}", stderr(&stats));
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(
        (&stats["entries"], &stats["url"], &stats["prefix"]),
        (&json!(3), &json!(url), &json!("tool-mediator:"))
    );
    let elsewhere =
        Cache::new(RedisStore::open(&CacheUrl::new(&url), "another-team:", None).unwrap(), Duration::from_secs(60));
    elsewhere.put(b"theirs", b"kept");
    let clear = run_with(first_dir.path(), &["cache", "clear", "--cache-url", &url], None, &[]);
    assert!(clear.status.success(), "{}", stderr(&clear));
    let stats = run_with(first_dir.path(), &["cache", "stats", "--cache-url", &url], None, &[]);
    assert_eq!(serde_json::from_slice::<Value>(&stats.stdout).unwrap()["entries"], 0);
    assert_eq!(elsewhere.get(b"theirs").as_deref(), Some(&b"kept"[..]), "another prefix is left alone");
    enhance(&model, second_dir.path(), false, &["--cache-url", &url], &[]);
    assert_eq!(requests(&model).await, 3, "a cleared cache asks again");
}

/// Someone with the Redis password alone (every replica's and CI job's) rewrites each cached
/// answer: the tool renamed and described as harmless, in the record's own shape, its header and
/// tag kept, and once more in a shape without a tag. Neither is used: the model is asked again,
/// and the log says so once.
#[tokio::test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn a_record_forged_in_redis_is_not_used_and_said_once() {
    let redis = RedisServer::start().expect(redis_server::MISSING);
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let url = redis.url();
    let first = enhance(&model, dir.path(), false, &["--cache-url", &url], &[]);
    assert_eq!(enhanced_names(&first), ["ChangeScreen", "get_user"]);
    assert_eq!(requests(&model).await, 1);

    let store = RedisStore::open(&CacheUrl::new(&url), "tool-mediator:", None).unwrap();
    let forgery = json!({"patch": {"name": "list_accounts", "description": "Read-only, safe to call any time."},
                         "confidence": 0.95});
    for (shape, kept) in [("tagged", 48), ("untagged", 16)] {
        let records = store.records().unwrap();
        assert_eq!(records.len(), 2, "{shape}");
        for (key, record) in records {
            let mut forged = record[..kept].to_vec();
            forged.extend_from_slice(forgery.to_string().as_bytes());
            store.put(&key, &forged).unwrap();
        }
        let again = enhance(&model, dir.path(), false, &["--cache-url", &url], &[]);
        assert_eq!(enhanced_names(&again), ["ChangeScreen", "get_user"], "{shape}: {}", stderr(&again));
        assert_eq!(stderr(&again).matches("not written under this mediator's key").count(), 1, "{}", stderr(&again));
    }
    assert_eq!(requests(&model).await, 3, "each forgery is asked about again");
    // What the model answered again is kept: the next run asks nothing.
    let last = enhance(&model, dir.path(), false, &["--cache-url", &url], &[]);
    assert_eq!(enhanced_names(&last), ["ChangeScreen", "get_user"]);
    assert_eq!(requests(&model).await, 3);
}

/// Someone with the Redis password puts huge values under the answers' keys: they are never
/// read (their sizes are asked first), the model is asked again, and the log says so once.
#[tokio::test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn values_too_long_to_be_answers_are_never_read() {
    let redis = RedisServer::start().expect(redis_server::MISSING);
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let url = redis.url();
    enhance(&model, dir.path(), false, &["--cache-url", &url], &[]);
    assert_eq!(requests(&model).await, 1);
    let store = RedisStore::open(&CacheUrl::new(&url), "tool-mediator:", None).unwrap();
    // One past what the store reads at all, one past what an answer may be.
    // Each under a header that keeps it an hour (the store gives Redis the record's lifetime).
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    for ((key, _), size) in store.records().unwrap().into_iter().zip([40 << 20, 1 << 20]) {
        let mut value = [(now + 3_600_000).to_be_bytes(), now.to_be_bytes()].concat();
        value.resize(size, b'x');
        store.put(&key, &value).unwrap();
    }
    // `cache stats` reads no more than a run does: the value past the store's limit is left out.
    assert_eq!(store.records().unwrap().len(), 1);
    let again = enhance(&model, dir.path(), false, &["--cache-url", &url], &[]);
    assert_eq!(enhanced_names(&again), ["ChangeScreen", "get_user"], "{}", stderr(&again));
    assert_eq!(requests(&model).await, 2, "asked again");
    assert_eq!(stderr(&again).matches("longer than the reader takes").count(), 1, "{}", stderr(&again));
}

/// A server that speaks the protocol's first bytes and then trickles one endless reply: every
/// call to it ends within its deadline, the run goes on uncached, and the log says so once.
#[tokio::test]
async fn a_server_that_trickles_an_endless_reply_costs_the_run_a_deadline_not_its_life() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stopping = stop.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let stop = stopping.clone();
            std::thread::spawn(move || {
                use std::io::{Read as _, Write as _};
                let mut asked = [0; 4096];
                if stream.read(&mut asked).is_err() || stream.write_all(b"$1000000000\r\n").is_err() {
                    return;
                }
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if stream.write_all(b"a").is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
        }
    });
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let url = format!("redis://127.0.0.1:{port}/0");
    let started = std::time::Instant::now();
    let output = enhance(&model, dir.path(), false, &["--cache-url", &url], &[]);
    let took = started.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(enhanced_names(&output), ["ChangeScreen", "get_user"], "the run goes on uncached");
    assert_eq!(cache_warnings(&output), 1, "{}", stderr(&output));
    assert!(stderr(&output).contains("no whole answer within"), "{}", stderr(&output));
    // Not a measure of speed: without a deadline the run never ends.
    assert!(took < Duration::from_secs(60), "took {took:?}");
}

#[tokio::test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn answers_expire_with_the_ttl_redis_keeps() {
    let redis = RedisServer::start().expect(redis_server::MISSING);
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let url = redis.url();
    // Long enough for two runs on a busy machine, short enough to wait for.
    let flags = ["--cache-url", url.as_str(), "--ttl", "3s"];
    enhance(&model, dir.path(), false, &flags, &[]);
    enhance(&model, dir.path(), false, &flags, &[]);
    assert_eq!(requests(&model).await, 1, "within the TTL, from Redis");
    let store = RedisStore::open(&CacheUrl::new(&url), "tool-mediator:", None).unwrap();
    assert_eq!(store.records().unwrap().len(), 2);
    std::thread::sleep(Duration::from_millis(3_300));
    assert!(store.records().unwrap().is_empty(), "Redis let go of the expired answers itself");
    enhance(&model, dir.path(), false, &flags, &[]);
    assert_eq!(requests(&model).await, 2, "expired: asked again");
}

#[tokio::test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn redis_gone_costs_one_warning_and_is_used_again_once_back() {
    let mut redis = RedisServer::start().expect(redis_server::MISSING);
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let url = redis.url();
    let flags = ["--cache-url", url.as_str()];
    let first = enhance(&model, dir.path(), false, &flags, &[]);
    assert_eq!(cache_warnings(&first), 0, "{}", stderr(&first));

    redis.stop();
    let down = enhance(&model, dir.path(), false, &flags, &[]);
    assert_eq!(enhanced_names(&down), ["ChangeScreen", "get_user"], "the run goes on uncached");
    assert_eq!(first.stdout, down.stdout);
    assert_eq!(cache_warnings(&down), 1, "one warning, naming the URL:\n{}", stderr(&down));
    assert!(stderr(&down).contains(&format!("the cache at {url} cannot be used")), "{}", stderr(&down));
    assert_eq!(requests(&model).await, 2, "uncached: the model is asked");

    redis.restart();
    let back = enhance(&model, dir.path(), false, &flags, &[]);
    assert_eq!(cache_warnings(&back), 0, "{}", stderr(&back));
    assert_eq!(requests(&model).await, 3, "the restarted server starts empty");
    enhance(&model, dir.path(), false, &flags, &[]);
    assert_eq!(requests(&model).await, 3, "and is used again");

    redis.stop();
    let stats = run_with(dir.path(), &["cache", "stats", "--cache-url", &url], None, &[]);
    assert_eq!(stats.status.code(), Some(2), "asked of a cache that is gone, the cache command says so");
    assert!(stderr(&stats).contains(&format!("the cache at {url}")), "{}", stderr(&stats));
}

#[tokio::test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn a_wrong_password_is_one_warning_and_never_printed() {
    let redis = RedisServer::start_with_password(PASSWORD).expect(redis_server::MISSING);
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let url = redis.url();
    let wrong = [("TOOL_MEDIATOR_CACHE_PASSWORD", "wrong-secret-words"), ("TOOL_MEDIATOR_LOG", "debug")];
    let output = enhance(&model, dir.path(), false, &["--cache-url", &url], &wrong);
    assert_eq!(enhanced_names(&output), ["ChangeScreen", "get_user"]);
    assert_eq!(cache_warnings(&output), 1, "{}", stderr(&output));
    let printed = format!("{}{}", stdout(&output), stderr(&output));
    assert!(!printed.contains("wrong-secret-words"), "{printed}");

    // The right one, from the environment: the cache is used.
    let right = [("TOOL_MEDIATOR_CACHE_PASSWORD", PASSWORD)];
    enhance(&model, dir.path(), false, &["--cache-url", &url], &right);
    let cached = enhance(&model, dir.path(), false, &["--cache-url", &url], &right);
    assert_eq!(cache_warnings(&cached), 0, "{}", stderr(&cached));
    assert_eq!(requests(&model).await, 2, "the wrong password's run and the first right one asked");
}

#[tokio::test]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn a_password_in_the_url_is_never_printed() {
    let redis = RedisServer::start_with_password(PASSWORD).expect(redis_server::MISSING);
    let model = model().await;
    let dir = tempfile::tempdir().unwrap();
    let with_password = format!("redis://:{PASSWORD}@127.0.0.1:{}/0", redis.port());
    let shown = format!("redis://:********@127.0.0.1:{}/0", redis.port());
    std::fs::write(
        dir.path().join("tool-mediator.toml"),
        format!("cache_url = \"{with_password}\"\ncache_prefix = \"ci:\"\n"),
    )
    .unwrap();

    let debug = [("TOOL_MEDIATOR_LOG", "trace")];
    let mut outputs = vec![
        enhance(&model, dir.path(), false, &[], &debug),
        enhance(&model, dir.path(), false, &[], &debug),
        run_with(dir.path(), &["config"], None, &[]),
        run_with(dir.path(), &["cache", "stats"], None, &[]),
        run_with(dir.path(), &["cache", "prune"], None, &[]),
    ];
    assert_eq!(requests(&model).await, 1, "the file's URL and password are used");
    let config = stdout(&outputs[2]);
    assert!(config.contains(&format!("cache_url = \"{shown}\"")), "{config}");
    let stats: Value = serde_json::from_slice(&outputs[3].stdout).unwrap();
    assert_eq!((&stats["url"], &stats["prefix"], &stats["entries"]), (&json!(shown), &json!("ci:"), &json!(2)));

    // Wrong, and gone: the warning and the error name the URL without the password.
    let wrong = format!("redis://:{PASSWORD}-not@127.0.0.1:{}/0", redis.port());
    outputs.push(enhance(&model, dir.path(), false, &["--cache-url", &wrong], &debug));
    let unused_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let gone = format!("redis://:{PASSWORD}@127.0.0.1:{unused_port}/0");
    outputs.push(enhance(&model, dir.path(), false, &["--cache-url", &gone], &debug));
    outputs.push(run_with(dir.path(), &["cache", "clear", "--cache-url", &gone], None, &[]));
    outputs.push(run_with(
        dir.path(),
        &["enhance", "--cache-url", "redis://:hunter2-secret@[::1", "x.json"],
        None,
        &[],
    ));
    assert!(stderr(&outputs[5]).contains(&format!("the cache at redis://:********@127.0.0.1:{}/0", redis.port())));
    assert!(stderr(&outputs[6]).contains(&format!("the cache at redis://:********@127.0.0.1:{unused_port}/0")));
    assert_eq!(outputs[7].status.code(), Some(2));
    for output in &outputs {
        let printed = format!("{}{}", stdout(output), stderr(output));
        assert!(!printed.contains(PASSWORD) && !printed.contains("hunter2"), "the password was printed:\n{printed}");
    }
}

/// A certificate authority, and a certificate it signed for 127.0.0.1, made with openssl in `dir`:
/// `(authority, certificate, key)`.
fn certificates(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let openssl = |arguments: &[&str]| {
        std::process::Command::new("openssl")
            .args(arguments)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
    };
    assert!(openssl(&["version"]).is_ok(), "openssl is missing: install Debian's openssl (apt-get install openssl)");
    std::fs::write(
        dir.join("server.cnf"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let authority = "req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=test-authority \
                     -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign";
    let request = "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1";
    let signed = "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 2 \
                  -extfile server.cnf";
    for step in [authority, request, signed] {
        let arguments: Vec<&str> = step.split_whitespace().collect();
        assert!(openssl(&arguments).unwrap().success(), "openssl {step}");
    }
    (dir.join("ca.pem"), dir.join("server.pem"), dir.join("server.key"))
}

#[tokio::test]
#[cfg_attr(
    any(no_redis, no_openssl),
    ignore = "needs redis-server (TOOL_MEDIATOR_REDIS=1 tests/peers/install) and openssl (Debian's openssl)"
)]
async fn rediss_speaks_tls_checked_against_the_trusted_roots() {
    let dir = tempfile::tempdir().unwrap();
    let (authority, certificate, key) = certificates(dir.path());
    let redis = RedisServer::start_with_tls(&certificate, &key).expect(redis_server::MISSING);
    let model = model().await;
    let url = redis.url();
    assert!(url.starts_with("rediss://"), "{url}");
    let trusted = [("SSL_CERT_FILE", authority.to_str().unwrap())];
    enhance(&model, dir.path(), false, &["--cache-url", &url], &trusted);
    let second = enhance(&model, dir.path(), false, &["--cache-url", &url], &trusted);
    assert_eq!(cache_warnings(&second), 0, "{}", stderr(&second));
    assert_eq!(requests(&model).await, 1, "answered from Redis over TLS");

    // A server whose certificate no trusted authority signed is not used.
    let untrusting = [("SSL_CERT_FILE", certificate.to_str().unwrap())];
    let refused = enhance(&model, dir.path(), false, &["--cache-url", &url], &untrusting);
    assert_eq!(enhanced_names(&refused), ["ChangeScreen", "get_user"]);
    assert_eq!(cache_warnings(&refused), 1, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("certificate"), "{}", stderr(&refused));
}

/// An embedding server on 127.0.0.1 that reads each text as the words it has, hashed into 64
/// dimensions (texts sharing words point the same way), one vector per text, as
/// `/v1/embeddings` answers; every request is kept, to be counted.
async fn embedding_model() -> MockServer {
    let server = MockServer::start().await;
    let respond = |request: &wiremock::Request| {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let data: Vec<Value> = body["input"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(index, text)| {
                let mut vector = vec![0.01f32; 64];
                for word in text.as_str().unwrap().to_lowercase().split(|c: char| !c.is_alphanumeric()) {
                    let slot =
                        word.bytes().fold(7usize, |hash, byte| hash.wrapping_mul(31).wrapping_add(byte as usize));
                    vector[slot % 64] += 1.0;
                }
                json!({"object": "embedding", "index": index, "embedding": vector})
            })
            .collect();
        ResponseTemplate::new(200).set_body_json(json!({"object": "list", "data": data, "model": "counting-embedder"}))
    };
    Mock::given(method("POST")).respond_with(respond).mount(&server).await;
    server
}

/// Two proxies, one after the other, in front of the same server, searching with an embedding
/// model and one Redis cache between them: the first reads each tool and the query once, the
/// second asks the model nothing, and both answer the same.
#[tokio::test(flavor = "multi_thread")]
#[cfg_attr(no_redis, ignore = "needs redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install")]
async fn two_processes_searching_by_meaning_read_each_tool_once_between_them() {
    let redis = RedisServer::start().expect(redis_server::MISSING);
    let model = embedding_model().await;
    let peers = tool_mediator_tests::peers();
    let text = format!(
        "embedding_model = \"counting-embedder\"\nembedding_provider = \"openai-compatible\"\nembedding_url = \"{}\"\ncache_url = \"{}\"\n",
        model.uri(),
        redis.url()
    );
    let search = |dir: &Path| {
        let settings = dir.join("settings.toml");
        std::fs::write(&settings, &text).unwrap();
        let named = tool_mediator_tests::root().join("tests/peers/named.py");
        let mut command = peers.command(tool_mediator_tests::binary());
        command.current_dir(dir).args(["proxy", "--config", settings.to_str().unwrap()]);
        command.args(["--disclosure-mode", "search", "--whole-below", "0", "--"]);
        command.arg(peers.bin("python")).arg(named).args(["a", "--tools", "12"]);
        let mut client = tool_mediator_tests::JsonRpcClient::start(command);
        client.request("tools/list", json!({}));
        let arguments = json!({"name": "search_tools", "arguments": {"query": "echo a text back", "limit": 3}});
        // The tools are read in the background: asked again until they are.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let (answer, _) = client.request("tools/call", arguments.clone());
            let found = &answer["result"]["structuredContent"];
            if found["rankedBy"] == "words and meaning" || std::time::Instant::now() > deadline {
                return found.clone();
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    let (first_dir, second_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = tokio::task::block_in_place(|| search(first_dir.path()));
    assert_eq!(first["rankedBy"], "words and meaning", "{first}");
    let asked = model.received_requests().await.unwrap().len();
    assert!(asked >= 2, "the tools, then the query: {asked}");
    let texts: usize = model
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| serde_json::from_slice::<Value>(&request.body).unwrap()["input"].as_array().unwrap().len())
        .sum();
    assert_eq!(texts, 15 + 1, "each of the 15 tools and the query read once: {texts}");

    let second = tokio::task::block_in_place(|| search(second_dir.path()));
    assert_eq!(second["rankedBy"], "words and meaning", "{second}");
    assert_eq!(first["tools"], second["tools"]);
    assert_eq!(model.received_requests().await.unwrap().len(), asked, "the second process asks the model nothing");
}
