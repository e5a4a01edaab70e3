//! One MCP server behind the router: its input while it runs, the requests waiting for it (and
//! what each gets back), and what the router knows of it (its name, its capabilities, its last
//! tool listing). A server that stops and starts again keeps its link; only the connection is new.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::listing::{Listing, Relisting};
use crate::upstream::label_of;
use crate::wire::jsonrpc::{self, Id};
use crate::wire::lines::Outbox;
use crate::wire::pending::Pending;
use tool_mediator::admission::{Source, ToolFilter};
use tool_mediator_core::sync::lock;

/// What waits for a server's answer: the client, or a request of the proxy's own.
pub(super) enum Waiter {
    Client(Purpose),
    Proxy(oneshot::Sender<Result<Reply, Box<RawValue>>>),
}

/// What a client request waiting upstream needs when its answer comes.
pub(super) enum Purpose {
    /// A `subscriptions/listen` stream (2026-07-28) that asked for tool list changes.
    Listen,
    Other,
}

/// A result the server sent the proxy, in the line it came in.
pub(super) struct Reply {
    line: String,
    result: Range<usize>,
}

impl Reply {
    /// Where `result` lies in `line`, which it was read from.
    pub(super) fn place(line: &[u8], result: &RawValue) -> Range<usize> {
        let start = (result.get().as_ptr() as usize).saturating_sub(line.as_ptr() as usize);
        start..start + result.get().len()
    }

    /// The result at `result` in `line`, which is handed over rather than copied (a tools/list
    /// page can be megabytes). It is UTF-8: it parsed.
    pub(super) fn taken(line: &mut Vec<u8>, result: Range<usize>) -> Reply {
        let line = String::from_utf8(std::mem::take(line))
            .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
        Reply { line, result }
    }

    pub(super) fn get(&self) -> &str {
        self.line.get(self.result.clone()).unwrap_or_default()
    }
}

/// Why a request the proxy made upstream got no result.
pub(super) enum Unanswered {
    /// The server answered with this JSON-RPC error object.
    Refused(Box<RawValue>),
    /// The server is gone, or its answer made no sense.
    Failed(String),
}

impl Unanswered {
    /// Why, in words, for a log line.
    pub(super) fn reason(&self) -> String {
        match self {
            Unanswered::Refused(error) => format!("it answered with an error: {}", error.get()),
            Unanswered::Failed(reason) => reason.clone(),
        }
    }
}

/// What the router is told about a server before it starts.
#[derive(Debug, Clone, Default)]
pub struct LinkSettings {
    /// Its name in the servers file: what its tools are prefixed with when names are shared.
    pub name: String,
    /// The override source; by default the server's `serverInfo.name`.
    pub source: Option<String>,
    /// Only these tools, by the server's names; all when not set.
    pub include: Option<Vec<String>>,
    /// Never these tools, by the server's names.
    pub exclude: Vec<String>,
    /// Signing in to it, for a remote server that may ask.
    pub sign_in: Option<Arc<crate::upstream::auth::SignIn>>,
    /// What trust on first use pins its tools under; by default `name`.
    pub pinned_as: Option<String>,
}

pub(crate) struct Link {
    pub(crate) index: usize,
    pub(crate) name: String,
    /// What trust on first use pins its tools under: its name, or what the proxy was told.
    pub(super) pinned_as: String,
    /// How logs and errors name the server: "the MCP server `NAME`", or without a name (the
    /// proxy's one server) "the MCP server".
    pub(crate) label: String,
    pub(super) source: Option<String>,
    /// Which of its tools the client may see, as the settings (a view) say now.
    filter: Mutex<Filter>,
    /// The running server's input; `None` while it is down.
    outbox: Mutex<Option<Arc<Outbox>>>,
    pub(super) pending: Mutex<Pending<Waiter>>,
    /// The name the server gave itself in the handshake.
    pub(super) server_name: Mutex<Option<String>>,
    /// The source when the server names none: the program's file name, or the URL's host.
    pub(super) fallback_source: Mutex<String>,
    /// Its answer to the client's handshake: what it can do, and for the gateway's answer to a
    /// handshake that finds it joined already.
    pub(super) handshake_result: Mutex<Option<Value>>,
    /// It speaks only the revisions with a handshake, and was given `initialize` for a client
    /// that discovers: its results reach that client with what the stateless revision adds.
    pub(super) handshake_only: AtomicBool,
    pub(super) listing: Mutex<Option<Listing>>,
    /// Listings started, and (behind the gate) the number of the last one that finished.
    pub(super) listings_started: AtomicU64,
    pub(super) listing_gate: tokio::sync::Mutex<u64>,
    pub(super) relisting: Mutex<Relisting>,
    /// Where the running server's handshake stands: a server that is being given the client's
    /// handshake is asked nothing else meanwhile, and is given it once.
    joining: tokio::sync::watch::Sender<Joining>,
    /// When the running server was last given the handshake: it is waited for a while from then.
    join_began: Mutex<Option<tokio::time::Instant>>,
    /// Tells the supervisor of the running server that it is no use (it does not answer the
    /// gateway's own requests, or its handshake failed): it is ended, and started again.
    fault: Mutex<Option<tokio::sync::oneshot::Sender<String>>>,
    /// Signing in to it, for a remote server that may ask.
    sign_in: Option<Arc<crate::upstream::auth::SignIn>>,
}

