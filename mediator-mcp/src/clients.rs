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
//! use tool_mediator::clients::{self, WrapOptions};
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

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use jsonc_parser::ast::{self, ObjectProp};
use jsonc_parser::common::Ranged as _;
use jsonc_parser::{CollectOptions, ParseOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::servers::Servers;
use tool_mediator_core::Place;

/// The command a wrapped entry runs unless told otherwise: the binary, found on the PATH the
/// client starts servers with.
pub const MEDIATOR: &str = "tool-mediator";

/// The name of the one entry `--gateway` leaves in the configuration.
pub const GATEWAY_ENTRY: &str = "tool-mediator";

/// An MCP client whose configuration file tool-mediator knows where to find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    Vscode,
    Windsurf,
}

/// Whose configuration: the project's (a file in the working directory) or the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Project,
    User,
}

/// Where configuration files are looked for.
#[derive(Debug, Clone, Copy)]
pub struct Locations<'a> {
    /// The user's home directory.
    pub home: &'a Path,
    /// The platform's configuration directory: `~/.config` (or `$XDG_CONFIG_HOME`) on Linux,
    /// `~/Library/Application Support` on macOS.
    pub config_dir: &'a Path,
    /// The project: the working directory.
    pub project: &'a Path,
}

impl Client {
    pub const ALL: [Client; 5] =
        [Client::ClaudeDesktop, Client::ClaudeCode, Client::Cursor, Client::Vscode, Client::Windsurf];

    /// The client's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Vscode => "vscode",
            Client::Windsurf => "windsurf",
        }
    }

    /// The scope used when none is asked for: the project's file for the clients that have one.
    pub fn default_scope(self) -> Scope {
        match self {
            Client::ClaudeCode | Client::Cursor | Client::Vscode => Scope::Project,
            Client::ClaudeDesktop | Client::Windsurf => Scope::User,
        }
    }

    /// The client's configuration file in `scope`, as its documentation places it:
    ///
    /// | client | project | user |
    /// |---|---|---|
    /// | Claude Desktop | - | `<config>/Claude/claude_desktop_config.json` |
    /// | Claude Code | `.mcp.json` | `~/.claude.json` (its top-level `mcpServers`) |
    /// | Cursor | `.cursor/mcp.json` | `~/.cursor/mcp.json` |
    /// | VS Code | `.vscode/mcp.json` | `<config>/Code/User/mcp.json` (the default profile) |
    /// | Windsurf | - | `~/.codeium/windsurf/mcp_config.json` |
    pub fn config_file(self, scope: Scope, at: &Locations<'_>) -> Result<PathBuf, ClientsError> {
        let path = match (self, scope) {
            (Client::ClaudeDesktop, Scope::User) => at.config_dir.join("Claude/claude_desktop_config.json"),
            (Client::ClaudeCode, Scope::Project) => at.project.join(".mcp.json"),
            (Client::ClaudeCode, Scope::User) => at.home.join(".claude.json"),
            (Client::Cursor, Scope::Project) => at.project.join(".cursor/mcp.json"),
            (Client::Cursor, Scope::User) => at.home.join(".cursor/mcp.json"),
            (Client::Vscode, Scope::Project) => at.project.join(".vscode/mcp.json"),
            (Client::Vscode, Scope::User) => at.config_dir.join("Code/User/mcp.json"),
            (Client::Windsurf, Scope::User) => at.home.join(".codeium/windsurf/mcp_config.json"),
            (Client::ClaudeDesktop | Client::Windsurf, Scope::Project) => {
                return Err(ClientsError::NoProjectScope { client: self });
            }
        };
        Ok(path)
    }

    /// The configuration file in `scope` (the client's default when `None`), from the user's
    /// home and configuration directories and the project directory given.
    pub fn locate(self, scope: Option<Scope>, project: &Path) -> Result<PathBuf, ClientsError> {
        let home = dirs::home_dir().ok_or(ClientsError::NoHome)?;
        let config_dir = dirs::config_dir().ok_or(ClientsError::NoHome)?;
        self.config_file(
            scope.unwrap_or(self.default_scope()),
            &Locations { home: &home, config_dir: &config_dir, project },
        )
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::Vscode => "VS Code",
            Client::Windsurf => "Windsurf",
        })
    }
}

/// Why a configuration cannot be wrapped or unwrapped; nothing is changed then.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientsError {
    /// The file, the place in it (a line and column, or a JSON pointer), what is wrong.
    #[error("{}{}: {message}", path.display(), place.as_ref().map(ToString::to_string).unwrap_or_default())]
    File { path: PathBuf, place: Option<Place>, message: String },
    #[error("{client} keeps its servers in the user's configuration only (no project scope)")]
    NoProjectScope { client: Client },
    #[error("cannot tell where the home or configuration directory is")]
    NoHome,
}

/// What [`wrap`] is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct WrapOptions<'a> {
    /// The servers to wrap, by name; every one when empty.
    pub servers: &'a [String],
    /// The command wrapped entries run: [`MEDIATOR`], or a path to it.
    pub mediator: &'a str,
    /// `Some(servers file)`: move the servers into a gateway reading that file (an absolute path,
    /// since the client starts the gateway from a directory of its choosing); see [`gateway_file`].
    pub gateway: Option<&'a Path>,
}

impl Default for WrapOptions<'_> {
    fn default() -> Self {
        WrapOptions { servers: &[], mediator: MEDIATOR, gateway: None }
    }
}

/// A configuration after [`wrap`] or [`unwrap`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The configuration's new text (the same text when nothing changed).
    pub text: String,
    /// The servers wrapped, or put back, by name.
    pub changed: Vec<String>,
    /// Each server left as it was, and why.
    pub notes: Vec<String>,
    /// Other files to write: with `--gateway`, the servers file and the record.
    pub write: Vec<(PathBuf, String)>,
    /// Files that are of no use any more: after a gateway is unwrapped, its servers file and
    /// record.
    pub remove: Vec<PathBuf>,
}

