//! One module per subcommand.

pub mod cache;
pub mod categorize;
pub mod configuration;
pub mod enhance;
pub mod filter;
pub mod names;
pub mod overrides;
pub mod proxy;
pub mod tokens;
