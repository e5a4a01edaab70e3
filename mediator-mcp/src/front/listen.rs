//! The proxy's client side over Streamable HTTP (`--listen`): one MCP endpoint, `/mcp`, and a
//! proxy session behind it for each client session.
//!
//! A client opens a session with `initialize` (POST without `Mcp-Session-Id`); the answer names
//! the session, and every later request carries it. Each session runs the proxy as it runs over
//! stdio ([`serve`](crate::proxy::serve)) with its own mediator session, connected to the servers
//! every session shares ([`pool`](crate::upstream::pool)), and to servers of its own (child
//! processes, or connections to remote ones) for those of `"scope": "session"`; its client's side a pair of
//! in-process pipes: a POSTed request becomes a line, and its answer comes back as the event
//! that ends the POST's SSE stream (or as the JSON body, for a client that accepts no stream).
//! What the server sends of its own accord (requests such as a sampling, notifications such as
//! `tools/list_changed`) goes on the session's GET stream, or on a POST stream still open when
//! there is none. DELETE ends the session, and with it its server.
//!
//! The stateless revision (2026-07-28) is served on the same endpoint: a request whose `_meta`
//! envelope (or `MCP-Protocol-Version` header) says so needs no handshake and no session, and
//! goes to one proxy shared by every stateless request (see [`stateless`]).
//!
//! As the specification asks, it binds where it is told (loopback unless told otherwise),
//! refuses a browser's request from another origin (403), and, with a token, any request
//! without it (401). As an OAuth protected resource ([`access`](crate::front::access)) it publishes
//! its metadata at `/.well-known/oauth-protected-resource` (and with `/mcp` after it) and takes
//! only bearer tokens its issuer signed for it. A body that is not JSON-RPC gets a parse error,
//! a session nobody issued (or one whose server has ended) 404, a request before `initialize`
//! 400.
//!
//! A servers file's views are served at `/mcp/<view>` (or chosen by a header, or by a claim of
//! the token): a session is the view's for good, and asked for under another view, or by another
//! token subject, it is not found (404). The stateless revision has a shared proxy per view.
//!
//! Against DNS rebinding, a request whose `Host` names a site (rather than an IP address,
//! `localhost` or a name allowed with [`ListenOptions::allowed_hosts`]) is refused (421); one
//! whose `Host` is given twice, or names userinfo, is malformed (400), whatever its path. Every
//! connection has [`ListenOptions::read_timeout`] to send a request's headers, and again its
//! body; connections at once are capped (a connection past the cap waits to be accepted until
//! one ends, and the stalled ones end within the timeout), so a flood of half-open connections
//! never locks out a session.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};
use tokio::sync::mpsc;

use crate::front::access::{Caller, Choice, ProtectedResource, Refusal};
use crate::options::ProxyOptions;
use crate::proxy::{Client, ServerSpec};
use crate::servers::{Scope, View};
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, Id, Message};
use catalog::{Catalog, Choosing};
use tool_mediator_core::sync::lock;

mod catalog;
mod endpoint;
mod hangup;
mod operations;
mod stateless;
#[cfg(test)]
mod tests;

const SESSION: &str = "mcp-session-id";
const REVISION_HEADER: &str = "mcp-protocol-version";
/// Client sessions at once, at most; past the cap a new one is refused (503). Fewer when the
/// process may open few files (see [`session_cap`]).
const MAX_SESSIONS: usize = 256;
/// Messages waiting for one open stream before the router's output waits for it.
const STREAM_QUEUE: usize = 64;
/// Bytes in each in-process pipe between a session's HTTP side and its proxy.
const PIPE: usize = 256 * 1024;
/// Connections at once, at most; fewer when the process may open few files (see
/// [`connection_cap`]).
const MAX_CONNECTIONS: usize = 512;
/// How long connections have to finish when the front stops.
const CLOSING: Duration = Duration::from_secs(2);

/// Where the proxy listens, and who may talk to it.
#[derive(Clone)]
pub struct ListenOptions {
    pub address: SocketAddr,
    /// Requests must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// A session nobody has used for this long, with no stream open, is ended with its server:
    /// a client that goes without DELETE leaves nothing running for good.
    pub idle: Duration,
    /// How long a client has to send a request's headers, and again its body; an idle
    /// connection is closed after as long.
    pub read_timeout: Duration,
    /// Names, besides `localhost` and IP addresses, that a request's `Host` may give: the names
    /// others reach this machine by, when it listens beyond loopback.
    pub allowed_hosts: Vec<String>,
    /// Asked to stop, how long the requests under way have to be answered before the sessions
    /// and servers are ended.
    pub shutdown_grace: Duration,
    /// The cache whose hits and misses `/metrics` shows.
    pub cache: Option<Arc<tool_mediator::cache::Cache>>,
    /// Requests must carry a bearer token this resource's issuer signed for it (instead of
    /// [`ListenOptions::token`]).
    pub oauth: Option<Arc<ProtectedResource>>,
    /// The views of the servers file, served at `/mcp/<view>`.
    pub views: Vec<View>,
    /// A header a request may name its view in, besides the path.
    pub view_header: Option<String>,
    /// The servers file the servers and views came from, read again when it changes.
    pub servers_file: Option<std::path::PathBuf>,
    /// Serve other machines with neither a token nor OAuth, knowingly: without it, [`serve`]
    /// refuses to (see [`ListenOptions::exposure`]).
    pub insecure_no_token: bool,
}