/// The servers file `--gateway` writes for the configuration at `config`: beside it, named after
/// it (`claude_desktop_config.json` -> `claude_desktop_config.tool-mediator.json`).
pub fn gateway_file(config: &Path) -> PathBuf {
    let stem = config.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
    config.with_file_name(format!("{stem}.tool-mediator.json"))
}

/// The record of what `--gateway` took out of a configuration, kept beside the servers file
/// (`*.tool-mediator.json` -> `*.tool-mediator.unwrap.json`).
pub fn unwrap_record(servers_file: &Path) -> PathBuf {
    servers_file.with_extension("unwrap.json")
}

/// Puts the mediator in front of the configuration's servers (or the ones named): through the
/// proxy, or all through one gateway. See the module documentation for what is written.
pub fn wrap(text: &str, path: &Path, options: &WrapOptions<'_>) -> Result<Rewritten, ClientsError> {
    let (bom, text) = without_bom(text);
    let document = Document::parse(text, path)?;
    if !is_mediator(options.mediator) {
        // What wrap writes must be known again, by unwrap and by the next wrap.
        return Err(document.error(
            None,
            format!("the mediator `{}` must be named `{MEDIATOR}` (a path to it is fine)", options.mediator),
        ));
    }
    let selected = document.select(options.servers, &[])?;
    let mut rewritten = Rewritten::unchanged(text);
    let mut edits = Vec::new();
    let mut movable = Vec::new();
    let mut gateway_entry = None;
    for (index, prop) in document.servers.properties.iter().enumerate() {
        let entry = Entry::of(prop, text);
        if let Mediated::Gateway = entry.mediated() {
            gateway_entry = Some(entry.name.clone());
        }
        if !selected.contains(&index) {
            continue;
        }
        match (entry.mediated(), entry.transport()) {
            (Mediated::Not, _) if options.gateway.is_some() => match document.movable(&entry) {
                Ok(value) => movable.push((index, value)),
                Err(reason) => rewritten.note(&entry.name, &format!("stays out of the gateway: {reason}")),
            },
            (Mediated::Not, Transport::Stdio) => match entry.proxy_edits(options.mediator) {
                Ok(entry_edits) => {
                    edits.extend(entry_edits);
                    rewritten.changed.push(entry.name.clone());
                }
                Err(reason) => rewritten.note(&entry.name, &format!("left as it is: {reason}")),
            },
            (Mediated::Not, Transport::Http) => rewritten.note(
                &entry.name,
                "an HTTP server, left as it is (through the proxy its headers would sit on a command line; \
                 --gateway moves it into the gateway)",
            ),
            (Mediated::Not, Transport::Unknown(reason)) => {
                rewritten.note(&entry.name, &format!("left as it is: {reason}"));
            }
            (_, _) => rewritten.note(&entry.name, "already runs tool-mediator; left as it is"),
        }
    }
    if let (Some(servers_file), false) = (options.gateway, movable.is_empty()) {
        if let Some(existing) =
            gateway_entry.or_else(|| document.member(GATEWAY_ENTRY).map(|_| GATEWAY_ENTRY.to_owned()))
        {
            return Err(document.error(
                Some(document.pointer(&[&existing])),
                format!(
                    "the servers already have an entry `{existing}`; `tool-mediator unwrap` first, then wrap them \
                     into one gateway again"
                ),
            ));
        }
        let (gateway_edits, files) = document.gateway_move(&movable, options.mediator, servers_file)?;
        edits.extend(gateway_edits);
        rewritten.write = files;
        rewritten.changed.extend(movable.iter().map(|(index, _)| name_of(&document.servers.properties[*index])));
    }
    rewritten.text = apply(text, edits);
    checked(rewritten, path, bom)
}

/// A byte order mark (some editors write one, and the clients read past it) stays out of the
/// parse, and in the text.
fn without_bom(text: &str) -> (&'static str, &str) {
    match tool_mediator_core::json::without_bom(text) {
        (body, true) => ("\u{FEFF}", body),
        (body, false) => ("", body),
    }
}

/// `rewritten`, once its text is known to parse as a configuration still: nothing that does not
/// is ever written (a record edited by hand could splice in anything).
fn checked(mut rewritten: Rewritten, path: &Path, bom: &str) -> Result<Rewritten, ClientsError> {
    if let Err(error) = Document::parse(&rewritten.text, path) {
        return Err(ClientsError::File {
            path: path.to_owned(),
            place: None,
            message: format!("the rewritten configuration would not parse ({error}); nothing written"),
        });
    }
    rewritten.text.insert_str(0, bom);
    Ok(rewritten)
}

/// The files [`unwrap`] reads to put back the servers of the configuration's gateway entries:
/// each one's record, and its servers file (kept when it was edited since).
pub fn gateway_records(text: &str, path: &Path) -> Result<Vec<PathBuf>, ClientsError> {
    let document = Document::parse(without_bom(text).1, path)?;
    let files = document.servers.properties.iter().filter_map(|prop| Entry::of(prop, text).gateway_file());
    Ok(files.flat_map(|servers_file| [unwrap_record(&servers_file), servers_file]).collect())
}

