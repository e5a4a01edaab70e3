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

mod mediation;

use mediation::{Listing, Relisting};

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
