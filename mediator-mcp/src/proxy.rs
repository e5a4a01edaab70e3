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
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::Command;

use crate::options::{OUTBOX_BYTES, ProxyOptions};
use crate::router::supervisor::Supervisor;
use crate::router::{LinkSettings, Router};
use crate::servers::{Scope, ServerConfig, Servers, Transport};
use crate::signals::stop_signal;
use crate::upstream::remote::Remote;
use crate::upstream::{Server, ServerEnd, StartError, Upstream};
use crate::wire::lines::{Outbox, read_lines};

/// How a proxy run ended.
#[derive(Debug)]
pub enum Ending {
    /// The client closed its input (or the proxy was asked to stop); the server was ended.
    ClientClosed { server: ServerEnd },
    /// The server exited (or its connection closed) first.
    ServerExited(ServerEnd),
}

/// Why a proxy could not run.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error(transparent)]
    Start(#[from] StartError),
    #[error("cannot read from the client: {0}")]
    Client(io::Error),
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
    let server = server.into();
    let settings = LinkSettings { sign_in: server.sign_in(), ..LinkSettings::default() };
    let once = std::sync::Mutex::new(Some(server));
    let start = move || tool_mediator_core::sync::lock(&once).take();
    let server = ServerSpec { settings, start: Arc::new(start), scope: Scope::Session, entry: None };
    serve(ProxyOptions { restart: None, ..options }, vec![server], client).await
}

/// One server behind a gateway: how the router treats it, and how to start it (again).
#[derive(Clone)]
pub struct ServerSpec {
    pub settings: LinkSettings,
    /// What to start; `None` when it can be started only once and was.
    pub start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>,
    /// Behind an HTTP front, whether client sessions share it or each start their own.
    pub scope: Scope,
    /// Its entry in the servers file, when it has one: a gateway that reads the file again
    /// keeps a shared server whose entry did not change.
    pub entry: Option<ServerConfig>,
}

impl ServerSpec {
    /// The enabled servers of a servers file, in its order: none inherits a variable the file
    /// names as a client secret ([`Servers::secret_variables`]) unless its entry gives it.
    pub fn of_servers(servers: &Servers) -> Vec<ServerSpec> {
        let withheld = servers.secret_variables();
        servers.enabled().map(|config| ServerSpec::from_config(config, &withheld)).collect()
    }

    /// A server of a servers file; a process started for it does not inherit `withheld`, unless
    /// its entry gives the variable on purpose.
    pub fn from_config(config: &ServerConfig, withheld: &[String]) -> ServerSpec {
        let transport = config.transport.clone();
        // One sign-in for every connection to a remote server, restarts included.
        let remote = match &transport {
            Transport::Http { url, headers, oauth } => Some(Remote::new(url.clone(), headers.clone(), oauth.clone())),
            Transport::Stdio { .. } => None,
        };
        let sign_in = remote.as_ref().and_then(|remote| remote.sign_in.clone());
        let withheld = withheld.to_vec();
        let start = move || {
            Some(match &transport {
                Transport::Stdio { command, args, env, cwd } => {
                    let mut server = Command::new(command);
                    server.args(args).envs(env.iter().map(|(name, value)| (name, value)));
                    for name in withheld.iter().filter(|name| !env.iter().any(|(given, _)| given == *name)) {
                        server.env_remove(name);
                    }
                    if let Some(cwd) = cwd {
                        server.current_dir(cwd);
                    }
                    Upstream::Process(server)
                }
                Transport::Http { .. } => Upstream::Remote(remote.clone()?),
            })
        };
        let settings = LinkSettings {
            name: config.name.clone(),
            source: config.source.clone(),
            include: config.include.clone(),
            exclude: config.exclude.clone(),
            sign_in,
            pinned_as: None,
        };
        ServerSpec { settings, start: Arc::new(start), scope: config.scope, entry: Some(config.clone()) }
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
    let ends_on_signals = options.ends_on_signals;
    // Without restarts every server must start now; otherwise one that does not is tried again.
    let mut first_starts = Vec::with_capacity(servers.len());
    for server in &servers {
        let started = match (server.start)() {
            Some(upstream) => match Server::start(upstream, limit, &withheld) {
                Ok(started) => Some(started),
                Err(error) if restart.is_none() => return Err(error.into()),
                Err(error) => {
                    tracing::warn!("{}", error.starting(&crate::upstream::label_of(&server.settings.name)));
                    None
                }
            },
            None => None,
        };
        first_starts.push(started);
    }

    let (to_client, client_queue) = Outbox::new(OUTBOX_BYTES);
    let settings = servers.iter().map(|server| server.settings.clone()).collect();
    let shown = options.shown.clone();
    let router = Router::new(options, settings, to_client);
    if let Some(shown) = shown {
        tokio::spawn(Router::follow_shown(Arc::downgrade(&router), shown));
    }
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
        _ = stop_signal(), if ends_on_signals => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::Servers;

    /// What the command `spec` starts says of `name` in its environment: `Some(None)` removed,
    /// `Some(Some(value))` set, `None` inherited as it is.
    fn env_of(spec: &ServerSpec, name: &str) -> Option<Option<String>> {
        let Some(Upstream::Process(command)) = (spec.start)() else { panic!("a process") };
        command
            .as_std()
            .get_envs()
            .find(|(given, _)| *given == name)
            .map(|(_, value)| value.map(|value| value.to_string_lossy().into_owned()))
    }

    #[test]
    fn no_server_inherits_a_remote_servers_client_secret() {
        let text = r#"{"mcpServers": {
            "tracker": {"url": "https://mcp.tracker.test/mcp",
                        "oauth": {"client_id": "id", "client_secret_env": "TRACKER_SECRET"}},
            "off": {"url": "https://off.test/mcp", "disabled": true,
                    "oauth": {"client_id": "id", "client_secret_env": "OFF_SECRET"}},
            "github": {"url": "https://api.github.test/mcp",
                       "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Team": "${TEAM:-core}"}},
            "files": {"command": "files-server"},
            "given": {"command": "given-server", "env": {"TRACKER_SECRET": "${TRACKER_SECRET}"}}
        }}"#;
        let servers = Servers::parse(text, std::path::Path::new("servers.json"), |name| {
            ["TRACKER_SECRET", "GITHUB_TOKEN"].contains(&name).then(|| "s3cret".to_owned())
        })
        .unwrap();
        let specs = ServerSpec::of_servers(&servers);
        let files = specs.iter().find(|spec| spec.settings.name == "files").unwrap();
        assert_eq!(env_of(files, "TRACKER_SECRET"), Some(None), "withheld");
        assert_eq!(env_of(files, "OFF_SECRET"), Some(None), "a disabled entry's secret too");
        assert_eq!(env_of(files, "GITHUB_TOKEN"), Some(None), "a remote server's header's variable too");
        assert_eq!(env_of(files, "TEAM"), Some(None));
        // One the file gives a server on purpose stays.
        let given = specs.iter().find(|spec| spec.settings.name == "given").unwrap();
        assert_eq!(env_of(given, "TRACKER_SECRET"), Some(Some("s3cret".to_owned())));
    }
}