/// Why a front may not serve as its options say.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Exposure {
    /// Other machines reach it, and nothing checks who they are: anyone on the network could
    /// run the servers' tools.
    #[error(
        "{0} serves other machines with neither a token nor OAuth: anyone who reaches it could run the servers' \
         tools (`insecure_no_token` serves them so, knowingly)"
    )]
    Unguarded(SocketAddr),
    /// The OAuth audience names an address no client uses (`0.0.0.0`, `::`): a token's audience
    /// must be the URL clients reach `/mcp` at.
    #[error("the OAuth audience `{0}` is no URL a client uses: name the URL clients reach /mcp at")]
    UnusableAudience(String),
}

impl ListenOptions {
    /// Whether these options may serve at `local`, the address listened on: beyond loopback
    /// only with a token, OAuth or [`ListenOptions::insecure_no_token`], and OAuth only for an
    /// audience a client can name. [`serve`] checks it first, whoever calls it.
    pub fn exposure(&self, local: SocketAddr) -> Result<(), Exposure> {
        let guarded = self.token.is_some() || self.oauth.is_some();
        if !local.ip().is_loopback() && !guarded && !self.insecure_no_token {
            return Err(Exposure::Unguarded(local));
        }
        if let Some(oauth) = &self.oauth {
            let audience = &oauth.options().audience;
            let usable = reqwest::Url::parse(audience).ok().and_then(|url| {
                let host = url.host_str()?.trim_start_matches('[').trim_end_matches(']');
                Some(host.parse::<std::net::IpAddr>().map_or(true, |ip| !ip.is_unspecified()))
            });
            if usable != Some(true) {
                return Err(Exposure::UnusableAudience(audience.clone()));
            }
        }
        Ok(())
    }

    /// Listening at `address` with the defaults: no token, sessions idle for 30 minutes ended,
    /// 30 s to send a request's headers and again its body, no name but `localhost` allowed,
    /// 10 s for the requests under way when asked to stop.
    pub fn new(address: SocketAddr) -> ListenOptions {
        ListenOptions {
            address,
            token: None,
            idle: Duration::from_secs(30 * 60),
            read_timeout: Duration::from_secs(30),
            allowed_hosts: Vec::new(),
            shutdown_grace: Duration::from_secs(10),
            cache: None,
            oauth: None,
            views: Vec::new(),
            view_header: None,
            servers_file: None,
            insecure_no_token: false,
        }
    }
}

