//! The flag groups several commands share: where manifests come from, how the chain is built,
//! the cache and the configuration file, a live server to read, how the proxy and the gateway
//! mediate and serve over HTTP; and the value parsers the flags use. Each command's own flags
//! are beside it.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

/// Where manifests come from.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Manifest files, directories (every .json, .jsonl and .ndjson file in them), or `-` for
    /// stdin.
    /// Standard input when none is given.
    #[arg(value_name = "FILES|DIRS|-")]
    pub inputs: Vec<PathBuf>,

    /// The largest manifest read, file or standard input (bytes, or with KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = byte_size)]
    pub max_input_size: u64,
}

/// The headings the flags of the long-running commands are grouped under in `--help`.
const SOURCES: &str = "Sources and transformers";
const MODEL: &str = "The language model";
const CACHE: &str = "Cache and configuration";
const SEEN: &str = "What clients see";
pub const TRUST: &str = "Pinning and poisoning";
const LIMITS: &str = "Limits";
pub const REMOTE: &str = "A remote server (--url)";
pub const LISTEN: &str = "Serving clients over HTTP (--listen)";

/// How the chain is built.
#[derive(Debug, Args)]
pub struct ChainArgs {
    /// The source the tools come from (a domain, an MCP server name); chooses the override
    /// file. Defaults to the manifest's file name without extension; for a live server (the
    /// proxy, the gateway, `--server`), to the name it gives itself in `serverInfo`.
    #[arg(long, help_heading = SOURCES)]
    pub source: Option<String>,

    /// What kind of source it is.
    #[arg(long, value_enum, default_value_t = SourceTypeArg::File, help_heading = SOURCES)]
    pub source_type: SourceTypeArg,

    /// A directory of override files; repeat to add more (later ones refine earlier ones, and
    /// all of them the curated files built into the program).
    #[arg(long = "overrides", value_name = "DIR", help_heading = SOURCES)]
    pub overrides: Vec<PathBuf>,

    /// Leave out the curated override files built into the program (`tool-mediator config`
    /// lists them); only the `--overrides` directories and the configuration's apply.
    #[arg(long, help_heading = SOURCES)]
    pub no_builtin_overrides: bool,

    /// Do not run the rule-based transformer.
    #[arg(long, help_heading = SOURCES)]
    pub no_rules: bool,

    /// An abbreviation dictionary to add to the built-in one; repeatable.
    #[arg(long = "dictionary", value_name = "FILE", help_heading = SOURCES)]
    pub dictionaries: Vec<PathBuf>,

    /// The tool names the consuming client accepts. Default: `mcp` for MCP output, `strict`
    /// for OpenAI and Anthropic output (their APIs reject dots and names over 64 characters).
    #[arg(long, value_enum, help_heading = SOURCES)]
    pub client_profile: Option<ClientProfileArg>,

    /// Ask a language model about the tools the rules could not improve with confidence.
    /// Keys come from ANTHROPIC_API_KEY / OPENAI_API_KEY or the configuration.
    #[arg(long, value_enum, help_heading = MODEL)]
    pub llm: Option<LlmArg>,

    /// The model to ask (a provider default otherwise).
    #[arg(long, help_heading = MODEL)]
    pub model: Option<String>,

    /// Ask the language model about the tools the poisoning screen is unsure of (some
    /// evidence, short of its threshold): its ruling can flag a tool, never clear one, and is
    /// cached under the tool's digest (the configuration's `judge`).
    #[arg(long, help_heading = MODEL)]
    pub judge: bool,

    /// Ask the language model for its odds that each tool the screen did not flag is poisoned,
    /// and flag those over ODDS (0 to 1; OpenAI or an OpenAI-compatible server). Calibrate it
    /// for your model with `lint --calibrate-judge` (the configuration's `judge_threshold`;
    /// turns the judge on).
    #[arg(long, value_name = "ODDS", value_parser = odds, help_heading = MODEL)]
    pub judge_threshold: Option<f64>,

