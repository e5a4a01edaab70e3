//! A remote MCP server as the proxy's upstream, over Streamable HTTP (the client's side).
//!
//! The router speaks lines to its server whether that is a child process or this: [`connect`]
//! gives it a pair of in-process pipes, and a bridge turns each line into a POST and each
//! message that comes back (a JSON body, or the events of an SSE stream) into a line. The
//! session the server issues with its answer to `initialize` (`Mcp-Session-Id`) and the
//! protocol revision agreed go with every later request; once the client has said
//! `notifications/initialized`, a GET opens the stream the server sends its own requests and
//! notifications on, when it offers one. When the router closes its side, the session is ended
//! with DELETE. Messages pass as their sender wrote them but for line ends, which JSON allows
//! only between tokens. A request the server cannot be asked (unreachable, an HTTP error, a
//! stream that ends before the answer) is answered with a JSON-RPC error that says why.
//!
//! Requests never leave the origin the URL names: a redirect is followed only within it (see
//! [`tool_mediator::http::same_origin_redirects`]), no `Referer` is sent, and the URL is shown in logs
//! and errors without its user, password or query. A server silent for [`SILENCE`] (no header,
//! no byte of a body or stream) is let go, and a request the client cancels stops waiting.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{Stream, StreamExt as _};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinSet;

mod mirror;

use crate::upstream::auth::{AuthError, Challenge, CredentialStore, SignIn, SignInOptions};
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, Id, Message};
use tool_mediator_core::sync::lock;

/// A remote MCP server: its endpoint, the headers that go with every request to it, and how to
/// sign in when it asks (none when the headers carry `Authorization` of their own).
#[derive(Debug, Clone)]
pub struct Remote {
    pub url: reqwest::Url,
    pub headers: Vec<(String, String)>,
    pub sign_in: Option<Arc<SignIn>>,
}

impl Remote {
    /// A server at `url` with `headers`, signing in as `options` say when it asks, its tokens
    /// kept in the user's store. Not when the headers authorize the requests already, nor when
    /// the server is not HTTPS (or on this machine): a token would travel in the clear.
    pub fn new(url: reqwest::Url, headers: Vec<(String, String)>, options: SignInOptions) -> Remote {
        let authorized = headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        let sign_in = (!authorized)
            .then(|| {
                let store = CredentialStore::user()
                    .inspect_err(|error| tracing::info!("sign-ins are kept for this run only: {error}"))
                    .ok();
                SignIn::new(url.clone(), options, store)
                    .inspect_err(|error| tracing::info!("no sign-in to {}: {error}", tool_mediator::http::shown(&url)))
                    .ok()
            })
            .flatten()
            .map(Arc::new);
        Remote { url, headers, sign_in }
    }
}

const SESSION: &str = "mcp-session-id";
const PROTOCOL: &str = "mcp-protocol-version";
/// The headers that mirror a message's method and what it names (2026-07-28).
const METHOD: &str = "mcp-method";
const NAME: &str = "mcp-name";
/// Bytes in each in-process pipe between the router and the bridge.
const PIPE: usize = 256 * 1024;
/// Requests in flight at once; past this the router's writes wait.
const AT_ONCE: usize = 64;
/// Messages from the server waiting for the router to read them.
const WAITING: usize = 64;
/// How often the listening stream is opened again after failing, in a row, before giving up.
const LISTEN_TRIES: u32 = 5;
/// How long `initialize` may take to be answered, and the server's own stream to open.
const HANDSHAKE: Duration = Duration::from_secs(30);
/// How often an answer stream closed early is resumed before its request is failed.
const RESUME_TRIES: usize = 3;
/// How long the server may send nothing at all (no answer's headers, no byte of a body or an
/// event stream, keep-alive comments included) before the request is failed, or the stream
/// opened again: a tool may work this long without a word.
const SILENCE: Duration = Duration::from_secs(300);

/// What an SSE stream passed on.
struct Passed {
    answered: bool,
    resume: Resume,
}

/// Where an SSE stream can be taken up again: its last event's id, and how long the server
/// asked to wait first.
struct Resume {
    last_event: Option<String>,
    retry: Duration,
}

