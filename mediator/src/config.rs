//! The mediator's settings, as a configuration file holds them (the seed's `MediatorConfig`),
//! and the one way a front door turns them into a chain ([`MediatorConfig::build`]) and a
//! session policy ([`MediatorConfig::session_policy`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cache::{Cache, CacheKey, CacheUrl, CachedTransformer, LateAnswers, MemoryStore, RedisStore, SledStore};
use crate::chain::Mediator;
use crate::llm::{LlmClient, LlmTransformer, PromptError, Prompts, Provider, Task};
use crate::overrides::{LiveOverrides, OverrideError, OverrideSet, remote};
use crate::rules::{Dictionary, DictionaryError, RuleTransformer};
use crate::search::meaning::Embedder;
use crate::session::{DisclosureMode, SessionPolicy, WHOLE_BELOW};
use tool_mediator_core::NameRules;
use tool_mediator_core::Place;

/// Settings for a mediator. Every field is optional in a file; command-line flags win over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MediatorConfig {
    /// The language model provider; none turns the LLM transformer off.
    pub llm_provider: Option<Provider>,
    pub model: Option<String>,
    /// The provider's base URL (an OpenAI-compatible server's, say): http or https.
    #[serde(deserialize_with = "model_url")]
    pub llm_url: Option<String>,
    /// The environment variable holding the API key (`ANTHROPIC_API_KEY` or `OPENAI_API_KEY`
    /// by default).
    pub api_key_env: Option<String>,
    /// The key itself. Prefer the environment; a key here is never printed.
    pub api_key: Option<String>,
    /// How long the language model may take for one tool, in seconds (60 by default): a request
    /// about n tools is given n times this. What has not been answered by then falls through to
    /// the rules. A small model on a CPU takes 15-20 s a tool.
    pub llm_deadline_secs: u64,
    /// The model's context window in tokens, when the server cannot say (llama.cpp's and
    /// Ollama's are asked); batches are sized to fit it. At least 256.
    #[serde(deserialize_with = "context_tokens")]
    pub llm_context_tokens: Option<u32>,
    /// The largest reply read from the language model, in bytes (16 MiB by default); a larger
    /// one fails its batch, whose tools fall through.
    pub llm_max_response_bytes: u64,
    /// Where the cache lives (the platform cache directory's `tool-mediator` by default).
    pub cache_dir: Option<PathBuf>,
    /// A Redis server to keep the cache in instead (`redis://host:port/db`, `rediss://` for
    /// TLS), shared by every process that names it: replicas and CI jobs pay the language model
    /// once for the same tools. `TOOL_MEDIATOR_CACHE_URL` sets it from the environment; a
    /// password the URL lacks comes from `TOOL_MEDIATOR_CACHE_PASSWORD`. Never shown with its
    /// password.
    pub cache_url: Option<CacheUrl>,
    /// What every key in a Redis cache starts with: deployments that must not share answers
    /// (their prompts, their models) share a server under prefixes of their own.
    pub cache_prefix: String,
    /// How long cached answers are used, in hours (168, 7 days, by default).
    pub cache_ttl_hours: u64,
    /// Run the LLM transformer whenever a provider is configured; when false, only with `--llm`.
    pub auto_enhance: bool,
    /// In the front doors that run for long (the proxy, the gateway, the Node binding), list
    /// tools without waiting for the language model: the rules' definitions first, the model's
    /// once it answers (the client is told its tools changed). False waits for the model at
    /// each listing that misses the cache, as the batch commands always do.
    pub llm_in_background: bool,
    /// The smallest category the session layer folds into one category tool.
    pub grouping_threshold: usize,
    /// What a client of the session layer sees first of a large tool set: `both` (category
    /// tools and `search_tools`, the default), `categories`, `search` or `off`.
    pub disclosure_mode: DisclosureMode,
    /// Fewer visible tools than this are listed whole, whatever the mode (0: never).
    pub whole_below: usize,
    /// How much of a query (0 to 1) the best tool `search_tools` finds must match, else it
    /// answers that no tool matches: 0.18 by default, calibrated on real requests
    /// ([`crate::search::MATCH_THRESHOLD`]); 0 never refuses.
    #[serde(deserialize_with = "share")]
    pub search_threshold: f32,
    /// An embedding model `search_tools` also ranks tools by, by what they mean (Ollama's or
    /// llama.cpp's `nomic-embed-text-v1.5`, OpenAI's `text-embedding-3-small`); its answers are
    /// cached like the language model's. None ranks by words alone.
    pub embedding_model: Option<String>,
    /// The embedding model's provider (`openai` or `openai-compatible`), `llm_provider` unless
    /// set. It is sent the language model's key when it is the same provider on the same server,
    /// else its provider's own variable (`OPENAI_API_KEY`) at the provider's own address, else
    /// no key: a key never goes to a server it was not given for.
    pub embedding_provider: Option<Provider>,
    /// The embedding model's server, when it is not `llm_url`'s (llama.cpp serves one model a
    /// server; another provider's is at its own address): http or https.
    #[serde(deserialize_with = "model_url")]
    pub embedding_url: Option<String>,
    /// Leave out the tools the screen suspects of poisoning, in every session (the proxy, the
    /// gateway, the Node binding); without it they are listed, with a warning.
    pub quarantine: bool,
    /// Tools the screen flags that the user reviewed and allows, each by its source's name and
    /// its digest (`[[allow]] tool = "NAME" digest = "sha256:..."`, as the warning and `lint`
    /// show it): a changed definition is screened again.
    pub allow: Vec<crate::screen::Allowed>,
    /// Ask the language model (when one is configured) about the tools the poisoning screen is
    /// unsure of; its ruling can flag a tool, never clear one. Off by default (`--judge`).
    pub judge: bool,
    /// Ask the language model (OpenAI or an OpenAI-compatible server) for its odds that each
    /// tool the screen did not flag is poisoned, and flag those over this threshold, 0 to 1.
    /// Odds differ between models: calibrate it for yours on honest tools with
    /// `tool-mediator lint --calibrate-judge`. Setting it turns the judge on in the proxy, the
    /// gateway and the Node binding (`lint` reads a model only with `--judge` or
    /// `--judge-threshold`); unset, the judge rules only on the tools the screen is unsure of.
    #[serde(deserialize_with = "odds")]
    pub judge_threshold: Option<f64>,
    /// Answer a call to a tool folded away (in a category tool not expanded, or not found by
    /// search yet) with an error saying how to see it, instead of calling it.
    pub calls_follow_disclosure: bool,
    /// Trust on first use in the proxy and the gateway: each server's tools are pinned the first
    /// time they are listed, and a tool that changes, or is new to a server already seen, is held
    /// back until `tool-mediator review` approves it.
    pub trust_on_first_use: bool,
    /// The pins file of trust on first use (the platform data directory's
    /// `tool-mediator/pins.json` by default).
    pub pins_file: Option<PathBuf>,
    /// Apply the curated override files built into the program (on by default). A remote
    /// collection and `override_dirs` refine them.
    pub builtin_overrides: bool,
    /// Directories of override files, in order (later ones refine earlier ones, and all of them
    /// the built-in files and the remote collection).
    pub override_dirs: Vec<PathBuf>,
    /// A remote override collection, fetched over HTTPS and revalidated with its ETag.
    pub overrides_url: Option<String>,
}

