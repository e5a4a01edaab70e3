//! The proxy's client side over Streamable HTTP (`--listen`): one MCP endpoint, `/mcp`, and a
//! proxy session behind it for each client session.
//!
//! A client opens a session with `initialize` (POST without `Mcp-Session-Id`); the answer names
//! the session, and every later request carries it. Each session runs the proxy as it runs over
//! stdio ([`run_until_gone`](super::run_until_gone)) with its own server (a child process, or a
//! connection to a remote one) and its own mediator session, its client's side a pair of
//! in-process pipes: a POSTed request becomes a line, and its answer comes back as the event
//! that ends the POST's SSE stream (or as the JSON body, for a client that accepts no stream).
//! What the server sends of its own accord (requests such as a sampling, notifications such as
//! `tools/list_changed`) goes on the session's GET stream, or on a POST stream still open when
//! there is none. DELETE ends the session, and with it its server.
//!
//! As the specification asks, it binds where it is told (loopback unless told otherwise),
//! refuses a browser's request from another origin (403), and, with a token, any request
//! without it (401). A body that is not JSON-RPC gets a parse error, a session nobody issued
//! 404, a request before `initialize` 400.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::Stream;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::mpsc;

use super::jsonrpc::{self, INVALID_REQUEST, Id, Message};
use super::{Client, ProxyOptions, Upstream};
use crate::lock;

const SESSION: &str = "mcp-session-id";
/// Client sessions at once; past this a new one is refused (503).
const MAX_SESSIONS: usize = 256;
/// Messages waiting for one open stream before the router's output waits for it.
const STREAM_QUEUE: usize = 64;
/// Bytes in each in-process pipe between a session's HTTP side and its proxy.
const PIPE: usize = 256 * 1024;

/// Where the proxy listens, and who may talk to it.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    pub address: SocketAddr,
    /// Requests must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// A session nobody has used for this long, with no stream open, is ended with its server:
    /// a client that goes without DELETE leaves nothing running for good.
    pub idle: std::time::Duration,
}

/// Makes the server a new session stands in front of.
pub type MakeUpstream = Arc<dyn Fn() -> Upstream + Send + Sync>;

/// Serves the proxy over Streamable HTTP on `listener` until asked to stop (SIGTERM, SIGINT);
/// then every session's server is ended.
pub async fn serve(
    listener: tokio::net::TcpListener,
    listen: ListenOptions,
    proxy: ProxyOptions,
    upstream: MakeUpstream,
) -> std::io::Result<()> {
    let limit = proxy.max_message_bytes;
    let state = Arc::new(Front { listen, proxy, upstream, sessions: Mutex::new(HashMap::new()) });
    let app = axum::Router::new()
        .route("/mcp", post(on_post).get(on_get).delete(on_delete))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state.clone());
    let stopping = async {
        super::stop_signal().await;
        tracing::info!("asked to stop; ending every session's server");
    };
    let janitor = tokio::spawn(end_idle_sessions(state.clone()));
    let served = axum::serve(listener, app).with_graceful_shutdown(stopping).await;
    janitor.abort();
    let sessions: Vec<Arc<Session>> = lock(&state.sessions).drain().map(|(_, session)| session).collect();
    for session in sessions {
        session.end().await;
    }
    served
}

struct Front {
    listen: ListenOptions,
    proxy: ProxyOptions,
    upstream: MakeUpstream,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

/// One client session: the proxy behind it, and the streams waiting for what it writes.
struct Session {
    /// The proxy's input: one message a line. `None` once the session is ending.
    input: tokio::sync::Mutex<Option<DuplexStream>>,
    /// POSTed requests waiting for their answer, by id as written, each with its stream.
    waiting: Mutex<HashMap<Id, mpsc::Sender<String>>>,
    /// The GET stream, when the client has one open.
    listening: Mutex<Option<mpsc::Sender<String>>>,
    proxy: Mutex<Option<tokio::task::JoinHandle<()>>>,
    last_used: Mutex<std::time::Instant>,
}

/// Ends, every so often, the sessions idle for longer than the options allow.
async fn end_idle_sessions(front: Arc<Front>) {
    let every =
        (front.listen.idle / 4).clamp(std::time::Duration::from_millis(100), std::time::Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        let idle: Vec<(String, Arc<Session>)> = lock(&front.sessions)
            .iter()
            .filter(|(_, session)| session.is_idle(front.listen.idle))
            .map(|(id, session)| (id.clone(), session.clone()))
            .collect();
        for (id, session) in idle {
            tracing::info!("session {id} idle for {:?}; ending it", front.listen.idle);
            lock(&front.sessions).remove(&id);
            session.end().await;
        }
    }
}

impl Session {
    fn used(&self) {
        *lock(&self.last_used) = std::time::Instant::now();
    }