impl Default for Resume {
    fn default() -> Self {
        Resume { last_event: None, retry: Duration::from_millis(100) }
    }
}

/// The router's ends of a connection, and the bridge, which returns why it ended.
pub(crate) struct Connection {
    /// What the router writes: one message a line.
    pub(crate) input: DuplexStream,
    /// What the router reads: one message a line.
    pub(crate) output: DuplexStream,
    pub(crate) bridge: tokio::task::JoinHandle<String>,
}

/// Why a remote server cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    #[error("the header `{0}` cannot be sent: {1}")]
    Header(String, String),
    #[error("cannot make an HTTP client: {0}")]
    Client(reqwest::Error),
}

/// Connects the router to `remote`; each message from the server is held to `limit` bytes.
pub(crate) fn connect(remote: Remote, limit: usize) -> Result<Connection, RemoteError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &remote.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|error| RemoteError::Header(name.clone(), error.to_string()))?;
        let value =
            HeaderValue::from_str(value).map_err(|error| RemoteError::Header(name.clone(), error.to_string()))?;
        headers.append(header, value);
    }
    // Connecting fails fast; a stream stays open as long as the server keeps speaking on it.
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(SILENCE)
        .redirect(tool_mediator::http::same_origin_redirects())
        .referer(false)
        .tcp_nodelay(true)
        .build()
        .map_err(RemoteError::Client)?;
    let (input, requests) = tokio::io::duplex(PIPE);
    let (answers, output) = tokio::io::duplex(PIPE);
    let (messages, waiting) = mpsc::channel(WAITING);
    tokio::spawn(write_messages(waiting, answers));
    let shared = Arc::new(Shared {
        shown: tool_mediator::http::shown(&remote.url),
        url: remote.url,
        client,
        headers,
        sign_in: remote.sign_in,
        session: Mutex::new(None),
        protocol: Mutex::new(None),
        param_headers: mirror::ParamHeaders::default(),
        messages,
        limit,
        ended: tokio::sync::watch::channel(None).0,
        reached: std::sync::atomic::AtomicBool::new(false),
        refused: std::sync::atomic::AtomicU32::new(0),
    });
    let bridge = tokio::spawn(bridge(shared, requests));
    Ok(Connection { input, output, bridge })
}

struct Shared {
    url: reqwest::Url,
    /// The URL as logs and errors show it: no user, password or query.
    shown: String,
    client: reqwest::Client,
    headers: HeaderMap,
    sign_in: Option<Arc<SignIn>>,
    session: Mutex<Option<HeaderValue>>,
    protocol: Mutex<Option<HeaderValue>>,
    /// The arguments the server's tools ask to see in headers.
    param_headers: mirror::ParamHeaders,
    messages: mpsc::Sender<Vec<u8>>,
    limit: usize,
    /// Why the server ended the session, once it has: the bridge ends with it.
    ended: tokio::sync::watch::Sender<Option<String>>,
    /// Whether the server has answered an HTTP request yet.
    reached: std::sync::atomic::AtomicBool,
    /// Connections refused in a row since it last answered.
    refused: std::sync::atomic::AtomicU32,
}

/// How much of an HTTP error's body is read: a JSON-RPC error in it is passed on, the start of
/// anything else is quoted.
const ERROR_BODY: u64 = 64 * 1024;

/// Sign-ins one request may cause (one, then a step-up or two) before its refusal stands.
const SIGN_IN_TRIES: u32 = 3;
/// How often a request whose refusal started a sign-in looks whether the user is asked now.
const ASKING_LOOK: Duration = Duration::from_millis(50);
/// How long a request waits for a sign-in that asks the user in the browser: long enough for an
/// authorization server that approves at once (a session already signed in there, single
/// sign-on), far shorter than a user typing a password; past it the request is told how to
/// sign in, and the sign-in goes on.
const ASKING_GRACE: Duration = Duration::from_secs(10);

/// Connections refused in a row after which a server that answered before is taken as gone.
const GONE_AFTER: u32 = 3;

