//! Which view a request is served: named by its token's claim, its path (`/mcp/<view>`) or a
//! header, and the servers that view shows.
//!
//! The claim, when the front reads one, is the only say that counts: a token without it is
//! refused, and a path or header naming another view is refused too (403), never quietly
//! served the claim's. Without a claim the path and the header choose, and a request that names
//! no view is served every server: a convenience for clients the operator trusts alike, not a
//! wall between them. A view nobody defined is not found (404).

use std::collections::HashMap;

use crate::proxy::ServerSpec;
use crate::servers::View;

/// The views a front serves, each with the servers it shows, and where a request names one.
pub struct Views {
    shown: HashMap<String, Vec<ServerSpec>>,
    /// The header a request may name its view in, lowercase.
    header: Option<String>,
    /// The token's claim names the view, and nothing else may say otherwise.
    by_claim: bool,
}

/// The view a request is served, or why it is served none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// Every server: no view named, and none required.
    Everything,
    View(String),
    /// The view named is not served here (404).
    Unknown,
    /// The request may not have the view it names, or names none where it must (403).
    Forbidden(&'static str),
}

impl Views {
    /// The front's views over its `servers` (as sessions start them); a view's name in `header`,
    /// or in the token's claim when `by_claim`.
    pub fn new(views: &[View], servers: &[ServerSpec], header: Option<&str>, by_claim: bool) -> Views {
        let shown = views.iter().map(|view| (view.name.clone(), seen_through(view, servers))).collect();
        Views { shown, header: header.map(str::to_ascii_lowercase), by_claim }
    }

    /// No views: every request is served every server.
    pub fn none() -> Views {
        Views { shown: HashMap::new(), header: None, by_claim: false }
    }

    /// The header a request may name its view in, lowercase.
    pub fn header(&self) -> Option<&str> {
        self.header.as_deref()
    }

    /// The servers `view` shows; `None` for a view not defined.
    pub fn servers(&self, view: &str) -> Option<&[ServerSpec]> {
        self.shown.get(view).map(Vec::as_slice)
    }

    /// The view of a request whose token's claim says `claim` (when the front reads claims),
    /// whose path says `path` and whose header says `header`.
    pub fn choose(&self, claim: Option<&str>, path: Option<&str>, header: Option<&str>) -> Choice {
        let named = [path, header.filter(|_| self.header.is_some())];
        if self.by_claim {
            let Some(claim) = claim else { return Choice::Forbidden("the token names no view") };
            if !self.shown.contains_key(claim) {
                return Choice::Forbidden("the token's view is not served here");
            }
            if named.iter().flatten().any(|other| *other != claim) {
                return Choice::Forbidden("the token's view is another");
            }
            return Choice::View(claim.to_owned());
        }
        let mut named = named.into_iter().flatten();
        let Some(first) = named.next() else { return Choice::Everything };
        if named.any(|other| other != first) {
            return Choice::Forbidden("the path and the header name different views");
        }
        match self.shown.contains_key(first) {
            true => Choice::View(first.to_owned()),
            false => Choice::Unknown,
        }
    }
}

/// `servers` as `view` shows them: those it names, in the file's order, each letting through
/// only what both its own settings and the view's let through.
pub fn seen_through(view: &View, servers: &[ServerSpec]) -> Vec<ServerSpec> {
    servers
        .iter()
        .filter_map(|server| {
            let viewed = view.server(&server.settings.name)?;
            let mut server = server.clone();
            let settings = &mut server.settings;
            settings.include = match (settings.include.take(), &viewed.include) {
                (None, narrowed) => narrowed.clone(),
                (Some(own), None) => Some(own),
                (Some(own), Some(narrowed)) => Some(own.into_iter().filter(|name| narrowed.contains(name)).collect()),
            };
            let more: Vec<String> =
                viewed.exclude.iter().filter(|name| !settings.exclude.contains(name)).cloned().collect();
            settings.exclude.extend(more);
            Some(server)
        })
        .collect()
}
