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

/// A server of each session's own: its requests (roots, sampling) reach the session's client.
/// (A shared stdio server's requests say nothing of the session they are for, and are refused:
/// `upstream::pool`'s tests.)
#[test]
fn the_servers_requests_reach_an_http_client_and_come_back() {
    let peers = peers();
    let everything = peers.bin("mcp-server-everything").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--no-disclosure", "--server-scope", "session", "--", &everything]);
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
    // Three seconds of idleness: a loaded machine may take a second between two requests.
    let proxy = Listening::start(&peers, "proxy", &["--session-idle", "3s", "--", &time]);
    let session = proxy.open_session();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _) = proxy.ask("POST", &[("Mcp-Session-Id", &session)], initialized);
    assert_eq!(status, 202, "the session is open");
    std::thread::sleep(Duration::from_millis(7_000));
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

/// Sends `request` as written to `address` and reads the answer until the connection closes or
/// `within` passes: what came back.
fn raw(address: &str, request: &str, within: Duration) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(within)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

fn post(host: &str, headers: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, \
         text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n{body}",
        body.len()
    )
}

#[test]
fn half_open_connections_time_out_and_never_lock_out_a_session() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    // 256 open files, as macOS gives by default.
    let proxy = Listening::start_with_nofile(&peers, "proxy", &["--read-timeout", "2s", "--", &time], 256);
    let session = proxy.open_session();
    // 400 connections that send a request line and one header, and then nothing.
    let held: Vec<TcpStream> = (0..400)
        .filter_map(|_| {
            let mut stream = TcpStream::connect(&proxy.address).ok()?;
            stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").ok()?;
            Some(stream)
        })
        .collect();
    assert!(held.len() >= 300, "only {} connections opened", held.len());
    std::thread::sleep(Duration::from_millis(500));
    let started = std::time::Instant::now();
    let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
    let (status, body) = proxy.ask("POST", &[("Mcp-Session-Id", &session)], ping);
    assert_eq!(status, 200, "the existing session still answers: {body}");
    assert!(body.contains(r#""id":7"#), "{body}");
    let (status, body) = proxy.ask("POST", &[], INITIALIZE);
    assert_eq!(status, 200, "a new client is served: {body}");
    assert!(started.elapsed() < Duration::from_secs(20), "served after {:?}", started.elapsed());
    // The connections that stalled were closed by the proxy.
    let mut stalled = held.into_iter().next().unwrap();
    stalled.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rest = Vec::new();
    assert!(stalled.read_to_end(&mut rest).is_ok(), "a stalled connection is closed, not left open");
}

#[test]
fn a_body_that_stalls_half_way_is_cut_off() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--read-timeout", "1s", "--", &time]);
    let started = std::time::Instant::now();
    // Says 1000 bytes, sends 20, then waits.
    let request = post(&proxy.address, "", &"x".repeat(1000));
    let answer = raw(&proxy.address, &request[..request.len() - 980], Duration::from_secs(15));
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "cut after {:?}", started.elapsed());
}

#[test]
fn a_bearer_token_is_accepted_whatever_the_case_of_its_scheme() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    let arguments = ["--token-env", "TOOL_MEDIATOR_TEST_TOKEN", "--", &time];
    let proxy = Listening::start_with_env(&peers, "proxy", &arguments, &[("TOOL_MEDIATOR_TEST_TOKEN", "s3cret")]);
    for scheme in ["bearer", "BEARER", "Bearer "] {
        let (status, body) = proxy.ask("POST", &[("Authorization", &format!("{scheme} s3cret"))], INITIALIZE);
        assert_eq!(status, 200, "{scheme}: {body}");
    }
    let (status, _) = proxy.ask("POST", &[("Authorization", "Basic s3cret")], INITIALIZE);
    assert_eq!(status, 401, "another scheme");
}

