//! Through the gateway: whether it would run a server as the client does, the edits that put
//! one gateway entry in place of the servers it takes (with the servers file and the record to
//! write), and the edits that put them back from the record.

use std::path::{Path, PathBuf};

use jsonc_parser::ast::ObjectProp;
use serde_json::{Map, Value};
use tool_mediator_core::Place;

use super::document::{Document, Edit, json_string, name_of, to_value};
use super::entry::Entry;
use super::error::ClientsError;
use super::records::{Record, Removed, unwrap_record};
use crate::servers::Servers;

/// The name of the one entry `--gateway` leaves in the configuration.
pub const GATEWAY_ENTRY: &str = "tool-mediator";

impl<'t> Document<'t> {
    /// The entry as the gateway's servers file holds it, when the gateway would run the server
    /// as the client does; otherwise why not.
    pub(super) fn movable(&self, entry: &Entry<'_, 't>) -> Result<Value, String> {
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
    pub(super) fn gateway_move(
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
    pub(super) fn gateway_restore(
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

/// Files to write: each one's path and text.
type Files = Vec<(PathBuf, String)>;

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("a JSON value serializes");
    text.push('\n');
    text
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
