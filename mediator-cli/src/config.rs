//! Checked settings built from the configuration file and the command line (flags win):
//! everything the commands need, loaded and validated before any file is written.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result, bail};
use tool_mediator::cache::{Cache, CachedTransformer, SledStore};
use tool_mediator::llm::{LlmClient, LlmTransformer, Prompts, Provider, Task};
use tool_mediator::remote::{self, RemoteState};
use tool_mediator::{
    Dictionary, Mediator, MediatorConfig, NameRules, OverrideSet, OverrideTransformer, RuleTransformer, SourceType,
    ToolContext,
};

use crate::cli::{CacheArgs, ChainArgs, ClientProfileArg, ConfigArgs, LlmArg, SourceTypeArg};
use crate::manifest::{Dialect, Origin};

/// Reads the configuration file: `--config`, else the working directory's
/// `tool-mediator.toml`/`.json`, else the user's `tool-mediator/config.toml`/`.json`, else the
/// defaults. Returns the file it read.
pub fn load(args: &ConfigArgs) -> Result<(MediatorConfig, Option<PathBuf>)> {
    let candidates: Vec<PathBuf> = match &args.config {
        Some(path) => {
            if !path.is_file() {
                bail!("{}: no such configuration file", path.display());
            }
            vec![path.clone()]
        }
        None => {
            let mut candidates = vec![PathBuf::from("tool-mediator.toml"), PathBuf::from("tool-mediator.json")];
            if let Some(dir) = dirs::config_dir() {
                candidates.push(dir.join("tool-mediator/config.toml"));
                candidates.push(dir.join("tool-mediator/config.json"));
            }
            candidates
        }
    };
    for path in candidates {
        if path.is_file() {
            return Ok((parse(&path)?, Some(path)));
        }
    }
    Ok((MediatorConfig::default(), None))
}

fn parse(path: &Path) -> Result<MediatorConfig> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    if path.extension().is_some_and(|ext| ext == "json") {
        return tool_mediator::json::from_str_as(&text)
            .map_err(|error| anyhow::anyhow!("{}:{}:{}: {error}", path.display(), error.line(), error.column()));
    }
    toml::from_str(&text).map_err(|error| {
        let (line, column) = error.span().map_or((1, 1), |span| line_column(&text, span.start));
        anyhow::anyhow!("{}:{line}:{column}: {}", path.display(), error.message())
    })
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |newline| newline + 1) + 1;
    (line, column)
}

/// The configuration with the command line's flags applied.
pub fn effective(chain: &ChainArgs) -> Result<(MediatorConfig, Option<PathBuf>)> {
    let (mut config, file) = load(&chain.config)?;
    match chain.llm {
        Some(LlmArg::Off) => config.llm_provider = None,
        Some(provider) => {
            let provider = provider_of(provider);
            // A key the file holds for one provider is never sent to another.
            if config.llm_provider != Some(provider) {
                config.api_key = None;
                config.api_key_env = None;
            }
            config.llm_provider = Some(provider);
            config.auto_enhance = true;
        }
        None if !config.auto_enhance => config.llm_provider = None,
        None => {}
    }
    if chain.model.is_some() {
        config.model.clone_from(&chain.model);
    }
    if chain.llm_url.is_some() {
        config.llm_url.clone_from(&chain.llm_url);
    }
    if let Some(deadline) = chain.llm_deadline {
        config.llm_deadline_secs = deadline.as_secs();
    }
    apply_cache_flags(&mut config, &chain.cache);
    config.override_dirs.extend(chain.overrides.iter().cloned());
    Ok((config, file))
}

pub fn apply_cache_flags(config: &mut MediatorConfig, cache: &CacheArgs) {
    if cache.cache_dir.is_some() {
        config.cache_dir.clone_from(&cache.cache_dir);
    }
    if let Some(ttl) = cache.ttl {
        config.cache_ttl_hours = ttl.as_secs().div_ceil(3600).max(1);
    }
}

/// The cache directory in use.
pub fn cache_dir(config: &MediatorConfig) -> Option<PathBuf> {
    config.cache_dir.clone().or_else(|| dirs::cache_dir().map(|dir| dir.join("tool-mediator")))
}

/// Opens the cache, or goes on without it with a warning that says which directory and why.
pub fn open_cache(config: &MediatorConfig, ttl: std::time::Duration) -> Option<Arc<Cache>> {
    let dir = cache_dir(config)?;
    match SledStore::open(&dir) {
        Ok(store) => Some(Arc::new(Cache::new(store, ttl))),
        Err(error) => {
            tracing::warn!("{error}");
            None
        }
    }
}

fn provider_of(arg: LlmArg) -> Provider {
    match arg {
        LlmArg::Anthropic => Provider::Anthropic,
        LlmArg::Openai => Provider::OpenAi,
        LlmArg::OpenaiCompatible | LlmArg::Off => Provider::OpenAiCompatible,
    }
}

/// The transformer chain and where tools come from.
pub struct Chain {
    source: Option<String>,
    source_type: SourceType,
    overrides: Option<OverrideSet>,
    rules: Option<RuleTransformer>,
    llm: Option<Arc<LlmTransformer>>,
    cache: Option<Arc<Cache>>,
    names: Option<NameRules>,
    progress: indicatif::ProgressBar,
}

