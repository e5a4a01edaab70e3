//! The front against a small MCP server written in `sh` (it answers `initialize`,
//! `server/discover`, `tools/list` and `tools/call` by the id it reads, and notes each start in a
//! file): both protocol eras on one endpoint.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::process::Command;

use std::net::SocketAddr;

use super::{Exposure, ListenOptions, serve};
use crate::options::ProxyOptions;
use crate::proxy::ServerSpec;
use crate::router::LinkSettings;
use crate::servers::{Scope, View, ViewedServer};
use crate::upstream::Upstream;
use tool_mediator::session::SessionPolicy;

/// Answers by the last `"id":` of each line (the tests send no other); a start is a line in
/// `$STARTS`. It lists one tool, `hello`, or with `$MANY` set three, and `$EXTRA` more; each
/// name after `$PREFIX`. A call with a `wait` argument is never answered; a cancellation is a
/// line in `$STARTS.cancelled`.
const SERVER: &str = r#"
echo started >> "$STARTS"
while IFS= read -r line; do
  case "$line" in
    *'"notifications/cancelled"'*) printf '%s\n' "$line" >> "$STARTS.cancelled"; continue ;;
    *'"wait"'*) continue ;;
  esac
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\("[^"]*"\|[0-9-]*\).*/\1/p')
  [ -n "$id" ] || continue
  case "$line" in
    *'"method":"initialize"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id" ;;
    *'"method":"server/discover"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"sh","version":"1"}}}\n' "$id" ;;
    *'"method":"tools/list"'*)
      echo listed >> "$STARTS.listed"
      if [ -n "$MANY" ]; then more=',{"name":"'"$PREFIX"'hello_again","description":"Says hello again.","inputSchema":{"type":"object"}},{"name":"'"$PREFIX"'hello_there","description":"Says hello there.","inputSchema":{"type":"object"}}'
        i=0
        while [ $i -lt "${EXTRA:-0}" ]; do
          more="$more,{\"name\":\"${PREFIX}extra_$i\",\"description\":\"An extra tool of the test server, number $i, which does nothing of use.\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"Any text.\"}}}}"
          i=$((i+1))
        done
      else more=''; fi
      printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"%shello","description":"Says hello.","inputSchema":{"type":"object"}}%s]}}\n' "$id" "$PREFIX" "$more" ;;
    *'"method":"tools/call"'*)
      printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hello"}]}}\n' "$id" ;;
    *'"method":'*)
      printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n' "$id" ;;
  esac
done
"#;

const REVISION: &str = "2026-07-28";

/// The `_meta` envelope of the stateless revision.
fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": REVISION,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

struct Front {
    url: String,
    http: reqwest::Client,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
    starts: std::path::PathBuf,
}

impl Front {
    async fn start() -> Front {
        Front::start_with(SessionPolicy::default(), false, Scope::Shared).await
    }

    /// A front whose sessions follow `policy`, its server listing three tools when `many`,
    /// shared by the sessions or not as `scope` says.
    async fn start_with(policy: SessionPolicy, many: bool, scope: Scope) -> Front {
        Front::serving(policy, &[("", "", many)], scope, |listen| listen).await
    }

    /// A front of the servers `(name, prefix of its tools, many)`, each started from
    /// [`SERVER`], its listening options as `listen` makes them.
    async fn serving(
        policy: SessionPolicy,
        servers: &[(&str, &str, bool)],
        scope: Scope,
        listen: impl FnOnce(ListenOptions) -> ListenOptions,
    ) -> Front {
        let dir = tempfile::tempdir().unwrap();
        let starts = dir.path().join("starts");
        let specs = servers
            .iter()
            .map(|&(name, prefix, many)| {
                let (script, starts_at, prefix) = (SERVER.to_owned(), starts.clone(), prefix.to_owned());
                let extra = name == "extra";
                let start = move || {
                    let mut command = Command::new("sh");
                    command.arg("-c").arg(&script).env("STARTS", &starts_at).env("PREFIX", &prefix);
                    if many {
                        command.env("MANY", "1");
                    }
                    // A server named `extra` lists twenty tools more.
                    if extra {
                        command.env("EXTRA", "20");
                    }
                    Some(Upstream::from(command))
                };
                let settings = LinkSettings { name: name.to_owned(), ..LinkSettings::default() };
                ServerSpec { settings, start: Arc::new(start), scope, entry: None }
            })
            .collect();
        Front::of_in(dir, starts, specs, policy, listen).await
    }

    /// A front of `specs`, its listening options as `listen` makes them.
    async fn of(
        specs: Vec<ServerSpec>,
        policy: SessionPolicy,
        listen: impl FnOnce(ListenOptions) -> ListenOptions,
    ) -> Front {
        let dir = tempfile::tempdir().unwrap();
        let starts = dir.path().join("starts");
        Front::of_in(dir, starts, specs, policy, listen).await
    }

