//! The gateway's records: where `--gateway` writes the servers file and the record of what it
//! took out of a configuration, byte for byte, so that unwrap can give the same bytes back.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tool_mediator_core::Place;

use super::error::ClientsError;

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

/// What `--gateway` took out of a configuration.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Record {
    pub(super) note: String,
    /// The servers moved, in the file's order.
    pub(super) servers: Vec<String>,
    /// The text the gateway entry replaced: the first run of neighbouring servers.
    pub(super) replaced: String,
    /// The later runs, each with the separator before it.
    pub(super) removed: Vec<Removed>,
    /// The servers file as wrap wrote it: one edited since is kept by unwrap, not removed.
    #[serde(default)]
    pub(super) servers_file: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Removed {
    /// The server it followed.
    pub(super) after: String,
    pub(super) text: String,
}

impl Record {
    pub(super) fn parse(text: &str, path: &Path) -> Result<Record, ClientsError> {
        serde_json::from_str(text).map_err(|error| ClientsError::File {
            path: path.to_owned(),
            place: Some(Place::of_json_error(text, &error)),
            message: format!("not a record tool-mediator wrote: {}", tool_mediator_core::json::message(&error)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servers_file_is_named_after_the_configuration() {
        assert_eq!(gateway_file(Path::new("/p/.mcp.json")), Path::new("/p/.mcp.tool-mediator.json"));
    }
}
