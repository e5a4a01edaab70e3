//! The servers a gateway stands in front of, as MCP clients already configure them:
//! `{"mcpServers": {NAME: {"command", "args", "env", "cwd"} | {"url", "headers"}}}`.
//!
//! A user points the gateway at the file their client uses, so what clients write is read:
//! `servers` for `mcpServers` (VS Code), a `type` or `transport` of `stdio`, `http`,
//! `streamable-http` or `streamable_http` (a `url` alone means HTTP), `${VAR}` and
//! `${VAR:-default}` in `env` and `headers` (secrets stay in the environment), `oauth` for how to
//! sign in to a remote server that asks ([`SignInOptions`]). Per server, the
//! mediator's own settings: `source` (the override source; the server's `serverInfo.name` by
//! default), `include` and `exclude` (tool names), `disabled`, and `scope`: `shared` (the
//! default: behind an HTTP gateway, one process or connection for every client session) or
//! `session` (one for each client session, for a server that keeps per-user state). A key nobody here knows is kept
//! out with a warning naming it, never an error: the file is the client's too.
//!
//! Beside `mcpServers`, a gateway's own `views`: what each kind of client sees,
//! `{"views": {NAME: {"servers": {SERVER: {"include": [...], "exclude": [...]}}}}}`. A view names
//! the servers it shows (a server it does not name is not in it) and, per server, may narrow
//! its tools further by the server's own names, on top of the server's own `include` and
//! `exclude`. Which view a client gets is the HTTP front's business (a token's claim, the path
//! `/mcp/<view>`, a header): here a view is read and checked, a server it names that the file
//! does not being an error.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use tool_mediator_core::Place;

use crate::upstream::auth::SignInOptions;

/// A gateway's servers, in the file's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Servers {
    pub servers: Vec<ServerConfig>,
    /// The views the file names, in its order.
    pub views: Vec<View>,
    /// What was ignored, each naming the file and the place.
    pub warnings: Vec<String>,
    /// The environment variables the `headers` of its `url` servers name (`${VAR}`): a remote
    /// server's credentials, which no server it starts inherits.
    pub header_variables: Vec<String>,
}

/// What one kind of client sees: some of the servers, and of each perhaps fewer tools.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Its name: a path segment (`/mcp/<name>`), a claim's or a header's value.
    pub name: String,
    /// The servers it shows, in the view's order; a server of the file not here is hidden.
    pub servers: Vec<ViewedServer>,
}

/// A server as a view shows it: its tools narrowed, by the server's own names, on top of what
/// the server's own `include` and `exclude` let through.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewedServer {
    /// The server's name in the file.
    pub name: String,
    /// Only these tools; all that the server lets through when not set.
    pub include: Option<Vec<String>>,
    /// Never these tools.
    pub exclude: Vec<String>,
}

impl View {
    /// How the view shows the server named `name`; `None` when it hides it.
    pub fn server(&self, name: &str) -> Option<&ViewedServer> {
        self.servers.iter().find(|server| server.name == name)
    }
}

/// One server and how the mediator treats its tools.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// Its name in the file: what a tool's name is prefixed with when two servers share one.
    pub name: String,
    pub transport: Transport,
    /// The override source; the server's `serverInfo.name` when not set.
    pub source: Option<String>,
    /// Only these tools, by the server's names; all when not set.
    pub include: Option<Vec<String>>,
    /// Never these tools, by the server's names.
    pub exclude: Vec<String>,
    /// Left out of the gateway altogether.
    pub disabled: bool,
    /// Whether client sessions share it.
    pub scope: Scope,
}

/// Whether a server behind an HTTP gateway is shared by every client session or started for
/// each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Started (or connected) once, its listing fetched once, every session's calls routed
    /// over it.
    #[default]
    Shared,
    /// Its own process (or connection) for each client session, for a server that keeps
    /// per-user state.
    Session,
}