    async fn of_in(
        dir: tempfile::TempDir,
        starts: std::path::PathBuf,
        specs: Vec<ServerSpec>,
        policy: SessionPolicy,
        listen: impl FnOnce(ListenOptions) -> ListenOptions,
    ) -> Front {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let mediator = Arc::new(tool_mediator::Mediator::builder().build());
        let proxy = ProxyOptions::new(mediator, policy);
        let task = tokio::spawn(serve(listener, listen(ListenOptions::new(address)), proxy, specs));
        let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(20)).build().unwrap();
        Front { url: format!("http://{address}/mcp"), http, task, _dir: dir, starts }
    }

    /// POSTs `body` with the headers a client of `revision` sends (and `session`, if any): the
    /// status, the session named in the answer, and the JSON-RPC answer (from JSON or SSE).
    async fn post(&self, body: &Value, revision: Option<&str>, session: Option<&str>) -> (u16, Option<String>, Value) {
        self.post_to("", &[], body, revision, session).await
    }

    /// [`Front::post`] to `/mcp` with `path` after it, with `headers` besides.
    async fn post_to(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &Value,
        revision: Option<&str>,
        session: Option<&str>,
    ) -> (u16, Option<String>, Value) {
        let mut request = self
            .http
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(revision) = revision {
            request = request.header("mcp-protocol-version", revision);
        }
        if let Some(method) = body["method"].as_str() {
            request = request.header("mcp-method", method);
        }
        if let Some(name) = body.pointer("/params/name").and_then(Value::as_str) {
            request = request.header("mcp-name", name);
        }
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let named = response.headers().get("mcp-session-id").map(|id| id.to_str().unwrap().to_owned());
        let text = response.text().await.unwrap();
        (status, named, answer_in(&text))
    }

    fn starts(&self) -> usize {
        std::fs::read_to_string(&self.starts).map_or(0, |text| text.lines().count())
    }

    /// How many times a server was asked for its tools.
    fn listings(&self) -> usize {
        let listed = self.starts.with_extension("listed");
        std::fs::read_to_string(listed).map_or(0, |text| text.lines().count())
    }

    /// A 2025 session opened (`initialize`, then `initialized`): its id.
    async fn open_session(&self) -> String {
        self.open_session_at("", &[]).await
    }

    /// [`Front::open_session`] at `/mcp` with `path` after it, with `headers` besides.
    async fn open_session_at(&self, path: &str, headers: &[(&str, &str)]) -> String {
        let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
        let (status, session, answer) = self.post_to(path, headers, &initialize, None, None).await;
        assert_eq!(status, 200, "{answer}");
        let session = session.expect("initialize names a session");
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post_to(path, headers, &initialized, Some("2025-06-18"), Some(&session)).await.0, 202);
        session
    }

    /// The names of the tools a session (or, without one, a stateless request) is listed.
    async fn tool_names(&self, path: &str, headers: &[(&str, &str)], session: Option<&str>) -> Vec<String> {
        let (list, revision) = match session {
            Some(_) => (json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}), "2025-06-18"),
            None => (stateless(1, "tools/list", json!({})), REVISION),
        };
        let (status, _, listed) = self.post_to(path, headers, &list, Some(revision), session).await;
        assert_eq!(status, 200, "{listed}");
        let mut names: Vec<String> = listed["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{listed}"))
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The JSON-RPC answer in a body: the body itself, or the last `data:` of an SSE stream.
fn answer_in(text: &str) -> Value {
    let last = text.lines().filter_map(|line| line.strip_prefix("data:")).next_back();
    serde_json::from_str(last.unwrap_or(text).trim()).unwrap_or(Value::Null)
}