#[test]
fn the_token_never_reaches_a_servers_environment() {
    let peers = peers();
    // Names itself after the token it finds in its environment.
    let telling = r#"
import json, os, sys
request = json.loads(sys.stdin.readline())
name = os.environ.get("TOOL_MEDIATOR_TEST_TOKEN", "no-token")
print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": name, "version": "1"}}}), flush=True)
sys.stdin.read()
"#;
    let python = peers.bin("python").display().to_string();
    let arguments = ["--token-env", "TOOL_MEDIATOR_TEST_TOKEN", "--", &python, "-c", telling];
    let proxy = Listening::start_with_env(&peers, "proxy", &arguments, &[("TOOL_MEDIATOR_TEST_TOKEN", "s3cret")]);
    let (status, body) = proxy.ask("POST", &[("Authorization", "Bearer s3cret")], INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""name":"no-token""#), "{body}");
}

#[test]
fn a_host_that_names_another_site_is_refused() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--allow-host", "mediator.internal", "--", &time]);
    let port = proxy.address.rsplit(':').next().unwrap().to_owned();
    // A page at a name that resolves to this machine (DNS rebinding) names itself in Host.
    for host in [format!("evil.example:{port}"), "evil.example".to_owned(), format!("localhost.evil.example:{port}")] {
        let answer = raw(&proxy.address, &post(&host, "", INITIALIZE), Duration::from_secs(15));
        assert!(answer.starts_with("HTTP/1.1 421"), "{host}: {answer}");
    }
    let answer = raw(&proxy.address, &post("localhost:1", "", INITIALIZE), Duration::from_secs(15));
    assert!(answer.starts_with("HTTP/1.1 421"), "another port: {answer}");
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        "localhost".to_owned(),
        format!("mediator.internal:{port}"),
    ] {
        let answer = raw(&proxy.address, &post(&host, "", INITIALIZE), Duration::from_secs(15));
        assert!(answer.starts_with("HTTP/1.1 200"), "{host}: {answer}");
    }
}

/// Regression (issue 42): a request with two `Host` headers, or a `Host` with userinfo, was
/// served (by the first `Host`, or by what follows the `@`), so what the check read was not what
/// every party in between reads. HTTP says such a request is refused with 400, on every path.
#[test]
fn a_host_given_twice_or_with_userinfo_is_a_bad_request() {
    let peers = peers();
    let time = peers.bin("mcp-server-time").display().to_string();
    let proxy = Listening::start(&peers, "proxy", &["--", &time]);
    let port = proxy.address.rsplit(':').next().unwrap().to_owned();
    let local = format!("127.0.0.1:{port}");
    for (first, second) in [(local.as_str(), "evil.example"), ("evil.example", local.as_str()), (&local, &local)] {
        let twice = format!("Host: {second}\r\n");
        let answer = raw(&proxy.address, &post(first, &twice, INITIALIZE), Duration::from_secs(15));
        assert!(answer.starts_with("HTTP/1.1 400"), "Host {first}, then {second}: {answer}");
        let probe = format!("GET /healthz HTTP/1.1\r\nHost: {first}\r\nHost: {second}\r\nConnection: close\r\n\r\n");
        let answer = raw(&proxy.address, &probe, Duration::from_secs(15));
        assert!(answer.starts_with("HTTP/1.1 400"), "/healthz, Host {first}, then {second}: {answer}");
    }
    for host in
        [format!("user@127.0.0.1:{port}"), format!("evil.example@localhost:{port}"), "user:pass@localhost".into()]
    {
        let answer = raw(&proxy.address, &post(&host, "", INITIALIZE), Duration::from_secs(15));
        assert!(answer.starts_with("HTTP/1.1 400"), "{host}: {answer}");
    }
    let answer = raw(&proxy.address, &post(&local, "", INITIALIZE), Duration::from_secs(15));
    assert!(answer.starts_with("HTTP/1.1 200"), "one Host, no userinfo: {answer}");
}