impl Default for MediatorConfig {
    fn default() -> Self {
        MediatorConfig {
            llm_provider: None,
            model: None,
            llm_url: None,
            api_key_env: None,
            api_key: None,
            llm_deadline_secs: crate::llm::DEFAULT_DEADLINE.as_secs(),
            llm_max_response_bytes: crate::llm::DEFAULT_MAX_RESPONSE_BYTES,
            llm_context_tokens: None,
            cache_dir: None,
            cache_url: None,
            cache_prefix: crate::cache::DEFAULT_PREFIX.to_owned(),
            cache_ttl_hours: 7 * 24,
            auto_enhance: true,
            llm_in_background: true,
            grouping_threshold: 5,
            disclosure_mode: DisclosureMode::default(),
            whole_below: WHOLE_BELOW,
            search_threshold: crate::search::MATCH_THRESHOLD,
            embedding_model: None,
            embedding_provider: None,
            embedding_url: None,
            quarantine: false,
            allow: Vec::new(),
            judge: false,
            judge_threshold: None,
            calls_follow_disclosure: false,
            trust_on_first_use: false,
            pins_file: None,
            builtin_overrides: true,
            override_dirs: Vec::new(),
            overrides_url: None,
        }
    }
}

/// A share, 0 to 1, as a settings file writes it.
fn share<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f32, D::Error> {
    let share = <f64 as serde::Deserialize>::deserialize(deserializer)?;
    match (0.0..=1.0).contains(&share) {
        true => Ok(share as f32),
        false => Err(serde::de::Error::custom(format!("must be between 0 and 1, not {share}"))),
    }
}

impl MediatorConfig {
    pub fn ttl(&self) -> Duration {
        Duration::from_secs(self.cache_ttl_hours.saturating_mul(3600))
    }

    /// The deadline of the language model stage.
    pub fn llm_deadline(&self) -> Duration {
        Duration::from_secs(self.llm_deadline_secs)
    }

    /// The API key: from the configured (or the provider's) environment variable, else from
    /// the file.
    pub fn api_key(&self) -> Option<String> {
        let variable = self.api_key_env.as_deref().or_else(|| self.llm_provider.and_then(Provider::key_variable));
        variable
            .and_then(|name| std::env::var(name).ok())
            .filter(|key| !key.is_empty())
            .or_else(|| self.api_key.clone())
    }

    /// The configuration with the key and the cache's password masked, for printing.
    pub fn masked(&self) -> MediatorConfig {
        let mut masked = self.clone();
        if masked.api_key.is_some() {
            masked.api_key = Some("********".into());
        }
        masked.cache_url = masked.cache_url.as_ref().map(CacheUrl::redacted);
        masked
    }

    /// Takes what the environment sets over the file's settings: the cache's URL
    /// (`TOOL_MEDIATOR_CACHE_URL`). A front door's flags then win over both.
    pub fn apply_environment(&mut self) {
        if let Some(url) = std::env::var(crate::cache::URL_VARIABLE).ok().filter(|url| !url.is_empty()) {
            self.cache_url = Some(CacheUrl::new(url));
        }
    }
}