fn stateless(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = envelope();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn a_stateless_request_is_answered_without_initialize() {
    let front = Front::start().await;
    let (status, session, answer) = front.post(&stateless(7, "tools/list", json!({})), Some(REVISION), None).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(session, None, "the stateless revision has no sessions");
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(answer["result"]["tools"][0]["name"], "hello", "{answer}");
    let call = stateless(7, "tools/call", json!({"name": "hello", "arguments": {}}));
    let (status, _, answer) = front.post(&call, Some(REVISION), None).await;
    assert_eq!((status, &answer["result"]["content"][0]["text"]), (200, &json!("hello")), "{answer}");
}

#[tokio::test]
async fn stateless_requests_share_one_server() {
    let front = Front::start().await;
    for id in 1..=4 {
        let (status, _, answer) = front.post(&stateless(id, "tools/list", json!({})), Some(REVISION), None).await;
        assert_eq!(status, 200, "{answer}");
    }
    // The sessions' shared server (started as the front starts), and one of the stateless
    // requests' own behind all four.
    assert_eq!(front.starts(), 2, "one server behind every stateless request");
}

#[tokio::test]
async fn the_same_id_from_two_stateless_clients_reaches_each_its_own_answer() {
    let front = Arc::new(Front::start().await);
    let asks = (0..6).map(|n| {
        let front = front.clone();
        tokio::spawn(async move {
            let (method, params) = match n % 2 {
                0 => ("tools/list", json!({})),
                _ => ("tools/call", json!({"name": "hello"})),
            };
            let (status, _, answer) = front.post(&stateless(1, method, params), Some(REVISION), None).await;
            (n, status, answer)
        })
    });
    for ask in asks {
        let (n, status, answer) = ask.await.unwrap();
        assert_eq!((status, &answer["id"]), (200, &json!(1)), "{answer}");
        let expected = if n % 2 == 0 { "/result/tools" } else { "/result/content" };
        assert!(answer.pointer(expected).is_some(), "request {n}: {answer}");
    }
}

#[tokio::test]
async fn an_unknown_session_gets_404_and_a_stateless_request_ignores_it() {
    let front = Front::start().await;
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"});
    let (status, _, _) = front.post(&list, Some("2025-06-18"), Some("no-such-session")).await;
    assert_eq!(status, 404, "a 2025 request naming a session nobody issued");
    // The stateless revision has no sessions: the header is ignored, none is minted or echoed.
    let (status, session, answer) =
        front.post(&stateless(4, "tools/list", json!({})), Some(REVISION), Some("no-such-session")).await;
    assert_eq!((status, session), (200, None), "{answer}");
}

#[tokio::test]
async fn a_2025_session_still_works_beside_stateless_requests() {
    let front = Front::start().await;
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}});
    let (status, session, answer) = front.post(&initialize, None, None).await;
    assert_eq!(status, 200, "{answer}");
    let session = session.expect("initialize names a session");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(front.post(&initialized, Some("2025-06-18"), Some(&session)).await.0, 202);
    let (status, _, answer) = front.post(&stateless(1, "tools/list", json!({})), Some(REVISION), None).await;
    assert_eq!((status, &answer["result"]["tools"][0]["name"]), (200, &json!("hello")), "{answer}");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, _, answer) = front.post(&list, Some("2025-06-18"), Some(&session)).await;
    assert_eq!((status, &answer["result"]["tools"][0]["name"]), (200, &json!("hello")), "{answer}");
    assert_eq!(front.starts(), 2, "the server the sessions share, and the one the stateless requests share");
}

#[tokio::test]
async fn stateless_errors_get_the_status_the_revision_prescribes() {
    let front = Front::start().await;
    // An unknown method: 404 with -32601.
    let (status, _, answer) = front.post(&stateless(5, "no/such/method", json!({})), Some(REVISION), None).await;
    assert_eq!((status, &answer["error"]["code"]), (404, &json!(-32601)), "{answer}");
    // An envelope without client capabilities: 400 with -32602.
    let mut bare = stateless(6, "tools/list", json!({}));
    bare["params"]["_meta"].as_object_mut().unwrap().remove("io.modelcontextprotocol/clientCapabilities");
    let (status, _, answer) = front.post(&bare, Some(REVISION), None).await;
    assert_eq!((status, &answer["error"]["code"], &answer["id"]), (400, &json!(-32602), &json!(6)), "{answer}");
    // A header that says another revision than the body: 400 with -32020.
    let (status, _, answer) = front.post(&stateless(8, "tools/list", json!({})), Some("2025-11-25"), None).await;
    assert_eq!((status, &answer["error"]["code"]), (400, &json!(-32020)), "{answer}");
    // A revision the front does not serve: 400 with -32022 and the revisions it does.
    let mut unknown = stateless(9, "tools/list", json!({}));
    unknown["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let (status, _, answer) = front.post(&unknown, Some("2099-01-01"), None).await;
    assert_eq!((status, &answer["error"]["code"]), (400, &json!(-32022)), "{answer}");
    assert_eq!(answer.pointer("/error/data/supported"), Some(&json!([REVISION])), "{answer}");
    assert_eq!(answer.pointer("/error/data/requested"), Some(&json!("2099-01-01")), "{answer}");
    // No envelope, but a header naming the stateless revision: 400 with -32602.
    let bare = json!({"jsonrpc": "2.0", "id": 10, "method": "server/discover", "params": {}});
    let (status, _, answer) = front.post(&bare, Some(REVISION), None).await;
    assert_eq!((status, &answer["error"]["code"], &answer["id"]), (400, &json!(-32602), &json!(10)), "{answer}");
}

#[tokio::test]
async fn get_and_delete_of_the_stateless_revision_are_not_allowed() {
    let front = Front::start().await;
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = front.http.request(method.clone(), &front.url).header("mcp-protocol-version", REVISION);
        let response = response.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 405, "{method}");
        assert_eq!(response.headers().get("allow").map(|allow| allow.to_str().unwrap()), Some("POST"));
    }
}