    /// Unused for `idle`, no request waiting and no stream open.
    fn is_idle(&self, idle: std::time::Duration) -> bool {
        let streams = lock(&self.waiting).values().any(|stream| !stream.is_closed())
            || lock(&self.listening).as_ref().is_some_and(|stream| !stream.is_closed());
        !streams && lock(&self.last_used).elapsed() >= idle
    }

    /// Writes one message to the proxy; false when the session has ended.
    async fn send(&self, message: &[u8]) -> bool {
        self.used();
        let mut input = self.input.lock().await;
        let Some(pipe) = input.as_mut() else { return false };
        let written = async {
            pipe.write_all(message).await?;
            pipe.write_all(b"\n").await?;
            pipe.flush().await
        };
        written.await.is_ok()
    }

    /// Ends the session: its proxy's input closes, and the proxy ends its server.
    async fn end(&self) {
        drop(self.input.lock().await.take());
        let proxy = lock(&self.proxy).take();
        if let Some(proxy) = proxy {
            let _ = proxy.await;
        }
    }

    /// Hands a line the proxy wrote to whoever waits for it.
    async fn deliver(&self, line: String) {
        let answered = match Message::parse(line.as_bytes()) {
            Ok(Message::Response { id, .. }) => lock(&self.waiting).remove(&id),
            _ => None,
        };
        let stream = answered.or_else(|| {
            // Of its own accord: the GET stream, else a POST stream still open.
            let listening = lock(&self.listening).clone().filter(|stream| !stream.is_closed());
            listening.or_else(|| lock(&self.waiting).values().find(|stream| !stream.is_closed()).cloned())
        });
        match stream {
            Some(stream) => {
                let _ = stream.send(line).await;
            }
            None => tracing::warn!("the client has no stream open for a message of the server's; dropped"),
        }
    }
}

impl Front {
    /// Refuses a request from another origin, or without the token.
    fn check(&self, headers: &HeaderMap) -> Result<(), Refused> {
        if let Some(origin) = headers.get(header::ORIGIN) {
            let local = origin
                .to_str()
                .ok()
                .and_then(|origin| reqwest::Url::parse(origin).ok())
                .is_some_and(|origin| matches!(origin.host_str(), Some("127.0.0.1" | "localhost" | "[::1]")));
            if !local {
                return Err(Refused(StatusCode::FORBIDDEN, "requests from other origins are refused"));
            }
        }
        if let Some(token) = &self.listen.token {
            let given = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
            if given.and_then(|value| value.strip_prefix("Bearer ")) != Some(token.as_str()) {
                return Err(Refused(StatusCode::UNAUTHORIZED, "a bearer token is required"));
            }
        }
        Ok(())
    }

    fn session(&self, headers: &HeaderMap) -> Result<Option<(String, Arc<Session>)>, Refused> {
        let Some(id) = headers.get(SESSION) else { return Ok(None) };
        let id = id.to_str().unwrap_or_default().to_owned();
        match lock(&self.sessions).get(&id) {
            Some(session) => Ok(Some((id, session.clone()))),
            None => Err(Refused(StatusCode::NOT_FOUND, "no such session")),
        }
    }

    /// A new session and its proxy.
    fn open(self: &Arc<Self>) -> Result<(String, Arc<Session>), Refused> {
        if lock(&self.sessions).len() >= MAX_SESSIONS {
            return Err(Refused(StatusCode::SERVICE_UNAVAILABLE, "too many sessions at once"));
        }
        let id = format!("{:032x}", fastrand::u128(..));
        let (input, proxy_in) = tokio::io::duplex(PIPE);
        let (proxy_out, output) = tokio::io::duplex(PIPE);
        let session = Arc::new(Session {
            input: tokio::sync::Mutex::new(Some(input)),
            waiting: Mutex::new(HashMap::new()),
            listening: Mutex::new(None),
            proxy: Mutex::new(None),
            last_used: Mutex::new(std::time::Instant::now()),
        });
        let client = Client { input: proxy_in, output: proxy_out, gone: std::future::pending::<()>() };
        let (options, upstream) = (self.proxy.clone(), (self.upstream)());
        let front = self.clone();
        let ending = id.clone();
        let proxy = tokio::spawn(async move {
            match super::run_until_gone(options, upstream, client).await {
                Ok(ending) => tracing::info!("session {ending:?} ended"),
                Err(error) => tracing::warn!("session could not start its server: {error}"),
            }
            drop(lock(&front.sessions).remove(&ending));
        });
        *lock(&session.proxy) = Some(proxy);
        let reader = session.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(output).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                reader.deliver(line).await;
            }
            // The proxy ended: nothing more will answer.
            lock(&reader.waiting).clear();
            lock(&reader.listening).take();
        });
        lock(&self.sessions).insert(id.clone(), session.clone());
        Ok((id, session))
    }
}

