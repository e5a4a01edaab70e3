//! Two gateway replicas behind a real load balancer (Debian's HAProxy, started by the test on
//! 127.0.0.1 with the configuration docs/PROXY.md gives), sharing one Redis (Debian's
//! redis-server) for the language model's answers, the model on a real HTTP server on
//! 127.0.0.1. Without haproxy or redis-server the test is ignored (tests/build.rs), and fails
//! under TOOL_MEDIATOR_REDIS=1 (which installs both).
//!
//! A client of the stateless revision is spread round robin over both and gets the same listing
//! and right answers; a 2025 client keeps its session (the balancer sticks to the replica that
//! named it); the second replica asks the model nothing the first asked; and with one replica
//! stopped the stateless client goes on through the other.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_mediator_tests::{Listening, answer_in, peers, root, stateless};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

#[path = "redis_server.rs"]
#[allow(dead_code)]
mod redis_server;
use redis_server::RedisServer;

/// The load balancer in front of the replicas at `a` and `b`, listening on `port`: round robin,
/// a 2025 session kept on the replica that named it, a replica that stops taken out (its health
/// from /readyz) and a request it refused sent to the other.
fn haproxy_config(port: u16, a: &str, b: &str) -> String {
    format!(
        "global
    maxconn 256
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout
frontend mcp
    bind 127.0.0.1:{port}
    default_backend gateways
backend gateways
    balance roundrobin
    stick-table type string len 64 size 100k expire 30m
    stick match req.hdr(mcp-session-id)
    stick store-response res.hdr(mcp-session-id)
    option httpchk GET /readyz
    http-check expect status 200
    server a {a} check inter 300ms fall 1 rise 1
    server b {b} check inter 300ms fall 1 rise 1
"
    )
}

struct HaProxy(Child);

