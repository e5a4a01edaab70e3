//! The proxy in front of a remote MCP server over Streamable HTTP: server-everything in its
//! `streamableHttp` mode on 127.0.0.1, the MCP Python SDK and the Inspector as clients.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use tool_mediator_tests::{Everything, binary, peers, stderr, stdout};

/// `tool-mediator proxy EXTRA... --url` to server-everything, as a command line.
fn proxy(everything: &Everything, extra: &[&str]) -> Vec<String> {
    let mut command = vec![binary().display().to_string(), "proxy".to_owned()];
    command.extend(extra.iter().map(|&argument| argument.to_owned()));
    command.extend(["--url".to_owned(), everything.url.clone()]);
    command
}

fn strs(command: &[String]) -> Vec<&str> {
    command.iter().map(String::as_str).collect()
}

#[test]
fn a_remote_server_is_mediated_and_its_requests_to_the_client_pass_through() {
    let peers = peers();
    let everything = Everything::start(&peers);
    // The server asks the client for its roots (on the stream it opens with GET) and for a
    // sampling (in the answer stream of the tool call): both reach the Python client.
    let outcome = peers.python_client("server-requests", &[], &strs(&proxy(&everything, &["--no-disclosure"])));
    let names: Vec<&str> = outcome["names"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(names.contains(&"get-sum") && names.contains(&"get-roots-list"), "{names:?}");
    assert!(outcome["roots"].as_str().unwrap().contains("file:///tmp/proxy-roots"), "{outcome}");
    assert!(outcome["sampling"].as_str().unwrap().contains("sampled through the proxy"), "{outcome}");

    let sum = peers.python_client("call", &["get-sum", r#"{"a": 2, "b": 3}"#], &strs(&proxy(&everything, &[])));
    assert_eq!(sum["result"]["content"][0]["text"], "The sum of 2 and 3 is 5.", "{sum}");
}

#[test]
fn resources_and_prompts_pass_through_to_the_inspector() {
    let peers = peers();
    let everything = Everything::start(&peers);
    let target = proxy(&everything, &[]);
    let read = peers.inspector(
        &strs(&target),
        &["--method", "resources/read", "--uri", "demo://resource/static/document/architecture.md"],
    );
    assert!(read.status.success(), "{}", stderr(&read));
    let read: Value = serde_json::from_str(&stdout(&read)).unwrap();
    assert!(read["contents"][0]["text"].as_str().unwrap().contains("Architecture"), "{read}");

    let prompt = peers.inspector(&strs(&target), &["--method", "prompts/get", "--prompt-name", "simple-prompt"]);
    assert!(prompt.status.success(), "{}", stderr(&prompt));
    let prompt: Value = serde_json::from_str(&stdout(&prompt)).unwrap();
    assert!(prompt["messages"].as_array().is_some_and(|messages| !messages.is_empty()), "{prompt}");
}

#[test]
fn a_server_that_cannot_be_reached_gets_every_request_answered_with_why() {
    // A port nobody listens on.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut proxy = Command::new(binary())
        .args(["proxy", "--url", &format!("http://127.0.0.1:{port}/mcp")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = proxy.stdin.take().unwrap();
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut answer = String::new();
    BufReader::new(proxy.stdout.take().unwrap()).read_line(&mut answer).unwrap();
    drop(input);
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["id"], 1);
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.starts_with(&format!("cannot reach the MCP server at http://127.0.0.1:{port}/mcp")), "{message}");
    assert!(proxy.wait().unwrap().success(), "the client closed: the proxy ends as usual");
}

#[test]
fn bad_urls_and_headers_are_refused_before_anything_starts() {
    let cases: [(&[&str], &str); 4] = [
        (&["--url", "ftp://example.com/mcp"], "an MCP server is reached over http or https, not ftp"),
        (&["--url", "not a url"], "`not a url`"),
        (&["--url", "http://127.0.0.1:1/mcp", "--header", "no colon"], "a header is written `Name: value`"),
        (&["--url", "http://127.0.0.1:1/mcp", "--", "server"], "cannot be used with"),
    ];
    for (arguments, expected) in cases {
        let mut command = vec!["proxy"];
        command.extend_from_slice(arguments);
        let output = tool_mediator_tests::run(&command, None);
        assert_eq!(output.status.code(), Some(2), "{arguments:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{arguments:?}: {}", stderr(&output));
    }
    let output =
        tool_mediator_tests::run(&["proxy", "--url", "http://127.0.0.1:1/mcp", "--header", "Bad Name: v"], None);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("the header `Bad Name` cannot be sent"), "{}", stderr(&output));
}

/// A Streamable HTTP server of a few lines, on a thread: `initialize` is answered as JSON with
/// a session; every other request as `reply` says, given the request line, the message, the
/// `Last-Event-ID` header and the id of the last request. Returns its port and the requests it
/// saw (`METHOD PATH HTTP/1.1 LAST-EVENT-ID`).
fn scripted_server(
    reply: fn(&str, &Value, &str, &str) -> String,
) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::Read as _;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        let mut last_id = String::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push(line.trim_end().to_owned());
            }
            let Some(request_line) = head.first().cloned() else { continue };
            let header = |name: &str| {
                head.iter().find_map(|line| {
                    let (key, value) = line.split_once(':')?;
                    key.eq_ignore_ascii_case(name).then(|| value.trim().to_owned())
                })
            };
            let length: usize = header("content-length").and_then(|length| length.parse().ok()).unwrap_or(0);
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let last_event = header("last-event-id").unwrap_or_default();
            log.lock().unwrap().push(format!("{request_line} {last_event}"));
            let answer = if request_line.starts_with("POST") && message["method"] == "initialize" {
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "scripted", "version": "1"}}})
                .to_string();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{answer}",
                    answer.len()
                )
            } else if request_line.starts_with("POST") && message.get("id").is_none() {
                "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
            } else {
                if request_line.starts_with("POST") {
                    last_id = message["id"].to_string();
                }
                reply(&request_line, &message, &last_event, &last_id)
            };
            let _ = stream.write_all(answer.as_bytes());
        }
    });
    (port, seen)
}

