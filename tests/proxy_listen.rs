//! The proxy serving its clients over Streamable HTTP (`--listen`): the MCP Python SDK's
//! Streamable HTTP client and the Inspector (`--transport http`) against it, and what the
//! specification says an endpoint refuses.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};
use tool_mediator_tests::{FOLD_SMALL, Listening, peers, root, stderr, stdout};

/// Plain HTTP/1.1 requests to the endpoint, for what the SDKs never send.
trait Endpoint {
    fn address(&self) -> &str;

    /// One HTTP/1.1 request to `/mcp`: its status and body.
    fn ask(&self, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
        let (status, _, body) = self.ask_with_head(method, headers, body);
        (status, body)
    }

    /// A session opened with `initialize`: its id.
    fn open_session(&self) -> String {
        let (status, head, body) = self.ask_with_head("POST", &[], INITIALIZE);
        assert_eq!(status, 200, "{body}");
        head.lines()
            .find_map(|line| line.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(str::to_owned))
            .expect("the answer names the session")
    }

    /// One HTTP/1.1 request to `/mcp`: its status, head and body.
    fn ask_with_head(&self, method: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
        let mut stream = TcpStream::connect(self.address()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut request = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, \
             text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.address(),
            body.len()
        );
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("\r\n");
        request.push_str(body);
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        let status = answer.split(' ').nth(1).and_then(|code| code.parse().ok()).unwrap_or(0);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_owned(), body.to_owned())
    }
}

impl Endpoint for Listening {
    fn address(&self) -> &str {
        &self.address
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[test]
fn categories_fold_and_list_changes_reach_an_http_client() {
    let peers = peers();
    let git = peers.bin("mcp-server-git").display().to_string();
    let repository = root().display().to_string();
    let arguments = [&FOLD_SMALL[..], &["--", &git, "--repository", &repository]].concat();
    let proxy = Listening::start(&peers, "proxy", &arguments);
    let outcome = peers.python_client("disclose", &[], &[&proxy.url()]);
    assert_eq!(outcome["server"], json!("mcp-git"), "{outcome}");
    assert_eq!(outcome["first"], json!(["git_tools"]), "{outcome}");
    assert_eq!(outcome["notified"], json!(true), "list_changed came on the GET stream: {outcome}");
    assert!(outcome["second"].as_array().unwrap().len() >= 10, "{outcome}");
}

#[test]
fn the_servers_requests_reach_an_http_client_and_come_back() {
    let peers = peers();
    let everything = peers.bin("mcp-server-everything").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--no-disclosure", "--", &everything]);
    let outcome = peers.python_client("server-requests", &[], &[&proxy.url()]);
    assert!(outcome["roots"].as_str().unwrap().contains("file:///tmp/proxy-roots"), "{outcome}");
    assert!(outcome["sampling"].as_str().unwrap().contains("sampled through the proxy"), "{outcome}");

    let inspector = peers.inspector(&[&proxy.url(), "--transport", "http"], &["--method", "tools/list"]);
    assert!(inspector.status.success(), "{}", stderr(&inspector));
    let listed: Value = serde_json::from_str(&stdout(&inspector)).unwrap();
    assert!(listed["tools"].as_array().unwrap().iter().any(|tool| tool["name"] == "get-sum"), "{listed}");
}

#[test]
fn concurrent_sessions_each_get_their_own_answers() {
    let peers = peers();
    let everything = peers.bin("mcp-server-everything").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--no-disclosure", "--", &everything]);
    let url = proxy.url();
    // Four sessions at once, each with 100 calls one after another and 25 at once.
    std::thread::scope(|scope| {
        let sessions: Vec<_> =
            (0..4).map(|_| scope.spawn(|| peers.python_client("load", &["100", "25"], &[url.as_str()]))).collect();
        for session in sessions {
            let outcome = session.join().unwrap();
            assert_eq!(outcome["calls"], json!(125), "{outcome}");
            assert_eq!(outcome["wrong"], json!([]), "answers reached the wrong request");
        }
    });
}

#[test]
fn the_endpoint_refuses_what_the_specification_says_it_refuses() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--", &time]);

    let (status, _) = proxy.ask("POST", &[("Origin", "https://evil.example")], INITIALIZE);
    assert_eq!(status, 403, "another origin");
    let (status, body) = proxy.ask("POST", &[], "{not json");
    assert_eq!(status, 400);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["error"]["code"], json!(-32700), "{body}");
    let (status, body) = proxy.ask("POST", &[("MCP-Protocol-Version", "1999-01-01")], INITIALIZE);
    assert_eq!(status, 400, "an unknown protocol revision");
    assert!(body.contains("unsupported MCP-Protocol-Version"), "{body}");
    let (status, _) = proxy.ask("POST", &[("Mcp-Session-Id", "nobody-issued-this")], INITIALIZE);
    assert_eq!(status, 404, "a session nobody issued");
    let (status, body) = proxy.ask("POST", &[], r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#);
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("send initialize first"), "{body}");