/// Which of a server's tools the client may see: `None` when nothing at all (the server is not
/// the client's any more).
type Filter = Option<ToolFilter>;

/// Where a running server's handshake stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Joining {
    /// Not given the client's handshake (there may be none yet).
    Fresh,
    /// Being given it now.
    UnderWay,
    /// Given it, and it answered.
    Done,
}

impl Link {
    /// A request line of the client's as this server reads it: for a server of the 2025
    /// revisions the gateway gave `initialize`, without the stateless revision's envelope.
    pub(super) fn in_its_revision(&self, line: String) -> String {
        if !self.handshake_only.load(Ordering::Relaxed) || !line.contains(crate::wire::revision::PROTOCOL_VERSION_KEY) {
            return line;
        }
        let Ok(mut message) = tool_mediator_core::json::from_str(&line) else { return line };
        if let Some(params) = message.get_mut("params") {
            crate::wire::revision::without_envelope(params);
        }
        message.to_string()
    }

    pub(super) fn new(index: usize, settings: LinkSettings) -> Link {
        let label = label_of(&settings.name);
        Link {
            index,
            filter: Mutex::new(Some(ToolFilter::of(settings.include, settings.exclude))),
            fallback_source: Mutex::new(settings.name.clone()),
            pending: Mutex::new(Pending::gone_with(format!("{label} has not started"))),
            label,
            pinned_as: settings.pinned_as.unwrap_or_else(|| settings.name.clone()),
            name: settings.name,
            source: settings.source,
            outbox: Mutex::default(),
            server_name: Mutex::default(),
            handshake_result: Mutex::default(),
            handshake_only: AtomicBool::new(false),
            listing: Mutex::default(),
            listings_started: AtomicU64::new(0),
            listing_gate: tokio::sync::Mutex::new(0),
            relisting: Mutex::default(),
            joining: tokio::sync::watch::Sender::new(Joining::Fresh),
            join_began: Mutex::default(),
            fault: Mutex::default(),
            sign_in: settings.sign_in,
        }
    }

    /// What to tell a client while the user is asked to sign in to this server, if they are.
    pub(super) fn sign_in_asked(&self) -> Option<String> {
        self.sign_in.as_ref().filter(|sign_in| sign_in.asking_the_user()).map(|sign_in| sign_in.what_to_do())
    }

    /// The server (re)started: lines for it go to `outbox`, nothing waits for it yet. What it
    /// is told when it proves no use.
    pub(crate) fn connected(
        &self,
        outbox: Arc<Outbox>,
        fallback_source: String,
    ) -> tokio::sync::oneshot::Receiver<String> {
        let (fault, faulted) = tokio::sync::oneshot::channel();
        *lock(&self.pending) = Pending::default();
        *lock(&self.listing) = None;
        *lock(&self.fallback_source) = fallback_source;
        self.joining.send_replace(Joining::Fresh);
        *lock(&self.fault) = Some(fault);
        *lock(&self.outbox) = Some(outbox);
        faulted
    }

    /// The running server is no use, for `reason`: its supervisor ends it (and starts it again).
    pub(super) fn fault(&self, reason: String) {
        if let Some(fault) = lock(&self.fault).take() {
            let _ = fault.send(reason);
        }
    }

    /// Takes on giving the running server the handshake; false when it is being or was given it.
    pub(super) fn claim_join(&self) -> bool {
        let claimed = self.joining.send_if_modified(|joining| {
            let fresh = *joining == Joining::Fresh;
            if fresh {
                *joining = Joining::UnderWay;
            }
            fresh
        });
        if claimed {
            *lock(&self.join_began) = Some(tokio::time::Instant::now());
        }
        claimed
    }

    /// The handshake claimed with [`Link::claim_join`] ended: answered, or not.
    pub(super) fn joined(&self, answered: bool) {
        self.joining.send_replace(if answered { Joining::Done } else { Joining::Fresh });
    }

    pub(super) fn joining(&self) -> Joining {
        *self.joining.borrow()
    }

    /// Returns once the server is not being given the handshake (at once when it is not), or
    /// `window` after it was given it: one that takes longer joins late.
    pub(super) async fn join_settled(&self, window: std::time::Duration) {
        let began = lock(&self.join_began).unwrap_or_else(tokio::time::Instant::now);
        let mut joining = self.joining.subscribe();
        let settled = joining.wait_for(|joining| *joining != Joining::UnderWay);
        let _ = tokio::time::timeout_at(began + window, settled).await;
    }

