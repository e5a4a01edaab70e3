//! Through the proxy: the edits that put `tool-mediator proxy --` in front of a stdio server's
//! command, and the edits that take it out again.

use jsonc_parser::common::Ranged as _;

use super::document::{Edit, json_string};
use super::entry::Entry;

impl Entry<'_, '_> {
    /// The edits that put the proxy in front of this stdio server.
    pub(super) fn proxy_edits(&self, mediator: &str) -> Result<Vec<Edit>, String> {
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
    pub(super) fn unproxy_edits(&self) -> Result<Vec<Edit>, String> {
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
