//! `tailor trace`: trace-file tools.
//!
//! `tailor trace inspect FILE...` prints, for each file, its detected table,
//! rows, time span, distinct jobs/tasks/machines, event types and request/usage
//! distributions (quantiles). Reads stream; .csv.gz works; `--json` prints
//! one JSON object per file (one per line).

use std::path::PathBuf;

use anyhow::Context;
use datasets::inspect::{inspect, TableKind};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum TraceCommand {
    /// Summarise trace files (Google 2011/2019, Alibaba 2018 and GPU lists,
    /// Bitbrains, series files, tailor's data files); says what any other
    /// file is.
    Inspect(InspectArgs),
}

#[derive(clap::Args, Debug)]
pub struct InspectArgs {
    /// Files to summarise.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Table of every file (default: detected from the name and first line):
    /// task_events, job_events, machine_events, task_usage, instance_usage,
    /// container_usage, container_meta, machine_meta, gpu_instances,
    /// gpu_pods, gpu_nodes, bitbrains, series, usage_pool, distributions.
    /// Files that are no trace (Markdown, other JSON, configuration,
    /// binary, empty) are named as such, not failed.
    #[arg(long)]
    pub table: Option<String>,
    /// Skip and count malformed rows instead of stopping at the first one.
    #[arg(long)]
    pub lenient: bool,
    /// Print JSON (one object per file, one per line).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        TraceCommand::Inspect(a) => run_inspect(a),
    }
}

fn run_inspect(a: InspectArgs) -> anyhow::Result<()> {
    let table = match a.table.as_deref() {
        None => None,
        Some(t) => Some(TableKind::parse(t).with_context(|| {
            format!(
                "unknown --table {t:?} (expected task_events, job_events, machine_events, task_usage, \
                 instance_usage, container_usage, container_meta, machine_meta, gpu_instances, gpu_pods, \
                 gpu_nodes, bitbrains, series, usage_pool or distributions)"
            )
        })?),
    };
    for (i, f) in a.files.iter().enumerate() {
        if f.is_dir() {
            anyhow::bail!(
                "{} is a directory: `trace inspect` reads files (e.g. {}/*/*.csv); \
                 to replay a directory of Google 2019 task CSVs use `tailor replay --workload google2019:{}`, \
                 a directory of Alibaba GPU instance or pod lists `tailor replay --workload alibaba-gpu:{}`, \
                 a directory of Bitbrains VM files `tailor replay --workload bitbrains:{}`",
                f.display(),
                f.display(),
                f.display(),
                f.display(),
                f.display()
            );
        }
        let s =
            inspect(f, table, a.lenient).with_context(|| format!("inspecting {}", f.display()))?;
        if a.json {
            println!("{}", serde_json::to_string(&s)?);
        } else {
            if i > 0 {
                println!();
            }
            print!("{s}");
        }
    }
    Ok(())
}
