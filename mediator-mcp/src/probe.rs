//! Asking a live MCP server for its tools, as a client would, through the proxy itself (with no
//! mediation): for `lint --server` and `pin --server`. The proxy's limits, timeouts and its
//! ending of the server apply as they do for any client.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::options::ProxyOptions;
use crate::router::LEFT_OUT;
use crate::upstream::Upstream;
use tool_mediator::Mediator;
use tool_mediator::session::SessionPolicy;
use tool_mediator_core::Tool;

/// How long the server has to answer the handshake, and the listing.
const ANSWER: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error(transparent)]
    Proxy(#[from] crate::proxy::ProxyError),
    #[error("the MCP server did not answer {0} within {1}s")]
    Timeout(&'static str, u64),
    #[error("the MCP server ended before answering {0}")]
    Ended(&'static str),
    #[error("the MCP server answered {0} with an error: {1}")]
    Refused(&'static str, String),
    #[error("the MCP server's {0} answer cannot be read: {1}")]
    Unreadable(&'static str, String),
}

/// What a server lists: the tools that could be read, as it wrote them, and the ones that
/// could not (which a client never sees, and which nobody checked).
#[derive(Debug, Default)]
pub struct Probed {
    pub tools: Vec<Tool>,
    pub unreadable: Vec<Unreadable>,
}

impl Probed {
    /// Where each readable tool stands in the server's listing, which counts the unreadable ones.
    pub fn positions(&self) -> Vec<usize> {
        let mut skipped: Vec<usize> = self.unreadable.iter().map(|tool| tool.index).collect();
        skipped.sort_unstable();
        let mut skipped = skipped.into_iter().peekable();
        let mut positions = Vec::with_capacity(self.tools.len());
        let mut position = 0;
        while positions.len() < self.tools.len() {
            if skipped.next_if_eq(&position).is_none() {
                positions.push(position);
            }
            position += 1;
        }
        positions
    }
}

/// A tool the server listed that cannot be read.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Unreadable {
    /// Its position in the server's listing, every page counted.
    pub index: usize,
    pub name: String,
    pub reason: String,
}

/// A page of a `tools/list` result, each tool as text.
#[derive(serde::Deserialize)]
struct Page {
    #[serde(default)]
    tools: Vec<Box<RawValue>>,
    #[serde(rename = "nextCursor")]
    next_cursor: Option<String>,
    #[serde(rename = "_meta")]
    meta: Option<std::collections::HashMap<String, Box<RawValue>>>,
}

/// The tools `server` lists, every page of them, as it wrote them.
pub async fn probe_tools(server: impl Into<Upstream>) -> Result<Probed, ProbeError> {
    let (proxy_in, mut to_proxy) = tokio::io::duplex(64 * 1024);
    let (from_proxy, proxy_out) = tokio::io::duplex(1024 * 1024);
    let options = ProxyOptions::new(Arc::new(Mediator::builder().build()), SessionPolicy::default());
    let proxy = tokio::spawn(crate::proxy::run(options, server.into(), proxy_in, proxy_out));
    let mut answers = BufReader::new(from_proxy).lines();
    // Id 0 sends a notification and waits for nothing.
    // Answers are read as text and each tool on its own: a tool nested deeper than JSON is
    // read costs only itself, as in the proxy.
    let mut ask = async move |id: u64, method: &'static str, params: Value| -> Result<Box<RawValue>, ProbeError> {
        let message = match id {
            0 => json!({"jsonrpc": "2.0", "method": method}),
            id => json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        };
        let line = format!("{message}\n");
        to_proxy.write_all(line.as_bytes()).await.map_err(|_| ProbeError::Ended(method))?;
        if id == 0 {
            return Ok(RawValue::NULL.to_owned());
        }
        loop {
            let line = match tokio::time::timeout(ANSWER, answers.next_line()).await {
                Err(_) => return Err(ProbeError::Timeout(method, ANSWER.as_secs())),
                Ok(Ok(Some(line))) => line,
                Ok(_) => return Err(ProbeError::Ended(method)),
            };
            #[derive(serde::Deserialize)]
            struct Answer {
                id: Option<Value>,
                result: Option<Box<RawValue>>,
                error: Option<Box<RawValue>>,
            }
            let message: Answer =
                serde_json::from_str(&line).map_err(|error| ProbeError::Unreadable(method, error.to_string()))?;
            if message.id != Some(json!(id)) {
                continue; // a notification, or a request of the server's
            }
            if let Some(error) = message.error {
                return Err(ProbeError::Refused(method, error.get().to_owned()));
            }
            return Ok(message.result.unwrap_or_else(|| RawValue::NULL.to_owned()));
        }
    };
    let handshake = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                           "clientInfo": {"name": "tool-mediator", "version": env!("CARGO_PKG_VERSION")}});
    let listed = async {
        ask(1, "initialize", handshake).await?;
        ask(0, "notifications/initialized", Value::Null).await?;
        let mut probed = Probed::default();
        let mut cursor: Option<String> = None;
        // A server that keeps handing out cursors is listed this many pages.
        for id in 2..1_002 {
            let params = cursor.as_ref().map_or(json!({}), |cursor| json!({"cursor": cursor}));
            let page = ask(id, "tools/list", params).await?;
            let page: Page = serde_json::from_str(page.get())
                .map_err(|error| ProbeError::Unreadable("tools/list", error.to_string()))?;
            // The proxy names the tools it could not read, and lists only those it could.
            if let Some(left_out) = page.meta.as_ref().and_then(|meta| meta.get(LEFT_OUT)) {
                let left_out: Vec<Unreadable> = serde_json::from_str(left_out.get())
                    .map_err(|error| ProbeError::Unreadable("tools/list", error.to_string()))?;
                probed.unreadable.extend(left_out);
            }
            for tool in &page.tools {
                let tool = serde_json::from_str::<Tool>(tool.get())
                    .map_err(|error| ProbeError::Unreadable("tools/list", error.to_string()))?;
                probed.tools.push(tool);
            }
            match page.next_cursor {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                _ => break,
            }
        }
        Ok(probed)
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
