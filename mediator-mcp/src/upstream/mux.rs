//! The sessions on one shared server, told apart (see [`super::pool`]): what a session sends
//! is relabelled on the way, its requests with ids of the pool's own, so two sessions' `1` are
//! told apart and an answer reaches the session that asked; its progress tokens too; and its
//! cancellation names the request as the server knows it. The server's answers get their
//! session's ids back. What sessions ask alike (the handshake, listings, subscriptions) is asked
//! once, and what the server sends of its own accord goes to the session it concerns, or to
//! every session, or to none. Pure bookkeeping over lines: no I/O, no task, no lock of its own.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::options::OUTBOX_BYTES;
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, Id};
use crate::wire::lines::Outbox;

/// The handshake a shared server is given as it starts: the gateway's, as the one client the
/// server has, at `revision`, with what the gateway passes on to the one session a request
/// concerns (a client without it answers with an error). Roots without `listChanged`: a
/// session's change of its roots is its own, and is not passed on.
pub(super) fn gateway_handshake(revision: &str) -> Value {
    serde_json::json!({
        "protocolVersion": revision,
        "capabilities": {"roots": {}, "sampling": {}, "elicitation": {}},
        "clientInfo": {"name": "tool-mediator", "title": "tool-mediator gateway", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The answer to a session's handshake: the server's, without what is the server's one client's
/// alone (tasks), at the revision the session asked for when the mediator knows it and it is
/// earlier than the server's (a server speaks the revisions before its own, as the SDKs do).
fn handshake_for(result: &str, params: Option<&RawValue>) -> String {
    #[derive(serde::Deserialize)]
    struct Asked {
        #[serde(rename = "protocolVersion")]
        protocol_version: String,
    }
    let Ok(Value::Object(mut answer)) = tool_mediator_core::json::from_str(result) else { return result.to_owned() };
    if let Some(Value::Object(capabilities)) = answer.get_mut("capabilities") {
        capabilities.remove("tasks");
    }
    let asked = params.and_then(|params| serde_json::from_str::<Asked>(params.get()).ok());
    let agreed = answer.get("protocolVersion").and_then(Value::as_str).unwrap_or_default().to_owned();
    if let Some(asked) = asked
        && crate::wire::revision::REVISIONS.contains(&asked.protocol_version.as_str())
        && !agreed.is_empty()
        && asked.protocol_version < agreed
    {
        answer.insert("protocolVersion".to_owned(), Value::from(asked.protocol_version));
    }
    Value::Object(answer).to_string()
}

/// Listing pages kept at once, and their bytes; past either, those kept are let go (the next
/// asks again).
const MAX_LISTINGS: usize = 256;
const MAX_LISTING_BYTES: usize = 64 * 1024 * 1024;
/// The server's requests waiting for a session's answer, at most, and for one session.
const MAX_SERVER_REQUESTS: usize = 1024;
const MAX_SERVER_REQUESTS_EACH: usize = 64;
/// Resources subscribed to at once, at most.
const MAX_SUBSCRIPTIONS: usize = 4096;

/// Who waits for an answer: a session, by its number, and the id it asked with. Session 0 is
/// the pool itself.
type Asker = (u64, Id);

/// The sessions on the shared server and what is under way between them.
pub(super) struct Mux {
    server: Arc<Outbox>,
    /// Numbers connections and the requests sent to the server.
    pub(super) next: u64,
    pub(super) connections: HashMap<u64, Arc<Outbox>>,
    /// Requests sent to the server, by the pool's id.
    forwarded: HashMap<Id, Forwarded>,
    /// The pool's id of each session's request under way.
    by_asker: HashMap<Asker, Id>,
    handshake: Handshake,
    /// Listing pages, by method and cursor.
    listings: HashMap<String, Listing>,
    /// The bytes of the pages kept.
    listed_bytes: usize,
    /// Listings under way when their list changed, by the pool's id: their answers go to those
    /// waiting, and are not kept.
    stale: HashMap<Id, Vec<Asker>>,
    /// The server's requests, waiting for the session each went to.
    server_requests: HashMap<Id, u64>,
    /// Progress tokens: the pool's, and the session's own.
    tokens: HashMap<Id, Asker>,
    /// Resources subscribed to, and by which sessions.
    subscriptions: HashMap<String, HashSet<u64>>,
    /// Resources whose first subscription is under way, with the sessions that asked for one
    /// meanwhile: they are answered as the server answers it.
    subscribing: HashMap<String, Vec<Asker>>,
    /// When the oldest ping the server left unanswered was sent, kept after the session that
    /// sent it gave up and left (as a session's supervisor does with a server that does not
    /// answer its ping): until the server answers anything, it hangs for every session.
    unanswered_ping: Option<Instant>,
}

struct Forwarded {
    asker: Asker,
    /// Its progress token, the pool's.
    token: Option<Id>,
    /// When it went to the server.
    sent: Instant,
    purpose: Purpose,
}

/// What a request sent to the server is, for what its answer does.
enum Purpose {
    /// A session's own: its answer goes back to it.
    Asked,
    /// A session's ping: answered as its own, and a sign of a server that hangs when it is not.
    Ping,
    /// The pool's handshake, every session's.
    Handshake,
    /// A listing page, by its key.
    Listing(String),
    /// A subscription to a resource, by its URI, which an error undoes.
    Subscribe(String),
    /// The pool's own (an unsubscription for sessions gone): its answer is dropped.
    Own,
}

enum Handshake {
    /// Under way: who waits, since when.
    Asked(Vec<Asker>, Instant),
    /// The result, as the server wrote it.
    Answered(String),
    /// The error it answered with, as it wrote it.
    Refused(String),
}

enum Listing {
    /// Under way, as the pool's request: who waits.
    Asked { waiters: Vec<Asker>, request: Id },
    /// The result, as the server wrote it.
    Kept(String),
}

impl Mux {
    pub(super) fn new(server: Arc<Outbox>) -> Mux {
        Mux {
            server,
            next: 0,
            connections: HashMap::new(),
            forwarded: HashMap::new(),
            by_asker: HashMap::new(),
            handshake: Handshake::Asked(Vec::new(), Instant::now()),
            listings: HashMap::new(),
            listed_bytes: 0,
            stale: HashMap::new(),
            server_requests: HashMap::new(),
            tokens: HashMap::new(),
            subscriptions: HashMap::new(),
            subscribing: HashMap::new(),
            unanswered_ping: None,
        }
    }

    /// Gives the server the gateway's handshake, at `revision`.
    pub(super) fn shake_hands(&mut self, revision: &str) {
        self.next += 1;
        let pooled = Id::pooled(self.next);
        self.handshake = Handshake::Asked(Vec::new(), Instant::now());
        let forwarded =
            Forwarded { asker: (0, pooled.clone()), token: None, sent: Instant::now(), purpose: Purpose::Handshake };
        self.forwarded.insert(pooled.clone(), forwarded);
        self.server.send(jsonrpc::request(&pooled, "initialize", &gateway_handshake(revision)));
    }

    /// Why the server is taken to hang: it refused the handshake, or left it, a listing or a
    /// ping unanswered for longer than `patience`.
    pub(super) fn hangs(&self, patience: Duration) -> Option<String> {
        match &self.handshake {
            Handshake::Refused(error) => return Some(format!("it refused the handshake: {error}")),
            Handshake::Asked(_, since) if since.elapsed() > patience => {
                return Some(format!("no answer to the handshake in {}s", patience.as_secs()));
            }
            _ => {}
        }
        let probes = self
            .forwarded
            .values()
            .filter(|forwarded| matches!(forwarded.purpose, Purpose::Ping | Purpose::Listing(_)))
            .map(|forwarded| forwarded.sent);
        probes
            .chain(self.unanswered_ping)
            .filter(|sent| sent.elapsed() > patience)
            .map(|_| format!("a ping or a listing unanswered for {}s", patience.as_secs()))
            .next()
    }

    /// The name the server gave itself in the handshake, once it has answered it.
    pub(super) fn server_name(&self) -> Option<String> {
        let Handshake::Answered(result) = &self.handshake else { return None };
        let result: Value = serde_json::from_str(result).ok()?;
        Some(result.pointer("/serverInfo/name")?.as_str()?.to_owned())
    }

    fn send_session(&mut self, connection: u64, line: String) {
        let Some(outbox) = self.connections.get(&connection) else { return };
        if outbox.queued() > OUTBOX_BYTES {
            // A session this far behind is let go: the server is not held up for it.
            tracing::warn!("a client session is {OUTBOX_BYTES} bytes behind a shared server; disconnected it");
            if let Some(outbox) = self.connections.remove(&connection) {
                outbox.close();
            }
            return self.forget(connection);
        }
        outbox.send(line);
    }

    fn send_every_session(&mut self, line: &str) {
        let connections: Vec<u64> = self.connections.keys().copied().collect();
        for connection in connections {
            self.send_session(connection, line.to_owned());
        }
    }

    /// A line of the pool's own for the server (an answer to its ping, a refusal): dropped when
    /// the server does not read, so a server that floods cannot grow the queue without end.
    fn send_server_own(&mut self, line: String) {
        if self.server.queued() > OUTBOX_BYTES {
            return tracing::debug!("a shared server does not read its input; an answer of the pool's dropped");
        }
        self.server.send(line);
    }

    pub(super) fn request(&mut self, connection: u64, id: Id, method: &str, params: Option<&RawValue>, line: &[u8]) {
        let token = progress_token(params);
        let forward = |mux: &mut Mux, asker: Asker, purpose: Purpose| {
            mux.forward(asker, purpose, line, token.clone());
        };
        match method {
            "initialize" => match &mut self.handshake {
                Handshake::Answered(result) => {
                    let answer = jsonrpc::response(&id, &handshake_for(result, params));
                    self.send_session(connection, answer);
                }
                Handshake::Refused(error) => {
                    let answer = jsonrpc::raw_error_response(&id, error);
                    self.send_session(connection, answer);
                }
                Handshake::Asked(waiters, _) => waiters.push((connection, id)),
            },
            "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" if token.is_none() => {
                let key = format!("{method} {}", cursor_of(params).unwrap_or_default());
                match self.listings.get_mut(&key) {
                    Some(Listing::Kept(result)) => {
                        let answer = jsonrpc::response(&id, result);
                        self.send_session(connection, answer);
                    }
                    Some(Listing::Asked { waiters, .. }) => waiters.push((connection, id)),
                    None => {
                        if self.listings.len() >= MAX_LISTINGS {
                            self.let_listings_go();
                        }
                        let waiters = vec![(connection, id.clone())];
                        let request = self.forward((connection, id), Purpose::Listing(key.clone()), line, None);
                        self.listings.insert(key, Listing::Asked { waiters, request });
                    }
                }
            }
            "resources/subscribe" | "resources/unsubscribe" => {
                let Some(uri) = uri_of(params) else {
                    return forward(self, (connection, id), Purpose::Asked);
                };
                let known = self.subscriptions.len();
                let subscribers = self.subscriptions.entry(uri.clone()).or_default();
                let (first, last) = if method == "resources/subscribe" {
                    let first = subscribers.is_empty();
                    if first && known >= MAX_SUBSCRIPTIONS {
                        self.subscriptions.remove(&uri);
                        let reason = format!("{MAX_SUBSCRIPTIONS} resources are subscribed to already");
                        return self.send_session(connection, jsonrpc::error_response(&id, INTERNAL_ERROR, &reason));
                    }
                    subscribers.insert(connection);
                    (first, false)
                } else {
                    let was = subscribers.remove(&connection);
                    (false, was && subscribers.is_empty())
                };
                if self.subscriptions.get(&uri).is_some_and(HashSet::is_empty) {
                    self.subscriptions.remove(&uri);
                }
                let under_way = method == "resources/subscribe" && !first;
                match (first, last) {
                    (true, _) => {
                        self.subscribing.insert(uri.clone(), Vec::new());
                        forward(self, (connection, id), Purpose::Subscribe(uri))
                    }
                    (_, true) => forward(self, (connection, id), Purpose::Asked),
                    // The first subscription is still under way: as the server answers it.
                    _ if under_way && self.subscribing.contains_key(&uri) => {
                        self.subscribing.entry(uri).or_default().push((connection, id));
                    }
                    // Others want it still, or had it already: the server's state is as asked.
                    _ => self.send_session(connection, jsonrpc::response(&id, "{}")),
                }
            }
            // The level of the server's one client: a session's choice is not the others'.
            "logging/setLevel" => self.send_session(connection, jsonrpc::response(&id, "{}")),
            method if method.starts_with("tasks/") => {
                let reason = "tasks of a server every session shares are not kept apart; give it \
                              \"scope\": \"session\" in the servers file";
                self.send_session(connection, jsonrpc::error_response(&id, INTERNAL_ERROR, reason));
            }
            "ping" => forward(self, (connection, id), Purpose::Ping),
            _ => forward(self, (connection, id), Purpose::Asked),
        }
    }

    /// Lets every kept page go (what is under way goes on).
    fn let_listings_go(&mut self) {
        self.listings.retain(|_, listing| matches!(listing, Listing::Asked { .. }));
        self.listed_bytes = 0;
    }

    /// Sends a session's request to the server under an id (and progress token) of the pool's;
    /// that id.
    fn forward(&mut self, asker: Asker, purpose: Purpose, line: &[u8], token: Option<Id>) -> Id {
        self.next += 1;
        let pooled = Id::pooled(self.next);
        let mut text = jsonrpc::with_top_level_id(line, &pooled);
        let token = match token {
            Some(theirs) => {
                self.next += 1;
                let ours = Id::pooled(self.next);
                text = jsonrpc::with_id(text.as_bytes(), "/params/_meta/progressToken", &ours);
                self.tokens.insert(ours.clone(), (asker.0, theirs));
                Some(ours)
            }
            None => None,
        };
        self.by_asker.insert(asker.clone(), pooled.clone());
        self.forwarded.insert(pooled.clone(), Forwarded { asker, token, sent: Instant::now(), purpose });
        self.server.send(text);
        pooled
    }

    pub(super) fn notification(&mut self, connection: u64, method: &str, params: Option<&RawValue>, line: &[u8]) {
        match method {
            // The server heard the pool's, after the pool's handshake.
            "notifications/initialized" => {}
            // A shared server has no one client's roots.
            "notifications/roots/list_changed" => {}
            "notifications/cancelled" => {
                let Some(id) = jsonrpc::cancelled_request(params) else { return };
                self.cancel(&(connection, id), line);
            }
            _ => self.server.send(lossless(line)),
        }
    }

    /// Session's request `asker` is cancelled: the server hears of it when it was the session's
    /// alone; one others wait for too goes on for them.
    fn cancel(&mut self, asker: &Asker, line: &[u8]) {
        let Some(pooled) = self.by_asker.remove(asker) else {
            return self.leave_waiting(asker.0, Some(&asker.1));
        };
        let alone = self
            .forwarded
            .get(&pooled)
            .is_some_and(|forwarded| matches!(forwarded.purpose, Purpose::Asked | Purpose::Ping));
        if alone {
            if let Some(forwarded) = self.forwarded.remove(&pooled) {
                self.drop_token(&forwarded);
            }
            self.server.send(jsonrpc::with_id(line, "/params/requestId", &pooled));
        } else {
            self.leave_waiting(asker.0, Some(&asker.1));
        }
    }

    /// Session `connection` waits no more for shared answers (for the one asked `id`, or all).
    fn leave_waiting(&mut self, connection: u64, id: Option<&Id>) {
        let leaves = |waiter: &Asker| waiter.0 == connection && id.is_none_or(|id| *id == waiter.1);
        if let Handshake::Asked(waiters, _) = &mut self.handshake {
            waiters.retain(|waiter| !leaves(waiter));
        }
        for listing in self.listings.values_mut() {
            if let Listing::Asked { waiters, .. } = listing {
                waiters.retain(|waiter| !leaves(waiter));
            }
        }
        for waiters in self.stale.values_mut() {
            waiters.retain(|waiter| !leaves(waiter));
        }
    }

    fn drop_token(&mut self, forwarded: &Forwarded) {
        if let Some(token) = &forwarded.token {
            self.tokens.remove(token);
        }
    }

    /// A session answered a request of the server's.
    pub(super) fn answer(&mut self, connection: u64, id: &Id, line: &[u8]) {
        if self.server_requests.get(id) == Some(&connection) {
            self.server_requests.remove(id);
            self.server.send(lossless(line));
        }
    }

    /// Session `connection` is gone.
    pub(super) fn forget(&mut self, connection: u64) {
        let gone: Vec<Id> = self
            .forwarded
            .iter()
            .filter(|(_, forwarded)| {
                forwarded.asker.0 == connection && matches!(forwarded.purpose, Purpose::Asked | Purpose::Ping)
            })
            .map(|(pooled, _)| pooled.clone())
            .collect();
        for pooled in gone {
            if let Some(forwarded) = self.forwarded.remove(&pooled) {
                self.by_asker.remove(&forwarded.asker);
                self.drop_token(&forwarded);
                if matches!(forwarded.purpose, Purpose::Ping) {
                    let oldest = self.unanswered_ping.map_or(forwarded.sent, |known| known.min(forwarded.sent));
                    self.unanswered_ping = Some(oldest);
                }
            }
            let params = serde_json::json!({"requestId": raw_value(&pooled), "reason": "the client session ended"});
            self.send_server_own(jsonrpc::notification("notifications/cancelled", Some(&params)));
        }
        self.by_asker.retain(|asker, _| asker.0 != connection);
        self.tokens.retain(|_, asker| asker.0 != connection);
        for waiting in self.subscribing.values_mut() {
            waiting.retain(|asker| asker.0 != connection);
        }
        self.leave_waiting(connection, None);
        let asked: Vec<Id> =
            self.server_requests.iter().filter(|(_, asked)| **asked == connection).map(|(id, _)| id.clone()).collect();
        for id in asked {
            self.server_requests.remove(&id);
            let reason = "the client session it was sent to has ended";
            self.send_server_own(jsonrpc::error_response(&id, INTERNAL_ERROR, reason));
        }
        let mut unwanted = Vec::new();
        self.subscriptions.retain(|uri, subscribers| {
            subscribers.remove(&connection);
            let empty = subscribers.is_empty();
            if empty {
                unwanted.push(uri.clone());
            }
            !empty
        });
        for uri in unwanted {
            self.next += 1;
            let pooled = Id::pooled(self.next);
            let forwarded =
                Forwarded { asker: (0, pooled.clone()), token: None, sent: Instant::now(), purpose: Purpose::Own };
            self.forwarded.insert(pooled.clone(), forwarded);
            let unsubscribe = jsonrpc::request(&pooled, "resources/unsubscribe", &serde_json::json!({"uri": uri}));
            self.send_server_own(unsubscribe);
        }
    }

    /// The server answered request `id` (the pool's): the session (or sessions) that asked
    /// get it under their own ids.
    pub(super) fn server_answer(&mut self, id: &Id, result: Option<&RawValue>, error: Option<&RawValue>, line: &[u8]) {
        // It answers: whatever ping it left unanswered, it does not hang.
        self.unanswered_ping = None;
        let Some(forwarded) = self.forwarded.remove(id) else {
            return tracing::debug!("an answer to {id}, which no session waits for; dropped");
        };
        self.by_asker.remove(&forwarded.asker);
        self.drop_token(&forwarded);
        let answer_to = |asker: &Asker| match (result, error) {
            (Some(result), _) => jsonrpc::response(&asker.1, result.get()),
            (None, Some(error)) => jsonrpc::raw_error_response(&asker.1, error.get()),
            (None, None) => jsonrpc::with_top_level_id(line, &asker.1),
        };
        let waiters = match forwarded.purpose {
            Purpose::Asked | Purpose::Ping => {
                let answer = jsonrpc::with_top_level_id(line, &forwarded.asker.1);
                return self.send_session(forwarded.asker.0, answer);
            }
            Purpose::Own => return,
            Purpose::Subscribe(uri) => {
                let mut askers = vec![forwarded.asker];
                askers.extend(self.subscribing.remove(&uri).unwrap_or_default());
                if result.is_none() {
                    if let Some(subscribers) = self.subscriptions.get_mut(&uri) {
                        for asker in &askers {
                            subscribers.remove(&asker.0);
                        }
                    }
                    if self.subscriptions.get(&uri).is_some_and(HashSet::is_empty) {
                        self.subscriptions.remove(&uri);
                    }
                }
                askers
            }
            Purpose::Handshake => {
                let waiters = match std::mem::replace(&mut self.handshake, Handshake::Refused(String::new())) {
                    Handshake::Asked(waiters, _) => waiters,
                    _ => Vec::new(),
                };
                match (result, error) {
                    (Some(result), _) => {
                        self.handshake = Handshake::Answered(result.get().to_owned());
                        self.server.send(jsonrpc::notification("notifications/initialized", None));
                        let answers: Vec<(u64, String)> = waiters
                            .iter()
                            .map(|waiter| (waiter.0, jsonrpc::response(&waiter.1, &handshake_for(result.get(), None))))
                            .collect();
                        for (connection, answer) in answers {
                            self.send_session(connection, answer);
                        }
                        return;
                    }
                    (None, error) => {
                        let error = error.map_or_else(|| "{}".to_owned(), |error| error.get().to_owned());
                        self.handshake = Handshake::Refused(error);
                    }
                }
                waiters
            }
            Purpose::Listing(key) => {
                if let Some(waiters) = self.stale.remove(id) {
                    waiters
                } else {
                    match self.listings.remove(&key) {
                        Some(Listing::Asked { waiters, .. }) => {
                            if let Some(result) = result {
                                let bytes = result.get().len();
                                if self.listed_bytes + bytes > MAX_LISTING_BYTES {
                                    self.let_listings_go();
                                }
                                self.listed_bytes += bytes;
                                self.listings.insert(key, Listing::Kept(result.get().to_owned()));
                            }
                            waiters
                        }
                        Some(kept) => {
                            self.listings.insert(key, kept);
                            Vec::new()
                        }
                        None => Vec::new(),
                    }
                }
            }
        };
        for waiter in &waiters {
            let answer = answer_to(waiter);
            self.send_session(waiter.0, answer);
        }
    }

    /// Request `id` (the pool's) gets no answer from the server: whoever waits hears why.
    pub(super) fn fail(&mut self, id: &Id, reason: &str) {
        let line = jsonrpc::error_response(id, INTERNAL_ERROR, reason);
        let error = serde_json::json!({"code": INTERNAL_ERROR, "message": reason}).to_string();
        let error = RawValue::from_string(error).ok();
        self.server_answer(id, None, error.as_deref(), line.as_bytes());
    }

    /// The session a request or a message of the server's concerns, and the line as it goes
    /// there: the session whose request it came with ([`jsonrpc::RELATED_REQUEST_KEY`], noted by
    /// the remote bridge for a message on a request's event stream). Over stdio a message says
    /// nothing of that, and no session is guessed at: not even the one with a request under way,
    /// whose call may not be what the server's message is about (another session's background
    /// job may be).
    fn concerned(&self, line: &[u8]) -> (Option<u64>, String) {
        let (related, line) = jsonrpc::take_related_request(line);
        let connection = related
            .and_then(|id| self.forwarded.get(&id))
            .map(|forwarded| forwarded.asker.0)
            .filter(|connection| self.connections.contains_key(connection));
        (connection, line)
    }

    pub(super) fn server_request(&mut self, id: Id, method: &str, line: &[u8]) {
        if method == "ping" {
            // Answered for every session: the pool is alive.
            return self.send_server_own(jsonrpc::response(&id, "{}"));
        }
        let (concerned, line) = self.concerned(line);
        let refusal = match concerned {
            _ if self.server_requests.len() >= MAX_SERVER_REQUESTS => {
                format!("{MAX_SERVER_REQUESTS} requests are already waiting for client sessions")
            }
            Some(connection)
                if self.server_requests.values().filter(|asked| **asked == connection).count()
                    >= MAX_SERVER_REQUESTS_EACH =>
            {
                format!("{MAX_SERVER_REQUESTS_EACH} requests are already waiting for that client session")
            }
            Some(connection) => {
                self.server_requests.insert(id, connection);
                return self.send_session(connection, line);
            }
            None => "which client session this concerns cannot be told: it came with no request of one \
                     (give the server \"scope\": \"session\" in the servers file)"
                .to_owned(),
        };
        self.send_server_own(jsonrpc::error_response(&id, INTERNAL_ERROR, &refusal));
    }

    pub(super) fn server_notification(&mut self, method: &str, params: Option<&RawValue>, line: &[u8]) {
        match method {
            "notifications/progress" => {
                let Some(token) = params.and_then(|params| id_at(params, "progressToken")) else { return };
                if let Some((connection, theirs)) = self.tokens.get(&token).cloned() {
                    let line = jsonrpc::with_id(line, "/params/progressToken", &theirs);
                    self.send_session(connection, line);
                }
            }
            "notifications/cancelled" => {
                let Some(id) = jsonrpc::cancelled_request(params) else { return };
                if let Some(connection) = self.server_requests.remove(&id) {
                    self.send_session(connection, lossless(line));
                }
            }
            "notifications/tools/list_changed"
            | "notifications/prompts/list_changed"
            | "notifications/resources/list_changed" => {
                let kind = method.trim_start_matches("notifications/").trim_end_matches("list_changed");
                // What is kept goes, and what is under way is answered but not kept: the answer
                // may be from before the change. A listing asked from now on asks again.
                let changed: Vec<String> = self.listings.keys().filter(|key| key.starts_with(kind)).cloned().collect();
                for key in changed {
                    match self.listings.remove(&key) {
                        Some(Listing::Asked { waiters, request }) => {
                            self.stale.insert(request, waiters);
                        }
                        Some(Listing::Kept(result)) => {
                            self.listed_bytes = self.listed_bytes.saturating_sub(result.len())
                        }
                        None => {}
                    }
                }
                self.send_every_session(&lossless(line));
            }
            "notifications/resources/updated" => {
                let Some(uri) = uri_of(params) else { return };
                let subscribers: Vec<u64> = self
                    .subscriptions
                    .get(&uri)
                    .map(|subscribers| subscribers.iter().copied().collect())
                    .unwrap_or_default();
                for connection in subscribers {
                    self.send_session(connection, lossless(line));
                }
            }
            "notifications/message" => match self.concerned(line) {
                (Some(connection), line) => self.send_session(connection, line),
                (None, _) => tracing::debug!("a log message of a shared server that concerns no one session; dropped"),
            },
            // Anything else may be one session's (a task's status, an elicitation completed):
            // which one cannot be told, so none hears it.
            _ => tracing::debug!("{method} from a shared server, which concerns no one session; dropped"),
        }
    }
}

fn lossless(line: &[u8]) -> String {
    String::from_utf8_lossy(line).into_owned()
}

/// The id (or token) as a JSON value, to write in a message of the pool's own.
fn raw_value(id: &Id) -> Value {
    serde_json::from_str(id.as_raw()).unwrap_or(Value::Null)
}

/// `params.uri`.
fn uri_of(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        uri: String,
    }
    serde_json::from_str::<Params>(params?.get()).ok().map(|params| params.uri)
}

/// `params.cursor`: a listing's page.
fn cursor_of(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Params {
        cursor: Option<String>,
    }
    serde_json::from_str::<Params>(params?.get()).ok()?.cursor
}

/// An id-like value (a string or an integer) at `key` of `params`.
fn id_at(params: &RawValue, key: &str) -> Option<Id> {
    let params: HashMap<String, &RawValue> = serde_json::from_str(params.get()).ok()?;
    Id::of(params.get(key)?)
}

/// The progress token a request's params carry in `_meta`. Most carry none: their params (a
/// call's arguments can be megabytes) are read only when the token's name is in them.
fn progress_token(params: Option<&RawValue>) -> Option<Id> {
    let params = params.filter(|params| params.get().contains("progressToken"))?;
    let params: HashMap<String, &RawValue> = serde_json::from_str(params.get()).ok()?;
    id_at(params.get("_meta")?, "progressToken")
}

#[cfg(test)]
mod tests {
    use tokio::sync::mpsc::UnboundedReceiver;

    use super::*;
    use crate::wire::jsonrpc::Message;
    use crate::wire::lines::Outgoing;

    /// A mux with the server's input and `sessions` connections, each read by the test.
    fn mux(sessions: u64) -> (Mux, UnboundedReceiver<Outgoing>, Vec<UnboundedReceiver<Outgoing>>) {
        let (server, to_server) = Outbox::new(OUTBOX_BYTES);
        let mut mux = Mux::new(Arc::new(server));
        mux.handshake = Handshake::Answered(
            r#"{"protocolVersion":"2025-11-25","capabilities":{"tools":{},"tasks":{}},"serverInfo":{"name":"s","version":"1"}}"#
                .to_owned(),
        );
        let mut heard = Vec::new();
        for number in 1..=sessions {
            let (outbox, queue) = Outbox::new(OUTBOX_BYTES);
            mux.connections.insert(number, Arc::new(outbox));
            heard.push(queue);
        }
        mux.next = sessions;
        (mux, to_server, heard)
    }

    fn lines(queue: &mut UnboundedReceiver<Outgoing>) -> Vec<Value> {
        let mut lines = Vec::new();
        while let Ok(Outgoing::Line(line)) = queue.try_recv() {
            lines.push(serde_json::from_str(&line).unwrap());
        }
        lines
    }

    fn from_session(mux: &mut Mux, connection: u64, message: Value) {
        let line = message.to_string();
        match Message::parse(line.as_bytes()).unwrap() {
            Message::Request { id, method, params } => mux.request(connection, id, &method, params, line.as_bytes()),
            Message::Notification { method, params } => mux.notification(connection, &method, params, line.as_bytes()),
            Message::Response { id, .. } => mux.answer(connection, &id, line.as_bytes()),
            Message::Batch(_) => unreachable!(),
        }
    }

    fn from_server(mux: &mut Mux, message: Value) {
        let line = message.to_string();
        match Message::parse(line.as_bytes()).unwrap() {
            Message::Response { id, result, error } => mux.server_answer(&id, result, error, line.as_bytes()),
            Message::Request { id, method, .. } => mux.server_request(id, &method, line.as_bytes()),
            Message::Notification { method, params } => mux.server_notification(&method, params, line.as_bytes()),
            Message::Batch(_) => unreachable!(),
        }
    }

    fn call(id: u64) -> Value {
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "t"}})
    }

    #[test]
    fn a_servers_request_reaches_only_the_session_whose_request_it_came_with() {
        let (mut mux, mut server, mut sessions) = mux(2);
        from_session(&mut mux, 1, call(5));
        let forwarded = lines(&mut server);
        assert_eq!(forwarded[0]["id"], "tool-mediator-pool-3", "under the pool's id: {forwarded:?}");
        // Session 1 alone has a call under way, but the server's request says nothing of it (it
        // may be about another session's background job): refused, and the log message dropped.
        let sampling =
            serde_json::json!({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}});
        from_server(&mut mux, sampling);
        assert!(lines(&mut sessions[0]).is_empty(), "no session is guessed at");
        let refused = lines(&mut server);
        assert_eq!((&refused[0]["id"], refused[0]["error"].is_object()), (&serde_json::json!("s1"), true));
        let log = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "B's"}});
        from_server(&mut mux, log);
        assert!(lines(&mut sessions[0]).is_empty() && lines(&mut sessions[1]).is_empty());
        // One that came with session 1's request (on its event stream) reaches session 1 alone,
        // without the note.
        let related = |message: Value| {
            let noted = jsonrpc::with_related_request(message.to_string().as_bytes(), &Id::pooled(3)).unwrap();
            serde_json::from_slice::<Value>(&noted).unwrap()
        };
        from_server(
            &mut mux,
            related(serde_json::json!({"jsonrpc": "2.0", "id": "s3",
            "method": "sampling/createMessage", "params": {"maxTokens": 1}})),
        );
        let asked = lines(&mut sessions[0]);
        assert_eq!(asked[0]["id"], "s3");
        assert_eq!(asked[0]["params"], serde_json::json!({"maxTokens": 1}), "the note is the pool's");
        from_server(
            &mut mux,
            related(serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"data": "A's"}})),
        );
        assert_eq!(lines(&mut sessions[0])[0]["params"]["data"], "A's");
        assert!(lines(&mut sessions[1]).is_empty());
        from_session(&mut mux, 2, call(5));
        lines(&mut server);
        let elicitation =
            serde_json::json!({"jsonrpc": "2.0", "id": "s2", "method": "elicitation/create", "params": {}});
        from_server(&mut mux, elicitation);
        let refused = lines(&mut server);
        assert_eq!(
            (&refused[0]["id"], refused[0]["error"].is_object()),
            (&serde_json::json!("s2"), true),
            "{refused:?}"
        );
        let message =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "secret"}});
        from_server(&mut mux, message);
        assert!(lines(&mut sessions[0]).is_empty() && lines(&mut sessions[1]).is_empty(), "neither hears the other's");
        // Each answer reaches its own session under its own id.
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": "tool-mediator-pool-4", "result": {"n": 2}}));
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": "tool-mediator-pool-3", "result": {"n": 1}}));
        let (first, second) = (lines(&mut sessions[0]), lines(&mut sessions[1]));
        assert_eq!((&first[0]["id"], &first[0]["result"]["n"]), (&serde_json::json!(5), &serde_json::json!(1)));
        assert_eq!((&second[0]["id"], &second[0]["result"]["n"]), (&serde_json::json!(5), &serde_json::json!(2)));
    }

    #[test]
    fn a_listing_under_way_when_the_list_changes_is_answered_but_not_kept() {
        let (mut mux, mut server, mut sessions) = mux(3);
        let list = |id: u64| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}});
        from_session(&mut mux, 1, list(1));
        let first = lines(&mut server)[0]["id"].clone();
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        assert_eq!(lines(&mut sessions[1])[0]["method"], "notifications/tools/list_changed", "every session hears it");
        // Asked after the change: asked again, not joined to the listing from before it.
        from_session(&mut mux, 2, list(1));
        let second = lines(&mut server)[0]["id"].clone();
        assert_ne!(first, second);
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": first, "result": {"tools": ["old"]}}));
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": second, "result": {"tools": ["new"]}}));
        assert_eq!(lines(&mut sessions[0]).last().unwrap()["result"]["tools"][0], "old");
        assert_eq!(lines(&mut sessions[1]).last().unwrap()["result"]["tools"][0], "new");
        // The listing from after the change is kept: a third session is answered from it.
        from_session(&mut mux, 3, list(9));
        assert!(lines(&mut server).is_empty(), "not asked again");
        assert_eq!(lines(&mut sessions[2]).last().unwrap()["result"]["tools"][0], "new");
    }

    /// A second session subscribing while the first one's subscription is under way is answered
    /// as the server answers the first: a refused subscription is refused to both, and neither
    /// is taken for subscribed.
    #[test]
    fn a_second_subscriber_is_answered_as_the_server_answers_the_first() {
        let (mut mux, mut server, mut sessions) = mux(3);
        let subscribe = |id: u64, uri: &str| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}});
        from_session(&mut mux, 1, subscribe(1, "file:///a"));
        let asked = lines(&mut server);
        assert_eq!(asked.len(), 1);
        from_session(&mut mux, 2, subscribe(7, "file:///a"));
        assert!(lines(&mut server).is_empty(), "the server is asked once");
        assert!(lines(&mut sessions[1]).is_empty(), "not answered before the server answers the first");
        let refusal = serde_json::json!({"code": -32602, "message": "no such resource"});
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": asked[0]["id"], "error": refusal}));
        assert_eq!(lines(&mut sessions[0])[0]["error"]["message"], "no such resource");
        let second = lines(&mut sessions[1]);
        assert_eq!(
            (&second[0]["id"], &second[0]["error"]["message"]),
            (&serde_json::json!(7), &serde_json::json!("no such resource"))
        );
        assert!(!mux.subscriptions.contains_key("file:///a"), "nobody is taken for subscribed");

        // Granted: both are answered, and a third, later, at once.
        from_session(&mut mux, 1, subscribe(2, "file:///b"));
        let asked = lines(&mut server);
        from_session(&mut mux, 2, subscribe(8, "file:///b"));
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": asked[0]["id"], "result": {}}));
        assert_eq!(lines(&mut sessions[1])[0]["id"], 8);
        from_session(&mut mux, 3, subscribe(4, "file:///b"));
        assert!(lines(&mut server).is_empty());
        assert_eq!(lines(&mut sessions[2])[0]["id"], 4);
        assert_eq!(mux.subscriptions["file:///b"].len(), 3);
    }

    #[test]
    fn tasks_a_change_of_roots_and_the_log_level_are_not_shared() {
        let (mut mux, mut server, mut sessions) = mux(1);
        let initialize = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
        from_session(&mut mux, 1, initialize);
        let answered = lines(&mut sessions[0]);
        assert_eq!(answered[0]["result"]["protocolVersion"], "2025-06-18", "at the session's earlier revision");
        assert!(answered[0]["result"]["capabilities"].get("tasks").is_none(), "{answered:?}");
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/list"}));
        from_session(
            &mut mux,
            1,
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel",
            "params": {"level": "debug"}}),
        );
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert!(lines(&mut server).is_empty(), "none of it reaches the server");
        let answered = lines(&mut sessions[0]);
        assert!(answered[0]["error"].is_object() && answered[1]["result"].is_object(), "{answered:?}");
    }

    #[test]
    fn a_ping_left_unanswered_by_a_session_that_gave_up_still_says_the_server_hangs() {
        let (mut mux, mut server, _sessions) = mux(2);
        let ping = serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
        from_session(&mut mux, 1, ping.clone());
        let pooled = lines(&mut server)[0]["id"].clone();
        // The session's supervisor found it unanswered, ended its connection, and connects again.
        mux.forget(1);
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).unwrap().contains("ping"), "the next connection restarts it");
        assert!(mux.hangs(Duration::from_secs(60)).is_none(), "within its patience");
        // Anything it answers says it is alive.
        from_session(&mut mux, 2, ping);
        let asked = lines(&mut server);
        let answered = asked.iter().find(|line| line["method"] == "ping").unwrap()["id"].clone();
        assert_ne!(answered, pooled);
        from_server(&mut mux, serde_json::json!({"jsonrpc": "2.0", "id": answered, "result": {}}));
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).is_none());
    }

    #[test]
    fn a_server_that_leaves_its_handshake_or_a_ping_unanswered_hangs() {
        let (server, _to_server) = Outbox::new(OUTBOX_BYTES);
        let mut mux = Mux::new(Arc::new(server));
        mux.shake_hands(crate::wire::revision::REVISIONS[3]);
        assert_eq!(mux.hangs(Duration::from_secs(60)), None, "asked just now");
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).unwrap().contains("handshake"));
        let (mut mux, _server, _sessions) = self::mux(1);
        from_session(&mut mux, 1, serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        std::thread::sleep(Duration::from_millis(5));
        assert!(mux.hangs(Duration::from_millis(1)).unwrap().contains("ping"));
        from_session(&mut mux, 1, call(2));
        assert!(mux.hangs(Duration::from_secs(60)).is_none(), "a long call is no sign of it");
    }
}
