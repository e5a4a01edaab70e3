//! Tool mediation: the session the proxy's client sees, listing the server's tools (only a list
//! that changed is taken in), relisting when they change, and calls routed to them.

use super::*;

/// What the proxy keeps of the server's last listing: a fingerprint of its tools as written,
/// to take in only a list that changed, and the rest of its first page's result (cache hints,
/// `resultType`, `_meta`), which the client's answer keeps. The tools themselves live once,
/// enhanced, in the session.
#[derive(Clone)]
pub(super) struct Listing {
    pub(super) fingerprint: u64,
    pub(super) rest: Map<String, Value>,
}

/// Relisting after the server says its tools changed: at most one listing in flight and one
/// more asked for, however many notifications arrive meanwhile.
#[derive(Default)]
pub(super) struct Relisting {
    pub(super) running: bool,
    pub(super) again: bool,
}

impl Router {
    /// The session, made on first use with the source known by then.
    pub(super) fn session(self: &Arc<Self>) -> Arc<Session> {
        self.session
            .get_or_init(|| {
                let source = self
                    .source
                    .clone()
                    .or_else(|| lock(&self.server_name).clone())
                    .unwrap_or_else(|| self.fallback_source.clone());
                tracing::info!("mediating the tools of `{source}`");
                let context = ToolContext::new(source, SourceType::Api);
                let session = Arc::new(Session::new(self.mediator.clone(), context, self.policy.clone()));
                tokio::spawn(self.clone().announce(session.subscribe()));
                session
            })
            .clone()
    }

    /// Tells the client each time what it sees changes.
    pub(super) async fn announce(self: Arc<Self>, mut events: broadcast::Receiver<ListChanged>) {
        loop {
            match events.recv().await {
                Ok(ListChanged) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return,
            }
            let lines = lock(&self.protocol).list_changed();
            for line in lines {
                self.to_client(line);
            }
        }
    }