/// Takes the mediator out again: each entry wrap put behind the proxy gets its own command and
/// arguments back, and a gateway entry wrap wrote is replaced by the servers it took, from
/// `records` (each file [`gateway_records`] names, by its path, to its text). `servers`
/// names the entries to unwrap (naming a server inside a gateway unwraps the whole gateway);
/// every one when empty.
pub fn unwrap(
    text: &str,
    path: &Path,
    servers: &[String],
    records: &HashMap<PathBuf, String>,
) -> Result<Rewritten, ClientsError> {
    let (bom, text) = without_bom(text);
    let document = Document::parse(text, path)?;
    // The records of the gateway entries: which servers each one holds.
    let mut gateways = Vec::new();
    for (index, prop) in document.servers.properties.iter().enumerate() {
        let Some(servers_file) = Entry::of(prop, text).gateway_file() else { continue };
        let record_path = unwrap_record(&servers_file);
        let record = match records.get(&record_path) {
            Some(record) => Some(Record::parse(record, &record_path)?),
            None => None,
        };
        gateways.push((index, servers_file, record_path, record));
    }
    let inside: Vec<(&str, usize)> = gateways
        .iter()
        .flat_map(|(index, _, _, record)| {
            record.iter().flat_map(move |record| record.servers.iter().map(move |name| (name.as_str(), *index)))
        })
        .collect();
    let selected = document.select(servers, &inside)?;
    let mut rewritten = Rewritten::unchanged(text);
    let mut edits = Vec::new();
    for (index, prop) in document.servers.properties.iter().enumerate() {
        if !selected.contains(&index) {
            continue;
        }
        let entry = Entry::of(prop, text);
        match entry.mediated() {
            Mediated::Not => rewritten.note(&entry.name, "does not run tool-mediator; left as it is"),
            Mediated::Proxy => match entry.unproxy_edits() {
                Ok(entry_edits) => {
                    edits.extend(entry_edits);
                    rewritten.changed.push(entry.name.clone());
                }
                Err(reason) => rewritten.note(&entry.name, &format!("left as it is: {reason}")),
            },
            Mediated::Gateway => {
                let Some((_, servers_file, record_path, record)) = gateways.iter().find(|gateway| gateway.0 == index)
                else {
                    rewritten.note(&entry.name, "runs a gateway wrap did not write; left as it is");
                    continue;
                };
                let Some(record) = record else {
                    rewritten.note(
                        &entry.name,
                        &format!(
                            "no record of the servers it took at {}; left as it is (its servers are in {})",
                            record_path.display(),
                            servers_file.display()
                        ),
                    );
                    continue;
                };
                edits.extend(document.gateway_restore(prop, record, record_path)?);
                rewritten.changed.extend(record.servers.iter().cloned());
                rewritten.remove.push(record_path.clone());
                // A servers file edited since wrap wrote it (a server added, a token changed)
                // holds what only its user knows: it stays.
                match (&record.servers_file, records.get(servers_file)) {
                    (Some(written), Some(now)) if written != now => rewritten
                        .note(&entry.name, &format!("{} was edited since wrap wrote it; kept", servers_file.display())),
                    _ => rewritten.remove.push(servers_file.clone()),
                }
            }
            Mediated::Other => {
                rewritten.note(&entry.name, "runs tool-mediator in a way wrap does not write; left as it is")
            }
        }
    }
    rewritten.text = apply(text, edits);
    checked(rewritten, path, bom)
}

impl Rewritten {
    fn unchanged(text: &str) -> Rewritten {
        Rewritten {
            text: text.to_owned(),
            changed: Vec::new(),
            notes: Vec::new(),
            write: Vec::new(),
            remove: Vec::new(),
        }
    }

    fn note(&mut self, name: &str, what: &str) {
        self.notes.push(format!("`{name}`: {what}"));
    }
}

/// A parsed configuration: its text, and the object of servers in it.
struct Document<'t> {
    text: &'t str,
    path: &'t Path,
    /// `mcpServers` or `servers`.
    key: &'static str,
    servers: ast::Object<'t>,
}