/// What the bridge needs to know of a message the router sends.
struct Sent {
    id: Option<Id>,
    method: Option<String>,
    /// The request a `notifications/cancelled` cancels.
    cancels: Option<Id>,
    /// What the request is about, which the `Mcp-Name` header mirrors: the tool or prompt's
    /// name, or the resource's URI.
    name: Option<String>,
    /// The protocol revision a request of the stateless revision names in its `_meta`.
    revision: Option<String>,
}

/// What `Mcp-Name` and `MCP-Protocol-Version` mirror of a request's params.
#[derive(Default, serde::Deserialize)]
struct Mirrored {
    name: Option<String>,
    uri: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<Meta>,
}

#[derive(serde::Deserialize)]
struct Meta {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    revision: Option<String>,
}

impl Sent {
    fn of(line: &str) -> Sent {
        match Message::parse(line.as_bytes()) {
            Ok(Message::Request { id, method, params }) => {
                let mirrored: Mirrored =
                    params.and_then(|params| serde_json::from_str(params.get()).ok()).unwrap_or_default();
                let name = match &*method {
                    "tools/call" | "prompts/get" => mirrored.name,
                    "resources/read" => mirrored.uri,
                    _ => None,
                };
                let revision = mirrored.meta.and_then(|meta| meta.revision);
                Sent { id: Some(id), method: Some(method.into_owned()), cancels: None, name, revision }
            }
            Ok(Message::Notification { method, params }) => {
                let cancels =
                    (method == "notifications/cancelled").then(|| jsonrpc::cancelled_request(params)).flatten();
                Sent { id: None, method: Some(method.into_owned()), cancels, ..Sent::nothing() }
            }
            _ => Sent::nothing(),
        }
    }

    /// No message: what the server sends of its own accord answers nothing sent.
    fn nothing() -> Sent {
        Sent { id: None, method: None, cancels: None, name: None, revision: None }
    }

    fn is(&self, method: &str) -> bool {
        self.method.as_deref() == Some(method)
    }
}

/// Writes each message the server sent as a line of the router's input.
async fn write_messages(mut waiting: mpsc::Receiver<Vec<u8>>, mut answers: DuplexStream) {
    while let Some(mut message) = waiting.recv().await {
        message.push(b'\n');
        if answers.write_all(&message).await.is_err() {
            return;
        }
    }
    let _ = answers.shutdown().await;
}

/// Sends every line of `requests` to the server, until the router closes them.
async fn bridge(shared: Arc<Shared>, requests: DuplexStream) -> String {
    let mut lines = BufReader::new(requests).lines();
    let slots = Arc::new(Semaphore::new(AT_ONCE));
    let mut posts = JoinSet::new();
    // The requests under way, by id: one the client cancels waits no more for its answer.
    let mut under_way: std::collections::HashMap<Id, tokio::task::AbortHandle> = std::collections::HashMap::new();
    // In a set, so it ends with the bridge however the bridge ends (aborted included).
    let mut listening = JoinSet::new();
    let mut ended = shared.ended.subscribe();
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            // The session is over: what comes next would fail too, so the proxy ends and its
            // client can start again.
            _ = ended.wait_for(Option::is_some) => break,
        };
        let Ok(Some(line)) = line else { break };
        let sent = Sent::of(&line);
        if sent.is("initialize") {
            // What follows goes in the session its answer opens: nothing is sent meanwhile.
            // Signing in, when the server asks, has its own time.
            let within =
                if shared.sign_in.is_some() { HANDSHAKE + crate::upstream::auth::SIGN_IN_WAIT } else { HANDSHAKE };
            let answered = tokio::time::timeout(within, shared.post(line, &sent)).await;
            match answered {
                Ok(true) if listening.is_empty() => {
                    // The server may ask the client something as soon as it hears
                    // `notifications/initialized`, on the stream it sends its own messages on:
                    // that stream is open before anything more is sent.
                    let (opened, open) = tokio::sync::oneshot::channel();
                    listening.spawn(shared.clone().listen(opened));
                    let _ = tokio::time::timeout(HANDSHAKE, open).await;
                }
                Ok(_) => {}
                Err(_) => {
                    let reason =
                        format!("the MCP server at {} did not answer initialize within {within:?}", shared.shown);
                    shared.fail(&sent, reason).await;
                }
            }
            continue;
        }
        if sent.is("notifications/initialized") {
            // Before anything that follows: a server refuses requests it gets before it.
            shared.post(line, &sent).await;
            continue;
        }
        if let Some(cancelled) = sent.cancels.as_ref().and_then(|id| under_way.remove(id)) {
            // The server hears of it below; its stream, which may never end, is closed now.
            cancelled.abort();
        }
        let Ok(slot) = slots.clone().acquire_owned().await else { break };
        let poster = shared.clone();
        let id = sent.id.clone();
        let post = posts.spawn(async move {
            poster.post(line, &sent).await;
            drop(slot);
        });
        if let Some(id) = id {
            under_way.insert(id, post);
        }
        // Finished requests are let go as others come.
        while posts.try_join_next().is_some() {}
        under_way.retain(|_, post| !post.is_finished());
    }
    listening.abort_all();
    posts.abort_all();
    shared.end_session().await;
    let reason = shared.ended.borrow().clone();
    reason.unwrap_or_else(|| format!("the connection to {} was closed", shared.shown))
}

