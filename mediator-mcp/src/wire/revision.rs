//! The protocol revision a client speaks, and what it asks of the proxy. The stateless revision
//! (2026-07-28) carries a `_meta` envelope on every request and hears of tool list changes on
//! `subscriptions/listen` streams; the peers of 2025-03-26 must accept JSON-RPC batches.
//! Over HTTP, [`Envelope::check`] says whether a request's envelope is one the proxy serves.

use serde_json::{Value, json};

use crate::wire::jsonrpc::{self, INVALID_PARAMS, Id};

/// `_meta` keys of the stateless protocol revision (2026-07-28).
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
pub(crate) const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";
pub(crate) const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";

/// The revisions served without a handshake, each request carrying its `_meta` envelope.
pub const STATELESS_REVISIONS: [&str; 1] = ["2026-07-28"];

/// The HTTP headers do not match the body (2026-07-28, `HeaderMismatch`).
pub const HEADER_MISMATCH: i64 = -32020;
/// The request names a revision not served here (2026-07-28, `UnsupportedProtocolVersion`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The protocol revisions there are, oldest first: what the proxy passes between peers that
/// agree on one of them.
pub const REVISIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The one revision whose peers must accept JSON-RPC batches (2025-06-18 removed them).
const BATCHING_REVISION: &str = "2025-03-26";

/// What the client's protocol revision asks of the proxy.
#[derive(Default)]
pub(crate) struct Protocol {
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
    pub(crate) fn note_meta(&mut self, meta: Value) {
        if meta.get(PROTOCOL_VERSION_KEY).is_some() {
            self.stateless = true;
            self.envelope = Some(meta);
        }
    }

    /// The revision `initialize` agreed on.
    pub(crate) fn agreed(&mut self, revision: &str) {
        self.revision = Some(revision.to_owned());
    }

    /// Whether the client speaks the stateless revision (and hears of changes on streams).
    pub(crate) fn is_stateless(&self) -> bool {
        self.stateless
    }

    pub(crate) fn batches_allowed(&self) -> bool {
        self.revision.as_deref() == Some(BATCHING_REVISION)
    }

    /// The envelope for a request of the proxy's own, if the client speaks the stateless revision.
    pub(crate) fn envelope(&self) -> Option<Value> {
        self.envelope.clone()
    }

    /// The listen stream `stream` asked for tool list changes.
    pub(crate) fn listen(&mut self, stream: Id) {
        self.listeners.push(stream);
    }

    pub(crate) fn stop_listening(&mut self, stream: &Id) {
        self.listeners.retain(|listener| listener != stream);
    }

    /// Whether the stream a subscription id names (as JSON) listens for tool list changes.
    pub(crate) fn is_listening(&self, stream: &Value) -> bool {
        self.listeners
            .iter()
            .any(|listener| serde_json::from_str::<Value>(listener.as_raw()).ok().as_ref() == Some(stream))
    }

    /// The line that tells the client its list of `what` (`prompts`, `resources`) changed; none
    /// under the stateless revision, whose streams the gateway keeps for tool changes only.
    pub(crate) fn other_list_changed(&self, what: &str) -> Option<String> {
        (!self.stateless).then(|| jsonrpc::notification(&format!("notifications/{what}/list_changed"), None))
    }

