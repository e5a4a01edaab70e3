//! The `tool-mediator` binary: parse the command line, run a command, map the outcome to an
//! exit code (0 ok, 1 `--check` found changes, 2 bad usage or bad input).

mod cli;
mod commands;
mod config;
mod flags;
mod manifest;
mod output;

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("TOOL_MEDIATOR_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"))
                // Asked to sign in, the user is told, whatever the logging says.
                .add_directive(
                    format!("{}=warn", tool_mediator_mcp::upstream::auth::SIGN_IN_PROMPT)
                        .parse()
                        .expect("a filter directive"),
                ),
        )
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .without_time()
        .with_target(false)
        .init();
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(run(cli));
    // A read of stdin may still be blocked on a thread (the proxy, when the server exits
    // first): do not wait for it.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(error) if output::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            // Errors name files and quote what servers said: either may hold control characters.
            eprintln!("error: {}", tool_mediator::screen::printable(&format!("{error:#}")));
            ExitCode::from(2)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Enhance(args) => commands::enhance::run(args).await,
        Command::Filter(args) => commands::filter::run(args).await,
        Command::Categorize(args) => commands::categorize::run(args).await,
        Command::Names(args) => commands::names::run(args),
        Command::Tokens(args) => commands::tokens::run(args).await,
        Command::Overrides(command) => commands::overrides::run(command),
        Command::Proxy(args) => commands::proxy::run(*args).await,
        Command::Gateway(args) => commands::gateway::run(*args).await,
        Command::Wrap(args) => commands::wrap::wrap(args),
        Command::Unwrap(args) => commands::wrap::unwrap(args),
        Command::Lint(args) => commands::lint::run(args).await,
        Command::Pin(args) => commands::pin::run(args).await,
        Command::Review(args) => commands::review::run(args),
        Command::Auth(command) => commands::auth::run(command).await,
        Command::Config { config } => commands::configuration::run(&config),
        Command::Cache { action, cache, config } => commands::cache::run(&action, &cache, &config),
        Command::Completions(args) => commands::shell::completions(&args, Cli::command()),
        Command::Man(args) => commands::shell::man(&args, Cli::command()),
    }
}