/// A probability, 0 to 1, or none.
fn odds<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    let odds = f64::deserialize(deserializer)?;
    match (0.0..=1.0).contains(&odds) {
        true => Ok(Some(odds)),
        false => Err(serde::de::Error::custom(format!("odds are between 0 and 1, not {odds}"))),
    }
}

impl MediatorConfig {
    /// Reads a configuration file: JSON by its `.json` extension, else TOML. What is wrong is
    /// placed at its line and column.
    pub fn from_file(path: &Path) -> Result<MediatorConfig, ConfigError> {
        if !path.is_file() {
            return Err(ConfigError::Missing(path.to_owned()));
        }
        let text = crate::read::read_settings(path)
            .map_err(|source| ConfigError::Unreadable { path: path.to_owned(), source })?;
        let invalid = |place, message: String| ConfigError::Invalid { path: path.to_owned(), place, message };
        if path.extension().is_some_and(|ext| ext == "json") {
            return tool_mediator_core::json::from_str_as(&text).map_err(|error| {
                invalid(Place::of_json_error(&text, &error), tool_mediator_core::json::message(&error))
            });
        }
        toml::from_str(&text).map_err(|error| {
            let place = Place::at(&text, error.span().map_or(0, |span| span.start));
            invalid(place, error.message().to_owned())
        })
    }

    /// The settings a front door reads when no file is named: the working directory's
    /// `tool-mediator.toml`/`.json`, else the user's `tool-mediator/config.toml`/`.json`, else
    /// the defaults. Returns the file it read.
    pub fn discover() -> Result<(MediatorConfig, Option<PathBuf>), ConfigError> {
        for path in MediatorConfig::search_path() {
            if path.is_file() {
                return Ok((MediatorConfig::from_file(&path)?, Some(path)));
            }
        }
        Ok((MediatorConfig::default(), None))
    }

    /// Where [`MediatorConfig::discover`] looks, in order.
    pub fn search_path() -> Vec<PathBuf> {
        let mut candidates = vec![PathBuf::from("tool-mediator.toml"), PathBuf::from("tool-mediator.json")];
        if let Some(dir) = dirs::config_dir() {
            candidates.push(dir.join("tool-mediator/config.toml"));
            candidates.push(dir.join("tool-mediator/config.json"));
        }
        candidates
    }

    /// A front door's choice of language model over the file's: `Some(None)` turns it off,
    /// `Some(Some(provider))` asks for `provider` (a key the file holds for another provider is
    /// dropped, never sent to it), `None` keeps the file's provider when `auto_enhance` is on.
    pub fn choose_llm(&mut self, choice: Option<Option<Provider>>) {
        match choice {
            Some(None) => self.llm_provider = None,
            Some(Some(provider)) => {
                if self.llm_provider != Some(provider) {
                    self.api_key = None;
                    self.api_key_env = None;
                }
                self.llm_provider = Some(provider);
                self.auto_enhance = true;
            }
            None if !self.auto_enhance => self.llm_provider = None,
            None => {}
        }
    }

    /// The cache directory in use: `cache_dir`, else the platform cache directory's
    /// `tool-mediator`.
    pub fn cache_directory(&self) -> Option<PathBuf> {
        self.cache_dir.clone().or_else(|| dirs::cache_dir().map(|dir| dir.join("tool-mediator")))
    }

    /// The pins file in use: `pins_file`, else the platform data directory's
    /// `tool-mediator/pins.json`.
    pub fn pins_path(&self) -> Option<PathBuf> {
        self.pins_file.clone().or_else(crate::pin::PinsFile::user_path)
    }

    /// The session policy of a mediating front door (the proxy, the gateway, the CLI's `tokens`,
    /// the Node binding's sessions): disclosure in `disclosure_mode`, categories of at least
    /// `grouping_threshold` tools, fewer than `whole_below` tools listed whole, provenance
    /// shown, pages of 100, suspects left out with `quarantine`. A front door's flags change
    /// the settings first.
    pub fn session_policy(&self) -> SessionPolicy {
        let threshold = self.grouping_threshold.max(2);
        let policy = SessionPolicy {
            quarantine: self.quarantine,
            allowed: self.allow.clone(),
            calls_follow_disclosure: self.calls_follow_disclosure,
            search_threshold: self.search_threshold,
            ..SessionPolicy::mediated(threshold)
        };
        self.disclosure_mode.apply(policy, threshold, self.whole_below)
    }

