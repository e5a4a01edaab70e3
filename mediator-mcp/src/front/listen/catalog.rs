//! What a front serves, as its servers file last said: every server as a session starts (or
//! connects to) it, the views, and the servers sessions share. A gateway's servers file is read
//! again when it changes: a session opened after serves what it says now; one opened before
//! keeps the servers it had, less those removed or changed (their tools leave its list), and
//! sees of them only what its view shows now (a view narrowed applies at once); a
//! shared server whose entry is unchanged goes on as it was. A file that cannot be used changes
//! nothing, and says why with its place.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Front;
use crate::front::access::Views;
use crate::options::{Shown, ShownServers};
use crate::proxy::ServerSpec;
use crate::servers::{Scope, Servers, View};
use crate::upstream::Upstream;
use crate::upstream::pool::SharedServer;
use tool_mediator_core::sync::lock;

/// How often the servers file is looked at.
const LOOKING: Duration = Duration::from_secs(2);

type Start = Arc<dyn Fn() -> Option<Upstream> + Send + Sync>;

pub(super) struct Catalog {
    /// Every server, as a session that sees them all starts it (a shared one: connected to).
    pub(super) servers: Vec<ServerSpec>,
    /// The views, each with the servers it shows, and how a request names one.
    pub(super) views: Views,
    /// The servers sessions share, by name.
    pub(super) pool: Vec<(String, Arc<SharedServer>)>,
    /// How the stateless revision's proxy starts each shared server for itself: it is one proxy
    /// for every stateless request already, and a server that speaks both revisions answers in
    /// the one it was first spoken to in, which for the pool is 2025's.
    own_starts: HashMap<String, Start>,
}

/// How a catalog's views are chosen among, which a reading of the file does not change.
pub(super) struct Choosing<'a> {
    pub(super) header: Option<&'a str>,
    pub(super) by_claim: bool,
    /// How long what every session asks of a shared server may go unanswered.
    pub(super) patience: Duration,
}

impl Catalog {
    /// `servers` and `views`; a shared server of `previous` whose entry in the servers file is
    /// the same is kept.
    pub(super) fn new(
        servers: Vec<ServerSpec>,
        views: &[View],
        choosing: &Choosing<'_>,
        previous: Option<&Catalog>,
    ) -> Catalog {
        let mut pool = Vec::new();
        let mut own_starts = HashMap::new();
        let servers: Vec<ServerSpec> = servers
            .into_iter()
            .map(|server| match server.scope {
                Scope::Session => server,
                Scope::Shared => {
                    let name = server.settings.name.clone();
                    let kept = previous.and_then(|previous| {
                        let before = previous.servers.iter().find(|known| known.settings.name == name)?;
                        let unchanged = server.entry.is_some() && before.entry == server.entry;
                        let shared = previous.pool.iter().find(|(known, _)| *known == name)?.1.clone();
                        unchanged.then(|| (shared, previous.own_starts.get(&name).cloned()))
                    });
                    let (shared, own) = match kept {
                        Some((shared, Some(own))) => (shared, own),
                        _ => {
                            let label = crate::upstream::label_of(&name);
                            (SharedServer::new(label, server.start.clone(), choosing.patience), server.start.clone())
                        }
                    };
                    own_starts.insert(name.clone(), own);
                    pool.push((name, shared.clone()));
                    ServerSpec { start: Arc::new(move || Some(Upstream::Shared(shared.clone()))), ..server }
                }
            })
            .collect();
        let views = Views::new(views, &servers, choosing.header, choosing.by_claim);
        Catalog { servers, views, pool, own_starts }
    }

    /// The servers a session of `view` starts (or connects to).
    pub(super) fn servers_of(&self, view: Option<&str>) -> Vec<ServerSpec> {
        match view.and_then(|view| self.views.servers(view)) {
            Some(servers) => servers.to_vec(),
            None => self.servers.clone(),
        }
    }

    /// What a session of `view` may see of each server now: nothing of a server the view no
    /// longer shows, nor of any when the view itself is gone.
    pub(super) fn shown_to(&self, view: Option<&str>) -> ShownServers {
        let servers = match view {
            Some(view) => self.views.servers(view).map(<[ServerSpec]>::to_vec).unwrap_or_default(),
            None => self.servers.clone(),
        };
        shown_of(&servers)
    }