    /// The lines that tell the client its tool list changed: one notification, or under the
    /// stateless revision one on each listen stream.
    pub(crate) fn list_changed(&self) -> Vec<String> {
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

/// What a result of the stateless revision carries that one of the 2025 revisions does not: its
/// `resultType`, and for a listing its cache hints (immediately stale, for this client alone),
/// added where missing to a result the gateway makes or takes from a server of those revisions.
pub(crate) fn complete_for_stateless(result: &mut serde_json::Map<String, Value>, listing: bool) {
    result.entry("resultType").or_insert_with(|| Value::from("complete"));
    if listing {
        result.entry("ttlMs").or_insert_with(|| Value::from(0));
        result.entry("cacheScope").or_insert_with(|| Value::from("private"));
    }
}

/// `params` without the stateless revision's envelope in its `_meta` (the keys of
/// `io.modelcontextprotocol/` a request of that revision carries), for a server of the 2025
/// revisions the gateway gave `initialize`; other `_meta` keys (a progress token) stay.
pub(crate) fn without_envelope(params: &mut Value) {
    let Some(Value::Object(meta)) = params.get_mut("_meta") else { return };
    meta.retain(|key, _| !ENVELOPE_KEYS.contains(&key.as_str()));
    if meta.is_empty()
        && let Some(params) = params.as_object_mut()
    {
        params.remove("_meta");
    }
}

/// The `_meta` keys of a stateless request's envelope.
const ENVELOPE_KEYS: [&str; 4] = [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY];

/// What a request says of its protocol revision over HTTP: its `MCP-Protocol-Version` header
/// and the `_meta` of its params.
pub struct Envelope<'a> {
    pub header: Option<&'a str>,
    pub meta: Option<&'a Value>,
}

/// Why a stateless request is refused before it reaches a server: its JSON-RPC error.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl Envelope<'_> {
    /// Whether the request is of the stateless revision: its `_meta` claims a protocol version,
    /// or its header names a stateless revision (then a missing envelope is its error).
    pub fn is_stateless(&self) -> bool {
        self.claimed().is_some() || self.header.is_some_and(|header| STATELESS_REVISIONS.contains(&header))
    }

    fn claimed(&self) -> Option<&Value> {
        self.meta.and_then(|meta| meta.get(PROTOCOL_VERSION_KEY))
    }

    /// Checks a stateless request as the revision asks, in its order: the envelope is whole
    /// (`-32602`), the header says what the body says (`-32020`), and the revision is served
    /// here (`-32022`, with the revisions that are).
    pub fn check(&self) -> Result<(), Refusal> {
        let refused = |code, message: &str, data| Err(Refusal { code, message: message.to_owned(), data });
        let Some(meta) = self.meta.filter(|meta| meta.is_object()) else {
            return refused(INVALID_PARAMS, "the request has no `_meta` envelope", None);
        };
        let Some(claimed) = meta.get(PROTOCOL_VERSION_KEY) else {
            return refused(INVALID_PARAMS, &format!("`_meta` has no `{PROTOCOL_VERSION_KEY}`"), None);
        };
        let Some(claimed) = claimed.as_str() else {
            return refused(INVALID_PARAMS, &format!("`_meta.{PROTOCOL_VERSION_KEY}` is not a string"), None);
        };
        if !meta.get(CLIENT_CAPABILITIES_KEY).is_some_and(Value::is_object) {
            return refused(INVALID_PARAMS, &format!("`_meta` has no `{CLIENT_CAPABILITIES_KEY}` object"), None);
        }
        match self.header {
            None => return refused(HEADER_MISMATCH, "the MCP-Protocol-Version header is missing", None),
            Some(header) if header != claimed => {
                let message = format!(
                    "Header mismatch: MCP-Protocol-Version header value '{header}' does not match body value '{claimed}'"
                );
                return refused(HEADER_MISMATCH, &message, None);
            }
            Some(_) => {}
        }
        if !STATELESS_REVISIONS.contains(&claimed) {
            let data = json!({"supported": STATELESS_REVISIONS, "requested": claimed});
            return refused(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", Some(data));
        }
        Ok(())
    }
}

/// The sentinel around a mirrored header's value sent as base64.
const BASE64_OPEN: &str = "=?base64?";
const BASE64_CLOSE: &str = "?=";

/// Base64 of the standard alphabet, written padded and read with or without padding.
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
);

/// A mirrored header's value (`Mcp-Name`, `Mcp-Param-*`) as the client meant it: the text in a
/// `=?base64?…?=` sentinel decoded (standard alphabet, padding optional), any other as it is;
/// `None` for a sentinel that is not base64 of UTF-8.
pub fn decode_header_value(value: &str) -> Option<String> {
    let Some(encoded) = value.strip_prefix(BASE64_OPEN).and_then(|rest| rest.strip_suffix(BASE64_CLOSE)) else {
        return Some(value.to_owned());
    };
    String::from_utf8(base64::Engine::decode(&BASE64, encoded).ok()?).ok()
}

