//! One module per subcommand, its flags (clap types) beside what runs it; the flag groups
//! several commands share are in `shared_flags`.

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
pub mod shared_flags;
pub mod shell;
pub mod tokens;
pub mod wrap;
