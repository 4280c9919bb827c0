//! One module per subcommand.

pub mod agent;
pub mod config;
pub mod forecast;
pub mod frontier;
pub mod history;
pub mod recommendations;
pub mod replay;
pub mod shaper;
pub mod sim_args;
pub mod trace;
pub mod tune;