/// `value` as a mirrored header carries it: as it is when it is visible ASCII or spaces, with
/// none at either end, and does not look like the sentinel; else in the sentinel, as base64 of
/// its UTF-8 (which also keeps a line end in a name from ending the header).
pub fn encode_header_value(value: &str) -> String {
    let plain = value.bytes().all(|byte| (0x20..=0x7e).contains(&byte))
        && value.trim_matches(' ') == value
        && !(value.starts_with(BASE64_OPEN) && value.ends_with(BASE64_CLOSE));
    if plain {
        value.to_owned()
    } else {
        format!("{BASE64_OPEN}{}{BASE64_CLOSE}", base64::Engine::encode(&BASE64, value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base64_header_value_is_decoded_and_a_plain_one_kept() {
        assert_eq!(decode_header_value("us-west1").as_deref(), Some("us-west1"));
        assert_eq!(decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(), Some("Hello, 世界"));
        assert_eq!(decode_header_value("=?base64?IHBhZGRlZCA=?=").as_deref(), Some(" padded "));
        assert_eq!(decode_header_value("=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=").as_deref(), Some("=?base64?literal?="));
        assert_eq!(decode_header_value("=?base64?not*base64?="), None);
    }

    #[test]
    fn a_header_value_is_encoded_only_when_it_must_be_and_decodes_back() {
        assert_eq!(encode_header_value("get_weather"), "get_weather");
        assert_eq!(encode_header_value("file:///a b"), "file:///a b");
        for value in ["Hello, 世界", " padded ", "=?base64?literal?=", "line\r\nX-Injected: 1", ""] {
            let encoded = encode_header_value(value);
            assert!(encoded.bytes().all(|byte| (0x20..=0x7e).contains(&byte)), "{encoded}");
            assert_eq!(decode_header_value(&encoded).as_deref(), Some(value), "{encoded}");
        }
        assert_eq!(encode_header_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    }

    fn envelope(version: &str) -> Value {
        json!({PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {}})
    }

    #[test]
    fn a_stateless_envelope_is_checked_in_the_revisions_order() {
        let code = |header: Option<&str>, meta: Option<&Value>| Envelope { header, meta }.check().err().map(|r| r.code);
        let good = envelope("2026-07-28");
        assert_eq!(code(Some("2026-07-28"), Some(&good)), None);
        assert_eq!(code(Some("2026-07-28"), None), Some(INVALID_PARAMS), "no envelope");
        assert_eq!(code(Some("2026-07-28"), Some(&json!({CLIENT_CAPABILITIES_KEY: {}}))), Some(INVALID_PARAMS));
        assert_eq!(code(Some("2026-07-28"), Some(&json!({PROTOCOL_VERSION_KEY: "2026-07-28"}))), Some(INVALID_PARAMS));
        assert_eq!(code(Some("2025-11-25"), Some(&good)), Some(HEADER_MISMATCH));
        assert_eq!(code(None, Some(&good)), Some(HEADER_MISMATCH));
        let unknown = envelope("v9");
        assert_eq!(code(Some("2026-07-28"), Some(&unknown)), Some(HEADER_MISMATCH), "a mismatch comes first");
        let refusal = Envelope { header: Some("v9"), meta: Some(&unknown) }.check().unwrap_err();
        assert_eq!(refusal.code, UNSUPPORTED_PROTOCOL_VERSION);
        assert_eq!(refusal.data, Some(json!({"supported": ["2026-07-28"], "requested": "v9"})));
    }

    #[test]
    fn a_request_is_stateless_by_its_envelope_or_its_header() {
        let good = envelope("2026-07-28");
        assert!(Envelope { header: None, meta: Some(&good) }.is_stateless());
        assert!(Envelope { header: Some("2026-07-28"), meta: None }.is_stateless());
        assert!(!Envelope { header: Some("2025-06-18"), meta: Some(&json!({"progressToken": 1})) }.is_stateless());
        assert!(!Envelope { header: None, meta: None }.is_stateless());
    }

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
