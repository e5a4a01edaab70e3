//! The proxy against a hostile MCP server of the test's own (`tests/peers/hostile.py`, standard
//! library Python only): floods of list changes, lines longer than the limit, a client that
//! does not read, batches and messages JSON-RPC does not allow. Nothing is lost, nothing grows
//! without bound, and the proxy keeps answering.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_mediator_tests::{binary, root};

/// Far beyond anything the proxy needs: these bounds say "did not hang", not "was fast".
const PATIENCE: Duration = Duration::from_secs(60);

struct Proxy {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    lines: Option<mpsc::Receiver<String>>,
    stderr: tempfile::NamedTempFile,
}

impl Proxy {
    fn start(proxy_args: &[&str], server_args: &[&str]) -> Proxy {
        let stderr = tempfile::NamedTempFile::new().unwrap();
        let mut child = Command::new(binary())
            .arg("proxy")
            .args(proxy_args)
            .args(["--", "python3"])
            .arg(root().join("tests/peers/hostile.py"))
            .args(server_args)
            .env_remove("TOOL_MEDIATOR_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr.reopen().unwrap())
            .spawn()
            .expect("the proxy starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        Proxy { child, stdin, stdout, lines: None, stderr }
    }

    /// Starts reading the proxy's output (until then the client reads nothing).
    fn read(&mut self) -> &mpsc::Receiver<String> {
        if self.lines.is_none() {
            let (sender, receiver) = mpsc::channel();
            let stdout = self.stdout.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { return };
                    if sender.send(line).is_err() {
                        return;
                    }
                }
            });
            self.lines = Some(receiver);
        }
        self.lines.as_ref().unwrap()
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("still open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Closes the proxy's input, as a client that is done does, and waits for it to end.
    fn close(&mut self) {
        drop(self.stdin.take());
        self.child.wait().unwrap();
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
        self.answer(&json!(id))
    }

    /// The next line that answers `id`, skipping notifications and other answers.
    fn answer(&mut self, id: &Value) -> Value {
        let deadline = Instant::now() + PATIENCE;
        let lines = self.read();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).unwrap_or_else(|_| panic!("no answer to {id} within {PATIENCE:?}"));
            let message: Value = serde_json::from_str(&line).expect("the proxy writes JSON");
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.initialize_at("2025-06-18");
    }

    fn initialize_at(&mut self, revision: &str) {
        let answer = self.request(
            0,
            "initialize",
            json!({"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert_eq!(answer["result"]["serverInfo"]["name"], "hostile");
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) -> Value {
        self.request(id, "tools/call", json!({"name": tool, "arguments": arguments}))
    }

    fn stats(&mut self, id: u64) -> Value {
        let answer = self.call(id, "stats", json!({}));
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().expect("stats text")).unwrap()
    }

    /// The proxy's peak resident memory so far (VmHWM), in MiB.
    fn peak_mib(&self) -> f64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|line| line.starts_with("VmHWM:")).expect("VmHWM");
        let kib: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib / 1024.0
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.stderr.path()).unwrap()
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_flood_of_list_changes_costs_a_few_listings_and_requests_keep_flowing() {
    let mut proxy = Proxy::start(&["--no-disclosure"], &["--flood", "5000", "--burst-on-list", "200"]);
    proxy.initialize();
    let listed = proxy.request(1, "tools/list", json!({}));
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 6);
    // The server answers every listing with 200 more notifications, for ever: the proxy keeps
    // relisting, one at a time, and a ping still goes through.
    let started = Instant::now();
    let pong = proxy.request(2, "ping", json!({}));
    assert_eq!(pong["result"], json!({}));
    assert!(started.elapsed() < PATIENCE);
    let stats = proxy.stats(3);
    let lists = stats["lists"].as_u64().unwrap();
    // 5,000 notifications and 200 after each listing; without coalescing that is thousands.
    let notifications = 5_000 + 200 * lists;
    assert!(lists < notifications / 20, "{lists} listings for {notifications} notifications");
    assert_eq!(stats["unexpected"], 0);
}

#[test]
fn repeated_warnings_are_held_back_with_a_count() {
    let mut proxy = Proxy::start(&["--no-disclosure"], &["--garbage", "20000"]);
    proxy.initialize();
    proxy.request(1, "tools/list", json!({}));
    // The garbage comes before the stats answer, so it has all been read by then.
    proxy.stats(2);
    // At the end, how many were held back.
    proxy.close();
    let stderr = proxy.stderr();
    let warnings = stderr.lines().filter(|line| line.contains("malformed line from the MCP server")).count();
    assert!((1..=20).contains(&warnings), "{warnings} warnings:\n{stderr}");
    let held_back: u64 = stderr
        .lines()
        .filter_map(|line| {
            let count = line.split(" more ").next()?.rsplit(|c: char| !c.is_ascii_digit()).next()?;
            line.contains("held back").then(|| count.parse::<u64>().ok()).flatten()
        })
        .sum();
    assert_eq!(held_back as usize + warnings, 20_000, "{stderr}");
}

