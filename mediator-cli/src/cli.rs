//! The command line as typed: clap types only. `config.rs` turns them into checked settings.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Make LLM tool definitions usable: spell out cryptic names, write missing descriptions,
/// repair schemas, apply curated overrides.
///
/// Exit codes: 0 success; 1 `--check` found a file that would change; 2 bad usage, bad input,
/// or a file that could not be read or written.
#[derive(Debug, Parser)]
#[command(name = "tool-mediator", version, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Rewrite tool manifests through the transformer chain (overrides, then rules).
    ///
    /// Reads MCP `tools/list` results, bare tool arrays, JSON-RPC responses, OpenAI function
    /// tools and Anthropic tools, and writes the same format back unless `--to` says otherwise.
    Enhance(EnhanceArgs),
    /// Keep the tools of a manifest that meet the criteria (after enhancing them).
    Filter(FilterArgs),
    /// Print a manifest's tools by category, as JSON.
    Categorize(CategorizeArgs),
    /// Show how the rules read tool names: one JSON line per name.
    ///
    /// Prints {"input", "words", "expanded_words", "name", "description", "confidence"}.
    /// Names come from the arguments, or one per line from standard input.
    Names(NamesArgs),
    /// Work with override files.
    #[command(subcommand)]
    Overrides(OverridesCommand),
    /// What the first tools/list of a manifest costs a model, per tool and in total, with and
    /// without progressive disclosure (o200k_base tokens).
    Tokens(TokensArgs),
    /// Put tool-mediator in front of an MCP server: `tool-mediator proxy [OPTIONS] -- <COMMAND>...`,
    /// or `tool-mediator proxy [OPTIONS] --url <URL>` for a remote one.
    ///
    /// Starts the server (or connects to it over Streamable HTTP) and speaks MCP over stdio to
    /// the client (or serves clients over Streamable HTTP with `--listen`): tools are listed
    /// enhanced
    /// (overrides, rules, the language model if configured), with large categories folded
    /// into category tools; calls reach the server under its own names; everything else
    /// passes through. The override source is the server's name unless `--source` is given.
    ///
    /// Exit codes: 0 the client closed the connection; 1 the server exited first; 2 bad usage,
    /// or the server could not be started.
    Proxy(ProxyArgs),
    /// Pin a manifest's tools against rug pulls: write a lock file with each tool's canonical
    /// digest, for `enhance --locked` and `proxy --locked` to compare with.
    Pin(PinArgs),
    /// What is wrong with each tool of each manifest: cryptic or invalid names, weak
    /// definitions, non-standard or invalid schemas, names strict clients reject, duplicates,
    /// and suspected poisoning (text that addresses the model, hidden text).
    ///
    /// Each finding has a stable rule id, a severity, the file and the JSON pointer. Exit codes:
    /// 0 nothing at or above `--fail-on`; 1 findings at or above it; 2 input that cannot be read.
    Lint(LintArgs),
    /// Put tool-mediator in front of many MCP servers at once:
    /// `tool-mediator gateway --config servers.json`.
    ///
    /// Reads the servers file MCP clients already use (`{"mcpServers": {NAME: {"command",
    /// "args", "env", "cwd"} | {"url", "headers"}}}`, `${VAR}` expanded in `env` and `headers`;
    /// per server `source`, `include`, `exclude`, `disabled`), starts every server (or connects
    /// to it over Streamable HTTP), and serves their tools as one mediated set over stdio (or
    /// Streamable HTTP with `--listen`). A tool name two servers share is prefixed with the
    /// server's name (every name, with `--prefix`); calls reach the server that owns the tool.
    /// Resources and prompts are merged the same way. A server that stops is started again
    /// with backoff; its tools leave the list meanwhile.
    ///
    /// `--config FILE` names the servers file when it holds `mcpServers` (the mediator's own
    /// configuration is then found as usual); otherwise give the servers with `--servers`.
    ///
    /// Exit codes: 0 the client closed the connection; 2 bad usage or a bad servers file.
    Gateway(GatewayArgs),
    /// Put tool-mediator in front of the servers an MCP client's configuration names:
    /// `tool-mediator wrap --client claude-desktop`, or `--config FILE` for any file.
    ///
    /// Each stdio server (or each SERVER named) runs through `tool-mediator proxy -- <its
    /// command>`, keeping its `env`, `cwd` and every other key; HTTP servers are left as they
    /// are. With `--gateway` the servers move into `<file>.tool-mediator.json` beside the
    /// configuration, and one `tool-mediator` entry runs the gateway over them. Only the wrapped
    /// entries' text changes: comments and formatting stay. The file is written atomically,
    /// after a copy of it is kept as `<file>.bak`; an entry that already runs tool-mediator is
    /// left alone. `tool-mediator unwrap` gives the same bytes back.
    ///
    /// Exit codes: 0 done (or nothing to do); 2 bad usage, a file that cannot be read or
    /// parsed, a SERVER the file does not name. Nothing is written then.
    Wrap(WrapArgs),
    /// Take tool-mediator out of a client's configuration again: what `wrap` changed goes back
    /// to its bytes, a gateway's servers back into the file (and the gateway's files are
    /// removed). Keeps a copy of the file as `<file>.bak` first.
    ///
    /// Exit codes: as `wrap`.
    Unwrap(UnwrapArgs),
    /// Print the effective configuration (keys masked) as TOML.
    Config {
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Look after the answer cache.
    Cache {
        #[command(subcommand)]
        action: CacheCommand,
        #[command(flatten)]
        cache: CacheArgs,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Print a shell completion script, generated from these very definitions.
    ///
    /// Save it where the shell looks for completions:
    ///
    /// bash: `tool-mediator completions bash > ~/.local/share/bash-completion/completions/tool-mediator`
    ///
    /// zsh: `tool-mediator completions zsh > ~/.zfunc/_tool-mediator`, with `fpath+=~/.zfunc` before
    /// `compinit` in ~/.zshrc
    ///
    /// fish: `tool-mediator completions fish > ~/.config/fish/completions/tool-mediator.fish`
    ///
    /// PowerShell: `tool-mediator completions powershell >> $PROFILE`
    Completions(CompletionsArgs),
    /// Print the manual page, or write one page per command with `--out DIR`.
    ///
    /// `tool-mediator man --out ~/.local/share/man/man1` installs them for `man tool-mediator`,
    /// `man tool-mediator-enhance`, ...
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `tool-mediator.1` and one page per subcommand (`tool-mediator-enhance.1`, ...) into
    /// this directory, created if missing, and print their paths; the root page goes to
    /// standard output otherwise.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Where manifests come from.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Manifest files, directories (every .json and .jsonl file in them), or `-` for stdin.
    /// Standard input when none is given.
    #[arg(value_name = "FILES|DIRS|-")]
    pub inputs: Vec<PathBuf>,

    /// The largest manifest read, file or standard input (bytes, or with KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "1GiB", value_parser = byte_size)]
    pub max_input_size: u64,
}

/// How the chain is built.
#[derive(Debug, Args)]
pub struct ChainArgs {
    /// The source the tools come from (a domain, an MCP server name); chooses the override
    /// file. Defaults to the manifest's file name without extension.
    #[arg(long)]
    pub source: Option<String>,

    /// What kind of source it is.
    #[arg(long, value_enum, default_value_t = SourceTypeArg::File)]
    pub source_type: SourceTypeArg,

    /// A directory of override files; repeat to add more (later ones refine earlier ones).
    #[arg(long = "overrides", value_name = "DIR")]
    pub overrides: Vec<PathBuf>,

    /// Do not run the rule-based transformer.
    #[arg(long)]
    pub no_rules: bool,

    /// An abbreviation dictionary to add to the built-in one; repeatable.
    #[arg(long = "dictionary", value_name = "FILE")]
    pub dictionaries: Vec<PathBuf>,

    /// The tool names the consuming client accepts. Default: `mcp` for MCP output, `strict`
    /// for OpenAI and Anthropic output (their APIs reject dots and names over 64 characters).
    #[arg(long, value_enum)]
    pub client_profile: Option<ClientProfileArg>,

    /// Ask a language model about the tools the rules could not improve with confidence.
    /// Keys come from ANTHROPIC_API_KEY / OPENAI_API_KEY or the configuration.
    #[arg(long, value_enum)]
    pub llm: Option<LlmArg>,

    /// The model to ask (a provider default otherwise).
    #[arg(long)]
    pub model: Option<String>,

    /// The provider's base URL (an OpenAI-compatible server: Ollama, vLLM, llama.cpp).
    #[arg(long, value_name = "URL")]
    pub llm_url: Option<String>,

    /// A directory of prompt templates (enhance.md, categorize.md) to use instead of the
    /// built-in ones.
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,

    /// How long the language model may take in all, retries included: `90s`, `2m` (the
    /// configuration's `llm_deadline_secs`, 60 s, by default). What is unanswered by then
    /// falls through to the rules; answers that came in time are kept.
    #[arg(long, value_name = "DURATION", value_parser = duration)]
    pub llm_deadline: Option<std::time::Duration>,

    /// Show what would be sent to the model, and its estimated size, without sending it.
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub cache: CacheArgs,

    #[command(flatten)]
    pub config: ConfigArgs,
}

/// Where the cache is and how long it keeps answers.
#[derive(Debug, Args)]
pub struct CacheArgs {
    /// The cache directory (the platform cache directory's `tool-mediator` by default).
    #[arg(long, value_name = "DIR", global = true)]
    pub cache_dir: Option<PathBuf>,

    /// Do not read or write the cache.
    #[arg(long, global = true)]
    pub no_cache: bool,

    /// How long cached answers are used: `30m`, `12h`, `7d` (7 days by default).
    #[arg(long, value_name = "DURATION", value_parser = duration, global = true)]
    pub ttl: Option<std::time::Duration>,
}

/// Which configuration file to read.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The configuration file (TOML or JSON). Otherwise `tool-mediator.toml` or
    /// `tool-mediator.json` in the working directory, then `config.toml` or `config.json` in
    /// the user's configuration directory under `tool-mediator`.
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
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
pub enum LlmArg {
    Anthropic,
    Openai,
    OpenaiCompatible,
    /// Do not ask a model, whatever the configuration says.
    Off,
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Entries, bytes, and how many have expired.
    Stats,
    /// Remove expired entries.
    Prune,
    /// Remove every entry.
    Clear,
}

#[derive(Debug, Args)]
pub struct ProxyArgs {
    #[command(flatten)]
    pub chain: ChainArgs,

    #[command(flatten)]
    pub mediation: MediationArgs,

    /// A remote MCP server's Streamable HTTP endpoint, instead of a command to start.
    #[arg(long, value_name = "URL", value_parser = http_url, conflicts_with = "command", required_unless_present = "command")]
    pub url: Option<reqwest::Url>,

    /// A header for every request to the remote server (`--header "Authorization: Bearer $T"`).
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = header, requires = "url")]
    pub headers: Vec<(String, String)>,

    #[command(flatten)]
    pub listen: ListenArgs,

    /// The MCP server's command and its arguments: everything from the first word that is not
    /// an option of the proxy's (or everything after `--`).
    #[arg(trailing_var_arg = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

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

