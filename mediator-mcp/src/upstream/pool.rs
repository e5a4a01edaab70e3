//! A server that every client session of an HTTP gateway shares: started (or connected) once,
//! before the first session needs it, and each session connected to it as if it were its own.
//!
//! A session's router gets a connection: a pair of in-process pipes it writes and reads as it
//! would a server's standard streams. What a session sends is relabelled on the way: its
//! requests get ids of the pool's own, so two sessions' `1` are told apart and an answer reaches
//! the session that asked; its progress tokens too; and its cancellation names the request as
//! the server knows it. The server's answers get their session's ids back. That bookkeeping is
//! [`super::mux`]'s; this room holds the server's life (started, connected, ended, started again).
//!
//! What sessions ask alike is asked once. The handshake is the pool's own, the gateway's as the
//! server's one client, given as the server starts; a session's is answered with what the server
//! said then (at the session's revision, when that is an earlier one). Listings (`tools/list` and
//! the other lists, by page) are kept until the server says that list changed; one asked while
//! the same is under way waits for it. A resource is subscribed to while any session wants it.
//!
//! What the server sends of its own accord: a list change goes to every session (each router
//! lists again, coalescing as it does for a server of its own); a progress notification to the
//! session whose token it names; an update of a resource to the sessions subscribed to it. A
//! request (sampling, elicitation, roots) or a log message goes to the session whose request it
//! came with: a `url` server's, sent on that request's event stream, is noted so by the remote
//! bridge. Any other is refused (a request) or dropped (a message), never guessed at, not even
//! onto the one session with a call under way: one session must not see what another's call (or
//! background job) asked, nor answer for it. What belongs to the
//! server's one client is not shared at all: a session's change of its roots (not passed on),
//! tasks (refused), the log level (each session's `logging/setLevel` is answered here). So a
//! server that keeps per-user state is not for sharing: the servers file says
//! `"scope": "session"`.
//!
//! When the server ends, every connection closes: each session's supervisor sees its server
//! gone and, with restarts, connects again, which starts the server again, once. A server that
//! hangs (its handshake, a listing or a ping unanswered for longer than the proxy's request
//! timeout) is ended as the next session connects, and started again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::DuplexStream;

use super::mux::{Mux, gateway_handshake};
use super::{Server, ServerEnd, StartError, Started, Upstream};
use crate::options::OUTBOX_BYTES;
use crate::wire::jsonrpc::{self, Id, Message};
use crate::wire::lines::{Line, Outbox, read_lines};
use tool_mediator_core::sync::lock;

/// The revision the pool asks a server to speak. Over stdio, the latest the gateway passes on.
/// Over Streamable HTTP, 2025-06-18: from 2025-11-25 on, a server that can resume its streams
/// opens the stream of every answer with a priming event of its own, and the TypeScript SDK's
/// answers a call about 1.3 ms later then (server-everything, measured on this project's
/// machine: 0.46 ms against 1.79 ms to the answer's first byte). A session's own server pays it
/// only when its client speaks 2025-11-25; a pooled one would make every session pay it on
/// every call, for what the pool has no use for: it passes on no capability of the later
/// revision (tasks are not shared, elicitation is by form, sampling without tools), and a
/// stream it is not given resumes nothing.
fn pooled_revision(upstream: &Upstream) -> &'static str {
    match upstream {
        Upstream::Remote(_) => crate::wire::revision::REVISIONS[2],
        Upstream::Process(_) | Upstream::Shared(_) => crate::wire::revision::REVISIONS[3],
    }
}

/// Bytes in each of a connection's two pipes.
const PIPE: usize = 256 * 1024;
/// How long a server whose output closed has to exit before it is ended.
const REAPING: Duration = Duration::from_secs(2);

/// One server that client sessions share.
pub struct SharedServer {
    label: String,
    start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>,
    /// How long its handshake, a listing or a ping may go unanswered before it is taken to hang.
    patience: Duration,
    running: Mutex<Option<Arc<Running>>>,
    starts: AtomicU64,
    /// Ended for good: the gateway is stopping.
    stopped: AtomicBool,
}

impl SharedServer {
    /// A server to share, `label` naming it in logs, started with `start` when first needed, and
    /// taken to hang when what every session asks goes unanswered for `patience`.
    pub fn new(
        label: String,
        start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>,
        patience: Duration,
    ) -> Arc<SharedServer> {
        Arc::new(SharedServer {
            label,
            start,
            patience,
            running: Mutex::new(None),
            starts: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
        })
    }

