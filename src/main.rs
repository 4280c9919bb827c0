//! `tailor`: one binary, subcommands for every part of the system.
//!
//! Each subcommand lives in `src/cmd/<name>.rs` with its own clap `Args`
//! struct and a `run` function; this file only dispatches.

use clap::{Parser, Subcommand};

mod cmd;

/// mimalloc instead of glibc's malloc (docs/performance.md, "The allocator").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // A printing command whose reader goes away (`tailor history | head`)
    // ends as other Unix tools do, killed by SIGPIPE, instead of panicking
    // on the failed write. The daemons keep Rust's default: there a write
    // to a closed pipe is an error to handle, not a reason to die.
    if !matches!(cli.command, Command::Agent(_) | Command::Shaper(_)) {
        sigpipe::reset();
    }
    match run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", error_report(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// `Error: <error>`, then each cause whose text the message before it
/// does not already hold (an error that prints its source, as most of
/// ours do, would otherwise show it twice). No backtrace: these are the
/// user's errors, not the program's.
fn error_report(e: &anyhow::Error) -> String {
    let mut out = format!("Error: {e}");
    let mut shown = e.to_string();
    let mut first = true;
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if shown.contains(&text) {
            continue;
        }
        if first {
            out.push_str("\n\nCaused by:");
            first = false;
        }
        out.push_str(&format!("\n    {text}"));
        shown = text;
    }
    out
}

fn run(cli: Cli) -> anyhow::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::error_report;
    use anyhow::Context;

    #[test]
    fn a_cause_the_message_already_holds_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        // An error that prints its source, as a thiserror `{0}` variant does.
        let e = Err::<(), _>(io)
            .context("reading x.toml: no such file")
            .context("loading the config")
            .expect_err("an error");
        assert_eq!(
            error_report(&e),
            "Error: loading the config\n\nCaused by:\n    reading x.toml: no such file"
        );
        let plain = anyhow::anyhow!("just this");
        assert_eq!(error_report(&plain), "Error: just this");
    }
}