#[derive(Debug, Args)]
pub struct LintArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub server: ServerArgs,

    /// How to write the findings: text, JSON, or SARIF 2.1.0 (what code-scanning services read).
    #[arg(long, value_enum, default_value_t = LintFormat::Text)]
    pub format: LintFormat,

    /// Exit 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnChange {
    Hide,
    Warn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    Text,
    Json,
    Sarif,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Note,
    Warning,
    Error,
    Never,
}

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

#[derive(Debug, Args)]
pub struct WrapArgs {
    #[command(flatten)]
    pub file: ClientFileArgs,

    /// Move the servers into one gateway (`tool-mediator gateway --config <file>.tool-mediator.json`)
    /// instead of a proxy each; HTTP servers move too.
    #[arg(long)]
    pub gateway: bool,

    /// The mediator as the client should start it: `tool-mediator`, found on the PATH the
    /// client starts servers with, or a full path (Claude Desktop on macOS starts them with a
    /// short PATH).
    #[arg(long, value_name = "PATH", default_value = "tool-mediator")]
    pub mediator: String,
}

#[derive(Debug, Args)]
pub struct UnwrapArgs {
    #[command(flatten)]
    pub file: ClientFileArgs,
}

/// Which client configuration `wrap` and `unwrap` change, and which of its servers.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("file").required(true).args(["client", "config"])))]
pub struct ClientFileArgs {
    /// The client whose configuration to change (its file in the working directory for the
    /// clients that have one per project: claude-code, cursor, vscode; see `--scope`).
    #[arg(long, value_enum)]
    pub client: Option<ClientArg>,

