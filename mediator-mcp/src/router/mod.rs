//! Where each message goes, between one client and one or more MCP servers (a [`Link`] each).
//! Everything about tools goes through the [`Session`], which lists every server's tools as one
//! set and says which server a call goes to. With one server, everything else passes through as
//! its sender wrote it; with several, what names a server (a resource's URI, a prompt's name)
//! goes to that server, what concerns them all is sent to each, and the rest is refused (see
//! `aggregate`). Every line, from either side, takes one path in (`incoming`).
//!
//! Ids: a request the client sends keeps its id upstream (so cancellations and progress need no
//! mapping); the proxy's own requests use ids of their own (`"tool-mediator-N"`). Requests a
//! server sends the client keep theirs when there is one server, and are tagged with the
//! server's number when there are several ([`Id::tagged`]). Each direction of each server has
//! its own table of requests waiting for an answer, so id `0` from one side never answers id `0`
//! from the other.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::options::ProxyOptions;
use crate::warnings::Warnings;
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, Id};
use crate::wire::lines::{Outbox, Ready};
use crate::wire::pending::{Refusal, Tasks};
use crate::wire::revision::Protocol;
use tool_mediator::session::Session;
use tool_mediator_core::sync::lock;
use tool_mediator_core::{SourceType, ToolContext};

mod aggregate;
mod heard;
mod incoming;
mod link;
mod listing;
mod mediation;
pub(crate) mod supervisor;

pub(crate) use link::Link;
pub use link::LinkSettings;
use link::{Joining, Purpose, Reply, Unanswered, Waiter};
pub(super) use listing::LEFT_OUT;

/// A server that keeps handing out next cursors is listed this many pages at most.
const MAX_PAGES: usize = 1_000;

/// How long the client's handshake, a list or a call waits for a server being given the
/// handshake, from when it was given it: one that has not answered by then (a server that hangs
/// at `initialize`, or is slow to start) joins late, and the client hears its lists changed.
/// Long enough for a server started through `npx` or `uvx` to answer (a client that does not
/// listen for list changes would never see one that joins late), well within the time clients
/// give a handshake.
const JOIN_WINDOW: Duration = Duration::from_secs(10);

/// Once one server has answered the client's handshake, how much longer the others have
/// before the client is answered without them: a client should not wait the whole window for
/// a server that hangs. A server answering later still joins a listing asked within its window.
const JOIN_GRACE: Duration = Duration::from_secs(2);

/// `tools/list` and `tools/call` requests served at once; the client is not read meanwhile.
const TOOL_TASKS: usize = 64;

/// The client's next line can be taken on when every outbox has room and a tool request
/// could be served.
impl Ready for Router {
    async fn ready(&self) {
        for outbox in self.links.iter().filter_map(|link| link.outbox()) {
            outbox.has_room().await;
        }
        self.to_client.has_room().await;
        if self.client.tool_tasks.available_permits() == 0 {
            drop(self.client.tool_tasks.acquire().await);
        }
    }
}

pub(super) struct Router {
    told: Told,
    pub(super) to_client: Outbox,
    client: ClientSide,
    pub(super) links: Vec<Arc<Link>>,
    /// The servers' prompts and resources, as one.
    catalog: Mutex<aggregate::Catalog>,
    tools: Tools,
    warnings: Warnings,
}

/// How the router was set up: fixed for its life.
struct Told {
    /// The override source of a router with one server, as the proxy's `--source` gives it.
    source: Option<String>,
    max_message_bytes: usize,
    request_timeout: Duration,
    /// Whether a server that stops is started again: then its tools leave the list meanwhile.
    restarts: bool,
    /// Prefix every prompt with its server's name, as the session does tools.
    prefix: bool,
}

/// What the router keeps of its client: the revision it speaks, its handshake, its requests.
struct ClientSide {
    protocol: Mutex<Protocol>,
    /// The client's handshake (`initialize` or `server/discover` and its params), replayed to a
    /// server that starts again.
    handshake: Mutex<Option<(String, Value)>>,
    tasks: Mutex<Tasks>,
    /// `tools/list` and `tools/call` requests served at once ([`TOOL_TASKS`]).
    tool_tasks: Arc<tokio::sync::Semaphore>,
}

