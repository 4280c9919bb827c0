//! One module per subcommand.

pub mod agent;
pub mod config;
pub mod forecast;
pub mod replay;
pub mod shaper;
pub mod trace;
pub mod tune;
