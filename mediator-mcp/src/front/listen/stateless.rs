//! The stateless revision (2026-07-28) on the front's endpoint: no handshake, no session, every
//! request carrying its protocol version and the client's capabilities in its `_meta` envelope.
//!
//! Every stateless request goes to one proxy the front shares among them all (started with the
//! first, started again if it ends), never to a server started for it. So that requests of
//! different clients that share an id (each client counts from 1) never meet upstream, each is
//! given an id of the front's own (`"http-N"`), as is its progress token; the answer and the
//! notifications for it get the client's back. What the server sends of its own accord goes to
//! the request it relates to: a `subscriptions/listen` stream by its subscription id, progress
//! by its token, a log message to a request that asked for logs; nothing else is sent anywhere.
//!
//! Nothing of a client is kept between its requests: the revision lists the same tools to every
//! client, and a call to any tool the mediator lists or folds goes through whichever replica of
//! the front takes it (the shared proxy never asks that a call follow the disclosure: that would
//! need the expansions one replica saw).
//!
//! As the revision prescribes, a request is refused with 400 and `-32602` when its envelope is
//! not whole, `-32020` when its headers do not say what its body says, `-32022` when it names a
//! revision not served here; an unknown method is 404 with `-32601`. An `Mcp-Session-Id` is
//! ignored, and none is minted or echoed. Closing a response stream cancels its request, and so
//! does hanging up on a request answered as JSON ([`Hangup`]).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::hangup::Hangup;
use super::{Front, REVISION_HEADER, Session, Waiting, json_error, send_or_hold, wants_stream};
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, Id, Message};
use crate::wire::revision::{Envelope, HEADER_MISMATCH, LOG_LEVEL_KEY, SUBSCRIPTION_ID_KEY};
use tool_mediator_core::sync::lock;

/// `-32601`: the method is not served (404 over HTTP in the stateless revision).
const METHOD_NOT_FOUND: i64 = -32601;
/// `-32021`: the request needs a client capability it did not declare.
const MISSING_CLIENT_CAPABILITY: i64 = -32021;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = crate::wire::revision::UNSUPPORTED_PROTOCOL_VERSION;

/// Numbers the front's own ids of stateless requests.
static EXCHANGES: AtomicU64 = AtomicU64::new(0);

/// A POST of the stateless revision: its message, with its params read.
pub(super) struct Request<'a> {
    message: &'a Message<'a>,
    params: Option<Value>,
}

impl<'a> Request<'a> {
    /// The POST as a stateless request, when its envelope or its header says it is one.
    pub(super) fn of(headers: &HeaderMap, message: &'a Message<'a>) -> Option<Request<'a>> {
        let raw = match message {
            Message::Request { params, .. } | Message::Notification { params, .. } => *params,
            _ => None,
        };
        let params = raw.and_then(|raw| tool_mediator_core::json::from_str(raw.get()).ok());
        let header = headers.get(REVISION_HEADER).and_then(|value| value.to_str().ok());
        let envelope = Envelope { header, meta: params.as_ref().and_then(|params| params.get("_meta")) };
        envelope.is_stateless().then_some(Request { message, params })
    }
}