impl HaProxy {
    fn start(config: &Path, port: u16) -> HaProxy {
        let binary = ["/usr/sbin/haproxy", "/usr/bin/haproxy"]
            .into_iter()
            .map(PathBuf::from)
            .find(|path| path.exists())
            .expect("haproxy is missing: TOOL_MEDIATOR_REDIS=1 tests/peers/install installs Debian's");
        let child = Command::new(binary)
            .arg("-db")
            .arg("-f")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let began = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(began.elapsed() < Duration::from_secs(30), "haproxy does not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        HaProxy(child)
    }
}

impl Drop for HaProxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn answer() -> Value {
    let entries: Vec<Value> = [("ChaScr", "ChangeScreen"), ("gt_usr", "get_user")]
        .iter()
        .map(|(name, new)| {
            json!({"original_name": name, "name": new, "description": "Described by the model.", "confidence": 0.9})
        })
        .collect();
    json!({"choices": [{"message": {"role": "assistant", "content": json!({"tools": entries}).to_string()}}],
           "usage": {"prompt_tokens": 100, "completion_tokens": 20}})
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn names(listed: &Value) -> Vec<String> {
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("a listing: {listed}"));
    let mut names: Vec<String> = tools.iter().map(|tool| tool["name"].as_str().unwrap().to_owned()).collect();
    names.sort();
    names
}

/// Which replica answered: the server's own text says nothing of it, so the balancer's log is
/// not needed; the replicas' request counters on /metrics tell.
async fn requests_served(http: &reqwest::Client, address: &str) -> u64 {
    let text = http.get(format!("http://{address}/metrics")).send().await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|line| line.starts_with("tool_mediator_requests_total{"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn ready(http: &reqwest::Client, address: &str) {
    let began = Instant::now();
    loop {
        let status = http.get(format!("http://{address}/readyz")).send().await.map(|answer| answer.status().as_u16());
        if status.as_ref().is_ok_and(|status| *status == 200) {
            return;
        }
        assert!(began.elapsed() < Duration::from_secs(60), "{address} is not ready: {status:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A stateless listing from `url` once it names `wanted` (the model's names, which come in the
/// background), within 30 s.
async fn listed_as(http: &reqwest::Client, url: &str, wanted: &[&str]) -> Value {
    let began = Instant::now();
    loop {
        let listed = stateless(http, url, 1, "tools/list", json!({})).await;
        if names(&listed) == wanted {
            return listed;
        }
        assert!(began.elapsed() < Duration::from_secs(30), "{url} never lists {wanted:?}: {listed}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    any(no_haproxy, no_redis),
    ignore = "needs haproxy and redis-server: TOOL_MEDIATOR_REDIS=1 tests/peers/install"
)]
async fn two_replicas_behind_haproxy_share_one_cache_and_serve_every_client() {
    let redis = RedisServer::start().expect(redis_server::MISSING);
    let peers = peers();
    let dir = tempfile::tempdir().unwrap();
    let model = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ResponseTemplate::new(200).set_body_json(answer())).mount(&model).await;
    let tools = json!([
        {"name": "ChaScr", "inputSchema": {"type": "object"}},
        {"name": "gt_usr", "description": "gets user", "inputSchema": {"type": "object",
            "properties": {"text": {"type": "string"}}}},
    ]);
    let servers = dir.path().join("servers.json");
    let listed = root().join("tests/peers/listed.py").display().to_string();
    // A server of 2025, which tells its name only to a 2025 handshake: known by it all the same
    // to clients of the stateless revision (the name it gave the pool), so its overrides and the
    // model's answers are the same whichever revision a client speaks.
    let server = json!({"command": peers.bin("python").display().to_string(), "args": [listed, tools.to_string()]});
    std::fs::write(&servers, json!({"mcpServers": {"app": server}}).to_string()).unwrap();
    let port = free_port();
    let (servers, model_url, cache_url) = (servers.display().to_string(), model.uri(), redis.url());
    let front = format!("127.0.0.1:{port}");
    let replica = || {
        let arguments = [
            "--no-disclosure",
            "--servers",
            &servers,
            "--llm",
            "openai-compatible",
            "--llm-url",
            &model_url,
            "--cache-url",
            &cache_url,
            "--allow-host",
            &front,
        ];
        Listening::start(&peers, "gateway", &arguments)
    };
    let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();

    // The first replica lists the server and asks the model (in the background: its names come
    // in a later listing); the second asks it nothing, and lists them at once.
    let mut a = replica();
    ready(&http, &a.address).await;
    let from_a = listed_as(&http, &a.url(), &["ChangeScreen", "get_user"]).await;
    let asked = model.received_requests().await.unwrap().len();
    assert!(asked >= 1, "the first replica asked the model");
    let b = replica();
    ready(&http, &b.address).await;
    let from_b = stateless(&http, &b.url(), 1, "tools/list", json!({})).await;
    assert_eq!(names(&from_b), names(&from_a), "the same listing from both");
    assert_eq!(model.received_requests().await.unwrap().len(), asked, "the second replica asks the model nothing");

    let config = dir.path().join("haproxy.cfg");
    std::fs::write(&config, haproxy_config(port, &a.address, &b.address)).unwrap();
    let _haproxy = HaProxy::start(&config, port);
    let url = format!("http://{front}/mcp");

    // A stateless client, round robin over both: the same listing, and every call answered.
    let served = (requests_served(&http, &a.address).await, requests_served(&http, &b.address).await);
    for id in 0..10 {
        let listed = stateless(&http, &url, 100 + id, "tools/list", json!({})).await;
        assert_eq!(names(&listed), names(&from_a), "{listed}");
        let text = format!("call {id}");
        let call = json!({"name": "get_user", "arguments": {"text": text}});
        let called = stateless(&http, &url, 200 + id, "tools/call", call).await;
        assert_eq!(called["result"]["content"][0]["text"], format!("called gt_usr: {text}"), "{called}");
    }
    let now = (requests_served(&http, &a.address).await, requests_served(&http, &b.address).await);
    assert!(now.0 > served.0 && now.1 > served.1, "both replicas served: {served:?} then {now:?}");

    // A 2025 client: its session stays on the replica that named it.
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    let opened = http
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize.to_string())
        .send()
        .await
        .unwrap();
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let in_session = |body: Value| {
        http.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .body(body.to_string())
            .send()
    };
    assert_eq!(
        in_session(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await.unwrap().status(),
        202
    );
    for id in 1..=10 {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "get_user", "arguments": {"text": format!("old {id}")}}});
        let answered = in_session(call).await.unwrap();
        assert_eq!(answered.status(), 200, "the session's replica answers every time");
        let answered = answer_in(&answered.text().await.unwrap());
        assert_eq!(answered["result"]["content"][0]["text"], format!("called gt_usr: old {id}"), "{answered}");
    }

    // One replica stopped mid-run: the stateless client goes on through the other.
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(a.pid() as libc::pid_t, libc::SIGTERM) };
    a.exited_within(Duration::from_secs(20)).expect("the replica stops");
    for id in 0..10 {
        let text = format!("after {id}");
        let call = json!({"name": "get_user", "arguments": {"text": text}});
        let called = stateless(&http, &url, 300 + id, "tools/call", call).await;
        assert_eq!(called["result"]["content"][0]["text"], format!("called gt_usr: {text}"), "{called}");
    }
    let bodies: Vec<String> = model
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| String::from_utf8_lossy(&request.body).into_owned())
        .collect();
    assert_eq!(bodies.len(), asked, "the fleet asked the model once: {bodies:#?}");
    drop(b);
}
