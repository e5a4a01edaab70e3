//! The MCP proxy: tool-mediator in front of one MCP server, or of many as a gateway.
//!
//! [`run`] starts the server as a child process and speaks newline-delimited JSON-RPC with the
//! client on one side and the server on the other. Everything about tools goes through a
//! [`Session`](tool_mediator::session::Session): `tools/list` is listed upstream (every page), mediated
//! and paginated again; `tools/call` is answered here (category tools, group switches), sent
//! upstream under the server's own name with arguments mapped back, or refused as an unknown
//! tool. Everything else passes through as its sender wrote it, requests from the server to the
//! client included. The handshake (`initialize`, or `server/discover` in the stateless revision
//! 2026-07-28) tells the client that the tool list can change, and gives the server's name,
//! which chooses the override file unless a source is given.
//!
//! The server's stderr is the proxy's stderr; the proxy's own logs go there through `tracing`;
//! the client's stdout carries protocol messages only. A malformed line from either side is
//! logged and answered with a JSON-RPC error where its id can be made out; it never reaches the
//! other side. When the server exits, every request still waiting gets an error answer; when the
//! client closes its input, the server's input is closed, then the server is ended with SIGTERM
//! and, after another wait, SIGKILL. SIGTERM, SIGINT and SIGHUP to the proxy end it the same
//! way; SIGKILL, which cannot be caught, ends the server too on Linux (its parent-death signal).

use std::io;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::{Child, Command};

use crate::lines::{Outbox, read_lines};
use crate::remote::{Remote, RemoteError};
pub use crate::router::LinkSettings;
use crate::router::Router;
use crate::servers::{ServerConfig, Transport};
use tool_mediator::Mediator;
use tool_mediator::session::SessionPolicy;
use tool_mediator_core::error::with_causes;

/// The MCP server behind the proxy.
pub enum Upstream {
    /// A child process, started here, speaking on its standard streams.
    Process(Command),
    /// A remote server, over Streamable HTTP.
    Remote(Remote),
}

impl From<Command> for Upstream {
    fn from(command: Command) -> Upstream {
        Upstream::Process(command)
    }
}

impl From<Remote> for Upstream {
    fn from(remote: Remote) -> Upstream {
        Upstream::Remote(remote)
    }
}

/// How the server behind the proxy ended.
#[derive(Debug)]
pub enum ServerEnd {
    /// The child process exited.
    Exited(ExitStatus),
    /// The connection to a remote server closed.
    Disconnected(String),
}

impl std::fmt::Display for ServerEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerEnd::Exited(status) => write!(f, "{status}"),
            ServerEnd::Disconnected(reason) => f.write_str(reason),
        }
    }
}

/// How the proxy mediates and how it ends.
#[derive(Clone)]
pub struct ProxyOptions {
    pub mediator: Arc<Mediator>,
    pub policy: SessionPolicy,
    /// The source for overrides; by default the server's `serverInfo.name`.
    pub source: Option<String>,
    /// How long the server has to exit after its input closes, and again after SIGTERM.
    pub grace: Duration,
    /// The longest message either side may send, in bytes; a longer one is skipped and, when
    /// its id can be read, answered with an error that names this limit.
    pub max_message_bytes: usize,
    /// How long the proxy waits for the server to answer a request of its own (a listing).
    pub request_timeout: Duration,
    /// Tools pinned by `tool-mediator pin`: one whose definition changed since is hidden (or,
    /// without `hide_changed`, listed with a warning); a new one is reported.
    pub lock: Option<Arc<tool_mediator::pin::Lock>>,
    pub hide_changed: bool,
    /// Start a server that stops again after this delay, doubled at each stop in a row (up to
    /// 30 s); `None` ends the run when a server ends, as the one-server proxy does.
    pub restart: Option<Duration>,
    /// Environment variables a server started here never inherits: the proxy's own credentials
    /// (the token `--listen` is guarded with), which are not for third-party code. A server
    /// given one explicitly (a servers file's `env`) still gets it.
    pub withheld_env: Arc<[String]>,
}

