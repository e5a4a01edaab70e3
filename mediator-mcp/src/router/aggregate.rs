//! What the client sees of several servers beyond their tools: one handshake answering for all
//! of them, and their resources, resource templates and prompts listed as one set, each request
//! about one of them sent to the server that listed it. A server that starts again is given the
//! client's handshake again.
//!
//! With one server, none of this is used but the handshake: everything passes through.

use std::collections::HashMap;

use futures_util::future::join_all;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::{JOIN_GRACE, JOIN_WINDOW, Joining, Link, MAX_PAGES, Purpose, Reply, Router, Unanswered, page_params};
use crate::wire::jsonrpc::{self, INTERNAL_ERROR, INVALID_PARAMS, Id};
use crate::wire::revision::{
    CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY, REVISIONS, SERVER_INFO_KEY, STATELESS_REVISIONS,
    UNSUPPORTED_PROTOCOL_VERSION,
};
use tool_mediator_core::sync::lock;
use tool_mediator_core::{NameRules, SharedNames};

/// Whether a server's answer to `server/discover` says it speaks only the revisions with a
/// handshake: any error but `-32022` naming stateless revisions alone (the SDKs' clients fall
/// back on every other), or a result that lists no stateless revision. A server that could not
/// be reached says nothing of its revision.
fn speaks_handshakes_only(reply: &Result<Reply, Unanswered>) -> bool {
    let stateless = |versions: Option<&Value>| {
        versions.and_then(Value::as_array).is_some_and(|versions| {
            versions.iter().any(|version| version.as_str().is_some_and(|v| STATELESS_REVISIONS.contains(&v)))
        })
    };
    let handshakes = |versions: Option<&Value>| {
        versions.and_then(Value::as_array).is_some_and(|versions| {
            versions.iter().any(|version| version.as_str().is_some_and(|v| !STATELESS_REVISIONS.contains(&v)))
        })
    };
    match reply {
        Ok(reply) => tool_mediator_core::json::from_str(reply.get())
            .is_ok_and(|result| !stateless(result.get("supportedVersions"))),
        Err(Unanswered::Refused(error)) => {
            let Ok(error) = serde_json::from_str::<Value>(error.get()) else { return true };
            let supported = error.pointer("/data/supported");
            error["code"] != UNSUPPORTED_PROTOCOL_VERSION || supported.is_none() || handshakes(supported)
        }
        Err(Unanswered::Failed(_)) => false,
    }
}

/// The `initialize` params that say what a client's `server/discover` params say: its
/// capabilities and its name from the request's `_meta`, at the latest revision with a handshake.
fn initialize_for(discover: &Value) -> Value {
    let meta = discover.get("_meta");
    let capabilities = meta.and_then(|meta| meta.get(CLIENT_CAPABILITIES_KEY)).cloned().unwrap_or_else(|| json!({}));
    let client = meta.and_then(|meta| meta.get(CLIENT_INFO_KEY)).cloned().unwrap_or_else(
        || json!({"name": "tool-mediator", "title": "tool-mediator gateway", "version": env!("CARGO_PKG_VERSION")}),
    );
    json!({"protocolVersion": crate::wire::revision::REVISIONS[3], "capabilities": capabilities, "clientInfo": client})
}

/// JSON-RPC's code for a method the receiver does not have.
const METHOD_NOT_FOUND: i64 = -32601;
/// MCP's code for a resource nobody has.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// Which server listed what, since the servers' lists last changed.
#[derive(Default)]
pub(super) struct Catalog {
    /// Resource URI -> server.
    resources: Option<HashMap<String, usize>>,
    /// URI templates, and the text before their first variable, -> server.
    templates: Option<Vec<(String, String, usize)>>,
    /// Prompt name as the client sees it -> server, and the server's name for it.
    prompts: Option<HashMap<String, (usize, String)>>,
}

/// One of the lists several servers' are merged into.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Resources,
    Templates,
    Prompts,
}

impl Kind {
    fn of(method: &str) -> Option<Kind> {
        match method {
            "resources/list" => Some(Kind::Resources),
            "resources/templates/list" => Some(Kind::Templates),
            "prompts/list" => Some(Kind::Prompts),
            _ => None,
        }
    }

