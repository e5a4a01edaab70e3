//! Tool mediation: the session the proxy's client sees, listing each server's tools (only a list
//! that changed is taken in), relisting a server when its tools change, and calls routed to the
//! server of each tool.

use std::sync::{Arc, Weak};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, watch};

use super::link::{Link, Purpose, Reply, Unanswered};
use super::listing::{LEFT_OUT, LeftOut, Listing};
use super::{MAX_PAGES, Router, page_params};
use crate::options::ShownServers;
use crate::warnings::Warnings;
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, Id};
use crate::wire::revision::PROTOCOL_VERSION_KEY;
use tool_mediator::ChainChanges;
use tool_mediator::session::{ListChanged, Route};
use tool_mediator_core::sync::lock;
use tool_mediator_core::{SourceType, Tool, ToolContext};

/// The next change of what the chain does: true when it changed, false when it cannot any more.
async fn chain_changed(changes: &mut Option<ChainChanges>) -> bool {
    match changes {
        Some(changes) => changes.changed().await,
        None => std::future::pending().await,
    }
}

impl Router {
    /// Tells the client each time what it sees changes, and lists every server again when what
    /// the chain does changes (its override directories were read again), for as long as the
    /// router is in use: the session's events end with it.
    pub(super) async fn follow(
        router: Weak<Router>,
        mut events: broadcast::Receiver<ListChanged>,
        mut changes: Option<ChainChanges>,
    ) {
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                changed = chain_changed(&mut changes) => {
                    match changed {
                        true => match router.upgrade() {
                            Some(router) => router.take_in_again(),
                            None => return,
                        },
                        false => changes = None,
                    }
                    continue;
                }
            };
            match event {
                Ok(ListChanged) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
            let Some(router) = router.upgrade() else { return };
            let stateless = lock(&router.client.protocol).is_stateless();
            // Streams of the stateless revision are many clients' (one router behind the HTTP
            // front): one client's listing is no reason to keep another waiting.
            if stateless || lock(&router.tools.heard).changed(router.tools.session.generation()) {
                router.announce_tool_changes();
            }
        }
    }

    fn announce_tool_changes(&self) {
        let lines = lock(&self.client.protocol).list_changed();
        for line in lines {
            self.to_client(line);
        }
    }

    /// A listing was answered (or failed): the changes that came meanwhile are announced.
    fn listing_ended(&self) {
        let now = self.tools.session.generation();
        if lock(&self.tools.heard).listing_ended(now) && !lock(&self.client.protocol).is_stateless() {
            self.announce_tool_changes();
        }
    }

    /// The chain changed: every server's tools that were listed (or are being listed) are
    /// listed and taken in again, even if they did not change. A listing the change overtook
    /// is taken in again too.
    fn take_in_again(self: &Arc<Self>) {
        let listed = |link: &&Arc<Link>| link.listings_started.load(std::sync::atomic::Ordering::SeqCst) > 0;
        for link in self.links.iter().filter(listed).filter(|link| self.serving(link)) {
            self.relist_soon(link);
        }
    }

    /// Lists every page of a server's tools, as the server wrote them.
    pub(super) async fn fetch(&self, link: &Link, meta: Option<Value>) -> Result<Fetched, Unanswered> {
        let meta = meta.or_else(|| lock(&self.client.protocol).envelope());
        let mut pages = Vec::new();
        let mut listed_bytes = 0usize;
        let mut rest = None;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let raw = self.ask(link, "tools/list", page_params(cursor.as_deref(), meta.as_ref())).await?;
            // Every page is held until the listing is whole: together they are held to the
            // limit of one message.
            listed_bytes += raw.get().len();
            if listed_bytes > self.told.max_message_bytes {
                return Err(Unanswered::Failed(format!(
                    "{}'s tools/list passed {} bytes over its pages, the proxy's limit \
                     for one message (--max-message-size)",
                    link.label, self.told.max_message_bytes
                )));
            }
            let unusable = |error: serde_json::Error| {
                Unanswered::Failed(format!("the server's tools/list result is not a JSON object: {error}"))
            };
            let mut page = Map::new();
            let mut has_tools = false;
            for (key, value) in tool_mediator_core::json::object_members(raw.get()).map_err(unusable)? {
                if key == "tools" {
                    has_tools = value.get().starts_with('[');
                } else {
                    page.insert(key, tool_mediator_core::json::from_str(value.get()).map_err(unusable)?);
                }
            }
            if !has_tools {
                return Err(Unanswered::Failed("the server's tools/list result has no `tools` array".to_owned()));
            }
            pages.push(raw);
            let next = page.shift_remove("nextCursor");
            rest.get_or_insert(page);
            match next {
                Some(Value::String(next)) if !next.is_empty() && cursor.as_deref() != Some(next.as_str()) => {
                    cursor = Some(next)
                }
                _ => return Ok(Fetched { pages, rest: rest.unwrap_or_default() }),
            }
        }
        tracing::warn!("{} handed out {MAX_PAGES} pages of tools; listed those", link.label);
        Ok(Fetched { pages, rest: rest.unwrap_or_default() })
    }

    /// Lists server `link`'s tools and hands them to the session if they changed; returns what
    /// the client's answer keeps of the server's result.
    ///
    /// One listing at a time per server: a listing asked for while another runs waits for it,
    /// and is served by the next one that starts after it was asked for, so an older list never
    /// overwrites a newer one and concurrent askers share one listing (and one pass through the
    /// chain).
    pub(super) async fn list_upstream(
        self: &Arc<Self>,
        link: &Link,
        meta: Option<Value>,
    ) -> Result<Map<String, Value>, Unanswered> {
        let asked = link.listings_started.load(std::sync::atomic::Ordering::SeqCst);
        let mut finished = link.listing_gate.lock().await;
        if *finished > asked
            && let Some(listing) = lock(&link.listing).as_ref()
        {
            return Ok(listing.rest.clone());
        }
        let number = link.listings_started.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let fetched = self.fetch(link, meta).await?;
        // What was left out of a list that has not changed is left out still (and what the
        // session's admission held back of it is held still).
        // Read before the chain takes the tools in: a change meanwhile is taken in next time.
        let chain = self.tools.mediator.version();
        let (known, known_chain, left_out) = match lock(&link.listing).as_ref() {
            Some(known) => (Some(known.fingerprint), known.chain.clone(), known.left_out.clone()),
            None => (None, chain.clone(), Vec::new()),
        };
        let taken_by_an_earlier_chain = known_chain != chain;
        let mut listing = Listing {
            fingerprint: fetched.fingerprint(),
            rest: fetched.rest.clone(),
            bytes: fetched.bytes(),
            left_out,
            chain,
        };
        if known != Some(listing.fingerprint) || taken_by_an_earlier_chain {
            // Tools are read only from a list that changed.
            let (tools, left_out) = fetched.tools(&self.warnings);
            listing.left_out = left_out;
            drop(fetched);
            let source = link.source(self.told.source.as_ref());
            if known.is_none() {
                tracing::info!(
                    "mediating the tools of `{source}` ({})",
                    tool_mediator::counted(tools.len(), "tool", "tools")
                );
            }
            // Include and exclude, the lock, trust on first use: the session's admission.
            let context = ToolContext::new(source, SourceType::Api);
            let taken = self
                .tools
                .session
                .take_in_listing(link.index, &link.admission_source(), &context, tools)
                .await
                .map_err(|error| Unanswered::Failed(error.to_string()))?;
            if !taken {
                // The server went meanwhile: its next listing is taken in, however it lists.
                let rest = listing.rest.clone();
                *lock(&link.listing) = None;
                *finished = number;
                return Ok(rest);
            }
        }
        let rest = listing.rest.clone();
        *lock(&link.listing) = Some(listing);
        *finished = number;
        Ok(rest)
    }

    /// Lists every running server's tools at once; what the client's answer keeps of the first
    /// server's result. A server that announces its tool list changes is not asked again while
    /// the list it gave last stands. With several servers, one that fails to list is left out
    /// (its tools as they were) with a warning; with one, its failure is the answer.
    pub(super) async fn list_all(self: &Arc<Self>, meta: Option<Value>) -> Result<Map<String, Value>, Unanswered> {
        self.list_where(meta, |_| true).await
    }

    /// [`Router::list_all`], of the servers `wanted` picks among those serving tools: only
    /// those are waited for.
    async fn list_where(
        self: &Arc<Self>,
        meta: Option<Value>,
        wanted: impl Fn(&Link) -> bool,
    ) -> Result<Map<String, Value>, Unanswered> {
        self.joins_settled().await;
        let single = self.single().is_some();
        // The proxy's one server is asked even if it did not say it has tools: its answer is
        // the client's.
        let asked = |link: &&Arc<Link>| self.serving(link) && (single || link.has("tools")) && wanted(link);
        let listings = self.links.iter().filter(asked).map(|link| {
            let meta = meta.clone();
            async move {
                if link.announces_tool_changes()
                    && let Some(listing) =
                        lock(&link.listing).as_ref().filter(|listing| listing.chain == self.tools.mediator.version())
                {
                    return (link, Ok(listing.rest.clone()));
                }
                (link, self.list_upstream(link, meta).await)
            }
        });
        let listed = futures_util::future::join_all(listings).await;
        if self.single().is_some() {
            let failed = || Unanswered::Failed(self.links[0].down_reason());
            return listed.into_iter().next().map_or_else(|| Err(failed()), |(_, listed)| listed);
        }
        let mut rest = None;
        for (link, listed) in listed {
            match listed {
                Ok(listed) => {
                    rest.get_or_insert(listed);
                }
                Err(failure) => {
                    self.warnings
                        .warn("list", || format!("cannot list the tools of {}: {}", link.label, failure.reason()));
                }
            }
        }
        Ok(rest.unwrap_or_default())
    }

    pub(super) async fn list_tools(self: Arc<Self>, id: Id, cursor: Option<String>, meta: Option<Value>) {
        let stateless = meta.as_ref().is_some_and(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
        // Changes heard while it is answered are announced after it, as one.
        lock(&self.tools.heard).listing_started();
        let _listing = ClientListing(&self);
        // A review since the last look is seen by the listing that follows it.
        if cursor.is_none() {
            self.tools.session.notice_reviews().await;
        }
        let stored = match cursor.is_some() {
            true => self.links.iter().find_map(|link| lock(&link.listing).as_ref().map(|listing| listing.rest.clone())),
            false => None,
        };
        let rest = match stored {
            Some(rest) => rest,
            None => match self.list_all(meta).await {
                Ok(rest) => rest,
                Err(failure) => return self.fail(&id, failure),
            },
        };
        let mut rest = rest;
        if cursor.is_none() {
            self.name_left_out(&mut rest);
        }
        if stateless {
            crate::wire::revision::complete_for_stateless(&mut rest, true);
        }
        match self.tools.session.page(cursor.as_deref()) {
            Ok(page) => {
                let result = ListResult { tools: page.tools(), next_cursor: page.next_cursor.as_deref(), rest: &rest };
                match serde_json::to_string(&result) {
                    Ok(result) => {
                        if cursor.is_none() {
                            self.count_savings(result.len());
                        }
                        self.to_client(jsonrpc::response(&id, &result))
                    }
                    Err(error) => self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &error.to_string())),
                }
            }
            Err(invalid) => self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &invalid.to_string())),
        }
    }

    /// A first page of `shown` bytes was answered: the servers' whole listings less it are what
    /// the client was spared, counted where the options say.
    fn count_savings(&self, shown: usize) {
        let Some(savings) = &self.tools.savings else { return };
        let listed: usize = self.links.iter().filter_map(|link| Some(lock(&link.listing).as_ref()?.bytes)).sum();
        savings.spared(listed, shown);
    }

    /// Names the tools each server listed that could not be read, under [`LEFT_OUT`] in the
    /// result's `_meta` (with the server's name behind a gateway).
    fn name_left_out(&self, rest: &mut Map<String, Value>) {
        let mut named = Vec::new();
        for link in &self.links {
            let left_out = lock(&link.listing).as_ref().map(|listing| listing.left_out.clone()).unwrap_or_default();
            for left_out in left_out {
                let mut entry = serde_json::to_value(left_out).unwrap_or_default();
                if self.single().is_none() {
                    entry["server"] = Value::from(link.name.clone());
                }
                named.push(entry);
            }
        }
        if named.is_empty() {
            return;
        }
        let meta = rest.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(LEFT_OUT.to_owned(), Value::Array(named));
        }
    }

    /// Server `link` said its tools changed: list it again, unless a listing is already under
    /// way, in which case one more follows it. A flood of notifications costs two listings.
    pub(super) fn relist_soon(self: &Arc<Self>, link: &Arc<Link>) {
        {
            let mut relisting = lock(&link.relisting);
            if relisting.running {
                relisting.again = true;
                return;
            }
            relisting.running = true;
        }
        /// Lets the next notification start a relist if this one panicked (in a transformer).
        struct Relister(Arc<Link>);
        impl Drop for Relister {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    lock(&self.0.relisting).running = false;
                }
            }
        }
        let relister = Relister(link.clone());
        let router = self.clone();
        tokio::spawn(async move {
            let link = &relister.0;
            loop {
                router.relist(link).await;
                let mut relisting = lock(&link.relisting);
                if !std::mem::take(&mut relisting.again) {
                    relisting.running = false;
                    return;
                }
            }
        });
    }

    /// Lists server `link` again; the session tells the client if what it sees changed.
    /// Follows what the client may see of each server ([`ProxyOptions::shown`]) until the
    /// settings or the router go.
    pub(crate) async fn follow_shown(router: Weak<Router>, mut shown: watch::Receiver<Arc<ShownServers>>) {
        while shown.changed().await.is_ok() {
            let Some(router) = router.upgrade() else { return };
            let now = shown.borrow_and_update().clone();
            router.narrow(&now).await;
        }
    }

    /// The client may see `shown` of each server now: a server it no longer names leaves the
    /// lists (and its requests are refused), one whose tools it narrowed is taken in again
    /// through them; the client hears that its lists changed.
    async fn narrow(self: &Arc<Self>, shown: &ShownServers) {
        let mut changed = false;
        for link in &self.links {
            if !link.narrow(shown.get(&link.name)) {
                continue;
            }
            changed = true;
            // Taken in again through the new filter, however the server lists.
            *lock(&link.listing) = None;
            if link.is_withdrawn() {
                tracing::info!("{} left this session's view; its tools leave the list", link.label);
                self.tools.session.forget(link.index);
            } else if self.serving(link) {
                tracing::info!("{}'s tools in this session's view changed; listing them again", link.label);
                self.relist(link).await;
            }
        }
        if changed {
            self.catalog_changed();
            for what in ["prompts", "resources"] {
                if let Some(line) = lock(&self.client.protocol).other_list_changed(what) {
                    self.to_client(line);
                }
            }
        }
    }

    pub(super) async fn relist(self: &Arc<Self>, link: &Link) {
        if let Err(failure) = self.list_upstream(link, None).await {
            self.warnings
                .warn("relist", || format!("cannot list the tools of {} again: {}", link.label, failure.reason()));
        }
    }

    pub(super) async fn call_tool(self: Arc<Self>, id: Id, params: Option<String>, line: Vec<u8>) {
        let mut params = match params.as_deref().map(tool_mediator_core::json::from_str) {
            Some(Ok(Value::Object(params))) => params,
            Some(Err(error)) => {
                let reason = format!("tools/call params: {error}");
                return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &reason));
            }
            _ => return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, "tools/call needs params")),
        };
        let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_owned) else {
            return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, "tools/call needs a tool name"));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return self.to_client(jsonrpc::error_response(
                    &id,
                    INVALID_PARAMS,
                    "tools/call arguments must be an object",
                ));
            }
        };
        let stateless = params.get("_meta").is_some_and(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
        // With several servers a call is routed first, so a tool already known goes to its
        // server whatever the others are doing; the proxy's one server is listed first, so no
        // call passes unlisted (by a lock or a quarantine).
        let mut route = match self.single() {
            Some(_) => None,
            None => Some(self.tools.session.route_call(&name, arguments.clone()).await),
        };
        let unlisted = |link: &Link| lock(&link.listing).is_none();
        if route.as_ref().is_none_or(|route| matches!(route, Route::NotFound)) {
            // A server being given the handshake (it just started, or came back) may have it.
            self.joins_settled().await;
            if self.links.iter().any(|link| self.serving(link) && unlisted(link)) {
                // The client calls before it lists (it knows the tools from elsewhere), or a
                // server came back: the session needs their lists to know the name. Only the
                // servers not listed yet are asked, so a slow one holds up no call to the
                // others' known tools.
                let meta = params.get("_meta").cloned().filter(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
                if let Err(failure) = self.list_where(meta, unlisted).await {
                    return self.fail(&id, failure);
                }
                route = None;
            }
        }
        let route = match route {
            Some(route) => route,
            None => self.tools.session.route_call(&name, arguments.clone()).await,
        };
        match route {
            Route::Local(mut result) => {
                if stateless && let Some(result) = result.as_object_mut() {
                    result.insert("resultType".to_owned(), Value::from("complete"));
                }
                self.to_client(jsonrpc::response(&id, &result.to_string()));
            }
            Route::Upstream { source, name: original, arguments: mapped } => {
                let Some(link) = self.links.get(source) else {
                    return self.to_client(jsonrpc::error_response(
                        &id,
                        INVALID_PARAMS,
                        &format!("Unknown tool: {name}"),
                    ));
                };
                if let Some(what_to_do) = link.sign_in_asked() {
                    // Nothing is sent: the call would wait on the user, and could run twice if
                    // the client gave up and called again.
                    let mut result = json!({"content": [{"type": "text", "text": what_to_do}], "isError": true});
                    if stateless {
                        result["resultType"] = Value::from("complete");
                    }
                    return self.to_client(jsonrpc::response(&id, &result.to_string()));
                }
                if original == name && mapped == arguments {
                    return self.forward_request(link, id, Purpose::Other, &line);
                }
                params.insert("name".to_owned(), Value::from(original));
                if !mapped.is_empty() || params.contains_key("arguments") {
                    params.insert("arguments".to_owned(), Value::Object(mapped));
                }
                let request = jsonrpc::request(&id, "tools/call", &Value::Object(params));
                self.forward(link, id.clone(), Purpose::Other, request);
            }
            // What the specification says a server answers for a tool it does not have.
            Route::NotFound => {
                // A server whose tools are not listed until the user signs in may have it.
                let asked: Vec<String> = self.links.iter().filter_map(|link| link.sign_in_asked()).collect();
                let mut message = format!("Unknown tool: {name}");
                for what_to_do in asked {
                    message.push_str(&format!(" (its tools are not listed yet: {what_to_do})"));
                }
                self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &message))
            }
        }
    }
}

