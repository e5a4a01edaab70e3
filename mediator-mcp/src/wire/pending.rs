//! Request bookkeeping: which requests wait for which side, under which ids, and what becomes
//! of them when a side cancels one or goes away. No I/O here: the router asks, then writes.

use std::collections::{HashMap, HashSet};

use crate::wire::jsonrpc::{INTERNAL_ERROR, INVALID_REQUEST, Id};

/// Requests waiting for either side at once; past this a request is answered with an error.
pub(crate) const MAX_WAITING: usize = 10_000;

/// The requests in flight through the proxy. `W` is what waits for a server's answer (the
/// router's: the client, or a request of the proxy's own).
pub(crate) struct Pending<W> {
    /// Requests sent to the server, by id: the client's and the proxy's own.
    upstream: HashMap<Id, W>,
    /// Requests the server sent the client.
    downstream: HashSet<Id>,
    counter: u64,
    /// Set once the server is gone: why, for every answer from then on.
    gone: Option<String>,
}

impl<W> Default for Pending<W> {
    fn default() -> Self {
        Pending { upstream: HashMap::new(), downstream: HashSet::new(), counter: 0, gone: None }
    }
}

/// Why a request does not go upstream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It is answered with this JSON-RPC error instead.
    Error { code: i64, reason: String },
}

impl<W> Pending<W> {
    /// Bookkeeping for a server that is not there (yet): every request is refused with `reason`.
    pub(crate) fn gone_with(reason: String) -> Self {
        Pending { gone: Some(reason), ..Pending::default() }
    }

    /// Whether any request waits for the server that `counts` (the client's, say).
    pub(crate) fn any_waiting(&self, counts: impl Fn(&W) -> bool) -> bool {
        self.upstream.values().any(counts)
    }

    /// A client request is about to go upstream, `waiter` waiting for its answer.
    pub(crate) fn client_request(&mut self, id: &Id, waiter: W) -> Result<(), Refusal> {
        if let Some(reason) = &self.gone {
            return Err(Refusal::Error { code: INTERNAL_ERROR, reason: reason.clone() });
        }
        if self.upstream.contains_key(id) {
            let reason = format!("request id {id} is already waiting for an answer");
            return Err(Refusal::Error { code: INVALID_REQUEST, reason });
        }
        if self.upstream.len() >= MAX_WAITING {
            let reason = format!("{MAX_WAITING} requests are already waiting for the MCP server");
            return Err(Refusal::Error { code: INTERNAL_ERROR, reason });
        }
        self.upstream.insert(id.clone(), waiter);
        Ok(())
    }

    /// A request of the proxy's own: its id, which no request waiting upstream has (a client is
    /// free to use any id), or why it cannot be sent.
    pub(crate) fn own_request(&mut self, waiter: W) -> Result<Id, String> {
        if let Some(reason) = &self.gone {
            return Err(reason.clone());
        }
        if self.upstream.len() >= MAX_WAITING {
            return Err(format!("{MAX_WAITING} requests are already waiting for the MCP server"));
        }
        let mut id = Id::own(self.counter);
        while self.upstream.contains_key(&id) || self.counter == 0 {
            self.counter += 1;
            id = Id::own(self.counter);
        }
        self.counter += 1;
        self.upstream.insert(id.clone(), waiter);
        Ok(id)
    }

    /// The server answered `id` (or the wait for it is over): who waited, if anyone.
    pub(crate) fn answered(&mut self, id: &Id) -> Option<W> {
        self.upstream.remove(id)
    }

    pub(crate) fn waits_upstream(&self, id: &Id) -> bool {
        self.upstream.contains_key(id)
    }

    /// The client cancelled `id`: whether a request of its own (`is_client`) was waiting for
    /// this server; it waits no more.
    pub(crate) fn client_cancelled(&mut self, id: &Id, is_client: impl Fn(&W) -> bool) -> bool {
        let waited = self.upstream.get(id).is_some_and(is_client);
        if waited {
            self.upstream.remove(id);
        }
        waited
    }

    /// The server asks the client `id`; false when too many of its requests already wait.
    pub(crate) fn server_request(&mut self, id: &Id) -> bool {
        if self.downstream.len() >= MAX_WAITING && !self.downstream.contains(id) {
            return false;
        }
        self.downstream.insert(id.clone());
        true
    }

    /// The client answered (or the server cancelled) `id`: whether the server had asked it.
    pub(crate) fn server_request_ended(&mut self, id: &Id) -> bool {
        self.downstream.remove(id)
    }

    pub(crate) fn waits_downstream(&self, id: &Id) -> bool {
        self.downstream.contains(id)
    }

    /// The server is gone, for `reason`: every request waiting upstream, to be told so; those
    /// made from now on are refused with the reason.
    pub(crate) fn server_gone(&mut self, reason: String) -> Vec<(Id, W)> {
        self.gone = Some(reason);
        self.upstream.drain().collect()
    }