impl<'t> Document<'t> {
    fn parse(text: &'t str, path: &'t Path) -> Result<Document<'t>, ClientsError> {
        // What the clients accept: JSON, and in VS Code's files comments and trailing commas.
        let options = ParseOptions {
            allow_comments: true,
            allow_trailing_commas: true,
            allow_loose_object_property_names: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_non_finite_numbers: false,
            allow_extended_string_escapes: false,
        };
        let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &options).map_err(|error| {
            ClientsError::File {
                path: path.to_owned(),
                place: Some(Place::at(text, error.range().start)),
                message: error.kind().to_string(),
            }
        })?;
        let error = |place: Option<Place>, message: &str| ClientsError::File {
            path: path.to_owned(),
            place,
            message: message.to_owned(),
        };
        let Some(ast::Value::Object(mut root)) = parsed.value else {
            return Err(error(None, "a client configuration is an object: {\"mcpServers\": {NAME: {...}}}"));
        };
        let key = match (root.get("mcpServers").is_some(), root.get("servers").is_some()) {
            (true, true) => return Err(error(None, "both `mcpServers` and `servers`: say which servers are meant")),
            (true, false) => "mcpServers",
            (false, true) => "servers",
            (false, false) => return Err(error(None, "no `mcpServers` (or VS Code's `servers`) naming the servers")),
        };
        let Some(servers) = root.take_object(key) else {
            return Err(error(Some(Place::Pointer(format!("/{key}"))), "must be an object of servers by name"));
        };
        let document = Document { text, path, key, servers };
        let mut seen = std::collections::HashSet::new();
        for prop in &document.servers.properties {
            let name = name_of(prop);
            if !seen.insert(name.clone()) {
                let place = Place::at(text, prop.range.start);
                return Err(error(Some(place), &format!("the server `{name}` is named twice")));
            }
        }
        Ok(document)
    }

    fn error(&self, place: Option<Place>, message: String) -> ClientsError {
        ClientsError::File { path: self.path.to_owned(), place, message }
    }

    fn pointer(&self, tokens: &[&str]) -> Place {
        let mut pointer = format!("/{}", self.key);
        for token in tokens {
            pointer.push('/');
            pointer.push_str(&tool_mediator_core::schema::escape(token));
        }
        Place::Pointer(pointer)
    }

    fn member(&self, name: &str) -> Option<&ObjectProp<'t>> {
        self.servers.properties.iter().find(|prop| prop.name.as_str() == name)
    }

    /// The positions of the servers named (every one when `names` is empty). A name may also be
    /// one of the servers inside a gateway entry (`inside`: name, the entry's position).
    fn select(&self, names: &[String], inside: &[(&str, usize)]) -> Result<Vec<usize>, ClientsError> {
        if names.is_empty() {
            return Ok((0..self.servers.properties.len()).collect());
        }
        let mut selected = Vec::new();
        for name in names {
            let index = self
                .servers
                .properties
                .iter()
                .position(|prop| prop.name.as_str() == name)
                .or_else(|| inside.iter().find(|(inner, _)| inner == name).map(|(_, index)| *index))
                .ok_or_else(|| {
                    self.error(Some(Place::Pointer(format!("/{}", self.key))), format!("no server named `{name}`"))
                })?;
            if !selected.contains(&index) {
                selected.push(index);
            }
        }
        Ok(selected)
    }

    /// The entry as the gateway's servers file holds it, when the gateway would run the server
    /// as the client does; otherwise why not.
    fn movable(&self, entry: &Entry<'_, 't>) -> Result<Value, String> {
        let value = to_value(&entry.prop.value)?;
        if let Some(object) = value.as_object() {
            if object.contains_key("serverUrl") {
                return Err("Windsurf's `serverUrl` is not what the gateway reads (`url`)".to_owned());
            }
            // VS Code's `${workspaceFolder}`, `${env:NAME}`, `${input:id}` are the client's to expand,
            // wherever they are; elsewhere `${NAME}` in `env` and `headers` is the gateway's syntax too.
            if self.key == "servers" && strings(&value).any(|text| text.contains("${")) {
                return Err("it has a `${...}` only VS Code expands".to_owned());
            }
            for key in ["command", "cwd", "url"] {
                if object.get(key).and_then(Value::as_str).is_some_and(|text| text.contains("${")) {
                    return Err(format!("its `{key}` has a `${{...}}` the gateway does not expand"));
                }
            }
            let args = object.get("args").and_then(Value::as_array).into_iter().flatten();
            if args.filter_map(Value::as_str).any(|arg| arg.contains("${")) {
                return Err("its `args` have a `${...}` the gateway does not expand".to_owned());
            }
        }
        let mut single = Map::new();
        single.insert(entry.name.clone(), value.clone());
        let file = Value::Object(Map::from_iter([("mcpServers".to_owned(), Value::Object(single))])).to_string();
        // Any variable counts as set: whether it is set where the gateway runs is not known here.
        let servers = Servers::parse(&file, self.path, |_| Some("set".to_owned())).map_err(|error| error.message)?;
        if let Some(warning) = servers.warnings.first() {
            // `FILE: `/mcpServers/NAME/KEY`: why`: the key is what the user knows.
            let key = warning.split('`').nth(1).and_then(|pointer| pointer.rsplit('/').next()).unwrap_or_default();
            let key = key.replace("~1", "/").replace("~0", "~");
            return Err(format!("the gateway would ignore its `{key}`"));
        }
        Ok(value)
    }

    /// The edits that replace the `movable` servers with one gateway entry, and the servers file
    /// and record to write.
    fn gateway_move(
        &self,
        movable: &[(usize, Value)],
        mediator: &str,
        servers_file: &Path,
    ) -> Result<(Vec<Edit>, Files), ClientsError> {
        let servers_path = servers_file.to_str().ok_or_else(|| {
            self.error(None, format!("{}: the servers file's path is not UTF-8", servers_file.display()))
        })?;
        let entry = format!(
            "{}: {{\"command\": {}, \"args\": [\"gateway\", \"--config\", {}]}}",
            json_string(GATEWAY_ENTRY),
            json_string(mediator),
            json_string(servers_path)
        );
        let props = &self.servers.properties;
        let chosen: Vec<usize> = movable.iter().map(|(index, _)| *index).collect();
        let mut edits = Vec::new();
        let mut record = Record {
            note: format!(
                "Written by `tool-mediator wrap --gateway`: what `tool-mediator unwrap` puts back in {}.",
                self.path.display()
            ),
            servers: chosen.iter().map(|&index| name_of(&props[index])).collect(),
            replaced: String::new(),
            removed: Vec::new(),
            servers_file: None,
        };
        // Runs of neighbouring servers: the first run becomes the gateway entry; each later one
        // goes with the separator before it, and comes back after the server it followed.
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &index in &chosen {
            match runs.last_mut() {
                Some((_, last)) if *last + 1 == index => *last = index,
                _ => runs.push((index, index)),
            }
        }
        for (position, &(first, last)) in runs.iter().enumerate() {
            if position == 0 {
                let range = props[first].range.start..props[last].range.end;
                record.replaced = self.text[range.clone()].to_owned();
                edits.push(Edit { range, text: entry.clone() });
            } else {
                let range = props[first - 1].range.end..props[last].range.end;
                record
                    .removed
                    .push(Removed { after: name_of(&props[first - 1]), text: self.text[range.clone()].to_owned() });
                edits.push(Edit { range, text: String::new() });
            }
        }
        let servers: Map<String, Value> =
            movable.iter().map(|(index, value)| (name_of(&props[*index]), value.clone())).collect();
        let servers_text = pretty(&Value::Object(Map::from_iter([("mcpServers".to_owned(), Value::Object(servers))])));
        record.servers_file = Some(servers_text.clone());
        let record_text = pretty(&serde_json::to_value(&record).expect("a record serializes"));
        Ok((edits, vec![(servers_file.to_owned(), servers_text), (unwrap_record(servers_file), record_text)]))
    }

    /// The edits that put back what a gateway entry took, from its record.
    fn gateway_restore(
        &self,
        gateway: &ObjectProp<'t>,
        record: &Record,
        record_path: &Path,
    ) -> Result<Vec<Edit>, ClientsError> {
        for name in &record.servers {
            if self.member(name).is_some() {
                return Err(self.error(
                    Some(self.pointer(&[name])),
                    format!(
                        "`{name}` is back in the file beside the gateway that holds it ({}): remove one of them first",
                        record_path.display()
                    ),
                ));
            }
        }
        let mut edits = vec![Edit { range: gateway.range.start..gateway.range.end, text: record.replaced.clone() }];
        for removed in &record.removed {
            let anchor = self.member(&removed.after).ok_or_else(|| {
                self.error(
                    Some(Place::Pointer(format!("/{}", self.key))),
                    format!(
                        "cannot put back what followed `{}`: that server is gone (what was taken is in {})",
                        removed.after,
                        record_path.display()
                    ),
                )
            })?;
            edits.push(Edit { range: anchor.range.end..anchor.range.end, text: removed.text.clone() });
        }
        Ok(edits)
    }
}

