//! Checked settings built from the configuration file and the command line (flags win):
//! everything the commands need, loaded and validated before any file is written.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use tool_mediator::llm::{LlmTransformer, Progress, Provider, Task};
use tool_mediator::{ChainOptions, Mediator, MediatorConfig, NameRules, SourceType, ToolContext, Transformers};

use crate::flags::{CacheArgs, ChainArgs, ClientProfileArg, ConfigArgs, LlmArg, SourceTypeArg};
use crate::manifest::{Dialect, Manifest, Origin};

/// Reads the configuration file: `--config`, else the one [`MediatorConfig::discover`] finds,
/// else the defaults. Returns the file it read.
pub fn load(args: &ConfigArgs) -> Result<(MediatorConfig, Option<PathBuf>)> {
    let (mut config, file) = match &args.config {
        Some(path) => (MediatorConfig::from_file(path)?, Some(path.clone())),
        None => MediatorConfig::discover()?,
    };
    config.apply_environment();
    Ok((config, file))
}

/// The configuration with the command line's flags applied.
pub fn effective(chain: &ChainArgs) -> Result<(MediatorConfig, Option<PathBuf>)> {
    let (mut config, file) = load(&chain.config)?;
    config.choose_llm(chain.llm.map(|choice| match choice {
        LlmArg::Off => None,
        provider => Some(provider_of(provider)),
    }));
    if chain.model.is_some() {
        config.model.clone_from(&chain.model);
    }
    if chain.llm_url.is_some() {
        config.llm_url.clone_from(&chain.llm_url);
    }
    if let Some(deadline) = chain.llm_deadline {
        config.llm_deadline_secs = deadline.as_secs();
    }
    if chain.judge_threshold.is_some() {
        config.judge_threshold = chain.judge_threshold;
    }
    apply_cache_flags(&mut config, &chain.cache);
    config.override_dirs.extend(chain.overrides.iter().cloned());
    if chain.no_builtin_overrides {
        config.builtin_overrides = false;
    }
    Ok((config, file))
}

pub fn apply_cache_flags(config: &mut MediatorConfig, cache: &CacheArgs) {
    if cache.cache_dir.is_some() {
        config.cache_dir.clone_from(&cache.cache_dir);
        config.cache_url = None;
    }
    if cache.cache_url.is_some() {
        config.cache_url.clone_from(&cache.cache_url);
    }
    if let Some(ttl) = cache.ttl {
        config.cache_ttl_hours = ttl.as_secs().div_ceil(3600).max(1);
    }
}

fn provider_of(arg: LlmArg) -> Provider {
    match arg {
        LlmArg::Anthropic => Provider::Anthropic,
        LlmArg::Openai => Provider::OpenAi,
        LlmArg::OpenaiCompatible | LlmArg::Off => Provider::OpenAiCompatible,
    }
}

/// What a command's tools go through and where they come from: the transformers the settings
/// and flags name, built by the library ([`MediatorConfig::build`]), and a progress display.
pub struct Setup {
    /// The settings in effect: the configuration file with the flags applied.
    pub settings: MediatorConfig,
    source: Option<String>,
    source_type: SourceType,
    transformers: Transformers,
    names: Option<NameRules>,
    progress: indicatif::ProgressBar,
}

impl Setup {
    /// The setup a command asks for; `task` is what the language model is asked to do. The
    /// model is waited for: what it answers is in the command's output.
    pub async fn from_args(args: &ChainArgs, task: Task) -> Result<Setup> {
        Setup::made(args, task, false).await
    }

    /// The setup of a front door that runs for long (the proxy, the gateway): its clients are
    /// shown the tools without waiting for the language model, which is asked in the background
    /// (unless the settings' `llm_in_background` is off), and told when its answers change them.
    pub async fn serving(args: &ChainArgs) -> Result<Setup> {
        Setup::made(args, Task::Enhance, true).await
    }

    async fn made(args: &ChainArgs, task: Task, llm_in_background: bool) -> Result<Setup> {
        let (config, _) = effective(args)?;
        // Drawn on stderr, and only when stderr is a terminal: the tools answered of those asked
        // about, and the time left at the pace so far.
        let progress = indicatif::ProgressBar::new(0);
        if let Some(provider) = config.llm_provider {
            progress.set_style(
                indicatif::ProgressStyle::with_template(
                    "{spinner} asking {msg}: {pos}/{len} tools answered, {elapsed} so far, about {eta} left",
                )
                .expect("a valid template"),
            );
            let model = config.model.clone().unwrap_or_else(|| provider.default_model().to_owned());
            progress.set_message(format!("{provider} {model}"));
        }
        let bar = progress.clone();
        let options = ChainOptions {
            rules: !args.no_rules,
            dictionaries: args.dictionaries.clone(),
            prompts: args.prompts.clone(),
            task,
            dry_run: args.dry_run,
            llm_required: args.llm.is_some(),
            cache: !args.cache.no_cache,
            ttl: args.cache.ttl,
            on_progress: Some(Arc::new(move |step| match step {
                Progress::Asking(tools) => bar.inc_length(tools as u64),
                Progress::Answered(tools) => bar.inc(tools as u64),
            })),
            judge: args.judge,
            llm_in_background,
        };
        Ok(Setup {
            source: args.source.clone(),
            source_type: source_type(args.source_type),
            transformers: config.build(&options).await?,
            settings: config,
            names: args.client_profile.map(name_rules),
            progress,
        })
    }

