//! `tailor config check FILE...`: validates agent configuration files and
//! reports every problem at once (file, key, message). Several files are
//! checked each on its own and then merged in order, as `tailor agent
//! --config A --config B` would read them.

use agent::config::check_toml;
use agent::AgentConfig;
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Check agent.toml file(s); exit status 1 when any error is found.
    Check {
        /// Files to check (TOML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the effective configuration (all defaults filled in) as TOML.
        #[arg(long)]
        print: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Check { files, print } => check(&files, print),
    }
}

fn check(files: &[PathBuf], print: bool) -> anyhow::Result<()> {
    let mut errors = 0usize;
    for f in files {
        match std::fs::read_to_string(f) {
            Err(e) => {
                println!("{}: cannot read: {e}", f.display());
                errors += 1;
            }
            Ok(text) => {
                if let Err(issues) = check_toml(&text, Some(f)) {
                    for i in &issues.0 {
                        println!("{i}");
                    }
                    errors += issues.0.len();
                }
            }
        }
    }
    if errors == 0 && files.len() > 1 {
        // each file alone is fine; check the merged result too
        if let Err(issues) = AgentConfig::load(files) {
            for i in &issues.0 {
                println!("(merged) {i}");
            }
            errors += issues.0.len();
        }
    }
    if errors > 0 {
        anyhow::bail!("{errors} configuration error(s)");
    }
    let merged = AgentConfig::load(files)?;
    if print {
        println!("{}", toml::to_string_pretty(&merged)?);
    }
    for f in files {
        println!("{}: ok", f.display());
    }
    Ok(())
}