    /// How logs name it.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// How many times the server was started (or connected to).
    pub fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// The name the server gave itself in the pool's handshake, once it has answered it.
    pub fn server_name(&self) -> Option<String> {
        let running = lock(&self.running).clone()?;
        lock(&running.mux).server_name()
    }

    /// Whether the server is running now.
    pub fn is_running(&self) -> bool {
        lock(&self.running).as_ref().is_some_and(|running| !running.is_closed())
    }

    /// A connection for one session; the server is started first when it is not running, and
    /// started again when it hangs.
    pub(super) fn connect(&self, limit: usize, withheld: &[String]) -> Result<Started, StartError> {
        let mut running = lock(&self.running);
        if self.stopped.load(Ordering::SeqCst) {
            return Err(StartError::Shared(format!("{} is not started again: the gateway is stopping", self.label)));
        }
        if let Some(current) = running.take() {
            match current.hangs(self.patience) {
                Some(why) => {
                    tracing::warn!("{} hangs ({why}); ending it and starting it again", self.label);
                    current.retire();
                }
                None => {
                    if let Some(connected) = current.connect(limit) {
                        *running = Some(current);
                        return Ok(connected);
                    }
                }
            }
        }
        let upstream = (self.start)().ok_or_else(|| StartError::Once(self.label.clone()))?;
        let revision = pooled_revision(&upstream);
        let started = Server::start(upstream, limit, withheld)?;
        self.starts.fetch_add(1, Ordering::Relaxed);
        tracing::info!("{} started, shared by every client session", self.label);
        let fresh = Running::spawn(started, revision, limit, self.label.clone());
        let connected = fresh.connect(limit);
        *running = Some(fresh);
        connected.ok_or_else(|| StartError::Shared(format!("{} ended as it started", self.label)))
    }

    /// Starts the server and asks it what every session will ask first: the handshake and its
    /// tools, so the first client waits for neither. Why not, when it cannot be done within
    /// `patience`.
    pub async fn warm(&self, limit: usize, withheld: &[String], patience: Duration) -> Result<(), String> {
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
        let (mut server, mut input, output, _) =
            self.connect(limit, withheld).map_err(|error| tool_mediator_core::error::with_causes(&error))?;
        let mut lines = tokio::io::BufReader::new(output).lines();
        let asked = async {
            for (id, method, params) in [
                (1, "initialize", gateway_handshake(crate::wire::revision::REVISIONS[3])),
                (2, "tools/list", serde_json::json!({})),
            ] {
                let id = Id::pooled(id);
                input.write_all(format!("{}\n", jsonrpc::request(&id, method, &params)).as_bytes()).await?;
                input.flush().await?;
                loop {
                    let Some(line) = lines.next_line().await? else {
                        return Err(std::io::Error::other("it ended before answering"));
                    };
                    if let Ok(Message::Response { id: answered, error, .. }) = Message::parse(line.as_bytes())
                        && answered == id
                    {
                        if let Some(error) = error {
                            return Err(std::io::Error::other(format!("it refused {method}: {}", error.get())));
                        }
                        break;
                    }
                }
            }
            input.shutdown().await
        };
        let warmed = match tokio::time::timeout(patience, asked).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("it did not answer within {}s", patience.as_secs_f64())),
        };
        server.end_within(Duration::from_millis(100)).await;
        warmed
    }

    /// Ends the server for good, if it runs: its input closed, then (after `grace`) stopped. A
    /// session that connects later is refused.
    pub async fn end(&self, grace: Duration) -> Option<ServerEnd> {
        let running = {
            let mut running = lock(&self.running);
            self.stopped.store(true, Ordering::SeqCst);
            running.take()?
        };
        running.to_server.close();
        Some(running.end_process(grace).await.0)
    }
}

/// The shared server while it runs: its process (or connection), and the sessions on it.
struct Running {
    label: String,
    to_server: Arc<Outbox>,
    mux: Mutex<Mux>,
    /// The source to use when the server does not name itself.
    fallback: String,
    process: tokio::sync::Mutex<Server>,
    /// Set as its output closes (or it is taken to hang): no session connects to it any more.
    closing: AtomicBool,
    /// How it ended, once it has.
    ended: tokio::sync::watch::Sender<Option<ServerEnd>>,
}

/// A session's connection to the shared server: its number, and the task reading what the
/// session sends.
pub(crate) struct Connection {
    number: u64,
    running: Arc<Running>,
    reader: tokio::task::JoinHandle<()>,
}

