//! The proxy in front of a remote MCP server over Streamable HTTP: server-everything in its
//! `streamableHttp` mode on 127.0.0.1, the MCP Python SDK and the Inspector as clients.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use tool_mediator_tests::{Peers, binary, peers, stderr, stdout};

/// server-everything serving Streamable HTTP on a port of its own; ended when dropped.
struct Everything {
    child: Child,
    url: String,
}

impl Everything {
    fn start(peers: &Peers) -> Everything {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = peers
            .command(peers.bin("mcp-server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("server-everything starts");
        // It says so on stderr once it listens.
        let (sender, receiver) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on port") {
                    let _ = sender.send(());
                }
            }
        });
        receiver.recv_timeout(Duration::from_secs(60)).expect("server-everything listens within a minute");
        Everything { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }

    fn proxy(&self, extra: &[&str]) -> Vec<String> {
        let mut command = vec![binary().display().to_string(), "proxy".to_owned()];
        command.extend(extra.iter().map(|&argument| argument.to_owned()));
        command.extend(["--url".to_owned(), self.url.clone()]);
        command
    }
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    let outcome = peers.python_client("server-requests", &[], &strs(&everything.proxy(&["--no-disclosure"])));
    let names: Vec<&str> = outcome["names"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(names.contains(&"get-sum") && names.contains(&"get-roots-list"), "{names:?}");
    assert!(outcome["roots"].as_str().unwrap().contains("file:///tmp/proxy-roots"), "{outcome}");
    assert!(outcome["sampling"].as_str().unwrap().contains("sampled through the proxy"), "{outcome}");

    let sum = peers.python_client("call", &["get-sum", r#"{"a": 2, "b": 3}"#], &strs(&everything.proxy(&[])));
    assert_eq!(sum["result"]["content"][0]["text"], "The sum of 2 and 3 is 5.", "{sum}");
}

#[test]
fn resources_and_prompts_pass_through_to_the_inspector() {
    let peers = peers();
    let everything = Everything::start(&peers);
    let target = everything.proxy(&[]);
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
