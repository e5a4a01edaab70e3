//! `wrap` and `unwrap`: the mediator put in front of a configuration's servers (through the
//! proxy, or all through one gateway) and taken out again; what either writes is checked to
//! parse as a configuration still.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::document::{Document, apply, name_of};
use super::entry::{Entry, MEDIATOR, Mediated, Transport, is_mediator};
use super::error::ClientsError;
use super::gateway::GATEWAY_ENTRY;
use super::records::{Record, unwrap_record};

/// What [`wrap`] is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct WrapOptions<'a> {
    /// The servers to wrap, by name; every one when empty.
    pub servers: &'a [String],
    /// The command wrapped entries run: [`MEDIATOR`], or a path to it.
    pub mediator: &'a str,
    /// `Some(servers file)`: move the servers into a gateway reading that file (an absolute path,
    /// since the client starts the gateway from a directory of its choosing); see
    /// [`gateway_file`](super::gateway_file).
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

/// Puts the mediator in front of the configuration's servers (or the ones named): through the
/// proxy, or all through one gateway. See [the module documentation](super) for what is written.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::records::gateway_file;
    use crate::servers::Servers;

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
}