/// Every page of a `tools/list`, as the server wrote them, and the rest of the first page.
pub(super) struct Fetched {
    pages: Vec<Reply>,
    rest: Map<String, Value>,
}

impl Fetched {
    pub(super) fn tools_of(page: &Reply) -> Vec<&RawValue> {
        #[derive(serde::Deserialize)]
        struct Page<'a> {
            #[serde(borrow)]
            tools: Vec<&'a RawValue>,
        }
        serde_json::from_str::<Page<'_>>(page.get()).map(|page| page.tools).unwrap_or_default()
    }

    /// The bytes of the pages' results, as the server wrote them.
    pub(super) fn bytes(&self) -> usize {
        self.pages.iter().map(|page| page.get().len()).sum()
    }

    /// The tools as written, hashed: equal for a list that did not change.
    pub(super) fn fingerprint(&self) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        for tool in self.pages.iter().flat_map(|page| Fetched::tools_of(page)) {
            std::hash::Hash::hash(tool.get(), &mut hasher);
        }
        std::hash::Hasher::finish(&hasher)
    }

    /// The tools, each read on its own: one that does not parse (a duplicate key, a missing
    /// name) is left out with a warning rather than costing the whole list, and returned apart.
    pub(super) fn tools(&self, warnings: &Warnings) -> (Vec<Tool>, Vec<LeftOut>) {
        let mut tools = Vec::new();
        let mut left_out = Vec::new();
        let mut position = 0;
        for (number, page) in self.pages.iter().enumerate() {
            let listed = Fetched::tools_of(page);
            tools.reserve_exact(listed.len());
            for (index, tool) in listed.into_iter().enumerate() {
                position += 1;
                match serde_json::from_str::<Tool>(tool.get()) {
                    Ok(tool) => tools.push(tool),
                    Err(error) => {
                        #[derive(serde::Deserialize)]
                        struct Named {
                            name: String,
                        }
                        let name = serde_json::from_str::<Named>(tool.get()).map(|tool| tool.name).unwrap_or_default();
                        warnings.warn("bad-tool", || {
                            format!(
                                "the server listed a tool that is not one, left out: page {}, /tools/{index} \
                                 (`{name}`): {error}",
                                number + 1
                            )
                        });
                        // Bounded: a name longer than a tool name may be is cut.
                        let name: String = name.chars().take(256).collect();
                        left_out.push(LeftOut { index: position - 1, name, reason: error.to_string() });
                    }
                }
            }
        }
        (tools, left_out)
    }
}

#[derive(Serialize)]
pub(super) struct ListResult<'a> {
    tools: &'a [Tool],
    #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
    #[serde(flatten)]
    rest: &'a Map<String, Value>,
}
/// A `tools/list` being answered: when it has been (or has failed), the changes that came
/// meanwhile are announced, after its answer.
struct ClientListing<'a>(&'a Router);

impl Drop for ClientListing<'_> {
    fn drop(&mut self) {
        self.0.listing_ended();
    }
}
