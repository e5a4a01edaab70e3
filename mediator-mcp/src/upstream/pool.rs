//! A server that every client session of an HTTP gateway shares: started (or connected) once,
//! before the first session needs it, and each session connected to it as if it were its own.
//!
//! A session's router gets a connection: a pair of in-process pipes it writes and reads as it
//! would a server's standard streams. What a session sends is relabelled on the way: its
//! requests get ids of the pool's own, so two sessions' `1` are told apart and an answer reaches
//! the session that asked; its progress tokens too; and its cancellation names the request as
//! the server knows it. The server's answers get their session's ids back.
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

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::DuplexStream;

use super::{Server, ServerEnd, StartError, Started, Upstream};
use crate::jsonrpc::{self, INTERNAL_ERROR, Id, Message};
use crate::lines::{Line, Outbox, read_lines};
use crate::options::OUTBOX_BYTES;
use tool_mediator_core::sync::lock;

/// The handshake a shared server is given as it starts: the gateway's, as the one client the
/// server has, at `revision`, with what the gateway passes on to the one session a request
/// concerns (a client without it answers with an error). Roots without `listChanged`: a
/// session's change of its roots is its own, and is not passed on.
fn gateway_handshake(revision: &str) -> Value {
    serde_json::json!({
        "protocolVersion": revision,
        "capabilities": {"roots": {}, "sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "tool-mediator", "title": "tool-mediator gateway", "version": env!("CARGO_PKG_VERSION")},
    })
}

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
        Upstream::Remote(_) => crate::revision::REVISIONS[2],
        Upstream::Process(_) | Upstream::Shared(_) => crate::revision::REVISIONS[3],
    }
}

