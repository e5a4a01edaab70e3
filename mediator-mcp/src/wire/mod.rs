//! What every hop speaks: JSON-RPC messages ([`jsonrpc`]), bounded newline-delimited framing
//! and outboxes ([`lines`]), the requests in flight per peer ([`pending`]), and the protocol
//! revisions: 2025 sessions and the stateless 2026-07-28 form ([`revision`]).

pub mod jsonrpc;
pub mod lines;
pub mod pending;
pub mod revision;