    /// Why the server is gone, if it is.
    pub(crate) fn gone(&self) -> Option<&str> {
        self.gone.as_deref()
    }
}

/// Client requests being worked on here before they go to a server (listings, calls, the
/// handshake), and whether the client cancelled one meanwhile: then it is not sent at all.
#[derive(Default)]
pub(crate) struct Tasks(HashMap<Id, bool>);

impl Tasks {
    pub(crate) fn started(&mut self, id: &Id) {
        self.0.insert(id.clone(), false);
    }

    pub(crate) fn ended(&mut self, id: &Id) {
        self.0.remove(id);
    }

    /// The client cancelled `id`; whether it was being worked on here.
    pub(crate) fn cancel(&mut self, id: &Id) -> bool {
        self.0.get_mut(id).map(|cancelled| *cancelled = true).is_some()
    }

    /// Whether `id`, about to be sent, was cancelled meanwhile (it is then no longer tracked).
    pub(crate) fn take_cancelled(&mut self, id: &Id) -> bool {
        self.0.remove(id) == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(text: &str) -> Id {
        Id::written(text)
    }

    #[test]
    fn the_proxys_ids_never_collide_with_a_clients() {
        let mut pending: Pending<&str> = Pending::default();
        // The client took the id the proxy would have used next.
        let taken = Id::own(1);
        pending.client_request(&taken, "client").unwrap();
        let own = pending.own_request("proxy").unwrap();
        assert_ne!(own, taken);
        assert_eq!(pending.answered(&own), Some("proxy"));
        assert_eq!(pending.answered(&taken), Some("client"));
        assert_eq!(pending.answered(&taken), None, "an answer is delivered once");
    }

    #[test]
    fn a_client_id_already_waiting_is_refused() {
        let mut pending: Pending<&str> = Pending::default();
        pending.client_request(&id("7"), "first").unwrap();
        let refusal = pending.client_request(&id("7"), "second").unwrap_err();
        assert!(matches!(refusal, Refusal::Error { code: INVALID_REQUEST, .. }), "{refusal:?}");
        // The same id once answered may be used again.
        pending.answered(&id("7"));
        pending.client_request(&id("7"), "third").unwrap();
    }

    #[test]
    fn waiting_requests_are_bounded_on_both_sides() {
        let mut pending: Pending<()> = Pending::default();
        for n in 0..MAX_WAITING {
            pending.client_request(&id(&n.to_string()), ()).unwrap();
            assert!(pending.server_request(&id(&format!("\"s{n}\""))));
        }
        assert!(matches!(pending.client_request(&id("-1"), ()), Err(Refusal::Error { code: INTERNAL_ERROR, .. })));
        assert!(pending.own_request(()).is_err());
        assert!(!pending.server_request(&id("\"one more\"")));
        assert!(pending.server_request_ended(&id("\"s0\"")));
        assert!(pending.server_request(&id("\"one more\"")));
    }

    #[test]
    fn a_cancelled_request_waits_no_more_or_is_never_sent() {
        let mut pending: Pending<&str> = Pending::default();
        pending.client_request(&id("1"), "client").unwrap();
        assert!(pending.client_cancelled(&id("1"), |waiter| *waiter == "client"));
        assert!(!pending.waits_upstream(&id("1")));
        // Cancelled while worked on here: not sent when the work is done.
        let mut tasks = Tasks::default();
        tasks.started(&id("2"));
        assert!(tasks.cancel(&id("2")));
        assert!(tasks.take_cancelled(&id("2")));
        assert!(!tasks.cancel(&id("2")), "no longer tracked");
        // The proxy's own requests are not the client's to cancel.
        let own = pending.own_request("proxy").unwrap();
        assert!(!pending.client_cancelled(&own, |waiter| *waiter == "client"));
        assert!(pending.waits_upstream(&own));
    }

    #[test]
    fn when_the_server_is_gone_everyone_waiting_hears_why_and_no_one_waits_again() {
        let mut pending: Pending<&str> = Pending::default();
        pending.client_request(&id("1"), "client").unwrap();
        pending.own_request("proxy").unwrap();
        let mut waiting: Vec<&str> =
            pending.server_gone("it exited (status 1)".into()).into_iter().map(|(_, w)| w).collect();
        waiting.sort_unstable();
        assert_eq!(waiting, ["client", "proxy"]);
        assert_eq!(pending.gone(), Some("it exited (status 1)"));
        assert_eq!(
            pending.client_request(&id("2"), "client"),
            Err(Refusal::Error { code: INTERNAL_ERROR, reason: "it exited (status 1)".into() })
        );
        assert_eq!(pending.own_request("proxy"), Err("it exited (status 1)".into()));
    }
}
