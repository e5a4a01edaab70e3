//! Where each message goes. Everything about tools goes through the [`Session`]; everything
//! else passes through as its sender wrote it.
//!
//! Ids: a request the client sends keeps its id upstream (so cancellations and progress need no
//! mapping); the proxy's own requests use ids of their own (`"tool-mediator-N"`). Requests the
//! server sends the client keep theirs too. Each direction has its own table of requests waiting
//! for an answer, so id `0` from one side never answers id `0` from the other.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, oneshot};

use super::ProxyOptions;
use super::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, Id, Message};
use super::lines::{Line, Outbox, Ready};
use super::pending::{MAX_WAITING, Pending, Refusal};
use super::revision::{PROTOCOL_VERSION_KEY, Protocol, SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY};
use super::warnings::Warnings;
use crate::chain::Mediator;
use crate::lock;
use crate::session::{ListChanged, Route, Session, SessionPolicy};
use crate::tool::{SourceType, Tool, ToolContext};

/// A server that keeps handing out next cursors is listed this many pages at most.
const MAX_PAGES: usize = 1_000;

/// `tools/list` and `tools/call` requests served at once; the client is not read meanwhile.
const TOOL_TASKS: usize = 64;

/// Why a request the proxy made upstream got no result.
enum Upstream {
    /// The server answered with this JSON-RPC error object.
    Refused(Box<RawValue>),
    /// The server is gone, or its answer made no sense.
    Failed(String),
}

/// What a client request waiting upstream needs when its answer comes.
enum Purpose {
    Initialize,
    Discover,
    /// A `subscriptions/listen` stream (2026-07-28) that asked for tool list changes.
    Listen,
    Other,
}

enum Waiter {
    Client(Purpose),
    Proxy(oneshot::Sender<Result<Reply, Box<RawValue>>>),
}

/// A result the server sent the proxy, in the line it came in.
struct Reply {
    line: String,
    result: std::ops::Range<usize>,
}

impl Reply {
    /// Where `result` lies in `line`, which it was read from.
    fn place(line: &[u8], result: &RawValue) -> std::ops::Range<usize> {
        let start = (result.get().as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
        start..start + result.get().len()
    }

    fn get(&self) -> &str {
        self.line.get(self.result.clone()).unwrap_or_default()
    }
}

/// What the proxy keeps of the server's last listing: a fingerprint of its tools as written,
/// to take in only a list that changed, and the rest of its first page's result (cache hints,
/// `resultType`, `_meta`), which the client's answer keeps. The tools themselves live once,
/// enhanced, in the session.
#[derive(Clone)]
struct Listing {
    fingerprint: u64,
    rest: Map<String, Value>,
}

/// Relisting after the server says its tools changed: at most one listing in flight and one
/// more asked for, however many notifications arrive meanwhile.
#[derive(Default)]
struct Relisting {
    running: bool,
    again: bool,
}

/// The client's next line can be taken on when both outboxes have room and a tool request
/// could be served.
impl Ready for Router {
    async fn ready(&self) {
        self.to_server.has_room().await;
        self.to_client.has_room().await;
        if self.tool_tasks.available_permits() == 0 {
            drop(self.tool_tasks.acquire().await);
        }
    }
}

pub(super) struct Router {
    mediator: Arc<Mediator>,
    policy: SessionPolicy,
    source: Option<String>,
    fallback_source: String,
    max_message_bytes: usize,
    request_timeout: Duration,
    pub(super) to_client: Outbox,
    pub(super) to_server: Outbox,
    warnings: Warnings,
    tool_tasks: Arc<tokio::sync::Semaphore>,
    relisting: Mutex<Relisting>,
    pending: Mutex<Pending<Waiter>>,
    server_name: Mutex<Option<String>>,
    session: OnceLock<Arc<Session>>,
    listing: Mutex<Option<Listing>>,
    /// Listings started, and (behind the gate) the number of the last one that finished.
    listings_started: std::sync::atomic::AtomicU64,
    listing_gate: tokio::sync::Mutex<u64>,
    protocol: Mutex<Protocol>,
}

impl Router {
    pub(super) fn new(options: ProxyOptions, fallback_source: String, to_client: Outbox, to_server: Outbox) -> Router {
        Router {
            mediator: options.mediator,
            policy: options.policy,
            source: options.source,
            fallback_source,
            max_message_bytes: options.max_message_bytes,
            request_timeout: options.request_timeout,
            to_client,
            to_server,
            warnings: Warnings::default(),
            tool_tasks: Arc::new(tokio::sync::Semaphore::new(TOOL_TASKS)),
            relisting: Mutex::default(),
            pending: Mutex::default(),
            server_name: Mutex::default(),
            session: OnceLock::new(),
            listing: Mutex::default(),
            listings_started: std::sync::atomic::AtomicU64::new(0),
            listing_gate: tokio::sync::Mutex::new(0),
            protocol: Mutex::default(),
        }
    }