impl Shared {
    /// A request to the server with the session's headers, and those that mirror `sent` (its
    /// method, what it names, the revision it speaks); with the sign-in's `Authorization` too,
    /// which is returned (to tell, on a refusal, which token was refused).
    async fn request(&self, method: reqwest::Method, sent: &Sent) -> (reqwest::RequestBuilder, Option<String>) {
        let mut request = self.client.request(method, self.url.clone()).headers(self.headers.clone());
        let authorization = match &self.sign_in {
            Some(sign_in) => sign_in.authorization().await,
            None => None,
        };
        if let Some(authorization) = &authorization
            && let Ok(mut value) = HeaderValue::from_str(authorization)
        {
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        if let Some(session) = lock(&self.session).clone() {
            request = request.header(SESSION, session);
        }
        // A stateless request names its revision itself; the others go in the one agreed.
        let revision = sent.revision.as_deref().and_then(|revision| HeaderValue::from_str(revision).ok());
        if let Some(protocol) = revision.or_else(|| lock(&self.protocol).clone()) {
            request = request.header(PROTOCOL, protocol);
        }
        // Mirrored as the 2026-07-28 revision asks, for whoever routes on them; a server of an
        // earlier revision reads the body alone.
        if let Some(method) = sent.method.as_deref().and_then(|method| HeaderValue::from_str(method).ok()) {
            request = request.header(METHOD, method);
        }
        let name = sent.name.as_deref().map(crate::wire::revision::encode_header_value);
        let name = name.filter(|name| name.len() <= mirror::VALUE_LIMIT);
        if let Some(name) = name.and_then(|name| HeaderValue::from_str(&name).ok()) {
            request = request.header(NAME, name);
        }
        (request, authorization)
    }

    /// POSTs one message and passes on what comes back; whether the server took it.
    async fn post(&self, line: String, sent: &Sent) -> bool {
        let param_headers = if sent.is("tools/call") && self.param_headers.any() {
            let params = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|mut call| call.get_mut("params").map(serde_json::Value::take));
            params.map(|params| self.param_headers.of_call(&params)).unwrap_or_default()
        } else {
            Vec::new()
        };
        let body = bytes::Bytes::from(line);
        // Sent again after a sign-in the server's refusal asked for, a few times at most.
        let mut sign_ins = 0;
        let response = loop {
            let (mut request, used) = self.request(reqwest::Method::POST, sent).await;
            for (name, value) in &param_headers {
                request = request.header(name, value);
            }
            let request = request
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(body.clone());
            let response = self.send(request, sent).await;
            let Some(response) = response else { return false };
            let status = response.status();
            let Some(sign_in) = &self.sign_in else { break response };
            if status.is_success() && used.is_some() {
                sign_in.accepted();
            }
            let forbidden = status == StatusCode::FORBIDDEN;
            if !(status == StatusCode::UNAUTHORIZED || forbidden) || sign_ins >= SIGN_IN_TRIES {
                break response;
            }
            sign_ins += 1;
            // A refusal without a Bearer challenge asks for something else (an API key): not ours.
            let Some(challenge) = Challenge::of(
                response
                    .headers()
                    .get_all(reqwest::header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|value| value.to_str().ok()),
            ) else {
                break response;
            };
            let signing = {
                let (sign_in, used) = (sign_in.clone(), used.clone());
                tokio::spawn(async move { sign_in.refused(forbidden, &challenge, used.as_deref()).await })
            };
            let outcome = match self.unless_the_user_is_asked(sign_in, signing, sent, forbidden).await {
                Some(outcome) => outcome,
                None => {
                    // The sign-in goes on without this request, which is told how to sign in now
                    // rather than held for as long as the user takes in the browser.
                    self.fail(sent, sign_in.what_to_do()).await;
                    return false;
                }
            };
            match outcome {
                Ok(true) => continue,
                Ok(false) => break response,
                Err(error) => {
                    let reason = format!("the MCP server at {} asks to sign in, which failed: {error}", self.shown);
                    tracing::warn!("{reason}");
                    self.fail(sent, reason).await;
                    return false;
                }
            }
        };
        self.took(response, sent).await
    }

