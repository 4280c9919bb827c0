//! `tailor`: one binary, subcommands for every part of the system.
//!
//! Each subcommand lives in `src/cmd/<name>.rs` with its own clap `Args`
//! struct and a `run` function; this file only dispatches.

use clap::{Parser, Subcommand};

mod cmd;

#[derive(Parser)]
#[command(
    name = "tailor",
    version,
    about = "Fit container allocations to what containers really use"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay a usage series through a forecaster and score its forecasts.
    Forecast(cmd::forecast::Args),
    /// Simulate a workload under a shaping policy (default: the bundled workload).
    Replay(cmd::replay::Args),
    /// Sweep K1 x K2 on a workload and pick the best under a failure budget.
    Tune(cmd::tune::Args),
    /// Sweep every forecaster's sizing knobs: memory reclaimed vs failures (the savings frontier).
    Frontier(Box<cmd::frontier::Args>),
    /// Inspect trace files.
    Trace(cmd::trace::Args),
    /// Run the per-node agent.
    Agent(cmd::agent::Args),
    /// Run the central shaper server (cluster mode).
    Shaper(cmd::shaper::Args),
    /// Validate configuration files.
    Config(cmd::config::Args),
    /// Per-container recommendations of a running agent (or its state directory).
    Recommendations(cmd::recommendations::Args),
    /// The agent's decision journal.
    History(cmd::history::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Forecast(a) => cmd::forecast::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::Tune(a) => cmd::tune::run(a),
        Command::Frontier(a) => cmd::frontier::run(*a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Agent(a) => cmd::agent::run(a),
        Command::Shaper(a) => cmd::shaper::run(a),
        Command::Config(a) => cmd::config::run(a),
        Command::Recommendations(a) => cmd::recommendations::run(a),
        Command::History(a) => cmd::history::run(a),
    }
}