/// The default [`ProxyOptions::max_message_bytes`]: 64 MiB.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How many bytes may wait for one side before the other side's reader pauses.
const OUTBOX_BYTES: usize = 16 * 1024 * 1024;

impl ProxyOptions {
    pub fn new(mediator: Arc<Mediator>, policy: SessionPolicy) -> ProxyOptions {
        ProxyOptions {
            mediator,
            policy,
            source: None,
            grace: Duration::from_secs(2),
            max_message_bytes: MAX_MESSAGE_BYTES,
            request_timeout: Duration::from_secs(60),
            lock: None,
            hide_changed: true,
            restart: None,
            withheld_env: Arc::new([]),
        }
    }
}

/// How a proxy run ended.
#[derive(Debug)]
pub enum Ending {
    /// The client closed its input (or the proxy was asked to stop); the server was ended.
    ClientClosed { server: ServerEnd },
    /// The server exited (or its connection closed) first.
    ServerExited(ServerEnd),
}

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot start the MCP server `{program}`")]
    Spawn { program: String, source: io::Error },
    #[error("cannot read from the client: {0}")]
    Client(io::Error),
    #[error(transparent)]
    Remote(#[from] RemoteError),
}

/// Runs `server` behind the proxy, speaking to the client on `client_in`/`client_out`, until
/// one side ends.
pub async fn run<R, W>(
    options: ProxyOptions,
    server: impl Into<Upstream>,
    client_in: R,
    client_out: W,
) -> Result<Ending, ProxyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    run_until_gone(options, server, Client { input: client_in, output: client_out, gone: std::future::pending() }).await
}

/// The client's side of a proxy: what it writes, where its answers go, and what tells that it
/// is gone even while its input is not being read (a full outbox for a server that does not
/// read stops the proxy reading the client, and with it the end of the client's input).
pub struct Client<R, W, G> {
    pub input: R,
    pub output: W,
    pub gone: G,
}

/// [`run`], ending also when `client.gone` completes.
pub async fn run_until_gone<R, W, G>(
    options: ProxyOptions,
    server: impl Into<Upstream>,
    client: Client<R, W, G>,
) -> Result<Ending, ProxyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    G: Future<Output = ()> + Send,
{
    let once = std::sync::Mutex::new(Some(server.into()));
    let start = move || tool_mediator_core::sync::lock(&once).take();
    let server = ServerSpec { settings: LinkSettings::default(), start: Arc::new(start) };
    serve(ProxyOptions { restart: None, ..options }, vec![server], client).await
}

/// One server behind a gateway: how the router treats it, and how to start it (again).
#[derive(Clone)]
pub struct ServerSpec {
    pub settings: LinkSettings,
    /// What to start; `None` when it can be started only once and was.
    pub start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>,
}

impl ServerSpec {
    /// A server of a servers file.
    pub fn from_config(config: &ServerConfig) -> ServerSpec {
        let transport = config.transport.clone();
        let start = move || {
            Some(match &transport {
                Transport::Stdio { command, args, env, cwd } => {
                    let mut server = Command::new(command);
                    server.args(args).envs(env.iter().map(|(name, value)| (name, value)));
                    if let Some(cwd) = cwd {
                        server.current_dir(cwd);
                    }
                    Upstream::Process(server)
                }
                Transport::Http { url, headers } => {
                    Upstream::Remote(Remote { url: url.clone(), headers: headers.clone() })
                }
            })
        };
        let settings = LinkSettings {
            name: config.name.clone(),
            source: config.source.clone(),
            include: config.include.clone(),
            exclude: config.exclude.clone(),
        };
        ServerSpec { settings, start: Arc::new(start) }
    }
}

