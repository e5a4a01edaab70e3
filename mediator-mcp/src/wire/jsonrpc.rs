//! JSON-RPC 2.0 framing for MCP's stdio transport: one message a line.
//!
//! A line is read as an envelope of borrowed raw parts, so a message the proxy does not change
//! is forwarded byte for byte, and one it changes keeps every part it does not touch (numbers
//! beyond `f64`, key order, escapes) exactly as the peer wrote it.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// JSON-RPC's codes, and MCP's for an unknown tool.
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;

/// A request id as its sender wrote it (`0`, `"a"`): compared and echoed verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Id(Box<str>);

impl Id {
    pub fn as_raw(&self) -> &str {
        &self.0
    }

    /// An id of the proxy's own, in a namespace no sane peer shares.
    pub fn own(counter: u64) -> Id {
        Id(format!("\"tool-mediator-{counter}\"").into())
    }

    /// The id a gateway gives a request server number `server` sent the client, unique among all
    /// its servers' ids: `"tool-mediator/<server>/<the server's id>"`.
    pub fn tagged(&self, server: usize) -> Id {
        let text = format!("tool-mediator/{server}/{}", self.0);
        Id(Value::String(text).to_string().into())
    }

    /// The server, and its own id, that a [`Id::tagged`] id stands for.
    pub fn untagged(&self) -> Option<(usize, Id)> {
        let text: String = serde_json::from_str(&self.0).ok()?;
        let (server, id) = text.strip_prefix("tool-mediator/")?.split_once('/')?;
        Some((server.parse().ok()?, Id(id.into())))
    }

    /// The id `raw` is, when it is one (a string or an integer).
    pub fn of(raw: &RawValue) -> Option<Id> {
        match Id::read(raw) {
            IdRead::Usable(id) => Some(id),
            IdRead::Unusable(_) => None,
        }
    }

    /// An id a shared server's pool gives the requests of its client sessions, unique among
    /// them all.
    pub fn pooled(counter: u64) -> Id {
        Id(format!("\"tool-mediator-pool-{counter}\"").into())
    }

    /// `null`: the id of an answer to a request whose id could not be read (JSON-RPC 5.1).
    pub fn null() -> Id {
        Id("null".into())
    }

    /// MCP's ids are strings or integers; a fraction, `null`, or anything else is not one.
    fn read(raw: &RawValue) -> IdRead {
        let text = raw.get();
        if text.starts_with('"') {
            return IdRead::Usable(Id(text.into()));
        }
        let digits = text.strip_prefix('-').unwrap_or(text);
        if !digits.is_empty() && digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return IdRead::Usable(Id(text.into()));
        }
        if digits.starts_with(|c: char| c.is_ascii_digit()) {
            // A fraction or an exponent: not an id, but the sender can still be told.
            return IdRead::Unusable(Id(text.into()));
        }
        IdRead::Unusable(Id::null())
    }
}