    /// With `--client`: the project's file or the user's (the project's by default where the
    /// client has one).
    #[arg(long, value_enum, conflicts_with = "config")]
    pub scope: Option<ScopeArg>,

    /// Any configuration file with `mcpServers` (or VS Code's `servers`).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Print a diff of what would change, and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// The servers to change, by name; every one when none is named.
    #[arg(value_name = "SERVER")]
    pub servers: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClientArg {
    /// Claude Desktop: claude_desktop_config.json in ~/Library/Application Support/Claude
    /// (macOS) or ~/.config/Claude (Linux).
    ClaudeDesktop,
    /// Claude Code: .mcp.json in the project; ~/.claude.json with `--scope user`.
    ClaudeCode,
    /// Cursor: .cursor/mcp.json in the project; ~/.cursor/mcp.json with `--scope user`.
    Cursor,
    /// VS Code: .vscode/mcp.json in the workspace; the user profile's mcp.json with `--scope user`.
    Vscode,
    /// Windsurf: ~/.codeium/windsurf/mcp_config.json.
    Windsurf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScopeArg {
    Project,
    User,
}

/// How the proxy and the gateway mediate, and their limits.
#[derive(Debug, Args)]
pub struct MediationArgs {
    /// Fold categories of at least N tools into one category tool each (the configuration's
    /// `grouping_threshold`, 5, by default).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub disclosure: Option<u64>,

    /// List every tool; fold nothing, search nothing (`--disclosure-mode off`).
    #[arg(long, conflicts_with_all = ["disclosure", "disclosure_mode"])]
    pub no_disclosure: bool,

    /// What a client sees first: category tools that expand on a call (`categories`), a
    /// `search_tools` tool alone (`search`), both, or everything (`off`). The configuration's
    /// `disclosure_mode`, `both`, by default.
    #[arg(long, value_enum, value_name = "MODE")]
    pub disclosure_mode: Option<DisclosureModeArg>,

    /// Fewer tools than this are listed whole, whatever the mode (0: never). The
    /// configuration's `whole_below`, 20, by default.
    #[arg(long, value_name = "N")]
    pub whole_below: Option<usize>,

    /// Compare the server's tools with this lock file (`tool-mediator pin`): a tool whose
    /// definition changed since it was pinned is hidden until the lock is updated (or only
    /// reported, with `--on-change warn`); a new one is reported.
    #[arg(long, value_name = "FILE")]
    pub locked: Option<PathBuf>,

    /// What a tool changed since it was pinned gets: hidden, or only a warning.
    #[arg(long, value_enum, default_value_t = OnChange::Hide, requires = "locked")]
    pub on_change: OnChange,

    /// Hide the tools whose text addresses the model or hides text (suspected poisoning; see
    /// `tool-mediator lint`). Without it they are listed, and a warning is logged for each.
    #[arg(long)]
    pub quarantine: bool,

    /// Tools per tools/list page; 0 answers with every tool in one page (for clients that do
    /// not follow `nextCursor`).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub page_size: usize,

    /// How long the server has to exit after its input closes, and again after SIGTERM.
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = duration)]
    pub grace: std::time::Duration,