/// The gateway: `servers` behind one client, their tools listed as one set, until the client
/// ends (or, without [`ProxyOptions::restart`], until a server does). [`run`] is its one-server
/// case.
pub async fn serve<R, W, G>(
    options: ProxyOptions,
    servers: Vec<ServerSpec>,
    client: Client<R, W, G>,
) -> Result<Ending, ProxyError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
    G: Future<Output = ()> + Send,
{
    let Client { input: client_in, output: client_out, gone: client_gone } = client;
    let (limit, grace, restart) = (options.max_message_bytes, options.grace, options.restart);
    let withheld = options.withheld_env.clone();
    // Without restarts every server must start now; otherwise one that does not is tried again.
    let mut first_starts = Vec::with_capacity(servers.len());
    for server in &servers {
        let started = match (server.start)() {
            Some(upstream) => match Server::start(upstream, limit, &withheld) {
                Ok(started) => Some(started),
                Err(error) if restart.is_none() => return Err(error),
                Err(error) => {
                    tracing::warn!(
                        "cannot start {}: {}",
                        crate::router::label_of(&server.settings.name),
                        with_causes(&error)
                    );
                    None
                }
            },
            None => None,
        };
        first_starts.push(started);
    }

    let (to_client, client_queue) = Outbox::new(OUTBOX_BYTES);
    let settings = servers.iter().map(|server| server.settings.clone()).collect();
    let router = Router::new(options, settings, to_client);
    let client_writer = tokio::spawn({
        let router = router.clone();
        async move { router.to_client.write_lines(client_out, client_queue).await }
    });
    let (stop, stopped) = tokio::sync::watch::channel(false);
    // A server that ends and is not started again says so before its waiting requests are
    // answered: the run ends as the server's, even if its client leaves on hearing the answer.
    let (exited, mut exits) = tokio::sync::mpsc::unbounded_channel();
    let mut supervisors: futures_util::stream::FuturesUnordered<_> = servers
        .into_iter()
        .zip(first_starts)
        .enumerate()
        .map(|(index, (server, started))| {
            let supervisor = Supervisor {
                router: router.clone(),
                link: router.links[index].clone(),
                start: server.start,
                stopped: stopped.clone(),
                exited: exited.clone(),
                limit,
                grace,
                restart,
                withheld: withheld.clone(),
            };
            // Connected before the client is read: its handshake reaches every server started.
            let attached = started.map(|started| supervisor.attach(started, false));
            tokio::spawn(async move { (index, supervisor.run(attached).await) })
        })
        .collect();
    drop(exited);

    // Backpressure: a server is not read while the client's outbox is full, and the client is
    // not read while any outbox is (its requests may be answered here or go upstream), or
    // while as many tool requests as the proxy serves at once are under way.
    let client_router = router.clone();
    let client_reader =
        async { read_lines(client_in, limit, &*client_router, |line| client_router.from_client(line)).await };

    // Which side ended first: the client (`None`), or the server of that number.
    let mut ends: Vec<(usize, ServerEnd)> = Vec::new();
    let end_of = |ended: Result<(usize, ServerEnd), tokio::task::JoinError>| {
        ended.unwrap_or_else(|error| (usize::MAX, ServerEnd::Disconnected(format!("its supervisor failed: {error}"))))
    };
    // Biased, a server's end first: when the client leaves on hearing that server's last
    // answer, both are ready at once, and the server ended first.
    let server_ended = tokio::select! {
        biased;
        Some(index) = exits.recv() => Some(index),
        read = client_reader => {
            if let Err(error) = read {
                tracing::warn!("cannot read from the client: {error}");
            }
            None
        }
        _ = stop_signal() => {
            tracing::info!("asked to stop; ending the servers");
            None
        }
        () = client_gone => {
            tracing::info!("the client is gone; ending the servers");
            None
        }
        // A server ended, and is not started again.
        Some(ended) = futures_util::StreamExt::next(&mut supervisors) => {
            let ended = end_of(ended);
            let index = ended.0;
            ends.push(ended);
            Some(index)
        }
    };
    let _ = stop.send(true);
    while let Some(ended) = futures_util::StreamExt::next(&mut supervisors).await {
        ends.push(end_of(ended));
    }
    let ending = match server_ended {
        Some(index) => {
            // Requests the proxy made for the client (a listing) fail as their answers drop;
            // give those tasks a moment to answer the client.
            tokio::time::sleep(Duration::from_millis(50)).await;
            let position = ends.iter().position(|(ended, _)| *ended == index).unwrap_or(0);
            Ending::ServerExited(ends.swap_remove(position).1)
        }
        None => Ending::ClientClosed {
            server: ends.into_iter().next().map_or(ServerEnd::Disconnected("no server ran".to_owned()), |(_, end)| end),
        },
    };
    router.flush_warnings();
    // Answers already queued reach the client before the proxy ends.
    router.close_client_output();
    let _ = tokio::time::timeout(Duration::from_secs(2), client_writer).await;
    Ok(ending)
}

