//! The transport hook: what one connected client sees now, and where each of its calls goes.
//!
//! A transport (a browser bridge, an MCP server, a gateway, the proxy) hands a [`Session`] the
//! upstream tools and asks [`Session::list_tools`] what to show; it hands it each call and asks
//! [`Session::route_call`] where it goes. With the default [`SessionPolicy`] the session is a
//! passthrough: the same tools in the same order. With progressive disclosure, categories of
//! at least `threshold` tools fold into one category tool each (`<category>_tools`); calling it
//! lists the category's tools with their schemas and makes them visible and callable, and the
//! session emits a [`ListChanged`] event for the transport to turn into
//! `notifications/tools/list_changed`. A tool of an expanded category stays callable by name
//! even when the client never lists again; a tool of a collapsed category answers exactly as an
//! unknown tool does.

mod disclosure;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use tokio::sync::broadcast;

use crate::chain::Mediator;
use crate::naming::NameRules;
use crate::selection::UNCATEGORIZED;
use crate::tool::{EnhancedTool, Tool, ToolContext, UNENHANCED};

pub use disclosure::category_tool_name;

/// What the session does beyond passing tools through. The default does nothing: same tools,
/// same order.
#[derive(Debug, Clone)]
pub struct SessionPolicy {
    /// Fold categories of at least this many tools into one category tool each.
    pub disclosure: Option<usize>,
    /// List tools sorted by name (stable pages for clients that paginate).
    pub sort_by_name: bool,
    /// Put provenance under `_meta` for tools a transformer changed.
    pub provenance: bool,
    /// Tools per `tools/list` page; `None` answers in one page.
    pub page_size: Option<usize>,
    /// The names this client accepts; category tool names follow it too.
    pub names: NameRules,
}

impl Default for SessionPolicy {
    fn default() -> Self {
        SessionPolicy {
            disclosure: None,
            sort_by_name: false,
            provenance: false,
            page_size: None,
            names: NameRules::MCP,
        }
    }
}

impl SessionPolicy {
    /// Disclosure from `threshold` tools a category, name order, provenance, pages of 100.
    pub fn mediated(threshold: usize) -> Self {
        SessionPolicy {
            disclosure: Some(threshold.max(2)),
            sort_by_name: true,
            provenance: true,
            page_size: Some(100),
            names: NameRules::MCP,
        }
    }
}

/// One page of `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    pub tools: Vec<Tool>,
    /// Opaque; pass it back to get the next page.
    pub next_cursor: Option<String>,
}

/// Where a call goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// The session answered it (a category tool): an MCP `CallToolResult`.
    Local(Value),
    /// Send it upstream under the source's name, with arguments in the source's names.
    Upstream { name: String, arguments: Map<String, Value> },
    /// No such tool for this client now: answer as for an unknown tool.
    NotFound,
}

/// The visible tool list changed; the transport tells the client
/// (`notifications/tools/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListChanged;

/// A cursor this session did not hand out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor `{0}`")]
pub struct InvalidCursor(pub String);

#[derive(Default)]
struct State {
    /// The last upstream list, enhanced; `None` before the first listing.
    tools: Option<Vec<EnhancedTool>>,
    expanded: BTreeSet<String>,
    /// The names the client sees now, for telling real changes from no-ops.
    visible: Vec<String>,
}

/// One connected client's view of the tools.
pub struct Session {
    mediator: Arc<Mediator>,
    context: ToolContext,
    policy: SessionPolicy,
    state: Mutex<State>,
    events: broadcast::Sender<ListChanged>,
}

impl Session {
    pub fn new(mediator: Arc<Mediator>, context: ToolContext, policy: SessionPolicy) -> Self {
        let (events, _) = broadcast::channel(16);
        Session { mediator, context, policy, state: Mutex::new(State::default()), events }
    }

    /// A passthrough session: no transformers, no policy.
    pub fn passthrough(context: ToolContext) -> Self {
        Session::new(Arc::new(Mediator::builder().build()), context, SessionPolicy::default())
    }