    /// The chain for output in `dialect`: names follow `--client-profile`, else what the
    /// dialect's consumers accept.
    pub fn mediator(&self, min_confidence: f64, dialect: Dialect) -> Mediator {
        let names = self.names.unwrap_or(if dialect == Dialect::Mcp { NameRules::MCP } else { NameRules::STRICT });
        self.transformers.mediator(names, min_confidence)
    }

    /// The embedding model search ranks by, when one is set.
    pub fn embedder(&self) -> Option<std::sync::Arc<tool_mediator::search::meaning::Embedder>> {
        self.transformers.embedder()
    }

    /// The cache the language model's answers are kept in, when there is one.
    pub fn cache(&self) -> Option<&std::sync::Arc<tool_mediator::cache::Cache>> {
        self.transformers.cache()
    }

    /// Reads the override directories again whenever they change, for a front door that runs
    /// for long (the proxy, the gateway): its sessions take their servers' tools in again.
    pub fn follow_overrides(&self) {
        self.transformers.follow_overrides();
    }

    /// The judge of the tools the poisoning screen is unsure of (`--judge` with a language
    /// model).
    pub fn judge(&self) -> Option<&tool_mediator::llm::Judge> {
        self.transformers.judge().map(|judge| &**judge)
    }

    /// The chain's language model, when there is one.
    pub fn llm(&self) -> Option<&LlmTransformer> {
        self.transformers.llm()
    }

    /// Ends the progress display; the LLM transformer, for its usage figures.
    pub fn finish(&self) -> Option<&LlmTransformer> {
        self.progress.finish_and_clear();
        self.transformers.llm()
    }

    /// The context for a manifest: `--source`, else the server a `tools/list` result names,
    /// else the file's name without extension.
    pub fn context(&self, manifest: &Manifest) -> ToolContext {
        ToolContext::new(self.source_of(manifest).0, self.source_type)
    }

    /// A manifest's override source, and where it was taken from.
    fn source_of(&self, manifest: &Manifest) -> (String, &'static str) {
        if let Some(source) = &self.source {
            return (source.clone(), "--source");
        }
        match (manifest.server_name(), &manifest.origin) {
            (Some(name), _) => (name.to_owned(), "the server's name in the file"),
            (None, Origin::File(_)) => (manifest.origin.default_source(), "the file's name"),
            (None, Origin::Stdin) => (manifest.origin.default_source(), "standard input's default"),
        }
    }

    /// When no override file is for the manifest's source: a hint naming the sources there are
    /// override files for, and `--source`. Nothing when there are no overrides at all.
    pub fn unmatched_source_hint(&self, manifest: &Manifest) -> Option<String> {
        let overrides = self.transformers.overrides()?;
        let (source, from) = self.source_of(manifest);
        if overrides.for_source(&source).is_some() {
            return None;
        }
        let sources = overrides.sources();
        const SHOWN: usize = 8;
        let mut listed: Vec<String> = sources.iter().take(SHOWN).map(|source| format!("`{source}`")).collect();
        if sources.len() > SHOWN {
            listed.push(format!("{} more", sources.len() - SHOWN));
        }
        // `fetch.json` saved from mcp-server-fetch is most likely for `mcp-fetch`.
        let wanted = source.to_ascii_lowercase();
        let near = (wanted.len() >= 3)
            .then(|| sources.iter().find(|known| known.contains(wanted.as_str()) || wanted.contains(known.as_str())))
            .flatten()
            .map(|known| format!(" (`--source {known}`?)"))
            .unwrap_or_default();
        Some(format!(
            "hint: {}: no override file is for source `{source}` (taken from {from}); there are override files \
             for {}: choose one with --source{near}",
            manifest.origin,
            list(&listed)
        ))
    }
}

/// `a`, `a and b`, `a, b and c`.
fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

pub fn name_rules(profile: ClientProfileArg) -> NameRules {
    match profile {
        ClientProfileArg::Mcp => NameRules::MCP,
        ClientProfileArg::Strict => NameRules::STRICT,
    }
}

fn source_type(arg: SourceTypeArg) -> SourceType {
    match arg {
        SourceTypeArg::Web => SourceType::Web,
        SourceTypeArg::Api => SourceType::Api,
        SourceTypeArg::File => SourceType::File,
        SourceTypeArg::Manual => SourceType::Manual,
    }
}
