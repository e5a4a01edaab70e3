//! What an operator watches and a load balancer asks. `/healthz`: the process serves. `/readyz`:
//! the servers every session shares were started and listed (so a client routed here waits for
//! neither), and the front is not stopping. `/metrics`, in the Prometheus text format (the
//! OpenMetrics flavour every Prometheus reads): requests by method, how many failed and how long
//! they took, the sessions open, the shared servers running and how often they were started, and
//! the cache's hits and misses, and what the mediation spared clients of the servers' tool
//! listings: in bytes, and in tokens at four bytes a token (an estimate; `tool-mediator tokens`
//! counts a listing's tokens exactly).
//!
//! `/healthz` and `/readyz` answer anyone who reaches the port (a probe carries no token) and say
//! nothing but whether; why `/readyz` is not ready goes to the log, and to a caller with the
//! token (or OAuth bearer token) `/mcp` takes. `/metrics` is guarded as `/mcp` is.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use serde_json::value::RawValue;

use super::Front;
use tool_mediator_core::sync::lock;

/// A request's method, as a label: one of MCP's, or `other` (a label's values stay few, whatever
/// a client sends).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct Method {
    method: &'static str,
}

impl Method {
    pub(super) fn of(method: &str) -> Method {
        const KNOWN: [&str; 16] = [
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "resources/list",
            "resources/templates/list",
            "resources/read",
            "resources/subscribe",
            "resources/unsubscribe",
            "prompts/list",
            "prompts/get",
            "completion/complete",
            "logging/setLevel",
            "server/discover",
            "subscriptions/listen",
            "tasks/get",
        ];
        Method { method: KNOWN.into_iter().find(|known| *known == method).unwrap_or("other") }
    }
}

/// The front's counters.
pub(super) struct Metrics {
    registry: Registry,
    requests: Family<Method, Counter>,
    failed: Family<Method, Counter>,
    seconds: Family<Method, Histogram>,
    sessions: Gauge,
    shared_running: Gauge,
    shared_starts: Counter,
    cache_hits: Counter,
    cache_misses: Counter,
    /// Counted by the sessions' routers as they answer first pages of tool listings.
    savings: Arc<crate::savings::Savings>,
    bytes_saved: Counter,
    tokens_saved: Counter,
}

impl Metrics {
    pub(super) fn new(savings: Arc<crate::savings::Savings>) -> Metrics {
        let mut registry = Registry::with_prefix("tool_mediator");
        let requests = Family::<Method, Counter>::default();
        let failed = Family::<Method, Counter>::default();
        // From a millisecond to about half a minute, doubling.
        let seconds =
            Family::<Method, Histogram>::new_with_constructor(|| Histogram::new(exponential_buckets(0.001, 2.0, 16)));
        let (sessions, shared_running) = (Gauge::default(), Gauge::default());
        let (shared_starts, cache_hits, cache_misses) = (Counter::default(), Counter::default(), Counter::default());
        registry.register("requests", "Client requests answered, by method", requests.clone());
        registry.register(
            "request_errors",
            "Client requests answered with an error (or a tool's error), by method",
            failed.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "How long client requests took to answer, by method",
            seconds.clone(),
        );
        registry.register("sessions", "Client sessions open (2025 revisions)", sessions.clone());
        registry.register(
            "shared_servers_running",
            "Servers every session shares that are running",
            shared_running.clone(),
        );
        registry.register(
            "shared_server_starts",
            "Times a shared server was started (or connected to)",
            shared_starts.clone(),
        );
        registry.register("cache_hits", "Answers of the language model read from the cache", cache_hits.clone());
        registry.register("cache_misses", "Answers of the language model not in the cache", cache_misses.clone());
        let (bytes_saved, tokens_saved) = (Counter::default(), Counter::default());
        registry.register(
            "listing_bytes_saved",
            "Bytes of the servers' tool listings clients were spared: listed less shown, each first page",
            bytes_saved.clone(),
        );
        registry.register(
            "listing_tokens_saved",
            "Tokens of the servers' tool listings clients were spared, estimated at four bytes a token (o200k_base's ratio over real listings)",
            tokens_saved.clone(),
        );
        Metrics {
            registry,
            requests,
            failed,
            seconds,
            sessions,
            shared_running,
            shared_starts,
            cache_hits,
            cache_misses,
            savings,
            bytes_saved,
            tokens_saved,
        }
    }

    /// A request of `method`, taken at `began`, answered with `answer` (a result or an error).
    pub(super) fn answered(&self, method: &Method, began: Instant, result: Option<&RawValue>, error: bool) {
        self.requests.get_or_create(method).inc();
        self.seconds.get_or_create(method).observe(began.elapsed().as_secs_f64());
        if error || result.is_some_and(is_tool_error) {
            self.failed.get_or_create(method).inc();
        }
    }

    /// The text `/metrics` serves: what is counted as it happens, and what is read now.
    fn encode(&self, front: &Front) -> String {
        self.sessions.set(i64::try_from(lock(&front.sessions).len()).unwrap_or(i64::MAX));
        let catalog = front.catalog();
        let running = catalog.shared().filter(|server| server.is_running()).count();
        self.shared_running.set(i64::try_from(running).unwrap_or(i64::MAX));
        raise(&self.shared_starts, catalog.shared().map(|server| server.starts()).sum());
        if let Some(cache) = &front.listen.cache {
            let (hits, misses) = cache.usage();
            raise(&self.cache_hits, hits);
            raise(&self.cache_misses, misses);
        }
        raise(&self.bytes_saved, self.savings.bytes());
        raise(&self.tokens_saved, self.savings.tokens());
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!("cannot write the metrics: {error}");
        }
        text
    }
}

/// A counter brought up to `total`, a count kept elsewhere that only grows.
fn raise(counter: &Counter, total: u64) {
    counter.inc_by(total.saturating_sub(counter.get()));
}

/// Whether a `tools/call` result says the tool failed (`isError`).
fn is_tool_error(result: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Result {
        #[serde(rename = "isError", default)]
        is_error: bool,
    }
    serde_json::from_str::<Result>(result.get()).is_ok_and(|result| result.is_error)
}

pub(super) async fn alive() -> Response {
    plain(StatusCode::OK, "alive")
}

/// Ready or not, and why not only to a caller that passes the check `/mcp` makes, with a token
/// to check: the reason names servers, commands and what a remote server answered. The log
/// has it too ([`warm_up`](super::warm_up)).
pub(super) async fn ready(State(front): State<Arc<Front>>, headers: HeaderMap) -> Response {
    let why = match front.stopping.load(Ordering::SeqCst) {
        true => Some("stopping".to_owned()),
        false => lock(&front.unready).clone(),
    };
    let Some(why) = why else { return plain(StatusCode::OK, "ready") };
    let guarded = front.listen.token.is_some() || front.listen.oauth.is_some();
    // A probe sends no token: it is not made to wait for a token's check.
    if guarded && headers.contains_key(header::AUTHORIZATION) && front.admit(&headers).await.is_ok() {
        return plain(StatusCode::SERVICE_UNAVAILABLE, &format!("not ready: {why}"));
    }
    plain(StatusCode::SERVICE_UNAVAILABLE, "not ready")
}

pub(super) async fn metrics(State(front): State<Arc<Front>>) -> Response {
    let text = front.metrics.encode(&front);
    ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text).into_response()
}

fn plain(status: StatusCode, text: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{text}\n")).into_response()
}