    /// What `signing` (the sign-in, refresh or step-up a refusal of `sent` started) comes to;
    /// `None` when a sign-in after a 401 asks the user in the browser and is not done within
    /// [`ASKING_GRACE`]. `initialize` waits
    /// for them (the handshake has that long), and so does a step-up (`forbidden`: the user is
    /// asked to grant what this very request needs, and it is sent again once they have).
    async fn unless_the_user_is_asked(
        &self,
        sign_in: &SignIn,
        mut signing: tokio::task::JoinHandle<Result<bool, AuthError>>,
        sent: &Sent,
        forbidden: bool,
    ) -> Option<Result<bool, AuthError>> {
        let waited = |joined: Result<Result<bool, AuthError>, tokio::task::JoinError>| {
            joined.unwrap_or_else(|error| Err(AuthError::Refused(format!("the sign-in ended: {error}"))))
        };
        if sent.is("initialize") || forbidden {
            return Some(waited(signing.await));
        }
        let mut asked_since = None;
        loop {
            tokio::select! {
                joined = &mut signing => return Some(waited(joined)),
                () = tokio::time::sleep(ASKING_LOOK) => {
                    if sign_in.asking_the_user() {
                        let since = *asked_since.get_or_insert_with(tokio::time::Instant::now);
                        if since.elapsed() >= ASKING_GRACE {
                            return None;
                        }
                    }
                }
            }
        }
    }

    /// Sends `request`; `None`, once `sent` is failed, when the server cannot be reached.
    async fn send(&self, request: reqwest::RequestBuilder, sent: &Sent) -> Option<reqwest::Response> {
        match request.send().await {
            Ok(response) => Some(response),
            Err(error) => {
                // Its URL may hold a secret in its query; the origin is named below.
                let error = error.without_url();
                let reason = format!(
                    "cannot reach the MCP server at {}: {}",
                    self.shown,
                    tool_mediator_core::error::with_causes(&error)
                );
                self.unreachable(&error, &reason);
                self.fail(sent, reason).await;
                None
            }
        }
    }