#[test]
fn listening_beyond_this_machine_needs_a_token_or_says_it_goes_without() {
    let refused = tool_mediator_tests::run(&["proxy", "--listen", "0.0.0.0:0", "--", "true"], None);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--token-env") && stderr(&refused).contains("--insecure-no-token"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn a_request_after_the_server_died_is_answered_not_left_empty() {
    let peers = peers();
    let faults = root().join("tests/peers/faults.py").display().to_string();
    let python = peers.bin("python").display().to_string();
    let time = peers.bin("mcp-server-time").display().to_string();
    let arguments = ["--no-disclosure", "--", &python, &faults, "--crash-on-call", "get_current_time", "--", &time];
    let proxy = Listening::start(&peers, "proxy", &arguments);
    let session = proxy.open_session();
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(proxy.ask("POST", &[("Mcp-Session-Id", &session)], initialized).0, 202);
    let crash = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_current_time","arguments":{"timezone":"UTC"}}}"#;
    let (_, body) = proxy.ask("POST", &[("Mcp-Session-Id", &session)], crash);
    assert!(body.contains(r#""error""#), "the crashing call is answered: {body}");
    // Every request after: an answer, or the session gone (404); never an empty 200.
    for id in 3..30 {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
        let (status, body) = proxy.ask("POST", &[("Mcp-Session-Id", &session)], &request);
        assert!(status == 404 || body.contains(&format!(r#""id":{id}"#)), "request {id}: {status} {body:?}");
        if status == 404 {
            break;
        }
    }
}

/// A stubborn server behind `command` (`proxy` or `gateway`) with `--listen`, killed with
/// `signal`: the server is gone after.
fn no_server_outlives_the_front(command: &str, signal: libc::c_int) {
    let peers = peers();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("server.pid");
    let server = tool_mediator_tests::stubborn_server(&peers, &pid_file);
    let servers = dir.path().join("servers.json");
    std::fs::write(
        &servers,
        json!({"mcpServers": {"stubborn": {"command": server[0], "args": server[1..]}}}).to_string(),
    )
    .unwrap();
    let mut arguments = vec!["--grace".to_owned(), "1s".to_owned()];
    match command {
        "gateway" => arguments.extend(["--config".to_owned(), servers.display().to_string()]),
        _ => arguments.extend(std::iter::once("--".to_owned()).chain(server)),
    }
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let mut front = Listening::start(&peers, command, &arguments);
    front.open_session();
    let server = tool_mediator_tests::read_pid_file(&pid_file);
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(front.pid() as libc::pid_t, signal) };
    let status = front.exited_within(Duration::from_secs(15));
    let status = status.unwrap_or_else(|| panic!("{command} did not end on signal {signal}"));
    if signal != libc::SIGKILL {
        // It ended its servers and itself, rather than dying of the signal.
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(status.signal(), None, "{command} died of signal {signal}");
    }
    let gone = tool_mediator_tests::process_gone_within(server, Duration::from_secs(10));
    // A server left behind by a failed run is not left for the next.
    // SAFETY: kill(2) on a process this test started.
    if !gone {
        unsafe { libc::kill(server as libc::pid_t, libc::SIGKILL) };
    }
    assert!(gone, "{command}: server {server} outlived signal {signal}");
}

#[test]
fn sighup_or_sigkill_to_a_listening_front_leaves_no_server_behind() {
    for command in ["proxy", "gateway"] {
        for signal in [libc::SIGHUP, libc::SIGKILL] {
            no_server_outlives_the_front(command, signal);
        }
    }
}

#[test]
fn sessions_are_capped_below_the_open_file_limit() {
    let peers = peers();
    // Answers initialize, then reads to the end.
    let small = r#"
import json, sys
request = json.loads(sys.stdin.readline())
print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "small", "version": "1"}}}), flush=True)
sys.stdin.read()
"#;
    let python = peers.bin("python").display().to_string();
    // 64 open files: sessions past what they allow would leave none to accept a connection with.
    let arguments = ["--read-timeout", "5s", "--", &python, "-c", small];
    let proxy = Listening::start_with_nofile(&peers, "proxy", &arguments, 64);
    let mut sessions = Vec::new();
    let mut refused = false;
    for _ in 0..40 {
        let (status, head, body) = proxy.ask_with_head("POST", &[], INITIALIZE);
        if status == 503 {
            refused = true;
            break;
        }
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("small"), "{body}");
        let id =
            head.lines().find_map(|line| line.to_ascii_lowercase().strip_prefix("mcp-session-id: ").map(str::to_owned));
        sessions.push(id.expect("the answer names the session"));
    }
    assert!(refused, "{} sessions opened with 64 open files", sessions.len());
    // The sessions open still work, and one that ends makes room for another.
    let (status, _) = proxy.ask("DELETE", &[("Mcp-Session-Id", &sessions[0])], "");
    assert_eq!(status, 200);
    let (status, body) = proxy.ask("POST", &[], INITIALIZE);
    assert_eq!(status, 200, "{body}");
}