const NOT_ALLOWED: &str = "HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// `tool-mediator proxy FLAGS... --url` in front of `port`: its input, its output lines, the
/// process.
fn proxy_at(port: u16, flags: &[&str]) -> (std::process::ChildStdin, impl FnMut() -> Value, Child) {
    let mut proxy = Command::new(binary())
        .arg("proxy")
        .args(flags)
        .args(["--url", &format!("http://127.0.0.1:{port}/mcp")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = proxy.stdin.take().unwrap();
    let mut output = BufReader::new(proxy.stdout.take().unwrap());
    let read = move || {
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or(Value::Null)
    };
    (input, read, proxy)
}

/// The proxy in front of `port`, initialized; its input, its output lines, the process.
fn proxied(port: u16) -> (std::process::ChildStdin, impl FnMut() -> Value, Child) {
    let (mut input, mut read, proxy) = proxy_at(port, &["--no-disclosure"]);
    writeln!(input, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#).unwrap();
    assert_eq!(read()["result"]["serverInfo"]["name"], "scripted");
    writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    (input, read, proxy)
}

#[test]
fn an_answer_stream_closed_early_is_resumed_from_its_last_event() {
    // A request's stream closes after a priming event (an id, a retry); a GET with
    // `Last-Event-ID` brings the answer: what the specification lets a server do.
    let (port, seen) = scripted_server(|request, _, last_event, last_id| {
        if request.starts_with("POST") {
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nid: e1\nretry: 10\ndata: \n\n".to_owned()
        } else if last_event == "e1" {
            let answer = format!(
                r#"{{"jsonrpc":"2.0","id":{last_id},"result":{{"content":[{{"type":"text","text":"resumed"}}]}}}}"#
            );
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nid: e2\ndata: {answer}\n\n"
            )
        } else {
            NOT_ALLOWED.to_owned()
        }
    });
    let (mut input, mut read, mut proxy) = proxied(port);
    writeln!(input, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).unwrap();
    let answer = read();
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "resumed", "{answer}");
    drop(input);
    assert!(proxy.wait().unwrap().success());
    let seen = seen.lock().unwrap().clone();
    assert!(seen.iter().any(|request| request.starts_with("GET /mcp") && request.ends_with(" e1")), "{seen:?}");
}

#[test]
fn a_session_the_server_ended_ends_the_proxy_with_why() {
    let (port, _) = scripted_server(|request, _, _, _| match request.starts_with("POST") {
        true => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
        false => NOT_ALLOWED.to_owned(),
    });
    let (mut input, mut read, mut proxy) = proxied(port);
    writeln!(input, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).unwrap();
    let answer = read();
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.ends_with("ended the session (HTTP 404)"), "{answer}");
    // The proxy does not wait for its client: the server is gone, and says so.
    let status = proxy.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut proxy.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("exited first") && stderr.contains("ended the session (HTTP 404)"), "{stderr}");
    drop(input);
}