    /// Passes on what the server answered to `sent`; whether it took it.
    async fn took(&self, response: reqwest::Response, sent: &Sent) -> bool {
        self.reached.store(true, Ordering::Relaxed);
        self.refused.store(0, Ordering::Relaxed);
        let status = response.status();
        if sent.is("initialize")
            && status.is_success()
            && let Some(session) = response.headers().get(SESSION)
        {
            *lock(&self.session) = Some(session.clone());
        }
        if !status.is_success() {
            // A redirect left unfollowed (to a place that is not HTTP): where to, by origin only.
            let moved = response.headers().get(reqwest::header::LOCATION).and_then(|to| to.to_str().ok());
            let moved = moved
                .filter(|_| status.is_redirection())
                .and_then(|to| self.url.join(to).ok())
                .map(|to| tool_mediator::http::origin_of(&to));
            let body = tool_mediator::http::read_limited(response, ERROR_BODY).await.unwrap_or_default();
            // A JSON-RPC error sent with an HTTP error status (as the 2026-07-28 revision sends
            // one for a method it does not have) answers the request itself: passed on as it is.
            let answers = matches!(
                (&sent.id, Message::parse(&body)),
                (Some(id), Ok(Message::Response { id: answered, error: Some(_), .. })) if *id == answered
            );
            if answers && !(status == StatusCode::NOT_FOUND && lock(&self.session).is_some()) {
                self.pass(body, sent).await;
                return false;
            }
            let body = String::from_utf8_lossy(&body[..body.len().min(1024)]).into_owned();
            let reason = match (status, moved) {
                (StatusCode::NOT_FOUND, _) if lock(&self.session).is_some() => {
                    let reason = format!("the MCP server at {} ended the session (HTTP 404)", self.shown);
                    self.ended.send_replace(Some(reason.clone()));
                    reason
                }
                (_, Some(moved)) => format!(
                    "the MCP server at {} answered HTTP {status}, a redirect to {moved}, which is not followed",
                    self.shown
                ),
                _ => format!("the MCP server at {} answered HTTP {status}: {}", self.shown, body.trim()),
            };
            self.fail(sent, reason).await;
            return false;
        }
        if sent.id.is_none() {
            return true;
        }
        if status == StatusCode::ACCEPTED {
            // A request taken but not answered: its answer would never come.
            self.fail(
                sent,
                format!("the MCP server at {} took the request without answering it (HTTP 202)", self.shown),
            )
            .await;
            return true;
        }
        let events = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|kind| kind.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
        let answered = if events {
            let passed = self.pass_events(events_of(response), sent).await;
            passed.answered || self.resume(passed.resume, sent).await
        } else {
            match tool_mediator::http::read_limited(response, self.limit as u64).await {
                Ok(body) => self.pass(body, sent).await,
                Err(error) => {
                    let reason = format!("the MCP server's answer was unusable: {error}");
                    self.fail(sent, reason).await;
                    return false;
                }
            }
        };
        if !answered {
            self.fail(sent, format!("the MCP server at {} closed its answer stream before answering", self.shown))
                .await;
        }
        true
    }

    /// Passes one message on; whether it answers `sent`.
    async fn pass(&self, mut message: Vec<u8>, sent: &Sent) -> bool {
        // Line ends are whitespace between tokens in JSON; a line carries one message.
        for byte in &mut message {
            if *byte == b'\n' || *byte == b'\r' {
                *byte = b' ';
            }
        }
        let (answers, related) = match (&sent.id, Message::parse(&message)) {
            (Some(id), Ok(Message::Response { id: answered, .. })) => (*id == answered, None),
            // A request or a notification on a request's stream is that request's (a log message
            // of a call, a sampling it needs): noted, so a pool can tell whose it is.
            (Some(id), Ok(Message::Request { .. } | Message::Notification { .. })) => (false, Some(id.clone())),
            _ => (false, None),
        };
        if let Some(noted) = related.and_then(|id| jsonrpc::with_related_request(&message, &id)) {
            message = noted;
        }
        if sent.is("initialize") && answers {
            self.note_protocol(&message);
        }
        if sent.is("tools/list") && answers {
            self.param_headers.learn(&message);
        }
        // The router reads the line and says what is wrong with it if anything is.
        let _ = self.messages.send(message).await;
        answers
    }

    /// Passes on each message of an SSE stream; whether one answered `sent`, and where the
    /// stream can be resumed.
    async fn pass_events<S, E>(&self, stream: S, sent: &Sent) -> Passed
    where
        S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
        E: std::error::Error + Send + Sync + 'static,
    {
        let mut events = sse_stream::SseByteStream::new(Bounded::new(stream, self.limit));
        let mut answered = false;
        let mut resume = Resume::default();
        while let Some(event) = events.next().await {
            tracing::debug!("event from {}: {event:?}", self.shown);
            if let Ok(event) = &event {
                if let Some(id) = &event.id {
                    resume.last_event = Some(id.clone());
                }
                if let Some(retry) = event.retry {
                    resume.retry = Duration::from_millis(retry.min(60_000));
                }
            }
            match event {
                Ok(event) => match event.data {
                    // A priming event (an id for resuming, no message) passes nothing on.
                    Some(data) if !data.trim().is_empty() => {
                        answered |= self.pass(data.into_bytes(), sent).await;
                        // The answer ends a request's stream, whether the server closes it or not.
                        if answered {
                            break;
                        }
                    }
                    _ => {}
                },
                Err(error) => {
                    tracing::warn!("the MCP server's event stream broke: {error}");
                    break;
                }
            }
        }
        Passed { answered, resume }
    }