/// The longest a server waits to be started again: the delay doubles from
/// [`ProxyOptions::restart`] up to this.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(30);

/// A server that ran this long before it stopped starts again after the first delay.
const STABLE: Duration = Duration::from_secs(60);

/// Runs one server for the router: starts it, connects it, and when it stops, fails what waits
/// for it and (with restarts) starts it again with backoff, until the gateway stops.
struct Supervisor {
    router: Arc<Router>,
    link: Arc<crate::router::Link>,
    start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>,
    stopped: tokio::sync::watch::Receiver<bool>,
    /// Told this server's number when it ends and is not started again.
    exited: tokio::sync::mpsc::UnboundedSender<usize>,
    limit: usize,
    grace: Duration,
    restart: Option<Duration>,
    withheld: Arc<[String]>,
}

type Started = (Server, ServerInput, ServerOutput, String);

/// A started server, connected to the router.
struct Attached {
    server: Server,
    /// Reads what the server writes, until its output closes.
    reader: tokio::task::JoinHandle<std::io::Result<()>>,
    /// Says why the server proved no use, if it does.
    faulted: tokio::sync::oneshot::Receiver<String>,
}

/// Why a connected server stopped being used.
enum Ended {
    /// Its output closed: it exited, or its connection did.
    Closed,
    /// It proved no use (see [`crate::router::Link::fault`]).
    Faulted(String),
    /// The gateway is stopping.
    Stopping,
}

impl Supervisor {
    /// How the server last ended; returns when the gateway stops, or without restarts when the
    /// server ends.
    async fn run(mut self, mut attached: Option<Attached>) -> ServerEnd {
        let mut delay = self.restart.unwrap_or_default();
        let mut runs = 0u64;
        let label = self.link.label.clone();
        loop {
            let attempt = match attached.take() {
                Some(attached) => Some(Ok(attached)),
                None if runs == 0 && self.restart.is_some() => None, // failed at first; waits below
                None => (self.start)().map(|upstream| {
                    Server::start(upstream, self.limit, &self.withheld).map(|started| self.attach(started, true))
                }),
            };
            runs += 1;
            let mut last = ServerEnd::Disconnected("it never started".to_owned());
            match attempt {
                None if self.restart.is_none() => return last,
                None => {}
                Some(Err(error)) => {
                    let reason = format!("cannot start {label}: {}", with_causes(&error));
                    tracing::warn!("{reason}");
                    self.router.server_gone(&self.link, reason);
                }
                Some(Ok(attached)) => {
                    let began = tokio::time::Instant::now();
                    let (status, stopping) = self.connect(attached).await;
                    if stopping || self.restart.is_none() {
                        return status;
                    }
                    if began.elapsed() >= STABLE {
                        delay = self.restart.unwrap_or_default();
                    }
                    tracing::warn!("{label} stopped ({status}); starting it again in {:.1}s", delay.as_secs_f64());
                    last = status;
                }
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                _ = self.stopped.wait_for(|stopped| *stopped) => return last,
            }
            delay = (delay * 2).min(MAX_RESTART_DELAY);
        }
    }

