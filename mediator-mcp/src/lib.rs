//! tool-mediator in front of MCP servers: the transports over the mediator's sessions.
//!
//! - [`proxy`]: one server (a child process over stdio, or a remote one over Streamable HTTP)
//!   or many (the gateway), served to a client over stdio ([`proxy::serve`]) or to many over
//!   Streamable HTTP ([`listen`]), where [`access`] says who may connect and what each client
//!   sees. The [`router`] mediates between them.
//! - [`jsonrpc`], [`lines`] and [`pending`]: JSON-RPC messages, bounded newline-delimited
//!   framing, and the bookkeeping of requests in flight per peer; [`revision`]: the protocol
//!   revisions (2025 sessions and the stateless 2026-07-28 form).
//! - [`remote`]: calling a server over Streamable HTTP.
//! - [`servers`]: the servers file the gateway reads; [`probe`]: a server's tools, listed once.
//! - [`clients`]: MCP clients' configuration files, wrapped and unwrapped.

pub mod access;
pub mod auth;
pub mod clients;
pub mod jsonrpc;
pub mod lines;
pub mod listen;
pub mod options;
pub mod pending;
pub mod probe;
pub mod proxy;
pub mod remote;
pub mod revision;
pub mod router;
pub mod savings;
pub mod servers;
mod signals;
pub mod stdio;
mod supervisor;
pub mod upstream;
mod warnings;

pub use options::{MAX_MESSAGE_BYTES, ProxyOptions};
pub use proxy::{Client, Ending, ProxyError, ServerSpec, run, serve};
pub use router::LinkSettings;
pub use upstream::{ServerEnd, Upstream};