async fn on_post(State(front): State<Arc<Front>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(refused) = front.check(&headers) {
        return refused.into_response();
    }
    let message = match Message::parse(&body) {
        Ok(message) => message,
        Err(malformed) => {
            let id = malformed.id.unwrap_or_else(Id::null);
            return json_error(StatusCode::BAD_REQUEST, &id, malformed.code, &malformed.reason);
        }
    };
    let (id, initialize) = match &message {
        Message::Request { id, method, .. } => (Some(id.clone()), method == "initialize"),
        Message::Batch(_) => {
            return json_error(StatusCode::BAD_REQUEST, &Id::null(), INVALID_REQUEST, "one message per request");
        }
        _ => (None, false),
    };
    let (session_id, session) = match front.session(&headers) {
        Err(refused) => return refused.into_response(),
        Ok(Some(found)) => found,
        Ok(None) if initialize => match front.open() {
            Ok(opened) => opened,
            Err(refused) => return refused.into_response(),
        },
        Ok(None) => {
            let id = id.unwrap_or_else(Id::null);
            return json_error(StatusCode::BAD_REQUEST, &id, INVALID_REQUEST, "no session: send initialize first");
        }
    };
    let Some(id) = id else {
        // A notification or an answer: taken, nothing to wait for.
        return match session.send(&body).await {
            true => StatusCode::ACCEPTED.into_response(),
            false => refusal(StatusCode::NOT_FOUND, "the session has ended"),
        };
    };
    let (stream, answers) = mpsc::channel(STREAM_QUEUE);
    if lock(&session.waiting).insert(id.clone(), stream).is_some() {
        return json_error(StatusCode::BAD_REQUEST, &id, INVALID_REQUEST, "a request with this id is already waiting");
    }
    if !session.send(&body).await {
        lock(&session.waiting).remove(&id);
        return refusal(StatusCode::NOT_FOUND, "the session has ended");
    }
    let wants_stream = headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    let mut response = if wants_stream {
        Sse::new(until_answered(answers, id)).keep_alive(KeepAlive::default()).into_response()
    } else {
        answer_as_json(answers, &id).await
    };
    if let Ok(value) = HeaderValue::from_str(&session_id) {
        response.headers_mut().insert(SESSION, value);
    }
    response
}

/// The messages for one POSTed request, ending with its answer.
fn until_answered(answers: mpsc::Receiver<String>, id: Id) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold((answers, false), move |(mut answers, answered)| {
        let id = id.clone();
        async move {
            if answered {
                return None;
            }
            let line = answers.recv().await?;
            let last = matches!(Message::parse(line.as_bytes()), Ok(Message::Response { id: of, .. }) if of == id);
            Some((Ok(Event::default().event("message").data(line)), (answers, last)))
        }
    })
}

/// Every message sent to a stream, as events.
fn events(messages: mpsc::Receiver<String>) -> impl Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(messages, |mut messages| async move {
        let line = messages.recv().await?;
        Some((Ok(Event::default().event("message").data(line)), messages))
    })
}

/// The answer alone, for a client that accepts no stream; what the server sends meanwhile
/// goes to its GET stream.
async fn answer_as_json(mut answers: mpsc::Receiver<String>, id: &Id) -> Response {
    while let Some(line) = answers.recv().await {
        if matches!(Message::parse(line.as_bytes()), Ok(Message::Response { id: answered, .. }) if answered == *id) {
            return ([(header::CONTENT_TYPE, "application/json")], line).into_response();
        }
    }
    refusal(StatusCode::NOT_FOUND, "the session ended before answering")
}

async fn on_get(State(front): State<Arc<Front>>, headers: HeaderMap) -> Response {
    if let Err(refused) = front.check(&headers) {
        return refused.into_response();
    }
    let session = match front.session(&headers) {
        Err(refused) => return refused.into_response(),
        Ok(Some((_, session))) => session,
        Ok(None) => return refusal(StatusCode::BAD_REQUEST, "no session: send initialize first"),
    };
    let (stream, messages) = mpsc::channel(STREAM_QUEUE);
    *lock(&session.listening) = Some(stream);
    Sse::new(events(messages)).keep_alive(KeepAlive::default()).into_response()
}

async fn on_delete(State(front): State<Arc<Front>>, headers: HeaderMap) -> Response {
    if let Err(refused) = front.check(&headers) {
        return refused.into_response();
    }
    match front.session(&headers) {
        Err(refused) => refused.into_response(),
        Ok(None) => refusal(StatusCode::BAD_REQUEST, "no session named"),
        Ok(Some((id, session))) => {
            lock(&front.sessions).remove(&id);
            session.end().await;
            StatusCode::OK.into_response()
        }
    }
}

/// A request refused before it reaches a session: its status, and why, for whoever reads it.
struct Refused(StatusCode, &'static str);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let Refused(status, reason) = self;
        (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{reason}\n")).into_response()
    }
}

fn refusal(status: StatusCode, reason: &'static str) -> Response {
    Refused(status, reason).into_response()
}

fn json_error(status: StatusCode, id: &Id, code: i64, reason: &str) -> Response {
    let body = jsonrpc::error_response(id, code, reason);
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
