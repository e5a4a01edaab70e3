//! `tool-mediator proxy -- <command>`: the mediator in front of one MCP server. What it shares
//! with the gateway (mediation settings, serving over HTTP, the ending) lives here once.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use tool_mediator::pin::PinsFile;
use tool_mediator::session::{DisclosureMode, SessionPolicy};
use tool_mediator_mcp::front::access::{OAuthOptions, ProtectedResource};
use tool_mediator_mcp::front::listen::{Exposure, ListenOptions};
use tool_mediator_mcp::servers::{Scope, View};
use tool_mediator_mcp::upstream::remote::Remote;
use tool_mediator_mcp::{Ending, LinkSettings, ProxyOptions, ServerSpec, Upstream};

use crate::config::Setup;
use crate::flags::{ChainArgs, ListenArgs, MediationArgs, OnChange, SignInArgs};
use crate::manifest::Dialect;

/// The server is a command to start or a URL to reach: without either, both are named.
#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("server").args(["url", "command"]).required(true))]
pub struct ProxyArgs {
    #[command(flatten)]
    pub chain: ChainArgs,

    #[command(flatten)]
    pub mediation: MediationArgs,

    /// A remote MCP server's Streamable HTTP endpoint, instead of a command to start.
    #[arg(long, value_name = "URL", value_parser = http_url, conflicts_with = "command", help_heading = crate::flags::REMOTE)]
    pub url: Option<reqwest::Url>,

    /// A header for every request to the remote server (`--header "Authorization: Bearer $T"`).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = header, requires = "url", help_heading = crate::flags::REMOTE)]
    pub headers: Vec<(String, String)>,

    #[command(flatten)]
    pub sign_in: SignInArgs,

    #[command(flatten)]
    pub listen: ListenArgs,

    /// With `--listen`: `shared`, one server (process or connection) for every client session,
    /// or `session`, one started for each, for a server that keeps per-user state.
    /// (A servers file says it per server, as `"scope"`.)
    #[arg(long, value_name = "SCOPE", default_value = "shared", value_parser = scope, requires = "listen", help_heading = crate::flags::LISTEN)]
    pub server_scope: Scope,

    /// What trust on first use pins this server's tools under, and `review` calls it: by
    /// default its command line, or its URL without user, password, query or fragment.
    #[arg(long, value_name = "NAME", help_heading = crate::flags::TRUST)]
    pub name: Option<String>,

    /// The MCP server's command and its arguments: everything from the first word that is not
    /// an option of the proxy's (or everything after `--`).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

fn scope(text: &str) -> Result<Scope, String> {
    match text {
        "shared" => Ok(Scope::Shared),
        "session" => Ok(Scope::Session),
        _ => Err(format!("`{text}`: expected shared or session")),
    }
}

fn http_url(text: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(text).map_err(|error| format!("`{text}`: {error}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        scheme => Err(format!("`{text}`: an MCP server is reached over http or https, not {scheme}")),
    }
}

fn header(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_owned(), value.trim().to_owned())),
        _ => Err(format!("`{text}`: a header is written `Name: value`")),
    }
}

pub async fn run(args: ProxyArgs) -> Result<ExitCode> {
    let setup = Setup::serving(&args.chain).await?;
    let options = ProxyOptions { source: args.chain.source.clone(), ..options(&setup, &args.mediation, false)? };
    // One sign-in for every connection to the server, restarts included.
    let remote =
        args.url.clone().map(|url| Remote::new(url, args.headers.clone(), args.sign_in.over(Default::default())));
    let command = args.command.clone();
    let start = move || -> Option<Upstream> {
        Some(match (&remote, command.split_first()) {
            (Some(remote), _) => remote.clone().into(),
            (None, Some((program, rest))) => {
                let mut server = tokio::process::Command::new(program);
                server.args(rest);
                server.into()
            }
            (None, None) => unreachable!("clap requires a command or a URL"),
        })
    };
    let pinned_as = pinned_as(&args);
    if let Some(pins) = &options.pins
        && args.name.is_none()
        && args.url.is_none()
    {
        // A pins file written before keys left credentials out holds this server under its
        // command line as written: its pins move to the key without them.
        let plain = tool_mediator::pin::plain_server_key(&command_words(&args));
        if pins.change(|pins| pins.rename_server(&plain, &pinned_as))? {
            tracing::info!("trust on first use: the pins of `{}` are kept without its credentials now", pinned_as);
        }
    }
    let settings = LinkSettings { pinned_as: Some(pinned_as), ..LinkSettings::default() };
    let server = ServerSpec { settings, start: Arc::new(start), scope: args.server_scope, entry: None };
    serve(setup, options, vec![server], None, &args.listen).await
}