    /// Events for the transport to turn into `notifications/tools/list_changed`. Fired only
    /// when the visible set changes.
    pub fn subscribe(&self) -> broadcast::Receiver<ListChanged> {
        self.events.subscribe()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the client sees: `upstream` enhanced, hidden tools left out, categories folded,
    /// sorted and paginated as the policy says.
    pub async fn list_tools(&self, upstream: Vec<Tool>, cursor: Option<&str>) -> Result<ListPage, InvalidCursor> {
        let offset = match cursor {
            None => 0,
            Some(cursor) => decode_cursor(cursor).ok_or_else(|| InvalidCursor(cursor.to_owned()))?,
        };
        let enhanced = self.mediator.enhance(upstream, &self.context).await;
        let listed = {
            let mut state = self.state();
            state.tools = Some(enhanced);
            self.visible_tools(&state)
        };
        self.note_visible(&listed);
        let page_size = self.policy.page_size.unwrap_or(usize::MAX).max(1);
        if offset > listed.len() {
            return Err(InvalidCursor(cursor.unwrap_or_default().to_owned()));
        }
        let end = offset.saturating_add(page_size).min(listed.len());
        let next_cursor = (end < listed.len()).then(|| encode_cursor(end));
        Ok(ListPage { tools: listed[offset..end].to_vec(), next_cursor })
    }

    /// Where the call `name(arguments)` goes.
    pub fn route_call(&self, name: &str, arguments: Map<String, Value>) -> Route {
        let mut state = self.state();
        let Some(tools) = &state.tools else {
            // Nothing listed yet: the session knows no better than the source.
            return Route::Upstream { name: name.to_owned(), arguments };
        };
        if let Some(category) = self.collapsed_categories(tools, &state.expanded).remove(name) {
            let members: Vec<&EnhancedTool> =
                tools.iter().filter(|tool| !tool.hidden && category_of(tool) == category).collect();
            let result = disclosure::expansion_result(&category, &members);
            state.expanded.insert(category);
            let listed = self.visible_tools(&state);
            drop(state);
            self.note_visible(&listed);
            return Route::Local(result);
        }
        let collapsed = self.collapsed_categories(tools, &state.expanded);
        let found = tools.iter().find(|tool| {
            tool.name() == name && !tool.hidden && !collapsed.values().any(|category| *category == category_of(tool))
        });
        match found {
            Some(tool) => {
                Route::Upstream { name: tool.original_name.clone(), arguments: tool.original_arguments(arguments) }
            }
            None => Route::NotFound,
        }
    }

    /// Category tool name -> category, for the categories folded now.
    fn collapsed_categories(&self, tools: &[EnhancedTool], expanded: &BTreeSet<String>) -> HashMap<String, String> {
        let Some(threshold) = self.policy.disclosure else { return HashMap::new() };
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for tool in tools.iter().filter(|tool| !tool.hidden) {
            if let Some(category) = tool.category.as_deref() {
                *counts.entry(category).or_default() += 1;
            }
        }
        let taken: BTreeSet<&str> = tools.iter().map(EnhancedTool::name).collect();
        counts
            .into_iter()
            .filter(|(category, count)| {
                *count >= threshold && *category != UNCATEGORIZED && !expanded.contains(*category)
            })
            .filter_map(|(category, _)| {
                let name = category_tool_name(category, self.policy.names)?;
                (!taken.contains(name.as_str())).then(|| (name, category.to_owned()))
            })
            .collect()
    }

    fn visible_tools(&self, state: &State) -> Vec<Tool> {
        let Some(tools) = &state.tools else { return Vec::new() };
        let collapsed = self.collapsed_categories(tools, &state.expanded);
        let folded: BTreeSet<&str> = collapsed.values().map(String::as_str).collect();
        let mut listed: Vec<Tool> = tools
            .iter()
            .filter(|tool| !tool.hidden && tool.category.as_deref().is_none_or(|category| !folded.contains(category)))
            .map(|tool| {
                if self.policy.provenance && tool.enhanced_by != UNENHANCED {
                    tool.to_consumer_tool()
                } else {
                    tool.tool.clone()
                }
            })
            .collect();
        for (name, category) in &collapsed {
            let members: Vec<&EnhancedTool> =
                tools.iter().filter(|tool| !tool.hidden && category_of(tool) == category.as_str()).collect();
            listed.push(disclosure::category_tool(name, category, &members));
        }
        if self.policy.sort_by_name {
            listed.sort_by(|a, b| a.name.cmp(&b.name));
        }
        listed
    }

    /// Remembers what the client sees; a different set fires one event.
    fn note_visible(&self, listed: &[Tool]) {
        let mut names: Vec<String> = listed.iter().map(|tool| tool.name.clone()).collect();
        names.sort();
        let changed = {
            let mut state = self.state();
            let changed = !state.visible.is_empty() && state.visible != names;
            state.visible = names;
            changed
        };
        if changed {
            // No subscriber is not an error: the transport may not listen.
            let _ = self.events.send(ListChanged);
        }
    }
}

fn category_of(tool: &EnhancedTool) -> &str {
    tool.category.as_deref().unwrap_or(UNCATEGORIZED)
}

const CURSOR_PREFIX: &str = "tm1.";

fn encode_cursor(offset: usize) -> String {
    format!("{CURSOR_PREFIX}{offset:x}")
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    usize::from_str_radix(cursor.strip_prefix(CURSOR_PREFIX)?, 16).ok()
}

/// The closure form, for hosts that only want `tools -> tools`
/// (the seed's `setToolMiddleware(tools => mediator.enhance(tools))`): enhanced, hidden tools
/// left out, provenance under `_meta` for changed tools.
pub fn tool_middleware(
    mediator: Arc<Mediator>,
    context: ToolContext,
) -> impl Fn(Vec<Tool>) -> futures_util::future::BoxFuture<'static, Vec<Tool>> + Send + Sync {
    move |tools| {
        let mediator = mediator.clone();
        let context = context.clone();
        Box::pin(async move {
            mediator
                .enhance(tools, &context)
                .await
                .into_iter()
                .filter(|tool| !tool.hidden)
                .map(|tool| if tool.enhanced_by == UNENHANCED { tool.tool } else { tool.into_consumer_tool() })
                .collect()
        })
    }
}

/// A `CallToolResult` with one text block, for errors a local tool reports.
pub fn text_result(text: impl Into<String>, is_error: bool) -> Value {
    json!({"content": [{"type": "text", "text": text.into()}], "isError": is_error})
}