    // A local page's origin is welcome; the session it opens answers and ends with DELETE.
    let (status, body) = proxy.ask("POST", &[("Origin", "http://localhost:5173")], INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""serverInfo":{"name":"mcp-time""#), "{body}");
}

#[test]
fn with_a_token_every_request_must_carry_it() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    // The token comes from the environment the proxy starts in.
    let arguments = ["--token-env", "TOOL_MEDIATOR_TEST_TOKEN", "--", &time];
    let proxy = Listening::start_with_env(&peers, "proxy", &arguments, &[("TOOL_MEDIATOR_TEST_TOKEN", "s3cret")]);
    let (status, _) = proxy.ask("POST", &[], INITIALIZE);
    assert_eq!(status, 401, "no token");
    let (status, _) = proxy.ask("POST", &[("Authorization", "Bearer wrong")], INITIALIZE);
    assert_eq!(status, 401, "the wrong token");
    let (status, body) = proxy.ask("POST", &[("Authorization", "Bearer s3cret")], INITIALIZE);
    assert_eq!(status, 200, "{body}");

    let missing = tool_mediator_tests::run(
        &["proxy", "--listen", "127.0.0.1:0", "--token-env", "TOOL_MEDIATOR_TEST_NO_SUCH_TOKEN", "--", "true"],
        None,
    );
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("TOOL_MEDIATOR_TEST_NO_SUCH_TOKEN is not set"), "{}", stderr(&missing));
}

#[test]
fn a_session_left_without_delete_ends_when_idle() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--session-idle", "1s", "--", &time]);
    let session = proxy.open_session();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _) = proxy.ask("POST", &[("Mcp-Session-Id", &session)], initialized);
    assert_eq!(status, 202, "the session is open");
    std::thread::sleep(Duration::from_millis(2_500));
    let (status, _) = proxy.ask("POST", &[("Mcp-Session-Id", &session)], initialized);
    assert_eq!(status, 404, "the idle session was ended");
}

#[test]
fn delete_ends_a_session_whose_server_will_not_stop() {
    let peers = peers();
    // Answers initialize, then reads nothing more and ignores SIGTERM.
    let stubborn = r#"
import json, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
request = json.loads(sys.stdin.readline())
print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "stubborn", "version": "1"}}}), flush=True)
time.sleep(3600)
"#;
    let python = peers.bin("python").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--grace", "1s", "--", &python, "-c", stubborn]);
    let session = proxy.open_session();
    let started = std::time::Instant::now();
    let (status, _) = proxy.ask("DELETE", &[("Mcp-Session-Id", &session)], "");
    assert_eq!(status, 200);
    assert!(started.elapsed() < Duration::from_secs(10), "DELETE took {:?}", started.elapsed());
    let (status, _) = proxy.ask("POST", &[("Mcp-Session-Id", &session)], INITIALIZE);
    assert_eq!(status, 404, "the session is gone");
}