/// Serves the proxy (or the gateway) over Streamable HTTP on `listener` until asked to stop
/// (SIGTERM, SIGINT). Client sessions share each server of [`Scope::Shared`], started when the
/// first needs it; each session gets one of its own of every server of [`Scope::Session`].
/// Every server is ended at the end.
pub async fn serve(
    listener: tokio::net::TcpListener,
    listen: ListenOptions,
    proxy: ProxyOptions,
    servers: Vec<ServerSpec>,
) -> std::io::Result<()> {
    let local = listener.local_addr()?;
    listen.exposure(local).map_err(|exposure| std::io::Error::new(std::io::ErrorKind::InvalidInput, exposure))?;
    if !local.ip().is_loopback() && listen.token.is_none() && listen.oauth.is_none() {
        tracing::warn!("serving {local} without a token: anyone who reaches it can run the servers' tools");
    }
    let read_timeout = listen.read_timeout;
    let port = local.port();
    let max_sessions = session_cap(servers.iter().filter(|server| server.scope == Scope::Session).count());
    // Its sessions end when the front ends them, which a stop signal lets finish first.
    let savings = Arc::new(crate::savings::Savings::default());
    let proxy = ProxyOptions { ends_on_signals: false, savings: Some(savings.clone()), ..proxy };
    let by_claim = listen.oauth.as_ref().is_some_and(|oauth| oauth.options().view_claim.is_some());
    let choosing = Choosing { header: listen.view_header.as_deref(), by_claim, patience: proxy.request_timeout };
    let catalog = Catalog::new(servers, &listen.views, &choosing, None);
    let sessions = Mutex::new(HashMap::new());
    let shared = Mutex::new(HashMap::new());
    let unready = Mutex::new((!catalog.pool.is_empty()).then(|| "the shared servers are starting".to_owned()));
    let state = Arc::new(Front {
        listen,
        proxy,
        catalog: Mutex::new(Arc::new(catalog)),
        port,
        max_sessions,
        sessions,
        shared,
        metrics: Arc::new(operations::Metrics::new(savings)),
        stopping: std::sync::atomic::AtomicBool::new(false),
        unready,
        warnings: crate::warnings::Warnings::default(),
    });
    let mut app = axum::Router::new()
        .route("/mcp", post(endpoint::on_post).get(endpoint::on_get).delete(endpoint::on_delete))
        .route("/mcp/{view}", post(endpoint::on_post).get(endpoint::on_get).delete(endpoint::on_delete))
        .route("/metrics", axum::routing::get(operations::metrics))
        .layer(axum::middleware::from_fn_with_state(state.clone(), endpoint::guard))
        // A probe carries no token, and is told no more than whether; why not, only with one.
        .route("/healthz", axum::routing::get(operations::alive))
        .route("/readyz", axum::routing::get(operations::ready));
    if state.listen.oauth.is_some() {
        // Where a client that was refused learns where to get a token: for anyone to read. The
        // path form for `/mcp` (and `/mcp/<view>`, or wherever a reverse proxy puts it) too.
        app = app
            .route("/.well-known/oauth-protected-resource", axum::routing::get(endpoint::resource_metadata))
            .route("/.well-known/oauth-protected-resource/{*path}", axum::routing::get(endpoint::resource_metadata));
    }
    // Outermost: what no route may be asked with.
    let app = app.layer(axum::middleware::from_fn(endpoint::well_formed)).with_state(state.clone());
    let janitor = tokio::spawn(end_idle_sessions(state.clone()));
    let warming = tokio::spawn(warm_up(state.clone()));
    let following = state.listen.servers_file.clone().map(|path| tokio::spawn(catalog::follow(state.clone(), path)));
    let slots = Arc::new(tokio::sync::Semaphore::new(connection_cap()));
    let (closing, closed) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let stopping = crate::signals::stop_signal();
    tokio::pin!(stopping);
    loop {
        // Past the cap, a connection waits in the listen queue until one ends.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
            () = &mut stopping => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of files, say: wait for some to close rather than spin.
                    tracing::warn!("cannot accept a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut stopping => break,
        };
        // Every answer is one small write: Nagle's algorithm would hold it for the client's
        // delayed acknowledgment (40 ms a request, measured).
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {error}");
        }
        let (stream, hangup) = hangup::Connection::new(stream);
        let routes = hyper_util::service::TowerToHyperService::new(app.clone());
        // Each request can tell when its client hangs up.
        let service = hyper::service::service_fn(move |mut request: axum::http::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(hangup.clone());
            hyper::service::Service::call(&routes, request)
        });
        let mut closed = closed.clone();
        connections.spawn(async move {
            let _slot = slot;
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(read_timeout)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            tokio::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = async { drop(closed.wait_for(|closed| *closed).await) } => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = served {
                tracing::debug!("connection from {peer} ended: {error}");
            }
        });
        // Connections that ended are let go as others come.
        while connections.try_join_next().is_some() {}
    }
    // Stopping: no new request is taken (a load balancer hears it from /readyz), and those under
    // way have the grace to be answered.
    {
        // Under the sessions' lock: a session being opened is opened before, or not at all.
        let _sessions = lock(&state.sessions);
        state.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
    }
    drop(listener);
    warming.abort();
    if let Some(following) = following {
        following.abort();
    }
    let grace = state.listen.shutdown_grace;
    if tokio::time::timeout(grace, state.answered_all()).await.is_err() {
        tracing::warn!("requests still under way after {}s; ending them", grace.as_secs_f64());
    }
    tracing::info!("asked to stop; ending every session and server");
    janitor.abort();
    let sessions: Vec<Arc<Session>> = lock(&state.sessions).drain().map(|(_, session)| session).collect();
    let shared: Vec<Arc<Session>> = lock(&state.shared).drain().map(|(_, session)| session).collect();
    // Each on its own: one slow to end holds up no other.
    futures_util::future::join_all(
        sessions.into_iter().chain(shared).map(|session| async move { session.end().await }),
    )
    .await;
    let catalog = state.catalog();
    futures_util::future::join_all(catalog.shared().map(|server| server.end(state.proxy.grace))).await;
    // Answers under way are finished; a stream still open is not waited for long.
    closing.send_replace(true);
    let _ = tokio::time::timeout(CLOSING, async { while connections.join_next().await.is_some() {} }).await;
    connections.abort_all();
    Ok(())
}