/// How the gateway reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on its standard streams.
    Stdio { command: String, args: Vec<String>, env: Vec<(String, String)>, cwd: Option<PathBuf> },
    /// MCP's Streamable HTTP at `url`, with these headers on every request, signing in as
    /// `oauth` says when the server asks.
    Http { url: reqwest::Url, headers: Vec<(String, String)>, oauth: SignInOptions },
}

/// Why a servers file cannot be used: the file, the place in it (none when it cannot be read at
/// all), what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", tool_mediator_core::about_file(path, place.as_ref(), message))]
pub struct ServersError {
    pub path: PathBuf,
    pub place: Option<Place>,
    pub message: String,
}

impl Servers {
    /// Reads a servers file; `${VAR}` is looked up with `env`.
    pub fn parse(text: &str, path: &Path, env: impl Fn(&str) -> Option<String>) -> Result<Servers, ServersError> {
        let document = tool_mediator_core::json::from_str(text).map_err(|error| ServersError {
            path: path.to_owned(),
            place: Some(Place::of_json_error(text, &error)),
            message: tool_mediator_core::json::message(&error),
        })?;
        let mut reader = Reader { path, env: &env, warnings: Vec::new(), header_variables: Vec::new() };
        let servers = reader.document(&document)?;
        let views = match document.get("views").filter(|views| !views.is_null()) {
            Some(views) => reader.views(views, &servers)?,
            None => Vec::new(),
        };
        Ok(Servers { servers, views, warnings: reader.warnings, header_variables: reader.header_variables })
    }

    /// Reads the servers file at `path`, variables from the environment. Only a regular file is
    /// read: a fifo put in its place would freeze the gateway that reads it again as it serves.
    pub fn read(path: &Path) -> Result<Servers, ServersError> {
        use tool_mediator::read::{MAX_FILE_SIZE, read_regular};
        let text = read_regular(path, MAX_FILE_SIZE).map_err(|error| ServersError {
            path: path.to_owned(),
            place: None,
            message: format!("cannot read: {}", std::io::Error::from(error)),
        })?;
        Servers::parse(&text, path, |name| std::env::var(name).ok())
    }

    /// The servers not disabled.
    pub fn enabled(&self) -> impl Iterator<Item = &ServerConfig> {
        self.servers.iter().filter(|server| !server.disabled)
    }

    /// The environment variables the file names as a remote server's credentials (its
    /// `oauth.client_secret_env`, and those its `headers` name), of every entry, disabled or
    /// not: the gateway's own, which no server it starts inherits (unless its own `env` gives it).
    pub fn secret_variables(&self) -> Vec<String> {
        let mut names: Vec<String> = self.header_variables.clone();
        for server in &self.servers {
            if let Transport::Http { oauth, .. } = &server.transport
                && let Some(name) = &oauth.client_secret_env
                && !names.contains(name)
            {
                names.push(name.clone());
            }
        }
        names
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transport::Stdio { command, .. } => write!(f, "stdio `{command}`"),
            Transport::Http { url, .. } => write!(f, "Streamable HTTP {url}"),
        }
    }
}

struct Reader<'a, E> {
    path: &'a Path,
    env: &'a E,
    warnings: Vec<String>,
    header_variables: Vec<String>,
}

