//! A server that every client session of an HTTP gateway shares: started (or connected) once,
//! when the first session needs it, and each session connected to it as if it were its own.
//!
//! A session's router gets a connection: a pair of in-process pipes it writes and reads as it
//! would a server's standard streams. What a session sends is relabelled on the way: its
//! requests get ids of the pool's own, so two sessions' `1` are told apart and an answer reaches
//! the session that asked; its progress tokens too; and its cancellation names the request as
//! the server knows it. The server's answers get their session's ids back.
//!
//! What sessions ask alike is asked once. The handshake: the first session's goes to the
//! server, and every later one is answered with what the server said then. Listings
//! (`tools/list` and the other lists, by their params): kept until the server says that list
//! changed, and one asked while the same is under way waits for it. A resource is subscribed to
//! while any session wants it.
//!
//! What the server sends of its own accord: a list change goes to every session (each router
//! lists again, coalescing as it does for a server of its own); a progress notification to the
//! session whose token it names; an update of a resource to the sessions subscribed to it; a
//! request (sampling, elicitation, roots) or a log message to the session whose request went to
//! the server last among those still under way, else to the last session that asked anything
//! (a request with no session left is refused, a message goes to every session). So a server
//! that keeps per-user state is not for sharing: the servers file says `"scope": "session"`.
//!
//! When the server ends, every connection closes: each session's supervisor sees its server
//! gone and, with restarts, connects again, which starts the server again, once.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::io::DuplexStream;

use super::{Server, ServerEnd, StartError, Started, Upstream};
use crate::jsonrpc::{self, INTERNAL_ERROR, Id, Message};
use crate::lines::{Line, Outbox, read_lines};
use crate::options::OUTBOX_BYTES;
use tool_mediator_core::sync::lock;