    /// `servers` each started for its own, rather than connected to the pool: the stateless
    /// revision's proxy's. Each is known by the name it gave the pool (unless the file sets its
    /// `source`): a server that speaks only an earlier revision is asked no handshake by this
    /// proxy, and its overrides and cached answers are the same whichever revision a client
    /// speaks.
    pub(super) fn unpooled(&self, servers: Vec<ServerSpec>) -> Vec<ServerSpec> {
        servers
            .into_iter()
            .map(|mut server| match self.own_starts.get(&server.settings.name) {
                Some(start) => {
                    if server.settings.source.is_none() {
                        let shared = self.pool.iter().find(|(name, _)| *name == server.settings.name);
                        server.settings.source = shared.and_then(|(_, shared)| shared.server_name());
                    }
                    ServerSpec { start: start.clone(), scope: Scope::Session, ..server }
                }
                None => server,
            })
            .collect()
    }

    /// The shared servers, in the file's order.
    pub(super) fn shared(&self) -> impl Iterator<Item = &Arc<SharedServer>> {
        self.pool.iter().map(|(_, shared)| shared)
    }
}

/// What a session started with `servers` may see of each.
pub(super) fn shown_of(servers: &[ServerSpec]) -> ShownServers {
    let shown = |server: &ServerSpec| Shown {
        include: server.settings.include.clone(),
        exclude: server.settings.exclude.clone(),
    };
    servers.iter().map(|server| (server.settings.name.clone(), shown(server))).collect()
}

/// Reads the servers file at `path` again whenever it changes, until the front stops.
pub(super) async fn follow(front: Arc<Front>, path: PathBuf) {
    let looked = |path: &PathBuf| std::fs::metadata(path).ok().map(|found| tool_mediator::read::Stamp::of(&found));
    let mut seen = looked(&path);
    loop {
        tokio::time::sleep(LOOKING).await;
        let now = looked(&path);
        if now == seen {
            continue;
        }
        seen = now;
        match Servers::read(&path) {
            Ok(servers) => front.read_again(&servers, &path),
            Err(error) => tracing::warn!("{error}; the servers as they were go on"),
        }
    }
}

impl Front {
    /// The servers file says `servers` now: sessions opened from now on serve them.
    fn read_again(self: &Arc<Self>, servers: &Servers, path: &std::path::Path) {
        for warning in &servers.warnings {
            tracing::warn!("{warning}");
        }
        let specs = ServerSpec::of_servers(servers);
        if specs.is_empty() {
            return tracing::warn!("{}: every server is disabled; the servers as they were go on", path.display());
        }
        let previous = self.catalog();
        let next = Catalog::new(specs, &servers.views, &self.choosing(), Some(&previous));
        let retired: Vec<Arc<SharedServer>> =
            previous.shared().filter(|shared| !next.shared().any(|kept| Arc::ptr_eq(kept, shared))).cloned().collect();
        let names: Vec<&str> = next.servers.iter().map(|server| server.settings.name.as_str()).collect();
        tracing::info!("{}: read again; serving {}", path.display(), names.join(", "));
        // A session already open sees what its view shows now: a server or a tool the view no
        // longer shows leaves its lists (one the view adds is for the sessions opened after).
        let open: Vec<Arc<super::Session>> = lock(&self.sessions).values().cloned().collect();
        for session in open {
            if let Some(shown) = &session.shown {
                let now = next.shown_to(session.view.as_deref());
                shown.send_if_modified(|before| {
                    let changed = **before != now;
                    *before = Arc::new(now);
                    changed
                });
            }
        }
        *lock(&self.catalog) = Arc::new(next);
        let grace = self.proxy.grace;
        for shared in retired {
            tokio::spawn(async move { shared.end(grace).await });
        }
        // The stateless revision's proxies were started with what the file said before.
        let stateless: Vec<_> = lock(&self.shared).drain().map(|(_, session)| session).collect();
        for session in stateless {
            tokio::spawn(async move { session.end().await });
        }
        tokio::spawn(super::warm_up(self.clone()));
    }
}
