//! How the proxy mediates and how it ends: the options every front door sets.

use std::sync::Arc;
use std::time::Duration;

use tool_mediator::Mediator;
use tool_mediator::session::SessionPolicy;

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
    /// Trust on first use: each server's tools are pinned in this file the first time they are
    /// listed, and one that changed, or is new to a server already seen, is held back until
    /// `tool-mediator review` approves it. An approval reaches a running session. Each server
    /// is pinned under its [`LinkSettings::pinned_as`](crate::LinkSettings), else its name.
    pub pins: Option<Arc<tool_mediator::pin::PinsFile>>,
    /// Start a server that stops again after this delay, doubled at each stop in a row (up to
    /// 30 s); `None` ends the run when a server ends, as the one-server proxy does.
    pub restart: Option<Duration>,
    /// Environment variables a server started here never inherits: the proxy's own credentials
    /// (the token `--listen` is guarded with, the shared cache's address and password), which
    /// are not for third-party code. A server given one explicitly (a servers file's `env`)
    /// still gets it.
    pub withheld_env: Arc<[String]>,
    /// SIGTERM, SIGINT and SIGHUP end the proxy (and its servers); the HTTP front, which
    /// handles them itself, first letting the requests under way be answered, turns it off for
    /// its sessions.
    pub ends_on_signals: bool,
    /// Counts, over every first page of a tool listing, what of the servers' whole listings the
    /// client was spared, in bytes and tokens: what they listed less what the client was shown
    /// (the HTTP front's metrics read it).
    pub savings: Option<Arc<crate::savings::Savings>>,
    /// What the client may see of each server as its settings change while it runs (a view of
    /// the servers file narrowed): a server it no longer names leaves the client's lists, a
    /// tool its lists no longer let through too. `None`: the settings the servers started with.
    pub shown: Option<tokio::sync::watch::Receiver<Arc<ShownServers>>>,
}

/// What the client may see of a server: the tools its `include` and `exclude` let through.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shown {
    pub include: Option<Vec<String>>,
    pub exclude: Vec<String>,
}

/// What the client may see of each server, by name; a server not named, nothing.
pub type ShownServers = std::collections::HashMap<String, Shown>;

/// The default [`ProxyOptions::max_message_bytes`]: 64 MiB.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How many bytes may wait for one side before the other side's reader pauses.
pub(crate) const OUTBOX_BYTES: usize = 16 * 1024 * 1024;

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
            pins: None,
            restart: None,
            withheld_env: Arc::new([]),
            ends_on_signals: true,
            savings: None,
            shown: None,
        }
    }
}