    /// A request's answer stream closed before its answer: resumed from its last event with
    /// GET and `Last-Event-ID`, after the wait the server asked for, a few times at most.
    async fn resume(&self, mut resume: Resume, sent: &Sent) -> bool {
        for _ in 0..RESUME_TRIES {
            let Some(last_event) = resume.last_event.clone() else { return false };
            tokio::time::sleep(resume.retry).await;
            let (request, _) = self.request(reqwest::Method::GET, &Sent::nothing()).await;
            let request = request.header(ACCEPT, "text/event-stream").header("last-event-id", last_event);
            let response = match request.send().await {
                Ok(response) if response.status().is_success() => response,
                // Not resumable here: the answer is lost, and said so.
                _ => return false,
            };
            let passed = self.pass_events(events_of(response), sent).await;
            if passed.answered {
                return true;
            }
            resume = Resume { last_event: passed.resume.last_event.or(resume.last_event), ..passed.resume };
        }
        false
    }

    /// The protocol revision agreed, for the header every later request carries.
    fn note_protocol(&self, message: &[u8]) {
        #[derive(serde::Deserialize)]
        struct Answer {
            result: Option<Agreed>,
        }
        #[derive(serde::Deserialize)]
        struct Agreed {
            #[serde(rename = "protocolVersion")]
            protocol_version: Option<String>,
        }
        let agreed = serde_json::from_slice::<Answer>(message).ok().and_then(|answer| answer.result?.protocol_version);
        if let Some(value) = agreed.and_then(|revision| HeaderValue::from_str(&revision).ok()) {
            *lock(&self.protocol) = Some(value);
        }
    }

    /// Answers `sent` with an error saying why, when it is a request; else says so in the log.
    async fn fail(&self, sent: &Sent, reason: String) {
        match &sent.id {
            Some(id) => {
                let answer = jsonrpc::error_response(id, INTERNAL_ERROR, &reason);
                let _ = self.messages.send(answer.into_bytes()).await;
            }
            None => tracing::warn!("{reason}"),
        }
    }

    /// Listens on the stream the server sends its own messages on, while it offers one; says
    /// when the server first answered (the stream is open, or not offered).
    async fn listen(self: Arc<Self>, opened: tokio::sync::oneshot::Sender<()>) {
        let none = Sent::nothing();
        let mut opened = Some(opened);
        let mut failures = 0;
        while failures < LISTEN_TRIES {
            let (request, _) = self.request(reqwest::Method::GET, &none).await;
            let request = request.header(ACCEPT, "text/event-stream");
            let response = request.send().await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            match response {
                // No stream offered: the server speaks only in answers.
                Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                Ok(response) if response.status().is_success() => {
                    failures = 0;
                    self.refused.store(0, Ordering::Relaxed);
                    let _ = self.pass_events(events_of(response), &none).await;
                }
                Ok(response) => {
                    failures += 1;
                    tracing::warn!(
                        "the MCP server at {} refused its event stream: HTTP {}",
                        self.shown,
                        response.status()
                    );
                }
                Err(error) => {
                    failures += 1;
                    let error = error.without_url();
                    let reason = format!(
                        "cannot open the MCP server's event stream: {}",
                        tool_mediator_core::error::with_causes(&error)
                    );
                    tracing::warn!("{reason}");
                    self.unreachable(&error, &reason);
                }
            }
            tokio::time::sleep(Duration::from_secs(1) * failures.max(1)).await;
        }
    }

