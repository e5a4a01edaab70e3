//! Asking a live MCP server for its tools, as a client would, through the proxy itself (with no
//! mediation): for `lint --server` and `pin --server`. The proxy's limits, timeouts and its
//! ending of the server apply as they do for any client.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{ProxyOptions, Upstream};
use crate::chain::Mediator;
use crate::session::SessionPolicy;
use crate::tool::Tool;

/// How long the server has to answer the handshake, and the listing.
const ANSWER: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Proxy(#[from] super::ProxyError),
    #[error("the MCP server did not answer {0} within {1}s")]
    Timeout(&'static str, u64),
    #[error("the MCP server ended before answering {0}")]
    Ended(&'static str),
    #[error("the MCP server answered {0} with an error: {1}")]
    Refused(&'static str, String),
    #[error("the MCP server's {0} answer cannot be read: {1}")]
    Unreadable(&'static str, String),
}

/// The tools `server` lists, every page of them, as it wrote them.
pub async fn probe_tools(server: impl Into<Upstream>) -> Result<Vec<Tool>, ProbeError> {
    let (proxy_in, mut to_proxy) = tokio::io::duplex(64 * 1024);
    let (from_proxy, proxy_out) = tokio::io::duplex(1024 * 1024);
    let options = ProxyOptions::new(Arc::new(Mediator::builder().build()), SessionPolicy::default());
    let proxy = tokio::spawn(super::run(options, server.into(), proxy_in, proxy_out));
    let mut answers = BufReader::new(from_proxy).lines();
    // Id 0 sends a notification and waits for nothing.
    let mut ask = async move |id: u64, method: &'static str, params: Value| -> Result<Value, ProbeError> {
        let message = match id {
            0 => json!({"jsonrpc": "2.0", "method": method}),
            id => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        };
        let line = format!("{message}\n");
        to_proxy.write_all(line.as_bytes()).await.map_err(|_| ProbeError::Ended(method))?;
        if id == 0 {
            return Ok(Value::Null);
        }
        loop {
            let line = match tokio::time::timeout(ANSWER, answers.next_line()).await {
                Err(_) => return Err(ProbeError::Timeout(method, ANSWER.as_secs())),
                Ok(Ok(Some(line))) => line,
                Ok(_) => return Err(ProbeError::Ended(method)),
            };
            let message: Value =
                crate::json::from_str(&line).map_err(|error| ProbeError::Unreadable(method, error.to_string()))?;
            if message.get("id") != Some(&json!(id)) {
                continue; // a notification, or a request of the server's
            }
            if let Some(error) = message.get("error") {
                return Err(ProbeError::Refused(method, error.to_string()));
            }
            return Ok(message.get("result").cloned().unwrap_or(Value::Null));
        }
    };
    let handshake = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "tool-mediator", "version": env!("CARGO_PKG_VERSION")}});
    let listed = async {
        ask(1, "initialize", handshake).await?;
        ask(0, "notifications/initialized", Value::Null).await?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        // A server that keeps handing out cursors is listed this many pages.
        for id in 2..1_002 {
            let params = cursor.as_ref().map_or(json!({}), |cursor| json!({"cursor": cursor}));
            let mut page = ask(id, "tools/list", params).await?;
            let listed = page.get_mut("tools").map(Value::take).unwrap_or(Value::Array(Vec::new()));
            let listed: Vec<Tool> = serde_json::from_value(listed)
                .map_err(|error| ProbeError::Unreadable("tools/list", error.to_string()))?;
            tools.extend(listed);
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if Some(next) != cursor.as_deref() => cursor = Some(next.to_owned()),
                _ => break,
            }
        }
        Ok(tools)
    }
    .await;
    // The client closes: the proxy ends the server.
    drop(ask);
    let ended = tokio::time::timeout(Duration::from_secs(10), proxy).await;
    match (listed, ended) {
        // A server that could not start says why.
        (Err(ProbeError::Ended(_)), Ok(Ok(Err(error)))) => Err(error.into()),
        (listed, _) => listed,
    }
}
