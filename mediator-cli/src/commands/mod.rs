//! One module per subcommand.

pub mod enhance;
pub mod names;
pub mod overrides;
pub mod select;