/// Starts the servers every session shares and lists them, again after a while until each has
/// answered; the front is ready once they all have.
async fn warm_up(front: Arc<Front>) {
    let (limit, withheld, patience) =
        (front.proxy.max_message_bytes, front.proxy.withheld_env.clone(), front.proxy.request_timeout);
    let mut delay = Duration::from_secs(1);
    loop {
        let catalog = front.catalog();
        let warmed =
            futures_util::future::join_all(catalog.shared().map(|server| server.warm(limit, &withheld, patience)))
                .await;
        let failures: Vec<String> = catalog
            .shared()
            .zip(warmed)
            .filter_map(|(server, warmed)| Some(format!("{}: {}", server.label(), warmed.err()?)))
            .collect();
        if failures.is_empty() {
            *lock(&front.unready) = None;
            return;
        }
        let why = failures.join("; ");
        tracing::warn!("not ready: {why}; trying again in {}s", delay.as_secs());
        *lock(&front.unready) = Some(why);
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(30));
    }
}

/// Connections at once: [`MAX_CONNECTIONS`], or half the files the process may open when that
/// is fewer (a quarter for the sessions' servers, a quarter for the rest), so the caps are
/// reached before the files run out.
fn connection_cap() -> usize {
    open_files().map_or(MAX_CONNECTIONS, |files| MAX_CONNECTIONS.min(files / 2).max(8))
}

/// Sessions at once: [`MAX_SESSIONS`], or as many as a quarter of the files the process may
/// open allows when that is fewer, each of the `servers` a session starts for itself holding two
/// (its input and its output; a remote one, a connection or two).
fn session_cap(servers: usize) -> usize {
    let each = 2 * servers.max(1) + 1;
    open_files().map_or(MAX_SESSIONS, |files| MAX_SESSIONS.min(files / 4 / each).max(1))
}

/// How many files the process may open, when it is known.
fn open_files() -> Option<usize> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit(2) writes the struct it is given, and nothing else.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            return Some(usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX));
        }
    }
    None
}

struct Front {
    listen: ListenOptions,
    /// The port listened on, which a `Host` that names one must name.
    port: u16,
    /// Sessions at once, at most.
    max_sessions: usize,
    proxy: ProxyOptions,
    /// The servers, the views and the pool, as the servers file last said.
    catalog: Mutex<Arc<Catalog>>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    metrics: Arc<operations::Metrics>,
    /// Asked to stop: no new request is taken.
    stopping: std::sync::atomic::AtomicBool,
    /// Why the front is not ready yet (its shared servers not yet started and listed).
    unready: Mutex<Option<String>>,
    /// Refused tokens, logged at most once a second.
    warnings: crate::warnings::Warnings,
    /// The proxy the stateless requests of each view share (`None`: of every server), once one
    /// has come.
    shared: Mutex<HashMap<Option<String>, Arc<Session>>>,
}

/// Where an answer or a message of the server's goes: a POST's stream, or the GET stream.
struct Stream {
    sender: mpsc::Sender<String>,
    /// It is a stream (SSE), not a POST waiting for its answer alone (JSON): only a stream
    /// can carry the server's messages on the way.
    carries_messages: bool,
    /// Which POST it is, so the POST takes out its own entry and no later one's.
    post: u64,
    /// Its request asked for log messages (`_meta` `logLevel`, in the stateless revision).
    logs: bool,
    /// What the request is, and when it came, for the metrics.
    method: operations::Method,
    began: Instant,
}

/// Numbers the POSTs waiting for an answer.
static POSTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One client session: the proxy behind it, and the streams waiting for what it writes.
struct Session {
    /// Whole messages for the proxy, written by one task so none is ever cut by a client that
    /// goes mid-write.
    input: mpsc::Sender<Vec<u8>>,
    /// Set when the session ends: the writer lets go, and the proxy ends its server.
    ended: tokio::sync::watch::Sender<bool>,
    /// POSTed requests waiting for their answer, by id as written.
    waiting: Mutex<HashMap<Id, Stream>>,
    /// The GET stream, when the client has one open.
    listening: Mutex<Option<mpsc::Sender<String>>>,
    proxy: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Set, under the `waiting` lock, once the proxy has ended: a request that comes later is
    /// answered at once, with why the proxy could not start when it could not.
    closed: std::sync::atomic::AtomicBool,
    failure: Mutex<Option<String>>,
    last_used: Mutex<Instant>,
    /// How long the proxy has to end its server.
    grace: Duration,
    /// It is the proxy stateless requests share: what the server sends of its own accord goes
    /// to the request it relates to, never to whichever stream is open.
    shared: bool,
    /// The view it serves (`None`: every server), and the token subject it was opened by: a
    /// request under another view, or by another subject, does not find it.
    view: Option<String>,
    subject: Option<String>,
    metrics: Arc<operations::Metrics>,
    /// What its proxy may show of each server, told again when the servers file narrows its
    /// view (`None`: the proxy stateless requests share, started again instead).
    shown: Option<tokio::sync::watch::Sender<Arc<crate::options::ShownServers>>>,
}

