//! One server of the proxy or gateway, supervised: started, connected to the router, and when
//! it stops, what waits for it failed and (with restarts) the server started again with backoff.

use std::sync::Arc;
use std::time::Duration;

use crate::options::OUTBOX_BYTES;
use crate::router::{Link, Router};
use crate::upstream::{Server, ServerEnd, Started, Upstream};
use crate::wire::lines::{Outbox, read_lines};

/// The longest a server waits to be started again: the delay doubles from
/// [`ProxyOptions::restart`] up to this.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(30);

/// A server that ran this long before it stopped starts again after the first delay.
const STABLE: Duration = Duration::from_secs(60);

/// Runs one server for the router: starts it, connects it, and when it stops, fails what waits
/// for it and (with restarts) starts it again with backoff, until the gateway stops.
pub(crate) struct Supervisor {
    pub(crate) router: Arc<Router>,
    pub(crate) link: Arc<Link>,
    pub(crate) start: Arc<dyn Fn() -> Option<Upstream> + Send + Sync>,
    pub(crate) stopped: tokio::sync::watch::Receiver<bool>,
    /// Told this server's number when it ends and is not started again.
    pub(crate) exited: tokio::sync::mpsc::UnboundedSender<usize>,
    pub(crate) limit: usize,
    pub(crate) grace: Duration,
    pub(crate) restart: Option<Duration>,
    pub(crate) withheld: Arc<[String]>,
}

/// A started server, connected to the router.
pub(crate) struct Attached {
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
    pub(crate) async fn run(mut self, mut attached: Option<Attached>) -> ServerEnd {
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
                    let reason = error.starting(&label);
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
    pub(crate) fn attach(&self, started: Started, again: bool) -> Attached {
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
