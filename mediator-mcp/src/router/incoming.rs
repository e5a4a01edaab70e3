//! Each line that comes in, from the client or from a server (its [`Side`]), on one path: read
//! within the limit; answered by the id it can be read to carry when it cannot be used; then, by
//! what it is (a request, an answer, a notification), noted among the requests waiting and sent
//! on. What differs between the sides is said once, by [`Side`] or by the step of that side.

use std::ops::Range;
use std::sync::Arc;

use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::{Link, Purpose, Reply, Router, Waiter, lossless};
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, INVALID_REQUEST, Id, Malformed, Message};
use crate::wire::lines::Line;
use crate::wire::pending::MAX_WAITING;
use crate::wire::revision::SUBSCRIPTION_ID_KEY;
use tool_mediator_core::sync::lock;

/// Where a line came from: the client, or one of the servers.
#[derive(Clone, Copy)]
enum Side<'a> {
    Client,
    Server(&'a Arc<Link>),
}

/// Why a line is not taken as it came.
#[derive(Clone, Copy)]
enum Unread {
    TooLong,
    Malformed,
    Batch,
}

impl Side<'_> {
    /// How logs name it.
    fn name(&self) -> &str {
        match self {
            Side::Client => "the client",
            Side::Server(link) => &link.label,
        }
    }

    /// The kind its warnings about `unread` lines are held back under: each side's apart, so a
    /// server's flood hides nothing the client does wrong.
    fn warning(self, unread: Unread) -> &'static str {
        match (self, unread) {
            (Side::Client, Unread::TooLong) => "client-too-long",
            (Side::Client, Unread::Malformed) => "client-malformed",
            (Side::Client, Unread::Batch) => "client-batch",
            (Side::Server(_), Unread::TooLong) => "server-too-long",
            (Side::Server(_), Unread::Malformed) => "server-malformed",
            (Side::Server(_), Unread::Batch) => "server-batch",
        }
    }
}

impl Router {
    /// One line from the client.
    pub(crate) fn from_client(self: &Arc<Self>, line: Line<'_>) {
        self.take(Side::Client, line);
    }

    /// One line from server `link`.
    pub(crate) fn from_server(self: &Arc<Self>, link: &Arc<Link>, mut line: Line<'_>) {
        // The remote bridge's note of the request a message came with is the pool's, not the
        // client's.
        if let Line::Whole(bytes) = &mut line {
            let (related, stripped) = jsonrpc::take_related_request(bytes);
            if related.is_some() {
                **bytes = stripped.into_bytes();
            }
        }
        self.take(Side::Server(link), line);
    }

    /// One line from `side`: one too long or malformed is answered by the id it shows; a message
    /// is acted on by what it is and which side sent it.
    fn take(self: &Arc<Self>, side: Side<'_>, line: Line<'_>) {
        let line = match line {
            Line::Whole(line) => line,
            Line::TooLong { head, length } => return self.too_long(side, head, length),
        };
        let message = match Message::parse(line) {
            Ok(message) => message,
            Err(malformed) => return self.malformed(side, line, malformed),
        };
        match (side, message) {
            (_, Message::Batch(items)) => self.batch(side, &items),
            (Side::Client, Message::Request { id, method, params }) => self.client_request(id, &method, params, line),
            (Side::Client, Message::Notification { method, params }) => self.client_notification(&method, params, line),
            (Side::Client, Message::Response { id, .. }) => self.client_answer(&id, line),
            (Side::Server(link), Message::Request { id, .. }) => self.server_request(link, &id, line),
            (Side::Server(link), Message::Notification { method, params }) => {
                self.server_notification(link, &method, params, line)
            }
            (Side::Server(link), Message::Response { id, result, error }) => {
                // Noted before the line may be handed over to the proxy's own request.
                let result = result.map(|result| Reply::place(line, result));
                let error = error.map(RawValue::to_owned);
                self.server_answer(link, &id, result, error, line);
            }
        }
    }

    /// Sends `line` back to `side`, which sent what it answers.
    fn send_back(&self, side: Side<'_>, line: String) {
        match side {
            Side::Client => self.to_client(line),
            Side::Server(link) => {
                link.send(line);
            }
        }
    }

    /// Whether `id` is that of a request `side` was asked and has yet to answer.
    fn asked(&self, side: Side<'_>, id: &Id) -> bool {
        match side {
            Side::Client => self.server_request_of(id).is_some(),
            Side::Server(link) => lock(&link.pending).waits_upstream(id),
        }
    }