    fn to_client(&self, line: String) {
        self.to_client.send(line);
    }

    fn to_server(&self, line: String) {
        self.to_server.send(line);
    }

    pub(super) fn close_server_input(&self) {
        self.to_server.close();
    }

    /// Ends the client's output once every queued line is written.
    pub(super) fn close_client_output(&self) {
        self.to_client.close();
    }

    /// Runs a tool request's work in a task of its own, within [`TOOL_TASKS`].
    fn spawn_tool_task(self: &Arc<Self>, id: Id, work: impl Future<Output = ()> + Send + 'static) {
        match self.tool_tasks.clone().try_acquire_owned() {
            Ok(permit) => {
                lock(&self.pending).task_started(&id);
                let router = self.clone();
                tokio::spawn(async move {
                    work.await;
                    lock(&router.pending).task_ended(&id);
                    drop(permit);
                });
            }
            Err(_) => {
                let reason = format!("{TOOL_TASKS} tool requests are already being served");
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
        }
    }

    /// Whether the revision in use has JSON-RPC batches (only 2025-03-26 does).
    fn batches_allowed(&self) -> bool {
        lock(&self.protocol).batches_allowed()
    }

    /// Logs the warnings held back since the last of their kind.
    pub(super) fn flush_warnings(&self) {
        self.warnings.flush();
    }

    /// Why a line was skipped for its length, for the log and for its sender.
    fn too_long(&self, length: usize) -> String {
        format!(
            "a message of {length} bytes is longer than the proxy's limit of {} bytes (--max-message-size)",
            self.max_message_bytes
        )
    }

    /// One line from the client.
    pub(super) fn from_client(self: &Arc<Self>, line: Line<'_>) {
        let line = match line {
            Line::Whole(line) => line,
            Line::TooLong { head, length } => {
                let reason = self.too_long(length);
                self.warnings.warn("client-too-long", || format!("skipped a line from the client: {reason}"));
                let salvaged = jsonrpc::salvage(&String::from_utf8_lossy(head));
                let answer = salvaged.is_answer(|id| lock(&self.pending).waits_downstream(id));
                if let Some(id) = salvaged.id {
                    self.unusable_from_client(id, answer, INVALID_REQUEST, &reason);
                }
                return;
            }
        };
        let message = match Message::parse(line) {
            Ok(message) => message,
            Err(malformed) => {
                self.warnings.warn("client-malformed", || {
                    format!("malformed line from the client: {} ({} bytes)", malformed.reason, line.len())
                });
                if let Some(id) = malformed.id {
                    self.unusable_from_client(id, false, malformed.code, &malformed.reason);
                }
                if let Some(id) = malformed.answers {
                    self.unusable_from_client(id, true, malformed.code, &malformed.reason);
                }
                return;
            }
        };
        match message {
            Message::Batch(items) => {
                if self.batches_allowed() {
                    // Each message on its own, answered on its own as its answer comes.
                    return items
                        .iter()
                        .for_each(|item| self.from_client(Line::Whole(&mut item.get().as_bytes().to_vec())));
                }
                self.warnings.warn("client-batch", || {
                    format!("the client sent a JSON-RPC batch of {} messages; refused", items.len())
                });
                if let Some(answer) = jsonrpc::batch_refusal(&items) {
                    self.to_client(answer);
                }
            }
            Message::Request { id, method, params } => {
                self.note_protocol(params);
                match &*method {
                    "tools/list" => {
                        let cursor = params.and_then(|raw| cursor_of(raw.get()));
                        let meta = params.and_then(|raw| meta_of(raw.get()));
                        self.spawn_tool_task(id.clone(), self.clone().list_tools(id, cursor, meta));
                    }
                    "tools/call" => {
                        let params = params.map(|raw| raw.get().to_owned());
                        self.spawn_tool_task(id.clone(), self.clone().call_tool(id, params, line.to_vec()));
                    }
                    "initialize" => self.forward_request(id, Purpose::Initialize, line),
                    "server/discover" => self.forward_request(id, Purpose::Discover, line),
                    "subscriptions/listen" => {
                        let wants_tools = params.is_some_and(|raw| {
                            serde_json::from_str::<Value>(raw.get()).is_ok_and(|params| {
                                params.pointer("/notifications/toolsListChanged") == Some(&Value::Bool(true))
                            })
                        });
                        let purpose = if wants_tools { Purpose::Listen } else { Purpose::Other };
                        if self.forward(id.clone(), purpose, lossless(line)) && wants_tools {
                            lock(&self.protocol).listen(id);
                        }
                    }
                    _ => self.forward_request(id, Purpose::Other, line),
                }
            }
            Message::Notification { method, params } => {
                // A cancelled request may never be answered: it waits no more.
                if method == "notifications/cancelled"
                    && let Some(id) = jsonrpc::cancelled_request(params)
                {
                    lock(&self.pending).client_cancelled(&id, |waiter| matches!(waiter, Waiter::Client(_)));
                }
                self.to_server(lossless(line));
            }
            Message::Response { id, .. } => {
                if !lock(&self.pending).server_request_ended(&id) {
                    self.warnings.warn("client-unasked", || {
                        format!("the client answered {id}, which the server did not ask; passed on anyway")
                    });
                }
                self.to_server(lossless(line));
            }
        }
    }

    /// One line from the server.
    pub(super) fn from_server(self: &Arc<Self>, line: Line<'_>) {
        let line = match line {
            Line::Whole(line) => line,
            Line::TooLong { head, length } => {
                let reason = self.too_long(length);
                self.warnings.warn("server-too-long", || format!("skipped a line from the server: {reason}"));
                let salvaged = jsonrpc::salvage(&String::from_utf8_lossy(head));
                let answer = salvaged.is_answer(|id| lock(&self.pending).waits_upstream(id));
                if let Some(id) = salvaged.id {
                    self.unusable_from_server(id, answer, INVALID_REQUEST, &reason);
                }
                return;
            }
        };
        let message = match Message::parse(line) {
            Ok(message) => message,
            Err(malformed) => {
                self.warnings.warn("server-malformed", || {
                    format!(
                        "malformed line from the server: {} ({} bytes): {}",
                        malformed.reason,
                        line.len(),
                        String::from_utf8_lossy(&line[..line.len().min(200)])
                    )
                });
                if let Some(id) = malformed.id {
                    self.unusable_from_server(id, false, malformed.code, &malformed.reason);
                }
                if let Some(id) = malformed.answers {
                    self.unusable_from_server(id, true, malformed.code, &malformed.reason);
                }
                return;
            }
        };
        match message {
            Message::Batch(items) => {
                if self.batches_allowed() {
                    return items
                        .iter()
                        .for_each(|item| self.from_server(Line::Whole(&mut item.get().as_bytes().to_vec())));
                }
                self.warnings.warn("server-batch", || {
                    format!("the server sent a JSON-RPC batch of {} messages; refused", items.len())
                });
                if let Some(answer) = jsonrpc::batch_refusal(&items) {
                    self.to_server(answer);
                }
            }
            Message::Response { id, result, error } => {
                let waiter = lock(&self.pending).answered(&id);
                match waiter {
                    Some(Waiter::Proxy(reply)) => {
                        let answer = match (result, error) {
                            (_, Some(error)) => Err(error.to_owned()),
                            (Some(result), None) => Ok(Reply::place(line, result)),
                            (None, None) => unreachable!("a response has a result or an error"),
                        };
                        // The line is handed over rather than copied. It is UTF-8: it parsed.
                        let answer = answer.map(|result| {
                            let line = String::from_utf8(std::mem::take(line))
                                .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
                            Reply { line, result }
                        });
                        let _ = reply.send(answer);
                    }
                    Some(Waiter::Client(purpose)) => match (purpose, result) {
                        (Purpose::Initialize, Some(result)) => self.answer_handshake(&id, result, "/serverInfo"),
                        (Purpose::Discover, Some(result)) => self.answer_handshake(
                            &id,
                            result,
                            &format!("/_meta/{}", crate::schema::escape(SERVER_INFO_KEY)),
                        ),
                        (Purpose::Listen, None) => {
                            // The server cannot listen: the proxy keeps the stream open itself,
                            // for the tool list changes it makes.
                            let stream: Value = serde_json::from_str(id.as_raw()).unwrap_or(Value::Null);
                            let params = json!({
                                "notifications": {"toolsListChanged": true},
                                "_meta": {SUBSCRIPTION_ID_KEY: stream},
                            });
                            self.to_client(jsonrpc::notification(
                                "notifications/subscriptions/acknowledged",
                                Some(&params),
                            ));
                        }
                        (Purpose::Listen, Some(_)) => {
                            lock(&self.protocol).stop_listening(&id);
                            self.to_client(lossless(line));
                        }
                        _ => self.to_client(lossless(line)),
                    },
                    None => {
                        self.warnings.warn("server-unasked", || {
                            format!("the server answered {id}, which nobody asked (or asked too long ago); dropped")
                        });
                    }
                }
            }
            Message::Request { id, .. } => {
                if !lock(&self.pending).server_request(&id) {
                    let reason = format!("{MAX_WAITING} requests are already waiting for the client");
                    return self.to_server(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
                }
                self.to_client(lossless(line));
            }
            Message::Notification { method, params } if method == "notifications/cancelled" => {
                if let Some(id) = jsonrpc::cancelled_request(params) {
                    lock(&self.pending).server_request_ended(&id);
                }
                self.to_client(lossless(line));
            }
            Message::Notification { method, params } => match &*method {
                "notifications/tools/list_changed" => self.relist_soon(),
                "notifications/subscriptions/acknowledged" => self.acknowledge(params, line),
                _ => self.to_client(lossless(line)),
            },
        }
    }

    /// A line from the client that could not be used but carries `id`: a broken request is
    /// answered; a broken answer to one of the server's requests is reported to the server.
    fn unusable_from_client(&self, id: Id, answer: bool, code: i64, reason: &str) {
        if !answer {
            return self.to_client(jsonrpc::error_response(&id, code, reason));
        }
        if lock(&self.pending).server_request_ended(&id) {
            let reason = format!("the client's answer was unusable: {reason}");
            self.to_server(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
        }
    }

    /// A line from the server that could not be used but carries `id`: a broken request is
    /// answered; whoever waits for a broken answer hears of it.
    fn unusable_from_server(&self, id: Id, answer: bool, code: i64, reason: &str) {
        if !answer {
            return self.to_server(jsonrpc::error_response(&id, code, reason));
        }
        let waiter = lock(&self.pending).answered(&id);
        match waiter {
            Some(Waiter::Client(_)) => {
                let reason = format!("the MCP server's answer was unusable: {reason}");
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
            Some(Waiter::Proxy(reply)) => drop(reply),
            None => {}
        }
    }

    /// Sends a client request upstream as it came, waiting for its answer under its own id.
    fn forward_request(&self, id: Id, purpose: Purpose, line: &[u8]) {
        self.forward(id, purpose, lossless(line));
    }

    /// Whether the request went upstream; if not, the client has its error answer.
    fn forward(&self, id: Id, purpose: Purpose, line: String) -> bool {
        let refusal = lock(&self.pending).client_request(&id, Waiter::Client(purpose));
        match refusal {
            Err(Refusal::Cancelled) => false,
            Err(Refusal::Error { code, reason }) => {
                self.to_client(jsonrpc::error_response(&id, code, &reason));
                false
            }
            Ok(()) => {
                self.to_server(line);
                true
            }
        }
    }

    /// A request of the proxy's own, and its result.
    async fn ask(&self, method: &str, params: Value) -> Result<Reply, Upstream> {
        let (reply, answer) = oneshot::channel();
        let id = lock(&self.pending).own_request(Waiter::Proxy(reply)).map_err(Upstream::Failed)?;
        self.to_server(jsonrpc::request(&id, method, &params));
        match tokio::time::timeout(self.request_timeout, answer).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(Upstream::Refused(error)),
            Ok(Err(_)) => Err(Upstream::Failed(lock(&self.pending).gone().unwrap_or("the server is gone").to_owned())),
            Err(_) => {
                lock(&self.pending).answered(&id);
                Err(Upstream::Failed(format!(
                    "the MCP server did not answer {method} within {}s",
                    self.request_timeout.as_secs_f64()
                )))
            }
        }
    }

    fn fail(&self, id: &Id, failure: Upstream) {
        self.to_client(match failure {
            Upstream::Refused(error) => jsonrpc::raw_error_response(id, error.get()),
            Upstream::Failed(reason) => jsonrpc::error_response(id, INTERNAL_ERROR, &reason),
        });
    }

    /// The server is gone: every request still waiting gets an error answer, now and later.
    pub(super) fn server_gone(&self, reason: String) {
        let waiting = lock(&self.pending).server_gone(reason.clone());
        for (id, waiter) in waiting {
            // The proxy's own requests fail when their sender drops, and answer the client then.
            if let Waiter::Client(_) = waiter {
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
        }
    }

    /// The client's side of the protocol revision, and its `_meta` envelope.
    fn note_protocol(&self, params: Option<&RawValue>) {
        if let Some(meta) = params.and_then(|raw| meta_of(raw.get())) {
            lock(&self.protocol).note_meta(meta);
        }
    }

    /// The handshake's answer (`initialize` or `server/discover`): the server's name chooses
    /// the override file, and the client learns that the tool list can change.
    fn answer_handshake(self: &Arc<Self>, id: &Id, result: &RawValue, server_info: &str) {
        // One that cannot be read exactly (a key written twice) passes as it came.
        let Ok(mut result) = crate::json::from_str(result.get()) else {
            self.to_client(jsonrpc::response(id, result.get()));
            return;
        };
        if let Some(revision) = result.get("protocolVersion").and_then(Value::as_str) {
            lock(&self.protocol).agreed(revision);
        }
        if let Some(name) = result.pointer(&format!("{server_info}/name")).and_then(Value::as_str) {
            *lock(&self.server_name) = Some(name.to_owned());
        }
        if let Some(capabilities) = result.get_mut("capabilities").and_then(Value::as_object_mut) {
            let tools = capabilities.entry("tools").or_insert_with(|| json!({}));
            if let Some(tools) = tools.as_object_mut() {
                tools.insert("listChanged".to_owned(), Value::Bool(true));
            }
        }
        self.to_client(jsonrpc::response(id, &result.to_string()));
    }

    /// A stream's acknowledgment: the proxy honours tool list changes itself.
    fn acknowledge(&self, params: Option<&RawValue>, line: &[u8]) {
        let parsed = params.and_then(|raw| crate::json::from_str(raw.get()).ok());
        let stream = parsed
            .as_ref()
            .and_then(|params| params.pointer(&format!("/_meta/{}", crate::schema::escape(SUBSCRIPTION_ID_KEY))));
        let listens = stream.is_some_and(|stream| lock(&self.protocol).is_listening(stream));
        match parsed {
            Some(mut params) if listens => {
                if let Some(honoured) = params.get_mut("notifications").and_then(Value::as_object_mut) {
                    honoured.insert("toolsListChanged".to_owned(), Value::Bool(true));
                }
                self.to_client(jsonrpc::notification("notifications/subscriptions/acknowledged", Some(&params)));
            }
            _ => self.to_client(lossless(line)),
        }
    }

    /// The session, made on first use with the source known by then.
    fn session(self: &Arc<Self>) -> Arc<Session> {
        self.session
            .get_or_init(|| {
                let source = self
                    .source
                    .clone()
                    .or_else(|| lock(&self.server_name).clone())
                    .unwrap_or_else(|| self.fallback_source.clone());
                tracing::info!("mediating the tools of `{source}`");
                let context = ToolContext::new(source, SourceType::Api);
                let session = Arc::new(Session::new(self.mediator.clone(), context, self.policy.clone()));
                tokio::spawn(self.clone().announce(session.subscribe()));
                session
            })
            .clone()
    }

    /// Tells the client each time what it sees changes.
    async fn announce(self: Arc<Self>, mut events: broadcast::Receiver<ListChanged>) {
        loop {
            match events.recv().await {
                Ok(ListChanged) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
            let lines = lock(&self.protocol).list_changed();
            for line in lines {
                self.to_client(line);
            }
        }
    }

    /// Lists every page of the server's tools, as the server wrote them.
    async fn fetch(&self, meta: Option<Value>) -> Result<Fetched, Upstream> {
        let meta = meta.or_else(|| lock(&self.protocol).envelope());
        let mut pages = Vec::new();
        let mut listed_bytes = 0usize;
        let mut rest = None;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = Map::new();
            if let Some(cursor) = &cursor {
                params.insert("cursor".to_owned(), Value::from(cursor.as_str()));
            }
            if let Some(meta) = &meta {
                params.insert("_meta".to_owned(), meta.clone());
            }
            let raw = self.ask("tools/list", Value::Object(params)).await?;
            // Every page is held until the listing is whole: together they are held to the
            // limit of one message.
            listed_bytes += raw.get().len();
            if listed_bytes > self.max_message_bytes {
                return Err(Upstream::Failed(format!(
                    "the server's tools/list passed {} bytes over its pages, the proxy's limit for one \
                     message (--max-message-size)",
                    self.max_message_bytes
                )));
            }
            let unusable = |error: serde_json::Error| {
                Upstream::Failed(format!("the server's tools/list result is not a JSON object: {error}"))
            };
            let mut page = Map::new();
            let mut has_tools = false;
            for (key, value) in crate::json::object_members(raw.get()).map_err(unusable)? {
                if key == "tools" {
                    has_tools = value.get().starts_with('[');
                } else {
                    page.insert(key, crate::json::from_str(value.get()).map_err(unusable)?);
                }
            }
            if !has_tools {
                return Err(Upstream::Failed("the server's tools/list result has no `tools` array".to_owned()));
            }
            pages.push(raw);
            let next = page.shift_remove("nextCursor");
            rest.get_or_insert(page);
            match next {
                Some(Value::String(next)) if !next.is_empty() && cursor.as_deref() != Some(next.as_str()) => {
                    cursor = Some(next)
                }
                _ => return Ok(Fetched { pages, rest: rest.unwrap_or_default() }),
            }
        }
        tracing::warn!("the server handed out {MAX_PAGES} pages of tools; listed those");
        Ok(Fetched { pages, rest: rest.unwrap_or_default() })
    }

    /// Lists upstream and hands the list to the session if it changed; returns what the
    /// client's answer keeps of the server's result.
    ///
    /// One listing at a time: a listing asked for while another runs waits for it, and is served
    /// by the next one that starts after it was asked for, so an older list never overwrites a
    /// newer one and concurrent askers share one listing (and one pass through the chain).
    async fn list_upstream(self: &Arc<Self>, meta: Option<Value>) -> Result<Map<String, Value>, Upstream> {
        let asked = self.listings_started.load(std::sync::atomic::Ordering::SeqCst);
        let mut finished = self.listing_gate.lock().await;
        if *finished > asked
            && let Some(listing) = lock(&self.listing).as_ref()
        {
            return Ok(listing.rest.clone());
        }
        let number = self.listings_started.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let fetched = self.fetch(meta).await?;
        let listing = Listing { fingerprint: fetched.fingerprint(), rest: fetched.rest.clone() };
        let known = lock(&self.listing).as_ref().map(|known| known.fingerprint);
        if known != Some(listing.fingerprint) {
            // Tools are read only from a list that changed.
            let tools = fetched.tools(&self.warnings);
            drop(fetched);
            self.session().take_in(tools).await;
        }
        let rest = listing.rest.clone();
        *lock(&self.listing) = Some(listing);
        *finished = number;
        Ok(rest)
    }

    async fn list_tools(self: Arc<Self>, id: Id, cursor: Option<String>, meta: Option<Value>) {
        let session = self.session();
        let stored =
            if cursor.is_some() { lock(&self.listing).as_ref().map(|listing| listing.rest.clone()) } else { None };
        let rest = match stored {
            Some(rest) => rest,
            None => match self.list_upstream(meta).await {
                Ok(rest) => rest,
                Err(failure) => return self.fail(&id, failure),
            },
        };
        match session.page(cursor.as_deref()) {
            Ok(page) => {
                let result = ListResult { tools: page.tools(), next_cursor: page.next_cursor.as_deref(), rest: &rest };
                match serde_json::to_string(&result) {
                    Ok(result) => self.to_client(jsonrpc::response(&id, &result)),
                    Err(error) => self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &error.to_string())),
                }
            }
            Err(invalid) => self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &invalid.to_string())),
        }
    }