/// The tools: the session that mediates them, its chain, what the client heard of them and
/// what it was spared.
struct Tools {
    session: Arc<Session>,
    /// The session's chain, to tell what it does now from what took a listing in.
    mediator: Arc<tool_mediator::Mediator>,
    /// What the client was shown of the tool list, for announcing only what it was not.
    heard: Mutex<heard::Heard>,
    /// Where what the client was spared of the servers' listings is counted, when it is.
    savings: Option<Arc<crate::savings::Savings>>,
}

impl Router {
    pub(super) fn new(options: ProxyOptions, servers: Vec<LinkSettings>, to_client: Outbox) -> Arc<Router> {
        let links: Vec<Arc<Link>> =
            servers.into_iter().enumerate().map(|(index, settings)| Arc::new(Link::new(index, settings))).collect();
        let names = links.iter().map(|link| link.name.clone()).collect();
        let context = ToolContext::new(options.source.clone().unwrap_or_default(), SourceType::Api);
        let (mediator, changes) = (options.mediator.clone(), options.mediator.changes());
        let mut admission = tool_mediator::admission::Admission::default();
        if let Some(lock) = &options.lock {
            admission = admission.with_lock(lock.clone(), options.hide_changed);
        }
        if let Some(pins) = &options.pins {
            admission = admission.with_pins(pins.clone());
        }
        let session = Arc::new(
            Session::of_sources(options.mediator, context, names, options.policy.clone()).with_admission(admission),
        );
        let router = Arc::new(Router {
            told: Told {
                source: options.source,
                max_message_bytes: options.max_message_bytes,
                request_timeout: options.request_timeout,
                restarts: options.restart.is_some(),
                prefix: options.policy.prefix,
            },
            to_client,
            client: ClientSide {
                protocol: Mutex::default(),
                handshake: Mutex::default(),
                tasks: Mutex::default(),
                tool_tasks: Arc::new(tokio::sync::Semaphore::new(TOOL_TASKS)),
            },
            links,
            catalog: Mutex::default(),
            tools: Tools {
                session: session.clone(),
                mediator,
                heard: Mutex::default(),
                savings: options.savings.clone(),
            },
            warnings: Warnings::default(),
        });
        tokio::spawn(Router::follow(Arc::downgrade(&router), session.subscribe(), changes));
        tokio::spawn(Session::follow_reviews(Arc::downgrade(&session)));
        router
    }

    fn to_client(&self, line: String) {
        self.to_client.send(line);
    }

    /// Whether server `link` may be asked for its lists now: it runs and, once the client has
    /// shaken hands, it has been given the handshake too (with several servers; the proxy's one
    /// server is given it as the client sends it).
    fn serving(&self, link: &Link) -> bool {
        link.is_up()
            && !link.is_withdrawn()
            && match link.joining() {
                Joining::Done => true,
                Joining::UnderWay => false,
                Joining::Fresh => self.single().is_some() || lock(&self.client.handshake).is_none(),
            }
    }

    /// Returns once no server is being given the handshake, or each has had [`JOIN_WINDOW`]
    /// (within the request timeout) since it was given it: one that just started is waited for
    /// rather than left out of a list, and one that hangs holds up nothing for long.
    async fn joins_settled(&self) {
        let joining: Vec<Arc<Link>> =
            self.links.iter().filter(|link| link.is_up() && link.joining() == Joining::UnderWay).cloned().collect();
        if joining.is_empty() {
            // The usual case, on every call: no timer, nothing to wait for.
            return;
        }
        let window = self.told.request_timeout.min(JOIN_WINDOW);
        futures_util::future::join_all(joining.iter().map(|link| link.join_settled(window))).await;
    }

    /// While server `link` runs, pings it every [`ProxyOptions::request_timeout`] once it has
    /// been given the handshake: one that lets a ping time out is at fault ([`Link::ask`]), so a
    /// hung server is found even while nobody asks it anything.
    pub(super) async fn watch(&self, link: &Link) {
        loop {
            tokio::time::sleep(self.told.request_timeout).await;
            // A server busy with a client's request may not read a ping before it is done.
            if link.joining() == Joining::Done && !link.busy() {
                let _ = self.ask(link, "ping", json!({})).await;
            }
        }
    }