    /// A server that answered before and cannot be connected to now, [`GONE_AFTER`] times in a
    /// row, has gone away: the bridge ends, as for a session the server ended (a gateway starts
    /// it again; the proxy ends).
    fn unreachable(&self, error: &reqwest::Error, reason: &str) {
        if !error.is_connect() || !self.reached.load(Ordering::Relaxed) {
            return;
        }
        // Several in a row: one refused connection may be a blip (a restart behind a balancer).
        if self.refused.fetch_add(1, Ordering::Relaxed) + 1 >= GONE_AFTER {
            self.ended.send_replace(Some(format!("the MCP server went away: {reason}")));
        }
    }

    /// Ends the session the server issued, if it did.
    async fn end_session(&self) {
        if lock(&self.session).is_none() {
            return;
        }
        let (request, _) = self.request(reqwest::Method::DELETE, &Sent::nothing()).await;
        let ending = request.timeout(Duration::from_secs(2)).send();
        if let Err(error) = ending.await.map_err(reqwest::Error::without_url) {
            tracing::info!(
                "could not end the session with the MCP server: {}",
                tool_mediator_core::error::with_causes(&error)
            );
        }
    }
}

/// The body of `response` as a stream, its errors without the URL (whose query may hold a
/// secret).
fn events_of(response: reqwest::Response) -> impl Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Unpin {
    response.bytes_stream().map(|chunk| chunk.map_err(reqwest::Error::without_url))
}

/// A byte stream that fails once `limit` bytes come without an event's end (a blank line)
/// between them: an event is never held past the limit, however the server sends it.
struct Bounded<S> {
    inner: S,
    limit: usize,
    since_end: usize,
    /// Line ends seen in a row (carriage returns aside), across chunks.
    line_ends: u8,
}

impl<S> Bounded<S> {
    fn new(inner: S, limit: usize) -> Self {
        Bounded { inner, limit, since_end: 0, line_ends: 0 }
    }
}

impl<S, E> Stream for Bounded<S>
where
    S: Stream<Item = Result<bytes::Bytes, E>> + Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<bytes::Bytes, std::io::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        let chunk = match std::task::ready!(this.inner.poll_next_unpin(cx)) {
            None => return std::task::Poll::Ready(None),
            Some(Err(error)) => return std::task::Poll::Ready(Some(Err(std::io::Error::other(error)))),
            Some(Ok(chunk)) => chunk,
        };
        for &byte in chunk.iter() {
            match byte {
                b'\n' => {
                    this.line_ends = this.line_ends.saturating_add(1);
                    if this.line_ends >= 2 {
                        this.since_end = 0;
                        continue;
                    }
                }
                b'\r' => {}
                _ => this.line_ends = 0,
            }
            this.since_end += 1;
        }
        if this.since_end > this.limit {
            let message = format!("an event passed {} bytes, the proxy's limit for one message", this.limit);
            return std::task::Poll::Ready(Some(Err(std::io::Error::other(message))));
        }
        std::task::Poll::Ready(Some(Ok(chunk)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(parts: &[&'static str]) -> impl Stream<Item = Result<bytes::Bytes, std::io::Error>> + Unpin {
        futures_util::stream::iter(
            parts.iter().map(|part| Ok(bytes::Bytes::from_static(part.as_bytes()))).collect::<Vec<_>>(),
        )
    }

    #[tokio::test]
    async fn events_under_the_limit_pass_however_they_are_cut() {
        // Each event is 15 bytes but for its last line end, the second cut in the middle of it.
        let stream = Bounded::new(chunks(&["data: 12345\r\n", "\ndata: 678", "90\r\n\r", "\n"]), 15);
        let passed: Vec<_> = stream.collect().await;
        assert!(passed.iter().all(Result::is_ok), "{passed:?}");
    }

    #[tokio::test]
    async fn an_event_past_the_limit_fails_the_stream() {
        let stream = Bounded::new(chunks(&["data: 1234567", "\ndata: 89012\n", "\n"]), 16);
        let passed: Vec<_> = stream.collect().await;
        let error = passed.iter().find_map(|item| item.as_ref().err()).expect("refused");
        assert!(error.to_string().contains("16 bytes"), "{error}");
    }
}