    /// Connects a started server to the router: lines for it go to its input, its output is
    /// read, and (when it started again, or will be) it is given the client's handshake.
    fn attach(&self, started: Started, again: bool) -> Attached {
        let (server, input, output, fallback) = started;
        let (outbox, queue) = Outbox::new(OUTBOX_BYTES);
        let outbox = Arc::new(outbox);
        tokio::spawn({
            let outbox = outbox.clone();
            async move { outbox.write_lines(input, queue).await }
        });
        let faulted = self.link.connected(outbox, fallback);
        let reader = tokio::spawn({
            let (router, link, limit) = (self.router.clone(), self.link.clone(), self.limit);
            async move { read_lines(output, limit, &router.to_client, |line| router.from_server(&link, line)).await }
        });
        if again || self.restart.is_some() {
            self.router.clone().rejoin(self.link.clone());
        }
        Attached { server, reader, faulted }
    }

    /// Serves an attached server until it ends or the gateway stops; how it ended, and whether
    /// the gateway is stopping.
    async fn connect(&mut self, attached: Attached) -> (ServerEnd, bool) {
        let Attached { mut server, mut reader, faulted } = attached;
        let (router, link) = (self.router.clone(), self.link.clone());
        // Only a server that is started again is ended for being no use; the proxy's one server
        // answers for itself.
        let faulted = async {
            if self.restart.is_none() {
                return std::future::pending().await;
            }
            tokio::select! {
                Ok(reason) = faulted => reason,
                () = router.watch(&link) => unreachable!("the watch goes on while the server runs"),
            }
        };
        let ended = tokio::select! {
            // Its output closed: it has exited or is about to.
            _ = &mut reader => Ended::Closed,
            reason = faulted => Ended::Faulted(reason),
            _ = self.stopped.wait_for(|stopped| *stopped) => Ended::Stopping,
        };
        let stopping = matches!(ended, Ended::Stopping);
        if !stopping && self.restart.is_none() {
            let _ = self.exited.send(self.link.index);
        }
        let reason = match &ended {
            Ended::Closed => Some(match server.exit_status_soon().await {
                Some(status) => format!("{} exited ({status}) before answering", self.link.label),
                None => format!("{} closed its output before answering", self.link.label),
            }),
            Ended::Faulted(reason) => {
                tracing::warn!("{reason}; ending it");
                Some(format!("{reason}; it was ended"))
            }
            Ended::Stopping => None,
        };
        // What waits for a server that is gone is told so at once, not after it has exited.
        if let Some(reason) = reason {
            reader.abort();
            self.router.server_gone(&self.link, reason);
        }
        if let Some(outbox) = self.link.outbox() {
            outbox.close();
        }
        let status = server.end_within(self.grace).await;
        if stopping {
            // Answers still coming from the server go on to the client meanwhile.
            let _ = tokio::time::timeout(Duration::from_millis(200), &mut reader).await;
            reader.abort();
            let reason = format!("the proxy is ending; the MCP server exited ({status})");
            self.router.server_gone(&self.link, reason);
        }
        (status, stopping)
    }
}

/// The client of [`stdio`], its parts boxed.
pub type StdioClient = Client<Box<dyn AsyncRead + Unpin + Send>, Box<dyn AsyncWrite + Unpin + Send>, Gone>;