    /// How long a server has to answer a request of the mediator's own (the handshake, a
    /// listing); the gateway ends a server that lets one time out, and starts it again.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = duration)]
    pub request_timeout: std::time::Duration,

    /// The longest message either side may send (bytes, or with KiB, MiB, GiB); a longer one is
    /// skipped and its sender, when its id can be read, gets an error naming this limit.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = byte_size)]
    pub max_message_size: u64,
}

/// Serving clients over Streamable HTTP.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// Serve clients over Streamable HTTP at `http://ADDRESS/mcp` instead of stdio, each client
    /// session with servers of its own (`127.0.0.1:8080`; bind to loopback unless others must
    /// reach it).
    #[arg(long, value_name = "ADDRESS")]
    pub listen: Option<std::net::SocketAddr>,

    /// With `--listen`: every request must carry `Authorization: Bearer <token>`, the token
    /// read from this environment variable (which the servers do not inherit). Required to
    /// listen on an address other machines reach, unless `--insecure-no-token`.
    #[arg(long, value_name = "VAR", requires = "listen")]
    pub token_env: Option<String>,

    /// With `--listen` on an address other machines reach (`0.0.0.0:8080`): serve them without
    /// a token. Anyone who reaches the port can then run the servers' tools.
    #[arg(long, requires = "listen", conflicts_with = "token_env")]
    pub insecure_no_token: bool,

    /// With `--listen`: a name this machine is reached by, which a request's `Host` may give
    /// (besides `localhost` and IP addresses; others are refused, against DNS rebinding).
    /// Repeatable.
    #[arg(long = "allow-host", value_name = "NAME", requires = "listen")]
    pub allow_hosts: Vec<String>,

    /// With `--listen`: how long a client has to send a request's headers, and again its body.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = duration, requires = "listen")]
    pub read_timeout: std::time::Duration,

    /// With `--listen`: end a client session (and its servers) unused this long with no stream
    /// open.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = duration, requires = "listen")]
    pub session_idle: std::time::Duration,
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