/// Any replica answers a stateless call: a folded tool is called by its name with no expansion
/// seen first, even where a session's calls must follow the disclosure.
#[tokio::test]
async fn a_stateless_call_reaches_a_folded_tool_without_an_expansion_first() {
    let policy = SessionPolicy { calls_follow_disclosure: true, ..SessionPolicy::mediated(2) };
    let front = Front::start_with(policy, true, Scope::Shared).await;
    let (status, _, listed) = front.post(&stateless(1, "tools/list", json!({})), Some(REVISION), None).await;
    assert_eq!(status, 200, "{listed}");
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(!names.contains(&"hello"), "folded: {names:?}");
    let call = stateless(2, "tools/call", json!({"name": "hello", "arguments": {}}));
    let (status, _, answer) = front.post(&call, Some(REVISION), None).await;
    assert_eq!((status, &answer["result"]["content"][0]["text"]), (200, &json!("hello")), "{answer}");
}

#[tokio::test]
async fn ten_sessions_share_one_server_which_is_listed_once() {
    let front = Front::start().await;
    let sessions = futures_util::future::join_all((0..10).map(|_| front.open_session())).await;
    let calls = sessions.iter().map(|session| async {
        // The same ids from every session: each gets its own answers.
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let (status, _, listed) = front.post(&list, Some("2025-06-18"), Some(session)).await;
        assert_eq!((status, &listed["id"], &listed["result"]["tools"][0]["name"]), (200, &json!(1), &json!("hello")));
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hello"}});
        let (status, _, called) = front.post(&call, Some("2025-06-18"), Some(session)).await;
        assert_eq!((status, &called["id"], &called["result"]["content"][0]["text"]), (200, &json!(2), &json!("hello")));
    });
    futures_util::future::join_all(calls).await;
    assert_eq!(front.starts(), 1, "one server for ten sessions");
    assert_eq!(front.listings(), 1, "listed once for ten sessions");
    // A session that leaves leaves the server running for the others, and for the next.
    let delete = front.http.delete(&front.url).header("mcp-session-id", &sessions[0]).send().await.unwrap();
    assert_eq!(delete.status(), 200);
    let next = front.open_session().await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "hello"}});
    let (_, _, called) = front.post(&call, Some("2025-06-18"), Some(&next)).await;
    assert_eq!(called["result"]["content"][0]["text"], "hello", "{called}");
    assert_eq!(front.starts(), 1, "still the one server");
}

#[tokio::test]
async fn a_server_of_session_scope_is_started_for_each_session() {
    let front = Front::start_with(SessionPolicy::default(), false, Scope::Session).await;
    for _ in 0..3 {
        let session = front.open_session().await;
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        let (status, _, listed) = front.post(&list, Some("2025-06-18"), Some(&session)).await;
        assert_eq!((status, &listed["result"]["tools"][0]["name"]), (200, &json!("hello")), "{listed}");
    }
    assert_eq!(front.starts(), 3, "a server of its own for each session");
}