/// The answer to a session's handshake: the server's, without what is the server's one client's
/// alone (tasks), at the revision the session asked for when the mediator knows it and it is
/// earlier than the server's (a server speaks the revisions before its own, as the SDKs do).
fn handshake_for(result: &str, params: Option<&RawValue>) -> String {
    #[derive(serde::Deserialize)]
    struct Asked {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let Ok(Value::Object(mut answer)) = tool_mediator_core::json::from_str(result) else { return result.to_owned() };
    if let Some(Value::Object(capabilities)) = answer.get_mut("capabilities") {
        capabilities.remove("tasks");
    }
    let asked = params.and_then(|params| serde_json::from_str::<Asked>(params.get()).ok());
    let agreed = answer.get("protocolVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
    if let Some(asked) = asked
        && crate::revision::REVISIONS.contains(&asked.protocol_version.as_str())
        && !agreed.is_empty()
        && asked.protocol_version < agreed
    {
        answer.insert("protocolVersion".to_owned(), Value::from(asked.protocol_version));
    }
    Value::Object(answer).to_string()
}

/// Bytes in each of a connection's two pipes.
const PIPE: usize = 256 * 1024;
/// Listing pages kept at once, and their bytes; past either, those kept are let go (the next
/// asks again).
const MAX_LISTINGS: usize = 256;
const MAX_LISTING_BYTES: usize = 64 * 1024 * 1024;
/// The server's requests waiting for a session's answer, at most, and for one session.
const MAX_SERVER_REQUESTS: usize = 1024;
const MAX_SERVER_REQUESTS_EACH: usize = 64;
/// Resources subscribed to at once, at most.
const MAX_SUBSCRIPTIONS: usize = 4096;
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
                (1, "initialize", gateway_handshake(crate::revision::REVISIONS[3])),
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

/// Who waits for an answer: a session, by its number, and the id it asked with. Session 0 is
/// the pool itself.
type Asker = (u64, Id);

/// The sessions on the shared server and what is under way between them.
struct Mux {
    server: Arc<Outbox>,
    /// Numbers connections and the requests sent to the server.
    next: u64,
    connections: HashMap<u64, Arc<Outbox>>,
    /// Requests sent to the server, by the pool's id.
    forwarded: HashMap<Id, Forwarded>,
    /// The pool's id of each session's request under way.
    by_asker: HashMap<Asker, Id>,
    handshake: Handshake,
    /// Listing pages, by method and cursor.
    listings: HashMap<String, Listing>,
    /// The bytes of the pages kept.
    listed_bytes: usize,
    /// Listings under way when their list changed, by the pool's id: their answers go to those
    /// waiting, and are not kept.
    stale: HashMap<Id, Vec<Asker>>,
    /// The server's requests, waiting for the session each went to.
    server_requests: HashMap<Id, u64>,
    /// Progress tokens: the pool's, and the session's own.
    tokens: HashMap<Id, Asker>,
    /// Resources subscribed to, and by which sessions.
    subscriptions: HashMap<String, HashSet<u64>>,
    /// Resources whose first subscription is under way, with the sessions that asked for one
    /// meanwhile: they are answered as the server answers it.
    subscribing: HashMap<String, Vec<Asker>>,
    /// When the oldest ping the server left unanswered was sent, kept after the session that
    /// sent it gave up and left (as a session's supervisor does with a server that does not
    /// answer its ping): until the server answers anything, it hangs for every session.
    unanswered_ping: Option<Instant>,
}

struct Forwarded {
    asker: Asker,
    /// Its progress token, the pool's.
    token: Option<Id>,
    /// When it went to the server.
    sent: Instant,
    purpose: Purpose,
}

/// What a request sent to the server is, for what its answer does.
enum Purpose {
    /// A session's own: its answer goes back to it.
    Asked,
    /// A session's ping: answered as its own, and a sign of a server that hangs when it is not.
    Ping,
    /// The pool's handshake, every session's.
    Handshake,
    /// A listing page, by its key.
    Listing(String),
    /// A subscription to a resource, by its URI, which an error undoes.
    Subscribe(String),
    /// The pool's own (an unsubscription for sessions gone): its answer is dropped.
    Own,
}

enum Handshake {
    /// Under way: who waits, since when.
    Asked(Vec<Asker>, Instant),
    /// The result, as the server wrote it.
    Answered(String),
    /// The error it answered with, as it wrote it.
    Refused(String),
}

enum Listing {
    /// Under way, as the pool's request: who waits.
    Asked { waiters: Vec<Asker>, request: Id },
    /// The result, as the server wrote it.
    Kept(String),
}

impl Mux {
    fn new(server: Arc<Outbox>) -> Mux {
        Mux {
            server,
            next: 0,
            connections: HashMap::new(),
            forwarded: HashMap::new(),
            by_asker: HashMap::new(),
            handshake: Handshake::Asked(Vec::new(), Instant::now()),
            listings: HashMap::new(),
            listed_bytes: 0,
            stale: HashMap::new(),
            server_requests: HashMap::new(),
            tokens: HashMap::new(),
            subscriptions: HashMap::new(),
            subscribing: HashMap::new(),
            unanswered_ping: None,
        }
    }

    /// Gives the server the gateway's handshake, at `revision`.
    fn shake_hands(&mut self, revision: &str) {
        self.next += 1;
        let pooled = Id::pooled(self.next);
        self.handshake = Handshake::Asked(Vec::new(), Instant::now());
        let forwarded =
            Forwarded { asker: (0, pooled.clone()), token: None, sent: Instant::now(), purpose: Purpose::Handshake };
        self.forwarded.insert(pooled.clone(), forwarded);
        self.server.send(jsonrpc::request(&pooled, "initialize", &gateway_handshake(revision)));
    }

    /// Why the server is taken to hang: it refused the handshake, or left it, a listing or a
    /// ping unanswered for longer than `patience`.
    fn hangs(&self, patience: Duration) -> Option<String> {
        match &self.handshake {
            Handshake::Refused(error) => return Some(format!("it refused the handshake: {error}")),
            Handshake::Asked(_, since) if since.elapsed() > patience => {
                return Some(format!("no answer to the handshake in {}s", patience.as_secs()));
            }
            _ => {}
        }
        let probes = self
            .forwarded
            .values()
            .filter(|forwarded| matches!(forwarded.purpose, Purpose::Ping | Purpose::Listing(_)))
            .map(|forwarded| forwarded.sent);
        probes
            .chain(self.unanswered_ping)
            .filter(|sent| sent.elapsed() > patience)
            .map(|_| format!("a ping or a listing unanswered for {}s", patience.as_secs()))
            .next()
    }

    /// The name the server gave itself in the handshake, once it has answered it.
    fn server_name(&self) -> Option<String> {
        let Handshake::Answered(result) = &self.handshake else { return None };
        let result: Value = serde_json::from_str(result).ok()?;
        Some(result.pointer("/serverInfo/name")?.as_str()?.to_owned())
    }

    fn send_session(&mut self, connection: u64, line: String) {
        let Some(outbox) = self.connections.get(&connection) else { return };
        if outbox.queued() > OUTBOX_BYTES {
            // A session this far behind is let go: the server is not held up for it.
            tracing::warn!("a client session is {OUTBOX_BYTES} bytes behind a shared server; disconnected it");
            if let Some(outbox) = self.connections.remove(&connection) {
                outbox.close();
            }
            return self.forget(connection);
        }
        outbox.send(line);
    }

    fn send_every_session(&mut self, line: &str) {
        let connections: Vec<u64> = self.connections.keys().copied().collect();
        for connection in connections {
            self.send_session(connection, line.to_owned());
        }
    }

    /// A line of the pool's own for the server (an answer to its ping, a refusal): dropped when
    /// the server does not read, so a server that floods cannot grow the queue without end.
    fn send_server_own(&mut self, line: String) {
        if self.server.queued() > OUTBOX_BYTES {
            return tracing::debug!("a shared server does not read its input; an answer of the pool's dropped");
        }
        self.server.send(line);
    }

    fn request(&mut self, connection: u64, id: Id, method: &str, params: Option<&RawValue>, line: &[u8]) {
        let token = progress_token(params);
        let forward = |mux: &mut Mux, asker: Asker, purpose: Purpose| {
            mux.forward(asker, purpose, line, token.clone());
        };
        match method {
            "initialize" => match &mut self.handshake {
                Handshake::Answered(result) => {
                    let answer = jsonrpc::response(&id, &handshake_for(result, params));
                    self.send_session(connection, answer);
                }
                Handshake::Refused(error) => {
                    let answer = jsonrpc::raw_error_response(&id, error);
                    self.send_session(connection, answer);
                }
                Handshake::Asked(waiters, _) => waiters.push((connection, id)),
            },
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" if token.is_none() => {
                let key = format!("{method} {}", cursor_of(params).unwrap_or_default());
                match self.listings.get_mut(&key) {
                    Some(Listing::Kept(result)) => {
                        let answer = jsonrpc::response(&id, result);
                        self.send_session(connection, answer);
                    }
                    Some(Listing::Asked { waiters, .. }) => waiters.push((connection, id)),
                    None => {
                        if self.listings.len() >= MAX_LISTINGS {
                            self.let_listings_go();
                        }
                        let waiters = vec![(connection, id.clone())];
                        let request = self.forward((connection, id), Purpose::Listing(key.clone()), line, None);
                        self.listings.insert(key, Listing::Asked { waiters, request });
                    }
                }
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let Some(uri) = uri_of(params) else {
                    return forward(self, (connection, id), Purpose::Asked);
                };
                let known = self.subscriptions.len();
                let subscribers = self.subscriptions.entry(uri.clone()).or_default();
                let (first, last) = if method == "resources/subscribe" {
                    let first = subscribers.is_empty();
                    if first && known >= MAX_SUBSCRIPTIONS {
                        self.subscriptions.remove(&uri);
                        let reason = format!("{MAX_SUBSCRIPTIONS} resources are subscribed to already");
                        return self.send_session(connection, jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
                    }
                    subscribers.insert(connection);
                    (first, false)
                } else {
                    let was = subscribers.remove(&connection);
                    (false, was && subscribers.is_empty())
                };
                if self.subscriptions.get(&uri).is_some_and(HashSet::is_empty) {
                    self.subscriptions.remove(&uri);
                }
                let under_way = method == "resources/subscribe" && !first;
                match (first, last) {
                    (true, _) => {
                        self.subscribing.insert(uri.clone(), Vec::new());
                        forward(self, (connection, id), Purpose::Subscribe(uri))
                    }
                    (_, true) => forward(self, (connection, id), Purpose::Asked),
                    // The first subscription is still under way: as the server answers it.
                    _ if under_way && self.subscribing.contains_key(&uri) => {
                        self.subscribing.entry(uri).or_default().push((connection, id));
                    }
                    // Others want it still, or had it already: the server's state is as asked.
                    _ => self.send_session(connection, jsonrpc::response(&id, "{}")),
                }
            }
            // The level of the server's one client: a session's choice is not the others'.
            "logging/setLevel" => self.send_session(connection, jsonrpc::response(&id, "{}")),
            method if method.starts_with("tasks/") => {
                let reason = "tasks of a server every session shares are not kept apart; give it \
                              \"scope\": \"session\" in the servers file";
                self.send_session(connection, jsonrpc::error_response(&id, INTERNAL_ERROR, reason));
            }
            "ping" => forward(self, (connection, id), Purpose::Ping),
            _ => forward(self, (connection, id), Purpose::Asked),
        }
    }

    /// Lets every kept page go (what is under way goes on).
    fn let_listings_go(&mut self) {
        self.listings.retain(|_, listing| matches!(listing, Listing::Asked { .. }));
        self.listed_bytes = 0;
    }

    /// Sends a session's request to the server under an id (and progress token) of the pool's;
    /// that id.
    fn forward(&mut self, asker: Asker, purpose: Purpose, line: &[u8], token: Option<Id>) -> Id {
        self.next += 1;
        let pooled = Id::pooled(self.next);
        let mut text = jsonrpc::with_top_level_id(line, &pooled);
        let token = match token {
            Some(theirs) => {
                self.next += 1;
                let ours = Id::pooled(self.next);
                text = jsonrpc::with_id(text.as_bytes(), "/params/_meta/progressToken", &ours);
                self.tokens.insert(ours.clone(), (asker.0, theirs));
                Some(ours)
            }
            None => None,
        };
        self.by_asker.insert(asker.clone(), pooled.clone());
        self.forwarded.insert(pooled.clone(), Forwarded { asker, token, sent: Instant::now(), purpose });
        self.server.send(text);
        pooled
    }

    fn notification(&mut self, connection: u64, method: &str, params: Option<&RawValue>, line: &[u8]) {
        match method {
            // The server heard the pool's, after the pool's handshake.
            "notifications/initialized" => {}
            // A shared server has no one client's roots.
            "notifications/roots/list_changed" => {}
            "notifications/cancelled" => {
                let Some(id) = jsonrpc::cancelled_request(params) else { return };
                self.cancel(&(connection, id), line);
            }
            _ => self.server.send(lossless(line)),
        }
    }

    /// Session's request `asker` is cancelled: the server hears of it when it was the session's
    /// alone; one others wait for too goes on for them.
    fn cancel(&mut self, asker: &Asker, line: &[u8]) {
        let Some(pooled) = self.by_asker.remove(asker) else {
            return self.leave_waiting(asker.0, Some(&asker.1));
        };
        let alone = self
            .forwarded
            .get(&pooled)
            .is_some_and(|forwarded| matches!(forwarded.purpose, Purpose::Asked | Purpose::Ping));
        if alone {
            if let Some(forwarded) = self.forwarded.remove(&pooled) {
                self.drop_token(&forwarded);
            }
            self.server.send(jsonrpc::with_id(line, "/params/requestId", &pooled));
        } else {
            self.leave_waiting(asker.0, Some(&asker.1));
        }
    }

    /// Session `connection` waits no more for shared answers (for the one asked `id`, or all).
    fn leave_waiting(&mut self, connection: u64, id: Option<&Id>) {
        let leaves = |waiter: &Asker| waiter.0 == connection && id.is_none_or(|id| *id == waiter.1);
        if let Handshake::Asked(waiters, _) = &mut self.handshake {
            waiters.retain(|waiter| !leaves(waiter));
        }
        for listing in self.listings.values_mut() {
            if let Listing::Asked { waiters, .. } = listing {
                waiters.retain(|waiter| !leaves(waiter));
            }
        }
        for waiters in self.stale.values_mut() {
            waiters.retain(|waiter| !leaves(waiter));
        }
    }

    fn drop_token(&mut self, forwarded: &Forwarded) {
        if let Some(token) = &forwarded.token {
            self.tokens.remove(token);
        }
    }

    /// A session answered a request of the server's.
    fn answer(&mut self, connection: u64, id: &Id, line: &[u8]) {
        if self.server_requests.get(id) == Some(&connection) {
            self.server_requests.remove(id);
            self.server.send(lossless(line));
        }
    }

    /// Session `connection` is gone.
    fn forget(&mut self, connection: u64) {
        let gone: Vec<Id> = self
            .forwarded
            .iter()
            .filter(|(_, forwarded)| {
                forwarded.asker.0 == connection && matches!(forwarded.purpose, Purpose::Asked | Purpose::Ping)
            })
            .map(|(pooled, _)| pooled.clone())
            .collect();
        for pooled in gone {
            if let Some(forwarded) = self.forwarded.remove(&pooled) {
                self.by_asker.remove(&forwarded.asker);
                self.drop_token(&forwarded);
                if matches!(forwarded.purpose, Purpose::Ping) {
                    let oldest = self.unanswered_ping.map_or(forwarded.sent, |known| known.min(forwarded.sent));
                    self.unanswered_ping = Some(oldest);
                }
            }
            let params = serde_json::json!({"requestId": raw_value(&pooled), "reason": "the client session ended"});
            self.send_server_own(jsonrpc::notification("notifications/cancelled", Some(&params)));
        }
        self.by_asker.retain(|asker, _| asker.0 != connection);
        self.tokens.retain(|_, asker| asker.0 != connection);
        for waiting in self.subscribing.values_mut() {
            waiting.retain(|asker| asker.0 != connection);
        }
        self.leave_waiting(connection, None);
        let asked: Vec<Id> =
            self.server_requests.iter().filter(|(_, asked)| **asked == connection).map(|(id, _)| id.clone()).collect();
        for id in asked {
            self.server_requests.remove(&id);
            let reason = "the client session it was sent to has ended";
            self.send_server_own(jsonrpc::error_response(&id, INTERNAL_ERROR, reason));
        }
        let mut unwanted = Vec::new();
        self.subscriptions.retain(|uri, subscribers| {
            subscribers.remove(&connection);
            let empty = subscribers.is_empty();
            if empty {
                unwanted.push(uri.clone());
            }
            !empty
        });
        for uri in unwanted {
            self.next += 1;
            let pooled = Id::pooled(self.next);
            let forwarded =
                Forwarded { asker: (0, pooled.clone()), token: None, sent: Instant::now(), purpose: Purpose::Own };
            self.forwarded.insert(pooled.clone(), forwarded);
            let unsubscribe = jsonrpc::request(&pooled, "resources/unsubscribe", &serde_json::json!({"uri": uri}));
            self.send_server_own(unsubscribe);
        }
    }

    /// The server answered request `id` (the pool's): the session (or sessions) that asked
    /// get it under their own ids.
    fn server_answer(&mut self, id: &Id, result: Option<&RawValue>, error: Option<&RawValue>, line: &[u8]) {
        // It answers: whatever ping it left unanswered, it does not hang.
        self.unanswered_ping = None;
        let Some(forwarded) = self.forwarded.remove(id) else {
            return tracing::debug!("an answer to {id}, which no session waits for; dropped");
        };
        self.by_asker.remove(&forwarded.asker);
        self.drop_token(&forwarded);
        let answer_to = |asker: &Asker| match (result, error) {
            (Some(result), _) => jsonrpc::response(&asker.1, result.get()),
            (None, Some(error)) => jsonrpc::raw_error_response(&asker.1, error.get()),
            (None, None) => jsonrpc::with_top_level_id(line, &asker.1),
        };
        let waiters = match forwarded.purpose {
            Purpose::Asked | Purpose::Ping => {
                let answer = jsonrpc::with_top_level_id(line, &forwarded.asker.1);
                return self.send_session(forwarded.asker.0, answer);
            }
            Purpose::Own => return,
            Purpose::Subscribe(uri) => {
                let mut askers = vec![forwarded.asker];
                askers.extend(self.subscribing.remove(&uri).unwrap_or_default());
                if result.is_none() {
                    if let Some(subscribers) = self.subscriptions.get_mut(&uri) {
                        for asker in &askers {
                            subscribers.remove(&asker.0);
                        }
                    }
                    if self.subscriptions.get(&uri).is_some_and(HashSet::is_empty) {
                        self.subscriptions.remove(&uri);
                    }
                }
                askers
            }
            Purpose::Handshake => {
                let waiters = match std::mem::replace(&mut self.handshake, Handshake::Refused(String::new())) {
                    Handshake::Asked(waiters, _) => waiters,
                    _ => Vec::new(),
                };
                match (result, error) {
                    (Some(result), _) => {
                        self.handshake = Handshake::Answered(result.get().to_owned());
                        self.server.send(jsonrpc::notification("notifications/initialized", None));
                        let answers: Vec<(u64, String)> = waiters
                            .iter()
                            .map(|waiter| (waiter.0, jsonrpc::response(&waiter.1, &handshake_for(result.get(), None))))
                            .collect();
                        for (connection, answer) in answers {
                            self.send_session(connection, answer);
                        }
                        return;
                    }
                    (None, error) => {
                        let error = error.map_or_else(|| "{}".to_owned(), |error| error.get().to_owned());
                        self.handshake = Handshake::Refused(error);
                    }
                }
                waiters
            }
            Purpose::Listing(key) => {
                if let Some(waiters) = self.stale.remove(id) {
                    waiters
                } else {
                    match self.listings.remove(&key) {
                        Some(Listing::Asked { waiters, .. }) => {
                            if let Some(result) = result {
                                let bytes = result.get().len();
                                if self.listed_bytes + bytes > MAX_LISTING_BYTES {
                                    self.let_listings_go();
                                }
                                self.listed_bytes += bytes;
                                self.listings.insert(key, Listing::Kept(result.get().to_owned()));
                            }
                            waiters
                        }
                        Some(kept) => {
                            self.listings.insert(key, kept);
                            Vec::new()
                        }
                        None => Vec::new(),
                    }
                }
            }
        };
        for waiter in &waiters {
            let answer = answer_to(waiter);
            self.send_session(waiter.0, answer);
        }
    }

    /// Request `id` (the pool's) gets no answer from the server: whoever waits hears why.
    fn fail(&mut self, id: &Id, reason: &str) {
        let line = jsonrpc::error_response(id, INTERNAL_ERROR, reason);
        let error = serde_json::json!({"code": INTERNAL_ERROR, "message": reason}).to_string();
        let error = RawValue::from_string(error).ok();
        self.server_answer(id, None, error.as_deref(), line.as_bytes());
    }

    /// The session a request or a message of the server's concerns, and the line as it goes
    /// there: the session whose request it came with ([`jsonrpc::RELATED_REQUEST_KEY`], noted by
    /// the remote bridge for a message on a request's event stream). Over stdio a message says
    /// nothing of that, and no session is guessed at: not even the one with a request under way,
    /// whose call may not be what the server's message is about (another session's background
    /// job may be).
    fn concerned(&self, line: &[u8]) -> (Option<u64>, String) {
        let (related, line) = jsonrpc::take_related_request(line);
        let connection = related
            .and_then(|id| self.forwarded.get(&id))
            .map(|forwarded| forwarded.asker.0)
            .filter(|connection| self.connections.contains_key(connection));
        (connection, line)
    }

    fn server_request(&mut self, id: Id, method: &str, line: &[u8]) {
        if method == "ping" {
            // Answered for every session: the pool is alive.
            return self.send_server_own(jsonrpc::response(&id, "{}"));
        }
        let (concerned, line) = self.concerned(line);
        let refusal = match concerned {
            _ if self.server_requests.len() >= MAX_SERVER_REQUESTS => {
                format!("{MAX_SERVER_REQUESTS} requests are already waiting for client sessions")
            }
            Some(connection)
                if self.server_requests.values().filter(|asked| **asked == connection).count()
                    >= MAX_SERVER_REQUESTS_EACH =>
            {
                format!("{MAX_SERVER_REQUESTS_EACH} requests are already waiting for that client session")
            }
            Some(connection) => {
                self.server_requests.insert(id, connection);
                return self.send_session(connection, line);
            }
            None => "which client session this concerns cannot be told: it came with no request of one \
                     (give the server \"scope\": \"session\" in the servers file)"
                .to_owned(),
        };
        self.send_server_own(jsonrpc::error_response(&id, INTERNAL_ERROR, &refusal));
    }

    fn server_notification(&mut self, method: &str, params: Option<&RawValue>, line: &[u8]) {
        match method {
            "notifications/progress" => {
                let Some(token) = params.and_then(|params| id_at(params, "progressToken")) else { return };
                if let Some((connection, theirs)) = self.tokens.get(&token).cloned() {
                    let line = jsonrpc::with_id(line, "/params/progressToken", &theirs);
                    self.send_session(connection, line);
                }
            }
            "notifications/cancelled" => {
                let Some(id) = jsonrpc::cancelled_request(params) else { return };
                if let Some(connection) = self.server_requests.remove(&id) {
                    self.send_session(connection, lossless(line));
                }
            }
            "notifications/tools/list_changed"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed" => {
                let kind = method.trim_start_matches("notifications/").trim_end_matches("list_changed");
                // What is kept goes, and what is under way is answered but not kept: the answer
                // may be from before the change. A listing asked from now on asks again.
                let changed: Vec<String> = self.listings.keys().filter(|key| key.starts_with(kind)).cloned().collect();
                for key in changed {
                    match self.listings.remove(&key) {
                        Some(Listing::Asked { waiters, request }) => {
                            self.stale.insert(request, waiters);
                        }
                        Some(Listing::Kept(result)) => {
                            self.listed_bytes = self.listed_bytes.saturating_sub(result.len())
                        }
                        None => {}
                    }
                }
                self.send_every_session(&lossless(line));
            }
            "notifications/resources/updated" => {
                let Some(uri) = uri_of(params) else { return };
                let subscribers: Vec<u64> = self
                    .subscriptions
                    .get(&uri)
                    .map(|subscribers| subscribers.iter().copied().collect())
                    .unwrap_or_default();
                for connection in subscribers {
                    self.send_session(connection, lossless(line));
                }
            }
            "notifications/message" => match self.concerned(line) {
                (Some(connection), line) => self.send_session(connection, line),
                (None, _) => tracing::debug!("a log message of a shared server that concerns no one session; dropped"),
            },
            // Anything else may be one session's (a task's status, an elicitation completed):
            // which one cannot be told, so none hears it.
            _ => tracing::debug!("{method} from a shared server, which concerns no one session; dropped"),
        }
    }
}

fn lossless(line: &[u8]) -> String {
    String::from_utf8_lossy(line).into_owned()
}

/// The id (or token) as a JSON value, to write in a message of the pool's own.
fn raw_value(id: &Id) -> Value {
    serde_json::from_str(id.as_raw()).unwrap_or(Value::Null)
}

/// `params.uri`.
fn uri_of(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        uri: String,
    }
    serde_json::from_str::<Params>(params?.get()).ok().map(|params| params.uri)
}

