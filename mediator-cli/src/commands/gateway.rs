//! `tool-mediator gateway --config servers.json`: the mediator in front of many MCP servers.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Args;
use tool_mediator_mcp::ServerSpec;
use tool_mediator_mcp::servers::Servers;

use crate::commands::proxy;
use crate::config::Setup;
use crate::flags::{ChainArgs, ListenArgs, MediationArgs, duration};

#[derive(Debug, Args)]
pub struct GatewayArgs {
    #[command(flatten)]
    pub chain: ChainArgs,

    #[command(flatten)]
    pub mediation: MediationArgs,

    /// The servers file (`{"mcpServers": {...}}`); by default the file `--config` names.
    #[arg(long, value_name = "FILE")]
    pub servers: Option<PathBuf>,

    /// Prefix every tool and prompt with its server's name (`<server>_<name>`), not only the
    /// names two servers share.
    #[arg(long)]
    pub prefix: bool,

    /// How long a server that stopped waits to be started again; doubled at each stop in a
    /// row, up to 30s.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = duration)]
    pub restart_delay: std::time::Duration,

    #[command(flatten)]
    pub listen: ListenArgs,
}

pub async fn run(mut args: GatewayArgs) -> Result<ExitCode> {
    proxy::refuse_source(&args.chain)?;
    let path = match args.servers.clone() {
        Some(path) => path,
        // `--config` names the servers file, as the MCP clients' own option does; the mediator's
        // configuration is then found where it is usually found.
        None => args.chain.config.config.take().context("name the servers file: --config FILE (or --servers FILE)")?,
    };
    let servers = Servers::read(&path)?;
    for warning in &servers.warnings {
        tracing::warn!("{warning}");
    }
    let specs = ServerSpec::of_servers(&servers);
    if specs.is_empty() {
        anyhow::bail!("{}: every server is disabled", path.display());
    }
    let setup = Setup::serving(&args.chain).await?;
    let options = tool_mediator_mcp::ProxyOptions {
        restart: Some(args.restart_delay),
        ..proxy::options(&setup, &args.mediation, args.prefix)?
    };
    // Over HTTP the file is read again when it changes.
    proxy::serve(setup, options, specs, Some((path, servers.views)), &args.listen).await
}
