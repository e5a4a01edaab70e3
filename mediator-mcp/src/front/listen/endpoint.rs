//! The `/mcp` endpoint as HTTP sees it: the checks every request passes (its `Host`, its origin
//! and token, before its body is read), and POST, GET and DELETE, each handed to the session it
//! names (or, for the stateless revision, to [`super::stateless`]), with the answer sent as an
//! SSE stream or as JSON.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use tokio::sync::mpsc;

use super::{Front, Refused, SESSION, STREAM_QUEUE, Waiting, hangup, json_error, refusal, stateless, wants_stream};
use crate::front::access::Caller;
use crate::wire::jsonrpc::{INTERNAL_ERROR, INVALID_REQUEST, Id, Message};
use tool_mediator_core::sync::lock;

/// Checks every request before its body is read: another origin, or a missing or invalid
/// token, is refused before a byte of the body is held. The caller goes on with the request.
pub(super) async fn guard(
    State(front): State<Arc<Front>>,
    mut request: axum::extract::Request,
    next: Next,
) -> Response {
    match front.admit(request.headers()).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(refused) => refused,
    }
}

/// Refuses (400), whatever the path, a request whose `Host` is given twice or names userinfo
/// (`user@host`): HTTP allows neither (RFC 9112 3.2, RFC 9110 7.2), and the check of the site a
/// request names ([`Front::serves_host`]) would read another site than a party before it.
pub(super) async fn well_formed(request: axum::extract::Request, next: Next) -> Response {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return refusal(StatusCode::BAD_REQUEST, "more than one Host header");
    }
    if first.is_some_and(|host| host.as_bytes().contains(&b'@')) {
        return refusal(
            StatusCode::BAD_REQUEST,
            "the Host header names userinfo (user@host), which HTTP does not allow",
        );
    }
    next.run(request).await
}

