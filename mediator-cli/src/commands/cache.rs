//! `tool-mediator cache stats|prune|clear`.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Subcommand;
use tool_mediator::cache::{Cache, SledStore};

use crate::config;
use crate::flags::{CacheArgs, ConfigArgs};
use crate::output;

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// Entries, bytes, and how many have expired.
    Stats,
    /// Remove expired entries.
    Prune,
    /// Remove every entry.
    Clear,
}

pub fn run(action: &CacheCommand, cache: &CacheArgs, config_args: &ConfigArgs) -> Result<ExitCode> {
    let (mut settings, _) = config::load(config_args)?;
    config::apply_cache_flags(&mut settings, cache);
    let Some(dir) = settings.cache_directory() else {
        bail!("no cache directory: give --cache-dir");
    };
    // Each action only reads or removes: where there is no cache, none is made.
    let Some(store) = SledStore::open_existing(&dir)? else {
        eprintln!("{}: no cache here; nothing to do", output::shown(&dir));
        if let CacheCommand::Stats = action {
            output::print(&format!("{}\n", serde_json::json!({"dir": dir, "entries": 0, "bytes": 0, "expired": 0})))?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let cache = Cache::new(store, settings.ttl());
    match action {
        CacheCommand::Stats => {
            let stats = cache.stats()?;
            let expired = cache.expired_entries()?;
            output::print(&format!(
                "{}\n",
                serde_json::json!({"dir": dir, "entries": stats.entries, "bytes": stats.bytes, "expired": expired})
            ))?;
        }
        CacheCommand::Prune => {
            let removed = cache.prune()?;
            eprintln!("removed {removed} expired entries from {}", output::shown(&dir));
        }
        CacheCommand::Clear => {
            cache.clear()?;
            eprintln!("cleared {}", output::shown(&dir));
        }
    }
    Ok(ExitCode::SUCCESS)
}