/// An HTTP server of a few lines on 127.0.0.1, on a thread: every request is answered as
/// `reply` says, given the request line and the message (`null` for none). Returns its port and the head of
/// each request it saw, whole (request line and headers).
fn recording_server(reply: fn(&str, &Value) -> String) -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::Read as _;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let length: usize = head
                .lines()
                .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length:").map(|n| n.trim().to_owned()))
                .and_then(|length| length.parse().ok())
                .unwrap_or(0);
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let request_line = head.lines().next().unwrap_or_default().to_owned();
            log.lock().unwrap().push(head);
            let message = serde_json::from_slice::<Value>(&body).unwrap_or_default();
            let _ = stream.write_all(reply(&request_line, &message).as_bytes());
        }
    });
    (port, seen)
}

fn redirect(location: &str) -> String {
    format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

/// `tool-mediator proxy --url URL EXTRA...` given `initialize`: its answer, and its stderr.
fn initialize_through(url: &str, extra: &[&str]) -> (Value, String) {
    initialize_through_with(url, extra, |_| {})
}

/// [`initialize_through`] with the command set up by `configure` first (its environment).
fn initialize_through_with(url: &str, extra: &[&str], configure: impl FnOnce(&mut Command)) -> (Value, String) {
    let mut proxy = Command::new(binary());
    configure(&mut proxy);
    let mut proxy = proxy
        .args(["proxy", "--url", url])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = proxy.stdin.take().unwrap();
    writeln!(
        input,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut answer = String::new();
    BufReader::new(proxy.stdout.take().unwrap()).read_line(&mut answer).unwrap();
    drop(input);
    let output = proxy.wait_with_output().unwrap();
    (serde_json::from_str(&answer).unwrap_or(Value::Null), stderr(&output))
}

#[test]
fn a_cross_origin_redirect_never_carries_a_user_header() {
    // Two origins on this machine: the one the user named redirects to the other, which
    // records what reaches it.
    let (other, reached) = recording_server(|_, _| {
        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
    });
    static OTHER: std::sync::OnceLock<u16> = std::sync::OnceLock::new();
    OTHER.set(other).unwrap();
    let (named, _) = recording_server(|_, _| redirect(&format!("http://127.0.0.1:{}/mcp", OTHER.get().unwrap())));
    let url = format!("http://127.0.0.1:{named}/mcp?api_key=query-s3cret");
    let (answer, log) = initialize_through(&url, &["--header", "X-Api-Key: header-s3cret"]);

    let reached = reached.lock().unwrap().clone();
    assert!(reached.is_empty(), "a request reached the other origin: {reached:?}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&format!("http://127.0.0.1:{named}"))
            && message.contains(&format!("http://127.0.0.1:{other}")),
        "the refusal names both origins: {answer}"
    );
    assert!(message.contains("configure"), "{message}");
    for secret in ["query-s3cret", "header-s3cret"] {
        assert!(!message.contains(secret) && !log.contains(secret), "{secret} was shown: {message}\n{log}");
    }
}

#[test]
fn a_same_origin_redirect_is_followed_and_a_loop_or_another_scheme_is_refused() {
    let (port, seen) = recording_server(|request, message| {
        let id = &message["id"];
        let answer = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-11-25","capabilities":{{}},"serverInfo":{{"name":"moved","version":"1"}}}}}}"#
        );
        match request.split(' ').nth(1).unwrap_or_default() {
            "/old" => redirect("/mcp"),
            "/loop" => redirect("/loop"),
            "/file" => redirect("file:///etc/passwd"),
            "/mcp" if request.starts_with("POST") => format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            ),
            _ => NOT_ALLOWED.to_owned(),
        }
    });
    let (answer, _) = initialize_through(&format!("http://127.0.0.1:{port}/old"), &["--header", "X-Api-Key: k"]);
    assert_eq!(answer["result"]["serverInfo"]["name"], "moved", "{answer} {:?}", seen.lock().unwrap());
    let moved = seen.lock().unwrap().iter().find(|head| head.starts_with("POST /mcp")).cloned().unwrap();
    assert!(moved.to_ascii_lowercase().contains("x-api-key: k"), "the same origin keeps its header: {moved}");
    assert!(!moved.to_ascii_lowercase().contains("referer"), "no Referer is ever sent: {moved}");

    let (answer, _) = initialize_through(&format!("http://127.0.0.1:{port}/loop"), &[]);
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("redirect"), "{answer}");
    let loops = seen.lock().unwrap().iter().filter(|head| head.starts_with("POST /loop")).count();
    assert!(loops <= 6, "a redirect loop is followed {loops} times");

    let (answer, _) = initialize_through(&format!("http://127.0.0.1:{port}/file"), &[]);
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("file://"), "{answer}");
}