#[test]
fn asked_to_stop_the_front_answers_the_calls_under_way_and_takes_no_new_ones() {
    let peers = peers();
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid").display().to_string();
    let named = root().join("tests/peers/named.py").display().to_string();
    let python = peers.bin("python").display().to_string();
    let mut proxy = Listening::start(&peers, "proxy", &["--", &python, &named, "slow", "--pid-file", &pid_file]);
    let session = proxy.open_session();
    let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
    let (status, _) = proxy.ask("POST", &headers, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    assert_eq!(status, 202);
    let address = proxy.address.clone();
    let call = std::thread::spawn({
        let session = session.clone();
        move || {
            let endpoint = Address(address);
            let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-11-25")];
            let sleep = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"seconds":1.5}}}"#;
            endpoint.ask("POST", &headers, sleep)
        }
    });
    let sleeping = std::path::PathBuf::from(format!("{pid_file}.sleeping"));
    let began = std::time::Instant::now();
    while !sleeping.exists() && began.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(sleeping.exists(), "the call is under way");
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(proxy.pid() as libc::pid_t, libc::SIGTERM) };
    std::thread::sleep(Duration::from_millis(300));
    // No new connection is taken: a load balancer's next probe finds it gone.
    assert!(TcpStream::connect(&proxy.address).is_err(), "a new connection is refused while stopping");
    let (status, answered) = call.join().unwrap();
    assert_eq!(status, 200, "{answered}");
    assert!(answered.contains("slow slept"), "the call under way was answered: {answered}");
    let exited = proxy.exited_within(Duration::from_secs(15)).expect("it ends once the call is answered");
    assert!(exited.success(), "{exited}");
}

/// An endpoint by its address alone, for a request from another thread.
struct Address(String);

impl Endpoint for Address {
    fn address(&self) -> &str {
        &self.0
    }
}

#[test]
fn the_shared_cache_s_credentials_never_reach_a_servers_environment() {
    let peers = peers();
    // Names itself after what it finds of the cache's settings in its environment.
    let telling = r#"
import json, os, sys
request = json.loads(sys.stdin.readline())
found = [os.environ.get(name, "") for name in ("TOOL_MEDIATOR_CACHE_PASSWORD", "TOOL_MEDIATOR_CACHE_URL", "TOOL_MEDIATOR_CACHE_KEY")]
name = "+".join(found) if any(found) else "nothing"
print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": name, "version": "1"}}}), flush=True)
sys.stdin.read()
"#;
    let python = peers.bin("python").display().to_string();
    let env = [
        ("TOOL_MEDIATOR_CACHE_PASSWORD", "hunter2"),
        ("TOOL_MEDIATOR_CACHE_URL", "redis://:pw@127.0.0.1:1/0"),
        ("TOOL_MEDIATOR_CACHE_KEY", "the-mediators-secret"),
    ];
    let proxy =
        Listening::start_with_env(&peers, "proxy", &["--server-scope", "session", "--", &python, "-c", telling], &env);
    let (status, body) = proxy.ask("POST", &[], INITIALIZE);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""name":"nothing""#), "{body}");
}