/// What `--gateway` took out of a configuration.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    note: String,
    /// The servers moved, in the file's order.
    servers: Vec<String>,
    /// The text the gateway entry replaced: the first run of neighbouring servers.
    replaced: String,
    /// The later runs, each with the separator before it.
    removed: Vec<Removed>,
    /// The servers file as wrap wrote it: one edited since is kept by unwrap, not removed.
    #[serde(default)]
    servers_file: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Removed {
    /// The server it followed.
    after: String,
    text: String,
}

impl Record {
    fn parse(text: &str, path: &Path) -> Result<Record, ClientsError> {
        serde_json::from_str(text).map_err(|error| ClientsError::File {
            path: path.to_owned(),
            place: Some(Place::of_json_error(text, &error)),
            message: format!("not a record tool-mediator wrote: {}", tool_mediator_core::json::message(&error)),
        })
    }
}

/// How a server is reached, as the gateway's servers file reads it.
enum Transport {
    Stdio,
    Http,
    /// Neither, and why.
    Unknown(String),
}

/// Whether an entry already runs the mediator.
enum Mediated {
    Not,
    /// `tool-mediator proxy ...`
    Proxy,
    /// `tool-mediator gateway ...`
    Gateway,
    /// `tool-mediator` with other arguments.
    Other,
}

/// One server of the configuration.
struct Entry<'a, 't> {
    name: String,
    /// The document's text, which every range is into.
    text: &'t str,
    prop: &'a ObjectProp<'t>,
    object: Option<&'a ast::Object<'t>>,
}

/// An array's elements: each one's range, and its value when it is a string.
type Elements = Vec<(std::ops::Range<usize>, Option<String>)>;

impl<'a, 't> Entry<'a, 't> {
    fn of(prop: &'a ObjectProp<'t>, text: &'t str) -> Entry<'a, 't> {
        Entry { name: name_of(prop), text, prop, object: prop.value.as_object() }
    }

    fn get(&self, key: &str) -> Option<&'a ObjectProp<'t>> {
        self.object.and_then(|object| object.properties.iter().find(|prop| prop.name.as_str() == key))
    }

    fn string(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(|prop| prop.value.as_string_lit()).map(|lit| lit.value.as_ref())
    }

    fn args(&self) -> Option<Elements> {
        let array = self.get("args")?.value.as_array()?;
        Some(
            array
                .elements
                .iter()
                .map(|element| {
                    let range = element.range();
                    (range.start..range.end, element.as_string_lit().map(|lit| lit.value.to_string()))
                })
                .collect(),
        )
    }

    fn transport(&self) -> Transport {
        if self.object.is_none() {
            return Transport::Unknown("not an object".to_owned());
        }
        match self.string("type").or_else(|| self.string("transport")) {
            Some("stdio") => return Transport::Stdio,
            Some("http" | "streamable-http" | "streamable_http" | "sse") => return Transport::Http,
            Some(other) => return Transport::Unknown(format!("an unknown transport `{other}`")),
            None => {}
        }
        if self.get("url").is_some() || self.get("serverUrl").is_some() {
            Transport::Http
        } else if self.get("command").is_some() {
            Transport::Stdio
        } else {
            Transport::Unknown("neither a `command` nor a `url`".to_owned())
        }
    }

    fn mediated(&self) -> Mediated {
        let Some(command) = self.string("command") else { return Mediated::Not };
        if !is_mediator(command) {
            return Mediated::Not;
        }
        match self.args().as_deref().and_then(|args| args.first()).and_then(|(_, value)| value.as_deref()) {
            Some("proxy") => Mediated::Proxy,
            Some("gateway") => Mediated::Gateway,
            _ => Mediated::Other,
        }
    }

    /// The servers file of a gateway entry as wrap writes it: `gateway --config FILE`.
    fn gateway_file(&self) -> Option<PathBuf> {
        if !matches!(self.mediated(), Mediated::Gateway) {
            return None;
        }
        match self.args()?.as_slice() {
            [(_, Some(gateway)), (_, Some(config)), (_, Some(file))]
                if gateway == "gateway" && config == "--config" =>
            {
                Some(PathBuf::from(file))
            }
            _ => None,
        }
    }

    /// The edits that put the proxy in front of this stdio server.
    fn proxy_edits(&self, mediator: &str) -> Result<Vec<Edit>, String> {
        let command = self.get("command").ok_or("no `command`")?;
        let Some(value) = command.value.as_string_lit() else {
            return Err("its `command` is not a string".to_owned());
        };
        let command_text = value.range.text(self.text);
        let mut edits = vec![Edit { range: value.range.start..value.range.end, text: json_string(mediator) }];
        match self.get("args") {
            Some(args) => {
                let Some(array) = args.value.as_array() else {
                    return Err("its `args` is not an array".to_owned());
                };
                let separator = if array.elements.is_empty() { "" } else { ", " };
                let at = array.range.start + 1;
                edits.push(Edit { range: at..at, text: format!("\"proxy\", \"--\", {command_text}{separator}") });
            }
            None => {
                if value.value.starts_with('-') {
                    return Err("a command starting with `-` would read as an option of the proxy's".to_owned());
                }
                let at = value.range.end;
                edits.push(Edit { range: at..at, text: format!(", \"args\": [\"proxy\", {command_text}]") });
            }
        }
        Ok(edits)
    }

    /// The edits that take the proxy out again.
    fn unproxy_edits(&self) -> Result<Vec<Edit>, String> {
        let command = self.get("command").and_then(|prop| prop.value.as_string_lit()).ok_or("no `command` string")?;
        let args = self.get("args").ok_or("no `args`")?;
        let elements = self.args().ok_or("its `args` is not an array")?;
        let text = self.text;
        let value = |index: usize| elements.get(index).and_then(|(_, value)| value.as_deref());
        let lift = |index: usize| Edit {
            range: command.range.start..command.range.end,
            text: text[elements[index].0.clone()].to_owned(),
        };
        if value(1) == Some("--") && elements.len() >= 3 {
            // `"proxy", "--", COMMAND` went in after `[`, with `, ` when arguments followed.
            let after = elements[2].0.end;
            let end = if text[after..].starts_with(", ") {
                after + 2
            } else if let Some((next, _)) = elements.get(3) {
                next.start
            } else {
                after
            };
            return Ok(vec![lift(2), Edit { range: elements[0].0.start..end, text: String::new() }]);
        }
        match value(1) {
            Some(first) if !first.starts_with('-') && elements.len() == 2 => {
                // `"args": ["proxy", COMMAND]` went in right after the command: there were none.
                let object = self.object.ok_or("not an object")?;
                let position = object.properties.iter().position(|prop| std::ptr::eq(prop, args)).ok_or("no `args`")?;
                let range = match position {
                    0 => args.range.start..object.properties.get(1).map_or(args.range.end, |next| next.range.start),
                    _ => object.properties[position - 1].range.end..args.range.end,
                };
                Ok(vec![lift(1), Edit { range, text: String::new() }])
            }
            Some(first) if !first.starts_with('-') => {
                Ok(vec![lift(1), Edit { range: elements[0].0.start..elements[2].0.start, text: String::new() }])
            }
            _ => Err("the proxy has options of its own; wrap does not write those".to_owned()),
        }
    }
}

