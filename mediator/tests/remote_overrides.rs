//! Remote override collections against a real HTTP server on 127.0.0.1.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use tool_mediator::cache::{Cache, Clock, MemoryStore};
use tool_mediator::overrides::remote::{MAX_COLLECTION_BYTES, RemoteState, fetch};
use wiremock::matchers::{header, method};
use wiremock::{Mock, MockServer, ResponseTemplate};

mod raw_http;
use raw_http::{raw_server, respond_with};

struct TestClock(AtomicU64);

impl Clock for TestClock {
    fn now_millis(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

fn collection() -> serde_json::Value {
    json!([{"source": "example.com", "tools": {"gt_usr": {"name": "get_user"}}}])
}

#[tokio::test]
async fn fetched_once_revalidated_with_its_etag_and_served_stale_offline() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(header("if-none-match", "\"v1\""))
        .respond_with(ResponseTemplate::new(304))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).insert_header("etag", "\"v1\"").set_body_json(collection()))
        .mount(&server)
        .await;
    let url = format!("{}/overrides.json", server.uri());
    let clock = Arc::new(TestClock(AtomicU64::new(1_000)));
    let cache = Cache::with_clock(MemoryStore::default(), Duration::from_secs(60), clock.clone());
    let http = reqwest::Client::new();

    let first = fetch(&url, Some(&cache), &http).await;
    assert_eq!(first.state, RemoteState::Downloaded);
    assert_eq!(first.files[0].tools["gt_usr"].name.as_deref(), Some("get_user"));
    let second = fetch(&url, Some(&cache), &http).await;
    assert_eq!(second.state, RemoteState::Cached);
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "a fresh copy costs no request");

    clock.0.store(1_000 + 61_000, Ordering::Relaxed);
    let third = fetch(&url, Some(&cache), &http).await;
    assert_eq!(third.state, RemoteState::Revalidated);
    assert_eq!(third.files.len(), 1);

    clock.0.store(1_000 + 200_000, Ordering::Relaxed);
    server.reset().await;
    Mock::given(method("GET")).respond_with(ResponseTemplate::new(503)).mount(&server).await;
    let offline = fetch(&url, Some(&cache), &http).await;
    assert_eq!(offline.state, RemoteState::Stale);
    assert_eq!(offline.files.len(), 1);
    assert!(offline.warning.unwrap().contains("last good copy"));
}

#[tokio::test]
async fn redirects_to_plain_http_elsewhere_are_not_followed() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", "http://example.com/o.json"))
        .mount(&server)
        .await;
    let result =
        fetch(&format!("{}/o.json", server.uri()), None, &tool_mediator::overrides::remote::http_client()).await;
    assert_eq!(result.state, RemoteState::Unavailable);
}

#[tokio::test]
async fn invalid_collections_and_no_copy_leave_the_run_without_them() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"overrides": [{"source": "s", "tools": {"a": {"name": "bad name"}}}]})),
        )
        .mount(&server)
        .await;
    let url = format!("{}/o.json", server.uri());
    let http = reqwest::Client::new();
    let result = fetch(&url, None, &http).await;
    assert_eq!(result.state, RemoteState::Unavailable);
    let warning = result.warning.unwrap();
    assert!(warning.contains("`/overrides/0/tools/a/name`"), "{warning}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let result = fetch(&format!("http://{closed}/o.json"), None, &http).await;
    assert_eq!(result.state, RemoteState::Unavailable, "nothing listens there");

    for plain in ["http://example.com/o.json", "http://127.attacker.example/o.json"] {
        let result = fetch(plain, None, &http).await;
        assert_eq!(result.state, RemoteState::Unavailable);
        assert!(result.warning.unwrap().contains("use https"), "{plain}");
    }
}

#[tokio::test]
async fn a_collection_over_the_limit_is_not_read_and_the_last_good_copy_serves() {
    // Announced too large (only its first byte is ever sent), and streamed past the limit with
    // no Content-Length.
    let (announced, _) = raw_server(respond_with(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 40000000\r\n\r\n",
        Arc::new(b"[".to_vec()),
        None,
    ));
    let mut streamed = b"[".to_vec();
    streamed.resize(usize::try_from(MAX_COLLECTION_BYTES).unwrap() + 1024 * 1024, b' ');
    let (streamed, _) = raw_server(respond_with(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
        Arc::new(streamed),
        Some(64 * 1024),
    ));
    let http = reqwest::Client::new();
    for (url, announced) in [(format!("{announced}/o.json"), true), (format!("{streamed}/o.json"), false)] {
        let result = fetch(&url, None, &http).await;
        assert_eq!(result.state, RemoteState::Unavailable);
        let warning = result.warning.unwrap();
        assert!(warning.contains("the limit of 32 MiB"), "{warning}");
        assert_eq!(warning.contains("Content-Length"), announced, "{warning}");
    }

    // With a good copy kept, it serves.
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_json(collection()))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(vec![b' '; usize::try_from(MAX_COLLECTION_BYTES).unwrap() + 1], "application/json"),
        )
        .mount(&server)
        .await;
    let url = format!("{}/o.json", server.uri());
    let clock = Arc::new(TestClock(AtomicU64::new(1_000)));
    let cache = Cache::with_clock(MemoryStore::default(), Duration::from_secs(60), clock.clone());
    assert_eq!(fetch(&url, Some(&cache), &http).await.state, RemoteState::Downloaded);
    clock.0.store(1_000 + 61_000, Ordering::Relaxed);
    let stale = fetch(&url, Some(&cache), &http).await;
    assert_eq!(stale.state, RemoteState::Stale);
    assert_eq!(stale.files.len(), 1);
    let warning = stale.warning.unwrap();
    assert!(warning.contains("the limit of 32 MiB") && warning.contains("last good copy"), "{warning}");
}