    /// Whether there is one server: then everything not about tools passes through as it came.
    fn single(&self) -> Option<&Arc<Link>> {
        match self.links.as_slice() {
            [link] => Some(link),
            _ => None,
        }
    }

    /// Ends the client's output once every queued line is written.
    pub(super) fn close_client_output(&self) {
        self.to_client.close();
    }

    /// Runs a tool request's work in a task of its own, within [`TOOL_TASKS`].
    fn spawn_tool_task(self: &Arc<Self>, id: Id, work: impl Future<Output = ()> + Send + 'static) {
        match self.client.tool_tasks.clone().try_acquire_owned() {
            Ok(permit) => {
                lock(&self.client.tasks).started(&id);
                let router = self.clone();
                tokio::spawn(async move {
                    work.await;
                    lock(&router.client.tasks).ended(&id);
                    drop(permit);
                });
            }
            Err(_) => {
                let reason = format!("{TOOL_TASKS} tool requests are already being served");
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
        }
    }

    /// Whether the revision in use has JSON-RPC batches (only 2025-03-26 does).
    fn batches_allowed(&self) -> bool {
        lock(&self.client.protocol).batches_allowed()
    }

    /// Logs the warnings held back since the last of their kind.
    pub(super) fn flush_warnings(&self) {
        self.warnings.flush();
    }

    /// Sends a client request to `link` as it came, waiting for its answer under its own id.
    fn forward_request(&self, link: &Link, id: Id, purpose: Purpose, line: &[u8]) {
        self.forward(link, id, purpose, lossless(line));
    }

    /// Whether the request went to `link`; if not, the client has its error answer.
    fn forward(&self, link: &Link, id: Id, purpose: Purpose, line: String) -> bool {
        if link.is_withdrawn() {
            let reason = format!("{} is not in this session's view any more", link.label);
            self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &reason));
            return false;
        }
        let line = link.in_its_revision(line);
        if lock(&self.client.tasks).take_cancelled(&id) {
            return false;
        }
        let refusal = lock(&link.pending).client_request(&id, Waiter::Client(purpose));
        match refusal {
            Err(Refusal::Error { code, reason }) => {
                self.to_client(jsonrpc::error_response(&id, code, &reason));
                false
            }
            Ok(()) => {
                if link.send(line) {
                    return true;
                }
                lock(&link.pending).answered(&id);
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &link.down_reason()));
                false
            }
        }
    }

    /// A request of the proxy's own to `link`, and its result.
    async fn ask(&self, link: &Link, method: &str, mut params: Value) -> Result<Reply, Unanswered> {
        if link.handshake_only.load(std::sync::atomic::Ordering::Relaxed) {
            crate::wire::revision::without_envelope(&mut params);
        }
        link.ask(method, &params, self.told.request_timeout).await
    }

    fn fail(&self, id: &Id, failure: Unanswered) {
        self.to_client(match failure {
            Unanswered::Refused(error) => jsonrpc::raw_error_response(id, error.get()),
            Unanswered::Failed(reason) => jsonrpc::error_response(id, INTERNAL_ERROR, &reason),
        });
    }

    /// Server `link` is gone: every request still waiting for it gets an error answer, now and
    /// until it starts again; if it will, its tools leave the list meanwhile.
    pub(super) fn server_gone(&self, link: &Link, reason: String) {
        let waiting = link.disconnected(reason.clone());
        for (id, waiter) in waiting {
            // The proxy's own requests fail when their sender drops, and answer the client then.
            if let Waiter::Client(_) = waiter {
                self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
            }
        }
        if self.told.restarts {
            self.tools.session.forget(link.index);
            self.catalog_changed();
        }
    }
}

/// A line that parsed as JSON-RPC, as text; parsing checked it is UTF-8.
fn lossless(line: &[u8]) -> String {
    String::from_utf8_lossy(line).into_owned()
}

/// The params of one page of a listing the proxy asks for: the cursor, and the client's `_meta`
/// envelope when it speaks the stateless revision.
fn page_params(cursor: Option<&str>, meta: Option<&Value>) -> Value {
    let mut params = Map::new();
    if let Some(cursor) = cursor {
        params.insert("cursor".to_owned(), Value::from(cursor));
    }
    if let Some(meta) = meta {
        params.insert("_meta".to_owned(), meta.clone());
    }
    Value::Object(params)
}