    /// A line longer than the limit, skipped: its sender hears of it by the id its head shows.
    fn too_long(&self, side: Side<'_>, head: &[u8], length: usize) {
        let reason = format!(
            "a message of {length} bytes is longer than the proxy's limit of {} bytes (--max-message-size)",
            self.told.max_message_bytes
        );
        self.warnings.warn(side.warning(Unread::TooLong), || format!("skipped a line from {}: {reason}", side.name()));
        let salvaged = jsonrpc::salvage(&String::from_utf8_lossy(head));
        let answer = salvaged.is_answer(|id| self.asked(side, id));
        if let Some(id) = salvaged.id {
            self.unusable(side, id, answer, INVALID_REQUEST, &reason);
        }
    }

    /// A line that is not a JSON-RPC message: whoever its id shows hears of it.
    fn malformed(&self, side: Side<'_>, line: &[u8], malformed: Malformed) {
        self.warnings.warn(side.warning(Unread::Malformed), || {
            let said = format!("malformed line from {}: {} ({} bytes)", side.name(), malformed.reason, line.len());
            match side {
                // What a server printed is shown (one that logs to its output is found by it); a
                // client's line is its user's, and stays out of the log.
                Side::Server(_) => format!("{said}: {}", String::from_utf8_lossy(&line[..line.len().min(200)])),
                Side::Client => said,
            }
        });
        if let Some(id) = malformed.id {
            self.unusable(side, id, false, malformed.code, &malformed.reason);
        }
        if let Some(id) = malformed.answers {
            self.unusable(side, id, true, malformed.code, &malformed.reason);
        }
    }

    /// A JSON-RPC batch: in the revision that has them, each message on its own, answered on
    /// its own as its answer comes; in any other, refused.
    fn batch(self: &Arc<Self>, side: Side<'_>, items: &[&RawValue]) {
        if self.batches_allowed() {
            return items.iter().for_each(|item| self.take(side, Line::Whole(&mut item.get().as_bytes().to_vec())));
        }
        self.warnings.warn(side.warning(Unread::Batch), || {
            let messages = tool_mediator::counted(items.len(), "message", "messages");
            format!("{} sent a JSON-RPC batch of {messages}; refused", side.name())
        });
        if let Some(answer) = jsonrpc::batch_refusal(items) {
            self.send_back(side, answer);
        }
    }

