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
}

/// Where manifests come from.
#[derive(Debug, Args)]
pub struct InputArgs {
    /// Manifest files, directories (every .json and .jsonl file in them), or `-` for stdin.
    /// Standard input when none is given.
    #[arg(value_name = "FILES|DIRS|-")]
    pub inputs: Vec<PathBuf>,
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
}

#[derive(Debug, Args)]
pub struct EnhanceArgs {
    #[command(flatten)]
    pub input: InputArgs,

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