/// Files to write: each one's path and text.
type Files = Vec<(PathBuf, String)>;

/// A change to the text: `range` replaced by `text`.
struct Edit {
    range: std::ops::Range<usize>,
    text: String,
}

/// The text with every edit made; edits never overlap.
fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|edit| (edit.range.start, edit.range.end));
    let mut out = String::with_capacity(text.len() + edits.iter().map(|edit| edit.text.len()).sum::<usize>());
    let mut at = 0;
    for edit in edits {
        debug_assert!(edit.range.start >= at, "edits overlap");
        out.push_str(&text[at..edit.range.start]);
        out.push_str(&edit.text);
        at = edit.range.end;
    }
    out.push_str(&text[at..]);
    out
}

fn name_of(prop: &ObjectProp<'_>) -> String {
    prop.name.as_str().to_owned()
}

/// Whether a command is the mediator: `tool-mediator`, or a path to it.
fn is_mediator(command: &str) -> bool {
    let file = command.rsplit(['/', '\\']).next().unwrap_or(command);
    file == MEDIATOR || file == "tool-mediator.exe"
}

fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// A node as a JSON value, numbers as written.
fn to_value(node: &ast::Value<'_>) -> Result<Value, String> {
    Ok(match node {
        ast::Value::StringLit(lit) => Value::String(lit.value.to_string()),
        ast::Value::NumberLit(lit) => {
            Value::Number(serde_json::from_str(lit.value).map_err(|_| format!("the number {} is not JSON", lit.value))?)
        }
        ast::Value::BooleanLit(lit) => Value::Bool(lit.value),
        ast::Value::NullKeyword(_) => Value::Null,
        ast::Value::Array(array) => {
            Value::Array(array.elements.iter().map(|element| to_value(element)).collect::<Result<_, _>>()?)
        }
        ast::Value::Object(object) => Value::Object(
            object
                .properties
                .iter()
                .map(|prop| Ok((name_of(prop), to_value(&prop.value)?)))
                .collect::<Result<_, String>>()?,
        ),
    })
}