#[cfg(test)]
impl Id {
    /// An id as a peer would write it, for tests elsewhere in the proxy.
    pub(crate) fn written(text: &str) -> Id {
        Id(text.into())
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

enum IdRead {
    Usable(Id),
    /// Present but not a valid id; the id an error answer carries.
    Unusable(Id),
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    jsonrpc: Option<&'a RawValue>,
    // `"id": null` is present: a request with it is answered, not taken for a notification.
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    // `"result": null` is a result: present, even when null.
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// One line, read.
#[derive(Debug)]
pub enum Message<'a> {
    Request {
        id: Id,
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    Notification {
        method: Cow<'a, str>,
        params: Option<&'a RawValue>,
    },
    /// A result or an error, for the request `id`.
    Response {
        id: Id,
        result: Option<&'a RawValue>,
        error: Option<&'a RawValue>,
    },
    /// A JSON-RPC batch: only revision 2025-03-26 has them (its messages are then taken one by
    /// one); in any other, each request in one is answered with an error ([`batch_refusal`]).
    Batch(Vec<&'a RawValue>),
}

/// A line that is not a JSON-RPC message; `id` is set when one could be made out, and then
/// the sender gets `code` back.
#[derive(Debug)]
pub struct Malformed {
    pub id: Option<Id>,
    pub code: i64,
    pub reason: String,
    /// The line was meant as the answer to request `answers`, which its asker must hear of.
    pub answers: Option<Id>,
}

impl Malformed {
    /// A line that does not parse, `text` as far as it can be read. What it was meant as decides
    /// who hears of it by the id it seems to carry: the asker, for a broken answer; else its
    /// sender, for what is taken as a request (when nothing shows, too).
    fn unparsed(text: &str, reason: String) -> Malformed {
        let salvaged = salvage(text);
        let answer = salvaged.answer && !salvaged.request;
        Malformed {
            answers: salvaged.id.clone().filter(|_| answer),
            id: salvaged.id.filter(|_| !answer),
            code: PARSE_ERROR,
            reason,
        }
    }
}

impl<'a> Message<'a> {
    pub fn parse(line: &'a [u8]) -> Result<Message<'a>, Malformed> {
        let text = std::str::from_utf8(line).map_err(|error| {
            // Never forwarded; its sender still hears of it, by the id it can be read to carry.
            Malformed::unparsed(&String::from_utf8_lossy(line), format!("not UTF-8 ({error})"))
        })?;
        if text.trim_start().starts_with('[') {
            return match serde_json::from_str::<Vec<&'a RawValue>>(text) {
                Ok(items) => Ok(Message::Batch(items)),
                Err(error) => Err(Malformed {
                    id: None,
                    code: PARSE_ERROR,
                    reason: format!("not a JSON-RPC batch: {error}"),
                    answers: None,
                }),
            };
        }
        let envelope: Envelope<'a> = serde_json::from_str(text)
            .map_err(|error| Malformed::unparsed(text, format!("not a JSON-RPC object: {error}")))?;
        let is_request = envelope.method.is_some();
        let is_response = !is_request && (envelope.result.is_some() || envelope.error.is_some());
        let invalid = |id: Option<Id>, reason: &str| Malformed {
            // Only a request is answered; an answer to a broken answer would never end. A broken
            // answer is reported to whoever waits for it instead.
            answers: id.clone().filter(|_| is_response),
            id: id.filter(|_| is_request),
            code: INVALID_REQUEST,
            reason: reason.to_owned(),
        };
        let id = match envelope.id.map(Id::read) {
            None => None,
            Some(IdRead::Usable(id)) => Some(id),
            Some(IdRead::Unusable(id)) => {
                return Err(invalid(Some(id), "an id must be a string or an integer"));
            }
        };
        if envelope.jsonrpc.map(RawValue::get) != Some(r#""2.0""#) {
            return Err(invalid(id, r#"`"jsonrpc": "2.0"` is missing"#));
        }
        match (envelope.method, id, envelope.result.is_some() || envelope.error.is_some()) {
            (Some(method), Some(id), _) => Ok(Message::Request { id, method, params: envelope.params }),
            (Some(method), None, _) => Ok(Message::Notification { method, params: envelope.params }),
            (None, Some(id), true) => Ok(Message::Response { id, result: envelope.result, error: envelope.error }),
            (_, id, _) => Err(Malformed {
                id,
                code: INVALID_REQUEST,
                reason: "neither a request, a notification nor a response".to_owned(),
                answers: None,
            }),
        }
    }
}

/// What a line that did not parse (or was cut) shows at the top level of its object: its id,
/// and whether it is a request (`"method"`) or an answer (`"result"`, `"error"`), so that the
/// right side hears of it. Keys nested in params or a result are not the message's.
#[derive(Debug, Default, PartialEq)]
pub struct Salvaged {
    pub id: Option<Id>,
    pub request: bool,
    pub answer: bool,
}

impl Salvaged {
    /// Whether the line was an answer: what its keys say, or, when they say neither, whether
    /// someone waits for an answer with its id.
    pub fn is_answer(&self, waited_for: impl FnOnce(&Id) -> bool) -> bool {
        match (self.request, self.answer, &self.id) {
            (true, _, _) => false,
            (false, true, _) => true,
            (false, false, Some(id)) => waited_for(id),
            (false, false, None) => false,
        }
    }
}

pub fn salvage(text: &str) -> Salvaged {
    let bytes = text.as_bytes();
    let mut salvaged = Salvaged::default();
    let (mut depth, mut index) = (0usize, 0usize);
    while index < bytes.len() {
        match bytes[index] {
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                let start = index;
                index += 1;
                while index < bytes.len() && bytes[index] != b'"' {
                    index += if bytes[index] == b'\\' { 2 } else { 1 };
                }
                let rest = text.get(index + 1..).unwrap_or_default();
                let is_key = rest.trim_start().starts_with(':');
                match text.get(start..=index) {
                    Some("\"id\"") if depth == 1 && is_key && salvaged.id.is_none() => salvaged.id = id_after(rest),
                    Some("\"method\"") if depth == 1 && is_key => salvaged.request = true,
                    Some("\"result\"" | "\"error\"") if depth == 1 && is_key => salvaged.answer = true,
                    _ => {}
                }
            }
            _ => {}
        }
        index += 1;
    }
    salvaged
}

/// The id value after an `"id"` key: `: 12` or `: "a"`.
fn id_after(rest: &str) -> Option<Id> {
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = if let Some(string) = rest.strip_prefix('"') {
        1 + string.find('"')? + 1
    } else {
        rest.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(rest.len())
    };
    let parsed: &RawValue = serde_json::from_str(&rest[..end]).ok()?;
    match Id::read(parsed) {
        IdRead::Usable(id) => Some(id),
        IdRead::Unusable(_) => None,
    }
}

/// The request a `notifications/cancelled` names (`params.requestId`).
pub fn cancelled_request(params: Option<&RawValue>) -> Option<Id> {
    #[derive(Deserialize)]
    struct Cancelled<'a> {
        #[serde(borrow, rename = "requestId")]
        request_id: &'a RawValue,
    }
    let cancelled: Cancelled<'_> = serde_json::from_str(params?.get()).ok()?;
    match Id::read(cancelled.request_id) {
        IdRead::Usable(id) => Some(id),
        IdRead::Unusable(_) => None,
    }
}

/// The answer to a batch: for each request in it (an element with a method and an id), an
/// Invalid Request error, as one array; for an empty batch, one error with id `null`
/// (JSON-RPC 2.0, section 6). `None` when nothing in it asked for an answer.
pub fn batch_refusal(items: &[&RawValue]) -> Option<String> {
    const REASON: &str =
        "JSON-RPC batches are not part of MCP (removed in revision 2025-06-18); send one message a line";
    if items.is_empty() {
        return Some(error_response(&Id::null(), INVALID_REQUEST, "an empty JSON-RPC batch"));
    }
    let answers: Vec<String> = items
        .iter()
        .filter_map(|item| match Message::parse(item.get().as_bytes()) {
            Ok(Message::Request { id, .. }) => Some(error_response(&id, INVALID_REQUEST, REASON)),
            Ok(_) => None,
            Err(malformed) => malformed.id.map(|id| error_response(&id, malformed.code, &malformed.reason)),
        })
        .collect();
    (!answers.is_empty()).then(|| format!("[{}]", answers.join(",")))
}

/// `line` with the id at `pointer` (`/id`, `/params/requestId`, a progress token) replaced by
/// `id`; everything else kept as written.
pub fn with_id(line: &[u8], pointer: &str, id: &Id) -> String {
    let Ok(mut message) = tool_mediator_core::json::from_str(&String::from_utf8_lossy(line)) else {
        return String::from_utf8_lossy(line).into_owned();
    };
    if let (Some(slot), Ok(id)) = (message.pointer_mut(pointer), tool_mediator_core::json::from_str(id.as_raw())) {
        *slot = id;
    }
    message.to_string()
}

/// The `_meta` key under which the remote bridge notes the request a server's message came with
/// (on that request's event stream), for the pool to deliver it to the session that asked; taken
/// out before any client sees the message.
pub const RELATED_REQUEST_KEY: &str = "io.tool-mediator/relatedRequest";

/// `message` (a server's request or notification) noting that it came with request `id`; `None`
/// when it has no params object to note it in.
pub fn with_related_request(message: &[u8], id: &Id) -> Option<Vec<u8>> {
    let mut message = tool_mediator_core::json::from_str(std::str::from_utf8(message).ok()?).ok()?;
    let related = tool_mediator_core::json::from_str(id.as_raw()).ok()?;
    let params = message.as_object_mut()?.entry("params").or_insert_with(|| Value::Object(Default::default()));
    let meta = params.as_object_mut()?.entry("_meta").or_insert_with(|| Value::Object(Default::default()));
    meta.as_object_mut()?.insert(RELATED_REQUEST_KEY.to_owned(), related);
    Some(message.to_string().into_bytes())
}

/// The request `line` (a server's request or notification) was noted to come with, and the line
/// without the note (as it came when it has none).
pub fn take_related_request(line: &[u8]) -> (Option<Id>, String) {
    let as_it_came = || String::from_utf8_lossy(line).into_owned();
    if !line.windows(RELATED_REQUEST_KEY.len()).any(|window| window == RELATED_REQUEST_KEY.as_bytes()) {
        return (None, as_it_came());
    }
    let Ok(mut message) = tool_mediator_core::json::from_str(&String::from_utf8_lossy(line)) else {
        return (None, as_it_came());
    };
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else { return (None, as_it_came()) };
    let Some(meta) = params.get_mut("_meta").and_then(Value::as_object_mut) else { return (None, as_it_came()) };
    let related = meta.remove(RELATED_REQUEST_KEY);
    if meta.is_empty() {
        params.remove("_meta");
    }
    let id = related.and_then(|related| RawValue::from_string(related.to_string()).ok()).and_then(|raw| Id::of(&raw));
    (id, message.to_string())
}

/// `line` with its own id replaced by `id`, every other byte as written (and not read again:
/// a call's arguments can be megabytes).
pub fn with_top_level_id(line: &[u8], id: &Id) -> String {
    #[derive(Deserialize)]
    struct OnlyId<'a> {
        #[serde(borrow)]
        id: &'a RawValue,
    }
    let Ok(text) = std::str::from_utf8(line) else { return with_id(line, "/id", id) };
    match serde_json::from_str::<OnlyId<'_>>(text) {
        Ok(only) => {
            let start = (only.id.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
            let end = start + only.id.get().len();
            format!("{}{}{}", &text[..start], id.as_raw(), &text[end..])
        }
        Err(_) => with_id(line, "/id", id),
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` with the result's text as given.
pub fn response(id: &Id, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},"result":{result}}}"#, id.as_raw())
}

/// `{"jsonrpc":"2.0","id":…,"error":{…}}`.
pub fn error_response(id: &Id, code: i64, message: &str) -> String {
    let error = json!({"code": code, "message": message});
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.as_raw())
}

/// An error response with the error object as given.
pub fn raw_error_response(id: &Id, error: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},"error":{error}}}"#, id.as_raw())
}

/// A request of the proxy's own.
pub fn request(id: &Id, method: &str, params: &Value) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{},"method":{},"params":{params}}}"#, id.as_raw(), Value::from(method))
}

pub fn notification(method: &str, params: Option<&Value>) -> String {
    match params {
        Some(params) => format!(r#"{{"jsonrpc":"2.0","method":{},"params":{params}}}"#, Value::from(method)),
        None => format!(r#"{{"jsonrpc":"2.0","method":{}}}"#, Value::from(method)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_is_not_utf8_is_answered_by_the_id_it_carries() {
        let request = b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"a\xff\"}}";
        let malformed = Message::parse(request).unwrap_err();
        assert_eq!((malformed.id, malformed.code), (Some(Id::written("7")), PARSE_ERROR));
        let answer = b"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{\"x\":\"\xff\"}}";
        let malformed = Message::parse(answer).unwrap_err();
        assert_eq!((malformed.id, malformed.answers), (None, Some(Id::written("\"s\""))));
    }

    #[test]
    fn a_tagged_id_gives_back_the_server_and_its_id() {
        for raw in ["7", "-1", "\"a/b \\\" c\"", "\"tool-mediator/3/x\""] {
            let id = Id::written(raw);
            let tagged = id.tagged(12);
            assert!(tagged.as_raw().starts_with('"'), "{tagged:?}");
            assert_eq!(tagged.untagged(), Some((12, id)));
        }
        assert_eq!(Id::written("5").untagged(), None);
        assert_eq!(Id::written("\"tool-mediator-1\"").untagged(), None);
    }

    #[test]
    fn reads_the_four_shapes() {
        let request = Message::parse(br#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#).unwrap();
        assert!(matches!(request, Message::Request { ref id, .. } if id.as_raw() == "0"));
        let note = Message::parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(note, Message::Notification { .. }));
        let answer = Message::parse(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap();
        assert!(matches!(answer, Message::Response { ref id, .. } if id.as_raw() == r#""a""#));
        let failure = Message::parse(br#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}"#).unwrap();
        assert!(matches!(failure, Message::Response { error: Some(_), .. }));
    }

    #[test]
    fn escaped_methods_are_read() {
        let message = Message::parse(br#"{"jsonrpc":"2.0","id":1,"method":"tools\/call"}"#).unwrap();
        assert!(matches!(message, Message::Request { ref method, .. } if method == "tools/call"));
    }

    #[test]
    fn garbage_is_malformed_and_keeps_a_visible_id() {
        let broken = Message::parse(br#"{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"#).unwrap_err();
        assert_eq!(broken.code, PARSE_ERROR);
        assert_eq!(broken.id.unwrap().as_raw(), "12");
        let text = Message::parse(b"Starting server on stdio...").unwrap_err();
        assert!(text.id.is_none());
        let invalid = Message::parse(br#"{"jsonrpc":"2.0","id":"q"}"#).unwrap_err();
        assert_eq!((invalid.code, invalid.id.unwrap().as_raw()), (INVALID_REQUEST, r#""q""#));
        assert!(Message::parse(b"\xff\xfe").is_err());
        assert!(matches!(Message::parse(b"[1,2]"), Ok(Message::Batch(items)) if items.len() == 2));
        assert!(Message::parse(b"[1,").is_err());
    }

    #[test]
    fn ids_are_strings_or_integers() {
        for (line, answered) in [
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#, Some("1.5")),
            (r#"{"jsonrpc":"2.0","id":1e3,"method":"ping"}"#, Some("1e3")),
            (r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#, Some("null")),
            (r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, Some("null")),
            (r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#, Some("null")),
            (r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#, None),
        ] {
            let malformed = Message::parse(line.as_bytes()).unwrap_err();
            assert_eq!(malformed.code, INVALID_REQUEST, "{line}");
            assert_eq!(malformed.id.as_ref().map(Id::as_raw), answered, "{line}");
        }
        assert!(matches!(Message::parse(br#"{"jsonrpc":"2.0","id":-7,"method":"ping"}"#), Ok(Message::Request { .. })));
    }

    #[test]
    fn a_message_without_jsonrpc_2_0_is_refused() {
        for line in [
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#,
        ] {
            let malformed = Message::parse(line.as_bytes()).unwrap_err();
            assert_eq!(
                (malformed.code, malformed.id.map(|id| id.as_raw().to_owned())),
                (INVALID_REQUEST, Some("1".into()))
            );
        }
        let notification = Message::parse(br#"{"method":"notifications/initialized"}"#).unwrap_err();
        assert!(notification.id.is_none());
        // A broken answer is not answered, but its asker is named.
        let answer = Message::parse(br#"{"id":4,"result":{}}"#).unwrap_err();
        assert_eq!((answer.id, answer.answers.map(|id| id.as_raw().to_owned())), (None, Some("4".into())));
    }

    #[test]
    fn a_batch_is_answered_request_by_request() {
        let Ok(Message::Batch(items)) = Message::parse(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b","method":"tools/list"},{"id":3}]"#,
        ) else {
            panic!("a batch")
        };
        let answer: Value = serde_json::from_str(&batch_refusal(&items).unwrap()).unwrap();
        let answers = answer.as_array().unwrap();
        assert_eq!(answers.len(), 2);
        assert_eq!((answers[0]["id"].clone(), answers[1]["id"].clone()), (json!(1), json!("b")));
        assert!(answers.iter().all(|answer| answer["error"]["code"] == INVALID_REQUEST));
        let empty: Value = serde_json::from_str(&batch_refusal(&[]).unwrap()).unwrap();
        assert_eq!((empty["id"].clone(), empty["error"]["code"].clone()), (Value::Null, json!(INVALID_REQUEST)));
        let Ok(Message::Batch(notes)) = Message::parse(br#"[{"jsonrpc":"2.0","method":"a"}]"#) else { panic!() };
        assert!(batch_refusal(&notes).is_none());
    }

    #[test]
    fn a_null_result_is_a_result_and_nested_ids_are_not_the_id() {
        let answer = Message::parse(br#"{"jsonrpc":"2.0","id":5,"result":null}"#).unwrap();
        assert!(matches!(answer, Message::Response { result: Some(_), .. }));
        let cut = Message::parse(br#"{"method":"tools/call","params":{"arguments":{"id":3}},"id":9"#).unwrap_err();
        assert_eq!(cut.id.unwrap().as_raw(), "9");
        let nested_only = Message::parse(br#"{"method":"tools/call","params":{"id":3}"#).unwrap_err();
        assert!(nested_only.id.is_none());
        let escaped = Message::parse(br#"{"a":"\"id\":4","id":"x\"y","#).unwrap_err();
        assert!(escaped.id.is_none() || escaped.id.unwrap().as_raw() != "4");
    }

    #[test]
    fn a_cut_line_is_an_answer_or_a_request_by_its_top_level_keys() {
        let answer = salvage(r#"{"jsonrpc":"2.0","id":3,"result":{"structuredContent":{"method":"GET"#);
        assert_eq!(answer.id.as_ref().map(Id::as_raw), Some("3"));
        assert!(answer.is_answer(|_| false));
        let request = salvage(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"result":"#);
        assert!(!request.is_answer(|_| true));
        // Neither shows yet: an answer only if someone waits for that id.
        let unknown = salvage(r#"{"jsonrpc":"2.0","id":"a","params":{"#);
        assert!(unknown.is_answer(|id| id.as_raw() == r#""a""#) && !unknown.is_answer(|_| false));
    }

    #[test]
    fn a_null_id_answers_nothing() {
        let error = Message::parse(br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#);
        assert!(error.unwrap_err().id.is_none());
    }

    #[test]
    fn builders_keep_raw_parts() {
        let id = Id::own(3);
        assert_eq!(
            request(&id, "tools/list", &json!({})),
            r#"{"jsonrpc":"2.0","id":"tool-mediator-3","method":"tools/list","params":{}}"#
        );
        let answer = response(&Id("0".into()), r#"{"n":123456789012345678901234567890}"#);
        assert_eq!(answer, r#"{"jsonrpc":"2.0","id":0,"result":{"n":123456789012345678901234567890}}"#);
    }

    mod properties {
        use super::*;
        use proptest::prelude::*;

        fn id() -> impl Strategy<Value = String> {
            prop_oneof![
                any::<i64>().prop_map(|n| n.to_string()),
                "[1-9][0-9]{18,29}",
                "[a-z0-9 \\-]{0,12}".prop_map(|text| Value::from(text).to_string()),
            ]
        }

        proptest! {
            #[test]
            fn any_bytes_parse_or_are_malformed_without_panicking(line in prop::collection::vec(any::<u8>(), 0..200)) {
                let _ = Message::parse(&line);
            }

            #[test]
            fn a_request_keeps_its_id_to_the_byte(id in id(), method in "[a-z/]{1,12}") {
                let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"n":1.50}}}}"#);
                match Message::parse(line.as_bytes()) {
                    Ok(Message::Request { id: read, params, .. }) => {
                        prop_assert_eq!(read.as_raw(), id.as_str());
                        prop_assert_eq!(params.unwrap().get(), r#"{"n":1.50}"#);
                    }
                    other => prop_assert!(false, "{:?}", other),
                }
            }

            #[test]
            fn a_batch_gets_one_answer_per_request_in_it(ids in prop::collection::vec(prop::option::of(id()), 1..8)) {
                let items: Vec<String> = ids
                    .iter()
                    .map(|id| match id {
                        Some(id) => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#),
                        None => r#"{"jsonrpc":"2.0","method":"notifications/x"}"#.to_owned(),
                    })
                    .collect();
                let batch = format!("[{}]", items.join(","));
                let Ok(Message::Batch(parsed)) = Message::parse(batch.as_bytes()) else {
                    return Err(TestCaseError::fail("a batch"));
                };
                let requests: Vec<&String> = ids.iter().flatten().collect();
                match batch_refusal(&parsed) {
                    None => prop_assert!(requests.is_empty()),
                    Some(answer) => {
                        let answers: Vec<Value> = serde_json::from_str(&answer).unwrap();
                        prop_assert_eq!(answers.len(), requests.len());
                        for (answer, id) in answers.iter().zip(requests) {
                            prop_assert_eq!(answer["id"].to_string(), serde_json::from_str::<Value>(id).unwrap().to_string());
                        }
                    }
                }
            }
        }
    }
}