#[test]
fn a_line_over_the_limit_is_answered_and_the_proxy_goes_on() {
    let mut proxy = Proxy::start(&["--no-disclosure", "--max-message-size", "1MiB"], &[]);
    proxy.initialize();
    // The server's answer is 8 MiB: the client hears why, instead of waiting for ever.
    let answer = proxy.call(1, "big", json!({"bytes": 8 << 20}));
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("--max-message-size"), "{answer}");
    // The client's own 8 MiB request, with its id first.
    let padding = "z".repeat(8 << 20);
    proxy.send(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"stats","arguments":{{"pad":"{padding}"}}}}}}"#));
    let refused = proxy.answer(&json!(2));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    // The client's too long answer to a request of the server's: the server hears of it.
    proxy.call(5, "ask_client", json!({}));
    proxy.send(&format!(r#"{{"jsonrpc":"2.0","id":"s1","result":{{"roots":[{{"uri":"file:///{padding}"}}]}}}}"#));
    let answers = proxy.stats(6)["client_answers"].clone();
    assert_eq!(answers[0]["id"], "s1", "{answers}");
    assert_eq!(answers[0]["error"]["code"], -32603, "{answers}");
    // Both sides go on.
    assert_eq!(
        proxy.call(3, "big", json!({"bytes": 1000}))["result"]["content"][0]["text"].as_str().unwrap().len(),
        1000
    );
    assert_eq!(proxy.stats(4)["unexpected"], 0);
    assert!(proxy.peak_mib() < 64.0, "peak {:.1} MiB", proxy.peak_mib());
}

#[test]
fn a_client_that_does_not_read_pauses_the_server_and_loses_nothing() {
    let mut proxy = Proxy::start(&["--no-disclosure"], &[]);
    // Not reading: the answers wait in the pipe and in the proxy.
    for (id, method, params) in [
        (
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        ),
        (1, "tools/call", json!({"name": "spew", "arguments": {"bytes": 200 << 20}})),
    ] {
        proxy.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string());
    }
    // The server writes 200 MiB meanwhile; the proxy holds a bounded part of it.
    std::thread::sleep(Duration::from_secs(3));
    let peak = proxy.peak_mib();
    assert!(peak < 80.0, "the proxy held {peak:.1} MiB for a client that does not read");
    // Then everything arrives, in order, the answer last.
    let lines = proxy.read();
    let deadline = Instant::now() + PATIENCE;
    let mut logged = 0usize;
    loop {
        let line = lines.recv_timeout(deadline.saturating_duration_since(Instant::now())).expect("the proxy goes on");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "notifications/message" {
            logged += 1;
        } else if message["id"] == 1 {
            assert_eq!(message["result"]["content"][0]["text"], "spewed", "{message}");
            break;
        }
    }
    // As Python's json.dumps writes it.
    let line = format!(
        r#"{{"jsonrpc": "2.0", "method": "notifications/message", "params": {{"level": "info", "data": "{}"}}}}"#,
        "y".repeat(1000)
    );
    let line_length = line.len() + 1;
    assert_eq!(logged, (200 << 20) / line_length);
}

#[test]
fn in_the_revision_that_has_batches_each_message_of_one_is_served() {
    let mut proxy = Proxy::start(&["--no-disclosure"], &[]);
    proxy.initialize_at("2025-03-26");
    proxy.send(r#"[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":11,"method":"tools/list"}]"#);
    assert_eq!(proxy.answer(&json!(10))["result"], json!({}));
    assert_eq!(proxy.answer(&json!(11))["result"]["tools"].as_array().unwrap().len(), 6);
    assert_eq!(proxy.stats(12)["unexpected"], 0);
}

#[test]
fn cancelled_requests_stop_waiting() {
    let mut proxy = Proxy::start(&["--no-disclosure"], &[]);
    proxy.initialize();
    proxy.request(1, "tools/list", json!({}));
    // Far more than the proxy lets wait at once (10,000), each cancelled: none is left waiting.
    let mut batch = String::new();
    for id in 100..10_300 {
        batch.push_str(&format!(
            "{}\n{}\n",
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "hang", "arguments": {}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}})
        ));
    }
    proxy.send(batch.trim_end());
    assert_eq!(proxy.request(2, "ping", json!({}))["result"], json!({}));
    assert_eq!(proxy.stats(3)["unexpected"], 0);
}