#[derive(Debug, Args)]
pub struct EnhanceArgs {
    #[command(flatten)]
    pub input: InputArgs,

    /// Compare the tools with this lock file (`tool-mediator pin`): a tool whose definition
    /// changed since it was pinned is reported, and nothing is written (exit 1).
    #[arg(long, value_name = "FILE")]
    pub locked: Option<PathBuf>,

    #[command(flatten)]
    pub chain: ChainArgs,

    /// Never use a transformer's answer less confident than this (0 to 1); such a tool is
    /// left as it came.
    #[arg(long, value_name = "CONFIDENCE", default_value_t = 0.0, value_parser = confidence)]
    pub min_confidence: f64,

    /// Write here: a file for one input, a directory for several.
    #[arg(short, long, value_name = "PATH", conflicts_with = "in_place")]
    pub output: Option<PathBuf>,

    /// Rewrite each input file in place (atomically).
    #[arg(long)]
    pub in_place: bool,

    /// The format to write; the input's own by default.
    #[arg(long, value_enum)]
    pub to: Option<FormatArg>,

    /// Do not record provenance under `_meta` in MCP output.
    #[arg(long)]
    pub no_provenance: bool,

    /// Print what changed and by which transformer, and everything refused, on stderr.
    #[arg(long)]
    pub report: bool,

    /// Write nothing; exit 1 and print a diff when a file would change. For CI.
    #[arg(long, conflicts_with_all = ["output", "in_place", "diff"])]
    pub check: bool,