#[test]
fn a_request_the_client_cancels_stops_waiting_on_a_server_that_never_answers() {
    use std::io::Read as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    // Answers initialize; takes a ping and never answers it, not even with headers; says when
    // the proxy lets that connection go.
    static LET_GO: AtomicBool = AtomicBool::new(false);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line.to_ascii_lowercase());
                }
                let length = head
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length:").and_then(|n| n.trim().parse().ok()))
                    .unwrap_or(0);
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let message: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let answer = if !head.starts_with("post") {
                    NOT_ALLOWED.to_owned()
                } else if message["method"] == "initialize" {
                    let answer = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "protocolVersion": "2025-11-25", "capabilities": {},
                        "serverInfo": {"name": "silent", "version": "1"}}})
                    .to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                        answer.len()
                    )
                } else if message["method"] == "ping" {
                    // Nothing, until the proxy closes the connection.
                    let mut rest = Vec::new();
                    let _ = reader.read_to_end(&mut rest);
                    LET_GO.store(true, Ordering::SeqCst);
                    return;
                } else {
                    "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
                };
                let _ = stream.write_all(answer.as_bytes());
            });
        }
    });
    let mut proxy = Command::new(binary())
        .args(["proxy", "--no-disclosure", "--url", &format!("http://127.0.0.1:{port}/mcp")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut input = proxy.stdin.take().unwrap();
    let mut output = BufReader::new(proxy.stdout.take().unwrap());
    writeln!(input, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#).unwrap();
    let mut line = String::new();
    output.read_line(&mut line).unwrap();
    assert!(line.contains("silent"), "{line}");
    writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#).unwrap();
    writeln!(input, r#"{{"jsonrpc":"2.0","id":2,"method":"ping"}}"#).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!LET_GO.load(Ordering::SeqCst), "the ping is waited for");
    writeln!(input, r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":2}}}}"#).unwrap();
    let started = std::time::Instant::now();
    while !LET_GO.load(Ordering::SeqCst) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the cancelled request's connection stays open"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    drop(input);
    let _ = proxy.wait();
}

#[test]
fn a_refusal_without_a_bearer_challenge_starts_no_sign_in() {
    // A server that wants an API key, not OAuth: its 401 passes to the client as before, and
    // nothing is asked of anyone (no metadata fetched, no browser).
    let (port, seen) = recording_server(|_, _| {
        "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"keys\"\r\nContent-Length: 11\r\nConnection: close\r\n\r\nwant a key\n"
            .to_owned()
    });
    let (answer, log) = initialize_through(&format!("http://127.0.0.1:{port}/mcp"), &[]);
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("401") && message.contains("want a key"), "{answer}");
    assert!(!log.contains("sign in"), "{log}");
    let seen = seen.lock().unwrap();
    assert!(seen.iter().all(|head| head.starts_with("POST /mcp")), "only the request itself: {seen:?}");
}

/// An answer of `json` with `result`, for the `recording_server`.
fn json_answer(id: &Value, result: &Value) -> String {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn a_stateless_request_carries_the_headers_that_mirror_it() {
    // A server of the 2026-07-28 revision with a tool whose name is not ASCII and an argument
    // it asks to see in a header: every request names its method and revision in headers, the
    // call its tool (as base64) and that argument.
    let (port, seen) = recording_server(|_, message| {
        let result = match message["method"].as_str() {
            Some("server/discover") => serde_json::json!({
                "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "weather", "version": "1"}
            }),
            Some("tools/list") => serde_json::json!({"tools": [{
                "name": "météo", "description": "The weather of a region, today.",
                "inputSchema": {"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"}, "days": {"type": "integer"}
                }}
            }]}),
            _ => serde_json::json!({"content": [{"type": "text", "text": "sunny"}]}),
        };
        json_answer(&message["id"], &result)
    });
    let (mut input, mut read, mut proxy) = proxy_at(port, &["--no-cache", "--llm", "off"]);
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let mut ask = |id: u32, method: &str, params: &str| -> Value {
        writeln!(input, r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{params}{meta}}}}}"#).unwrap();
        read()
    };
    let listed = ask(1, "tools/list", "");
    let name = listed["result"]["tools"][0]["name"].as_str().expect("listed").to_owned();
    let called = ask(2, "tools/call", &format!(r#""name":"{name}","arguments":{{"region":"Zürich","days":2}},"#));
    assert_eq!(called["result"]["content"][0]["text"], "sunny", "{called}");
    drop(input);
    let _ = proxy.wait();

    // Each request's headers, their names in lower case.
    let heads: Vec<Vec<(String, String)>> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|head| {
            head.lines()
                .skip(1)
                .filter_map(|line| line.split_once(':'))
                .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
                .collect()
        })
        .collect();
    let header = |head: &[(String, String)], name: &str| {
        head.iter().find(|(have, _)| have == name).map(|(_, value)| value.clone())
    };
    let sent = |method: &str| {
        heads.iter().find(|head| header(head, "mcp-method").as_deref() == Some(method)).cloned().expect(method)
    };
    let listing = sent("tools/list");
    assert_eq!(header(&listing, "mcp-protocol-version").as_deref(), Some("2026-07-28"), "{listing:?}");
    let call = sent("tools/call");
    // "météo" and "Zürich" as base64 of their UTF-8.
    assert_eq!(header(&call, "mcp-name").as_deref(), Some("=?base64?bcOpdMOpbw==?="), "{call:?}");
    assert_eq!(header(&call, "mcp-param-region").as_deref(), Some("=?base64?WsO8cmljaA==?="), "{call:?}");
    assert_eq!(header(&call, "mcp-param-days"), None, "only the marked argument: {call:?}");
}