    /// The provider's base URL (an OpenAI-compatible server: Ollama, vLLM, llama.cpp).
    #[arg(long, value_name = "URL", help_heading = MODEL)]
    pub llm_url: Option<String>,

    /// A directory of prompt templates (enhance.md, categorize.md) to use instead of the
    /// built-in ones.
    #[arg(long, value_name = "DIR", help_heading = MODEL)]
    pub prompts: Option<PathBuf>,

    /// How long the language model may take for one tool, retries included: `90s`, `2m` (the
    /// configuration's `llm_deadline_secs`, 60 s, by default); a request about n tools gets n
    /// times this. What is unanswered by then falls through to the rules; answers that came in
    /// time are kept.
    #[arg(long, value_name = "DURATION", value_parser = duration, help_heading = MODEL)]
    pub llm_deadline: Option<std::time::Duration>,

    /// Show what would be sent to the model, and its estimated size, without sending it.
    #[arg(long, help_heading = MODEL)]
    pub dry_run: bool,

    #[command(flatten)]
    pub cache: CacheArgs,

    #[command(flatten)]
    pub config: ConfigArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SourceTypeArg {
    Web,
    Api,
    File,
    Manual,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ClientProfileArg {
    /// MCP: 1-128 characters, letters, digits, `_`, `-` and `.` (dots allowed)
    Mcp,
    /// Clients that reject dots: 1-64 characters, letters, digits, `_` and `-`
    Strict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LlmArg {
    Anthropic,
    Openai,
    OpenaiCompatible,
    /// Do not ask a model, whatever the configuration says.
    Off,
}

/// Where the cache is and how long it keeps answers.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// The cache directory (the platform cache directory's `tool-mediator` by default). Given,
    /// it wins over a `cache_url` of the configuration or the environment.
    #[arg(long, value_name = "DIR", global = true, help_heading = CACHE)]
    pub cache_dir: Option<PathBuf>,

    /// Keep the cache on a Redis server instead, shared by every process that names it:
    /// `redis://HOST:PORT/DB`, `rediss://` for TLS (the configuration's `cache_url`, or
    /// TOOL_MEDIATOR_CACHE_URL). A password the URL lacks comes from
    /// TOOL_MEDIATOR_CACHE_PASSWORD, which keeps it off the command line; it is never printed.
    #[arg(long, value_name = "URL", global = true, conflicts_with = "cache_dir", value_parser = cache_url, help_heading = CACHE)]
    pub cache_url: Option<tool_mediator::cache::CacheUrl>,

    /// Do not read or write the cache.
    #[arg(long, global = true, help_heading = CACHE)]
    pub no_cache: bool,

    /// How long cached answers are used: `30m`, `12h`, `7d` (7 days by default).
    #[arg(long, value_name = "DURATION", value_parser = duration, global = true, help_heading = CACHE)]
    pub ttl: Option<std::time::Duration>,
}

/// Which configuration file to read.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The configuration file (TOML or JSON). Otherwise `tool-mediator.toml` or
    /// `tool-mediator.json` in the working directory, then `config.toml` or `config.json` in
    /// the user's configuration directory under `tool-mediator`.
    #[arg(long, value_name = "FILE", global = true, help_heading = CACHE)]
    pub config: Option<PathBuf>,
}

/// A live MCP server to read the tools of, instead of manifests.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// Start the MCP server given after `--` and list its tools over stdio.
    #[arg(long, requires = "command", conflicts_with = "inputs")]
    pub server: bool,

    /// The server's command and arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

/// How the proxy and the gateway mediate, and their limits.
#[derive(Debug, Args)]
pub struct MediationArgs {
    /// Fold categories of at least N tools into one category tool each (the configuration's
    /// `grouping_threshold`, 5, by default).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..), help_heading = SEEN)]
    pub disclosure: Option<u64>,