    /// The server is down, for `reason`: its input closes, and every request still waiting
    /// for it is returned, to be told why; those made from now on are refused with the reason.
    pub(super) fn disconnected(&self, reason: String) -> Vec<(Id, Waiter)> {
        if let Some(outbox) = lock(&self.outbox).take() {
            outbox.close();
        }
        *lock(&self.listing) = None;
        lock(&self.pending).server_gone(reason)
    }

    /// The running server's input, if it runs.
    pub(crate) fn outbox(&self) -> Option<Arc<Outbox>> {
        lock(&self.outbox).clone()
    }

    pub(super) fn is_up(&self) -> bool {
        lock(&self.outbox).is_some()
    }

    /// Sends `line` to the server; false when it is down (the line is dropped).
    pub(super) fn send(&self, line: String) -> bool {
        match lock(&self.outbox).as_ref() {
            Some(outbox) => {
                outbox.send(line);
                true
            }
            None => false,
        }
    }

    /// Why requests to this server fail now.
    pub(super) fn down_reason(&self) -> String {
        lock(&self.pending).gone().map_or_else(|| format!("{} is down", self.label), str::to_owned)
    }

    /// The proxy's own request `method(params)` and its result, within `timeout`; a server that
    /// lets it time out is at fault.
    pub(super) async fn ask(
        &self,
        method: &str,
        params: &Value,
        timeout: std::time::Duration,
    ) -> Result<Reply, Unanswered> {
        let (reply, answer) = oneshot::channel();
        let id = lock(&self.pending).own_request(Waiter::Proxy(reply)).map_err(Unanswered::Failed)?;
        if !self.send(jsonrpc::request(&id, method, params)) {
            lock(&self.pending).answered(&id);
            return Err(Unanswered::Failed(self.down_reason()));
        }
        let mut answer = answer;
        let mut answered = tokio::time::timeout(timeout, &mut answer).await;
        if answered.is_err() && self.sign_in.as_ref().is_some_and(|sign_in| sign_in.under_way()) {
            // The request waits for the user to sign in, who has that long (and the server
            // then answers): not a server that hangs.
            answered = tokio::time::timeout(crate::upstream::auth::SIGN_IN_WAIT, &mut answer).await;
        }
        match answered {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => Err(Unanswered::Refused(error)),
            Ok(Err(_)) => Err(Unanswered::Failed(self.down_reason())),
            Err(_) => {
                lock(&self.pending).answered(&id);
                let reason = format!("{} did not answer {method} within {}s", self.label, timeout.as_secs_f64());
                // A server that does not answer what every server answers at once is hung,
                // unless it is busy with a client's request (a blocking tool call holds up
                // everything else a simple server reads).
                if !self.busy() {
                    self.fault(reason.clone());
                }
                Err(Unanswered::Failed(reason))
            }
        }
    }

    /// Whether a client's request waits for the server now.
    pub(super) fn busy(&self) -> bool {
        lock(&self.pending).any_waiting(|waiter| matches!(waiter, Waiter::Client(_)))
    }

    /// Whether the server said in the handshake that it tells when its tools change: then the
    /// list it gave last stands until it does.
    pub(super) fn announces_tool_changes(&self) -> bool {
        lock(&self.handshake_result)
            .as_ref()
            .is_some_and(|result| result.pointer("/capabilities/tools/listChanged") == Some(&Value::Bool(true)))
    }

    /// The server as the session's admission knows it: its names, and which of its tools the
    /// settings let through now.
    pub(super) fn admission_source(&self) -> Source {
        Source {
            name: self.name.clone(),
            pinned_as: self.pinned_as.clone(),
            label: self.label.clone(),
            filter: lock(&self.filter).clone().unwrap_or_else(ToolFilter::nothing),
        }
    }

    /// The client may see nothing of it any more (its view no longer shows it).
    pub(super) fn is_withdrawn(&self) -> bool {
        lock(&self.filter).is_none()
    }

    /// The settings say now that the client may see the tools `shown` lets through (`None`:
    /// nothing of this server); whether that changed.
    pub(super) fn narrow(&self, shown: Option<&crate::options::Shown>) -> bool {
        let next = shown.map(|shown| ToolFilter::of(shown.include.clone(), shown.exclude.clone()));
        let mut filter = lock(&self.filter);
        let changed = *filter != next;
        *filter = next;
        changed
    }

    /// The override source: as set, else the server's own name, else the fallback.
    pub(super) fn source(&self, default: Option<&String>) -> String {
        self.source
            .clone()
            .or_else(|| default.cloned())
            .or_else(|| lock(&self.server_name).clone())
            .unwrap_or_else(|| lock(&self.fallback_source).clone())
    }
}
