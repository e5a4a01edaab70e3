//! Where each message goes, between one client and one or more MCP servers (a [`Link`] each).
//! Everything about tools goes through the [`Session`], which lists every server's tools as one
//! set and says which server a call goes to. With one server, everything else passes through as
//! its sender wrote it; with several, what names a server (a resource's URI, a prompt's name)
//! goes to that server, what concerns them all is sent to each, and the rest is refused (see
//! `aggregate`).
//!
//! Ids: a request the client sends keeps its id upstream (so cancellations and progress need no
//! mapping); the proxy's own requests use ids of their own (`"tool-mediator-N"`). Requests a
//! server sends the client keep theirs when there is one server, and are tagged with the
//! server's number when there are several ([`Id::tagged`]). Each direction of each server has
//! its own table of requests waiting for an answer, so id `0` from one side never answers id `0`
//! from the other.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, oneshot};

use crate::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, Id, Message};
use crate::lines::{Line, Outbox, Ready};
use crate::options::ProxyOptions;
use crate::pending::{MAX_WAITING, Refusal, Tasks};
use crate::revision::{PROTOCOL_VERSION_KEY, Protocol, SUBSCRIPTION_ID_KEY};
use crate::warnings::Warnings;
use tool_mediator::session::{ListChanged, Route, Session};
use tool_mediator_core::sync::lock;
use tool_mediator_core::{SourceType, Tool, ToolContext};

mod aggregate;
mod link;
mod mediation;

use link::Joining;
pub use link::LinkSettings;
pub(crate) use link::{Link, label_of};
pub(super) use mediation::LEFT_OUT;

/// A server that keeps handing out next cursors is listed this many pages at most.
const MAX_PAGES: usize = 1_000;

/// How long the client's handshake, a list or a call waits for a server being given the
/// handshake, from when it was given it: one that has not answered by then (a server that hangs
/// at `initialize`, or is slow to start) joins late, and the client hears its lists changed.
/// Long enough for a server started through `npx` or `uvx` to answer (a client that does not
/// listen for list changes would never see one that joins late), well within the time clients
/// give a handshake.
const JOIN_WINDOW: Duration = Duration::from_secs(10);

/// Once one server has answered the client's handshake, how much longer the others have
/// before the client is answered without them: a client should not wait the whole window for
/// a server that hangs. A server answering later still joins a listing asked within its window.
const JOIN_GRACE: Duration = Duration::from_secs(2);

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
pub(super) enum Purpose {
    /// A `subscriptions/listen` stream (2026-07-28) that asked for tool list changes.
    Listen,
    Other,
}

pub(super) enum Waiter {
    Client(Purpose),
    Proxy(oneshot::Sender<Result<Reply, Box<RawValue>>>),
}

/// A result the server sent the proxy, in the line it came in.
pub(super) struct Reply {
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

/// The client's next line can be taken on when every outbox has room and a tool request
/// could be served.
impl Ready for Router {
    async fn ready(&self) {
        for outbox in self.links.iter().filter_map(|link| link.outbox()) {
            outbox.has_room().await;
        }
        self.to_client.has_room().await;
        if self.tool_tasks.available_permits() == 0 {
            drop(self.tool_tasks.acquire().await);
        }
    }
}

pub(super) struct Router {
    /// The override source of a router with one server, as the proxy's `--source` gives it.
    source: Option<String>,
    max_message_bytes: usize,
    request_timeout: Duration,
    /// Whether a server that stops is started again: then its tools leave the list meanwhile.
    restarts: bool,
    /// Prefix every prompt with its server's name, as the session does tools.
    prefix: bool,
    lock: Option<Arc<tool_mediator::pin::Lock>>,
    hide_changed: bool,
    pub(super) to_client: Outbox,
    pub(super) links: Vec<Arc<Link>>,
    warnings: Warnings,
    tool_tasks: Arc<tokio::sync::Semaphore>,
    tasks: Mutex<Tasks>,
    session: Arc<Session>,
    protocol: Mutex<Protocol>,
    /// The client's handshake (`initialize` or `server/discover` and its params), replayed to a
    /// server that starts again.
    handshake: Mutex<Option<(String, Value)>>,
    catalog: Mutex<aggregate::Catalog>,
}

impl Router {
    pub(super) fn new(options: ProxyOptions, servers: Vec<LinkSettings>, to_client: Outbox) -> Arc<Router> {
        let links: Vec<Arc<Link>> =
            servers.into_iter().enumerate().map(|(index, settings)| Arc::new(Link::new(index, settings))).collect();
        let names = links.iter().map(|link| link.name.clone()).collect();
        let context = ToolContext::new(options.source.clone().unwrap_or_default(), SourceType::Api);
        let session = Arc::new(Session::of_sources(options.mediator, context, names, options.policy.clone()));
        let router = Arc::new(Router {
            source: options.source,
            max_message_bytes: options.max_message_bytes,
            request_timeout: options.request_timeout,
            restarts: options.restart.is_some(),
            prefix: options.policy.prefix,
            lock: options.lock.clone(),
            hide_changed: options.hide_changed,
            to_client,
            links,
            warnings: Warnings::default(),
            tool_tasks: Arc::new(tokio::sync::Semaphore::new(TOOL_TASKS)),
            tasks: Mutex::default(),
            protocol: Mutex::default(),
            handshake: Mutex::default(),
            catalog: Mutex::default(),
            session: session.clone(),
        });
        tokio::spawn(router.clone().announce(session.subscribe()));
        router
    }