    /// The server said its tools changed: list again, unless a listing is already under way,
    /// in which case one more follows it. A flood of notifications costs two listings.
    fn relist_soon(self: &Arc<Self>) {
        {
            let mut relisting = lock(&self.relisting);
            if relisting.running {
                relisting.again = true;
                return;
            }
            relisting.running = true;
        }
        /// Lets the next notification start a relist if this one panicked (in a transformer).
        struct Relister(Arc<Router>);
        impl Drop for Relister {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    lock(&self.0.relisting).running = false;
                }
            }
        }
        let router = Relister(self.clone());
        tokio::spawn(async move {
            let router = &router.0;
            loop {
                router.relist().await;
                let mut relisting = lock(&router.relisting);
                if !std::mem::take(&mut relisting.again) {
                    relisting.running = false;
                    return;
                }
            }
        });
    }

    /// Lists again; the session tells the client if what it sees changed.
    async fn relist(self: &Arc<Self>) {
        match self.list_upstream(None).await {
            Ok(_) => {}
            Err(Upstream::Refused(error)) => {
                self.warnings.warn("relist", || format!("the server refused to list its tools again: {}", error.get()));
            }
            Err(Upstream::Failed(reason)) => {
                self.warnings.warn("relist", || format!("cannot list the server's tools again: {reason}"));
            }
        }
    }

    async fn call_tool(self: Arc<Self>, id: Id, params: Option<String>, line: Vec<u8>) {
        let mut params = match params.as_deref().map(crate::json::from_str) {
            Some(Ok(Value::Object(params))) => params,
            Some(Err(error)) => {
                let reason = format!("tools/call params: {error}");
                return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &reason));
            }
            _ => return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, "tools/call needs params")),
        };
        let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_owned) else {
            return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, "tools/call needs a tool name"));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return self.to_client(jsonrpc::error_response(
                    &id,
                    INVALID_PARAMS,
                    "tools/call arguments must be an object",
                ));
            }
        };
        let session = self.session();
        if lock(&self.listing).is_none() {
            // The client calls before it lists (it knows the tools from elsewhere): the
            // session needs the list to know the names.
            let meta = params.get("_meta").cloned().filter(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
            if let Err(failure) = self.list_upstream(meta).await {
                return self.fail(&id, failure);
            }
        }
        let stateless = params.get("_meta").is_some_and(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
        match session.route_call(&name, arguments.clone()).await {
            Route::Local(mut result) => {
                if stateless && let Some(result) = result.as_object_mut() {
                    result.insert("resultType".to_owned(), Value::from("complete"));
                }
                self.to_client(jsonrpc::response(&id, &result.to_string()));
            }
            Route::Upstream { name: original, arguments: mapped } => {
                if original == name && mapped == arguments {
                    return self.forward_request(id, Purpose::Other, &line);
                }
                params.insert("name".to_owned(), Value::from(original));
                if !mapped.is_empty() || params.contains_key("arguments") {
                    params.insert("arguments".to_owned(), Value::Object(mapped));
                }
                self.forward(id.clone(), Purpose::Other, jsonrpc::request(&id, "tools/call", &Value::Object(params)));
            }
            // What the specification says a server answers for a tool it does not have.
            Route::NotFound => {
                self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &format!("Unknown tool: {name}")))
            }
        }
    }
}