/// `params.cursor`: a listing's page.
fn cursor_of(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        cursor: Option<String>,
    }
    serde_json::from_str::<Params>(params?.get()).ok()?.cursor
}

/// An id-like value (a string or an integer) at `key` of `params`.
fn id_at(params: &RawValue, key: &str) -> Option<Id> {
    let params: HashMap<String, &RawValue> = serde_json::from_str(params.get()).ok()?;
    Id::of(params.get(key)?)
}

/// The progress token a request's params carry in `_meta`. Most carry none: their params (a
/// call's arguments can be megabytes) are read only when the token's name is in them.
fn progress_token(params: Option<&RawValue>) -> Option<Id> {
    let params = params.filter(|params| params.get().contains("progressToken"))?;
    let params: HashMap<String, &RawValue> = serde_json::from_str(params.get()).ok()?;
    id_at(params.get("_meta")?, "progressToken")
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc::UnboundedReceiver;

    use super::*;
    use crate::lines::Outgoing;

    /// A mux with the server's input and `sessions` connections, each read by the test.
    fn mux(sessions: u64) -> (Mux, UnboundedReceiver<Outgoing>, Vec<UnboundedReceiver<Outgoing>>) {
        let (server, to_server) = Outbox::new(OUTBOX_BYTES);
        let mut mux = Mux::new(Arc::new(server));
        mux.handshake = Handshake::Answered(
            r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{}},"serverInfo":{"name":"s","version":"1"}}"#
                .to_owned(),
        );
        let mut heard = Vec::new();
        for number in 1..=sessions {
            let (outbox, queue) = Outbox::new(OUTBOX_BYTES);
            mux.connections.insert(number, Arc::new(outbox));
            heard.push(queue);
        }
        mux.next = sessions;
        (mux, to_server, heard)
    }

    fn lines(queue: &mut UnboundedReceiver<Outgoing>) -> Vec<Value> {
        let mut lines = Vec::new();
        while let Ok(Outgoing::Line(line)) = queue.try_recv() {
            lines.push(serde_json::from_str(&line).unwrap());
        }
        lines
    }

    fn from_session(mux: &mut Mux, connection: u64, message: Value) {
        let line = message.to_string();
        match Message::parse(line.as_bytes()).unwrap() {
            Message::Request { id, method, params } => mux.request(connection, id, &method, params, line.as_bytes()),
            Message::Notification { method, params } => mux.notification(connection, &method, params, line.as_bytes()),
            Message::Response { id, .. } => mux.answer(connection, &id, line.as_bytes()),
            Message::Batch(_) => unreachable!(),
        }
    }

    fn from_server(mux: &mut Mux, message: Value) {
        let line = message.to_string();
        match Message::parse(line.as_bytes()).unwrap() {
            Message::Response { id, result, error } => mux.server_answer(&id, result, error, line.as_bytes()),
            Message::Request { id, method, .. } => mux.server_request(id, &method, line.as_bytes()),
            Message::Notification { method, params } => mux.server_notification(&method, params, line.as_bytes()),
            Message::Batch(_) => unreachable!(),
        }
    }

    fn call(id: u64) -> Value {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "t"}})
    }

    #[test]
    fn a_servers_request_reaches_only_the_session_whose_request_it_came_with() {
        let (mut mux, mut server, mut sessions) = mux(2);
        from_session(&mut mux, 1, call(5));
        let forwarded = lines(&mut server);
        assert_eq!(forwarded[0]["id"], "tool-mediator-pool-3", "under the pool's id: {forwarded:?}");
        // Session 1 alone has a call under way, but the server's request says nothing of it (it
        // may be about another session's background job): refused, and the log message dropped.
        let sampling =
            serde_json::json!({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}});
        from_server(&mut mux, sampling);
        assert!(lines(&mut sessions[0]).is_empty(), "no session is guessed at");
        let refused = lines(&mut server);
        assert_eq!((&refused[0]["id"], refused[0]["error"].is_object()), (&serde_json::json!("s1"), true));
        let log = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "B's"}});
        from_server(&mut mux, log);
        assert!(lines(&mut sessions[0]).is_empty() && lines(&mut sessions[1]).is_empty());
        // One that came with session 1's request (on its event stream) reaches session 1 alone,
        // without the note.
        let related = |message: Value| {
            let noted = jsonrpc::with_related_request(message.to_string().as_bytes(), &Id::pooled(3)).unwrap();
            serde_json::from_slice::<Value>(&noted).unwrap()
        };
        from_server(
            &mut mux,
            related(serde_json::json!({"jsonrpc": "2.0", "id": "s3",
            "method": "sampling/createMessage", "params": {"maxTokens": 1}})),
        );
        let asked = lines(&mut sessions[0]);
        assert_eq!(asked[0]["id"], "s3");
        assert_eq!(asked[0]["params"], serde_json::json!({"maxTokens": 1}), "the note is the pool's");
        from_server(
            &mut mux,
            related(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"data": "A's"}})),
        );
        assert_eq!(lines(&mut sessions[0])[0]["params"]["data"], "A's");
        assert!(lines(&mut sessions[1]).is_empty());
        from_session(&mut mux, 2, call(5));
        lines(&mut server);
        let elicitation =
            serde_json::json!({"jsonrpc": "2.0", "id": "s2", "method": "elicitation/create", "params": {}});
        from_server(&mut mux, elicitation);
        let refused = lines(&mut server);
        assert_eq!(
            (&refused[0]["id"], refused[0]["error"].is_object()),
            (&serde_json::json!("s2"), true),
            "{refused:?}"
        );
        let message =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "secret"}});
        from_server(&mut mux, message);
        assert!(lines(&mut sessions[0]).is_empty() && lines(&mut sessions[1]).is_empty(), "neither hears the other's");
        // Each answer reaches its own session under its own id.
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": "tool-mediator-pool-4", "result": {"n": 2}}));
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": "tool-mediator-pool-3", "result": {"n": 1}}));
        let (first, second) = (lines(&mut sessions[0]), lines(&mut sessions[1]));
        assert_eq!((&first[0]["id"], &first[0]["result"]["n"]), (&serde_json::json!(5), &serde_json::json!(1)));
        assert_eq!((&second[0]["id"], &second[0]["result"]["n"]), (&serde_json::json!(5), &serde_json::json!(2)));
    }

    #[test]
    fn a_listing_under_way_when_the_list_changes_is_answered_but_not_kept() {
        let (mut mux, mut server, mut sessions) = mux(3);
        let list = |id: u64| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
        from_session(&mut mux, 1, list(1));
        let first = lines(&mut server)[0]["id"].clone();
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        assert_eq!(lines(&mut sessions[1])[0]["method"], "notifications/tools/list_changed", "every session hears it");
        // Asked after the change: asked again, not joined to the listing from before it.
        from_session(&mut mux, 2, list(1));
        let second = lines(&mut server)[0]["id"].clone();
        assert_ne!(first, second);
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": first, "result": {"tools": ["old"]}}));
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": second, "result": {"tools": ["new"]}}));
        assert_eq!(lines(&mut sessions[0]).last().unwrap()["result"]["tools"][0], "old");
        assert_eq!(lines(&mut sessions[1]).last().unwrap()["result"]["tools"][0], "new");
        // The listing from after the change is kept: a third session is answered from it.
        from_session(&mut mux, 3, list(9));
        assert!(lines(&mut server).is_empty(), "not asked again");
        assert_eq!(lines(&mut sessions[2]).last().unwrap()["result"]["tools"][0], "new");
    }

    /// A second session subscribing while the first one's subscription is under way is answered
    /// as the server answers the first: a refused subscription is refused to both, and neither
    /// is taken for subscribed.
    #[test]
    fn a_second_subscriber_is_answered_as_the_server_answers_the_first() {
        let (mut mux, mut server, mut sessions) = mux(3);
        let subscribe = |id: u64, uri: &str| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}});
        from_session(&mut mux, 1, subscribe(1, "file:///a"));
        let asked = lines(&mut server);
        assert_eq!(asked.len(), 1);
        from_session(&mut mux, 2, subscribe(7, "file:///a"));
        assert!(lines(&mut server).is_empty(), "the server is asked once");
        assert!(lines(&mut sessions[1]).is_empty(), "not answered before the server answers the first");
        let refusal = serde_json::json!({"code": -32602, "message": "no such resource"});
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": asked[0]["id"], "error": refusal}));
        assert_eq!(lines(&mut sessions[0])[0]["error"]["message"], "no such resource");
        let second = lines(&mut sessions[1]);
        assert_eq!(
            (&second[0]["id"], &second[0]["error"]["message"]),
            (&serde_json::json!(7), &serde_json::json!("no such resource"))
        );
        assert!(!mux.subscriptions.contains_key("file:///a"), "nobody is taken for subscribed");

        // Granted: both are answered, and a third, later, at once.
        from_session(&mut mux, 1, subscribe(2, "file:///b"));
        let asked = lines(&mut server);
        from_session(&mut mux, 2, subscribe(8, "file:///b"));
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {}}));
        assert_eq!(lines(&mut sessions[1])[0]["id"], 8);
        from_session(&mut mux, 3, subscribe(4, "file:///b"));
        assert!(lines(&mut server).is_empty());
        assert_eq!(lines(&mut sessions[2])[0]["id"], 4);
        assert_eq!(mux.subscriptions["file:///b"].len(), 3);
    }

    #[test]
    fn tasks_a_change_of_roots_and_the_log_level_are_not_shared() {
        let (mut mux, mut server, mut sessions) = mux(1);
        let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
        from_session(&mut mux, 1, initialize);
        let answered = lines(&mut sessions[0]);
        assert_eq!(answered[0]["result"]["protocolVersion"], "2025-06-18", "at the session's earlier revision");
        assert!(answered[0]["result"]["capabilities"].get("tasks").is_none(), "{answered:?}");
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/list"}));
        from_session(
            &mut mux,
            1,
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
            "params": {"level": "debug"}}),
        );
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(lines(&mut server).is_empty(), "none of it reaches the server");
        let answered = lines(&mut sessions[0]);
        assert!(answered[0]["error"].is_object() && answered[1]["result"].is_object(), "{answered:?}");
    }

    #[test]
    fn a_ping_left_unanswered_by_a_session_that_gave_up_still_says_the_server_hangs() {
        let (mut mux, mut server, _sessions) = mux(2);
        let ping = serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        from_session(&mut mux, 1, ping.clone());
        let pooled = lines(&mut server)[0]["id"].clone();
        // The session's supervisor found it unanswered, ended its connection, and connects again.
        mux.forget(1);
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).unwrap().contains("ping"), "the next connection restarts it");
        assert!(mux.hangs(Duration::from_secs(60)).is_none(), "within its patience");
        // Anything it answers says it is alive.
        from_session(&mut mux, 2, ping);
        let asked = lines(&mut server);
        let answered = asked.iter().find(|line| line["method"] == "ping").unwrap()["id"].clone();
        assert_ne!(answered, pooled);
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": answered, "result": {}}));
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).is_none());
    }

    #[test]
    fn a_server_that_leaves_its_handshake_or_a_ping_unanswered_hangs() {
        let (server, _to_server) = Outbox::new(OUTBOX_BYTES);
        let mut mux = Mux::new(Arc::new(server));
        mux.shake_hands(crate::revision::REVISIONS[3]);
        assert_eq!(mux.hangs(Duration::from_secs(60)), None, "asked just now");
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).unwrap().contains("handshake"));
        let (mut mux, _server, _sessions) = self::mux(1);
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).unwrap().contains("ping"));
        from_session(&mut mux, 1, call(2));
        assert!(mux.hangs(Duration::from_secs(60)).is_none(), "a long call is no sign of it");
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
        let remote = crate::remote::Remote { url, headers: Vec::new(), sign_in: None };
        let shared = SharedServer::new(
            "the noting server".to_owned(),
            Arc::new(move || Some(Upstream::Remote(remote.clone()))),
            Duration::from_secs(10),
        );
        let (_server, mut input, output, _) = shared.connect(1 << 20, &[]).unwrap();
        let mut output = tokio::io::BufReader::new(output).lines();
        let latest = gateway_handshake(crate::revision::REVISIONS[3]);
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
        assert_eq!(pooled_revision(&process), crate::revision::REVISIONS[3]);
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
        let remote = crate::remote::Remote { url, headers: Vec::new(), sign_in: None };
        let started = Server::start(Upstream::Remote(remote), 1 << 20, &[]).unwrap();
        let running = Running::spawn(started, crate::revision::REVISIONS[2], 1 << 20, "the noting server".to_owned());
        running.to_server.close();
        let (first, ended) = running.end_process(Duration::from_secs(5)).await;
        let (second, again) = running.end_process(Duration::from_secs(5)).await;
        assert!(ended && !again, "the first end ended it");
        assert_eq!(format!("{first}"), format!("{second}"));
        assert!(running.is_closed());
    }
}
