//! `tool-mediator auth login|status|logout`: signing in to remote MCP servers ahead of time,
//! for the proxy and the gateway to use (they sign in themselves too, when a server asks).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};
use tool_mediator_mcp::servers::{Servers, Transport};
use tool_mediator_mcp::upstream::auth::{CredentialStore, KeptIn, SignIn, SignInOptions};

use tool_mediator::screen::printable;

use crate::flags::SignInArgs;
use crate::output;

#[derive(Debug, Subcommand)]
pub enum AuthCommand {
    /// Sign in to a remote MCP server now: discovery, registration, the browser (or client
    /// credentials); the tokens are kept for the proxy and the gateway.
    ///
    /// Exit codes: 0 signed in and kept; 1 sign-in failed, the sign-in could not be kept (the
    /// credentials file or the platform's store refused it), or the server did not ask for it;
    /// 2 bad usage.
    Login(LoginArgs),
    /// The servers signed in to: the authorization server, the client, the scopes, when the
    /// token expires. Never a token; control characters a server sent are shown escaped.
    Status,
    /// Forget the sign-in to a server (every sign-in with `--all`).
    Logout(LogoutArgs),
}

/// A server by URL, or by name in a servers file.
#[derive(Debug, Args)]
pub struct ServerArg {
    /// The server: its Streamable HTTP URL, or its name in the servers file (`--servers`).
    #[arg(value_name = "URL|NAME")]
    pub server: Option<String>,

    /// The servers file (`{"mcpServers": ...}`) that names the server.
    #[arg(long, value_name = "FILE")]
    pub servers: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub server: ServerArg,

    #[command(flatten)]
    pub sign_in: SignInArgs,
}

#[derive(Debug, Args)]
pub struct LogoutArgs {
    #[command(flatten)]
    pub server: ServerArg,

    /// Forget every sign-in.
    #[arg(long, conflicts_with = "server")]
    pub all: bool,
}

pub async fn run(command: AuthCommand) -> Result<ExitCode> {
    let store = CredentialStore::user()?;
    match command {
        AuthCommand::Login(args) => {
            let (url, options) = resolve(&args.server)?;
            let sign_in = SignIn::new(url.clone(), args.sign_in.over(options), Some(store.clone()))
                .with_context(|| format!("cannot sign in to {}", tool_mediator::http::shown(&url)))?;
            match sign_in.login().await {
                Ok(credentials) => {
                    // The scope is the authorization server's word: shown, never acted on.
                    let scope = credentials
                        .scope
                        .as_deref()
                        .map(|scope| format!(" (scope: {})", printable(scope)))
                        .unwrap_or_default();
                    let key = SignIn::key(&url);
                    eprintln!(
                        "signed in to {}{scope}; kept in {}",
                        tool_mediator::http::shown(&url),
                        kept_in(&store, &key)
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Err(error) => {
                    // Errors quote what servers said (a refusal's description, a field of their
                    // metadata): escapes in it are shown, not run by the terminal.
                    eprintln!(
                        "tool-mediator: cannot sign in to {}: {}",
                        tool_mediator::http::shown(&url),
                        printable(&error.to_string())
                    );
                    Ok(ExitCode::from(1))
                }
            }
        }
        AuthCommand::Status => {
            let all = store.all()?;
            if all.is_empty() {
                eprintln!("not signed in to any server ({} holds none)", output::shown(store.path()));
            }
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|now| now.as_secs()).unwrap_or(0);
            let mut out = String::new();
            for (server, held) in &all {
                let expiry = match held.expires_at {
                    None => "no expiry given".to_owned(),
                    Some(at) if at <= now => "token expired".to_owned(),
                    Some(at) => format!("token expires in {}", in_words(at - now)),
                };
                let refresh = if held.refresh_token.is_some() { ", refreshable" } else { "" };
                let scope = held.scope.as_deref().filter(|scope| !scope.is_empty()).unwrap_or("none");
                // What servers said (the issuer, a client id it registered, the scope) is
                // shown with its escapes written out, never run by the terminal.
                out.push_str(&format!(
                    "{}\n  authorization server: {}\n  client: {}\n  scope: {}\n  {expiry}{refresh}\n  kept in {}\n",
                    printable(server),
                    printable(&held.issuer),
                    printable(&held.client.id),
                    printable(scope),
                    kept_in(&store, server)
                ));
            }
            output::print(&out)?;
            Ok(ExitCode::SUCCESS)
        }
        AuthCommand::Logout(args) => {
            if args.all {
                let all = store.all()?;
                for server in all.keys() {
                    store.remove(server)?;
                }
                eprintln!("forgot {} sign-in{}", all.len(), if all.len() == 1 { "" } else { "s" });
                return Ok(ExitCode::SUCCESS);
            }
            let (url, _) = resolve(&args.server)?;
            let key = SignIn::key(&url);
            if store.remove(&key)? {
                eprintln!("forgot the sign-in to {key}");
            } else {
                eprintln!("not signed in to {key}; nothing to forget");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Where the sign-in to `server` is kept, in words.
fn kept_in(store: &CredentialStore, server: &str) -> String {
    match store.kept_in(server) {
        Ok(KeptIn::PlatformStore) => {
            format!("the platform's credential store (listed in {})", output::shown(store.path()))
        }
        _ => output::shown(store.path()),
    }
}

/// The server's URL and the sign-in options its servers file gives, if any.
fn resolve(arg: &ServerArg) -> Result<(reqwest::Url, SignInOptions)> {
    let Some(server) = &arg.server else { bail!("name a server: its URL, or its name with --servers FILE") };
    if let Some(path) = &arg.servers {
        let servers = Servers::read(path)?;
        let Some(config) = servers.servers.iter().find(|config| &config.name == server) else {
            let names: Vec<_> = servers.servers.iter().map(|config| config.name.as_str()).collect();
            bail!("{}: no server named `{server}` (it names {})", output::shown(path), names.join(", "));
        };
        return match &config.transport {
            Transport::Http { url, oauth, .. } => Ok((url.clone(), oauth.clone())),
            Transport::Stdio { .. } => {
                bail!("{}: `{server}` is a stdio server; sign-in is for remote (HTTP) servers", output::shown(path))
            }
        };
    }
    match reqwest::Url::parse(server) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok((url, SignInOptions::default())),
        _ => bail!("`{server}` is not an http(s) URL; to name a server of a servers file, give --servers FILE"),
    }
}

/// A span of seconds as a person says it: `45 s`, `59 min`, `5 h`, `3 days`.
fn in_words(seconds: u64) -> String {
    match seconds {
        0..120 => format!("{seconds} s"),
        120..7_200 => format!("{} min", seconds / 60),
        7_200..172_800 => format!("{} h", seconds / 3_600),
        _ => format!("{} days", seconds / 86_400),
    }
}