/// Every page of a `tools/list`, as the server wrote them, and the rest of the first page.
struct Fetched {
    pages: Vec<Reply>,
    rest: Map<String, Value>,
}

impl Fetched {
    fn tools_of(page: &Reply) -> Vec<&RawValue> {
        #[derive(serde::Deserialize)]
        struct Page<'a> {
            #[serde(borrow)]
            tools: Vec<&'a RawValue>,
        }
        serde_json::from_str::<Page<'_>>(page.get()).map(|page| page.tools).unwrap_or_default()
    }

    /// The tools as written, hashed: equal for a list that did not change.
    fn fingerprint(&self) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        for tool in self.pages.iter().flat_map(|page| Fetched::tools_of(page)) {
            std::hash::Hash::hash(tool.get(), &mut hasher);
        }
        std::hash::Hasher::finish(&hasher)
    }

    /// The tools, each read on its own: one that does not parse (a duplicate key, a missing
    /// name) is left out with a warning rather than costing the whole list.
    fn tools(&self, warnings: &Warnings) -> Vec<Tool> {
        let mut tools = Vec::new();
        for (number, page) in self.pages.iter().enumerate() {
            let listed = Fetched::tools_of(page);
            tools.reserve_exact(listed.len());
            for (index, tool) in listed.into_iter().enumerate() {
                match serde_json::from_str::<Tool>(tool.get()) {
                    Ok(tool) => tools.push(tool),
                    Err(error) => {
                        #[derive(serde::Deserialize)]
                        struct Named {
                            name: String,
                        }
                        let name = serde_json::from_str::<Named>(tool.get()).map(|tool| tool.name).unwrap_or_default();
                        warnings.warn("bad-tool", || {
                            format!(
                                "the server listed a tool that is not one, left out: page {}, /tools/{index} \
                                 (`{name}`): {error}",
                                number + 1
                            )
                        });
                    }
                }
            }
        }
        tools
    }
}

#[derive(Serialize)]
struct ListResult<'a> {
    tools: &'a [Tool],
    #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
    #[serde(flatten)]
    rest: &'a Map<String, Value>,
}

/// A line that parsed as JSON-RPC, as text; parsing checked it is UTF-8.
fn lossless(line: &[u8]) -> String {
    String::from_utf8_lossy(line).into_owned()
}

fn cursor_of(params: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        cursor: Option<String>,
    }
    serde_json::from_str::<Params>(params).ok()?.cursor
}

fn meta_of(params: &str) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Option<Value>,
    }
    serde_json::from_str::<Params>(params).ok()?.meta
}