/// Ends, every so often, the sessions idle for longer than the options allow.
async fn end_idle_sessions(front: Arc<Front>) {
    let every = (front.listen.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(60));
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
            // Each on its own: one slow to end holds up no other.
            tokio::spawn(async move { session.end().await });
        }
    }
}

impl Session {
    /// Whether the proxy behind it has ended: nothing more will answer.
    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Why the session ended, for those who ask after it has.
    fn ending(&self) -> String {
        lock(&self.failure).clone().unwrap_or_else(|| "the session has ended".to_owned())
    }

    fn used(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Unused for `idle`, no request waiting and no stream open.
    fn is_idle(&self, idle: Duration) -> bool {
        let streams = lock(&self.waiting).values().any(|stream| !stream.sender.is_closed())
            || lock(&self.listening).as_ref().is_some_and(|stream| !stream.is_closed());
        !streams && lock(&self.last_used).elapsed() >= idle
    }

    /// Hands one message to the proxy; false when the session has ended.
    async fn send(&self, message: Vec<u8>) -> bool {
        self.used();
        let mut ended = self.ended.subscribe();
        tokio::select! {
            sent = self.input.send(message) => sent.is_ok(),
            _ = ended.wait_for(|ended| *ended) => false,
        }
    }

    /// Ends the session: the proxy ends its server (given its grace, then stopped).
    async fn end(&self) {
        self.ended.send_replace(true);
        let proxy = lock(&self.proxy).take();
        if let Some(mut proxy) = proxy {
            // The proxy's own ending takes at most two graces (input closed, then SIGTERM).
            if tokio::time::timeout(self.grace * 3 + Duration::from_secs(1), &mut proxy).await.is_err() {
                tracing::warn!("a session's proxy did not end in time; stopped");
                proxy.abort();
            }
        }
    }

    /// A POST's stream for the answer to `id`, taken out of the waiting list when dropped;
    /// none while a request with this id still waits.
    fn wait_for(self: &Arc<Self>, id: &Id, method: &str, carries_messages: bool, logs: bool) -> Option<Waiting> {
        let (sender, answers) = mpsc::channel(STREAM_QUEUE);
        let mut waiting = lock(&self.waiting);
        if self.is_closed() {
            // Nothing will answer: the answer is why.
            let _ = sender.try_send(jsonrpc::error_response(id, INTERNAL_ERROR, &self.ending()));
            let post = POSTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Some(Waiting { answers, id: id.clone(), post, session: self.clone() });
        }
        if waiting.get(id).is_some_and(|earlier| !earlier.sender.is_closed()) {
            return None;
        }
        let post = POSTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (method, began) = (operations::Method::of(method), Instant::now());
        waiting.insert(id.clone(), Stream { sender, carries_messages, post, logs, method, began });
        Some(Waiting { answers, id: id.clone(), post, session: self.clone() })
    }

    /// Hands a line the proxy wrote to whoever waits for it. Never waits on a client: a client
    /// that does not read its stream costs only that stream.
    fn deliver(&self, line: String) {
        // What it is, owned: the line moves on.
        let (answer, request) = match Message::parse(line.as_bytes()) {
            Ok(Message::Response { id, result, error }) => {
                let answered = lock(&self.waiting).remove(&id);
                if let Some(stream) = &answered {
                    self.metrics.answered(&stream.method, stream.began, result, error.is_some());
                }
                (Some((id, answered)), None)
            }
            Ok(Message::Request { id, .. }) => (None, Some(id)),
            _ => (None, None),
        };
        if let Some((id, answered)) = answer {
            match answered {
                Some(stream) => send_or_hold(stream.sender, line),
                // A stateless client that closed its stream cancelled the request: expected.
                None if self.shared => tracing::debug!("an answer to {id}, whose stream has closed; dropped"),
                None => tracing::warn!("an answer to {id}, which no client request waits for; dropped"),
            }
            return;
        }
        if self.shared {
            return self.deliver_related(line, request);
        }
        // Of the server's own accord: the GET stream, else a POST stream still open.
        let listening = lock(&self.listening).clone().filter(|stream| !stream.is_closed());
        let stream = listening.or_else(|| {
            let waiting = lock(&self.waiting);
            waiting
                .values()
                .find(|stream| stream.carries_messages && !stream.sender.is_closed())
                .map(|s| s.sender.clone())
        });
        let undelivered = match stream {
            Some(stream) => match stream.try_send(line) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(line) | mpsc::error::TrySendError::Closed(line)) => {
                    // A stream this far behind is let go; the client opens another.
                    tracing::warn!("a client stream is {STREAM_QUEUE} messages behind; closed it");
                    let mut listening = lock(&self.listening);
                    if listening.as_ref().is_some_and(|open| open.same_channel(&stream)) {
                        listening.take();
                    }
                    line
                }
            },
            None => line,
        };
        // A request nobody can hear is answered, so the server does not wait for it forever.
        match request {
            Some(id) => {
                let reason = "the client has no stream open to receive this request";
                let answer = jsonrpc::error_response(&id, INTERNAL_ERROR, reason).into_bytes();
                if self.input.try_send(answer).is_err() {
                    tracing::warn!("the server's request {id} could not be delivered or answered");
                }
            }
            _ => tracing::warn!(
                "the client has no stream open for a message of the server's; dropped: {undelivered:.200}"
            ),
        }
    }
}

