//! `tool-mediator pin MANIFEST`: a lock file of the manifest's tools, and the comparison with
//! one that `enhance --locked` makes.

use std::process::ExitCode;

use anyhow::{Result, bail};
use tool_mediator::Tool;
use tool_mediator::pin::{Lock, Standing};

use crate::cli::PinArgs;
use crate::manifest::{self, Origin};
use crate::output;

pub async fn run(args: PinArgs) -> Result<ExitCode> {
    let mut tools = Vec::new();
    if args.server.server {
        tools = crate::commands::lint::server_tools(&args.server).await?.1;
    }
    let origins = if args.server.server { Vec::new() } else { manifest::expand_inputs(&args.input.inputs)? };
    for origin in origins {
        let (manifest, _) = manifest::read(origin, args.input.max_input_size)?;
        tools.extend(manifest.tools);
    }
    let lock = Lock::of(&tools);
    if lock.tools.len() < tools.len() {
        bail!("two tools share a name: a lock pins each tool by its name");
    }
    match &args.output {
        Some(path) => output::write_atomically(&[(path.clone(), lock.text())])?,
        None => output::print(&lock.text())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Compares `tools` of `origin` with `lock`, reporting on stderr; whether every tool is as
/// pinned or new (none changed).
pub fn compare(origin: &Origin, tools: &[Tool], lock: &Lock) -> bool {
    let mut unchanged = true;
    for tool in tools {
        match lock.standing(tool) {
            Standing::Pinned => {}
            Standing::Changed => {
                unchanged = false;
                eprintln!("error: {origin}: `{}` changed since it was pinned", tool.name);
            }
            Standing::New => eprintln!("warning: {origin}: `{}` is new since the lock", tool.name),
        }
    }
    for name in lock.gone(tools) {
        eprintln!("warning: {origin}: `{name}` was pinned but is gone");
    }
    unchanged
}
