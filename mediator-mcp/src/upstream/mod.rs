//! The server behind the proxy: what to start (a child process, or a connection to a remote
//! server), started, and ended. A process runs in its own process group and, on Linux, dies
//! with the proxy; it is ended by closing its input, then SIGTERM to its group, then SIGKILL,
//! each after a grace period. A server that client sessions share ([`pool`]) is connected to
//! rather than started, once it runs.

pub mod auth;
mod mux;
pub mod pool;
pub mod remote;

use std::io;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::process::{Child, Command};

use crate::upstream::remote::{Remote, RemoteError};
use tool_mediator_core::error::with_causes;

/// The MCP server behind the proxy.
pub enum Upstream {
    /// A child process, started here, speaking on its standard streams.
    Process(Command),
    /// A remote server, over Streamable HTTP.
    Remote(Remote),
    /// A server every client session shares, started when the first connects.
    Shared(std::sync::Arc<pool::SharedServer>),
}

impl Upstream {
    /// Signing in to it, for a remote server that may ask.
    pub fn sign_in(&self) -> Option<std::sync::Arc<crate::upstream::auth::SignIn>> {
        match self {
            Upstream::Remote(remote) => remote.sign_in.clone(),
            Upstream::Process(_) | Upstream::Shared(_) => None,
        }
    }
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
#[derive(Debug, Clone)]
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

impl StartError {
    /// Why the server `label` names (`the MCP server `github``) could not start, with every
    /// cause, saying "cannot start" once.
    pub fn starting(&self, label: &str) -> String {
        match self {
            StartError::Spawn { program, source } if label == label_of("") => {
                format!("cannot start the MCP server `{program}`: {source}")
            }
            StartError::Spawn { program, source } => format!("cannot start {label} (`{program}`): {source}"),
            other => format!("cannot start {label}: {}", with_causes(other)),
        }
    }
}

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot start the MCP server `{program}`")]
    Spawn { program: String, source: io::Error },
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error("{0} can be started only once, and was")]
    Once(String),
    /// A server every session shares could not be connected to.
    #[error("{0}")]
    Shared(String),
}

/// A started server: the server, its input and output, and the source to use when it does not
/// name itself.
pub(crate) type Started = (Server, ServerInput, ServerOutput, String);

/// The server behind the proxy, started: its process, or the bridge to a remote one.
pub(crate) enum Server {
    Process(Child),
    Remote(tokio::task::JoinHandle<String>),
    /// A session's connection to a server it shares.
    Shared(pool::Connection),
}

pub(crate) type ServerInput = Box<dyn AsyncWrite + Unpin + Send>;
pub(crate) type ServerOutput = Box<dyn AsyncRead + Unpin + Send>;

impl Server {
    /// Starts `upstream`; its input and output, and the source to use when the server does not
    /// name itself (the program's file name, or the URL's host).
    pub(crate) fn start(upstream: Upstream, limit: usize, withheld: &[String]) -> Result<Started, StartError> {
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
                    command.spawn().map_err(|source| StartError::Spawn { program: program.clone(), source })?;
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
                let connection = crate::upstream::remote::connect(remote, limit)?;
                Ok((
                    Server::Remote(connection.bridge),
                    Box::new(connection.input),
                    Box::new(connection.output),
                    fallback,
                ))
            }
            Upstream::Shared(server) => server.connect(limit, withheld),
        }
    }

    /// A process's exit status, if it exits within a moment (its output has closed).
    pub(crate) async fn exit_status_soon(&mut self) -> Option<ExitStatus> {
        match self {
            Server::Process(child) => {
                tokio::time::timeout(Duration::from_millis(250), child.wait()).await.ok().and_then(Result::ok)
            }
            Server::Remote(_) => None,
            Server::Shared(connection) => connection.exit_status_soon().await,
        }
    }

    /// How the server ended: a process is given `grace` to exit, then ended; a connection is
    /// given as long to close its session.
    pub(crate) async fn end_within(&mut self, grace: Duration) -> ServerEnd {
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
            Server::Shared(connection) => connection.end_within(grace).await,
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

/// "the MCP server `NAME`", or "the MCP server" for one without a name.
pub(crate) fn label_of(name: &str) -> String {
    match name {
        "" => "the MCP server".to_owned(),
        name => format!("the MCP server `{name}`"),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::process::ExitStatusExt as _;

    use tokio::io::AsyncReadExt as _;

    use super::*;

    fn shell(script: &str) -> Upstream {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        Upstream::Process(command)
    }

    #[tokio::test]
    async fn a_server_that_exits_when_its_input_closes_is_sent_no_signal() {
        let (mut server, input, _output, fallback) = Server::start(shell("cat > /dev/null"), 1024, &[]).unwrap();
        assert_eq!(fallback, "sh", "the program's file name names it");
        drop(input);
        let ServerEnd::Exited(status) = server.end_within(Duration::from_secs(10)).await else { panic!("a process") };
        assert_eq!(status.code(), Some(0), "{status}");
    }

    #[tokio::test]
    async fn a_server_that_ignores_sigterm_is_killed_after_the_grace() {
        let (mut server, input, mut output, _) =
            Server::start(shell("trap '' TERM; echo ready; exec sleep 30"), 1024, &[]).unwrap();
        // The trap is set before the server says it is ready.
        let mut ready = [0u8; 6];
        output.read_exact(&mut ready).await.unwrap();
        drop(input);
        let ServerEnd::Exited(status) = server.end_within(Duration::from_millis(200)).await else {
            panic!("a process")
        };
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
    }

    #[tokio::test]
    async fn a_withheld_variable_is_not_inherited_but_one_given_on_purpose_is() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo \"${HOME-withheld} ${GIVEN-withheld}\""]).env("GIVEN", "given");
        let withheld = ["HOME".to_owned(), "GIVEN".to_owned()];
        let (mut server, _input, mut output, _) = Server::start(Upstream::Process(command), 1024, &withheld).unwrap();
        let mut said = String::new();
        output.read_to_string(&mut said).await.unwrap();
        assert_eq!(said.trim(), "withheld given");
        server.end_within(Duration::from_secs(10)).await;
    }

    #[test]
    fn a_program_that_cannot_start_is_named() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _entered = runtime.enter();
        let Err(error) = Server::start(Upstream::Process(Command::new("/nonexistent/mcp-server")), 1024, &[]) else {
            panic!("no such program")
        };
        assert_eq!(error.to_string(), "cannot start the MCP server `/nonexistent/mcp-server`");
        // Said once, with the server's name and its program, not `cannot start X: cannot start Y`.
        let said = error.starting("the MCP server `github`");
        assert!(said.starts_with("cannot start the MCP server `github` (`/nonexistent/mcp-server`): "), "{said}");
        assert_eq!(said.matches("cannot start").count(), 1, "{said}");
        let said = error.starting("the MCP server");
        assert!(said.starts_with("cannot start the MCP server `/nonexistent/mcp-server`: "), "{said}");
        assert_eq!(
            StartError::Once("the server".into()).starting("the MCP server `a`"),
            "cannot start the MCP server `a`: the server can be started only once, and was"
        );
    }
}