    fn to_client(&self, line: String) {
        self.to_client.send(line);
    }

    /// Whether server `link` may be asked for its lists now: it runs and, once the client has
    /// shaken hands, it has been given the handshake too (with several servers; the proxy's one
    /// server is given it as the client sends it).
    fn serving(&self, link: &Link) -> bool {
        link.is_up()
            && match link.joining() {
                Joining::Done => true,
                Joining::UnderWay => false,
                Joining::Fresh => self.single().is_some() || lock(&self.handshake).is_none(),
            }
    }

    /// Returns once no server is being given the handshake, or each has had [`JOIN_WINDOW`]
    /// (within the request timeout) since it was given it: one that just started is waited for
    /// rather than left out of a list, and one that hangs holds up nothing for long.
    async fn joins_settled(&self) {
        let joining: Vec<Arc<Link>> =
            self.links.iter().filter(|link| link.is_up() && link.joining() == Joining::UnderWay).cloned().collect();
        if joining.is_empty() {
            // The usual case, on every call: no timer, nothing to wait for.
            return;
        }
        let window = self.request_timeout.min(JOIN_WINDOW);
        futures_util::future::join_all(joining.iter().map(|link| link.join_settled(window))).await;
    }

    /// While server `link` runs, pings it every [`ProxyOptions::request_timeout`] once it has
    /// been given the handshake: one that lets a ping time out is at fault ([`Link::ask`]), so a
    /// hung server is found even while nobody asks it anything.
    pub(super) async fn watch(&self, link: &Link) {
        loop {
            tokio::time::sleep(self.request_timeout).await;
            // A server busy with a client's request may not read a ping before it is done.
            if link.joining() == Joining::Done && !link.busy() {
                let _ = self.ask(link, "ping", json!({})).await;
            }
        }
    }

    /// Whether there is one server: then everything not about tools passes through as it came.
    fn single(&self) -> Option<&Arc<Link>> {
        match self.links.as_slice() {
            [link] => Some(link),
            _ => None,
        }
    }

    /// Ends the client's output once every queued line is written.
    pub(super) fn close_client_output(&self) {
        self.to_client.close();
    }