impl Connection {
    /// The server's exit status, if it exits within a moment.
    pub(super) async fn exit_status_soon(&self) -> Option<std::process::ExitStatus> {
        let mut ended = self.running.ended.subscribe();
        let end = tokio::time::timeout(Duration::from_millis(250), ended.wait_for(Option::is_some)).await;
        match end.ok()?.ok()?.as_ref()? {
            ServerEnd::Exited(status) => Some(*status),
            ServerEnd::Disconnected(_) => None,
        }
    }

    /// Leaves the server (which goes on for the other sessions); how it ended, if it did.
    pub(super) async fn end_within(&mut self, grace: Duration) -> ServerEnd {
        // The session's side closed its input: what it sent before is read first.
        if tokio::time::timeout(grace, &mut self.reader).await.is_err() {
            self.reader.abort();
        }
        self.running.disconnect(self.number);
        match self.running.ended.borrow().clone() {
            Some(end) => end,
            None => ServerEnd::Disconnected(format!("the session left {}, which goes on", self.running.label)),
        }
    }
}

impl Running {
    /// The started server, read, and given the gateway's handshake.
    fn spawn(started: Started, revision: &'static str, limit: usize, label: String) -> Arc<Running> {
        let (server, input, output, fallback) = started;
        let (to_server, queue) = Outbox::new(OUTBOX_BYTES);
        let to_server = Arc::new(to_server);
        tokio::spawn({
            let to_server = to_server.clone();
            async move { to_server.write_lines(input, queue).await }
        });
        let mut mux = Mux::new(to_server.clone());
        mux.shake_hands(revision);
        let running = Arc::new(Running {
            label,
            mux: Mutex::new(mux),
            to_server,
            fallback,
            process: tokio::sync::Mutex::new(server),
            closing: AtomicBool::new(false),
            ended: tokio::sync::watch::channel(None).0,
        });
        tokio::spawn({
            let running = running.clone();
            async move {
                // Never waits for a session: one that does not read loses its connection instead.
                if let Err(error) = read_lines(output, limit, &(), |line| running.on_server_line(line)).await {
                    tracing::warn!("cannot read from {}: {error}", running.label);
                }
                running.closing.store(true, Ordering::SeqCst);
                running.close_connections();
                // Ended by itself, not by the gateway: said.
                if let (end, true) = running.end_process(REAPING).await {
                    tracing::warn!("{}, shared by every client session, ended ({end})", running.label);
                }
            }
        });
        running
    }

    fn is_closed(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }

    /// Why the server is taken to hang, if it is.
    fn hangs(&self, patience: Duration) -> Option<String> {
        lock(&self.mux).hangs(patience)
    }

    /// Let go of as hanging: its sessions' connections close, and its process is ended.
    fn retire(self: Arc<Self>) {
        self.closing.store(true, Ordering::SeqCst);
        self.close_connections();
        self.to_server.close();
        tokio::spawn(async move { self.end_process(REAPING).await });
    }

    /// Ends the server within `grace`, once, and says how it ended: its output closing, a hang
    /// and the gateway stopping each ask, and two may meet (an end that closes the server's
    /// input closes its output too). An end asked for after the first reads how it ended; the
    /// flag says which one ended it.
    async fn end_process(&self, grace: Duration) -> (ServerEnd, bool) {
        let mut process = self.process.lock().await;
        if let Some(end) = self.ended.borrow().clone() {
            return (end, false);
        }
        let end = process.end_within(grace).await;
        // Under the process's lock: whoever comes next finds the end.
        self.closed(end.clone());
        (end, true)
    }

    fn closed(&self, end: ServerEnd) {
        self.closing.store(true, Ordering::SeqCst);
        self.close_connections();
        self.ended.send_if_modified(|ended| {
            let first = ended.is_none();
            if first {
                *ended = Some(end);
            }
            first
        });
    }

    fn close_connections(&self) {
        let connections = std::mem::take(&mut lock(&self.mux).connections);
        for outbox in connections.values() {
            outbox.close();
        }
    }