/// Every string in a value, keys left out.
fn strings(value: &Value) -> Box<dyn Iterator<Item = &str> + '_> {
    match value {
        Value::String(text) => Box::new(std::iter::once(text.as_str())),
        Value::Array(items) => Box::new(items.iter().flat_map(strings)),
        Value::Object(members) => Box::new(members.values().flat_map(strings)),
        _ => Box::new(std::iter::empty()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "/home/ada/.config/Claude/claude_desktop_config.json";

    fn wrap_all(text: &str) -> Rewritten {
        wrap(text, Path::new(PATH), &WrapOptions::default()).unwrap()
    }

    fn unwrap_all(text: &str, written: &[(PathBuf, String)]) -> Rewritten {
        let records: HashMap<PathBuf, String> = written.iter().cloned().collect();
        unwrap(text, Path::new(PATH), &[], &records).unwrap()
    }

    /// Wraps, checks the text, unwraps, checks the bytes came back.
    fn round_trip(text: &str, wrapped: &str) {
        let first = wrap_all(text);
        assert_eq!(first.text, wrapped);
        assert_eq!(wrap_all(&first.text).text, first.text, "wrapping twice changes nothing");
        assert_eq!(unwrap_all(&first.text, &[]).text, text);
    }

    #[test]
    fn a_byte_order_mark_and_crlf_line_ends_stay() {
        let text = "\u{FEFF}{\r\n  \"mcpServers\": {\r\n    \"a\": {\"command\": \"server\", \"args\": [\"x\"]}\r\n  }\r\n}\r\n";
        round_trip(
            text,
            "\u{FEFF}{\r\n  \"mcpServers\": {\r\n    \"a\": {\"command\": \"tool-mediator\", \"args\": [\"proxy\", \"--\", \"server\", \"x\"]}\r\n  }\r\n}\r\n",
        );
    }

    #[test]
    fn a_mediator_wrap_would_not_know_again_is_refused() {
        let text = r#"{"mcpServers": {"a": {"command": "server"}}}"#;
        let options = WrapOptions { mediator: "/home/ada/bin/tm", ..WrapOptions::default() };
        let error = wrap(text, Path::new(PATH), &options).unwrap_err().to_string();
        assert!(error.contains("must be named `tool-mediator`"), "{error}");
        let options = WrapOptions { mediator: "/home/ada/.cargo/bin/tool-mediator", ..WrapOptions::default() };
        let wrapped = wrap(text, Path::new(PATH), &options).unwrap();
        assert_eq!(wrap(&wrapped.text, Path::new(PATH), &options).unwrap().text, wrapped.text, "never twice");
    }

    #[test]
    fn a_stdio_server_goes_through_the_proxy_and_comes_back_byte_for_byte() {
        round_trip(
            r#"{"mcpServers": {"a": {"command": "npx", "args": ["-y", "@scope/server"], "env": {"K": "v"}}}}"#,
            r#"{"mcpServers": {"a": {"command": "tool-mediator", "args": ["proxy", "--", "npx", "-y", "@scope/server"], "env": {"K": "v"}}}}"#,
        );
        // No arguments: an `args` member goes in after the command, without `--`.
        round_trip(
            r#"{"mcpServers": {"a": {"command": "server", "cwd": "/srv"}}}"#,
            r#"{"mcpServers": {"a": {"command": "tool-mediator", "args": ["proxy", "server"], "cwd": "/srv"}}}"#,
        );
        // Empty arguments stay an empty array, whatever their spacing.
        round_trip(
            r#"{"mcpServers": {"a": {"command": "server", "args": [ ]}}}"#,
            r#"{"mcpServers": {"a": {"command": "tool-mediator", "args": ["proxy", "--", "server" ]}}}"#,
        );
        let multiline = "{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"C:\\\\bin\\\\s.exe\",\n      \"args\": [\n        \"x\"\n      ]\n    }\n  }\n}\n";
        let wrapped = wrap_all(multiline).text;
        assert!(
            wrapped.contains("\"args\": [\"proxy\", \"--\", \"C:\\\\bin\\\\s.exe\", \n        \"x\"\n      ]"),
            "{wrapped}"
        );
        assert_eq!(unwrap_all(&wrapped, &[]).text, multiline);
    }

    #[test]
    fn comments_and_trailing_commas_survive_and_other_keys_are_untouched() {
        let text = r#"{
  // Servers for this workspace.
  "inputs": [{"type": "promptString", "id": "key", "password": true}],
  "servers": {
    /* the time server */
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"], "envFile": ".env",},
    "remote": {"type": "http", "url": "https://example.com/mcp"}, // stays
  },
}
"#;
        let wrapped = wrap(text, Path::new(".vscode/mcp.json"), &WrapOptions::default()).unwrap();
        assert_eq!(wrapped.changed, ["time"]);
        assert!(wrapped.text.contains("// Servers for this workspace."));
        assert!(wrapped.text.contains("/* the time server */"));
        assert!(wrapped.text.contains(
            r#""command": "tool-mediator", "args": ["proxy", "--", "uvx", "mcp-server-time"], "envFile": ".env",}"#
        ));
        assert_eq!(wrapped.notes.len(), 1);
        assert!(wrapped.notes[0].starts_with("`remote`: an HTTP server, left as it is"), "{:?}", wrapped.notes);
        assert_eq!(unwrap_all(&wrapped.text, &[]).text, text);
    }

    #[test]
    fn only_the_servers_named_are_wrapped_and_an_unknown_name_is_an_error() {
        let text = r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b"}}}"#;
        let only_b =
            wrap(text, Path::new(PATH), &WrapOptions { servers: &["b".into()], ..WrapOptions::default() }).unwrap();
        assert_eq!(
            only_b.text,
            r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "tool-mediator", "args": ["proxy", "b"]}}}"#
        );
        let error =
            wrap(text, Path::new(PATH), &WrapOptions { servers: &["c".into()], ..WrapOptions::default() }).unwrap_err();
        assert_eq!(error.to_string(), format!("{PATH}: `/mcpServers`: no server named `c`"));
    }

    #[test]
    fn bad_files_say_where() {
        let error =
            wrap("{\n  \"mcpServers\": {\"a\": {\"command\": \"x\"}\n", Path::new("c.json"), &WrapOptions::default())
                .unwrap_err();
        assert!(error.to_string().starts_with("c.json:2:"), "{error}");
        let error = wrap(r#"{"other": {}}"#, Path::new("c.json"), &WrapOptions::default()).unwrap_err();
        assert!(error.to_string().contains("no `mcpServers`"), "{error}");
        let error = wrap("{\"mcpServers\": {\"a\": {},\n \"a\": {}}}", Path::new("c.json"), &WrapOptions::default())
            .unwrap_err();
        assert_eq!(error.to_string(), "c.json:2:2: the server `a` is named twice");
        // What the clients would refuse is refused: a missing comma, a single-quoted string.
        assert!(wrap(r#"{"mcpServers": {"a": {} "b": {}}}"#, Path::new("c.json"), &WrapOptions::default()).is_err());
        assert!(wrap(r#"{"mcpServers": {'a': {}}}"#, Path::new("c.json"), &WrapOptions::default()).is_err());
    }

    #[test]
    fn an_entry_that_runs_the_mediator_is_never_wrapped_again() {
        let text = r#"{"mcpServers": {"a": {"command": "/usr/local/bin/tool-mediator", "args": ["proxy", "--disclosure", "3", "--", "x"]}}}"#;
        let again = wrap_all(text);
        assert_eq!(again.text, text);
        assert_eq!(again.notes, ["`a`: already runs tool-mediator; left as it is"]);
        // Written by hand with options of the proxy's: unwrap leaves it too.
        let unwrapped = unwrap_all(text, &[]);
        assert_eq!(unwrapped.text, text);
        assert!(unwrapped.notes[0].contains("options of its own"), "{:?}", unwrapped.notes);
        // Written by hand without `--`: the command comes out of the arguments.
        let by_hand =
            r#"{"mcpServers": {"a": {"command": "tool-mediator", "args": ["proxy", "uvx", "mcp-server-time"]}}}"#;
        assert_eq!(
            unwrap_all(by_hand, &[]).text,
            r#"{"mcpServers": {"a": {"command": "uvx", "args": ["mcp-server-time"]}}}"#
        );
    }

    fn gateway(text: &str, servers: &[String]) -> Rewritten {
        let file = gateway_file(Path::new(PATH));
        wrap(text, Path::new(PATH), &WrapOptions { servers, gateway: Some(&file), ..WrapOptions::default() }).unwrap()
    }

    #[test]
    fn the_gateway_takes_the_servers_and_gives_them_back_byte_for_byte() {
        let text = r#"{
  "mcpServers": {
    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
    // kept out: the gateway would not read `envFile`
    "local": {"command": "x", "envFile": ".env"},
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    },
    "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
  },
  "globalShortcut": "Ctrl+Space"
}
"#;
        let moved = gateway(text, &[]);
        assert_eq!(moved.changed, ["time", "files", "remote"]);
        assert_eq!(moved.notes, ["`local`: stays out of the gateway: the gateway would ignore its `envFile`"]);
        let servers_file = "/home/ada/.config/Claude/claude_desktop_config.tool-mediator.json";
        assert_eq!(
            moved.text,
            format!(
                r#"{{
  "mcpServers": {{
    "tool-mediator": {{"command": "tool-mediator", "args": ["gateway", "--config", "{servers_file}"]}},
    // kept out: the gateway would not read `envFile`
    "local": {{"command": "x", "envFile": ".env"}}
  }},
  "globalShortcut": "Ctrl+Space"
}}
"#
            )
        );
        let [(servers_path, servers_text), (record_path, _)] = &moved.write[..] else { panic!("{:?}", moved.write) };
        assert_eq!(servers_path, Path::new(servers_file));
        assert_eq!(record_path, Path::new("/home/ada/.config/Claude/claude_desktop_config.tool-mediator.unwrap.json"));
        // The gateway reads the servers file it gets, and finds the three servers in it.
        let servers = Servers::parse(servers_text, servers_path, |_| Some("t".into())).unwrap();
        assert_eq!(
            servers.servers.iter().map(|server| server.name.as_str()).collect::<Vec<_>>(),
            ["time", "files", "remote"]
        );
        assert!(servers.warnings.is_empty(), "{:?}", servers.warnings);

        assert_eq!(gateway(&moved.text, &[]).text, moved.text, "a second wrap changes nothing");
        let back = unwrap_all(&moved.text, &moved.write);
        assert_eq!(back.text, text);
        assert_eq!(back.changed, ["time", "files", "remote"]);
        assert_eq!(back.remove, [record_path.clone(), servers_path.clone()]);
        // A servers file edited since (a server added by hand) is kept, and said so.
        let mut edited = moved.write.clone();
        edited[0].1 = edited[0].1.replace("\"time\"", "\"clock\"");
        let kept = unwrap_all(&moved.text, &edited);
        assert_eq!(kept.text, text, "the configuration comes back all the same");
        assert_eq!(kept.remove, std::slice::from_ref(record_path));
        assert!(kept.notes[0].contains("was edited since wrap wrote it; kept"), "{:?}", kept.notes);
        // Without its record the gateway stays, and says where its servers are.
        let stays = unwrap_all(&moved.text, &[]);
        assert_eq!(stays.text, moved.text);
        assert!(stays.notes[0].contains("no record"), "{:?}", stays.notes);
    }

    #[test]
    fn servers_the_gateway_takes_apart_from_each_other_come_back_in_their_places() {
        let text = r#"{"mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "envFile": "x"}, "c": {"command": "c"}, "d": {"command": "d"}, "e": {"url": "https://e.test/mcp", "serverUrl": "x"}}}"#;
        let moved = gateway(text, &[]);
        assert_eq!(moved.changed, ["a", "c", "d"]);
        assert!(moved.text.starts_with(r#"{"mcpServers": {"tool-mediator": {"#), "{}", moved.text);
        assert!(
            moved.text.ends_with(
                r#"}, "b": {"command": "b", "envFile": "x"}, "e": {"url": "https://e.test/mcp", "serverUrl": "x"}}}"#
            ),
            "{}",
            moved.text
        );
        assert_eq!(unwrap_all(&moved.text, &moved.write).text, text);
        // Some of them, by name; naming one inside the gateway puts back the gateway's all.
        let some = gateway(text, &["d".into()]);
        assert_eq!(some.changed, ["d"]);
        let records: HashMap<PathBuf, String> = some.write.iter().cloned().collect();
        assert_eq!(unwrap(&some.text, Path::new(PATH), &["d".into()], &records).unwrap().text, text);
        // The file already has a gateway: moving more into it is refused.
        let more = wrap(
            &some.text,
            Path::new(PATH),
            &WrapOptions { gateway: Some(Path::new("/s.json")), ..WrapOptions::default() },
        );
        assert!(more.unwrap_err().to_string().contains("`tool-mediator unwrap` first"));
    }

    #[test]
    fn what_the_gateway_would_run_differently_stays() {
        let text = r#"{"servers": {
            "a": {"command": "node", "args": ["${workspaceFolder}/server.js"]},
            "b": {"command": "x", "env": {"KEY": "${input:api-key}"}},
            "c": {"type": "sse", "url": "https://c.test/sse"}
        }}"#;
        let moved = gateway(text, &[]);
        assert_eq!(moved.text, text);
        assert!(moved.write.is_empty());
        assert_eq!(moved.notes.len(), 3, "{:?}", moved.notes);
        assert!(moved.notes[0].contains("only VS Code expands"), "{:?}", moved.notes);
        assert!(moved.notes[1].contains("only VS Code expands"), "{:?}", moved.notes);
        assert!(moved.notes[2].contains("SSE"), "{:?}", moved.notes);
    }

    #[test]
    fn each_client_keeps_its_file_where_its_documentation_says() {
        let at = Locations { home: Path::new("/h"), config_dir: Path::new("/h/.config"), project: Path::new("/p") };
        let file = |client: Client, scope| client.config_file(scope, &at).map(|path| path.display().to_string());
        assert_eq!(file(Client::ClaudeDesktop, Scope::User).unwrap(), "/h/.config/Claude/claude_desktop_config.json");
        assert_eq!(file(Client::ClaudeCode, Scope::Project).unwrap(), "/p/.mcp.json");
        assert_eq!(file(Client::ClaudeCode, Scope::User).unwrap(), "/h/.claude.json");
        assert_eq!(file(Client::Cursor, Scope::Project).unwrap(), "/p/.cursor/mcp.json");
        assert_eq!(file(Client::Cursor, Scope::User).unwrap(), "/h/.cursor/mcp.json");
        assert_eq!(file(Client::Vscode, Scope::Project).unwrap(), "/p/.vscode/mcp.json");
        assert_eq!(file(Client::Vscode, Scope::User).unwrap(), "/h/.config/Code/User/mcp.json");
        assert_eq!(file(Client::Windsurf, Scope::User).unwrap(), "/h/.codeium/windsurf/mcp_config.json");
        assert!(file(Client::Windsurf, Scope::Project).is_err());
        assert_eq!(gateway_file(Path::new("/p/.mcp.json")), Path::new("/p/.mcp.tool-mediator.json"));
    }
}