impl<E: Fn(&str) -> Option<String>> Reader<'_, E> {
    fn error(&self, pointer: &str, message: impl Into<String>) -> ServersError {
        ServersError {
            path: self.path.to_owned(),
            place: Some(Place::Pointer(pointer.to_owned())),
            message: message.into(),
        }
    }

    fn warn(&mut self, pointer: &str, message: &str) {
        self.warnings.push(format!("{}: `{pointer}`: {message}", self.path.display()));
    }

    fn document(&mut self, document: &Value) -> Result<Vec<ServerConfig>, ServersError> {
        let Some(document) = document.as_object() else {
            return Err(self.error("", "a servers file is an object: {\"mcpServers\": {NAME: {...}}}"));
        };
        let key = match (document.contains_key("mcpServers"), document.contains_key("servers")) {
            (true, true) => return Err(self.error("", "both `mcpServers` and `servers`: say which servers are meant")),
            (true, false) => "mcpServers",
            (false, true) => "servers",
            (false, false) => return Err(self.error("", "no `mcpServers` object naming the servers")),
        };
        for other in document.keys().filter(|name| *name != key && *name != "views") {
            self.warn(&format!("/{}", escape(other)), "not a gateway setting; ignored");
        }
        let Some(entries) = document[key].as_object() else {
            return Err(self.error(&format!("/{key}"), "must be an object of servers by name"));
        };
        if entries.is_empty() {
            return Err(self.error(&format!("/{key}"), "names no server"));
        }
        entries.iter().map(|(name, entry)| self.server(&format!("/{key}/{}", escape(name)), name, entry)).collect()
    }

    fn server(&mut self, at: &str, name: &str, entry: &Value) -> Result<ServerConfig, ServersError> {
        if name.is_empty() {
            return Err(self.error(at, "a server needs a name"));
        }
        let Some(entry) = entry.as_object() else {
            return Err(self.error(at, "a server is an object: {\"command\": ...} or {\"url\": ...}"));
        };
        let kind = match (entry.get("type"), entry.get("transport")) {
            (Some(kind), _) => Some(("type", kind)),
            (None, Some(kind)) => Some(("transport", kind)),
            (None, None) => None,
        };
        let http = match kind {
            None => entry.contains_key("url"),
            Some((key, kind)) => match kind.as_str() {
                Some("stdio") => false,
                Some("http" | "streamable-http" | "streamable_http") => true,
                Some("sse") => {
                    return Err(self.error(
                        &format!("{at}/{key}"),
                        "the legacy HTTP+SSE transport is not supported; servers that offer it mostly offer \
                         Streamable HTTP too (`\"type\": \"http\"`)",
                    ));
                }
                _ => {
                    return Err(self.error(
                        &format!("{at}/{key}"),
                        format!("unknown transport {kind} (expected stdio, http or streamable-http)"),
                    ));
                }
            },
        };
        // A disabled server is never started: a variable it names need not be set.
        let disabled = match entry.get("disabled") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(disabled)) => *disabled,
            Some(_) => return Err(self.error(&format!("{at}/disabled"), "must be true or false")),
        };
        let known: &[&str] = if http { &HTTP_KEYS } else { &STDIO_KEYS };
        for key in entry.keys().filter(|key| !known.contains(&key.as_str()) && !SETTINGS.contains(&key.as_str())) {
            let message = match (http, key.as_str()) {
                (true, "command" | "args" | "env" | "cwd") => "a stdio setting on an HTTP server; ignored",
                (false, "url" | "headers") => "an HTTP setting on a stdio server; ignored",
                _ => "not a gateway setting; ignored",
            };
            self.warn(&format!("{at}/{}", escape(key)), message);
        }
        let transport = if http {
            let url = self.string(entry, at, "url")?.ok_or_else(|| self.error(at, "an HTTP server needs a `url`"))?;
            let url = match reqwest::Url::parse(&url) {
                Ok(parsed) if matches!(parsed.scheme(), "http" | "https") => parsed,
                Ok(_) => return Err(self.error(&format!("{at}/url"), format!("`{url}` is not an http(s) URL"))),
                Err(error) => return Err(self.error(&format!("{at}/url"), format!("`{url}`: {error}"))),
            };
            let headers = self.variables(entry, at, "headers", !disabled)?;
            let named = entry.get("headers").and_then(Value::as_object).into_iter().flatten();
            for name in named.filter_map(|(_, value)| value.as_str()).flat_map(variables_in) {
                if !self.header_variables.iter().any(|known| known == name) {
                    self.header_variables.push(name.to_owned());
                }
            }
            Transport::Http { url, headers, oauth: self.sign_in(entry, at)? }
        } else {
            let command =
                self.string(entry, at, "command")?.ok_or_else(|| self.error(at, "a stdio server needs a `command`"))?;
            if command.is_empty() {
                return Err(self.error(&format!("{at}/command"), "an empty command"));
            }
            Transport::Stdio {
                command,
                args: self.strings(entry, at, "args")?.unwrap_or_default(),
                env: self.variables(entry, at, "env", !disabled)?,
                cwd: self.string(entry, at, "cwd")?.map(PathBuf::from),
            }
        };
        Ok(ServerConfig {
            name: name.to_owned(),
            transport,
            source: self.string(entry, at, "source")?,
            include: self.strings(entry, at, "include")?,
            exclude: self.strings(entry, at, "exclude")?.unwrap_or_default(),
            disabled,
            scope: match self.string(entry, at, "scope")?.as_deref() {
                None | Some("shared") => Scope::Shared,
                Some("session") => Scope::Session,
                Some(other) => {
                    return Err(self.error(&format!("{at}/scope"), format!("`{other}`: expected shared or session")));
                }
            },
        })
    }

    /// `views`: each a name fit for a URL path, and the servers it shows, each of the file.
    fn views(&mut self, views: &Value, servers: &[ServerConfig]) -> Result<Vec<View>, ServersError> {
        let Some(views) = views.as_object() else {
            return Err(self.error("/views", "must be an object of views by name: {NAME: {\"servers\": {...}}}"));
        };
        let mut read = Vec::with_capacity(views.len());
        for (name, view) in views {
            let at = format!("/views/{}", escape(name));
            if !is_view_name(name) {
                return Err(self.error(
                    &at,
                    "a view's name is a path segment: letters, digits, `-`, `_` and `.`, at most 64 of them",
                ));
            }
            let Some(view) = view.as_object() else {
                return Err(self.error(&at, "a view is an object: {\"servers\": {SERVER: {...}}}"));
            };
            for key in view.keys().filter(|key| *key != "servers") {
                self.warn(&format!("{at}/{}", escape(key)), "not a view setting; ignored");
            }
            let Some(shown) = view.get("servers").and_then(Value::as_object) else {
                return Err(self.error(&at, "a view needs `servers`: an object of the servers it shows, by name"));
            };
            if shown.is_empty() {
                return Err(self.error(&format!("{at}/servers"), "names no server"));
            }
            let mut viewed = Vec::with_capacity(shown.len());
            for (server, narrowed) in shown {
                let here = format!("{at}/servers/{}", escape(server));
                let Some(config) = servers.iter().find(|config| config.name == *server) else {
                    let known: Vec<&str> = servers.iter().map(|config| config.name.as_str()).collect();
                    return Err(
                        self.error(&here, format!("no server `{server}` in the file (it has {})", known.join(", ")))
                    );
                };
                if config.disabled {
                    self.warn(&here, "a disabled server; the view shows nothing of it");
                }
                let Some(narrowed) = narrowed.as_object() else {
                    return Err(self.error(&here, "a viewed server is an object: {} or {\"include\": [...]}"));
                };
                for key in narrowed.keys().filter(|key| !matches!(key.as_str(), "include" | "exclude")) {
                    self.warn(&format!("{here}/{}", escape(key)), "not a view setting; ignored");
                }
                viewed.push(ViewedServer {
                    name: server.clone(),
                    include: self.strings(narrowed, &here, "include")?,
                    exclude: self.strings(narrowed, &here, "exclude")?.unwrap_or_default(),
                });
            }
            read.push(View { name: name.clone(), servers: viewed });
        }
        Ok(read)
    }

    /// `oauth`: how to sign in when the server asks (`client_id`, `client_secret_env`,
    /// `client_metadata_url`, `scope`, `grant`).
    fn sign_in(&self, entry: &Map<String, Value>, at: &str) -> Result<SignInOptions, ServersError> {
        let Some(value) = entry.get("oauth").filter(|value| !value.is_null()) else {
            return Ok(SignInOptions::default());
        };
        serde_json::from_value(value.clone()).map_err(|error| {
            let mut message = error.to_string();
            if message.contains("`client_secret`") {
                message = "a client secret is not written in the file: name the environment variable that holds it \
                           with `client_secret_env`"
                    .into();
            }
            self.error(&format!("{at}/oauth"), message)
        })
    }

    fn string(&self, entry: &Map<String, Value>, at: &str, key: &str) -> Result<Option<String>, ServersError> {
        match entry.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(other) => Err(self.error(&format!("{at}/{key}"), format!("must be a string, not {other}"))),
        }
    }

    fn strings(&self, entry: &Map<String, Value>, at: &str, key: &str) -> Result<Option<Vec<String>>, ServersError> {
        let Some(value) = entry.get(key).filter(|value| !value.is_null()) else {
            return Ok(None);
        };
        let Some(items) = value.as_array() else {
            return Err(self.error(&format!("{at}/{key}"), "must be an array of strings"));
        };
        let strings = items.iter().enumerate().map(|(index, item)| match item {
            Value::String(text) => Ok(text.clone()),
            other => Err(self.error(&format!("{at}/{key}/{index}"), format!("must be a string, not {other}"))),
        });
        strings.collect::<Result<_, _>>().map(Some)
    }

    /// `env` or `headers`: an object of strings, `${VAR}` expanded; unless `strict` (a disabled
    /// server), a value that cannot be expanded stays as written.
    fn variables(
        &self,
        entry: &Map<String, Value>,
        at: &str,
        key: &str,
        strict: bool,
    ) -> Result<Vec<(String, String)>, ServersError> {
        let Some(value) = entry.get(key).filter(|value| !value.is_null()) else {
            return Ok(Vec::new());
        };
        let Some(members) = value.as_object() else {
            return Err(self.error(&format!("{at}/{key}"), "must be an object of strings"));
        };
        members
            .iter()
            .map(|(name, value)| {
                let here = format!("{at}/{key}/{}", escape(name));
                let Some(text) = value.as_str() else {
                    return Err(self.error(&here, format!("must be a string, not {value}")));
                };
                let expanded = match expand(text, self.env) {
                    Ok(expanded) => expanded,
                    Err(_) if !strict => text.to_owned(),
                    Err(message) => return Err(self.error(&here, message)),
                };
                Ok((name.clone(), expanded))
            })
            .collect()
    }
}