    /// Loads and checks everything these settings name: override directories (refining the
    /// remote collection, when one is set and can be had), the rules and their dictionaries, the
    /// language model with its key, the cache. A chain is then made per output with
    /// [`Transformers::mediator`]. What cannot be had is an error; what may be gone without (a
    /// cache that cannot be opened, a remote collection that cannot be fetched, a model set in
    /// the file but not asked for and without a key) is a warning.
    pub async fn build(&self, options: &ChainOptions) -> Result<Transformers, BuildError> {
        let ttl = options.ttl.unwrap_or_else(|| self.ttl());
        let wants_cache = options.cache
            && (self.llm_provider.is_some() || self.overrides_url.is_some() || self.embedding_model.is_some());
        let cache = if wants_cache { self.open_cache(ttl) } else { None };

        // The local directories are read first, so a broken file is reported before any fetch.
        let local = LiveOverrides::load(self.override_dirs.clone())?;
        // Layered from the most general to the most particular: the built-in files, the
        // community's remote collection, the user's own directories.
        let mut base = if self.builtin_overrides { OverrideSet::built_in() } else { OverrideSet::new() };
        if let Some(url) = &self.overrides_url {
            let fetched = remote::fetch(url, cache.as_deref(), &remote::http_client()).await;
            if let Some(warning) = &fetched.warning {
                tracing::warn!("{warning}");
            }
            if fetched.state != remote::RemoteState::Unavailable {
                for file in fetched.files {
                    base.add(file, PathBuf::from(url));
                }
            }
        }
        let overrides = local.over(base);
        let overrides = (!overrides.is_empty()).then(|| Arc::new(overrides));

        let rules = match options.rules {
            true => Some(RuleTransformer::with_dictionary(dictionary(&options.dictionaries)?)),
            false => None,
        };
        let llm = match self.llm_provider {
            None => None,
            // Set in the file but not asked for, with no key: a warning, not a failed run.
            Some(provider) if !options.llm_required && self.needs_key(provider, options) => {
                tracing::warn!("{}; going on without the language model", self.missing_key(provider));
                None
            }
            Some(provider) => Some(Arc::new(self.llm(provider, options)?)),
        };
        let judge = match &llm {
            Some(llm) if (self.judge || self.judge_threshold.is_some() || options.judge) && !options.dry_run => {
                Some(Arc::new(llm.judge(cache.clone()).with_threshold(self.judge_threshold)))
            }
            _ => None,
        };
        let background = llm.is_some() && options.llm_in_background && self.llm_in_background;
        // Answers that come later must be kept somewhere to be shown: in memory, without a cache.
        let cache = match cache {
            None if background => Some(Arc::new(Cache::new(MemoryStore::default(), ttl))),
            cache => cache,
        };
        let embedder = self.embedder(cache.clone())?;
        Ok(Transformers { overrides, rules, llm, cache, judge, background, embedder })
    }

    /// The embedding model search ranks by, when one is set: on `embedding_url` (else
    /// `llm_url`), with the key of its provider (else `llm_provider`'s).
    fn embedder(&self, cache: Option<Arc<Cache>>) -> Result<Option<Arc<Embedder>>, BuildError> {
        let Some(model) = &self.embedding_model else { return Ok(None) };
        let provider = match self.embedding_provider.or(self.llm_provider) {
            Some(Provider::Anthropic) => {
                return Err(BuildError::Setting(
                    "embedding_provider: Anthropic's API has no embeddings; set `openai` or `openai-compatible`".into(),
                ));
            }
            Some(provider) => provider,
            None => Provider::OpenAiCompatible,
        };
        // The language model's server serves embeddings too only if it is the same provider's.
        let url =
            self.embedding_url.clone().or_else(|| self.llm_url.clone().filter(|_| Some(provider) == self.llm_provider));
        if let Some(problem) = url.as_deref().and_then(model_url_problem) {
            return Err(BuildError::Setting(format!("embedding_url: {problem}")));
        }
        // A key goes only where it was given for: the language model's to its own server, a
        // provider's variable to the provider's own address.
        let origin = |url: &str| reqwest::Url::parse(url).ok().map(|url| url.origin());
        let at = url.clone().unwrap_or_else(|| provider.default_base_url().to_owned());
        let llm_at =
            self.llm_provider.map(|llm| self.llm_url.clone().unwrap_or_else(|| llm.default_base_url().to_owned()));
        let key = if Some(provider) == self.llm_provider && llm_at.is_some_and(|llm_at| origin(&llm_at) == origin(&at))
        {
            self.api_key()
        } else if origin(&at) == origin(provider.default_base_url()) {
            provider.key_variable().and_then(|name| std::env::var(name).ok()).filter(|key| !key.is_empty())
        } else {
            None
        };
        let client = LlmClient::new(provider, model.clone(), url, key)
            .with_max_response_bytes(self.llm_max_response_bytes)
            .with_timeout(Duration::from_secs(120));
        Ok(Some(Arc::new(Embedder::new(client, cache))))
    }

    /// Opens the cache (on the `cache_url` server, else in the directory), or goes on without it
    /// with a warning that says which and why. A server is not connected to yet: one that is down
    /// is a warning at its first use, and is used once it is up.
    ///
    /// Its records are written under the mediators' key: `TOOL_MEDIATOR_CACHE_KEY`, else this
    /// user's ([`CacheKey::default_file`]); replicas on several machines share one by setting it.
    pub fn open_cache(&self, ttl: Duration) -> Option<Arc<Cache>> {
        let key = || CacheKey::of_environment_or(CacheKey::default_file().as_deref());
        if self.cache_url.is_some() {
            return match self.redis_store() {
                Ok(store) => Some(Arc::new(Cache::new(store, ttl).with_key(key()))),
                Err(error) => {
                    tracing::warn!("{error}; going on uncached");
                    None
                }
            };
        }
        let dir = self.cache_directory()?;
        match SledStore::open(&dir) {
            Ok(store) => Some(Arc::new(Cache::new(store, ttl).with_key(key()))),
            Err(error) => {
                tracing::warn!("{error}");
                None
            }
        }
    }