#[test]
fn a_client_that_leaves_while_the_server_does_not_read_ends_the_proxy() {
    // The client: a process that writes far more than the pipes and the proxy's outbox for the
    // server hold, to a server that reads nothing after `initialize`; it goes while stuck.
    let writer = r#"
import json, sys
sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}) + "\n")
line = json.dumps({"jsonrpc": "2.0", "method": "notifications/x", "params": {"pad": "p" * 65536}}) + "\n"
while True:
    sys.stdout.write(line)
"#;
    let mut client = Command::new("python3").args(["-c", writer]).stdout(Stdio::piped()).spawn().unwrap();
    let mut proxy = Command::new(binary())
        .args(["proxy", "--no-disclosure", "--grace", "1s", "--", "python3"])
        .arg(root().join("tests/peers/hostile.py"))
        .arg("--deaf")
        .stdin(Stdio::from(client.stdout.take().unwrap()))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the proxy holds its limit for the server and stops reading the client.
    std::thread::sleep(Duration::from_secs(3));
    assert!(proxy.try_wait().unwrap().is_none(), "the proxy is still serving");
    // The client goes: it stops writing, and nothing reads what the proxy writes to it.
    client.kill().unwrap();
    client.wait().unwrap();
    drop(proxy.stdout.take());
    let deadline = Instant::now() + PATIENCE;
    while proxy.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the proxy did not end after its client left");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn batches_and_invalid_messages_are_answered_and_never_forwarded() {
    let mut proxy = Proxy::start(&["--no-disclosure"], &[]);
    proxy.initialize();
    proxy.send(r#"[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":11,"method":"tools/list"}]"#);
    let lines = proxy.read();
    let batch: Value = serde_json::from_str(&lines.recv_timeout(PATIENCE).unwrap()).unwrap();
    let answers = batch.as_array().expect("a batch is answered with a batch");
    assert_eq!(answers.iter().map(|answer| answer["id"].clone()).collect::<Vec<_>>(), [json!(10), json!(11)]);
    assert!(answers.iter().all(|answer| answer["error"]["code"] == -32600));

    proxy.send("[]");
    assert_eq!(proxy.answer(&Value::Null)["error"]["code"], -32600);
    proxy.send(r#"{"id":12,"method":"ping"}"#);
    assert_eq!(proxy.answer(&json!(12))["error"]["code"], -32600);
    proxy.send(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#);
    assert_eq!(proxy.answer(&json!(1.5))["error"]["code"], -32600);
    proxy.send(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#);
    assert_eq!(proxy.answer(&Value::Null)["error"]["code"], -32600);
    proxy.send(r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"stats","name":"big"}}"#);
    let duplicate = proxy.answer(&json!(13));
    assert!(duplicate["error"]["message"].as_str().unwrap().contains("duplicate key `name`"), "{duplicate}");
    // An answer from the server without "jsonrpc": "2.0" is not passed on, but its asker hears.
    let sloppy = proxy.call(16, "sloppy", json!({}));
    assert_eq!(sloppy["error"]["code"], -32603, "{sloppy}");
    // None of it reached the server.
    assert_eq!(proxy.stats(14)["unexpected"], 0);
    assert_eq!(proxy.request(15, "ping", json!({}))["result"], json!({}));
}

#[test]
fn a_tools_call_without_an_id_is_dropped_not_forwarded() {
    // Locked with an empty lock, every tool is new; with --quarantine nothing would pass
    // unlisted: the screen never sees a call that is not a request.
    let mut proxy = Proxy::start(&["--no-disclosure"], &[]);
    proxy.initialize();
    for method in ["tools/call", "prompts/get", "resources/read", "tools/list"] {
        let params = json!({"name": "hang", "uri": "file:///etc/passwd", "arguments": {}});
        proxy.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string());
    }
    assert_eq!(proxy.stats(20)["without_id"], 0, "{}", proxy.stderr());
    assert!(proxy.stderr().contains("`tools/call` without an id"), "{}", proxy.stderr());
}

#[test]
fn a_request_that_is_not_utf8_is_answered_with_its_id_and_never_forwarded() {
    let mut proxy = Proxy::start(&["--no-disclosure"], &[]);
    proxy.initialize();
    let stdin = proxy.stdin.as_mut().unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{\"name\":\"st\xffats\"}}\n")
        .unwrap();
    stdin.flush().unwrap();
    let answer = proxy.answer(&json!(21));
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("UTF-8"), "{answer}");
    // Without an id it can be read from, nothing is answered and nothing forwarded.
    let stdin = proxy.stdin.as_mut().unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"name\":\"h\xffang\"}}\n").unwrap();
    stdin.flush().unwrap();
    let stats = proxy.stats(22);
    assert_eq!((stats["unexpected"].clone(), stats["without_id"].clone()), (json!(0), json!(0)), "{stats}");
}
