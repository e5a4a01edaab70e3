//! `tool-mediator pin MANIFEST` (or `--server -- CMD`, or `--servers FILE` for a gateway): a lock
//! file of the tools, and the comparison with one that `enhance --locked` makes.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use tool_mediator::Place;
use tool_mediator::Tool;
use tool_mediator::pin::{Lock, Standing};
use tool_mediator::screen::printable;
use tool_mediator_mcp::ServerSpec;
use tool_mediator_mcp::probe;
use tool_mediator_mcp::servers::Servers;

use crate::flags::{InputArgs, ServerArgs};
use crate::manifest::{self, Origin};
use crate::output;

#[derive(Debug, Args)]
pub struct PinArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub server: ServerArgs,

    /// Pin the tools of every server of this servers file (as `gateway` reads it), each by
    /// `<server>/<name>`: the lock `gateway --locked` checks each server's tools against.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["inputs", "server"])]
    pub servers: Option<PathBuf>,

    /// Write the lock here (standard output by default).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

pub async fn run(args: PinArgs) -> Result<ExitCode> {
    if let Some(path) = &args.servers {
        let lock = gateway_lock(path).await?;
        return write(&args, &lock);
    }
    let mut tools = Vec::new();
    // Where each tool's name is written (the file or server, and the place in it), for an error
    // about it.
    let mut places: Vec<(String, Place)> = Vec::new();
    if args.server.server {
        let (origin, probed) = crate::commands::lint::server_tools(&args.server).await?;
        warn_unreadable(&origin, &probed);
        let positions = probed.positions();
        places.extend(
            positions.into_iter().map(|index| (origin.clone(), Place::Pointer(format!("/tools/{index}/name")))),
        );
        tools = probed.tools;
    }
    let origins = if args.server.server { Vec::new() } else { manifest::expand_inputs(&args.input.inputs)? };
    for origin in origins {
        let (manifest, _) = manifest::read(origin, args.input.max_input_size)?;
        let origin = manifest.origin.to_string();
        places.extend((0..manifest.tools.len()).map(|index| (origin.clone(), manifest.place_of(index, "name"))));
        tools.extend(manifest.tools);
    }
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (index, tool) in tools.iter().enumerate() {
        if let Some(&earlier) = first.get(tool.name.as_str()) {
            let ((origin, place), (first_origin, first_place)) = (&places[index], &places[earlier]);
            bail!(
                "{}",
                printable(&format!(
                    "{origin}{place}: `{}` is also the name of the tool at {first_origin}{first_place}: a lock pins \
                     each tool by its name",
                    tool.name
                ))
            );
        }
        first.insert(&tool.name, index);
    }
    write(&args, &Lock::of(&tools))
}

/// Tools that cannot be read are not pinned: the proxy and the gateway never list them either.
fn warn_unreadable(origin: &str, probed: &probe::Probed) {
    for unreadable in &probed.unreadable {
        tracing::warn!(
            "{}",
            printable(&format!(
                "{origin}/tools/{}: `{}` cannot be read, so it is not pinned (and never listed): {}",
                unreadable.index, unreadable.name, unreadable.reason
            ))
        );
    }
}

fn write(args: &PinArgs, lock: &Lock) -> Result<ExitCode> {
    match &args.output {
        Some(path) => output::write_atomically(&[(path.clone(), lock.text())])?,
        None => output::print(&lock.text())?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The lock of every enabled server of the servers file at `path`, each listed as the gateway
/// starts it.
async fn gateway_lock(path: &std::path::Path) -> Result<Lock> {
    let servers = Servers::read(path)?;
    for warning in &servers.warnings {
        tracing::warn!("{warning}");
    }
    let mut listed = Vec::new();
    let withheld = servers.secret_variables();
    for server in servers.enabled() {
        let spec = ServerSpec::from_config(server, &withheld);
        let upstream = (spec.start)().expect("a servers file's server can always be started");
        let probed = probe::probe_tools(upstream)
            .await
            .with_context(|| format!("{}: the server `{}`", path.display(), server.name))?;
        warn_unreadable(&format!("{}: the server `{}`", path.display(), server.name), &probed);
        listed.push((server.name.clone(), probed.tools));
    }
    Ok(Lock::of_servers(listed.iter().map(|(name, tools)| (name.as_str(), tools.as_slice()))))
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
                eprintln!("error: {origin}: `{}` changed since it was pinned", printable(&tool.name));
            }
            Standing::New => eprintln!("warning: {origin}: `{}` is new since the lock", printable(&tool.name)),
        }
    }
    for name in lock.gone(tools) {
        eprintln!("warning: {origin}: `{}` was pinned but is gone", printable(name));
    }
    unchanged
}