    /// A new session's connection; `None` once the server is ending.
    fn connect(self: &Arc<Self>, limit: usize) -> Option<Started> {
        let (router_input, pool_input) = tokio::io::duplex(PIPE);
        let (pool_output, router_output) = tokio::io::duplex(PIPE);
        let (outbox, queue) = Outbox::new(OUTBOX_BYTES);
        let outbox = Arc::new(outbox);
        let (number, named) = {
            let mut mux = lock(&self.mux);
            if self.is_closed() {
                return None;
            }
            mux.next += 1;
            let number = mux.next;
            mux.connections.insert(number, outbox.clone());
            (number, mux.server_name())
        };
        tokio::spawn(async move { outbox.write_lines(pool_output, queue).await });
        let reader = tokio::spawn(self.clone().read_connection(number, pool_input, limit));
        let connection = Connection { number, running: self.clone(), reader };
        // A session that asks the server no handshake of its own (the stateless revision's, of a
        // server that speaks an earlier one) still knows it by the name it gave the gateway: its
        // overrides and cached answers are the same whichever revision a client speaks.
        let source = named.unwrap_or_else(|| self.fallback.clone());
        Some((Server::Shared(connection), Box::new(router_input), Box::new(router_output), source))
    }

    /// Reads what session `number` sends until it closes its side; it is then disconnected.
    async fn read_connection(self: Arc<Self>, number: u64, input: DuplexStream, limit: usize) {
        let to_server = self.to_server.clone();
        let _ = read_lines(input, limit, &*to_server, |line| self.on_session_line(number, line)).await;
        self.disconnect(number);
    }

    fn on_session_line(&self, connection: u64, line: Line<'_>) {
        let Line::Whole(line) = line else {
            // The session's router keeps to the same limit: never seen.
            return tracing::warn!("a client session sent {} a line over the limit; dropped", self.label);
        };
        let Ok(message) = Message::parse(line) else { return };
        let mut mux = lock(&self.mux);
        if !mux.connections.contains_key(&connection) {
            return;
        }
        match message {
            Message::Request { id, method, params } => mux.request(connection, id, &method, params, line),
            Message::Notification { method, params } => mux.notification(connection, &method, params, line),
            Message::Response { id, .. } => mux.answer(connection, &id, line),
            Message::Batch(_) => {}
        }
    }

    fn on_server_line(&self, line: Line<'_>) {
        let mut mux = lock(&self.mux);
        let line = match line {
            Line::Whole(line) => line,
            Line::TooLong { head, length } => {
                let salvaged = jsonrpc::salvage(&String::from_utf8_lossy(head));
                let reason = format!("{} sent an answer of {length} bytes, more than the limit", self.label);
                match salvaged.id {
                    Some(id) if !salvaged.request => mux.fail(&id, &reason),
                    _ => tracing::warn!("{reason}; dropped"),
                }
                return;
            }
        };
        match Message::parse(line) {
            Ok(Message::Response { id, result, error }) => mux.server_answer(&id, result, error, line),
            Ok(Message::Request { id, method, .. }) => mux.server_request(id, &method, line),
            Ok(Message::Notification { method, params }) => mux.server_notification(&method, params, line),
            Ok(Message::Batch(_)) => tracing::warn!("{} sent a batch; dropped", self.label),
            Err(malformed) => {
                tracing::warn!("{} sent a line that is not JSON-RPC ({}); dropped", self.label, malformed.reason);
                if let Some(id) = malformed.answers {
                    mux.fail(&id, &format!("{}'s answer was unusable: {}", self.label, malformed.reason));
                }
            }
        }
    }

