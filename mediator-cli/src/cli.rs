//! The command line as typed: the root parser and the list of commands. Each command's flags
//! live beside the command, in `commands/<command>.rs`; the groups several commands share, in
//! `flags.rs`. `config.rs` turns them into checked settings.

use clap::{Parser, Subcommand};

use crate::commands::auth::AuthCommand;
use crate::commands::cache::CacheCommand;
use crate::commands::categorize::CategorizeArgs;
use crate::commands::enhance::EnhanceArgs;
use crate::commands::filter::FilterArgs;
use crate::commands::gateway::GatewayArgs;
use crate::commands::lint::LintArgs;
use crate::commands::names::NamesArgs;
use crate::commands::overrides::OverridesCommand;
use crate::commands::pin::PinArgs;
use crate::commands::proxy::ProxyArgs;
use crate::commands::review::ReviewArgs;
use crate::commands::shell::{CompletionsArgs, ManArgs};
use crate::commands::tokens::TokensArgs;
use crate::commands::wrap::{UnwrapArgs, WrapArgs};
use crate::flags::{CacheArgs, ConfigArgs};

/// Make LLM tool definitions usable: spell out cryptic names, write missing descriptions,
/// repair schemas, apply curated overrides.
#[derive(Debug, Parser)]
#[command(name = "tool-mediator", version, max_term_width = 100, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Shown after `-h` as well as `--help`: the first thing a script's author looks for.
const EXIT_CODES: &str = "\
Exit codes: 0 success; 1 a check found something (`enhance --check` a file that would change,
`--locked` a pinned tool that changed, `lint` findings at `--fail-on`, `review --check` a tool
held back), a sign-in failed, or the proxy's server exited first; 2 bad usage, bad input, or a
file that could not be read or written; 130, 143, 129 interrupted by SIGINT, SIGTERM or SIGHUP
(128 + the signal's number; a run writing files replaces all of them or none).";

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
    /// Prints {"input", "words", "expanded_words", "name", "description", "confidence", "readings"}:
    /// each reading says what a word was read as and where that came from.
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
    Proxy(Box<ProxyArgs>),
    /// Pin a manifest's tools against rug pulls: write a lock file with each tool's canonical
    /// digest, for `enhance --locked` and `proxy --locked` to compare with.
    Pin(PinArgs),
    /// Review what trust on first use holds back (`proxy` and `gateway` with
    /// `--trust-on-first-use`): each tool that changed since it was pinned, or is new to a server
    /// already seen, shown as a diff of its definition; approve or reject it.
    ///
    /// Exit codes: 0 done; 1 `--check` found a tool held back; 2 bad usage, a SERVER/TOOL not
    /// held back, or a pins file that cannot be read (nothing is written then).
    Review(ReviewArgs),
    /// What is wrong with each tool of each manifest: cryptic or invalid names, weak
    /// definitions, non-standard or invalid schemas, names strict clients reject, duplicates,
    /// and suspected poisoning (evidence that the text instructs the model to act outside the
    /// tool's job, or hides text; with `--judge`, a language model's second look at the tools the
    /// screen is unsure of).
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
    Gateway(Box<GatewayArgs>),
    /// Put tool-mediator in front of the servers an MCP client's configuration names:
    /// `tool-mediator wrap --client claude-desktop`, or `--config FILE` for any file.
    ///
    /// Each stdio server (or each SERVER named) runs through `tool-mediator proxy -- <its
    /// command>`, keeping its `env`, `cwd` and every other key; HTTP servers are left as they
    /// are. With `--gateway` the servers move into `<stem>.tool-mediator.json` (the file's name
    /// without `.json`) beside the configuration, and one `tool-mediator` entry runs the gateway
    /// over them. Only the wrapped entries' text changes: comments and formatting stay. The file
    /// is written atomically, after a copy of it is kept as `<file>.bak`; an entry that already
    /// runs tool-mediator is left alone. `tool-mediator unwrap` gives the same bytes back.
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
    /// Sign in to remote MCP servers that ask for it (OAuth), see the sign-ins kept, forget
    /// them: `tool-mediator auth login https://mcp.example.com/mcp`.
    ///
    /// The proxy and the gateway sign in by themselves when a server asks (the browser opens,
    /// or the address is written to stderr); `auth login` does it ahead of time. Tokens are kept
    /// in a file readable by you alone and never printed.
    #[command(subcommand)]
    Auth(AuthCommand),
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