/// Answers a stateless request through the shared proxy of `view` (`None`: of every server).
pub(super) async fn answer(
    front: &Arc<Front>,
    headers: &HeaderMap,
    request: Request<'_>,
    view: Option<String>,
    hangup: Option<&Hangup>,
) -> Response {
    let Request { message, params } = request;
    let (id, method) = match message {
        Message::Request { id, method, .. } => (id.clone(), method.as_ref()),
        // The revision defines no notification a client sends over HTTP: taken, and let go.
        Message::Notification { .. } => return StatusCode::ACCEPTED.into_response(),
        _ => {
            let reason = "a client sends no responses in this revision";
            return json_error(StatusCode::BAD_REQUEST, &Id::null(), INVALID_REQUEST, reason);
        }
    };
    let meta = params.as_ref().and_then(|params| params.get("_meta"));
    let logs = meta.is_some_and(|meta| meta.get(LOG_LEVEL_KEY).is_some());
    let header = headers.get(REVISION_HEADER).and_then(|value| value.to_str().ok());
    let envelope = Envelope { header, meta };
    if let Err(refusal) = envelope.check() {
        let mut error = json!({"code": refusal.code, "message": refusal.message});
        if let Some(data) = refusal.data {
            error["data"] = data;
        }
        return answer_at_once(&jsonrpc::raw_error_response(&id, &error.to_string()));
    }
    if let Err(mismatch) = standard_headers(headers, method, params.as_ref()) {
        return answer_at_once(&jsonrpc::error_response(&id, HEADER_MISMATCH, &mismatch));
    }
    front.pool_named(view.as_deref()).await;
    let session = front.shared_session(view);
    let (exchange, line) = Exchange::of(&id, method, params);
    let wants_stream = wants_stream(headers);
    let Some(waiting) = session.wait_for(&exchange.ours, method, wants_stream, logs) else {
        // An id of the front's own is never reused: this cannot be.
        return answer_at_once(&jsonrpc::error_response(&id, INTERNAL_ERROR, "the front's request id is taken"));
    };
    if !session.send(line.into_bytes()).await {
        return answer_at_once(&jsonrpc::error_response(&id, INTERNAL_ERROR, &session.ending()));
    }
    let mut exchange = Answering { exchange, waiting, session, answered: false };
    // Nothing is written to the client until the answer (JSON) or the first message for the
    // request (a stream): its hanging up until then is looked for apart, and cancels the
    // request (the exchange is dropped).
    let ended = || jsonrpc::error_response(&id, INTERNAL_ERROR, "the shared proxy ended");
    if !wants_stream {
        // A client that takes JSON alone gets the answer alone.
        let Some(answer) = unless_hung_up(hangup, exchange.answer()).await else {
            return exchange.hung_up();
        };
        return answer_at_once(&answer.unwrap_or_else(ended));
    }
    let Some(first) = unless_hung_up(hangup, exchange.next()).await else {
        return exchange.hung_up();
    };
    let Some(first) = first else {
        return answer_at_once(&ended());
    };
    if exchange.answered {
        return answer_at_once(&first);
    }
    let events = futures_util::stream::unfold((Some(first), exchange), |(first, mut exchange)| async move {
        let line = match first {
            Some(line) => line,
            None if exchange.answered => return None,
            None => exchange.next().await?,
        };
        Some((Ok::<_, Infallible>(Event::default().event("message").data(line)), (None, exchange)))
    });
    let mut response = Sse::new(events).keep_alive(KeepAlive::default()).into_response();
    // Reverse proxies (nginx) pass the stream on as it comes, as the revision asks.
    response.headers_mut().insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// What `waiting` gives, or `None` once the client has hung up.
async fn unless_hung_up<T>(hangup: Option<&Hangup>, waiting: impl std::future::Future<Output = T>) -> Option<T> {
    let hung_up = async {
        match hangup {
            Some(hangup) => hangup.gone().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        done = waiting => Some(done),
        () = hung_up => None,
    }
}

/// GET and DELETE are not part of the stateless revision (405); `None` for any other request.
pub(super) fn refuse_other_methods(headers: &HeaderMap) -> Option<Response> {
    let header = headers.get(REVISION_HEADER).and_then(|value| value.to_str().ok())?;
    crate::wire::revision::STATELESS_REVISIONS.contains(&header).then(|| {
        let reason = "the stateless revision has no GET stream and no session to delete";
        (StatusCode::METHOD_NOT_ALLOWED, [(header::ALLOW, "POST")], format!("{reason}\n")).into_response()
    })
}

/// A whole answer as JSON, with the HTTP status its error calls for.
fn answer_at_once(line: &str) -> Response {
    let code = match Message::parse(line.as_bytes()) {
        Ok(Message::Response { error: Some(error), .. }) => {
            serde_json::from_str::<Value>(error.get()).ok().and_then(|error| error["code"].as_i64())
        }
        _ => None,
    };
    let status = match code {
        Some(METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            jsonrpc::PARSE_ERROR
            | INVALID_REQUEST
            | INVALID_PARAMS
            | HEADER_MISMATCH
            | MISSING_CLIENT_CAPABILITY
            | UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    };
    (status, [(header::CONTENT_TYPE, "application/json")], line.to_owned()).into_response()
}

/// Checks the headers the revision mirrors from the body: `Mcp-Method`, and `Mcp-Name` for the
/// methods that name something; the error says which differs.
fn standard_headers(headers: &HeaderMap, method: &str, params: Option<&Value>) -> Result<(), String> {
    let value = |name: &str| headers.get(name).map(|value| value.to_str().map_err(|_| format!("{name} is not ASCII")));
    match value("mcp-method").transpose()? {
        None => return Err("Header mismatch: the Mcp-Method header is missing".to_owned()),
        Some(header) if header != method => {
            return Err(format!(
                "Header mismatch: Mcp-Method header value '{header}' does not match body value '{method}'"
            ));
        }
        Some(_) => {}
    }
    let field = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let Some(body) = params.and_then(|params| params.get(field)).and_then(Value::as_str) else {
        // The server says what is wrong with the params.
        return Ok(());
    };
    let header = value("mcp-name").transpose()?.ok_or("Header mismatch: the Mcp-Name header is missing")?;
    let decoded = crate::wire::revision::decode_header_value(header)
        .ok_or_else(|| format!("Header mismatch: Mcp-Name header value '{header}' is not valid base64"))?;
    if decoded != body {
        return Err(format!("Header mismatch: Mcp-Name header value '{header}' does not match body value '{body}'"));
    }
    Ok(())
}

/// A stateless request under the front's id: what the client wrote, to give it back.
struct Exchange {
    /// The front's id, unique among every client's requests.
    ours: Id,
    /// The client's id, as written.
    theirs: Value,
    /// The client's progress token, when it gave one (it was given the front's id).
    progress: Option<Value>,
}

impl Exchange {
    /// The exchange, and the request line for the shared proxy.
    fn of(id: &Id, method: &str, params: Option<Value>) -> (Exchange, String) {
        let ours = format!("http-{}", EXCHANGES.fetch_add(1, Ordering::Relaxed));
        let theirs = serde_json::from_str(id.as_raw()).unwrap_or(Value::Null);
        let mut params = params;
        let progress = params
            .as_mut()
            .and_then(|params| params.pointer_mut("/_meta/progressToken"))
            .map(|token| std::mem::replace(token, Value::String(ours.clone())));
        let mut request = json!({"jsonrpc": "2.0", "id": ours, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        let line = request.to_string();
        let ours = match Message::parse(line.as_bytes()) {
            Ok(Message::Request { id, .. }) => id,
            _ => unreachable!("a request made here parses"),
        };
        (Exchange { ours, theirs, progress }, line)
    }

    /// A line for this request with the client's id and token back in it.
    fn restore(&self, line: String) -> String {
        let Ok(mut message) = tool_mediator_core::json::from_str(&line) else { return line };
        let ours: Value = serde_json::from_str(self.ours.as_raw()).unwrap_or(Value::Null);
        if message.get("id") == Some(&ours) {
            message["id"] = self.theirs.clone();
        }
        if let Some(params) = message.get_mut("params") {
            if let Some(stream) = params.pointer_mut(&format!("/_meta/{}", SUBSCRIPTION_ID_KEY.replace('/', "~1")))
                && *stream == ours
            {
                *stream = self.theirs.clone();
            }
            if let (Some(token), Some(theirs)) = (params.get_mut("progressToken"), &self.progress)
                && *token == ours
            {
                *token = theirs.clone();
            }
        }
        message.to_string()
    }
}

/// A request on its way: the lines for it come back restored; dropped before its answer (the
/// client closed its stream), the request is cancelled upstream.
struct Answering {
    exchange: Exchange,
    waiting: Waiting,
    session: Arc<Session>,
    answered: bool,
}

impl Answering {
    /// The answer alone, what comes before it let go; `None` when the proxy ended first.
    async fn answer(&mut self) -> Option<String> {
        while let Some(line) = self.next().await {
            if self.answered {
                return Some(line);
            }
        }
        None
    }

    /// What a client that hung up is answered (it reads nothing); the request is cancelled as
    /// the exchange is dropped.
    fn hung_up(self) -> Response {
        tracing::debug!("the client of {} hung up before anything came for it; cancelled", self.exchange.ours);
        StatusCode::NO_CONTENT.into_response()
    }

    async fn next(&mut self) -> Option<String> {
        if self.answered {
            return None;
        }
        let line = self.waiting.answers.recv().await?;
        let ours = &self.exchange.ours;
        self.answered = matches!(Message::parse(line.as_bytes()), Ok(Message::Response { id, .. }) if id == *ours);
        Some(self.exchange.restore(line))
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        if !self.answered && !self.session.is_closed() {
            let params = json!({"requestId": serde_json::from_str::<Value>(self.exchange.ours.as_raw()).ok(),
                "reason": "the client closed its stream"});
            let cancel = jsonrpc::notification("notifications/cancelled", Some(&params));
            if self.session.input.try_send(cancel.into_bytes()).is_err() {
                tracing::debug!("the cancellation of {} could not be sent", self.exchange.ours);
            }
        }
    }
}

/// How long the first stateless request of a view waits for the shared servers to tell the
/// pool their names.
const NAMING_WINDOW: std::time::Duration = std::time::Duration::from_secs(5);

impl Front {
    /// Before the proxy the stateless requests of `view` share is made, the servers it shares
    /// with the pool have told it their names (or had [`NAMING_WINDOW`] to): it knows them by
    /// those. The front's warm-up has done so already, unless the servers file just changed.
    async fn pool_named(&self, view: Option<&str>) {
        if lock(&self.shared).get(&view.map(str::to_owned)).is_some_and(|session| !session.is_closed()) {
            return;
        }
        let catalog = self.catalog();
        let wanted: Vec<String> = catalog.servers_of(view).into_iter().map(|server| server.settings.name).collect();
        let (limit, withheld) = (self.proxy.max_message_bytes, self.proxy.withheld_env.clone());
        let patience = self.proxy.request_timeout.min(NAMING_WINDOW);
        let unnamed = catalog
            .pool
            .iter()
            .filter(|(name, shared)| wanted.contains(name) && shared.server_name().is_none())
            .map(|(_, shared)| tokio::time::timeout(patience, shared.warm(limit, &withheld, patience)));
        futures_util::future::join_all(unnamed).await;
    }

    /// The proxy the stateless requests of `view` share, started when there is none or it has
    /// ended.
    fn shared_session(self: &Arc<Self>, view: Option<String>) -> Arc<Session> {
        let mut shared = lock(&self.shared);
        if let Some(session) = shared.get(&view).filter(|session| !session.is_closed()) {
            session.used();
            return session.clone();
        }
        let catalog = self.catalog();
        let servers = catalog.unpooled(catalog.servers_of(view.as_deref()));
        let (session, pending) = self.new_session(true, view.clone(), None, None);
        let mut options = self.proxy.clone();
        // Any replica answers a call by name, whichever of them listed a category's tools.
        if options.policy.calls_follow_disclosure {
            tracing::info!(
                "stateless requests may call a folded tool by name: calls follow the disclosure in sessions only"
            );
            options.policy.calls_follow_disclosure = false;
        }
        let name = match &view {
            Some(view) => format!("stateless ({view})"),
            None => "stateless".to_owned(),
        };
        self.start(&session, pending, name, None, options, servers);
        shared.insert(view, session.clone());
        session
    }
}

impl Session {
    /// Hands what the shared proxy sent of its own accord to the request it relates to: a
    /// listen stream by its subscription id, a request by its progress token, a log message to
    /// a request that asked for logs. A request of the server's is refused: the revision has
    /// none, server-to-client interactions ride in results.
    pub(super) fn deliver_related(&self, line: String, request: Option<Id>) {
        if let Some(id) = request {
            let reason = "the stateless revision carries no server requests; ask in a result (input required)";
            if self.input.try_send(jsonrpc::error_response(&id, INTERNAL_ERROR, reason).into_bytes()).is_err() {
                tracing::warn!("the server's request {id} could not be answered");
            }
            return;
        }
        let message = tool_mediator_core::json::from_str(&line).unwrap_or(Value::Null);
        let params = message.get("params");
        let related = params
            .and_then(|params| params.get("_meta").and_then(|meta| meta.get(SUBSCRIPTION_ID_KEY)))
            .or_else(|| params.and_then(|params| params.get("progressToken")))
            .map(Value::to_string);
        let stream = {
            let waiting = lock(&self.waiting);
            match &related {
                Some(related) => waiting.iter().find(|(id, _)| id.as_raw() == related).map(|(_, s)| s.sender.clone()),
                None if message["method"] == "notifications/message" => waiting
                    .values()
                    .find(|stream| stream.logs && !stream.sender.is_closed())
                    .map(|stream| stream.sender.clone()),
                None => None,
            }
        };
        match stream {
            Some(stream) => send_or_hold(stream, line),
            None => tracing::debug!("a message of the shared proxy no request waits for; dropped: {line:.200}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::revision::PROTOCOL_VERSION_KEY;

    #[test]
    fn a_request_goes_up_under_the_fronts_id_and_comes_back_under_the_clients() {
        let id = match Message::parse(br#"{"jsonrpc":"2.0","id":7,"method":"x"}"#) {
            Ok(Message::Request { id, .. }) => id,
            other => panic!("{other:?}"),
        };
        let params = json!({"_meta": {"progressToken": 7, PROTOCOL_VERSION_KEY: "2026-07-28"}});
        let (exchange, line) = Exchange::of(&id, "tools/call", Some(params));
        let sent: Value = serde_json::from_str(&line).unwrap();
        let ours: Value = serde_json::from_str(exchange.ours.as_raw()).unwrap();
        assert!(ours.as_str().is_some_and(|ours| ours.starts_with("http-")), "{ours}");
        assert_eq!((&sent["id"], &sent["params"]["_meta"]["progressToken"]), (&ours, &ours));
        let answer = exchange.restore(format!(r#"{{"jsonrpc":"2.0","id":{ours},"result":{{"n":1.50}}}}"#));
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":7,"result":{"n":1.50}}"#, "numbers as written");
        let progress =
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":{ours}}}}}"#);
        assert!(exchange.restore(progress).contains(r#""progressToken":7"#));
        let listen = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{{"_meta":{{"{SUBSCRIPTION_ID_KEY}":{ours}}}}}}}"#
        );
        assert!(exchange.restore(listen).contains(&format!(r#""{SUBSCRIPTION_ID_KEY}":7"#)));
    }

    #[test]
    fn errors_get_the_status_the_revision_prescribes() {
        let status = |code: i64| {
            answer_at_once(&format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{code},"message":"m"}}}}"#)).status()
        };
        assert_eq!(status(METHOD_NOT_FOUND), StatusCode::NOT_FOUND);
        for code in [INVALID_PARAMS, HEADER_MISMATCH, MISSING_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION] {
            assert_eq!(status(code), StatusCode::BAD_REQUEST, "{code}");
        }
        assert_eq!(status(INTERNAL_ERROR), StatusCode::OK, "a server's failure is an answer");
        assert_eq!(answer_at_once(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#).status(), StatusCode::OK);
    }

    #[test]
    fn mirrored_headers_must_say_what_the_body_says() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_static(value));
            }
            map
        };
        let call = json!({"name": "échec"});
        assert!(standard_headers(&headers(&[("mcp-method", "tools/list")]), "tools/list", None).is_ok());
        assert!(standard_headers(&headers(&[]), "tools/list", None).is_err(), "Mcp-Method is required");
        assert!(standard_headers(&headers(&[("mcp-method", "tools/call")]), "tools/list", None).is_err());
        let named = headers(&[("mcp-method", "tools/call"), ("mcp-name", "=?base64?w6ljaGVj?=")]);
        assert!(standard_headers(&named, "tools/call", Some(&call)).is_ok(), "a base64 name is decoded");
        let other = headers(&[("mcp-method", "tools/call"), ("mcp-name", "other")]);
        assert!(standard_headers(&other, "tools/call", Some(&call)).unwrap_err().contains("does not match"));
        let unnamed = headers(&[("mcp-method", "tools/call")]);
        assert!(standard_headers(&unnamed, "tools/call", Some(&call)).unwrap_err().contains("missing"));
    }
}