    /// Lists every page of the server's tools, as the server wrote them.
    pub(super) async fn fetch(&self, meta: Option<Value>) -> Result<Fetched, Upstream> {
        let meta = meta.or_else(|| lock(&self.protocol).envelope());
        let mut pages = Vec::new();
        let mut listed_bytes = 0usize;
        let mut rest = None;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let mut params = Map::new();
            if let Some(cursor) = &cursor {
                params.insert("cursor".to_owned(), Value::from(cursor.as_str()));
            }
            if let Some(meta) = &meta {
                params.insert("_meta".to_owned(), meta.clone());
            }
            let raw = self.ask("tools/list", Value::Object(params)).await?;
            // Every page is held until the listing is whole: together they are held to the
            // limit of one message.
            listed_bytes += raw.get().len();
            if listed_bytes > self.max_message_bytes {
                return Err(Upstream::Failed(format!(
                    "the server's tools/list passed {} bytes over its pages, the proxy's limit for one \
                     message (--max-message-size)",
                    self.max_message_bytes
                )));
            }
            let unusable = |error: serde_json::Error| {
                Upstream::Failed(format!("the server's tools/list result is not a JSON object: {error}"))
            };
            let mut page = Map::new();
            let mut has_tools = false;
            for (key, value) in crate::json::object_members(raw.get()).map_err(unusable)? {
                if key == "tools" {
                    has_tools = value.get().starts_with('[');
                } else {
                    page.insert(key, crate::json::from_str(value.get()).map_err(unusable)?);
                }
            }
            if !has_tools {
                return Err(Upstream::Failed("the server's tools/list result has no `tools` array".to_owned()));
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
        tracing::warn!("the server handed out {MAX_PAGES} pages of tools; listed those");
        Ok(Fetched { pages, rest: rest.unwrap_or_default() })
    }

    /// Lists upstream and hands the list to the session if it changed; returns what the
    /// client's answer keeps of the server's result.
    ///
    /// One listing at a time: a listing asked for while another runs waits for it, and is served
    /// by the next one that starts after it was asked for, so an older list never overwrites a
    /// newer one and concurrent askers share one listing (and one pass through the chain).
    pub(super) async fn list_upstream(self: &Arc<Self>, meta: Option<Value>) -> Result<Map<String, Value>, Upstream> {
        let asked = self.listings_started.load(std::sync::atomic::Ordering::SeqCst);
        let mut finished = self.listing_gate.lock().await;
        if *finished > asked
            && let Some(listing) = lock(&self.listing).as_ref()
        {
            return Ok(listing.rest.clone());
        }
        let number = self.listings_started.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let fetched = self.fetch(meta).await?;
        let listing = Listing { fingerprint: fetched.fingerprint(), rest: fetched.rest.clone() };
        let known = lock(&self.listing).as_ref().map(|known| known.fingerprint);
        if known != Some(listing.fingerprint) {
            // Tools are read only from a list that changed.
            let tools = fetched.tools(&self.warnings);
            drop(fetched);
            self.session().take_in(tools).await;
        }
        let rest = listing.rest.clone();
        *lock(&self.listing) = Some(listing);
        *finished = number;
        Ok(rest)
    }

    pub(super) async fn list_tools(self: Arc<Self>, id: Id, cursor: Option<String>, meta: Option<Value>) {
        let session = self.session();
        let stored =
            if cursor.is_some() { lock(&self.listing).as_ref().map(|listing| listing.rest.clone()) } else { None };
        let rest = match stored {
            Some(rest) => rest,
            None => match self.list_upstream(meta).await {
                Ok(rest) => rest,
                Err(failure) => return self.fail(&id, failure),
            },
        };
        match session.page(cursor.as_deref()) {
            Ok(page) => {
                let result = ListResult { tools: page.tools(), next_cursor: page.next_cursor.as_deref(), rest: &rest };
                match serde_json::to_string(&result) {
                    Ok(result) => self.to_client(jsonrpc::response(&id, &result)),
                    Err(error) => self.to_client(jsonrpc::error_response(&id, INTERNAL_ERROR, &error.to_string())),
                }
            }
            Err(invalid) => self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &invalid.to_string())),
        }
    }

    /// The server said its tools changed: list again, unless a listing is already under way,
    /// in which case one more follows it. A flood of notifications costs two listings.
    pub(super) fn relist_soon(self: &Arc<Self>) {
        {
            let mut relisting = lock(&self.relisting);
            if relisting.running {
                relisting.again = true;
                return;
            }
            relisting.running = true;
        }
        /// Lets the next notification start a relist if this one panicked (in a transformer).
        struct Relister(Arc<Router>);
        impl Drop for Relister {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    lock(&self.0.relisting).running = false;
                }
            }
        }
        let router = Relister(self.clone());
        tokio::spawn(async move {
            let router = &router.0;
            loop {
                router.relist().await;
                let mut relisting = lock(&router.relisting);
                if !std::mem::take(&mut relisting.again) {
                    relisting.running = false;
                    return;
                }
            }
        });
    }

    /// Lists again; the session tells the client if what it sees changed.
    pub(super) async fn relist(self: &Arc<Self>) {
        match self.list_upstream(None).await {
            Ok(_) => {}
            Err(Upstream::Refused(error)) => {
                self.warnings.warn("relist", || format!("the server refused to list its tools again: {}", error.get()));
            }
            Err(Upstream::Failed(reason)) => {
                self.warnings.warn("relist", || format!("cannot list the server's tools again: {reason}"));
            }
        }
    }

    pub(super) async fn call_tool(self: Arc<Self>, id: Id, params: Option<String>, line: Vec<u8>) {
        let mut params = match params.as_deref().map(crate::json::from_str) {
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
        let session = self.session();
        if lock(&self.listing).is_none() {
            // The client calls before it lists (it knows the tools from elsewhere): the
            // session needs the list to know the names.
            let meta = params.get("_meta").cloned().filter(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
            if let Err(failure) = self.list_upstream(meta).await {
                return self.fail(&id, failure);
            }
        }
        let stateless = params.get("_meta").is_some_and(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
        match session.route_call(&name, arguments.clone()).await {
            Route::Local(mut result) => {
                if stateless && let Some(result) = result.as_object_mut() {
                    result.insert("resultType".to_owned(), Value::from("complete"));
                }
                self.to_client(jsonrpc::response(&id, &result.to_string()));
            }
            Route::Upstream { name: original, arguments: mapped } => {
                if original == name && mapped == arguments {
                    return self.forward_request(id, Purpose::Other, &line);
                }
                params.insert("name".to_owned(), Value::from(original));
                if !mapped.is_empty() || params.contains_key("arguments") {
                    params.insert("arguments".to_owned(), Value::Object(mapped));
                }
                self.forward(id.clone(), Purpose::Other, jsonrpc::request(&id, "tools/call", &Value::Object(params)));
            }
            // What the specification says a server answers for a tool it does not have.
            Route::NotFound => {
                self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, &format!("Unknown tool: {name}")))
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

    /// The tools as written, hashed: equal for a list that did not change.
    pub(super) fn fingerprint(&self) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        for tool in self.pages.iter().flat_map(|page| Fetched::tools_of(page)) {
            std::hash::Hash::hash(tool.get(), &mut hasher);
        }
        std::hash::Hasher::finish(&hasher)
    }

    /// The tools, each read on its own: one that does not parse (a duplicate key, a missing
    /// name) is left out with a warning rather than costing the whole list.
    pub(super) fn tools(&self, warnings: &Warnings) -> Vec<Tool> {
        let mut tools = Vec::new();
        for (number, page) in self.pages.iter().enumerate() {
            let listed = Fetched::tools_of(page);
            tools.reserve_exact(listed.len());
            for (index, tool) in listed.into_iter().enumerate() {
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
                    }
                }
            }
        }
        tools
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