    /// List every tool; fold nothing, search nothing (`--disclosure-mode off`).
    #[arg(long, conflicts_with_all = ["disclosure", "disclosure_mode"], help_heading = SEEN)]
    pub no_disclosure: bool,

    /// What a client sees first: category tools that expand on a call (`categories`), a
    /// `search_tools` tool alone (`search`), both, or everything (`off`). The configuration's
    /// `disclosure_mode`, `both`, by default.
    #[arg(long, value_enum, value_name = "MODE", help_heading = SEEN)]
    pub disclosure_mode: Option<DisclosureModeArg>,

    /// Fewer tools than this are listed whole, whatever the mode (0: never). The
    /// configuration's `whole_below`, 20, by default.
    #[arg(long, value_name = "N", help_heading = SEEN)]
    pub whole_below: Option<usize>,

    /// Compare the server's tools with this lock file (`tool-mediator pin`): a tool whose
    /// definition changed since it was pinned is hidden until the lock is updated (or only
    /// reported, with `--on-change warn`); a new one is reported.
    #[arg(long, value_name = "FILE", help_heading = TRUST)]
    pub locked: Option<PathBuf>,

    /// What a tool changed since it was pinned gets: hidden, or only a warning.
    #[arg(long, value_enum, default_value_t = OnChange::Hide, requires = "locked", help_heading = TRUST)]
    pub on_change: OnChange,

    /// Trust on first use: pin each server's tools the first time they are listed, and hold
    /// back a tool that changed since, or is new to a server already seen, until `tool-mediator
    /// review` approves it (the configuration's `trust_on_first_use`).
    #[arg(long, help_heading = TRUST)]
    pub trust_on_first_use: bool,

    /// The pins file of trust on first use, shared by every proxy and gateway that names it (the
    /// configuration's `pins_file`, else `tool-mediator/pins.json` in the platform data
    /// directory). Naming one turns trust on first use on.
    #[arg(long, value_name = "FILE", help_heading = TRUST)]
    pub pins_file: Option<PathBuf>,

    /// Hide the tools whose text addresses the model or hides text (suspected poisoning; see
    /// `tool-mediator lint`). Without it they are listed, and a warning is logged for each.
    #[arg(long, help_heading = TRUST)]
    pub quarantine: bool,

    /// Answer a call to a tool folded into a category tool (or not found by search yet) with an
    /// error naming the category tool to call first, instead of calling it. By default such a
    /// call reaches the tool: its name shows the caller knows it.
    #[arg(long, help_heading = SEEN)]
    pub calls_follow_disclosure: bool,

    /// Tools per tools/list page; 0 answers with every tool in one page (for clients that do
    /// not follow `nextCursor`).
    #[arg(long, value_name = "N", default_value_t = 100, help_heading = SEEN)]
    pub page_size: usize,

    /// How long the server has to exit after its input closes, and again after SIGTERM.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration, help_heading = LIMITS)]
    pub grace: std::time::Duration,

    /// How long a server has to answer a request of the mediator's own (the handshake, a
    /// listing); the gateway ends a server that lets one time out, and starts it again.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration, help_heading = LIMITS)]
    pub request_timeout: std::time::Duration,

    /// The longest message either side may send (bytes, or with KiB, MiB, GiB); a longer one is
    /// skipped and its sender, when its id can be read, gets an error naming this limit.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = byte_size, help_heading = LIMITS)]
    pub max_message_size: u64,
}

/// What a client sees first of a large tool set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DisclosureModeArg {
    Off,
    Categories,
    Search,
    Both,
}

