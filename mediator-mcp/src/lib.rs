//! tool-mediator in front of MCP servers: the transports over the mediator's sessions. The
//! rooms follow a message from the client to a server:
//!
//! - [`proxy`] and [`options`]: the entry points, one server (a child process over stdio, or a
//!   remote one over Streamable HTTP) or many (the gateway).
//! - [`front`]: where clients come in, over stdio or Streamable HTTP, and who may.
//! - [`router`]: between one client and its servers, every tool through the mediator's session.
//! - [`upstream`]: the servers: child processes, shared ones (the pool), remote ones and
//!   signing in to them.
//! - [`wire`]: JSON-RPC, framing, requests in flight, protocol revisions.
//! - [`servers`]: the servers file the gateway reads; [`clients`]: MCP clients' configuration
//!   files, wrapped and unwrapped; [`probe`]: a server's tools, listed once.

pub mod clients;
pub mod front;
pub mod options;
pub mod probe;
pub mod proxy;
pub mod router;
pub mod savings;
pub mod servers;
mod signals;
pub mod upstream;
mod warnings;
pub mod wire;

pub use options::{MAX_MESSAGE_BYTES, ProxyOptions};
pub use proxy::{Client, Ending, ProxyError, ServerSpec, run, serve};
pub use router::LinkSettings;
pub use upstream::{ServerEnd, Upstream};