/// A remote server that signs machines in with client credentials, on wiremock: the MCP endpoint
/// at `/mcp` takes `Bearer access-2` only (the token a refresh gives), its resource metadata
/// and its authorization server's at their well-known paths, the token endpoint giving
/// `access-1` (already expiring, with `refresh-1`) for client credentials and `access-2` for a
/// refresh that brings the client's secret in Basic authentication.
async fn client_credentials_server(id: &str, secret: &str) -> wiremock::MockServer {
    use base64::Engine as _;
    use wiremock::matchers::{body_string_contains, header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    let base = server.uri();
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .and(header("authorization", "Bearer access-2"))
        .respond_with(|request: &wiremock::Request| {
            let asked: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "jsonrpc": "2.0", "id": asked["id"],
                "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "bot", "version": "1"}}
            }))
        })
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(ResponseTemplate::new(401).insert_header(
            "www-authenticate",
            format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\"").as_str(),
        ))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-protected-resource/mcp"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(serde_json::json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-authorization-server"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "issuer": base, "token_endpoint": format!("{base}/token"),
            "token_endpoint_auth_methods_supported": ["client_secret_basic"],
            "grant_types_supported": ["client_credentials", "refresh_token"]
        })))
        .mount(&server)
        .await;
    let basic = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}")));
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(header("authorization", basic.as_str()))
        .and(body_string_contains("grant_type=client_credentials"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "access_token": "access-1", "token_type": "Bearer", "expires_in": 1, "refresh_token": "refresh-1"
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(header("authorization", basic.as_str()))
        .and(body_string_contains("grant_type=refresh_token"))
        .and(body_string_contains("refresh_token=refresh-1"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "access_token": "access-2", "token_type": "Bearer", "expires_in": 600, "refresh_token": "refresh-2"
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(401).set_body_json(serde_json::json!({"error": "invalid_client"})))
        .mount(&server)
        .await;
    server
}

#[test]
fn a_client_secret_stays_in_the_environment_and_out_of_the_credentials_file() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime.block_on(client_credentials_server("bot", "s3cret-bot"));
    let url = format!("{}/mcp", server.uri());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let env = |command: &mut Command| {
        command
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", &data)
            .env("TOOL_MEDIATOR_CREDENTIAL_STORE", "file")
            .env("BOT_SECRET", "s3cret-bot")
            .env_remove("TOOL_MEDIATOR_LOG");
    };

    let mut login = Command::new(binary());
    env(&mut login);
    login.args(["auth", "login", &url, "--oauth-client-id", "bot", "--oauth-client-secret-env", "BOT_SECRET"]);
    let login = login.arg("--oauth-client-credentials").output().unwrap();
    assert!(login.status.success(), "{}", stderr(&login));
    let kept = std::fs::read_to_string(data.join("tool-mediator/credentials.json")).unwrap();
    assert!(kept.contains("access-1"), "signed in: {kept}");
    assert!(!kept.contains("s3cret-bot"), "the secret stays in the environment: {kept}");

    // The next run refreshes the expiring token with the secret read from the environment again
    // (no --oauth flags: what the sign-in kept says where the secret is).
    let (answer, log) = initialize_through_with(&url, &[], env);
    assert_eq!(answer["result"]["serverInfo"]["name"], "bot", "{answer}\n{log}");
    let kept = std::fs::read_to_string(data.join("tool-mediator/credentials.json")).unwrap();
    assert!(kept.contains("refresh-2") && !kept.contains("s3cret-bot"), "{kept}");
}

/// `tool-mediator auth login URL` as a machine with client credentials (`bot`, its secret in
/// `BOT_SECRET`), its credentials file under `data`: the finished process.
fn machine_login(url: &str, home: &std::path::Path, data: &std::path::Path) -> std::process::Output {
    Command::new(binary())
        .env("HOME", home)
        .env("XDG_DATA_HOME", data)
        .env("TOOL_MEDIATOR_CREDENTIAL_STORE", "file")
        .env("BOT_SECRET", "s3cret-bot")
        .env_remove("TOOL_MEDIATOR_LOG")
        .args(["auth", "login", url, "--oauth-client-id", "bot", "--oauth-client-secret-env", "BOT_SECRET"])
        .arg("--oauth-client-credentials")
        .output()
        .unwrap()
}

#[cfg(unix)]
#[test]
fn a_sign_in_that_cannot_be_kept_fails_auth_login_saying_why() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = runtime.block_on(client_credentials_server("bot", "s3cret-bot"));
    let dir = tempfile::tempdir().unwrap();
    let (data, elsewhere) = (dir.path().join("data"), dir.path().join("elsewhere"));
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    // The credentials' directory is a link someone put there: nothing is written through it.
    std::os::unix::fs::symlink(&elsewhere, data.join("tool-mediator")).unwrap();
    let login = machine_login(&format!("{}/mcp", server.uri()), dir.path(), &data);
    let said = stderr(&login);
    assert_eq!(login.status.code(), Some(1), "{said}");
    assert!(!said.contains("kept in"), "{said}");
    assert!(said.contains("credentials.json") && said.contains("link"), "names the file and why: {said}");
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none(), "nothing written through the link");
}