impl From<DisclosureModeArg> for tool_mediator::session::DisclosureMode {
    fn from(mode: DisclosureModeArg) -> Self {
        use tool_mediator::session::DisclosureMode;
        match mode {
            DisclosureModeArg::Off => DisclosureMode::Off,
            DisclosureModeArg::Categories => DisclosureMode::Categories,
            DisclosureModeArg::Search => DisclosureMode::Search,
            DisclosureModeArg::Both => DisclosureMode::Both,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnChange {
    Hide,
    Warn,
}

/// Serving clients over Streamable HTTP.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Serve clients over Streamable HTTP at `http://ADDRESS/mcp` instead of stdio, the client
    /// sessions sharing the servers (`127.0.0.1:8080`; bind to loopback unless others must reach
    /// it). `/healthz`, `/readyz` and `/metrics` are served beside it.
    #[arg(long, value_name = "ADDRESS", help_heading = LISTEN)]
    pub listen: Option<std::net::SocketAddr>,

    /// With `--listen`: every request must carry `Authorization: Bearer <token>`, the token
    /// read from this environment variable (which the servers do not inherit). Required to
    /// listen on an address other machines reach, unless `--oauth-issuer` or
    /// `--insecure-no-token`.
    #[arg(long, value_name = "VAR", requires = "listen", help_heading = LISTEN)]
    pub token_env: Option<String>,

    /// With `--listen` on an address other machines reach (`0.0.0.0:8080`): serve them without
    /// a token. Anyone who reaches the port can then run the servers' tools.
    #[arg(long, requires = "listen", conflicts_with_all = ["token_env", "oauth_issuer"], help_heading = LISTEN)]
    pub insecure_no_token: bool,

    /// With `--listen`: serve as an OAuth 2.1 protected resource of this authorization server
    /// (its issuer URL). Every request must carry a bearer JWT it signed for this resource
    /// (`--oauth-audience`), checked against the keys its metadata names; clients are told
    /// where to get one at `/.well-known/oauth-protected-resource`.
    #[arg(long, value_name = "URL", requires = "listen", conflicts_with = "token_env", help_heading = LISTEN)]
    pub oauth_issuer: Option<String>,

    /// With `--oauth-issuer`: this resource's identifier, the URL clients reach `/mcp` at
    /// (`https://mcp.example.com/mcp`), which a token's `aud` must name. By default
    /// `http://ADDRESS/mcp` for the address listened on, when it is not 0.0.0.0 or `[::]`.
    #[arg(long, value_name = "URL", requires = "oauth_issuer", help_heading = LISTEN)]
    pub oauth_audience: Option<String>,

    /// With `--oauth-issuer`: how far the issuer's clock may be from this one's when a token's
    /// expiry (`exp`) and start (`nbf`) are read.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration, requires = "oauth_issuer", help_heading = LISTEN)]
    pub oauth_clock_skew: std::time::Duration,

    /// With `--oauth-issuer`: the token claim (a string) that names the client's view of the
    /// servers file. Then only the token chooses: a token without it is refused, and a path or
    /// header naming another view is refused (403).
    #[arg(long, value_name = "CLAIM", requires = "oauth_issuer", help_heading = LISTEN)]
    pub view_claim: Option<String>,

    /// With `--listen`: a header that names the client's view of the servers file, as the path
    /// `/mcp/<view>` does. A convenience, not access control: any client may name any view.
    #[arg(long, value_name = "NAME", requires = "listen", help_heading = LISTEN)]
    pub view_header: Option<String>,

    /// With `--listen`: a name this machine is reached by, which a request's `Host` may give
    /// (besides `localhost` and IP addresses; others are refused, against DNS rebinding); with a
    /// port (`mcp.example.com:443`), that name and port, as a load balancer in front of it is
    /// reached by. Repeatable.
    #[arg(long = "allow-host", value_name = "NAME", requires = "listen", help_heading = LISTEN)]
    pub allow_hosts: Vec<String>,

    /// With `--listen`: how long a client has to send a request's headers, and again its body.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration, requires = "listen", help_heading = LISTEN)]
    pub read_timeout: std::time::Duration,

    /// With `--listen`: end a client session (and its servers) unused this long with no stream
    /// open.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = duration, requires = "listen", help_heading = LISTEN)]
    pub session_idle: std::time::Duration,

    /// With `--listen`: asked to stop (SIGTERM, SIGINT), how long the requests under way have
    /// to be answered before the sessions and servers are ended; no new connection is taken
    /// meanwhile.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = duration, requires = "listen", help_heading = LISTEN)]
    pub shutdown_grace: std::time::Duration,
}

/// A confidence from 0 to 1.
pub fn confidence(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.0..=1.0).contains(&value) => Ok(value),
        Ok(_) => Err("a confidence is between 0 and 1".into()),
        Err(error) => Err(error.to_string()),
    }
}