    fn method(self) -> &'static str {
        match self {
            Kind::Resources => "resources/list",
            Kind::Templates => "resources/templates/list",
            Kind::Prompts => "prompts/list",
        }
    }

    /// The result's array.
    fn key(self) -> &'static str {
        match self {
            Kind::Resources => "resources",
            Kind::Templates => "resourceTemplates",
            Kind::Prompts => "prompts",
        }
    }

    /// The capability a server lists these under.
    fn capability(self) -> &'static str {
        match self {
            Kind::Resources | Kind::Templates => "resources",
            Kind::Prompts => "prompts",
        }
    }
}

impl Router {
    /// The client's handshake (`initialize`, or `server/discover` in the stateless revision):
    /// every running server is given it, and the client gets one answer for them all, saying
    /// that the tool list can change. Kept for servers that start later.
    pub(super) async fn handshake(self: std::sync::Arc<Self>, id: Id, method: String, params: Value) {
        *lock(&self.client.handshake) = Some((method.clone(), params.clone()));
        if let Some(link) = self.single() {
            // Given as the client sends it, every time; noted as joined for the watch.
            let claimed = link.claim_join();
            let joined = self.join(link, &method, &params).await;
            if claimed {
                link.joined(joined.is_ok());
            }
            return match joined {
                Ok((_, Some(result))) => self.answer_handshake(&id, result),
                // One that cannot be read exactly (a key written twice) passes as it came.
                Ok((reply, None)) => self.to_client(jsonrpc::response(&id, reply.get())),
                Err(failure) => self.fail(&id, failure),
            };
        }
        // A server being given it already (it just started) is waited for, and a server given
        // it before (a second handshake) answers with what it said then.
        self.joins_settled().await;
        // Whether the client has its answer: a server that joins after that joins late.
        let answered = std::sync::Arc::new(std::sync::Mutex::new(false));
        let mut joining = Vec::new();
        for link in self.links.iter().filter(|link| link.is_up() && link.claim_join()) {
            joining.push(link.clone());
            let (router, link, answered) = (self.clone(), link.clone(), answered.clone());
            let (method, params) = (method.clone(), params.clone());
            tokio::spawn(async move {
                let joined = router.join(&link, &method, &params).await;
                let late = {
                    let answered = lock(&answered);
                    link.joined(joined.is_ok());
                    *answered
                };
                match joined {
                    Ok((_, Some(_))) if late => router.joined_late(&link).await,
                    Ok((_, Some(_))) => {}
                    Ok((_, None)) => {
                        router.warnings.warn("handshake", || {
                            format!("{} answered {method} with a result that cannot be read", link.label)
                        });
                    }
                    Err(failure) => router.join_failed(&link, "did not join", failure),
                }
            });
        }
        // The servers that answer within the window are the handshake's; the others join late.
        // The servers that answer within the window are the handshake's, and once one has, the
        // rest have JOIN_GRACE more; the others join late.
        let window = self.told.request_timeout.min(JOIN_WINDOW);
        let all_settled = join_all(joining.iter().map(|link| link.join_settled(window)));
        let one_joined = async {
            let joined = joining.iter().map(|link| {
                Box::pin(async move {
                    link.join_settled(window).await;
                    if link.joining() != Joining::Done {
                        std::future::pending::<()>().await;
                    }
                })
            });
            if !joining.is_empty() {
                futures_util::future::select_all(joined).await;
                tokio::time::sleep(JOIN_GRACE).await;
            }
        };
        tokio::select! {
            _ = all_settled => {}
            () = one_joined => {}
        }
        let (results, pending) = {
            let mut answered = lock(&answered);
            *answered = true;
            let results: Vec<(String, Value)> = self
                .links
                .iter()
                .filter(|link| link.is_up() && link.joining() == Joining::Done)
                .filter_map(|link| Some((link.name.clone(), lock(&link.handshake_result).clone()?)))
                .collect();
            let pending = self.links.iter().any(|link| link.joining() != Joining::Done);
            (results, pending)
        };
        if pending {
            let late: Vec<&str> = self
                .links
                .iter()
                .filter(|link| link.joining() != Joining::Done)
                .map(|link| link.name.as_str())
                .collect();
            tracing::warn!(
                "answered {method} without the servers that did not answer it within {}s ({}); they join when they do",
                window.as_secs_f64(),
                late.join(", ")
            );
        }
        let merged = merge_handshakes(&method, &params, &results, pending);
        self.answer_handshake(&id, merged);
    }