/// What trust on first use pins the proxy's server under: `--name`, else what the user wrote to
/// start or reach it (the command line without the credentials it may carry; the URL without
/// what may be a credential), which stays the same from run to run.
fn pinned_as(args: &ProxyArgs) -> String {
    if let Some(name) = &args.name {
        return name.clone();
    }
    if let Some(url) = &args.url {
        let mut url = url.clone();
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_query(None);
        url.set_fragment(None);
        return url.to_string();
    }
    tool_mediator::pin::server_key(&command_words(args))
}

/// The server's command line, word by word.
fn command_words(args: &ProxyArgs) -> Vec<String> {
    args.command.iter().map(|word| word.to_string_lossy().into_owned()).collect()
}

/// The proxy's options from the command line; `prefix` prefixes every tool with its server's
/// name.
pub fn options(setup: &Setup, args: &MediationArgs, prefix: bool) -> Result<ProxyOptions> {
    let mut settings = setup.settings.clone();
    let mediator = Arc::new(setup.mediator(0.0, Dialect::Mcp));
    if let Some(threshold) = args.disclosure {
        settings.grouping_threshold = usize::try_from(threshold).unwrap_or(usize::MAX);
    }
    if let Some(mode) = args.disclosure_mode {
        settings.disclosure_mode = mode.into();
    }
    if args.no_disclosure {
        settings.disclosure_mode = DisclosureMode::Off;
    }
    if let Some(whole_below) = args.whole_below {
        settings.whole_below = whole_below;
    }
    settings.quarantine |= args.quarantine;
    settings.calls_follow_disclosure |= args.calls_follow_disclosure;
    let policy = SessionPolicy {
        prefix,
        page_size: (args.page_size > 0).then_some(args.page_size),
        embedder: setup.embedder(),
        ..settings.session_policy()
    };
    let lock = args.locked.as_deref().map(tool_mediator::pin::Lock::read).transpose()?.map(Arc::new);
    Ok(ProxyOptions {
        grace: args.grace,
        request_timeout: args.request_timeout,
        lock,
        pins: pins_file(&settings, args)?.map(Arc::new),
        hide_changed: args.on_change == OnChange::Hide,
        max_message_bytes: usize::try_from(args.max_message_size).unwrap_or(usize::MAX),
        // The shared cache's credentials are the mediator's own: no server inherits them.
        withheld_env: CACHE_CREDENTIALS.iter().map(|&name| name.to_owned()).collect(),
        ..ProxyOptions::new(mediator, policy)
    })
}

/// The environment variables that hold the shared cache's address, password and key.
const CACHE_CREDENTIALS: [&str; 3] =
    [tool_mediator::cache::URL_VARIABLE, tool_mediator::cache::PASSWORD_VARIABLE, tool_mediator::cache::KEY_VARIABLE];

/// The pins file of trust on first use, when it is on (`--trust-on-first-use`, `--pins-file` or
/// the configuration's `trust_on_first_use`), read once now: one that cannot be used stops the
/// start, naming its place.
fn pins_file(settings: &tool_mediator::MediatorConfig, args: &MediationArgs) -> Result<Option<PinsFile>> {
    if !(args.trust_on_first_use || args.pins_file.is_some() || settings.trust_on_first_use) {
        return Ok(None);
    }
    let path = args.pins_file.clone().or_else(|| settings.pins_path()).context(
        "trust on first use: no data directory for the pins file (set XDG_DATA_HOME or HOME, or give --pins-file)",
    )?;
    let file = PinsFile::at(path);
    file.read()?;
    Ok(Some(file))
}

