//! `tool-mediator config`: the effective configuration, keys masked.

use std::process::ExitCode;

use anyhow::Result;

use crate::config;
use crate::flags::ConfigArgs;
use crate::output;

pub fn run(args: &ConfigArgs) -> Result<ExitCode> {
    let (mut effective, file) = config::load(args)?;
    if effective.cache_dir.is_none() {
        effective.cache_dir = effective.cache_directory();
    }
    let source = match &file {
        Some(path) => format!("# read from {}\n", output::shown(path)),
        None => "# no configuration file found; these are the defaults\n".to_owned(),
    };
    let key = match effective.api_key() {
        Some(_) => "# an API key is set (not shown)\n",
        None => "# no API key is set\n",
    };
    let mut shown = effective.masked();
    if shown.api_key_env.as_deref().is_some_and(|name| !tool_mediator::is_variable_name(name)) {
        shown.api_key_env = Some("******** (not a variable name; is this a key?)".into());
    }
    output::print(&format!("{source}{key}{}", toml::to_string_pretty(&shown)?))?;
    Ok(ExitCode::SUCCESS)
}