    /// Server `link` answered the client's handshake after the client had the gateway's answer:
    /// its lists are taken in, and the client hears that they changed.
    async fn joined_late(self: &std::sync::Arc<Self>, link: &Link) {
        tracing::info!("{} joined late", link.label);
        self.relist(link).await;
        self.catalog_changed();
        self.announce_catalog(link);
    }

    /// Server `link` came: the client hears that the lists it has besides tools changed.
    fn announce_catalog(&self, link: &Link) {
        for what in ["prompts", "resources"] {
            if link.has(what)
                && let Some(line) = lock(&self.client.protocol).other_list_changed(what)
            {
                self.to_client(line);
            }
        }
    }

    /// Server `link` failed to join: said, and, when it did not answer, could not be reached or
    /// failed inside (an internal error, as the remote bridge also answers for a server it cannot
    /// reach), ended to be started again, at once, so no later connection is taken for it. One
    /// that refused the handshake otherwise (a revision it does not speak) is left: starting it
    /// again would not change its mind.
    fn join_failed(&self, link: &Link, what: &str, failure: Unanswered) {
        let reason = format!("{} {what}: {}", link.label, failure.reason());
        self.warnings.warn("handshake", || reason.clone());
        let again = match &failure {
            Unanswered::Failed(_) => true,
            Unanswered::Refused(error) => {
                serde_json::from_str::<Value>(error.get()).is_ok_and(|error| error["code"] == INTERNAL_ERROR)
            }
        };
        if again {
            link.fault(reason);
        }
    }

    /// Gives server `link` the handshake; its answer, read when it can be (its name and
    /// capabilities noted).
    ///
    /// Several servers' client that discovers (2026-07-28) reaches a server of the 2025 revisions
    /// too: one that refuses `server/discover`, or says it speaks none of the stateless
    /// revisions, is given `initialize` instead, as the SDKs' clients fall back. The gateway
    /// speaks each server's revision, whatever revision its client speaks.
    async fn join(&self, link: &Link, method: &str, params: &Value) -> Result<(Reply, Option<Value>), Unanswered> {
        let mut reply = self.ask(link, method, params.clone()).await;
        let handshake_only = method == "server/discover" && self.single().is_none() && speaks_handshakes_only(&reply);
        if handshake_only {
            tracing::info!("{} does not discover; given initialize, as it speaks the 2025 revisions", link.label);
            reply = self.ask(link, "initialize", initialize_for(params)).await;
            if reply.is_ok() {
                link.send(jsonrpc::notification("notifications/initialized", None));
            }
        }
        link.handshake_only.store(handshake_only, std::sync::atomic::Ordering::Relaxed);
        let reply = reply?;
        let result = tool_mediator_core::json::from_str(reply.get()).ok();
        if let Some(result) = &result {
            let name = result
                .pointer("/serverInfo/name")
                .or_else(|| {
                    result.pointer(&format!("/_meta/{}/name", tool_mediator_core::schema::escape(SERVER_INFO_KEY)))
                })
                .and_then(Value::as_str);
            if let Some(name) = name {
                *lock(&link.server_name) = Some(name.to_owned());
            }
            *lock(&link.handshake_result) = Some(result.clone());
        }
        Ok((reply, result))
    }

    /// The handshake's answer: the client learns that the tool list can change.
    fn answer_handshake(&self, id: &Id, mut result: Value) {
        if let Some(revision) = result.get("protocolVersion").and_then(Value::as_str) {
            lock(&self.client.protocol).agreed(revision);
        }
        if let Some(capabilities) = result.get_mut("capabilities").and_then(Value::as_object_mut) {
            let tools = capabilities.entry("tools").or_insert_with(|| json!({}));
            if let Some(tools) = tools.as_object_mut() {
                tools.insert("listChanged".to_owned(), Value::Bool(true));
            }
        }
        self.to_client(jsonrpc::response(id, &result.to_string()));
    }