/// `1048576`, `512KiB`, `64MiB`, `1GiB` (also `KB`, `MB`, `GB` as powers of 1024, and `B`).
fn byte_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("`{text}` is not a size like 4096, 512KiB or 64MiB"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return Err(format!("unknown unit `{unit}` (use KiB, MiB or GiB)")),
    };
    number.checked_mul(scale).filter(|&size| size > 0).ok_or_else(|| format!("`{text}` is not a usable size"))
}

/// A cache server's URL, held so that `Debug` (of the parsed flags) never shows its password.
fn cache_url(text: &str) -> Result<tool_mediator::cache::CacheUrl, String> {
    Ok(tool_mediator::cache::CacheUrl::new(text))
}

/// A duration: a number and a unit (`s`, `m`, `h`, `d`).
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("`{text}` is not a duration like 30m, 12h or 7d"))?;
    let milliseconds = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" | "" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("unknown unit `{unit}` (use ms, s, m, h or d)")),
    };
    Ok(std::time::Duration::from_millis(number.saturating_mul(milliseconds)))
}

/// How to sign in to a remote server that asks (OAuth): none of it is needed where the
/// authorization server registers clients on the spot.
#[derive(Debug, Clone, Default, Args)]
pub struct SignInArgs {
    /// The client id the authorization server issued you ahead of time (no registration then).
    #[arg(long = "oauth-client-id", value_name = "ID", help_heading = REMOTE)]
    pub client_id: Option<String>,

    /// The environment variable holding that client's secret (never the secret itself).
    #[arg(long = "oauth-client-secret-env", value_name = "VAR", requires = "client_id", help_heading = REMOTE)]
    pub client_secret_env: Option<String>,

    /// The HTTPS URL of a client ID metadata document of yours, used as the client id where the
    /// authorization server takes one.
    #[arg(long = "oauth-client-metadata-url", value_name = "URL", help_heading = REMOTE)]
    pub client_metadata_url: Option<String>,

    /// Scopes to ask for besides those the server asks for, space-separated.
    #[arg(long = "oauth-scope", value_name = "SCOPES", help_heading = REMOTE)]
    pub scope: Option<String>,

    /// Get tokens with the client credentials grant (a machine without a user): needs
    /// `--oauth-client-id` and `--oauth-client-secret-env`.
    #[arg(long = "oauth-client-credentials", requires = "client_secret_env", help_heading = REMOTE)]
    pub client_credentials: bool,
}

impl SignInArgs {
    /// `base` (a servers file's `oauth`) with what these flags say over it.
    pub fn over(
        &self,
        base: tool_mediator_mcp::upstream::auth::SignInOptions,
    ) -> tool_mediator_mcp::upstream::auth::SignInOptions {
        use tool_mediator_mcp::upstream::auth::{Grant, SignInOptions};
        SignInOptions {
            client_id: self.client_id.clone().or(base.client_id),
            client_secret_env: self.client_secret_env.clone().or(base.client_secret_env),
            client_metadata_url: self.client_metadata_url.clone().or(base.client_metadata_url),
            scope: self.scope.clone().or(base.scope),
            grant: if self.client_credentials { Grant::ClientCredentials } else { base.grant },
        }
    }
}

/// A probability, 0 to 1.
fn odds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(odds) if (0.0..=1.0).contains(&odds) => Ok(odds),
        _ => Err(format!("`{text}` is not odds between 0 and 1")),
    }
}
