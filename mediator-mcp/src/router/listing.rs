//! What the router keeps of each server's tool listing between listings: its fingerprint and
//! the rest of its result (`Listing`), the tools that could not be read (`LeftOut`), and the
//! relisting a change notice asks for (`Relisting`). Mediation fills it in; each server's link
//! holds it.

use serde::Serialize;
use serde_json::{Map, Value};
use tool_mediator::ChainVersion;

/// What the proxy keeps of the server's last listing: a fingerprint of its tools as written,
/// to take in only a list that changed, and the rest of its first page's result (cache hints,
/// `resultType`, `_meta`), which the client's answer keeps. The tools themselves live once,
/// enhanced, in the session.
#[derive(Clone)]
pub(super) struct Listing {
    pub(super) fingerprint: u64,
    pub(super) rest: Map<String, Value>,
    /// The bytes of the server's tools as it listed them, every page.
    pub(super) bytes: usize,
    /// The tools of it that could not be read, left out of what the client sees.
    pub(super) left_out: Vec<LeftOut>,
    /// What the chain did when it took the tools in: after it changed, they are taken in again
    /// however the server lists.
    pub(super) chain: Option<ChainVersion>,
}

/// A tool a server listed that cannot be read (not a tool's shape, a duplicate key, nested
/// deeper than JSON is read): left out of the list, and named to the client under
/// [`LEFT_OUT`] in the first page's `_meta`, so a client that checks a server's tools (`lint
/// --server`) knows that something went unchecked.
#[derive(Clone, Serialize)]
pub(super) struct LeftOut {
    /// The tool's position in the server's whole listing, every page counted.
    pub(super) index: usize,
    pub(super) name: String,
    pub(super) reason: String,
}

/// Where [`LeftOut`] tools are named in a `tools/list` result's `_meta`.
pub(crate) const LEFT_OUT: &str = "tool-mediator/left-out";

/// Relisting after the server says its tools changed: at most one listing in flight and one
/// more asked for, however many notifications arrive meanwhile.
#[derive(Default)]
pub(super) struct Relisting {
    pub(super) running: bool,
    pub(super) again: bool,
}