    /// Runs a tool request's work in a task of its own, within [`TOOL_TASKS`].
    fn spawn_tool_task(self: &Arc<Self>, id: Id, work: impl Future<Output = ()> + Send + 'static) {
        match self.tool_tasks.clone().try_acquire_owned() {
            Ok(permit) => {
                lock(&self.tasks).started(&id);
                let router = self.clone();
                tokio::spawn(async move {
                    work.await;
                    lock(&router.tasks).ended(&id);
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
                let answer = salvaged.is_answer(|id| self.server_request_of(id).is_some());
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
                    "initialize" | "server/discover" => {
                        let params = params
                            .and_then(|raw| tool_mediator_core::json::from_str(raw.get()).ok())
                            .unwrap_or(json!({}));
                        let method = method.into_owned();
                        self.spawn_tool_task(id.clone(), self.clone().handshake(id, method, params));
                    }
                    "subscriptions/listen" => {
                        let wants_tools = params.is_some_and(|raw| {
                            serde_json::from_str::<Value>(raw.get()).is_ok_and(|params| {
                                params.pointer("/notifications/toolsListChanged") == Some(&Value::Bool(true))
                            })
                        });
                        match self.single() {
                            Some(link) => {
                                let purpose = if wants_tools { Purpose::Listen } else { Purpose::Other };
                                if self.forward(link, id.clone(), purpose, lossless(line)) && wants_tools {
                                    lock(&self.protocol).listen(id);
                                }
                            }
                            // Several servers' streams cannot be one: the gateway keeps the
                            // stream open itself, for the tool list changes it makes.
                            None => self.listen_here(id, wants_tools),
                        }
                    }
                    _ => match self.single() {
                        Some(link) => self.forward_request(link, id, Purpose::Other, line),
                        None => self.aggregate(id, &method, params, line),
                    },
                }
            }
            Message::Notification { method, .. } if !method.starts_with("notifications/") => {
                // A request without an id (`tools/call`, `prompts/get`, `resources/read`): MCP has
                // no such notification, and it would pass the session's screen unrouted.
                self.warnings.warn("client-no-id", || {
                    format!("the client sent `{method}` without an id; a request needs one, so it was dropped")
                });
            }
            Message::Notification { method, params } => {
                if method == "notifications/cancelled"
                    && let Some(id) = jsonrpc::cancelled_request(params)
                {
                    // A cancelled request may never be answered: it waits no more, and one still
                    // worked on here is not sent. The server working on it hears of it.
                    lock(&self.tasks).cancel(&id);
                    let working = self.links.iter().find(|link| {
                        lock(&link.pending).client_cancelled(&id, |waiter| matches!(waiter, Waiter::Client(_)))
                    });
                    if let Some(link) = working.or(self.single()) {
                        link.send(lossless(line));
                    }
                    return;
                }
                // Anything else (initialized, roots changed, progress) concerns every server.
                for link in &self.links {
                    link.send(lossless(line));
                }
            }
            Message::Response { id, .. } => {
                let Some((link, asked)) = self.server_request_of(&id) else {
                    self.warnings.warn("client-unasked", || {
                        format!("the client answered {id}, which no server asked; passed on anyway")
                    });
                    if let Some(link) = self.single() {
                        link.send(lossless(line));
                    }
                    return;
                };
                lock(&link.pending).server_request_ended(&asked);
                if asked == id {
                    link.send(lossless(line));
                } else {
                    link.send(with_id(line, "/id", &asked));
                }
            }
        }
    }

    /// The server that asked the client `id` (as the client sees it), and its own id for it.
    fn server_request_of(&self, id: &Id) -> Option<(&Arc<Link>, Id)> {
        let (link, asked) = match self.single() {
            Some(link) => (link, id.clone()),
            None => {
                let (index, asked) = id.untagged()?;
                (self.links.get(index)?, asked)
            }
        };
        lock(&link.pending).waits_downstream(&asked).then_some((link, asked))
    }

    /// One line from server `link`.
    pub(super) fn from_server(self: &Arc<Self>, link: &Arc<Link>, line: Line<'_>) {
        let line = match line {
            Line::Whole(line) => line,
            Line::TooLong { head, length } => {
                let reason = self.too_long(length);
                self.warnings.warn("server-too-long", || format!("skipped a line from {}: {reason}", link.label));
                let salvaged = jsonrpc::salvage(&String::from_utf8_lossy(head));
                let answer = salvaged.is_answer(|id| lock(&link.pending).waits_upstream(id));
                if let Some(id) = salvaged.id {
                    self.unusable_from_server(link, id, answer, INVALID_REQUEST, &reason);
                }
                return;
            }
        };
        let message = match Message::parse(line) {
            Ok(message) => message,
            Err(malformed) => {
                self.warnings.warn("server-malformed", || {
                    format!(
                        "malformed line from {}: {} ({} bytes): {}",
                        link.label,
                        malformed.reason,
                        line.len(),
                        String::from_utf8_lossy(&line[..line.len().min(200)])
                    )
                });
                if let Some(id) = malformed.id {
                    self.unusable_from_server(link, id, false, malformed.code, &malformed.reason);
                }
                if let Some(id) = malformed.answers {
                    self.unusable_from_server(link, id, true, malformed.code, &malformed.reason);
                }
                return;
            }
        };
        match message {
            Message::Batch(items) => {
                if self.batches_allowed() {
                    return items
                        .iter()
                        .for_each(|item| self.from_server(link, Line::Whole(&mut item.get().as_bytes().to_vec())));
                }
                self.warnings.warn("server-batch", || {
                    format!("{} sent a JSON-RPC batch of {} messages; refused", link.label, items.len())
                });
                if let Some(answer) = jsonrpc::batch_refusal(&items) {
                    link.send(answer);
                }
            }
            Message::Response { id, result, error } => {
                let waiter = lock(&link.pending).answered(&id);
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
                        (Purpose::Listen, None) => {
                            // The server cannot listen: the proxy keeps the stream open itself,
                            // for the tool list changes it makes.
                            self.listen_here(id, true);
                        }
                        (Purpose::Listen, Some(_)) => {
                            lock(&self.protocol).stop_listening(&id);
                            self.to_client(lossless(line));
                        }
                        _ => self.to_client(lossless(line)),
                    },
                    None => {
                        self.warnings.warn("server-unasked", || {
                            format!(
                                "{} answered {id}, which nobody asked (or asked too long ago); \
                                 dropped",
                                link.label
                            )
                        });
                    }
                }
            }
            Message::Request { id, .. } => {
                if !lock(&link.pending).server_request(&id) {
                    let reason = format!("{MAX_WAITING} requests are already waiting for the client");
                    link.send(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
                    return;
                }
                match self.single() {
                    Some(_) => self.to_client(lossless(line)),
                    None => self.to_client(with_id(line, "/id", &id.tagged(link.index))),
                }
            }
            Message::Notification { method, params } if method == "notifications/cancelled" => {
                let Some(id) = jsonrpc::cancelled_request(params) else {
                    return self.to_client(lossless(line));
                };
                lock(&link.pending).server_request_ended(&id);
                match self.single() {
                    Some(_) => self.to_client(lossless(line)),
                    None => self.to_client(with_id(line, "/params/requestId", &id.tagged(link.index))),
                }
            }
            Message::Notification { method, params } => match &*method {
                // A server not given the handshake yet is asked nothing: the join lists it after.
                "notifications/tools/list_changed" if !self.serving(link) => {}
                "notifications/tools/list_changed" => self.relist_soon(link),
                "notifications/subscriptions/acknowledged" => self.acknowledge(params, line),
                "notifications/resources/list_changed" | "notifications/prompts/list_changed" => {
                    self.catalog_changed();
                    self.to_client(lossless(line));
                }
                _ => self.to_client(lossless(line)),
            },
        }
    }

