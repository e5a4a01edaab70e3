//! `tool-mediator config`: the effective configuration, keys masked, with where it was looked
//! for and the curated override files built into the program.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use tool_mediator::MediatorConfig;
use tool_mediator::llm::Provider;
use tool_mediator::overrides::built_in_files;

use crate::config;
use crate::flags::ConfigArgs;
use crate::output;

pub fn run(args: &ConfigArgs) -> Result<ExitCode> {
    let (mut effective, file) = config::load(args)?;
    if effective.cache_dir.is_none() {
        effective.cache_dir = effective.cache_directory();
    }
    // Where trust on first use keeps its pins, whether or not it is on.
    if effective.pins_file.is_none() {
        effective.pins_file = effective.pins_path();
    }
    let mut text = String::new();
    match &file {
        Some(path) => writeln!(text, "# read from {}", output::shown(path))?,
        None => {
            let looked: Vec<String> = MediatorConfig::search_path()
                .iter()
                .map(|path| match path.is_relative() {
                    true => format!("./{}", output::shown(path)),
                    false => output::shown(path),
                })
                .collect();
            writeln!(text, "# no configuration file found; these are the defaults")?;
            writeln!(text, "# looked for (in order): {}", looked.join(", "))?;
        }
    }
    match effective.llm_provider {
        Some(provider) => {
            let url =
                effective.llm_url.clone().unwrap_or_else(|| format!("{} (its default)", provider.default_base_url()));
            let model =
                effective.model.clone().unwrap_or_else(|| format!("{} (its default)", provider.default_model()));
            writeln!(text, "# the language model: {provider} at {url}, model {model}")?;
        }
        None => writeln!(
            text,
            "# no language model: llm_provider = \"openai-compatible\" asks a local server, Ollama at {} \
             (model {}) unless llm_url and model say otherwise (llama.cpp's llama-server: llm_url = \
             \"http://127.0.0.1:8080\")",
            Provider::OpenAiCompatible.default_base_url(),
            Provider::OpenAiCompatible.default_model()
        )?,
    }
    match effective.api_key() {
        Some(_) => writeln!(text, "# an API key is set (not shown)")?,
        None => writeln!(text, "# no API key is set")?,
    }
    if let Some(url) = &effective.cache_url {
        writeln!(
            text,
            "# the cache is on {url}, under the prefix {:?}; cache_dir is not used",
            effective.cache_prefix
        )?;
    }
    // The cache keeps the models' answers and a fetched collection, nothing else.
    if effective.llm_provider.is_none() && effective.overrides_url.is_none() && effective.embedding_model.is_none() {
        writeln!(
            text,
            "# the cache is idle: no language model (llm_provider), embedding model (embedding_model) or \
             remote override collection (overrides_url) is configured, and nothing else is cached"
        )?;
    }
    if effective.builtin_overrides {
        writeln!(
            text,
            "# built-in override files (`builtin_overrides = false` or --no-builtin-overrides leaves them out):"
        )?;
        for (path, file) in built_in_files() {
            let sources: Vec<&str> = file.patterns().collect();
            let tools = match file.tools.len() {
                1 => "1 tool".to_owned(),
                count => format!("{count} tools"),
            };
            writeln!(text, "#   {}: {} ({tools})", path.display(), sources.join(", "))?;
        }
    } else {
        writeln!(text, "# the built-in override files are left out (builtin_overrides = false)")?;
    }
    let mut shown = effective.masked();
    if shown.api_key_env.as_deref().is_some_and(|name| !tool_mediator::is_variable_name(name)) {
        shown.api_key_env = Some("******** (not a variable name; is this a key?)".into());
    }
    text.push_str(&toml::to_string_pretty(&shown)?);
    output::print(&text)?;
    Ok(ExitCode::SUCCESS)
}