/// The protected resource metadata (RFC 9728).
pub(super) async fn resource_metadata(State(front): State<Arc<Front>>) -> Response {
    match &front.listen.oauth {
        Some(resource) => {
            ([(header::CONTENT_TYPE, "application/json")], resource.metadata().to_string()).into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

pub(super) async fn on_post(
    State(front): State<Arc<Front>>,
    Extension(caller): Extension<Caller>,
    hangup: Option<Extension<hangup::Hangup>>,
    path: Option<Path<String>>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let view = match front.view_of(&caller, path.as_deref().map(String::as_str), &headers) {
        Ok(view) => view,
        Err(refused) => return refused.into_response(),
    };
    // A client that sends its body too slowly, or too much of it, is let go.
    let (limit, within) = (front.proxy.max_message_bytes, front.listen.read_timeout);
    let body: Bytes = match tokio::time::timeout(within, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(body)) => body,
        Ok(Err(error)) if is_too_large(&error) => {
            return refusal(StatusCode::PAYLOAD_TOO_LARGE, "the message is larger than --max-message-size");
        }
        Ok(Err(_)) => return refusal(StatusCode::BAD_REQUEST, "the body could not be read"),
        Err(_) => return refusal(StatusCode::REQUEST_TIMEOUT, "the body did not arrive within the read timeout"),
    };
    let message = match Message::parse(&body) {
        Ok(message) => message,
        Err(malformed) => {
            let id = malformed.id.unwrap_or_else(Id::null);
            return json_error(StatusCode::BAD_REQUEST, &id, malformed.code, &malformed.reason);
        }
    };
    let (id, method) = match &message {
        Message::Request { id, method, .. } => (Some(id.clone()), method.to_string()),
        Message::Batch(_) => {
            return json_error(StatusCode::BAD_REQUEST, &Id::null(), INVALID_REQUEST, "one message per request");
        }
        _ => (None, String::new()),
    };
    // Stopping, no new request is taken; a client's answer (to an elicitation a call under way
    // waits for) or its notification (a cancellation) still is.
    if id.is_some() && front.stopping.load(std::sync::atomic::Ordering::SeqCst) {
        return refusal(StatusCode::SERVICE_UNAVAILABLE, "the gateway is stopping");
    }
    let initialize = method == "initialize";
    if let Some(request) = stateless::Request::of(&headers, &message) {
        return stateless::answer(&front, &headers, request, view, hangup.as_ref().map(|Extension(hangup)| hangup))
            .await;
    }
    if let Err(refused) = Front::check_revision(&headers) {
        return refused.into_response();
    }
    let found = match (front.session(&headers, view.as_deref(), &caller), &id) {
        (Err(refused), _) => return refused.into_response(),
        (Ok(Some((_, session))), id) if session.is_closed() => {
            // Its server has ended: the client starts a new session, as the specification asks.
            let reason = session.ending();
            return json_error(StatusCode::NOT_FOUND, &id.clone().unwrap_or_else(Id::null), INTERNAL_ERROR, &reason);
        }
        (Ok(Some(found)), _) => found,
        (Ok(None), Some(id)) if initialize => match front.open(id, view, &caller) {
            Ok(opened) => opened,
            Err(refused) => return refused.into_response(),
        },
        (Ok(None), _) => {
            let id = id.unwrap_or_else(Id::null);
            return json_error(StatusCode::BAD_REQUEST, &id, INVALID_REQUEST, "no session: send initialize first");
        }
    };
    let (session_id, session) = found;
    let Some(id) = id else {
        // A notification or an answer: taken, nothing to wait for.
        return match session.send(body.to_vec()).await {
            true => StatusCode::ACCEPTED.into_response(),
            false => refusal(StatusCode::NOT_FOUND, "the session has ended"),
        };
    };
    let wants_stream = wants_stream(&headers);
    let Some(waiting) = session.wait_for(&id, &method, wants_stream, false) else {
        let reason = "a request with this id is already waiting";
        return json_error(StatusCode::BAD_REQUEST, &id, INVALID_REQUEST, reason);
    };
    if !session.send(body.to_vec()).await {
        return refusal(StatusCode::NOT_FOUND, "the session has ended");
    }
    let mut response = if wants_stream {
        Sse::new(until_answered(waiting)).keep_alive(KeepAlive::default()).into_response()
    } else {
        answer_as_json(waiting).await
    };
    if let Ok(value) = HeaderValue::from_str(&session_id) {
        response.headers_mut().insert(SESSION, value);
    }
    response
}

/// Whether reading a body failed on its length limit.
fn is_too_large(error: &axum::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = cause {
        if error.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        cause = error.source();
    }
    false
}

/// The messages for one POSTed request, ending with its answer.
fn until_answered(waiting: Waiting) -> impl futures_util::Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold((waiting, false), |(mut waiting, answered)| async move {
        if answered {
            return None;
        }
        let line = waiting.answers.recv().await?;
        let last = matches!(Message::parse(line.as_bytes()), Ok(Message::Response { id, .. }) if id == waiting.id);
        Some((Ok(Event::default().event("message").data(line)), (waiting, last)))
    })
}

/// Every message sent to a stream, as events.
fn events(messages: mpsc::Receiver<String>) -> impl futures_util::Stream<Item = Result<Event, Infallible>> {
    futures_util::stream::unfold(messages, |mut messages| async move {
        let line = messages.recv().await?;
        Some((Ok(Event::default().event("message").data(line)), messages))
    })
}

/// The answer alone, for a client that accepts no stream: nothing else is ever sent to it.
async fn answer_as_json(mut waiting: Waiting) -> Response {
    match waiting.answers.recv().await {
        Some(line) => ([(header::CONTENT_TYPE, "application/json")], line).into_response(),
        None => refusal(StatusCode::NOT_FOUND, "the session ended before answering"),
    }
}

/// What GET and DELETE check after the stateless revision's refusal: a revision the front knows,
/// and the session the request names, in the caller's view (`None` when it names none).
fn named_session(
    front: &Front,
    caller: &Caller,
    path: Option<&str>,
    headers: &HeaderMap,
) -> Result<Option<(String, Arc<super::Session>)>, Refused> {
    Front::check_revision(headers)?;
    front.view_of(caller, path, headers).and_then(|view| front.session(headers, view.as_deref(), caller))
}

pub(super) async fn on_get(
    State(front): State<Arc<Front>>,
    Extension(caller): Extension<Caller>,
    path: Option<Path<String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = stateless::refuse_other_methods(&headers) {
        return refused;
    }
    let session = match named_session(&front, &caller, path.as_deref().map(String::as_str), &headers) {
        Ok(session) => session,
        Err(refused) => return refused.into_response(),
    };
    let session = match session {
        Some((_, session)) if session.is_closed() => {
            return refusal(StatusCode::NOT_FOUND, "the session has ended");
        }
        Some((_, session)) => session,
        None => return refusal(StatusCode::BAD_REQUEST, "no session: send initialize first"),
    };
    let (stream, messages) = mpsc::channel(STREAM_QUEUE);
    *lock(&session.listening) = Some(stream);
    Sse::new(events(messages)).keep_alive(KeepAlive::default()).into_response()
}

pub(super) async fn on_delete(
    State(front): State<Arc<Front>>,
    Extension(caller): Extension<Caller>,
    path: Option<Path<String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = stateless::refuse_other_methods(&headers) {
        return refused;
    }
    let session = match named_session(&front, &caller, path.as_deref().map(String::as_str), &headers) {
        Ok(session) => session,
        Err(refused) => return refused.into_response(),
    };
    match session {
        None => refusal(StatusCode::BAD_REQUEST, "no session named"),
        Some((id, session)) => {
            lock(&front.sessions).remove(&id);
            session.end().await;
            StatusCode::OK.into_response()
        }
    }
}