/// Sends an answer to a POST's stream; one that is full gets it when it has room, without
/// holding up the session's other streams.
fn send_or_hold(stream: mpsc::Sender<String>, line: String) {
    if let Err(mpsc::error::TrySendError::Full(line)) = stream.try_send(line) {
        tokio::spawn(async move {
            let _ = stream.send(line).await;
        });
    }
}

/// A POST waiting for its answer; leaves the waiting list when the POST goes.
struct Waiting {
    answers: mpsc::Receiver<String>,
    id: Id,
    post: u64,
    session: Arc<Session>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waiting = lock(&self.session.waiting);
        if waiting.get(&self.id).is_some_and(|stream| stream.post == self.post) {
            waiting.remove(&self.id);
        }
    }
}

impl Front {
    /// Returns once no request waits for its answer in any session (a listen stream, which waits
    /// for good, aside).
    async fn answered_all(&self) {
        let listen = operations::Method::of("subscriptions/listen");
        loop {
            let mut sessions: Vec<Arc<Session>> = lock(&self.sessions).values().cloned().collect();
            sessions.extend(lock(&self.shared).values().cloned());
            let waiting = sessions.iter().any(|session| {
                lock(&session.waiting).values().any(|stream| stream.method != listen && !stream.sender.is_closed())
            });
            if !waiting {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Refuses a request for another site, or from another origin; then one without the token
    /// or, as a protected resource, without a valid bearer token. Says who the caller is.
    async fn admit(&self, headers: &HeaderMap) -> Result<Caller, Response> {
        self.check(headers).map_err(IntoResponse::into_response)?;
        let Some(resource) = &self.listen.oauth else { return Ok(Caller::default()) };
        let authorization = headers.get(header::AUTHORIZATION).map(|value| value.to_str().unwrap_or_default());
        resource.admit(authorization).await.map_err(|refusal| {
            let (status, reason) = match &refusal {
                Refusal::NoToken => (StatusCode::UNAUTHORIZED, "a bearer token is required".to_owned()),
                Refusal::InvalidToken(why) => {
                    self.warnings.warn("token refused", || format!("a bearer token was refused: {why}"));
                    (StatusCode::UNAUTHORIZED, format!("the bearer token is refused: {why}"))
                }
                Refusal::Unavailable(why) => {
                    let reason = format!("tokens cannot be checked now: {why}");
                    return (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, "5")], format!("{reason}\n"))
                        .into_response();
                }
            };
            let challenge = resource.challenge(&refusal);
            let plain = "text/plain; charset=utf-8";
            (
                status,
                [(header::WWW_AUTHENTICATE, challenge.as_str()), (header::CONTENT_TYPE, plain)],
                format!("{reason}\n"),
            )
                .into_response()
        })
    }

    /// The view a request is served (`None`: every server): named by the token's claim, the
    /// path, or the header.
    fn view_of(&self, caller: &Caller, path: Option<&str>, headers: &HeaderMap) -> Result<Option<String>, Refused> {
        let catalog = self.catalog();
        let header =
            catalog.views.header().and_then(|name| headers.get(name)).map(|value| value.to_str().unwrap_or("\u{fffd}"));
        match catalog.views.choose(caller.view.as_deref(), path, header) {
            Choice::Everything => Ok(None),
            Choice::View(view) => Ok(Some(view)),
            Choice::Unknown => Err(Refused(StatusCode::NOT_FOUND, "no such view")),
            Choice::Forbidden(why) => Err(Refused(StatusCode::FORBIDDEN, why)),
        }
    }

    /// The servers, the views and the pool, as they are now.
    fn catalog(&self) -> Arc<Catalog> {
        lock(&self.catalog).clone()
    }

    /// How views are chosen among, whatever the servers file says.
    fn choosing(&self) -> Choosing<'_> {
        let by_claim = self.listen.oauth.as_ref().is_some_and(|oauth| oauth.options().view_claim.is_some());
        Choosing { header: self.listen.view_header.as_deref(), by_claim, patience: self.proxy.request_timeout }
    }