/// What completes when a client is gone.
pub type Gone = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// The client behind the proxy's own stdin and stdout. When they are pipes (as an MCP client
/// makes them) they are read and written through the event loop, and the client is known to
/// be gone when nothing reads its end of the output pipe any more; otherwise (a file, a
/// terminal) through tokio's blocking standard streams, which cost a thread hop per read.
pub fn stdio() -> StdioClient {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd as _;
        use tokio::net::unix::pipe;
        let input = std::io::stdin().as_fd().try_clone_to_owned().and_then(pipe::Receiver::from_owned_fd);
        let output = std::io::stdout().as_fd().try_clone_to_owned().and_then(pipe::Sender::from_owned_fd);
        let input: Box<dyn AsyncRead + Unpin + Send> = match input {
            Ok(pipe) => Box::new(pipe),
            Err(_) => Box::new(tokio::io::stdin()),
        };
        let (output, gone): (Box<dyn AsyncWrite + Unpin + Send>, Gone) = match output {
            Ok(pipe) => (Box::new(pipe), Box::pin(output_closed())),
            Err(_) => (Box::new(tokio::io::stdout()), Box::pin(std::future::pending())),
        };
        Client { input, output, gone }
    }
    #[cfg(not(unix))]
    {
        Client {
            input: Box::new(tokio::io::stdin()),
            output: Box::new(tokio::io::stdout()),
            gone: Box::pin(std::future::pending()),
        }
    }
}

/// Completes when the read end of the proxy's stdout pipe is closed: the client has gone.
#[cfg(unix)]
async fn output_closed() {
    use std::os::fd::AsFd as _;
    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    // A second descriptor of the same pipe, watched for readiness only; nothing is written to it.
    let Ok(watched) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return std::future::pending().await;
    };
    // Errors only: a pipe's write end reports one when its reader closes, and nothing else,
    // so the proxy's own writes wake nothing here.
    // SAFETY: `watched` is an OwnedFd the AsyncFd takes ownership of: it stays open, and names
    // the same pipe, until the AsyncFd is dropped.
    let Ok(watched) = (unsafe { AsyncFd::register_with_interest(watched, Interest::ERROR) }) else {
        return std::future::pending().await;
    };
    loop {
        let Ok(mut ready) = watched.ready(Interest::ERROR).await else {
            return std::future::pending().await;
        };
        if ready.ready().is_error() {
            return;
        }
        ready.clear_ready();
    }
}

/// The server behind the proxy, started: its process, or the bridge to a remote one.
enum Server {
    Process(Child),
    Remote(tokio::task::JoinHandle<String>),
}

type ServerInput = Box<dyn AsyncWrite + Unpin + Send>;
type ServerOutput = Box<dyn AsyncRead + Unpin + Send>;

impl Server {
    /// Starts `upstream`; its input and output, and the source to use when the server does not
    /// name itself (the program's file name, or the URL's host).
    fn start(
        upstream: Upstream,
        limit: usize,
        withheld: &[String],
    ) -> Result<(Server, ServerInput, ServerOutput, String), ProxyError> {
        match upstream {
            Upstream::Process(mut command) => {
                let program = command.as_std().get_program().to_string_lossy().into_owned();
                command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).kill_on_drop(true);
                // Only what it inherits is withheld: a value set for it on purpose stays.
                let given: Vec<std::ffi::OsString> =
                    command.as_std().get_envs().map(|(name, _)| name.to_owned()).collect();
                for name in withheld.iter().filter(|name| !given.iter().any(|given| given == name.as_str())) {
                    command.env_remove(name);
                }
                // Its own process group, so ending it reaches what it started (npx, uvx and the like).
                #[cfg(unix)]
                command.process_group(0);
                ends_with_the_proxy(&mut command);
                let mut child =
                    command.spawn().map_err(|source| ProxyError::Spawn { program: program.clone(), source })?;
                let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
                    unreachable!("both streams were asked for as pipes");
                };
                let fallback = std::path::Path::new(&program)
                    .file_name()
                    .map_or(program.clone(), |name| name.to_string_lossy().into_owned());
                Ok((Server::Process(child), Box::new(input), Box::new(output), fallback))
            }
            Upstream::Remote(remote) => {
                let fallback = remote.url.host_str().unwrap_or("remote").to_owned();
                let connection = crate::remote::connect(remote, limit)?;
                Ok((
                    Server::Remote(connection.bridge),
                    Box::new(connection.input),
                    Box::new(connection.output),
                    fallback,
                ))
            }
        }
    }

    /// A process's exit status, if it exits within a moment (its output has closed).
    async fn exit_status_soon(&mut self) -> Option<ExitStatus> {
        match self {
            Server::Process(child) => {
                tokio::time::timeout(Duration::from_millis(250), child.wait()).await.ok().and_then(Result::ok)
            }
            Server::Remote(_) => None,
        }
    }

    /// How the server ended: a process is given `grace` to exit, then ended; a connection is
    /// given as long to close its session.
    async fn end_within(&mut self, grace: Duration) -> ServerEnd {
        match self {
            Server::Process(child) => ServerEnd::Exited(exit_within(child, grace).await),
            Server::Remote(bridge) => match tokio::time::timeout(grace, &mut *bridge).await {
                Ok(Ok(reason)) => ServerEnd::Disconnected(reason),
                Ok(Err(error)) => ServerEnd::Disconnected(format!("the connection failed: {error}")),
                Err(_) => {
                    bridge.abort();
                    ServerEnd::Disconnected("the connection did not close in time".to_owned())
                }
            },
        }
    }
}