    /// Server `link` (re)started after the client's handshake: it is given the handshake, then
    /// its tools are listed again, and come back to the client. Taken on at once, so nothing
    /// asks the server anything before it has joined.
    pub(crate) fn rejoin(self: std::sync::Arc<Self>, link: std::sync::Arc<Link>) {
        let handshake = lock(&self.client.handshake).clone();
        let Some((method, params)) = handshake else {
            // No handshake yet: the client's reaches this server when it comes.
            return;
        };
        if !link.claim_join() {
            return;
        }
        tokio::spawn(async move {
            let joined = self.join(&link, &method, &params).await;
            link.joined(joined.is_ok());
            if let Err(failure) = joined {
                return self.join_failed(&link, "did not join again", failure);
            }
            if method == "initialize" {
                link.send(jsonrpc::notification("notifications/initialized", None));
            }
            tracing::info!("{} is back", link.label);
            self.relist(&link).await;
            self.catalog_changed();
            self.announce_catalog(&link);
        });
    }

    /// What a server listed besides its tools changed, or a server came or went.
    pub(super) fn catalog_changed(&self) {
        *lock(&self.catalog) = Catalog::default();
    }

    /// A request of several servers' client that is not about tools: sent to the server it
    /// names, to all of them, answered here, or refused.
    pub(super) fn aggregate(self: &std::sync::Arc<Self>, id: Id, method: &str, params: Option<&RawValue>, line: &[u8]) {
        let params: Map<String, Value> = params
            .and_then(|raw| tool_mediator_core::json::from_str(raw.get()).ok())
            .and_then(|params| match params {
                Value::Object(params) => Some(params),
                _ => None,
            })
            .unwrap_or_default();
        if let Some(kind) = Kind::of(method) {
            if params.get("cursor").is_some_and(|cursor| !cursor.is_null()) {
                // The merged list is answered in one page: no cursor was handed out.
                return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, "invalid cursor"));
            }
            let stateless = params.get("_meta").is_some_and(|meta| meta.get(PROTOCOL_VERSION_KEY).is_some());
            return self.spawn_tool_task(id.clone(), self.clone().list_merged(id, kind, stateless));
        }
        let line = line.to_vec();
        match method {
            "ping" => self.to_client(jsonrpc::response(&id, "{}")),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str).map(str::to_owned) else {
                    return self.to_client(jsonrpc::error_response(
                        &id,
                        INVALID_PARAMS,
                        &format!("{method} needs a uri"),
                    ));
                };
                let router = self.clone();
                self.spawn_tool_task(id.clone(), async move {
                    match router.owner_of_resource(&uri).await {
                        Some(link) => router.forward_request(&router.links[link], id, Purpose::Other, &line),
                        None => router.to_client(jsonrpc::error_response(
                            &id,
                            RESOURCE_NOT_FOUND,
                            &format!("Resource not found: no MCP server behind the gateway lists `{uri}`"),
                        )),
                    }
                });
            }
            "prompts/get" => {
                let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_owned) else {
                    return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, "prompts/get needs a name"));
                };
                let router = self.clone();
                self.spawn_tool_task(id.clone(), async move {
                    match router.owner_of_prompt(&name).await {
                        Some((link, original)) if original == name => {
                            router.forward_request(&router.links[link], id, Purpose::Other, &line)
                        }
                        Some((link, original)) => {
                            let mut params = params;
                            params.insert("name".to_owned(), Value::from(original));
                            let request = jsonrpc::request(&id, "prompts/get", &Value::Object(params));
                            router.forward(&router.links[link], id, Purpose::Other, request);
                        }
                        None => router.to_client(jsonrpc::error_response(
                            &id,
                            INVALID_PARAMS,
                            &format!("Unknown prompt: {name}"),
                        )),
                    }
                });
            }
            "completion/complete" => {
                let router = self.clone();
                self.spawn_tool_task(id.clone(), async move { router.complete(id, params, line).await });
            }
            "logging/setLevel" => {
                let router = self.clone();
                self.spawn_tool_task(id.clone(), async move {
                    let asking = router
                        .links
                        .iter()
                        .filter(|link| router.serving(link))
                        .map(|link| router.ask(link, "logging/setLevel", Value::Object(params.clone())));
                    // A server without logging says so; the level holds for those with it.
                    join_all(asking).await;
                    router.to_client(jsonrpc::response(&id, "{}"));
                });
            }
            _ => self.to_client(jsonrpc::error_response(
                &id,
                METHOD_NOT_FOUND,
                &format!("the gateway cannot route `{method}` to a single MCP server"),
            )),
        }
    }

    /// `completion/complete` goes to the server of the prompt or resource it completes, as it
    /// came unless the prompt's name there is another.
    async fn complete(&self, id: Id, mut params: Map<String, Value>, line: Vec<u8>) {
        let reference = params.get("ref").cloned().unwrap_or_default();
        let (owner, original) = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => match reference.get("name").and_then(Value::as_str) {
                Some(name) => match self.owner_of_prompt(name).await {
                    Some((link, original)) => (Some(link), (original != name).then_some(original)),
                    None => (None, None),
                },
                None => (None, None),
            },
            Some("ref/resource") => match reference.get("uri").and_then(Value::as_str) {
                Some(uri) => (self.owner_of_resource(uri).await, None),
                None => (None, None),
            },
            _ => (None, None),
        };
        let Some(link) = owner.map(|link| &self.links[link]) else {
            let reason = "completion/complete: no MCP server behind the gateway has what `ref` names";
            return self.to_client(jsonrpc::error_response(&id, INVALID_PARAMS, reason));
        };
        let Some(original) = original else {
            return self.forward_request(link, id, Purpose::Other, &line);
        };
        if let Some(Value::Object(reference)) = params.get_mut("ref") {
            reference.insert("name".to_owned(), Value::from(original));
        }
        let request = jsonrpc::request(&id, "completion/complete", &Value::Object(params));
        self.forward(link, id, Purpose::Other, request);
    }

    /// The servers' lists of `kind` as one, answered in one page; which server listed what is
    /// noted for the requests that name one.
    async fn list_merged(self: std::sync::Arc<Self>, id: Id, kind: Kind, stateless: bool) {
        let items = self.gather(kind).await;
        let mut result = Map::new();
        result.insert(kind.key().to_owned(), Value::Array(items));
        if stateless {
            crate::wire::revision::complete_for_stateless(&mut result, true);
        }
        self.to_client(jsonrpc::response(&id, &Value::Object(result).to_string()));
    }

    /// Every running server's list of `kind`, merged (prompt names made unique), noted in the
    /// catalog.
    async fn gather(&self, kind: Kind) -> Vec<Value> {
        self.joins_settled().await;
        let listing =
            self.links.iter().filter(|link| self.serving(link) && link.has(kind.capability())).map(|link| async move {
                let listed = self.list_every_page(link, kind).await;
                (link, listed)
            });
        let mut lists = Vec::new();
        for (link, listed) in join_all(listing).await {
            match listed {
                Ok(items) => lists.push((link.index, items)),
                Err(failure) => {
                    self.warnings.warn("list", || {
                        format!("cannot list the {} of {}: {}", kind.key(), link.label, failure.reason())
                    });
                }
            }
        }
        let mut merged = Vec::new();
        let mut catalog = lock(&self.catalog);
        match kind {
            Kind::Resources => {
                let mut owners: HashMap<String, usize> = HashMap::new();
                for (link, items) in lists {
                    for item in items {
                        if let Some(uri) = item.get("uri").and_then(Value::as_str) {
                            if let Some(&first) = owners.get(uri) {
                                // One URI, one resource: the first server that lists it has it.
                                self.warnings.warn("resource-shared", || {
                                    format!(
                                        "{} and {} both list the resource `{uri}`; it is read from the first",
                                        self.links[first].label, self.links[link].label
                                    )
                                });
                                continue;
                            }
                            owners.insert(uri.to_owned(), link);
                        }
                        merged.push(item);
                    }
                }
                catalog.resources = Some(owners);
            }
            Kind::Templates => {
                let mut owners = Vec::new();
                for (link, items) in lists {
                    for item in items {
                        if let Some(template) = item.get("uriTemplate").and_then(Value::as_str) {
                            let literal = template.split('{').next().unwrap_or_default().to_owned();
                            owners.push((template.to_owned(), literal, link));
                        }
                        merged.push(item);
                    }
                }
                catalog.templates = Some(owners);
            }
            Kind::Prompts => {
                let every_name = lists
                    .iter()
                    .flat_map(|(link, items)| items.iter().filter_map(|item| Some((*link, item["name"].as_str()?))));
                let servers: Vec<String> = self.links.iter().map(|link| link.name.clone()).collect();
                let names = SharedNames::new(&servers, every_name, self.told.prefix, &[], NameRules::MCP);
                for clash in names.clashes() {
                    self.warnings.warn("prompt-name", || format!("prompts: {clash}"));
                }
                let mut owners = HashMap::new();
                for (link, items) in lists {
                    for mut item in items {
                        let Some(name) = item.get("name").and_then(Value::as_str).map(str::to_owned) else {
                            continue;
                        };
                        let exposed = names.expose(link, &name);
                        item["name"] = Value::from(exposed.as_str());
                        owners.insert(exposed, (link, name));
                        merged.push(item);
                    }
                }
                catalog.prompts = Some(owners);
            }
        }
        merged
    }

    /// Every page of server `link`'s list of `kind`.
    async fn list_every_page(&self, link: &Link, kind: Kind) -> Result<Vec<Value>, Unanswered> {
        let meta = lock(&self.client.protocol).envelope();
        let (mut items, mut cursor, mut bytes) = (Vec::new(), None::<String>, 0usize);
        for _ in 0..MAX_PAGES {
            let reply = self.ask(link, kind.method(), page_params(cursor.as_deref(), meta.as_ref())).await?;
            bytes += reply.get().len();
            if bytes > self.told.max_message_bytes {
                return Err(Unanswered::Failed(format!(
                    "its {} passed {} bytes over its pages, the limit for one message (--max-message-size)",
                    kind.method(),
                    self.told.max_message_bytes
                )));
            }
            let mut page = match tool_mediator_core::json::from_str(reply.get()) {
                Ok(Value::Object(page)) => page,
                _ => return Err(Unanswered::Failed(format!("its {} result is not a JSON object", kind.method()))),
            };
            if let Some(Value::Array(listed)) = page.remove(kind.key()) {
                items.extend(listed);
            }
            match page.remove("nextCursor") {
                Some(Value::String(next)) if !next.is_empty() && cursor.as_deref() != Some(next.as_str()) => {
                    cursor = Some(next)
                }
                _ => return Ok(items),
            }
        }
        Ok(items)
    }

    /// The server that lists the resource `uri`, or whose template it fits (the longest text
    /// before a variable wins); listed first when the catalog does not know.
    async fn owner_of_resource(&self, uri: &str) -> Option<usize> {
        if lock(&self.catalog).resources.is_none() {
            self.gather(Kind::Resources).await;
        }
        if lock(&self.catalog).templates.is_none() {
            self.gather(Kind::Templates).await;
        }
        let catalog = lock(&self.catalog);
        if let Some(&link) = catalog.resources.as_ref().and_then(|resources| resources.get(uri)) {
            return Some(link);
        }
        let templates = catalog.templates.as_deref().unwrap_or_default();
        if let Some((_, _, link)) = templates.iter().find(|(template, ..)| template == uri) {
            return Some(*link);
        }
        templates
            .iter()
            .filter(|(_, literal, _)| !literal.is_empty() && uri.starts_with(literal.as_str()))
            .max_by_key(|(_, literal, _)| literal.len())
            .map(|(.., link)| *link)
            .or_else(|| {
                // One server with resources can only be that one.
                let mut serving = self.links.iter().filter(|link| self.serving(link) && link.has("resources"));
                match (serving.next(), serving.next()) {
                    (Some(link), None) => Some(link.index),
                    _ => None,
                }
            })
    }

    /// The server of the prompt the client calls `name`, and its own name for it.
    async fn owner_of_prompt(&self, name: &str) -> Option<(usize, String)> {
        if lock(&self.catalog).prompts.is_none() {
            self.gather(Kind::Prompts).await;
        }
        lock(&self.catalog).prompts.as_ref()?.get(name).cloned()
    }
}