    /// A line from the client that could not be used but carries `id`: a broken request is
    /// answered; a broken answer to a server's request is reported to that server.
    fn unusable_from_client(&self, id: Id, answer: bool, code: i64, reason: &str) {
        if !answer {
            return self.to_client(jsonrpc::error_response(&id, code, reason));
        }
        if let Some((link, asked)) = self.server_request_of(&id)
            && lock(&link.pending).server_request_ended(&asked)
        {
            let reason = format!("the client's answer was unusable: {reason}");
            link.send(jsonrpc::error_response(&asked, INTERNAL_ERROR, &reason));
        }
    }

    /// A line from a server that could not be used but carries `id`: a broken request is
    /// answered; whoever waits for a broken answer hears of it.
    fn unusable_from_server(&self, link: &Link, id: Id, answer: bool, code: i64, reason: &str) {
        if !answer {
            link.send(jsonrpc::error_response(&id, code, reason));
            return;
        }
        let waiter = lock(&link.pending).answered(&id);
        match waiter {
            Some(Waiter::Client(_)) => {
                let reason = format!("the MCP server's answer was unusable: {reason}");
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
            Some(Waiter::Proxy(reply)) => drop(reply),
            None => {}
        }
    }

    /// Sends a client request to `link` as it came, waiting for its answer under its own id.
    fn forward_request(&self, link: &Link, id: Id, purpose: Purpose, line: &[u8]) {
        self.forward(link, id, purpose, lossless(line));
    }

    /// Whether the request went to `link`; if not, the client has its error answer.
    fn forward(&self, link: &Link, id: Id, purpose: Purpose, line: String) -> bool {
        if lock(&self.tasks).take_cancelled(&id) {
            return false;
        }
        let refusal = lock(&link.pending).client_request(&id, Waiter::Client(purpose));
        match refusal {
            Err(Refusal::Error { code, reason }) => {
                self.to_client(jsonrpc::error_response(&id, code, &reason));
                false
            }
            Ok(()) => {
                if link.send(line) {
                    return true;
                }
                lock(&link.pending).answered(&id);
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &link.down_reason()));
                false
            }
        }
    }