#[tokio::test]
async fn health_readiness_and_metrics_are_served() {
    let front = Front::start().await;
    let base = front.url.trim_end_matches("/mcp").to_owned();
    let get = |path: &str| front.http.get(format!("{base}{path}")).send();
    assert_eq!(get("/healthz").await.unwrap().status(), 200);
    // Ready once the shared server has been started and listed, before any client came.
    let mut ready = get("/readyz").await.unwrap().status();
    for _ in 0..100 {
        if ready == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        ready = get("/readyz").await.unwrap().status();
    }
    assert_eq!(ready, 200, "ready once warmed");
    assert_eq!((front.starts(), front.listings()), (1, 1), "warmed: started and listed before any session");
    let session = front.open_session().await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "hello"}});
    assert_eq!(front.post(&call, Some("2025-06-18"), Some(&session)).await.0, 200);
    let unknown = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}});
    front.post(&unknown, Some("2025-06-18"), Some(&session)).await;
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    front.post(&list, Some("2025-06-18"), Some(&session)).await;
    assert_eq!(front.listings(), 1, "the session's listing was the warmed one");
    let metrics = get("/metrics").await.unwrap();
    assert!(metrics.headers()["content-type"].to_str().unwrap().starts_with("application/openmetrics-text"));
    let text = metrics.text().await.unwrap();
    for line in [
        r#"tool_mediator_requests_total{method="tools/call"} 2"#,
        r#"tool_mediator_request_errors_total{method="tools/call"} 1"#,
        r#"tool_mediator_requests_total{method="tools/list"} 1"#,
        "tool_mediator_sessions 1",
        "tool_mediator_shared_servers_running 1",
        "tool_mediator_shared_server_starts_total 1",
    ] {
        assert!(text.lines().any(|said| said == line), "{line} in:\n{text}");
    }
    assert!(text.contains(r#"tool_mediator_request_duration_seconds_count{method="tools/call"} 2"#), "{text}");
}

/// Regression (issue 42): a stateless request answered as JSON (its client asked for no
/// stream) went on upstream after its client hung up; it is cancelled, as one whose stream
/// closes is.
#[tokio::test]
async fn a_stateless_request_answered_as_json_is_cancelled_when_its_client_hangs_up() {
    use tokio::io::AsyncWriteExt as _;
    let front = Front::start().await;
    let cancelled = front.starts.with_extension("cancelled");
    let address = front.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned();
    // However the client ends its request. One that sends a line break after its body, as some
    // clients do, leaves bytes hyper does not read while the request is answered, so hyper
    // reads nothing of its going (the case the probe found); the same for a client that takes
    // a stream, while nothing has come for it yet.
    let json = "application/json";
    let clients = [
        (7, json, "", "1.1", ""),
        (8, json, "Connection: close\r\n", "1.1", ""),
        (9, json, "", "1.0", ""),
        (10, json, "", "1.1", "\r\n"),
        (11, "application/json, text/event-stream", "", "1.1", "\r\n"),
    ];
    for (id, accept, connection, version, after) in clients {
        let call = stateless(id, "tools/call", json!({"name": "hello", "arguments": {"wait": true}})).to_string();
        let request = format!(
            "POST /mcp HTTP/{version}\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: {accept}\r\n\
             MCP-Protocol-Version: {REVISION}\r\nMcp-Method: tools/call\r\nMcp-Name: hello\r\n{connection}\
             Content-Length: {}\r\n\r\n{call}{after}",
            call.len()
        );
        let before = std::fs::read_to_string(&cancelled).unwrap_or_default().lines().count();
        let mut client = tokio::net::TcpStream::connect(&address).await.unwrap();
        client.write_all(request.as_bytes()).await.unwrap();
        // The call reaches the server, which never answers it; then the client hangs up.
        tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
        let count = || std::fs::read_to_string(&cancelled).unwrap_or_default().lines().count();
        assert_eq!(count(), before, "{id}: nothing is cancelled while the client waits");
        drop(client);
        let began = std::time::Instant::now();
        while count() == before && began.elapsed() < std::time::Duration::from_secs(10) {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let said = std::fs::read_to_string(&cancelled).unwrap_or_default();
        let last = said.lines().nth(before).unwrap_or_default();
        assert!(last.contains(r#""requestId":"http-"#), "{id}: the server hears the call cancelled: {said:?}");
    }
}

/// Regression (issue 42): `/readyz` told anyone who reached the port the servers' names, a
/// command's path and what a remote server answered. Unauthenticated it says ready or not;
/// the details go to a caller with the token, and to the log.
#[tokio::test]
async fn readiness_tells_why_only_to_a_caller_with_the_token() {
    use crate::front::access::tests::{SigningKey, TestIssuer};
    use crate::front::access::{OAuthOptions, ProtectedResource};

    let secret_command = "/opt/secret-tools/bin/billing-server";
    let failing = || {
        let start = move || Some(Upstream::from(Command::new(secret_command)));
        let settings = LinkSettings { name: "billing-internal".to_owned(), ..LinkSettings::default() };
        vec![ServerSpec { settings, start: Arc::new(start), scope: Scope::Shared, entry: None }]
    };
    let key = SigningKey::es256("k1");
    let issuer = TestIssuer::start(&[&key]).await;
    // No check to pass, the shared token, an OAuth bearer token.
    for guard in ["none", "token", "oauth"] {
        let audience = Arc::new(std::sync::Mutex::new(String::new()));
        let (issuer_url, heard) = (issuer.issuer.clone(), audience.clone());
        let front = Front::of(failing(), SessionPolicy::default(), move |listen| match guard {
            "token" => ListenOptions { token: Some("s3cret".into()), ..listen },
            "oauth" => {
                let resource = format!("http://{}/mcp", listen.address);
                *heard.lock().unwrap() = resource.clone();
                let options = OAuthOptions::new(&issuer_url, &resource).unwrap();
                ListenOptions { oauth: Some(Arc::new(ProtectedResource::new(options).unwrap())), ..listen }
            }
            _ => listen,
        })
        .await;
        let good = match guard {
            "oauth" => format!("Bearer {}", key.sign(&issuer.claims(&audience.lock().unwrap(), 300))),
            _ => "Bearer s3cret".to_owned(),
        };
        let readyz = front.url.replace("/mcp", "/readyz");
        let ask = |authorization: Option<&str>| {
            let mut request = front.http.get(&readyz);
            if let Some(authorization) = authorization {
                request = request.header("authorization", authorization);
            }
            async move {
                let answer = request.send().await.unwrap();
                (answer.status().as_u16(), answer.text().await.unwrap())
            }
        };
        // The shared server's start has failed once it says so to the one who may know (where
        // nobody may, after as long as that takes).
        let mut told = ask(Some(&good)).await;
        for _ in 0..100 {
            if told.1.contains("billing-internal") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            told = ask(Some(&good)).await;
        }
        let foreign = format!("Bearer {}", key.sign(&issuer.claims("http://127.0.0.1:1/mcp", 300)));
        for authorization in [None, Some("Bearer wrong"), Some("Basic s3cret"), Some(foreign.as_str())] {
            assert_eq!(ask(authorization).await, (503, "not ready\n".to_owned()), "{guard}: {authorization:?}");
        }
        if guard == "none" {
            assert_eq!(told, (503, "not ready\n".to_owned()), "no token to check: nobody is told why");
        } else {
            assert_eq!(told.0, 503, "{guard}");
            assert!(told.1.contains("billing-internal") && told.1.contains(secret_command), "{guard}: {}", told.1);
        }
    }
}

/// Two servers, `a` (three tools, `a_hello`, `a_hello_again`, `a_hello_there`) and `b`
/// (`b_hello`); the view `one` shows `a` without `a_hello_again`, the view `two` shows `b`.
async fn two_views(listen: impl FnOnce(ListenOptions) -> ListenOptions) -> Front {
    let views = vec![
        View {
            name: "one".into(),
            servers: vec![ViewedServer { name: "a".into(), include: None, exclude: vec!["a_hello_again".into()] }],
        },
        View { name: "two".into(), servers: vec![ViewedServer { name: "b".into(), include: None, exclude: vec![] }] },
    ];
    let servers = [("a", "a_", true), ("b", "b_", false)];
    Front::serving(SessionPolicy::default(), &servers, Scope::Shared, move |options| {
        listen(ListenOptions { views, ..options })
    })
    .await
}

/// A `tools/call` of `name` in `session` (at `path`): its JSON-RPC answer.
async fn call(front: &Front, path: &str, headers: &[(&str, &str)], session: &str, name: &str) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name, "arguments": {}}});
    let (status, _, answer) = front.post_to(path, headers, &call, Some("2025-06-18"), Some(session)).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

#[tokio::test]
async fn two_views_list_two_tool_sets_and_a_hidden_tool_answers_as_an_unknown_one() {
    let front = two_views(|listen| listen).await;
    let (one, two) = (front.open_session_at("/one", &[]).await, front.open_session_at("/two", &[]).await);
    assert_eq!(front.tool_names("/one", &[], Some(&one)).await, ["a_hello", "a_hello_there"]);
    assert_eq!(front.tool_names("/two", &[], Some(&two)).await, ["b_hello"]);
    let everything = front.open_session().await;
    let all = front.tool_names("", &[], Some(&everything)).await;
    assert_eq!(all, ["a_hello", "a_hello_again", "a_hello_there", "b_hello"], "no view: every server");

    // The view's own tools are called; the other view's, and the one it leaves out, answer
    // exactly as a tool nobody has.
    assert_eq!(call(&front, "/one", &[], &one, "a_hello").await["result"]["content"][0]["text"], "hello");
    let unknown = call(&front, "/one", &[], &one, "no_such_tool").await;
    assert!(unknown["error"]["message"].as_str().unwrap().contains("no_such_tool"), "{unknown}");
    for hidden in ["b_hello", "a_hello_again"] {
        let answer = call(&front, "/one", &[], &one, hidden).await;
        assert_eq!(answer["error"]["code"], unknown["error"]["code"], "{answer}");
        let message = answer["error"]["message"].as_str().unwrap().replace(hidden, "no_such_tool");
        assert_eq!(message, unknown["error"]["message"].as_str().unwrap(), "{answer}");
    }
    let answer = call(&front, "/two", &[], &two, "a_hello").await;
    assert_eq!(answer["error"]["code"], unknown["error"]["code"], "{answer}");
    assert_eq!(front.starts(), 2, "each server started once, whatever the views");
}

#[tokio::test]
async fn a_session_is_its_views_and_not_found_under_another() {
    let front = two_views(|listen| listen).await;
    let one = front.open_session_at("/one", &[]).await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    for path in ["/two", ""] {
        let (status, _, _) = front.post_to(path, &[], &list, Some("2025-06-18"), Some(&one)).await;
        assert_eq!(status, 404, "the session of `one` asked for under `{path}`");
        let get = front.http.get(format!("{}{path}", front.url)).header("mcp-session-id", &one).send().await.unwrap();
        assert_eq!(get.status(), 404, "GET under `{path}`");
        let delete =
            front.http.delete(format!("{}{path}", front.url)).header("mcp-session-id", &one).send().await.unwrap();
        assert_eq!(delete.status(), 404, "DELETE under `{path}`");
    }
    assert_eq!(front.tool_names("/one", &[], Some(&one)).await, ["a_hello", "a_hello_there"], "still served");
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
    let (status, _, _) = front.post_to("/three", &[], &initialize, None, None).await;
    assert_eq!(status, 404, "a view nobody defined");
}

#[tokio::test]
async fn stateless_requests_have_a_shared_proxy_per_view_and_a_header_names_one_too() {
    let front = two_views(|listen| ListenOptions { view_header: Some("X-MCP-View".into()), ..listen }).await;
    assert_eq!(front.tool_names("/one", &[], None).await, ["a_hello", "a_hello_there"]);
    assert_eq!(front.tool_names("/two", &[], None).await, ["b_hello"]);
    assert_eq!(front.tool_names("", &[("x-mcp-view", "two")], None).await, ["b_hello"]);
    assert_eq!(front.tool_names("", &[], None).await.len(), 4);
    let session = front.open_session_at("", &[("X-MCP-View", "one")]).await;
    assert_eq!(front.tool_names("/one", &[], Some(&session)).await, ["a_hello", "a_hello_there"], "the same view");
    let (status, _, _) = front
        .post_to("/one", &[("x-mcp-view", "two")], &stateless(1, "tools/list", json!({})), Some(REVISION), None)
        .await;
    assert_eq!(status, 403, "a path and a header that disagree");
}

#[tokio::test]
async fn as_a_protected_resource_the_front_takes_only_its_issuers_tokens_and_their_view() {
    use crate::front::access::tests::{SigningKey, TestIssuer};
    use crate::front::access::{OAuthOptions, ProtectedResource};

    let key = SigningKey::es256("k1");
    let issuer = TestIssuer::start(&[&key]).await;
    let audience = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let (issuer_url, heard) = (issuer.issuer.clone(), audience.clone());
    let front = two_views(move |listen| {
        let resource = format!("http://{}/mcp", listen.address);
        *heard.lock().unwrap() = resource.clone();
        let options =
            OAuthOptions { view_claim: Some("view".into()), ..OAuthOptions::new(&issuer_url, &resource).unwrap() };
        ListenOptions { oauth: Some(Arc::new(ProtectedResource::new(options).unwrap())), ..listen }
    })
    .await;
    let audience = audience.lock().unwrap().clone();
    let base = front.url.trim_end_matches("/mcp").to_owned();

    // Without a token: 401, and where to learn how to get one; the metadata is for anyone.
    let response = front.http.post(&front.url).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap().to_owned();
    let metadata_url = format!("{base}/.well-known/oauth-protected-resource/mcp");
    assert_eq!(challenge, format!(r#"Bearer resource_metadata="{metadata_url}""#));
    for url in [metadata_url.clone(), format!("{base}/.well-known/oauth-protected-resource")] {
        let metadata: Value = front.http.get(&url).send().await.unwrap().json().await.unwrap();
        assert_eq!(metadata["resource"], json!(audience), "{metadata}");
        assert_eq!(metadata["authorization_servers"], json!([issuer.issuer]), "{metadata}");
        assert_eq!(metadata["bearer_methods_supported"], json!(["header"]), "{metadata}");
    }
    assert_eq!(front.http.get(format!("{base}/metrics")).send().await.unwrap().status(), 401, "metrics too");
    assert_eq!(front.http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200, "a probe needs none");

    // A token for another resource: 401 saying it is invalid.
    let mut claims = issuer.claims("http://127.0.0.1:1/mcp", 300);
    claims["view"] = json!("two");
    let foreign = format!("Bearer {}", key.sign(&claims));
    let response = front.http.post(&front.url).header("authorization", &foreign).body("{}").send().await.unwrap();
    assert_eq!(response.status(), 401);
    let challenge = response.headers()["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with(r#"Bearer error="invalid_token""#) && challenge.contains("another resource"),
        "{challenge}"
    );

    // The token's view is the client's, wherever it knocks; another view is refused.
    claims["aud"] = json!(audience);
    let ada = format!("Bearer {}", key.sign(&claims));
    let as_ada = [("authorization", ada.as_str())];
    let session = front.open_session_at("", &as_ada).await;
    assert_eq!(front.tool_names("", &as_ada, Some(&session)).await, ["b_hello"]);
    assert_eq!(front.tool_names("/two", &as_ada, None).await, ["b_hello"], "stateless, in the token's view");
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, _, _) = front.post_to("/one", &as_ada, &list, Some("2025-06-18"), Some(&session)).await;
    assert_eq!(status, 403, "a path naming another view than the token's");
    let (status, _, _) = front
        .post_to("", &[("authorization", &ada), ("x-mcp-view", "one")], &list, Some("2025-06-18"), Some(&session))
        .await;
    assert_eq!(status, 200, "no view header is configured: it says nothing");

    // Another subject with the same view does not find ada's session.
    claims["sub"] = json!("bob");
    let bob = format!("Bearer {}", key.sign(&claims));
    let (status, _, _) = front.post_to("", &[("authorization", &bob)], &list, Some("2025-06-18"), Some(&session)).await;
    assert_eq!(status, 404, "another subject's session");

    // A token naming no view is refused: the claim is the only say.
    claims.as_object_mut().unwrap().remove("view");
    let viewless = format!("Bearer {}", key.sign(&claims));
    let (status, _, _) = front
        .post_to("/two", &[("authorization", &viewless)], &stateless(1, "tools/list", json!({})), Some(REVISION), None)
        .await;
    assert_eq!(status, 403);
}

#[tokio::test]
async fn what_disclosure_spares_a_client_is_counted_on_the_metrics() {
    let front =
        Front::serving(SessionPolicy::mediated(2), &[("extra", "", true)], Scope::Shared, |listen| listen).await;
    let session = front.open_session().await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (status, _, listed) = front.post(&list, Some("2025-06-18"), Some(&session)).await;
    assert_eq!(status, 200, "{listed}");
    let base = front.url.trim_end_matches("/mcp").to_owned();
    let text = front.http.get(format!("{base}/metrics")).send().await.unwrap().text().await.unwrap();
    let counted = |name: &str| -> u64 {
        let line = text.lines().find(|line| line.starts_with(name)).unwrap_or_else(|| panic!("{name} in:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let (bytes, tokens) =
        (counted("tool_mediator_listing_bytes_saved_total"), counted("tool_mediator_listing_tokens_saved_total"));
    // Twenty-three tools listed whole by the server, folded into categories for the client.
    assert!(bytes > 0, "the folded listing is smaller than the server's: {listed}");
    assert_eq!(tokens, bytes / crate::savings::BYTES_PER_TOKEN);
}

/// The front refuses to serve other machines with nothing checking who they are, whoever calls
/// it (not only the command line): a token, OAuth or the knowing choice lets it.
#[tokio::test]
async fn serving_beyond_loopback_needs_a_token_oauth_or_the_insecure_choice() {
    let everywhere: SocketAddr = "0.0.0.0:8080".parse().unwrap();
    let options = ListenOptions::new(everywhere);
    assert_eq!(options.exposure(everywhere), Err(Exposure::Unguarded(everywhere)));
    assert_eq!(options.exposure("127.0.0.1:8080".parse().unwrap()), Ok(()), "loopback is this machine's");
    assert_eq!(
        ListenOptions { token: Some("t".into()), ..ListenOptions::new(everywhere) }.exposure(everywhere),
        Ok(())
    );
    assert_eq!(
        ListenOptions { insecure_no_token: true, ..ListenOptions::new(everywhere) }.exposure(everywhere),
        Ok(())
    );
    let oauth = |audience: &str| {
        let options = crate::front::access::OAuthOptions::new("https://auth.example.com", audience).unwrap();
        Some(Arc::new(crate::front::access::ProtectedResource::new(options).unwrap()))
    };
    let unusable = ListenOptions { oauth: oauth("http://0.0.0.0:8080/mcp"), ..ListenOptions::new(everywhere) };
    assert_eq!(unusable.exposure(everywhere), Err(Exposure::UnusableAudience("http://0.0.0.0:8080/mcp".into())));
    let named = ListenOptions { oauth: oauth("https://mcp.example.com/mcp"), ..ListenOptions::new(everywhere) };
    assert_eq!(named.exposure(everywhere), Ok(()));

    // `serve` itself refuses, before it serves anything.
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let local = listener.local_addr().unwrap();
    let proxy = ProxyOptions::new(Arc::new(tool_mediator::Mediator::builder().build()), SessionPolicy::default());
    let refused = serve(listener, ListenOptions::new(local), proxy, Vec::new()).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::InvalidInput);
    assert!(refused.to_string().contains("serves other machines with neither a token nor OAuth"), "{refused}");
}
