//! `tailor config check FILE...`: validates configuration files and reports
//! every problem at once (file, dotted key, message): unknown keys, values
//! of the wrong type, missing required keys and out-of-range values, in
//! every table. Several agent files are checked each on its own and then
//! merged in order, as `tailor agent --config A --config B` would read them;
//! the files the agent reads at start-up (cluster token file, CA file) are
//! checked as the agent reads them.
//!
//! `--kind shaper` checks `shaper.toml` (and its token and TLS files),
//! `--kind sim` a simulator config (`tailor replay --config`).
//!
//! Error lines go to stdout (`FILE: KEY: MESSAGE`), except with `--print`,
//! which prints only the effective configuration (valid TOML) on stdout and
//! everything else on stderr.

use agent::config::{read_config_text, AgentConfig};
use agent::toml_check::{check_value, leaf, parse_text, probe, Schema};
use agent::ConfigErrors;
use sim::SimConfig;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

/// Which configuration the files hold.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `agent.toml` (`tailor agent --config`); several files merge.
    Agent,
    /// `shaper.toml` (`tailor shaper --config`).
    Shaper,
    /// A simulator config (`tailor replay --config`, `tailor tune --config`).
    Sim,
}

#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Check configuration file(s); exit status 1 when any error is found.
    Check {
        /// Files to check (TOML).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// What the files configure.
        #[arg(long, value_enum, default_value = "agent")]
        kind: Kind,
        /// Print the effective configuration (all defaults filled in) as
        /// TOML on stdout, and nothing else there.
        #[arg(long)]
        print: bool,
    },
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Check { files, kind, print } => check(&files, kind, print),
    }
}

/// Where non-TOML lines go: stdout, or stderr with `--print`.
struct Out {
    print: bool,
}

impl Out {
    fn line(&self, s: &str) {
        if self.print {
            eprintln!("{s}");
        } else {
            println!("{s}");
        }
    }

    fn errors(&self, file: &str, errors: &ConfigErrors) -> usize {
        for e in errors {
            self.line(&format!("{file}: {e}"));
        }
        errors.len()
    }

    /// A file checked as an agent config that is a valid shaper or
    /// simulator config: says which `--kind` it is.
    fn kind_hint(&self, file: &str, text: &str) {
        let kind = if shaperd::config::check_toml(text).is_ok() {
            "shaper"
        } else if check_sim(text).is_ok() {
            "sim"
        } else {
            return;
        };
        self.line(&format!(
            "{file}: hint: this is a valid {kind} config; check it with `tailor config check --kind {kind}`"
        ));
    }
}

fn check(files: &[PathBuf], kind: Kind, print: bool) -> anyhow::Result<()> {
    let out = Out { print };
    let mut errors = 0usize;
    let mut effective: Option<String> = None;
    match kind {
        Kind::Agent => {
            for f in files {
                let name = f.display().to_string();
                match read_config_text(f) {
                    Err(message) => {
                        out.line(&message);
                        errors += 1;
                    }
                    // one file: its values and its files' errors at once;
                    // several: the files are checked on the merged result
                    Ok(text) if files.len() == 1 => {
                        match agent::config::check_toml_and_files(&text) {
                            Err(e) => {
                                errors += out.errors(&name, &e);
                                out.kind_hint(&name, &text);
                            }
                            Ok(cfg) => effective = Some(toml::to_string_pretty(&cfg)?),
                        }
                    }
                    Ok(text) => {
                        if let Err(e) = agent::config::check_toml(&text) {
                            errors += out.errors(&name, &e);
                            out.kind_hint(&name, &text);
                        }
                    }
                }
            }
            if errors == 0 && files.len() > 1 {
                // each file alone is fine; check the merged result too
                match AgentConfig::load(files) {
                    Err(e) => errors += out.errors("(merged)", &e),
                    Ok(cfg) => {
                        if let Err(e) = cfg.check_files() {
                            errors += out.errors("(merged)", &e);
                        }
                        effective = Some(toml::to_string_pretty(&cfg)?);
                    }
                }
            }
        }
        Kind::Shaper | Kind::Sim => {
            for f in files {
                let name = f.display().to_string();
                let text = match read_config_text(f) {
                    Ok(t) => t,
                    Err(message) => {
                        out.line(&message);
                        errors += 1;
                        continue;
                    }
                };
                let result = if kind == Kind::Shaper {
                    shaperd::config::check_toml_and_files(&text).map(|c| toml::to_string_pretty(&c))
                } else {
                    check_sim(&text).map(|c| toml::to_string_pretty(&c))
                };
                match result {
                    Err(e) => errors += out.errors(&name, &e),
                    Ok(t) => effective = Some(t?),
                }
            }
        }
    }
    if errors > 0 {
        anyhow::bail!("{errors} configuration error(s)");
    }
    if print {
        if let Some(t) = effective {
            // toml ends a table with a newline but not an empty document
            if t.ends_with('\n') || t.is_empty() {
                print!("{t}");
            } else {
                println!("{t}");
            }
        }
    }
    for f in files {
        out.line(&format!("{}: ok", f.display()));
    }
    Ok(())
}

static SIM_SHAPER: Schema = leaf(probe::<shaper::ShaperConfig>);
static SIM: Schema = Schema {
    probe: probe::<SimConfig>,
    tables: &[
        ("shaper", &SIM_SHAPER),
        ("forecaster", &agent::config::FORECASTER),
    ],
};

/// A simulator config, every error at once.
pub fn check_sim(text: &str) -> Result<SimConfig, ConfigErrors> {
    let mut checked = check_value::<SimConfig>(&parse_text(text)?, &SIM);
    let Some(cfg) = checked.config.take() else {
        return Err(checked.errors);
    };
    checked.add_validation(cfg.validate());
    checked.errors.into_result().map(|()| cfg)
}

/// A `[forecaster]`-shaped model config file (`tailor forecast --config`),
/// every error at once.
pub fn load_model_config(path: &Path) -> anyhow::Result<forecaster::ModelConfig> {
    let text = read_config_text(path).map_err(anyhow::Error::msg)?;
    let mut checked = check_value::<forecaster::ModelConfig>(
        &parse_text(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        &agent::config::FORECASTER,
    );
    let cfg = checked.config.take();
    checked.add_validation(cfg.as_ref().map_or(Ok(()), |c| c.validate()));
    match cfg {
        Some(c) if checked.errors.is_empty() => Ok(c),
        _ => anyhow::bail!("{}: {}", path.display(), checked.errors),
    }
}
