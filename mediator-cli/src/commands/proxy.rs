//! `tool-mediator proxy -- <command>`: the mediator in front of an MCP server over stdio.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use tool_mediator::llm::Task;
use tool_mediator::proxy::listen::ListenOptions;
use tool_mediator::proxy::remote::Remote;
use tool_mediator::proxy::{self, Ending, ProxyOptions, Upstream};
use tool_mediator::session::SessionPolicy;

use crate::cli::ProxyArgs;
use crate::config::Setup;
use crate::manifest::Dialect;

pub async fn run(args: ProxyArgs) -> Result<ExitCode> {
    let setup = Setup::from_args(&args.chain, Task::Enhance).await?;
    let mut settings = setup.settings.clone();
    let mediator = Arc::new(setup.mediator(0.0, Dialect::Mcp));
    if let Some(threshold) = args.disclosure {
        settings.grouping_threshold = usize::try_from(threshold).unwrap_or(usize::MAX);
    }
    let policy = SessionPolicy {
        disclosure: (!args.no_disclosure).then_some(settings.grouping_threshold.max(2)),
        ..settings.session_policy()
    };
    let options = ProxyOptions {
        source: args.chain.source.clone(),
        grace: args.grace,
        max_message_bytes: usize::try_from(args.max_message_size).unwrap_or(usize::MAX),
        ..ProxyOptions::new(mediator, policy)
    };

    let upstream = {
        let (url, headers, command) = (args.url.clone(), args.headers.clone(), args.command.clone());
        move || -> Upstream {
            match (&url, command.split_first()) {
                (Some(url), _) => Remote { url: url.clone(), headers: headers.clone() }.into(),
                (None, Some((program, rest))) => {
                    let mut server = tokio::process::Command::new(program);
                    server.args(rest);
                    server.into()
                }
                (None, None) => unreachable!("clap requires a command or a URL"),
            }
        }
    };
    if let Some(address) = args.listen {
        let token = match &args.token_env {
            Some(variable) => match std::env::var(variable) {
                Ok(token) if !token.is_empty() => Some(token),
                _ => anyhow::bail!("--token-env {variable}: the environment variable {variable} is not set"),
            },
            None => None,
        };
        let listener = tokio::net::TcpListener::bind(address)
            .await
            .map_err(|error| anyhow::anyhow!("cannot listen on {address}: {error}"))?;
        eprintln!("tool-mediator: serving MCP at http://{}/mcp", listener.local_addr()?);
        let listen = ListenOptions { address, token, idle: args.session_idle };
        proxy::listen::serve(listener, listen, options, Arc::new(upstream)).await?;
        setup.finish();
        return Ok(ExitCode::SUCCESS);
    }
    let server = upstream();
    let ending = proxy::run_until_gone(options, server, proxy::stdio()).await?;
    setup.finish();
    match ending {
        Ending::ClientClosed { server } => {
            tracing::info!("the client closed the connection; the MCP server exited ({server})");
            Ok(ExitCode::SUCCESS)
        }
        Ending::ServerExited(status) => {
            eprintln!("error: the MCP server exited first ({status})");
            Ok(ExitCode::from(1))
        }
    }
}
