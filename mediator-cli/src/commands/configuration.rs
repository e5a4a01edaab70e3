//! `tool-mediator config`: the effective configuration, keys masked.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ConfigArgs;
use crate::config;
use crate::output;

pub fn run(args: &ConfigArgs) -> Result<ExitCode> {
    let (mut effective, file) = config::load(args)?;
    if effective.cache_dir.is_none() {
        effective.cache_dir = config::cache_dir(&effective);
    }
    let source = match &file {
        Some(path) => format!("# read from {}\n", path.display()),
        None => "# no configuration file found; these are the defaults\n".to_owned(),
    };
    let key = match effective.api_key() {
        Some(_) => "# an API key is set (not shown)\n",
        None => "# no API key is set\n",
    };
    output::print(&format!("{source}{key}{}", toml::to_string_pretty(&effective.masked())?))?;
    Ok(ExitCode::SUCCESS)
}