/// On Linux, the server is sent SIGKILL when the proxy dies, however it dies (SIGKILL cannot be
/// caught to end it the usual way). The kernel sends it when the thread that started the
/// server ends: the command-line program starts every server from its one thread, which lives
/// as long as the process; a library user on a multi-threaded runtime gets it when the worker
/// thread ends, which is when the runtime does. Only the server itself: what it started hears
/// of it as its input closes. Elsewhere the server outlives a proxy killed this way.
fn ends_with_the_proxy(command: &mut Command) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `getpid` before the fork; `prctl`, `getppid` and `_exit` between fork and exec,
        // which are async-signal-safe and touch no memory of the parent's.
        let proxy = unsafe { libc::getpid() };
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The proxy died before the signal was set: it would never come.
                if libc::getppid() != proxy {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// The server's exit status, waiting `grace` for it to exit, then ending it.
async fn exit_within(child: &mut Child, grace: Duration) -> ExitStatus {
    let status = match tokio::time::timeout(grace, child.wait()).await {
        Ok(status) => status,
        Err(_) => terminate(child, grace).await,
    };
    status.unwrap_or_else(|_| exit_status_unknown())
}

/// SIGTERM to the server's process group, then SIGKILL after `grace`.
async fn terminate(child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
    #[cfg(unix)]
    if let Some(pid) = child.id() {
        tracing::info!("the MCP server did not exit when its input closed; sending SIGTERM");
        // SAFETY: kill(2) with a process group we created; no memory is involved.
        unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGTERM) };
        if let Ok(status) = tokio::time::timeout(grace, child.wait()).await {
            return status;
        }
        tracing::warn!("the MCP server ignored SIGTERM; killing it");
        unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
    }
    child.kill().await?;
    child.wait().await
}

fn exit_status_unknown() -> ExitStatus {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        ExitStatus::from_raw(1 << 8)
    }
    #[cfg(not(unix))]
    {
        use std::os::windows::process::ExitStatusExt;
        ExitStatus::from_raw(1)
    }
}

/// SIGTERM, SIGINT or SIGHUP (its terminal closed) to the proxy: end the server as if the
/// client had closed its input.
pub(crate) async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match (signal(SignalKind::terminate()), signal(SignalKind::interrupt()), signal(SignalKind::hangup())) {
            (Ok(mut term), Ok(mut int), Ok(mut hangup)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                    _ = hangup.recv() => {}
                }
            }
            _ => std::future::pending().await,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