/// The handshake a shared server is given: the gateway's, as the one client the server has, with
/// what the gateway passes on to its clients (a client without one answers with an error).
fn gateway_handshake() -> Value {
    serde_json::json!({
        "protocolVersion": crate::revision::REVISIONS[3],
        "capabilities": {"roots": {"listChanged": true}, "sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "tool-mediator", "title": "tool-mediator gateway", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The answer to a later session's handshake: the server's, at the revision that session asked
/// for when the mediator knows it and it is no later than the server's (a server speaks the
/// revisions before its own, as the SDKs do).
fn handshake_for(result: &str, params: Option<&RawValue>) -> String {
    #[derive(serde::Deserialize)]
    struct Asked {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let asked = params.and_then(|params| serde_json::from_str::<Asked>(params.get()).ok());
    let Some(asked) = asked.filter(|asked| crate::revision::REVISIONS.contains(&asked.protocol_version.as_str()))
    else {
        return result.to_owned();
    };
    let Ok(Value::Object(mut answer)) = tool_mediator_core::json::from_str(result) else { return result.to_owned() };
    let agreed = answer.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    if agreed.is_empty() || asked.protocol_version.as_str() >= agreed {
        return result.to_owned();
    }
    answer.insert("protocolVersion".to_owned(), Value::from(asked.protocol_version));
    Value::Object(answer).to_string()
}

/// Bytes in each of a connection's two pipes.
const PIPE: usize = 256 * 1024;
/// Listing pages kept at once; past it, those kept are let go (the next asks again).
const MAX_LISTINGS: usize = 256;
/// The server's requests waiting for a session's answer, at most.
const MAX_SERVER_REQUESTS: usize = 1024;
/// Resources subscribed to at once, at most.
const MAX_SUBSCRIPTIONS: usize = 4096;
/// How long a server whose output closed has to exit before it is ended.
const REAPING: Duration = Duration::from_secs(2);

/// One server that client sessions share.
pub struct SharedServer {
    label: String,
    start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>,
    running: Mutex<Option<Arc<Running>>>,
    starts: AtomicU64,
}

impl SharedServer {
    /// A server to share, `label` naming it in logs, started with `start` when first needed.
    pub fn new(label: String, start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>) -> Arc<SharedServer> {
        Arc::new(SharedServer { label, start, running: Mutex::new(None), starts: AtomicU64::new(0) })
    }

    /// How logs name it.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// How many times the server was started (or connected to).
    pub fn starts(&self) -> u64 {
        self.starts.load(Ordering::Relaxed)
    }

    /// Whether the server is running now.
    pub fn is_running(&self) -> bool {
        lock(&self.running).as_ref().is_some_and(|running| !running.is_closed())
    }

    /// A connection for one session; the server is started first when it is not running.
    pub(super) fn connect(&self, limit: usize, withheld: &[String]) -> Result<Started, StartError> {
        let mut running = lock(&self.running);
        if let Some(connected) = running.as_ref().and_then(|running| running.connect(limit)) {
            return Ok(connected);
        }
        let upstream = (self.start)().ok_or_else(|| StartError::Once(self.label.clone()))?;
        let started = Server::start(upstream, limit, withheld)?;
        self.starts.fetch_add(1, Ordering::Relaxed);
        tracing::info!("{} started, shared by every client session", self.label);
        let fresh = Running::spawn(started, limit, self.label.clone());
        let connected = fresh.connect(limit).expect("a server just started is running");
        *running = Some(fresh);
        Ok(connected)
    }

    /// Starts the server and asks it what every session will ask first: the handshake (this
    /// one, the gateway's, is the one the server keeps) and its tools, so the first client
    /// waits for neither. Why not, when it cannot be done within `patience`.
    pub async fn warm(&self, limit: usize, withheld: &[String], patience: Duration) -> Result<(), String> {
        use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
        let (mut server, mut input, output, _) =
            self.connect(limit, withheld).map_err(|error| tool_mediator_core::error::with_causes(&error))?;
        let mut lines = tokio::io::BufReader::new(output).lines();
        let asked = async {
            for (id, method, params) in
                [(1, "initialize", gateway_handshake()), (2, "tools/list", serde_json::json!({}))]
            {
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
                if method == "initialize" {
                    let initialized = jsonrpc::notification("notifications/initialized", None);
                    input.write_all(format!("{initialized}\n").as_bytes()).await?;
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

    /// Ends the server, if it runs: its input closed, then (after `grace`) stopped.
    pub async fn end(&self, grace: Duration) -> Option<ServerEnd> {
        let running = lock(&self.running).take()?;
        running.to_server.close();
        let end = running.process.lock().await.end_within(grace).await;
        running.closed(end.clone());
        Some(end)
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
    /// Set as its output closes: no session connects to it any more.
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
    fn spawn(started: Started, limit: usize, label: String) -> Arc<Running> {
        let (server, input, output, fallback) = started;
        let (to_server, queue) = Outbox::new(OUTBOX_BYTES);
        let to_server = Arc::new(to_server);
        tokio::spawn({
            let to_server = to_server.clone();
            async move { to_server.write_lines(input, queue).await }
        });
        let running = Arc::new(Running {
            label,
            mux: Mutex::new(Mux::new(to_server.clone())),
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
                let end = running.process.lock().await.end_within(REAPING).await;
                tracing::warn!("{}, shared by every client session, ended ({end})", running.label);
                running.closed(end);
            }
        });
        running
    }

    fn is_closed(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
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

/// Who waits for an answer: a session, by its number, and the id it asked with.
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
    /// `notifications/initialized` has gone to the server.
    initialized: bool,
    listings: HashMap<String, Listing>,
    /// The server's requests, waiting for the session each went to.
    server_requests: HashMap<Id, u64>,
    /// Progress tokens: the pool's, and the session's own.
    tokens: HashMap<Id, Asker>,
    /// Resources subscribed to, and by which sessions.
    subscriptions: HashMap<String, HashSet<u64>>,
    /// The session that last sent the server a request.
    last_asking: Option<u64>,
}

struct Forwarded {
    asker: Asker,
    /// Its progress token, the pool's.
    token: Option<Id>,
    /// Its place in the order requests went to the server.
    number: u64,
    purpose: Purpose,
}

/// What a request sent to the server is, for what its answer does.
enum Purpose {
    /// A session's own: its answer goes back to it.
    Asked,
    /// The handshake every session shares.
    Handshake,
    /// A listing page, by its key.
    Listing(String),
    /// A subscription to a resource, by its URI, which an error undoes.
    Subscribe(String),
    /// The pool's own (an unsubscription for sessions gone): its answer is dropped.
    Own,
}

#[derive(Default)]
enum Handshake {
    #[default]
    Unasked,
    Asked(Vec<Asker>),
    /// The result, as the server wrote it.
    Answered(String),
}

enum Listing {
    /// Under way: who waits, and whether the answer may be kept (no change was announced since).
    Asked { waiters: Vec<Asker>, keep: bool },
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
            handshake: Handshake::Unasked,
            initialized: false,
            listings: HashMap::new(),
            server_requests: HashMap::new(),
            tokens: HashMap::new(),
            subscriptions: HashMap::new(),
            last_asking: None,
        }
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

    fn request(&mut self, connection: u64, id: Id, method: &str, params: Option<&RawValue>, line: &[u8]) {
        let token = progress_token(params);
        let forward = |mux: &mut Mux, asker: Asker, purpose: Purpose| mux.forward(asker, purpose, line, token.clone());
        match method {
            "initialize" => match &mut self.handshake {
                Handshake::Answered(result) => {
                    let answer = jsonrpc::response(&id, &handshake_for(result, params));
                    self.send_session(connection, answer);
                }
                Handshake::Asked(waiters) => waiters.push((connection, id)),
                Handshake::Unasked => {
                    self.handshake = Handshake::Asked(vec![(connection, id.clone())]);
                    forward(self, (connection, id), Purpose::Handshake);
                }
            },
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" if token.is_none() => {
                let key = format!("{method} {}", params.map_or("", |params| params.get()));
                match self.listings.get_mut(&key) {
                    Some(Listing::Kept(result)) => {
                        let answer = jsonrpc::response(&id, result);
                        self.send_session(connection, answer);
                    }
                    Some(Listing::Asked { waiters, .. }) => waiters.push((connection, id)),
                    None => {
                        if self.listings.len() >= MAX_LISTINGS {
                            self.listings.retain(|_, listing| matches!(listing, Listing::Asked { .. }));
                        }
                        let waiters = vec![(connection, id.clone())];
                        self.listings.insert(key.clone(), Listing::Asked { waiters, keep: true });
                        forward(self, (connection, id), Purpose::Listing(key));
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
                match (first, last) {
                    (true, _) => forward(self, (connection, id), Purpose::Subscribe(uri)),
                    (_, true) => forward(self, (connection, id), Purpose::Asked),
                    // Others want it still, or had it already: the server's state is as asked.
                    _ => self.send_session(connection, jsonrpc::response(&id, "{}")),
                }
            }
            _ => {
                self.last_asking = Some(connection);
                forward(self, (connection, id), Purpose::Asked);
            }
        }
    }

    /// Sends a session's request to the server under an id (and progress token) of the pool's.
    fn forward(&mut self, asker: Asker, purpose: Purpose, line: &[u8], token: Option<Id>) {
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
        self.forwarded.insert(pooled, Forwarded { asker, token, number: self.next, purpose });
        self.server.send(text);
    }

    fn notification(&mut self, connection: u64, method: &str, params: Option<&RawValue>, line: &[u8]) {
        match method {
            "notifications/initialized" => {
                // The server hears it once, after the handshake it answered.
                if !self.initialized && matches!(self.handshake, Handshake::Answered(_)) {
                    self.initialized = true;
                    self.server.send(lossless(line));
                }
            }
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
        let Some(pooled) = self.by_asker.remove(asker) else { return };
        let alone = self.forwarded.get(&pooled).is_some_and(|forwarded| matches!(forwarded.purpose, Purpose::Asked));
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
        if let Handshake::Asked(waiters) = &mut self.handshake {
            waiters.retain(|waiter| !leaves(waiter));
        }
        for listing in self.listings.values_mut() {
            if let Listing::Asked { waiters, .. } = listing {
                waiters.retain(|waiter| !leaves(waiter));
            }
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
            .filter(|(_, forwarded)| forwarded.asker.0 == connection && matches!(forwarded.purpose, Purpose::Asked))
            .map(|(pooled, _)| pooled.clone())
            .collect();
        for pooled in gone {
            if let Some(forwarded) = self.forwarded.remove(&pooled) {
                self.by_asker.remove(&forwarded.asker);
                self.drop_token(&forwarded);
            }
            let params = serde_json::json!({"requestId": raw_value(&pooled), "reason": "the client session ended"});
            self.server.send(jsonrpc::notification("notifications/cancelled", Some(&params)));
        }
        self.by_asker.retain(|asker, _| asker.0 != connection);
        self.tokens.retain(|_, asker| asker.0 != connection);
        self.leave_waiting(connection, None);
        let asked: Vec<Id> =
            self.server_requests.iter().filter(|(_, asked)| **asked == connection).map(|(id, _)| id.clone()).collect();
        for id in asked {
            self.server_requests.remove(&id);
            let reason = "the client session it was sent to has ended";
            self.server.send(jsonrpc::error_response(&id, INTERNAL_ERROR, reason));
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
            let asker = (0, pooled.clone());
            let forwarded = Forwarded { asker, token: None, number: self.next, purpose: Purpose::Own };
            self.forwarded.insert(pooled.clone(), forwarded);
            self.server.send(jsonrpc::request(&pooled, "resources/unsubscribe", &serde_json::json!({"uri": uri})));
        }
        if self.last_asking == Some(connection) {
            self.last_asking = None;
        }
    }

    /// The server answered request `id` (the pool's): the session (or sessions) that asked
    /// get it under their own ids.
    fn server_answer(&mut self, id: &Id, result: Option<&RawValue>, error: Option<&RawValue>, line: &[u8]) {
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
            Purpose::Asked => {
                let answer = jsonrpc::with_top_level_id(line, &forwarded.asker.1);
                return self.send_session(forwarded.asker.0, answer);
            }
            Purpose::Own => return,
            Purpose::Subscribe(uri) => {
                if result.is_none()
                    && let Some(subscribers) = self.subscriptions.get_mut(&uri)
                {
                    subscribers.remove(&forwarded.asker.0);
                }
                vec![forwarded.asker]
            }
            Purpose::Handshake => {
                let waiters = match std::mem::take(&mut self.handshake) {
                    Handshake::Asked(waiters) => waiters,
                    _ => Vec::new(),
                };
                if let Some(result) = result {
                    self.handshake = Handshake::Answered(result.get().to_owned());
                }
                waiters
            }
            Purpose::Listing(key) => match self.listings.remove(&key) {
                Some(Listing::Asked { waiters, keep }) => {
                    if keep && let Some(result) = result {
                        self.listings.insert(key, Listing::Kept(result.get().to_owned()));
                    }
                    waiters
                }
                _ => Vec::new(),
            },
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

    /// The session a request or a message of the server's concerns: the one whose request went
    /// to the server last among those under way, else the last that asked anything.
    fn concerned(&self) -> Option<u64> {
        self.forwarded
            .values()
            .filter(|forwarded| matches!(forwarded.purpose, Purpose::Asked))
            .max_by_key(|forwarded| forwarded.number)
            .map(|forwarded| forwarded.asker.0)
            .or(self.last_asking)
            .filter(|connection| self.connections.contains_key(connection))
    }

    fn server_request(&mut self, id: Id, method: &str, line: &[u8]) {
        if method == "ping" {
            // Answered for every session: the pool is alive.
            return self.server.send(jsonrpc::response(&id, "{}"));
        }
        let refusal = match self.concerned() {
            _ if self.server_requests.len() >= MAX_SERVER_REQUESTS => {
                format!("{MAX_SERVER_REQUESTS} requests are already waiting for client sessions")
            }
            Some(connection) => {
                self.server_requests.insert(id, connection);
                return self.send_session(connection, lossless(line));
            }
            None => "no client session is connected to answer it".to_owned(),
        };
        self.server.send(jsonrpc::error_response(&id, INTERNAL_ERROR, &refusal));
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
                self.listings.retain(|key, listing| match listing {
                    Listing::Kept(_) => !key.starts_with(kind),
                    Listing::Asked { .. } => true,
                });
                for (key, listing) in &mut self.listings {
                    if let Listing::Asked { keep, .. } = listing
                        && key.starts_with(kind)
                    {
                        *keep = false;
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
            "notifications/message" => match self.concerned() {
                Some(connection) => self.send_session(connection, lossless(line)),
                None => self.send_every_session(&lossless(line)),
            },
            _ => self.send_every_session(&lossless(line)),
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

/// An id-like value (a string or an integer) at `key` of `params`.
fn id_at(params: &RawValue, key: &str) -> Option<Id> {
    let params: HashMap<String, &RawValue> = serde_json::from_str(params.get()).ok()?;
    Id::of(params.get(key)?)
}

/// The progress token a request's params carry in `_meta`.
fn progress_token(params: Option<&RawValue>) -> Option<Id> {
    let params: HashMap<String, &RawValue> = serde_json::from_str(params?.get()).ok()?;
    id_at(params.get("_meta")?, "progressToken")
}