const STDIO_KEYS: [&str; 6] = ["type", "transport", "command", "args", "env", "cwd"];
const HTTP_KEYS: [&str; 5] = ["type", "transport", "url", "headers", "oauth"];
const SETTINGS: [&str; 5] = ["source", "include", "exclude", "disabled", "scope"];

/// The variables `text` names (`${NAME}`, `${NAME:-default}`).
fn variables_in(text: &str) -> impl Iterator<Item = &str> {
    text.split("${").skip(1).filter_map(|rest| {
        let inner = &rest[..rest.find('}')?];
        let name = inner.split_once(":-").map_or(inner, |(name, _)| name);
        (!name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then_some(name)
    })
}

/// `text` with each `${NAME}` replaced by the variable's value, or by `default` in
/// `${NAME:-default}` when the variable is unset or empty. An unset variable without a default
/// is an error: a header with a hole in it would fail later, and less clearly.
fn expand(text: &str, env: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut expanded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        expanded.push_str(&rest[..start]);
        let Some(length) = rest[start..].find('}') else {
            return Err(format!("`{}` is not closed with `}}`", &rest[start..]));
        };
        let inner = &rest[start + 2..start + length];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`${{{inner}}}` does not name an environment variable"));
        }
        match (env(name).filter(|value| !value.is_empty()), default) {
            (Some(value), _) => expanded.push_str(&value),
            (None, Some(default)) => expanded.push_str(default),
            (None, None) => return Err(format!("the environment variable {name} is not set")),
        }
        rest = &rest[start + length + 1..];
    }
    expanded.push_str(rest);
    Ok(expanded)
}

