//! The protocol revision a client speaks, and what it asks of the proxy. The stateless revision
//! (2026-07-28) carries a `_meta` envelope on every request and hears of tool list changes on
//! `subscriptions/listen` streams; the peers of 2025-03-26 must accept JSON-RPC batches.

use serde_json::{Value, json};

use crate::jsonrpc::{self, Id};

/// `_meta` keys of the stateless protocol revision (2026-07-28).
pub(super) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub(super) const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
pub(super) const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The protocol revisions there are, oldest first: what the proxy passes between peers that
/// agree on one of them.
pub const REVISIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The one revision whose peers must accept JSON-RPC batches (2025-06-18 removed them).
const BATCHING_REVISION: &str = "2025-03-26";

/// What the client's protocol revision asks of the proxy.
#[derive(Default)]
pub(super) struct Protocol {
    /// The client speaks the stateless revision: every request carries its `_meta` envelope.
    stateless: bool,
    /// That envelope, for the proxy's own requests upstream.
    envelope: Option<Value>,
    /// `subscriptions/listen` streams that asked for tool list changes.
    listeners: Vec<Id>,
    /// The protocol revision `initialize` agreed on.
    revision: Option<String>,
}

impl Protocol {
    /// A client request's `_meta`: one naming a protocol version marks the stateless revision,
    /// and is the envelope of the proxy's own requests from then on.
    pub(super) fn note_meta(&mut self, meta: Value) {
        if meta.get(PROTOCOL_VERSION_KEY).is_some() {
            self.stateless = true;
            self.envelope = Some(meta);
        }
    }

    /// The revision `initialize` agreed on.
    pub(super) fn agreed(&mut self, revision: &str) {
        self.revision = Some(revision.to_owned());
    }

    pub(super) fn batches_allowed(&self) -> bool {
        self.revision.as_deref() == Some(BATCHING_REVISION)
    }

    /// The envelope for a request of the proxy's own, if the client speaks the stateless revision.
    pub(super) fn envelope(&self) -> Option<Value> {
        self.envelope.clone()
    }

    /// The listen stream `stream` asked for tool list changes.
    pub(super) fn listen(&mut self, stream: Id) {
        self.listeners.push(stream);
    }

    pub(super) fn stop_listening(&mut self, stream: &Id) {
        self.listeners.retain(|listener| listener != stream);
    }

    /// Whether the stream a subscription id names (as JSON) listens for tool list changes.
    pub(super) fn is_listening(&self, stream: &Value) -> bool {
        self.listeners
            .iter()
            .any(|listener| serde_json::from_str::<Value>(listener.as_raw()).ok().as_ref() == Some(stream))
    }

    /// The line that tells the client its list of `what` (`prompts`, `resources`) changed; none
    /// under the stateless revision, whose streams the gateway keeps for tool changes only.
    pub(super) fn other_list_changed(&self, what: &str) -> Option<String> {
        (!self.stateless).then(|| jsonrpc::notification(&format!("notifications/{what}/list_changed"), None))
    }

    /// The lines that tell the client its tool list changed: one notification, or under the
    /// stateless revision one on each listen stream.
    pub(super) fn list_changed(&self) -> Vec<String> {
        if !self.stateless {
            return vec![jsonrpc::notification("notifications/tools/list_changed", None)];
        }
        self.listeners
            .iter()
            .map(|listener| {
                let stream: Value = serde_json::from_str(listener.as_raw()).unwrap_or(Value::Null);
                let params = json!({"_meta": {SUBSCRIPTION_ID_KEY: stream}});
                jsonrpc::notification("notifications/tools/list_changed", Some(&params))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_changes_go_where_the_revision_says() {
        let mut protocol = Protocol::default();
        assert_eq!(protocol.list_changed(), [r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#]);
        protocol.note_meta(json!({"other": 1}));
        assert_eq!(protocol.envelope(), None, "no protocol version, no envelope");
        protocol.note_meta(json!({PROTOCOL_VERSION_KEY: "2026-07-28"}));
        assert!(protocol.list_changed().is_empty(), "stateless, and no stream listens");
        protocol.listen(Id::written("\"s1\""));
        protocol.listen(Id::written("7"));
        assert!(protocol.is_listening(&json!("s1")) && protocol.is_listening(&json!(7)));
        protocol.stop_listening(&Id::written("7"));
        let lines = protocol.list_changed();
        assert_eq!(lines.len(), 1);
        assert!(lines[0].contains(r#""io.modelcontextprotocol/subscriptionId":"s1""#), "{}", lines[0]);
        assert_eq!(protocol.envelope(), Some(json!({PROTOCOL_VERSION_KEY: "2026-07-28"})));
    }

    #[test]
    fn only_2025_03_26_peers_take_batches() {
        let mut protocol = Protocol::default();
        assert!(!protocol.batches_allowed());
        protocol.agreed("2025-03-26");
        assert!(protocol.batches_allowed());
        protocol.agreed("2025-06-18");
        assert!(!protocol.batches_allowed());
    }
}