    /// The servers a session of `view` starts (or connects to).
    fn servers_of(&self, view: Option<&str>) -> Vec<ServerSpec> {
        self.catalog().servers_of(view)
    }

    /// Refuses a request for another site, from another origin, or without the shared token.
    fn check(&self, headers: &HeaderMap) -> Result<(), Refused> {
        let host = headers.get(header::HOST).and_then(|host| host.to_str().ok());
        if !host.is_some_and(|host| self.serves_host(host)) {
            return Err(Refused(StatusCode::MISDIRECTED_REQUEST, "the Host header names a site not served here"));
        }
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
            let given = given.and_then(crate::front::access::bearer_token).unwrap_or_default();
            if !same_secret(given.as_bytes(), token.as_bytes()) {
                return Err(Refused(StatusCode::UNAUTHORIZED, "a bearer token is required"));
            }
        }
        Ok(())
    }

    /// A revision nobody has written is refused, as the 2025 revisions ask (400); a stateless
    /// request is answered for its revision with the error that revision prescribes instead.
    fn check_revision(headers: &HeaderMap) -> Result<(), Refused> {
        if let Some(revision) = headers.get(REVISION_HEADER) {
            let known = revision.to_str().is_ok_and(|revision| crate::wire::revision::REVISIONS.contains(&revision));
            if !known {
                return Err(Refused(StatusCode::BAD_REQUEST, "unsupported MCP-Protocol-Version"));
            }
        }
        Ok(())
    }

    /// Whether `host` (a `Host` header: a name or an address, and perhaps this port) is served
    /// here. A page on a site whose name an attacker points at this machine (DNS rebinding)
    /// names that site: only `localhost`, a name allowed, or an IP address (which no DNS answer
    /// can rebind) is taken.
    fn serves_host(&self, host: &str) -> bool {
        let Ok(authority) = host.parse::<axum::http::uri::Authority>() else { return false };
        // A name with a port, as allowed (`127.0.0.1:8443`): what a load balancer in front of
        // this replica is reached by.
        if self.listen.allowed_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(authority.as_str())) {
            return true;
        }
        if authority.port_u16().is_some_and(|port| port != self.port) {
            return false;
        }
        let name = authority.host().trim_start_matches('[').trim_end_matches(']');
        name.eq_ignore_ascii_case("localhost")
            || name.parse::<std::net::IpAddr>().is_ok()
            || self.listen.allowed_hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(name))
    }

    /// The session a request names, if it names one: one of another view, or opened by another
    /// token subject, is not found.
    fn session(
        &self,
        headers: &HeaderMap,
        view: Option<&str>,
        caller: &Caller,
    ) -> Result<Option<(String, Arc<Session>)>, Refused> {
        let Some(id) = headers.get(SESSION) else { return Ok(None) };
        let id = id.to_str().unwrap_or_default().to_owned();
        let found = lock(&self.sessions).get(&id).cloned();
        match found.filter(|session| session.view.as_deref() == view && session.subject == caller.subject) {
            Some(session) => {
                session.used();
                Ok(Some((id, session)))
            }
            None => Err(Refused(StatusCode::NOT_FOUND, "no such session")),
        }
    }

    /// A new session of `view` for `caller`, and its proxy; if the proxy cannot start,
    /// `initialize` (`id`) is answered with why.
    fn open(
        self: &Arc<Self>,
        initialize: &Id,
        view: Option<String>,
        caller: &Caller,
    ) -> Result<(String, Arc<Session>), Refused> {
        let id =
            session_id().map_err(|_| Refused(StatusCode::INTERNAL_SERVER_ERROR, "no randomness for a session id"))?;
        let servers = self.servers_of(view.as_deref());
        let (shown, following) = tokio::sync::watch::channel(Arc::new(catalog::shown_of(&servers)));
        let (session, pending) = self.new_session(false, view, caller.subject.clone(), Some(shown));
        {
            let mut sessions = lock(&self.sessions);
            // Checked again under the lock the stop drains the sessions with: none opens after.
            if self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Refused(StatusCode::SERVICE_UNAVAILABLE, "the gateway is stopping"));
            }
            if sessions.len() >= self.max_sessions {
                return Err(Refused(StatusCode::SERVICE_UNAVAILABLE, "too many sessions at once"));
            }
            sessions.insert(id.clone(), session.clone());
        }
        let options = ProxyOptions { shown: Some(following), ..self.proxy.clone() };
        self.start(&session, pending, id.clone(), Some(initialize.clone()), options, servers);
        Ok((id, session))
    }

    /// A session not yet started, of `view` and opened by `subject`, and the receiving end of
    /// its input.
    fn new_session(
        &self,
        shared: bool,
        view: Option<String>,
        subject: Option<String>,
        shown: Option<tokio::sync::watch::Sender<Arc<crate::options::ShownServers>>>,
    ) -> (Arc<Session>, mpsc::Receiver<Vec<u8>>) {
        let (input, pending) = mpsc::channel::<Vec<u8>>(STREAM_QUEUE);
        let (ended, _) = tokio::sync::watch::channel(false);
        let session = Arc::new(Session {
            input,
            ended,
            waiting: Mutex::new(HashMap::new()),
            listening: Mutex::new(None),
            proxy: Mutex::new(None),
            closed: std::sync::atomic::AtomicBool::new(false),
            failure: Mutex::new(None),
            last_used: Mutex::new(Instant::now()),
            grace: self.proxy.grace,
            shared,
            view,
            subject,
            metrics: self.metrics.clone(),
            shown,
        });
        (session, pending)
    }

    /// Starts `session`'s proxy (named `id` in logs and in the sessions it leaves when it ends)
    /// with `servers`; if it cannot start, `initialize`, when there is one, is answered with why.
    fn start(
        self: &Arc<Self>,
        session: &Arc<Session>,
        pending: mpsc::Receiver<Vec<u8>>,
        id: String,
        initialize: Option<Id>,
        options: ProxyOptions,
        servers: Vec<ServerSpec>,
    ) {
        let (proxy_in, writer) = tokio::io::duplex(PIPE);
        let (proxy_out, output) = tokio::io::duplex(PIPE);
        tokio::spawn(write_messages(pending, writer, session.ended.subscribe()));
        let mut ended = session.ended.subscribe();
        let gone = async move {
            let _ = ended.wait_for(|ended| *ended).await;
        };
        let client = Client { input: proxy_in, output: proxy_out, gone };
        let (front, name, started) = (self.clone(), id, session.clone());
        // Says that the proxy's ending is known (why it could not start, if it could not).
        let (ended, ending_known) = tokio::sync::oneshot::channel::<()>();
        let proxy = tokio::spawn(async move {
            match crate::proxy::serve(options, servers, client).await {
                Ok(ending) => {
                    tracing::info!("session {name} ended: {ending:?}");
                    if let crate::proxy::Ending::ServerExited(end) = ending {
                        *lock(&started.failure) =
                            Some(format!("the MCP server ended ({end}), and the session with it"));
                    }
                }
                Err(error) => {
                    tracing::warn!("session {name} could not start its server: {error}");
                    *lock(&started.failure) = Some(tool_mediator_core::error::with_causes(&error));
                    if let Some(initialize) = &initialize {
                        started.deliver(jsonrpc::error_response(initialize, INTERNAL_ERROR, &error.to_string()));
                    }
                }
            }
            let _ = ended.send(());
            drop(lock(&front.sessions).remove(&name));
        });
        *lock(&session.proxy) = Some(proxy);
        let reader = session.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(output).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                reader.deliver(line);
            }
            // The proxy's output closes as it returns: wait for why it ended before answering
            // with it (a task aborted on the way says nothing, and is not waited for).
            let _ = ending_known.await;
            // The proxy ended: nothing more will answer.
            let mut waiting = lock(&reader.waiting);
            reader.closed.store(true, std::sync::atomic::Ordering::SeqCst);
            let reason = reader.ending();
            // Every request still waiting is answered: one sent as the server died was never read.
            for (id, stream) in waiting.drain() {
                let _ = stream.sender.try_send(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
            drop(waiting);
            lock(&reader.listening).take();
        });
    }
}

/// Writes whole messages to the proxy until the session ends.
async fn write_messages(
    mut pending: mpsc::Receiver<Vec<u8>>,
    mut writer: DuplexStream,
    mut ended: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let message = tokio::select! {
            message = pending.recv() => message,
            _ = ended.wait_for(|ended| *ended) => None,
        };
        let Some(mut message) = message else { return };
        message.push(b'\n');
        let written = tokio::select! {
            written = writer.write_all(&message) => written.is_ok(),
            _ = ended.wait_for(|ended| *ended) => false,
        };
        if !written {
            return;
        }
    }
}

/// A session id no one can guess (the operating system's randomness).
fn session_id() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Whether two secrets are equal, in a time that does not tell where they first differ.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len() && given.iter().zip(expected).fold(0u8, |differ, (a, b)| differ | (a ^ b)) == 0
}

/// Whether the client takes an SSE stream for its answer.
fn wants_stream(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"))
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