/// Serves `servers` to one client over stdio, or to many over HTTP with `--listen` (each client
/// shown every server, or one of the servers `file`'s views, the file read again when it
/// changes), until the client (or the server, without restarts) ends. The override directories
/// are read again when they change.
pub async fn serve(
    setup: Setup,
    options: ProxyOptions,
    servers: Vec<ServerSpec>,
    file: Option<(std::path::PathBuf, Vec<View>)>,
    args: &ListenArgs,
) -> Result<ExitCode> {
    let (servers_file, views) = match file {
        Some((path, views)) => (Some(path), views),
        None => (None, Vec::new()),
    };
    setup.follow_overrides();
    if let Some(address) = args.listen {
        if views.is_empty() && (args.view_claim.is_some() || args.view_header.is_some()) {
            anyhow::bail!(
                "--view-claim and --view-header choose among the views of a gateway's servers file (`\"views\"`), \
                 and there are none"
            );
        }
        if let Some(name) = &args.view_header
            && header_name(name).is_none()
        {
            anyhow::bail!("--view-header `{name}` is not a header name");
        }
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
        let local = listener.local_addr()?;
        let oauth = match &args.oauth_issuer {
            Some(issuer) => {
                let audience = args.oauth_audience.clone().unwrap_or_else(|| format!("http://{local}/mcp"));
                let oauth = OAuthOptions {
                    view_claim: args.view_claim.clone(),
                    clock_skew: args.oauth_clock_skew,
                    ..OAuthOptions::new(issuer, &audience)?
                };
                tracing::info!("serving as the OAuth protected resource {audience} of the issuer {issuer}");
                Some(Arc::new(ProtectedResource::new(oauth)?))
            }
            None => None,
        };
        let listen = ListenOptions {
            token,
            idle: args.session_idle,
            read_timeout: args.read_timeout,
            allowed_hosts: args.allow_hosts.clone(),
            shutdown_grace: args.shutdown_grace,
            cache: setup.cache().cloned(),
            oauth,
            views,
            view_header: args.view_header.clone(),
            servers_file,
            insecure_no_token: args.insecure_no_token,
            ..ListenOptions::new(address)
        };
        // The library's rules, said in the flags that satisfy them.
        match listen.exposure(local) {
            Ok(()) => {}
            Err(Exposure::Unguarded(_)) => anyhow::bail!(
                "--listen {address} serves other machines: give a token with --token-env VAR, or an authorization \
                 server with --oauth-issuer URL, or serve them without one with --insecure-no-token"
            ),
            Err(Exposure::UnusableAudience(audience)) => anyhow::bail!(
                "--listen {address}: name the URL clients reach /mcp at with --oauth-audience URL (a token's \
                 audience must be this resource, and {audience} names no address a client uses)"
            ),
        }
        eprintln!("tool-mediator: serving MCP at http://{local}/mcp");
        // The token is the proxy's own: no server inherits it.
        let withheld_env = options.withheld_env.iter().cloned().chain(args.token_env.iter().cloned()).collect();
        let options = ProxyOptions { withheld_env, ..options };
        tool_mediator_mcp::front::listen::serve(listener, listen, options, servers).await?;
        setup.finish();
        return Ok(ExitCode::SUCCESS);
    }
    let ending = tool_mediator_mcp::serve(options, servers, tool_mediator_mcp::front::stdio::stdio()).await?;
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

/// `name` as an HTTP header's name, when it is one.
fn header_name(name: &str) -> Option<reqwest::header::HeaderName> {
    reqwest::header::HeaderName::from_bytes(name.as_bytes()).ok()
}

/// `--source` names one server's overrides: a gateway's servers name theirs in the servers file.
pub fn refuse_source(chain: &ChainArgs) -> Result<()> {
    if chain.source.is_some() {
        anyhow::bail!("--source names one server's overrides: give each server its `source` in the servers file");
    }
    Ok(())
}
