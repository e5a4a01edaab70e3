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
    if settings.cache_url.is_some() {
        // A server: asked as it is; one that cannot be reached is an error here, as the cache
        // itself is the question.
        let store = settings.redis_store()?;
        let place = serde_json::json!({"url": store.url(), "prefix": String::from_utf8_lossy(store.prefix())});
        let shown = format!("{} (prefix {})", store.url(), String::from_utf8_lossy(store.prefix()));
        return act(action, Cache::new(store, settings.ttl()), place, &shown);
    }
    let Some(dir) = settings.cache_directory() else {
        bail!("no cache directory: give --cache-dir or --cache-url");
    };
    // Each action only reads or removes: where there is no cache, none is made.
    let Some(store) = SledStore::open_existing(&dir)? else {
        eprintln!("{}: no cache here; nothing to do", output::shown(&dir));
        if let CacheCommand::Stats = action {
            output::print(&format!("{}\n", serde_json::json!({"dir": dir, "entries": 0, "bytes": 0, "expired": 0})))?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    act(action, Cache::new(store, settings.ttl()), serde_json::json!({"dir": dir}), &output::shown(&dir))
}

/// Does `action` on the cache at `place` (its directory, or its server and prefix).
fn act(action: &CacheCommand, cache: Cache, mut place: serde_json::Value, shown: &str) -> Result<ExitCode> {
    match action {
        CacheCommand::Stats => {
            let stats = cache.stats()?;
            let expired = cache.expired_entries()?;
            place["entries"] = stats.entries.into();
            place["bytes"] = stats.bytes.into();
            place["expired"] = expired.into();
            output::print(&format!("{place}\n"))?;
        }
        CacheCommand::Prune => {
            let removed = cache.prune()?;
            eprintln!("removed {removed} expired entries from {shown}");
        }
        CacheCommand::Clear => {
            cache.clear()?;
            eprintln!("cleared {shown}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