    /// A request of the proxy's own to `link`, and its result.
    async fn ask(&self, link: &Link, method: &str, params: Value) -> Result<Reply, Upstream> {
        link.ask(method, &params, self.request_timeout).await
    }

    fn fail(&self, id: &Id, failure: Upstream) {
        self.to_client(match failure {
            Upstream::Refused(error) => jsonrpc::raw_error_response(id, error.get()),
            Upstream::Failed(reason) => jsonrpc::error_response(id, INTERNAL_ERROR, &reason),
        });
    }

    /// Server `link` is gone: every request still waiting for it gets an error answer, now and
    /// until it starts again; if it will, its tools leave the list meanwhile.
    pub(super) fn server_gone(&self, link: &Link, reason: String) {
        let waiting = link.disconnected(reason.clone());
        for (id, waiter) in waiting {
            // The proxy's own requests fail when their sender drops, and answer the client then.
            if let Waiter::Client(_) = waiter {
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
        }
        if self.restarts {
            self.session.forget(link.index);
            self.catalog_changed();
        }
    }

    /// The client's side of the protocol revision, and its `_meta` envelope.
    fn note_protocol(&self, params: Option<&RawValue>) {
        if let Some(meta) = params.and_then(|raw| meta_of(raw.get())) {
            lock(&self.protocol).note_meta(meta);
        }
    }

    /// The router keeps the listen stream `id` open itself, acknowledging tool list changes
    /// (when asked for) and nothing else.
    fn listen_here(&self, id: Id, wants_tools: bool) {
        let stream: Value = serde_json::from_str(id.as_raw()).unwrap_or(Value::Null);
        let params = json!({
            "notifications": {"toolsListChanged": wants_tools},
            "_meta": {SUBSCRIPTION_ID_KEY: stream},
        });
        if wants_tools {
            lock(&self.protocol).listen(id);
        }
        self.to_client(jsonrpc::notification("notifications/subscriptions/acknowledged", Some(&params)));
    }

    /// A stream's acknowledgment: the proxy honours tool list changes itself.
    fn acknowledge(&self, params: Option<&RawValue>, line: &[u8]) {
        let parsed = params.and_then(|raw| tool_mediator_core::json::from_str(raw.get()).ok());
        let stream = parsed.as_ref().and_then(|params| {
            params.pointer(&format!("/_meta/{}", tool_mediator_core::schema::escape(SUBSCRIPTION_ID_KEY)))
        });
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

/// `line` with the id at `pointer` (`/id`, `/params/requestId`) replaced by `id`; everything
/// else kept as written.
fn with_id(line: &[u8], pointer: &str, id: &Id) -> String {
    let Ok(mut message) = tool_mediator_core::json::from_str(&String::from_utf8_lossy(line)) else {
        return lossless(line);
    };
    if let (Some(slot), Ok(id)) = (message.pointer_mut(pointer), tool_mediator_core::json::from_str(id.as_raw())) {
        *slot = id;
    }
    message.to_string()
}

/// The params of one page of a listing the proxy asks for: the cursor, and the client's `_meta`
/// envelope when it speaks the stateless revision.
fn page_params(cursor: Option<&str>, meta: Option<&Value>) -> Value {
    let mut params = Map::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".to_owned(), Value::from(cursor));
    }
    if let Some(meta) = meta {
        params.insert("_meta".to_owned(), meta.clone());
    }
    Value::Object(params)
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