    /// Write nothing; print a diff of what would change.
    #[arg(long, conflicts_with_all = ["output", "in_place"])]
    pub diff: bool,
}

#[derive(Debug, Args)]
pub struct FilterArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub chain: ChainArgs,

    /// Keep tools in this category; repeatable. Tools without one are `uncategorized`.
    #[arg(long = "category", value_name = "CATEGORY")]
    pub categories: Vec<String>,

    /// Keep tools enhanced with at least this confidence (0 to 1). 0 is a real threshold:
    /// it keeps every tool, unenhanced ones (confidence 0) included.
    #[arg(long, value_name = "CONFIDENCE", value_parser = confidence)]
    pub min_confidence: Option<f64>,

    /// Keep tools whose name matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub name_pattern: Option<String>,

    /// Keep only this tool (exposed or original name); repeatable.
    #[arg(long = "include", value_name = "NAME")]
    pub include: Vec<String>,

    /// Drop this tool (exposed or original name); repeatable.
    #[arg(long = "exclude", value_name = "NAME")]
    pub exclude: Vec<String>,

    /// Keep tools an override hid.
    #[arg(long)]
    pub include_hidden: bool,

    /// Write here instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CategorizeArgs {
    #[command(flatten)]
    pub input: InputArgs,

    #[command(flatten)]
    pub chain: ChainArgs,
}

#[derive(Debug, Args)]
pub struct TokensArgs {
    /// The manifest (or `-` for standard input).
    pub manifest: PathBuf,

    #[command(flatten)]
    pub chain: ChainArgs,

    /// List the tokens per tool of the listing in `--mode` rather than the full one.
    #[arg(long)]
    pub disclose: bool,

    /// The mode `--disclose` lists, and whose saving the summary names; every mode is counted.
    /// The configuration's `disclosure_mode`, `both`, by default.
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<DisclosureModeArg>,

    /// Fold categories of at least this many tools (the configuration's `grouping_threshold`,
    /// 5, by default).
    #[arg(long, value_name = "N")]
    pub threshold: Option<usize>,

    /// Fewer tools than this are listed whole, whatever the mode (0: never). The
    /// configuration's `whole_below`, 20, by default.
    #[arg(long, value_name = "N")]
    pub whole_below: Option<usize>,

    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct NamesArgs {
    /// Tool names; one per line from standard input when none is given.
    pub names: Vec<String>,

    /// An abbreviation dictionary to add to the built-in one; repeatable.
    #[arg(long = "dictionary", value_name = "FILE")]
    pub dictionaries: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum OverridesCommand {
    /// Check every override file in a directory: schema, names, rename collisions, schemas.
    Lint {
        /// The directory of override files.
        #[arg(default_value = "overrides")]
        dir: PathBuf,

        /// The tool names the consuming client accepts.
        #[arg(long, value_enum, default_value_t = ClientProfileArg::Mcp)]
        client_profile: ClientProfileArg,
    },
    /// Scaffold an override file from a manifest, pre-filled with what the rules would do.
    New {
        /// The source the file is for (a domain, an MCP server name).
        #[arg(long)]
        source: String,

        /// The manifest to read the tools from.
        manifest: PathBuf,

        /// Write here instead of standard output; never overwrites an existing file.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
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
    /// MCP: 1-128 characters of A-Za-z0-9_-.
    Mcp,
    /// Clients that reject dots: 1-64 characters of A-Za-z0-9_-
    Strict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// MCP tools (`inputSchema`).
    Mcp,
    /// OpenAI function tools (`{"type": "function", "function": {...}}`).
    Openai,
    /// Anthropic tools (`input_schema`).
    Anthropic,
}

/// A confidence from 0 to 1.
fn confidence(text: &str) -> Result<f64, String> {
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

/// A duration: a number and a unit (`s`, `m`, `h`, `d`).
fn duration(text: &str) -> Result<std::time::Duration, String> {
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