impl Link {
    /// Whether the server said in the handshake that it has `capability` (or did not say).
    pub(super) fn has(&self, capability: &str) -> bool {
        let result = lock(&self.handshake_result);
        let capabilities = result.as_ref().and_then(|result| result.get("capabilities"));
        capabilities.is_none_or(|capabilities| capabilities.get(capability).is_some())
    }
}

/// One handshake answer for several servers: the revision the client asked for if a server
/// agreed to it (else the first server's), every capability any server has, each server's
/// instructions under its name, and the gateway's own name. Servers come and go, so lists of
/// prompts and resources may change; with a server still `pending`, the gateway has them,
/// since it may bring some.
fn merge_handshakes(method: &str, params: &Value, results: &[(String, Value)], pending: bool) -> Value {
    let mut merged = match results.first() {
        Some((_, Value::Object(first))) => first.clone(),
        _ => Map::new(),
    };
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let agreed: Vec<&str> = results.iter().filter_map(|(_, result)| result.get("protocolVersion")?.as_str()).collect();
    let revision = match asked {
        Some(asked) if agreed.contains(&asked) || agreed.is_empty() => Some(asked),
        _ => agreed.first().copied(),
    };
    if agreed.iter().any(|agreed| Some(*agreed) != revision) {
        tracing::warn!("the servers agreed on different protocol revisions ({agreed:?}); answering {revision:?}");
    }
    if method == "initialize"
        && let Some(revision) = revision
    {
        merged.insert("protocolVersion".to_owned(), Value::from(revision));
    }
    let mut capabilities = Map::new();
    for (_, result) in results {
        for (name, capability) in result.get("capabilities").and_then(Value::as_object).into_iter().flatten() {
            match (capabilities.get_mut(name), capability) {
                (Some(Value::Object(known)), Value::Object(more)) => {
                    for (key, value) in more {
                        if value != &Value::Bool(false) || !known.contains_key(key) {
                            known.insert(key.clone(), value.clone());
                        }
                    }
                }
                (None, _) => {
                    capabilities.insert(name.clone(), capability.clone());
                }
                _ => {}
            }
        }
    }
    capabilities.entry("tools").or_insert_with(|| json!({}));
    for what in ["prompts", "resources"] {
        if pending {
            capabilities.entry(what).or_insert_with(|| json!({}));
        }
        if let Some(Value::Object(capability)) = capabilities.get_mut(what) {
            capability.insert("listChanged".to_owned(), Value::Bool(true));
        }
    }
    merged.insert("capabilities".to_owned(), Value::Object(capabilities));
    let instructions: Vec<String> = results
        .iter()
        .filter_map(|(name, result)| Some(format!("## {name}\n{}", result.get("instructions")?.as_str()?)))
        .collect();
    merged.remove("instructions");
    if !instructions.is_empty() {
        merged.insert("instructions".to_owned(), Value::from(instructions.join("\n\n")));
    }
    let gateway =
        json!({"name": "tool-mediator", "title": "tool-mediator gateway", "version": env!("CARGO_PKG_VERSION")});
    if method == "initialize" {
        merged.insert("serverInfo".to_owned(), gateway);
    } else {
        // One discovery answer, whatever handshake each server was given: the gateway speaks
        // every revision to its client.
        merged.remove("protocolVersion");
        merged.remove("serverInfo");
        merged.insert("supportedVersions".to_owned(), json!(REVISIONS));
        let meta = merged.entry("_meta").or_insert_with(|| json!({}));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO_KEY.to_owned(), gateway);
        }
    }
    if method == "initialize" && !merged.contains_key("protocolVersion") {
        merged.insert("protocolVersion".to_owned(), Value::from(REVISIONS[3]));
    }
    Value::Object(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshakes_merge_into_one_gateway_with_every_capability() {
        let results = [
            (
                "time".to_owned(),
                json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {"listChanged": false}},
                       "serverInfo": {"name": "mcp-time"}}),
            ),
            (
                "everything".to_owned(),
                json!({"protocolVersion": "2025-11-25",
                       "capabilities": {"tools": {"listChanged": true}, "resources": {"subscribe": true}, "prompts": {}},
                       "serverInfo": {"name": "everything"}, "instructions": "Try echo."}),
            ),
        ];
        let merged = merge_handshakes("initialize", &json!({"protocolVersion": "2025-11-25"}), &results, false);
        assert_eq!(merged["protocolVersion"], "2025-11-25", "the client's, since a server agreed to it");
        assert_eq!(merged["serverInfo"]["name"], "tool-mediator");
        assert_eq!(merged["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(merged["capabilities"]["resources"]["subscribe"], true);
        assert!(merged["capabilities"]["prompts"].is_object());
        assert_eq!(merged["instructions"], "## everything\nTry echo.");
    }

    #[test]
    fn a_server_that_refuses_discovery_or_lists_no_stateless_revision_is_given_initialize() {
        let refused = |error: Value| Err(Unanswered::Refused(RawValue::from_string(error.to_string()).unwrap()));
        let answered = |result: Value| {
            let line = json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string();
            let start = line.find("\"result\":").unwrap() + 9;
            let mut line = line.into_bytes();
            let end = line.len() - 1;
            Ok(Reply::taken(&mut line, start..end))
        };
        assert!(speaks_handshakes_only(&refused(json!({"code": -32601, "message": "Method not found"}))));
        assert!(speaks_handshakes_only(&refused(json!({"code": -32602, "message": "no"}))));
        let modern_only = json!({"code": -32022, "message": "x", "data": {"supported": ["2026-07-28"]}});
        assert!(!speaks_handshakes_only(&refused(modern_only)), "a server of the stateless revision alone");
        let both = json!({"code": -32022, "message": "x", "data": {"supported": ["2025-11-25"]}});
        assert!(speaks_handshakes_only(&refused(both)));
        assert!(!speaks_handshakes_only(&answered(json!({"supportedVersions": ["2026-07-28"], "capabilities": {}}))));
        assert!(speaks_handshakes_only(&answered(json!({"supportedVersions": ["2025-11-25"], "capabilities": {}}))));
        assert!(!speaks_handshakes_only(&Err(Unanswered::Failed("gone".into()))), "no answer says nothing");

        let discover = json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "mcp", "version": "2"},
        }});
        let initialize = initialize_for(&discover);
        assert_eq!(initialize["protocolVersion"], "2025-11-25");
        assert_eq!(initialize["capabilities"], json!({"sampling": {}}));
        assert_eq!(initialize["clientInfo"]["name"], "mcp");
    }

    #[test]
    fn a_discovery_answer_is_one_whatever_handshake_each_server_was_given() {
        let results = [
            (
                "everything".to_owned(),
                json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                            "serverInfo": {"name": "everything"}}),
            ),
            (
                "time".to_owned(),
                json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                                      "resultType": "complete"}),
            ),
        ];
        let merged = merge_handshakes("server/discover", &json!({}), &results, false);
        assert!(merged.get("protocolVersion").is_none() && merged.get("serverInfo").is_none(), "{merged}");
        assert!(merged["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")), "{merged}");
        assert_eq!(merged["_meta"][SERVER_INFO_KEY]["name"], "tool-mediator");
    }

    #[test]
    fn no_server_yet_still_answers_the_client() {
        let merged = merge_handshakes("initialize", &json!({"protocolVersion": "2025-06-18"}), &[], true);
        assert_eq!(merged["protocolVersion"], "2025-06-18");
        assert!(merged["capabilities"]["tools"].is_object());
        // A server that joins late may bring prompts and resources: the client is told they change.
        assert_eq!(merged["capabilities"]["prompts"]["listChanged"], true);
        assert_eq!(merged["capabilities"]["resources"]["listChanged"], true);
    }

    #[test]
    fn a_server_without_capabilities_is_asked_anyway() {
        let link = Link::new(0, super::super::LinkSettings::default());
        assert!(link.has("resources"));
        *lock(&link.handshake_result) = Some(json!({"capabilities": {"tools": {}}}));
        assert!(!link.has("resources"));
        assert!(Kind::of("prompts/list").is_some_and(|kind| kind.capability() == "prompts"));
    }
}