    /// A line from `side` that could not be used but carries `id`: a broken request is
    /// answered; whoever waits for a broken answer hears of it.
    fn unusable(&self, side: Side<'_>, id: Id, answer: bool, code: i64, reason: &str) {
        if !answer {
            return self.send_back(side, jsonrpc::error_response(&id, code, reason));
        }
        match side {
            Side::Client => {
                if let Some((link, asked)) = self.server_request_of(&id)
                    && lock(&link.pending).server_request_ended(&asked)
                {
                    let reason = format!("the client's answer was unusable: {reason}");
                    link.send(jsonrpc::error_response(&asked, INTERNAL_ERROR, &reason));
                }
            }
            Side::Server(link) => {
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
        }
    }

    /// A request from the client: about tools, or the handshake, served here; anything else
    /// sent to the one server, or to the server it names.
    fn client_request(self: &Arc<Self>, id: Id, method: &str, params: Option<&RawValue>, line: &[u8]) {
        self.note_protocol(params);
        match method {
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
                let params =
                    params.and_then(|raw| tool_mediator_core::json::from_str(raw.get()).ok()).unwrap_or(json!({}));
                let method = method.to_owned();
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
                            lock(&self.client.protocol).listen(id);
                        }
                    }
                    // Several servers' streams cannot be one: the gateway keeps the stream open
                    // itself, for the tool list changes it makes.
                    None => self.listen_here(id, wants_tools),
                }
            }
            _ => match self.single() {
                Some(link) => self.forward_request(link, id, Purpose::Other, line),
                None => self.aggregate(id, method, params, line),
            },
        }
    }

    /// A notification from the client: a cancellation goes to the server working on the
    /// request, anything else to every server.
    fn client_notification(&self, method: &str, params: Option<&RawValue>, line: &[u8]) {
        if !method.starts_with("notifications/") {
            // A request without an id (`tools/call`, `prompts/get`, `resources/read`): MCP has
            // no such notification, and it would pass the session's screen unrouted.
            self.warnings.warn("client-no-id", || {
                format!("the client sent `{method}` without an id; a request needs one, so it was dropped")
            });
            return;
        }
        if method == "notifications/cancelled"
            && let Some(id) = jsonrpc::cancelled_request(params)
        {
            // A cancelled request may never be answered: it waits no more, and one still worked
            // on here is not sent. The server working on it hears of it. A listen stream
            // cancelled (closed, behind the HTTP front) is listened for no more.
            lock(&self.client.tasks).cancel(&id);
            lock(&self.client.protocol).stop_listening(&id);
            let working = self
                .links
                .iter()
                .find(|link| lock(&link.pending).client_cancelled(&id, |waiter| matches!(waiter, Waiter::Client(_))));
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

    /// The client answered `id`: the server that asked it hears the answer, under its own id.
    fn client_answer(&self, id: &Id, line: &[u8]) {
        let Some((link, asked)) = self.server_request_of(id) else {
            self.warnings.warn("client-unasked", || {
                format!("the client answered {id}, which no server asked; passed on anyway")
            });
            if let Some(link) = self.single() {
                link.send(lossless(line));
            }
            return;
        };
        lock(&link.pending).server_request_ended(&asked);
        if asked == *id {
            link.send(lossless(line));
        } else {
            link.send(jsonrpc::with_id(line, "/id", &asked));
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

    /// Server `link`'s line for the client, the id at `pointer` tagged with the server's number
    /// when there are several ([`Id::tagged`]).
    fn tagged_for_client(&self, link: &Link, line: &[u8], pointer: &str, id: &Id) -> String {
        match self.single() {
            Some(_) => lossless(line),
            None => jsonrpc::with_id(line, pointer, &id.tagged(link.index)),
        }
    }

    /// A request from server `link` to the client, which waits for the client's answer.
    fn server_request(&self, link: &Link, id: &Id, line: &[u8]) {
        if !lock(&link.pending).server_request(id) {
            let reason = format!("{MAX_WAITING} requests are already waiting for the client");
            link.send(jsonrpc::error_response(id, INTERNAL_ERROR, &reason));
            return;
        }
        self.to_client(self.tagged_for_client(link, line, "/id", id));
    }

    /// A notification from server `link`: a change to its tools is taken in here, anything else
    /// goes to the client.
    fn server_notification(self: &Arc<Self>, link: &Arc<Link>, method: &str, params: Option<&RawValue>, line: &[u8]) {
        match method {
            "notifications/cancelled" => {
                let Some(id) = jsonrpc::cancelled_request(params) else {
                    return self.to_client(lossless(line));
                };
                lock(&link.pending).server_request_ended(&id);
                self.to_client(self.tagged_for_client(link, line, "/params/requestId", &id));
            }
            // A server not given the handshake yet is asked nothing: the join lists it after.
            "notifications/tools/list_changed" if !self.serving(link) => {}
            "notifications/tools/list_changed" => self.relist_soon(link),
            "notifications/subscriptions/acknowledged" => self.acknowledge(params, line),
            "notifications/resources/list_changed" | "notifications/prompts/list_changed" => {
                self.catalog_changed();
                self.to_client(lossless(line));
            }
            _ => self.to_client(lossless(line)),
        }
    }

    /// Server `link` answered `id` with `result` (where it lies in `line`) or `error`: whoever
    /// waits for it hears the answer.
    fn server_answer(
        &self,
        link: &Link,
        id: &Id,
        result: Option<Range<usize>>,
        error: Option<Box<RawValue>>,
        line: &mut Vec<u8>,
    ) {
        let waiter = lock(&link.pending).answered(id);
        match waiter {
            Some(Waiter::Proxy(reply)) => {
                let answer = match (result, error) {
                    (_, Some(error)) => Err(error),
                    (Some(result), None) => Ok(Reply::taken(line, result)),
                    (None, None) => unreachable!("a response has a result or an error"),
                };
                let _ = reply.send(answer);
            }
            Some(Waiter::Client(purpose)) => match (purpose, result) {
                (Purpose::Listen, None) => {
                    // The server cannot listen: the proxy keeps the stream open itself, for the
                    // tool list changes it makes.
                    self.listen_here(id.clone(), true);
                }
                (Purpose::Listen, Some(_)) => {
                    lock(&self.client.protocol).stop_listening(id);
                    self.to_client(lossless(line));
                }
                (_, Some(result))
                    if link.handshake_only.load(std::sync::atomic::Ordering::Relaxed)
                        && lock(&self.client.protocol).is_stateless() =>
                {
                    self.to_client(for_stateless(id, &line[result]).unwrap_or_else(|| lossless(line)));
                }
                _ => self.to_client(lossless(line)),
            },
            None => {
                self.warnings.warn("server-unasked", || {
                    format!("{} answered {id}, which nobody asked (or asked too long ago); dropped", link.label)
                });
            }
        }
    }

    /// The client's side of the protocol revision, and its `_meta` envelope.
    fn note_protocol(&self, params: Option<&RawValue>) {
        if let Some(meta) = params.and_then(|raw| meta_of(raw.get())) {
            lock(&self.client.protocol).note_meta(meta);
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
            lock(&self.client.protocol).listen(id);
        }
        self.to_client(jsonrpc::notification("notifications/subscriptions/acknowledged", Some(&params)));
    }

    /// A stream's acknowledgment: the proxy honours tool list changes itself.
    fn acknowledge(&self, params: Option<&RawValue>, line: &[u8]) {
        let parsed = params.and_then(|raw| tool_mediator_core::json::from_str(raw.get()).ok());
        let stream = parsed.as_ref().and_then(|params| {
            params.pointer(&format!("/_meta/{}", tool_mediator_core::schema::escape(SUBSCRIPTION_ID_KEY)))
        });
        let listens = stream.is_some_and(|stream| lock(&self.client.protocol).is_listening(stream));
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

/// The answer to request `id` with `result`, a result of a server of the 2025 revisions, as a
/// client of the stateless revision reads it ([`crate::wire::revision::complete_for_stateless`]).
fn for_stateless(id: &Id, result: &[u8]) -> Option<String> {
    let Value::Object(mut result) = tool_mediator_core::json::from_str(std::str::from_utf8(result).ok()?).ok()? else {
        return None;
    };
    let listing = ["tools", "resources", "resourceTemplates", "prompts"].iter().any(|key| result.contains_key(*key));
    crate::wire::revision::complete_for_stateless(&mut result, listing);
    Some(jsonrpc::response(id, &Value::Object(result).to_string()))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ProxyOptions;
    use crate::router::LinkSettings;

    fn take(router: &Arc<Router>, line: &str) {
        router.from_client(Line::Whole(&mut line.as_bytes().to_vec()));
    }

    /// A gateway over HTTP opens a router per session for as long as it runs: one whose
    /// session ended must be freed, not kept by the tasks it started.
    #[tokio::test]
    async fn a_router_is_freed_when_its_session_ends() {
        let mediator = Arc::new(tool_mediator::Mediator::builder().build());
        let options = ProxyOptions::new(mediator, tool_mediator::session::SessionPolicy::default());
        let (outbox, lines) = crate::wire::lines::Outbox::new(1 << 20);
        let router = Router::new(options, vec![LinkSettings { name: "a".into(), ..LinkSettings::default() }], outbox);
        let left = Arc::downgrade(&router);
        drop((router, lines));
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert!(left.upgrade().is_none(), "the router outlives its session");
    }

    /// Behind the HTTP front every stateless client shares one router: a stream a client closed
    /// (the front cancels it) must stop being listened for, or the list of streams only grows.
    #[tokio::test]
    async fn a_cancelled_listen_stream_is_listened_for_no_more() {
        let mediator = Arc::new(tool_mediator::Mediator::builder().build());
        let options = ProxyOptions::new(mediator, tool_mediator::session::SessionPolicy::default());
        let (outbox, _lines) = crate::wire::lines::Outbox::new(1 << 20);
        let two = vec![
            LinkSettings { name: "a".into(), ..LinkSettings::default() },
            LinkSettings { name: "b".into(), ..LinkSettings::default() },
        ];
        let router = Router::new(options, two, outbox);
        let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let listen = format!(
            r#"{{"jsonrpc":"2.0","id":"s1","method":"subscriptions/listen","params":{{{meta},"notifications":{{"toolsListChanged":true}}}}}}"#
        );
        take(&router, &listen);
        assert_eq!(lock(&router.client.protocol).list_changed().len(), 1, "the gateway listens for the stream itself");
        take(&router, r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}"#);
        assert!(lock(&router.client.protocol).list_changed().is_empty(), "a cancelled stream hears nothing more");
    }
}