impl Chain {
    /// The chain a command asks for; `task` is what the language model is asked to do.
    pub async fn from_args(args: &ChainArgs, task: Task) -> Result<Chain> {
        let (config, _) = effective(args)?;
        let ttl = args.cache.ttl.unwrap_or_else(|| config.ttl());
        let wants_cache = !args.cache.no_cache && (config.llm_provider.is_some() || config.overrides_url.is_some());
        let cache = if wants_cache { open_cache(&config, ttl) } else { None };

        let mut overrides = OverrideSet::new();
        for dir in &config.override_dirs {
            overrides.load_dir(dir)?;
        }
        if let Some(url) = &config.overrides_url {
            let fetched = remote::fetch(url, cache.as_deref(), &remote::http_client()).await;
            if let Some(warning) = &fetched.warning {
                tracing::warn!("{warning}");
            }
            if fetched.state != RemoteState::Unavailable {
                // Local directories refine the community's collection.
                let mut merged = OverrideSet::new();
                for file in fetched.files {
                    merged.add(file, PathBuf::from(url));
                }
                for dir in &config.override_dirs {
                    merged.load_dir(dir)?;
                }
                overrides = merged;
            }
        }
        let overrides = (!overrides.is_empty()).then_some(overrides);

        let rules =
            if args.no_rules { None } else { Some(RuleTransformer::with_dictionary(dictionary(&args.dictionaries)?)) };
        // Drawn on stderr, and only when stderr is a terminal.
        let progress = indicatif::ProgressBar::new_spinner();
        let llm = match config.llm_provider {
            None => None,
            // Configured but not asked for, with no key: a warning, not a failed run.
            Some(provider) if args.llm.is_none() && needs_key(&config, provider, args) => {
                tracing::warn!("{}; going on without the language model", missing_key(&config, provider));
                None
            }
            Some(provider) => {
                let bar = progress.clone();
                bar.set_style(
                    indicatif::ProgressStyle::with_template("{spinner} asking {msg}: {pos} tools answered")
                        .expect("a valid template"),
                );
                bar.set_message(provider.to_string());
                Some(Arc::new(llm(&config, provider, args)?.task(task).on_progress(move |tools| bar.inc(tools as u64))))
            }
        };
        Ok(Chain {
            source: args.source.clone(),
            source_type: source_type(args.source_type),
            overrides,
            rules,
            llm,
            cache,
            names: args.client_profile.map(name_rules),
            progress,
        })
    }

    /// The chain for output in `dialect`: names follow `--client-profile`, else what the
    /// dialect's consumers accept.
    pub fn mediator(&self, min_confidence: f64, dialect: Dialect) -> Mediator {
        let names = self.names.unwrap_or(if dialect == Dialect::Mcp { NameRules::MCP } else { NameRules::STRICT });
        let mut builder = Mediator::builder().name_rules(names).min_confidence(min_confidence);
        if let Some(overrides) = &self.overrides {
            builder = builder.transformer(OverrideTransformer::new(overrides.clone()));
        }
        if let Some(rules) = &self.rules {
            builder = builder.transformer(rules.clone());
        }
        match (&self.llm, &self.cache) {
            (Some(llm), Some(cache)) => {
                builder = builder.transformer(CachedTransformer::new(llm.clone(), cache.clone()))
            }
            (Some(llm), None) => builder = builder.transformer(llm.clone()),
            (None, _) => {}
        }
        builder.build()
    }

    /// Ends the progress display; the LLM transformer, for its usage figures.
    pub fn finish(&self) -> Option<&LlmTransformer> {
        self.progress.finish_and_clear();
        self.llm.as_deref()
    }

    /// The context for a manifest: `--source`, else the file's name without extension.
    pub fn context(&self, origin: &Origin) -> ToolContext {
        let source = self.source.clone().unwrap_or_else(|| origin.default_source());
        ToolContext::new(source, self.source_type)
    }
}

fn llm(config: &MediatorConfig, provider: Provider, args: &ChainArgs) -> Result<LlmTransformer> {
    if needs_key(config, provider, args) {
        bail!("{}", missing_key(config, provider));
    }
    let key = config.api_key();
    let model = config.model.clone().unwrap_or_else(|| provider.default_model().to_owned());
    let client = LlmClient::new(provider, model, config.llm_url.clone(), key)
        .with_max_response_bytes(config.llm_max_response_bytes);
    let prompts = match &args.prompts {
        Some(dir) => Prompts::from_dir(dir)?,
        None => Prompts::default(),
    };
    Ok(LlmTransformer::new(client, prompts).deadline(config.llm_deadline()).dry_run(args.dry_run))
}

fn needs_key(config: &MediatorConfig, provider: Provider, args: &ChainArgs) -> bool {
    config.api_key().is_none() && provider != Provider::OpenAiCompatible && !args.dry_run
}

fn missing_key(config: &MediatorConfig, provider: Provider) -> String {
    let variable = config.api_key_env.as_deref().filter(|name| is_variable_name(name)).or(provider.key_variable());
    format!(
        "no API key for {provider}: set {}, or `api_key_env` / `api_key` in the configuration",
        variable.unwrap_or("the key variable")
    )
}

/// Whether `name` looks like an environment variable's name (and not like a pasted key).
pub fn is_variable_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The built-in dictionary extended by the given files.
pub fn dictionary(files: &[PathBuf]) -> Result<Dictionary> {
    let mut dictionary = Dictionary::built_in();
    for file in files {
        dictionary.merge_file(file).context("cannot use the dictionary")?;
    }
    Ok(dictionary)
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