    /// The store on the `cache_url` server, its password from `TOOL_MEDIATOR_CACHE_PASSWORD` when
    /// the URL has none.
    pub fn redis_store(&self) -> Result<RedisStore, crate::cache::CacheError> {
        let url = self.cache_url.clone().unwrap_or_else(|| CacheUrl::new(""));
        let password = std::env::var(crate::cache::PASSWORD_VARIABLE).ok();
        RedisStore::open(&url, &self.cache_prefix, password.as_deref())
    }

    fn llm(&self, provider: Provider, options: &ChainOptions) -> Result<LlmTransformer, BuildError> {
        // What a flag, the environment or a host set is checked here; a file's, where it is read.
        if let Some(problem) = self.llm_url.as_deref().and_then(model_url_problem) {
            return Err(BuildError::Setting(format!("llm_url: {problem}")));
        }
        if let Some(problem) = self.llm_context_tokens.and_then(context_tokens_problem) {
            return Err(BuildError::Setting(format!("llm_context_tokens: {problem}")));
        }
        if self.needs_key(provider, options) {
            return Err(BuildError::MissingKey(self.missing_key(provider)));
        }
        let model = self.model.clone().unwrap_or_else(|| provider.default_model().to_owned());
        let mut client = LlmClient::new(provider, model, self.llm_url.clone(), self.api_key())
            .with_max_response_bytes(self.llm_max_response_bytes);
        if let Some(tokens) = self.llm_context_tokens {
            client = client.with_context_window(tokens);
        }
        let prompts = match &options.prompts {
            Some(dir) => Prompts::from_dir(dir)?,
            None => Prompts::default(),
        };
        let mut llm = LlmTransformer::new(client, prompts)
            .deadline(self.llm_deadline())
            .dry_run(options.dry_run)
            .task(options.task);
        if let Some(progress) = options.on_progress.clone() {
            llm = llm.on_progress(move |step| progress(step));
        }
        Ok(llm)
    }

    fn needs_key(&self, provider: Provider, options: &ChainOptions) -> bool {
        self.api_key().is_none() && provider != Provider::OpenAiCompatible && !options.dry_run
    }

    fn missing_key(&self, provider: Provider) -> String {
        let variable = self.api_key_env.as_deref().filter(|name| is_variable_name(name)).or(provider.key_variable());
        format!(
            "no API key for {provider}: set {}, or `api_key_env` / `api_key` in the configuration",
            variable.unwrap_or("the key variable")
        )
    }
}

/// Why a configuration file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{}: no such configuration file", .0.display())]
    Missing(PathBuf),
    #[error("cannot read {}", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    #[error("{}{place}: {message}", path.display())]
    Invalid { path: PathBuf, place: Place, message: String },
}

/// Whether `name` looks like an environment variable's name (and not like a pasted key).
pub fn is_variable_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The built-in dictionary extended by the given files.
pub fn dictionary(files: &[PathBuf]) -> Result<Dictionary, BuildError> {
    let mut dictionary = Dictionary::built_in();
    for file in files {
        dictionary.merge_file(file).map_err(BuildError::Dictionary)?;
    }
    Ok(dictionary)
}

/// What a front door asks of the chain beyond the settings.
#[derive(Clone)]
pub struct ChainOptions {
    /// The rule-based transformer (on unless turned off).
    pub rules: bool,
    /// Dictionary files extending the built-in one, in order.
    pub dictionaries: Vec<PathBuf>,
    /// A directory of prompt templates overriding the built-in ones.
    pub prompts: Option<PathBuf>,
    /// What the language model is asked to do.
    pub task: Task,
    /// Ask the language model nothing; show what would be asked.
    pub dry_run: bool,
    /// The language model was asked for by name (`--llm`): a missing key is an error, not a
    /// warning.
    pub llm_required: bool,
    /// The cache may be used (for the language model's answers and the remote collection).
    pub cache: bool,
    /// How long cached answers are used, when not the settings' `cache_ttl_hours`.
    pub ttl: Option<Duration>,
    /// Told how many tools the language model has answered, as it goes.
    pub on_progress: Option<Arc<dyn Fn(crate::llm::Progress) + Send + Sync>>,
    /// Ask the language model about the tools the poisoning screen is unsure of (`--judge`),
    /// besides the settings' `judge`.
    pub judge: bool,
    /// The front door runs for long and can show the language model's answers when they come
    /// (its sessions follow [`Mediator::changes`]): the model is asked in the background, unless
    /// the settings' `llm_in_background` is off. Its answers are then kept in memory when there
    /// is no cache.
    pub llm_in_background: bool,
}

impl Default for ChainOptions {
    fn default() -> Self {
        ChainOptions {
            rules: true,
            dictionaries: Vec::new(),
            prompts: None,
            task: Task::Enhance,
            dry_run: false,
            llm_required: false,
            cache: true,
            ttl: None,
            on_progress: None,
            judge: false,
            llm_in_background: false,
        }
    }
}