/// Whether `name` can name a view wherever a client names one: a URL path segment, a header's
/// value, a claim, all without escaping.
fn is_view_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte))
        && name != "."
        && name != ".."
}

/// A JSON pointer token (RFC 6901).
fn escape(token: &str) -> String {
    tool_mediator_core::schema::escape(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Servers, ServersError> {
        let env = |name: &str| match name {
            "GITHUB_TOKEN" => Some("ghp_secret".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        Servers::parse(text, Path::new("servers.json"), env)
    }

    #[test]
    fn a_client_configuration_reads_as_the_gateway_servers() {
        let servers = parse(
            r#"{
              "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}, "cwd": "/tmp"},
                "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
                           "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "exclude": ["delete_repo"]},
                "linear": {"url": "https://mcp.linear.app/mcp", "source": "linear", "include": ["list_issues"]},
                "old": {"command": "old-server", "disabled": true}
              },
              "globalShortcut": "Ctrl+Space"
            }"#,
        )
        .unwrap();
        let names: Vec<&str> = servers.enabled().map(|server| server.name.as_str()).collect();
        assert_eq!(names, ["time", "github", "linear"]);
        assert_eq!(
            servers.servers[0].transport,
            Transport::Stdio {
                command: "uvx".into(),
                args: vec!["mcp-server-time".into()],
                env: vec![("TZ".into(), "UTC".into())],
                cwd: Some("/tmp".into()),
            }
        );
        assert_eq!(
            servers.servers[1].transport,
            Transport::Http {
                url: "https://api.githubcopilot.com/mcp/".parse().unwrap(),
                headers: vec![("Authorization".into(), "Bearer ghp_secret".into())],
                oauth: Default::default(),
            }
        );
        assert_eq!(servers.servers[1].exclude, ["delete_repo"]);
        assert_eq!(servers.servers[2].source.as_deref(), Some("linear"));
        assert_eq!(servers.servers[2].include.as_deref(), Some(&["list_issues".to_owned()][..]));
        assert_eq!(servers.warnings, ["servers.json: `/globalShortcut`: not a gateway setting; ignored"]);
    }

    #[test]
    fn what_other_clients_write_is_read_and_what_is_unknown_is_named() {
        let servers = parse(
            r#"{"servers": {
                "a": {"type": "stdio", "command": "a", "envFile": ".env"},
                "b": {"transport": "streamable-http", "url": "http://127.0.0.1:3001/mcp", "command": "b"}
            }}"#,
        )
        .unwrap();
        assert!(matches!(servers.servers[0].transport, Transport::Stdio { .. }));
        assert!(matches!(servers.servers[1].transport, Transport::Http { .. }));
        assert_eq!(
            servers.warnings,
            [
                "servers.json: `/servers/a/envFile`: not a gateway setting; ignored",
                "servers.json: `/servers/b/command`: a stdio setting on an HTTP server; ignored",
            ]
        );
    }

    #[test]
    fn a_file_that_cannot_be_read_is_named_without_a_place() {
        let error = Servers::read(Path::new("/no/such/servers.json")).unwrap_err();
        assert_eq!(error.place, None);
        assert!(error.to_string().starts_with("cannot read /no/such/servers.json: "), "{error}");
        assert_eq!(error.to_string().matches("cannot read").count(), 1, "{error}");
    }

    /// Regression (issue 42): a fifo at the servers file froze the gateway, which reads the
    /// file again when it changes; it is refused at once, and the error names it.
    #[cfg(unix)]
    #[test]
    fn a_fifo_at_the_servers_file_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("servers.json");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let (sender, receiver) = std::sync::mpsc::channel();
        let at = fifo.clone();
        std::thread::spawn(move || sender.send(Servers::read(&at).map_err(|error| error.to_string())));
        let read = receiver.recv_timeout(std::time::Duration::from_secs(10)).expect("the fifo is not waited on");
        let error = read.unwrap_err();
        assert!(error.starts_with(&format!("cannot read {}: ", fifo.display())), "{error}");
        assert!(error.contains("not a regular file"), "{error}");
    }

    #[test]
    fn a_disabled_server_may_name_a_variable_that_is_not_set() {
        let text = r#"{"mcpServers": {"on": {"command": "c"},
                       "off": {"url": "https://x.test/mcp", "headers": {"A": "${UNSET_TOKEN}"}, "disabled": true}}}"#;
        let servers = parse(text).unwrap();
        assert_eq!(servers.enabled().map(|server| server.name.as_str()).collect::<Vec<_>>(), ["on"]);
        let enabled = text.replace(r#", "disabled": true"#, "");
        let error = parse(&enabled).unwrap_err().to_string();
        assert!(error.contains("`/mcpServers/off/headers/A`") && error.contains("UNSET_TOKEN"), "{error}");
    }

    #[test]
    fn variables_expand_with_defaults_and_a_missing_one_is_an_error() {
        let env = |name: &str| (name == "HOME").then(|| "/home/ada".to_owned());
        assert_eq!(expand("${HOME}/x", &env).unwrap(), "/home/ada/x");
        assert_eq!(expand("a${NOPE:-b}c", &env).unwrap(), "abc");
        assert_eq!(expand("no variables, $HOME stays", &env).unwrap(), "no variables, $HOME stays");
        assert_eq!(expand("${NOPE}", &env).unwrap_err(), "the environment variable NOPE is not set");
        assert!(expand("${HOME", &env).unwrap_err().contains("not closed"));
        assert!(expand("${a b}", &env).unwrap_err().contains("does not name"));

        let error =
            parse(r#"{"mcpServers": {"x": {"url": "http://h/mcp", "headers": {"Authorization": "${TOKEN}"}}}}"#)
                .unwrap_err();
        assert_eq!(
            error.to_string(),
            "servers.json: `/mcpServers/x/headers/Authorization`: the environment variable TOKEN is not set"
        );
        let error = parse(r#"{"mcpServers": {"x": {"command": "c", "env": {"K": "${EMPTY}"}}}}"#).unwrap_err();
        assert!(error.to_string().contains("EMPTY is not set"), "{error}");
    }

    #[test]
    fn every_error_names_the_file_and_the_place() {
        let cases = [
            ("{\"mcpServers\": {\n  \"x\": {\"command\": \"c\",}}}", "servers.json:2:24: trailing comma"),
            ("[]", "servers.json: ``: a servers file is an object"),
            ("{}", "servers.json: ``: no `mcpServers` object"),
            (r#"{"mcpServers": {}}"#, "servers.json: `/mcpServers`: names no server"),
            (r#"{"mcpServers": {"x": {}}}"#, "servers.json: `/mcpServers/x`: a stdio server needs a `command`"),
            (
                r#"{"mcpServers": {"x": {"type": "http"}}}"#,
                "servers.json: `/mcpServers/x`: an HTTP server needs a `url`",
            ),
            (
                r#"{"mcpServers": {"x": {"url": "ftp://h/"}}}"#,
                "servers.json: `/mcpServers/x/url`: `ftp://h/` is not an http(s) URL",
            ),
            (
                r#"{"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}"#,
                "servers.json: `/mcpServers/x/type`: the legacy HTTP+SSE transport is not supported",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "c", "args": ["a", 1]}}}"#,
                "servers.json: `/mcpServers/x/args/1`: must be a string, not 1",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "c", "disabled": "yes"}}}"#,
                "servers.json: `/mcpServers/x/disabled`: must be true or false",
            ),
            (r#"{"mcpServers": {"a/b": 7}}"#, "servers.json: `/mcpServers/a~1b`: a server is an object"),
            (
                r#"{"mcpServers": {"x": {"command": "a", "command": "b"}}}"#,
                "servers.json:1:47: duplicate key `command` in one object",
            ),
        ];
        for (text, expected) in cases {
            let error = parse(text).unwrap_err().to_string();
            assert!(error.starts_with(expected), "{text}\n  gave {error}\n  not {expected}");
        }
    }

    #[test]
    fn views_name_servers_of_the_file_and_narrow_their_tools() {
        let servers = parse(
            r#"{"mcpServers": {"git": {"command": "git-mcp", "exclude": ["push"]}, "time": {"command": "time-mcp"},
                               "old": {"command": "old", "disabled": true}},
                "views": {
                  "readers": {"servers": {"git": {"include": ["log", "diff"]}, "time": {}}},
                  "ops.team-1": {"servers": {"time": {"exclude": ["convert_time"], "why": "x"}, "old": {}}, "note": 1}
                }}"#,
        )
        .unwrap();
        assert_eq!(servers.views.len(), 2);
        let readers = &servers.views[0];
        assert_eq!(readers.name, "readers");
        let git = readers.server("git").unwrap();
        assert_eq!((git.include.as_deref(), git.exclude.len()), (Some(&["log".to_owned(), "diff".to_owned()][..]), 0));
        assert_eq!(readers.server("time").map(|time| (&time.include, time.exclude.len())), Some((&None, 0)));
        assert!(servers.views[1].server("git").is_none(), "a server the view does not name is hidden");
        assert_eq!(servers.views[1].server("time").unwrap().exclude, ["convert_time"]);
        assert_eq!(
            servers.warnings,
            [
                "servers.json: `/views/ops.team-1/note`: not a view setting; ignored",
                "servers.json: `/views/ops.team-1/servers/time/why`: not a view setting; ignored",
                "servers.json: `/views/ops.team-1/servers/old`: a disabled server; the view shows nothing of it",
            ]
        );
    }

    #[test]
    fn a_view_of_a_server_the_file_does_not_have_is_an_error_naming_its_place() {
        let cases = [
            (
                r#""views": {"a": {"servers": {"gti": {}}}}"#,
                "`/views/a/servers/gti`: no server `gti` in the file (it has git)",
            ),
            (r#""views": []"#, "`/views`: must be an object of views"),
            (r#""views": {"a b": {"servers": {"git": {}}}}"#, "`/views/a b`: a view's name is a path segment"),
            (r#""views": {"..": {"servers": {"git": {}}}}"#, "`/views/..`: a view's name is a path segment"),
            (r#""views": {"a": {}}"#, "`/views/a`: a view needs `servers`"),
            (r#""views": {"a": {"servers": {}}}"#, "`/views/a/servers`: names no server"),
            (r#""views": {"a": {"servers": {"git": []}}}"#, "`/views/a/servers/git`: a viewed server is an object"),
            (
                r#""views": {"a": {"servers": {"git": {"include": "log"}}}}"#,
                "`/views/a/servers/git/include`: must be an array of strings",
            ),
        ];
        for (views, expected) in cases {
            let text = format!(r#"{{"mcpServers": {{"git": {{"command": "g"}}}}, {views}}}"#);
            let error = parse(&text).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("servers.json: {expected}")),
                "{views}\n  gave {error}\n  not {expected}"
            );
        }
    }

    #[test]
    fn an_http_server_says_how_to_sign_in_but_never_holds_a_secret() {
        let servers = parse(
            r#"{"mcpServers": {"x": {"url": "https://x.test/mcp", "oauth": {"client_id": "id", "client_secret_env": "X_SECRET", "scope": "read", "grant": "client_credentials"}}}}"#,
        )
        .unwrap();
        let Transport::Http { oauth, .. } = &servers.servers[0].transport else { panic!("HTTP") };
        assert_eq!(oauth.client_id.as_deref(), Some("id"));
        assert_eq!(oauth.client_secret_env.as_deref(), Some("X_SECRET"));
        assert_eq!(oauth.grant, crate::upstream::auth::Grant::ClientCredentials);
        assert!(servers.warnings.is_empty(), "{:?}", servers.warnings);

        let error =
            parse(r#"{"mcpServers": {"x": {"url": "https://x.test/mcp", "oauth": {"client_secret": "s3cret"}}}}"#)
                .unwrap_err()
                .to_string();
        assert!(error.contains("`/mcpServers/x/oauth`") && error.contains("client_secret_env"), "{error}");
        assert!(!error.contains("s3cret"), "{error}");
        let error = parse(r#"{"mcpServers": {"x": {"url": "https://x.test/mcp", "oauth": {"grant": "password"}}}}"#)
            .unwrap_err()
            .to_string();
        assert!(error.contains("`/mcpServers/x/oauth`") && error.contains("password"), "{error}");
    }
}
