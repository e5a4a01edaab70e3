//! Where clients come in: over Streamable HTTP ([`listen`]: many clients, each with a session
//! of its own), who may connect and what each is shown ([`access`]), and over stdio
//! ([`stdio`]: one client). Each hands its client's messages to a router.

pub mod access;
pub mod listen;
pub mod stdio;