/// The transformers some settings name, loaded and checked: the parts every chain made from
/// them shares (an override set, the rules, one language model client and its cache).
pub struct Transformers {
    overrides: Option<Arc<LiveOverrides>>,
    rules: Option<RuleTransformer>,
    llm: Option<Arc<LlmTransformer>>,
    cache: Option<Arc<Cache>>,
    judge: Option<Arc<crate::llm::Judge>>,
    /// The embedding model search ranks by, if any.
    embedder: Option<Arc<Embedder>>,
    /// The language model is asked in the background (see [`ChainOptions::llm_in_background`]).
    background: bool,
}

impl Transformers {
    /// Reads the override directories again whenever they change, for as long as these
    /// transformers are kept: for front doors that run for long (the proxy, the gateway), whose
    /// sessions hear of it through [`Mediator::changes`]. Calling it again changes nothing.
    pub fn follow_overrides(&self) {
        if let Some(overrides) = &self.overrides {
            tokio::spawn(overrides.clone().follow(crate::overrides::LOOK_EVERY));
        }
    }

    /// The cache the language model's answers are kept in, when there is one.
    pub fn cache(&self) -> Option<&Arc<Cache>> {
        self.cache.as_ref()
    }

    /// The override set applied now (the built-in files, a remote collection and the user's
    /// directories, layered), when there are any overrides at all.
    pub fn overrides(&self) -> Option<Arc<OverrideSet>> {
        self.overrides.as_ref().map(|live| live.current())
    }

    /// A chain of these transformers (the language model's answers cached when there is a
    /// cache; the model asked in the background, and the chain changing when it answers, when
    /// [`ChainOptions::llm_in_background`] and the settings say so) whose output names follow
    /// `names`.
    pub fn mediator(&self, names: NameRules, min_confidence: f64) -> Mediator {
        let mut builder = Mediator::builder().name_rules(names).min_confidence(min_confidence);
        if let Some(overrides) = &self.overrides {
            builder = builder.live_overrides(overrides);
        }
        if let Some(rules) = &self.rules {
            builder = builder.transformer(rules.clone());
        }
        match (&self.llm, &self.cache) {
            (Some(llm), Some(cache)) if self.background => {
                let late = LateAnswers::default();
                let cached = CachedTransformer::new(llm.clone(), cache.clone()).in_background(late.clone());
                builder = builder.late_answers(&late).transformer(cached);
            }
            (Some(llm), Some(cache)) => {
                builder = builder.transformer(CachedTransformer::new(llm.clone(), cache.clone()))
            }
            (Some(llm), None) => builder = builder.transformer(llm.clone()),
            (None, _) => {}
        }
        if let Some(judge) = &self.judge {
            builder = builder.judge(judge.clone());
        }
        builder.build()
    }

    /// The judge of the tools the poisoning screen is unsure of, when asked for and a language
    /// model is configured.
    pub fn judge(&self) -> Option<&Arc<crate::llm::Judge>> {
        self.judge.as_ref()
    }

    /// The embedding model search ranks by, when one is set: a front door puts it in its
    /// sessions' policy ([`SessionPolicy::embedder`](crate::session::SessionPolicy::embedder)).
    pub fn embedder(&self) -> Option<Arc<Embedder>> {
        self.embedder.clone()
    }

    /// The language model transformer, for its usage figures.
    pub fn llm(&self) -> Option<&LlmTransformer> {
        self.llm.as_deref()
    }
}

/// Why settings could not be turned into a chain.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Overrides(#[from] OverrideError),
    #[error("cannot use the dictionary: {0}")]
    Dictionary(DictionaryError),
    #[error(transparent)]
    Prompts(#[from] PromptError),
    #[error("{0}")]
    MissingKey(String),
    /// A setting that cannot be used, named with why.
    #[error("{0}")]
    Setting(String),
}

/// Why `url` cannot be a model server's base URL, if it cannot: it must be an http or https URL.
pub fn model_url_problem(url: &str) -> Option<String> {
    match reqwest::Url::parse(url.trim()) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() => None,
        Ok(parsed) => Some(format!("`{url}` is not an http or https URL (its scheme is `{}`)", parsed.scheme())),
        Err(error) => Some(format!("`{url}` is not a URL ({error}), such as http://127.0.0.1:11434")),
    }
}

/// The smallest context window a model can be told to have: a batch's frame alone takes more.
const MIN_CONTEXT_TOKENS: u32 = 256;

fn context_tokens_problem(tokens: u32) -> Option<String> {
    (tokens < MIN_CONTEXT_TOKENS)
        .then(|| format!("{tokens} tokens is too small a context window (at least {MIN_CONTEXT_TOKENS})"))
}

fn model_url<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let url = Option::<String>::deserialize(deserializer)?;
    match url.as_deref().and_then(model_url_problem) {
        Some(problem) => Err(serde::de::Error::custom(problem)),
        None => Ok(url),
    }
}