/// A remote server whose authorization server says `scope` when it grants a token, and
/// `description` when it refuses one (to the client `bad`).
async fn hostile_token_server(scope: &str, description: &str) -> wiremock::MockServer {
    use base64::Engine as _;
    use wiremock::matchers::{body_string_contains, header, method, path};
    use wiremock::{Mock, ResponseTemplate};
    let basic =
        |id: &str| format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{id}:s3cret-bot")));
    let server = client_credentials_server("bot", "s3cret-bot").await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(header("authorization", basic("bot").as_str()))
        .and(body_string_contains("grant_type=client_credentials"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "access_token": "access-1", "token_type": "Bearer", "expires_in": 600, "scope": scope
        })))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .and(header("authorization", basic("bad").as_str()))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_json(serde_json::json!({"error": "invalid_client", "error_description": description})),
        )
        .with_priority(1)
        .mount(&server)
        .await;
    server
}

#[test]
fn what_an_authorization_server_says_reaches_the_terminal_with_its_escapes_shown_not_acted_on() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31mread\u{9b}1m\rfake";
    let server = runtime.block_on(hostile_token_server(hostile, hostile));
    let url = format!("{}/mcp", server.uri());
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let check = |said: &str| {
        assert!(
            !said.chars().any(|c| c.is_control() && c != '\n'),
            "a control character reached the terminal: {said:?}"
        );
        assert!(said.contains("\\u{1b}"), "shown escaped: {said:?}");
    };

    let login = machine_login(&url, dir.path(), &data);
    assert!(login.status.success(), "{}", stderr(&login));
    check(&stderr(&login));

    let status = Command::new(binary())
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", &data)
        .env("TOOL_MEDIATOR_CREDENTIAL_STORE", "file")
        .args(["auth", "status"])
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", stderr(&status));
    check(&format!("{}{}", stdout(&status), stderr(&status)));

    // The token endpoint's refusal, in the error.
    let refused = Command::new(binary())
        .env("HOME", dir.path())
        .env("XDG_DATA_HOME", &data)
        .env("TOOL_MEDIATOR_CREDENTIAL_STORE", "file")
        .env("BOT_SECRET", "s3cret-bot")
        .args(["auth", "login", &url, "--oauth-client-id", "bad", "--oauth-client-secret-env", "BOT_SECRET"])
        .args(["--oauth-client-credentials"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("invalid_client"), "{}", stderr(&refused));
    check(&stderr(&refused));
}