    /// Session `connection` is gone: what it had under way is cancelled, what it waited for
    /// goes on for the others, and what the server asked it is refused.
    fn disconnect(&self, connection: u64) {
        let mut mux = lock(&self.mux);
        if let Some(outbox) = mux.connections.remove(&connection) {
            outbox.close();
            mux.forget(connection);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn call(id: u64) -> Value {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "t"}})
    }

    /// A server over Streamable HTTP on 127.0.0.1 that answers every request with JSON, and
    /// notes the revision each message came with (`initialize`'s own, then the header's).
    async fn noting_server() -> (reqwest::Url, Arc<Mutex<Vec<String>>>) {
        use axum::http::{HeaderMap, StatusCode};
        use axum::response::IntoResponse;
        let noted = Arc::new(Mutex::new(Vec::new()));
        let post = {
            let noted = noted.clone();
            move |headers: HeaderMap, body: String| async move {
                let message: Value = serde_json::from_str(&body).unwrap();
                let header = headers.get("mcp-protocol-version").and_then(|value| value.to_str().ok());
                let revision = match message["method"].as_str() {
                    Some("initialize") => message["params"]["protocolVersion"].as_str().unwrap().to_owned(),
                    _ => header.unwrap_or("none").to_owned(),
                };
                lock(&noted).push(format!("{} {revision}", message["method"].as_str().unwrap_or("answer")));
                let Some(id) = message.get("id") else { return StatusCode::ACCEPTED.into_response() };
                let result = match message["method"].as_str() {
                    Some("initialize") => serde_json::json!({"protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}}, "serverInfo": {"name": "noting", "version": "1"}}),
                    _ => serde_json::json!({"content": [{"type": "text", "text": "done"}]}),
                };
                let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result});
                ([("content-type", "application/json"), ("mcp-session-id", "s1")], answer.to_string()).into_response()
            }
        };
        let app = axum::Router::new()
            .route("/mcp", axum::routing::post(post).get(|| async { StatusCode::METHOD_NOT_ALLOWED }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap()).parse().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (url, noted)
    }

    /// The profile of issue 45: a pooled server over HTTP spoken to at 2025-11-25 primed every
    /// answer's stream, which cost each call through the pool 1.3 ms with the TypeScript SDK's
    /// servers, whatever revision the session spoke. The pool speaks 2025-06-18 to it, and
    /// tells a session of a later revision so; over stdio it speaks the latest.
    #[tokio::test]
    async fn a_pooled_server_over_http_is_spoken_to_at_the_revision_that_primes_no_stream() {
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
        let (url, noted) = noting_server().await;
        let remote = crate::upstream::remote::Remote { url, headers: Vec::new(), sign_in: None };
        let shared = SharedServer::new(
            "the noting server".to_owned(),
            Arc::new(move || Some(Upstream::Remote(remote.clone()))),
            Duration::from_secs(10),
        );
        let (_server, mut input, output, _) = shared.connect(1 << 20, &[]).unwrap();
        let mut output = tokio::io::BufReader::new(output).lines();
        let latest = gateway_handshake(crate::wire::revision::REVISIONS[3]);
        for message in [
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": latest}),
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            call(2),
        ] {
            input.write_all(format!("{message}\n").as_bytes()).await.unwrap();
        }
        input.flush().await.unwrap();
        let within = Duration::from_secs(10);
        let handshake: Value =
            serde_json::from_str(&tokio::time::timeout(within, output.next_line()).await.unwrap().unwrap().unwrap())
                .unwrap();
        assert_eq!(handshake["result"]["protocolVersion"], "2025-06-18", "{handshake}");
        let answer = tokio::time::timeout(within, output.next_line()).await.unwrap().unwrap().unwrap();
        assert!(answer.contains("done"), "{answer}");
        let noted = lock(&noted).clone();
        assert_eq!(noted.first().map(String::as_str), Some("initialize 2025-06-18"), "{noted:?}");
        let call = noted.iter().find(|line| line.starts_with("tools/call")).unwrap();
        assert_eq!(call, "tools/call 2025-06-18", "{noted:?}");
        assert!(noted.iter().all(|line| line.ends_with(" 2025-06-18")), "{noted:?}");
        // Over stdio, no stream is primed: the latest revision.
        let process = Upstream::Process(tokio::process::Command::new("cat"));
        assert_eq!(pooled_revision(&process), crate::wire::revision::REVISIONS[3]);
    }

    /// The shared server's end is asked for from three places (its output closing, a hang, the
    /// gateway stopping), and two may meet: the gateway stopping closes the server's input, the
    /// connection ends and its output closes. The server (a remote one's connection task here)
    /// is ended once; a second end reads how the first ended. Before, it polled the finished
    /// connection task again and panicked ("JoinHandle polled after completion") as every
    /// gateway with a shared `url` server stopped.
    #[tokio::test]
    async fn a_shared_server_ended_twice_is_ended_once() {
        let (url, _noted) = noting_server().await;
        let remote = crate::upstream::remote::Remote { url, headers: Vec::new(), sign_in: None };
        let started = Server::start(Upstream::Remote(remote), 1 << 20, &[]).unwrap();
        let running =
            Running::spawn(started, crate::wire::revision::REVISIONS[2], 1 << 20, "the noting server".to_owned());
        running.to_server.close();
        let (first, ended) = running.end_process(Duration::from_secs(5)).await;
        let (second, again) = running.end_process(Duration::from_secs(5)).await;
        assert!(ended && !again, "the first end ended it");
        assert_eq!(format!("{first}"), format!("{second}"));
        assert!(running.is_closed());
    }
}