fn context_tokens<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    let tokens = Option::<u32>::deserialize(deserializer)?;
    match tokens.and_then(context_tokens_problem) {
        Some(problem) => Err(serde::de::Error::custom(problem)),
        None => Ok(tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tool_mediator_core::SourceType;
    use tool_mediator_core::{Tool, ToolContext};

    fn settings(overrides: &Path) -> MediatorConfig {
        MediatorConfig { override_dirs: vec![overrides.to_owned()], ..MediatorConfig::default() }
    }

    #[tokio::test]
    async fn settings_build_the_chain_every_front_door_shares() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("s.json"),
            r#"{"source": "s", "tools": {"gt_usr": {"name": "get_user", "description": "Gets a user."}}}"#,
        )
        .unwrap();
        let transformers = settings(dir.path()).build(&ChainOptions::default()).await.unwrap();
        let mediator = transformers.mediator(NameRules::MCP, 0.0);
        let names: Vec<&str> = mediator.transformers().map(|transformer| transformer.name()).collect();
        assert_eq!(names, ["overrides", "rules"]);
        let tools = mediator.enhance(vec![Tool::new("gt_usr")], &ToolContext::new("s", SourceType::Api)).await;
        assert_eq!(tools[0].name(), "get_user");

        let options = ChainOptions { rules: false, ..ChainOptions::default() };
        let without = MediatorConfig { builtin_overrides: false, ..MediatorConfig::default() };
        let bare = without.build(&options).await.unwrap().mediator(NameRules::MCP, 0.0);
        assert_eq!(bare.transformers().count(), 0);
    }

    #[tokio::test]
    async fn the_built_in_overrides_apply_by_default_under_the_users_own() {
        let options = ChainOptions { rules: false, ..ChainOptions::default() };
        let example = ToolContext::new("example.com", SourceType::Web);
        let enhance = |settings: MediatorConfig| {
            let example = example.clone();
            let options = options.clone();
            async move {
                let mediator = settings.build(&options).await.unwrap().mediator(NameRules::MCP, 0.0);
                let tools = mediator.enhance(vec![Tool::new("gt_usr"), Tool::new("del")], &example).await;
                tools.iter().map(|tool| tool.name().to_owned()).collect::<Vec<_>>()
            }
        };
        assert_eq!(enhance(MediatorConfig::default()).await, ["get_user", "delete_user"]);

        // A user's directory refines the built-in file: its entry replaces the built-in one.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.json"),
            r#"{"source": "example.com", "tools": {"gt_usr": {"name": "fetch_user"}}}"#,
        )
        .unwrap();
        assert_eq!(enhance(settings(dir.path())).await, ["fetch_user", "delete_user"]);

        let off = MediatorConfig { builtin_overrides: false, ..settings(dir.path()) };
        assert_eq!(enhance(off).await, ["fetch_user", "del"]);
    }

    #[tokio::test]
    async fn a_model_without_a_key_is_an_error_only_when_asked_for() {
        let config = MediatorConfig {
            llm_provider: Some(Provider::Anthropic),
            api_key_env: Some("TOOL_MEDIATOR_TEST_NO_SUCH_KEY".into()),
            ..MediatorConfig::default()
        };
        let options = ChainOptions { cache: false, ..ChainOptions::default() };
        let transformers = config.build(&options).await.unwrap();
        assert!(transformers.llm().is_none(), "set in the file but not asked for: gone without");
        let asked = ChainOptions { llm_required: true, ..options };
        let error = config.build(&asked).await.err().expect("asked for, without a key");
        assert!(error.to_string().contains("TOOL_MEDIATOR_TEST_NO_SUCH_KEY"), "{error}");
    }

    /// A front door that runs for long asks the model in the background (its chain can change
    /// then), unless the settings say not to; a batch command waits for it.
    #[tokio::test]
    async fn the_model_is_asked_in_the_background_only_by_a_front_door_that_runs_for_long() {
        let settings = MediatorConfig {
            llm_provider: Some(Provider::OpenAiCompatible),
            llm_url: Some("http://127.0.0.1:9".into()),
            builtin_overrides: false,
            ..MediatorConfig::default()
        };
        let chain = |settings: MediatorConfig, llm_in_background: bool| async move {
            // No cache: in the background the answers are kept in memory all the same.
            let options = ChainOptions { cache: false, llm_in_background, ..ChainOptions::default() };
            settings.build(&options).await.unwrap().mediator(NameRules::MCP, 0.0)
        };
        let serving = chain(settings.clone(), true).await;
        let names: Vec<&str> = serving.transformers().map(|transformer| transformer.name()).collect();
        assert_eq!(names, ["rules", "cached-llm"]);
        assert!(serving.changes().is_some(), "a chain whose model answers late changes");
        assert!(chain(settings.clone(), false).await.changes().is_none(), "a batch command waits");
        let waiting = MediatorConfig { llm_in_background: false, ..settings };
        let names: Vec<String> =
            chain(waiting.clone(), true).await.transformers().map(|t| t.name().to_owned()).collect();
        assert_eq!(names, ["rules", "llm"], "the settings say to wait: uncached, as before");
        assert!(chain(waiting, true).await.changes().is_none());
    }

    #[test]
    fn the_search_threshold_comes_from_the_file_between_0_and_1() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(MediatorConfig::default().session_policy().search_threshold, crate::search::MATCH_THRESHOLD);
        let file = dir.path().join("tool-mediator.toml");
        std::fs::write(&file, "search_threshold = 0.3\n").unwrap();
        assert_eq!(MediatorConfig::from_file(&file).unwrap().session_policy().search_threshold, 0.3);
        for (text, line) in [("whole_below = 3\nsearch_threshold = 1.5\n", 2), ("search_threshold = -0.1\n", 1)] {
            std::fs::write(&file, text).unwrap();
            let error = MediatorConfig::from_file(&file).unwrap_err().to_string();
            assert!(error.starts_with(&format!("{}:{line}:", file.display())), "{error}");
            assert!(error.contains("must be between 0 and 1"), "{error}");
        }
        let json = dir.path().join("config.json");
        std::fs::write(&json, "{\"search_threshold\": 2}").unwrap();
        let error = MediatorConfig::from_file(&json).unwrap_err().to_string();
        assert!(error.contains("must be between 0 and 1"), "{error}");
    }

    #[tokio::test]
    async fn an_embedding_model_is_built_from_the_file_on_its_own_server_or_refused_with_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tool-mediator.toml");
        let options = ChainOptions { cache: false, ..ChainOptions::default() };
        assert!(MediatorConfig::default().build(&options).await.unwrap().embedder().is_none(), "none unless set");

        std::fs::write(
            &file,
            "embedding_model = \"nomic-embed-text-v1.5\"\nembedding_url = \"http://127.0.0.1:8081/v1\"\n",
        )
        .unwrap();
        let embedder = MediatorConfig::from_file(&file).unwrap().build(&options).await.unwrap().embedder().unwrap();
        assert_eq!(embedder.model(), "nomic-embed-text-v1.5");
        assert_eq!(embedder.habits().query_prefix, "search_query: ", "the model's card is followed");

        std::fs::write(&file, "llm_provider = \"anthropic\"\napi_key = \"k\"\nembedding_model = \"m\"\n").unwrap();
        let Err(error) = MediatorConfig::from_file(&file).unwrap().build(&options).await else { panic!("built") };
        let error = error.to_string();
        assert!(error.contains("embedding_provider") && error.contains("no embeddings"), "{error}");

        // The language model's key goes to its own server, never to another one.
        let keyed = |text: &str| {
            std::fs::write(&file, text).unwrap();
            let config = MediatorConfig::from_file(&file).unwrap();
            let options = &options;
            async move { format!("{:?}", config.build(options).await.unwrap().embedder().unwrap()) }
        };
        let same =
            keyed("llm_provider = \"openai\"\napi_key = \"sk-SECRET\"\nembedding_model = \"text-embedding-3-small\"\n")
                .await;
        assert!(same.contains("api_key: Some(\"***\")"), "{same}");
        let elsewhere = keyed(
            "llm_provider = \"openai\"\napi_key = \"sk-SECRET\"\nembedding_model = \"m\"\nembedding_url = \"http://127.0.0.1:9\"\n",
        )
        .await;
        assert!(elsewhere.contains("api_key: None"), "{elsewhere}");

        std::fs::write(&file, "embedding_model = \"m\"\nembedding_url = \"ftp://example.com\"\n").unwrap();
        let error = MediatorConfig::from_file(&file).unwrap_err().to_string();
        assert!(error.starts_with(&format!("{}:2:", file.display())), "{error}");
    }

    #[test]
    fn the_disclosure_mode_and_whole_below_come_from_the_file_with_the_readmes_default() {
        let dir = tempfile::tempdir().unwrap();
        let policy = MediatorConfig::default().session_policy();
        assert_eq!(MediatorConfig::default().disclosure_mode, DisclosureMode::Both, "the README's default");
        assert!(policy.search && policy.disclosure == Some(5) && policy.whole_below == WHOLE_BELOW, "{policy:?}");

        let file = dir.path().join("tool-mediator.toml");
        std::fs::write(&file, "disclosure_mode = \"search\"\nwhole_below = 0\ngrouping_threshold = 3\n").unwrap();
        let policy = MediatorConfig::from_file(&file).unwrap().session_policy();
        assert!(policy.search && policy.disclosure.is_none() && policy.whole_below == 0, "{policy:?}");
        let json = dir.path().join("config.json");
        std::fs::write(&json, r#"{"disclosure_mode": "categories"}"#).unwrap();
        let policy = MediatorConfig::from_file(&json).unwrap().session_policy();
        assert!(!policy.search && policy.disclosure == Some(5), "{policy:?}");

        std::fs::write(&file, "grouping_threshold = 5\ndisclosure_mode = \"everything\"\n").unwrap();
        let error = MediatorConfig::from_file(&file).unwrap_err().to_string();
        assert!(error.starts_with(&format!("{}:2:", file.display())), "{error}");
        assert!(error.contains("everything") && error.contains("both"), "{error}");
    }

    #[tokio::test]
    async fn what_cannot_be_read_is_named() {
        let missing = Path::new("/nonexistent/tool-mediator/overrides");
        let error = settings(missing).build(&ChainOptions::default()).await.err().expect("no such directory");
        assert!(error.to_string().contains("/nonexistent/tool-mediator/overrides"), "{error}");
        let options = ChainOptions { dictionaries: vec!["/nonexistent/words.json".into()], ..ChainOptions::default() };
        let error = MediatorConfig::default().build(&options).await.err().expect("no such dictionary");
        assert!(error.to_string().starts_with("cannot use the dictionary"), "{error}");
    }
}
