//! One module per subcommand, its flags (clap types) beside what runs it; the flag groups
//! several commands share are in `flags.rs`.

pub mod auth;
pub mod cache;
pub mod categorize;
pub mod configuration;
pub mod enhance;
pub mod filter;
pub mod gateway;
pub mod lint;
pub mod names;
pub mod overrides;
pub mod pin;
pub mod proxy;
pub mod review;
pub mod shell;
pub mod tokens;
pub mod wrap;
