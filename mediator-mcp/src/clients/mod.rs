//! MCP clients' configuration files, and putting the mediator in front of the servers they
//! name: `tool-mediator wrap` and `tool-mediator unwrap`.
//!
//! A client configuration names its servers under `mcpServers` (Claude Desktop, Claude Code,
//! Cursor, Windsurf) or `servers` (VS Code, whose file is JSONC: comments and trailing commas).
//! Everything here edits the text by byte ranges and never writes the document out again, so
//! what is not a wrapped server's `command` or `args` keeps its bytes: comments, spacing, key
//! order, numbers, the keys of other tools sharing the file.
//!
//! **Through the proxy** ([`wrap`]): a stdio server's `command` value becomes the mediator's,
//! and `"proxy", "--", <the old command>` goes in at the start of its `args`; a server without
//! `args` gets `"args": ["proxy", <the old command>]` right after its `command` (no `--`: that
//! is how [`unwrap`] tells that there were no `args` to give back). `env`, `cwd` and every
//! other key stay where they are, so the client starts the proxy as it started the server, and
//! the proxy passes its environment and directory on. HTTP servers are left as they are: the
//! proxy could reach one (`proxy --url URL --header 'K: V'`), but its headers, often a bearer
//! token, would then sit on a command line that every local user can read.
//!
//! [`wrap`]: fn@wrap
//!
//! **Through the gateway** (`--gateway`): the servers move into a servers file beside the
//! configuration ([`gateway_file`]), and one entry, `tool-mediator`, runs
//! `tool-mediator gateway --config <that file>` in their place. HTTP servers move too. A server
//! the gateway would run differently from the client stays where it is, with the reason: a key
//! the gateway does not read (`envFile`, `serverUrl`), a `${...}` it would not expand the same
//! way, the legacy SSE transport. What was taken out of the configuration, byte for byte, is
//! kept in a record beside the servers file ([`unwrap_record`]), from which [`unwrap`] puts it
//! back where it was; the gateway never reads the record, so it never warns about it.
//!
//! **Exactness**: `unwrap(wrap(text)) == text`, byte for byte, whenever what wrap wrote was not
//! edited by hand in between (the rest of the file may be). Never twice: an entry that already
//! runs the mediator is left alone.
//!
//! ```
//! use std::collections::HashMap;
//! use std::path::Path;
//! use tool_mediator_mcp::clients::{self, WrapOptions};
//!
//! let text = r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#;
//! let path = Path::new("claude_desktop_config.json");
//! let wrapped = clients::wrap(text, path, &WrapOptions::default()).unwrap();
//! assert_eq!(
//!     wrapped.text,
//!     r#"{"mcpServers": {"time": {"command": "tool-mediator", "args": ["proxy", "--", "uvx", "mcp-server-time"]}}}"#
//! );
//! let unwrapped = clients::unwrap(&wrapped.text, path, &[], &HashMap::new()).unwrap();
//! assert_eq!(unwrapped.text, text);
//! ```

mod client;
mod document;
mod entry;
mod error;
mod gateway;
mod location;
mod proxy;
mod records;
mod wrap;

pub use client::{Client, Scope};
pub use entry::MEDIATOR;
pub use error::ClientsError;
pub use gateway::GATEWAY_ENTRY;
pub use location::Locations;
pub use records::{gateway_file, unwrap_record};
pub use wrap::{Rewritten, WrapOptions, gateway_records, unwrap, wrap};
