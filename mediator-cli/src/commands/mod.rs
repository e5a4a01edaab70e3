//! One module per subcommand.

pub mod categorize;
pub mod enhance;
pub mod filter;
pub mod names;
pub mod overrides;
