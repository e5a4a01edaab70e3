//! One server of a configuration: how it is reached, and whether it already runs the mediator
//! (through the proxy, as a gateway, or some other way).

use std::path::PathBuf;

use jsonc_parser::ast::{self, ObjectProp};
use jsonc_parser::common::Ranged as _;

use super::document::name_of;

/// The command a wrapped entry runs unless told otherwise: the binary, found on the PATH the
/// client starts servers with.
pub const MEDIATOR: &str = "tool-mediator";

/// How a server is reached, as the gateway's servers file reads it.
pub(super) enum Transport {
    Stdio,
    Http,
    /// Neither, and why.
    Unknown(String),
}

/// Whether an entry already runs the mediator.
pub(super) enum Mediated {
    Not,
    /// `tool-mediator proxy ...`
    Proxy,
    /// `tool-mediator gateway ...`
    Gateway,
    /// `tool-mediator` with other arguments.
    Other,
}

/// One server of the configuration.
pub(super) struct Entry<'a, 't> {
    pub(super) name: String,
    /// The document's text, which every range is into.
    pub(super) text: &'t str,
    pub(super) prop: &'a ObjectProp<'t>,
    pub(super) object: Option<&'a ast::Object<'t>>,
}

/// An array's elements: each one's range, and its value when it is a string.
type Elements = Vec<(std::ops::Range<usize>, Option<String>)>;

impl<'a, 't> Entry<'a, 't> {
    pub(super) fn of(prop: &'a ObjectProp<'t>, text: &'t str) -> Entry<'a, 't> {
        Entry { name: name_of(prop), text, prop, object: prop.value.as_object() }
    }

    pub(super) fn get(&self, key: &str) -> Option<&'a ObjectProp<'t>> {
        self.object.and_then(|object| object.properties.iter().find(|prop| prop.name.as_str() == key))
    }

    fn string(&self, key: &str) -> Option<&'a str> {
        self.get(key).and_then(|prop| prop.value.as_string_lit()).map(|lit| lit.value.as_ref())
    }

    pub(super) fn args(&self) -> Option<Elements> {
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

    pub(super) fn transport(&self) -> Transport {
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

    pub(super) fn mediated(&self) -> Mediated {
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
    pub(super) fn gateway_file(&self) -> Option<PathBuf> {
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
}

/// Whether a command is the mediator: `tool-mediator`, or a path to it.
pub(super) fn is_mediator(command: &str) -> bool {
    let file = command.rsplit(['/', '\\']).next().unwrap_or(command);
    file == MEDIATOR || file == "tool-mediator.exe"
}
