//! The mediator's settings, as a configuration file holds them (the seed's `MediatorConfig`).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::llm::Provider;

/// Settings for a mediator. Every field is optional in a file; command-line flags win over it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MediatorConfig {
    /// The language model provider; none turns the LLM transformer off.
    pub llm_provider: Option<Provider>,
    pub model: Option<String>,
    /// The provider's base URL (an OpenAI-compatible server's, say).
    pub llm_url: Option<String>,
    /// The environment variable holding the API key (`ANTHROPIC_API_KEY` or `OPENAI_API_KEY`
    /// by default).
    pub api_key_env: Option<String>,
    /// The key itself. Prefer the environment; a key here is never printed.
    pub api_key: Option<String>,
    /// How long the whole language model stage may take, in seconds (60 by default): what has
    /// not been answered by then falls through to the rules.
    pub llm_deadline_secs: u64,
    /// The largest reply read from the language model, in bytes (16 MiB by default); a larger
    /// one fails its batch, whose tools fall through.
    pub llm_max_response_bytes: u64,
    /// Where the cache lives (the platform cache directory's `tool-mediator` by default).
    pub cache_dir: Option<PathBuf>,
    /// How long cached answers are used, in hours (168, 7 days, by default).
    pub cache_ttl_hours: u64,
    /// Run the LLM transformer whenever a provider is configured; when false, only with `--llm`.
    pub auto_enhance: bool,
    /// The smallest category the session layer folds into one category tool.
    pub grouping_threshold: usize,
    /// Directories of override files, in order (later ones refine earlier ones).
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
            cache_dir: None,
            cache_ttl_hours: 7 * 24,
            auto_enhance: true,
            grouping_threshold: 5,
            override_dirs: Vec::new(),
            overrides_url: None,
        }
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

    /// The configuration with the key masked, for printing.
    pub fn masked(&self) -> MediatorConfig {
        let mut masked = self.clone();
        if masked.api_key.is_some() {
            masked.api_key = Some("********".into());
        }
        masked
    }
}
